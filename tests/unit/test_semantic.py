"""Semantic boundaries (plan cases S01-S08, and the semantic part of B04) and their helpers.

The embedding SDK is the ``stub_sentence_transformers`` fake of conftest.py (fixed 2-D vectors
per text); the encoder is built by the production loader from a temporary directory holding a
fake ``model.safetensors`` whose digest is the pin, so the import path, digest check, cosine
decisions and packing all run for real.
"""

from __future__ import annotations

import copy
import logging
import os
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import longparser.pipeline as pipeline_module
from loaders.encoder import OFFLINE_ENV, QUIET_ENV, load_encoder
from loaders.pinned_model import MODEL_NAME, EncoderUnavailable, file_sha256
from loaders.resources import ResourceSpec, build_resources
from longparser import Resources, chunk_blocks
from longparser.boundary_methods import adjacent
from longparser.semantic import section_boundaries, unit_rows
from schemas import SemanticStats
from tests.unit.engine_helpers import run_engine


def cosine_similarity(a: list[float], b: list[float]) -> float:
    """The engine's cosine of two vectors (rows made unit length, a zero-norm row stays zero)."""
    unit = unit_rows([a, b])
    return float(unit[0] @ unit[1])


_CONFIG = {"use_semantic_chunking": True, "semantic_threshold": 0.3, "min_tokens": 1, "overlap_blocks": 0}


def _protect_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader sets process-wide variables: record their values so the test restores them."""
    for name in (*OFFLINE_ENV, *QUIET_ENV):
        monkeypatch.setenv(name, os.environ.get(name, ""))


def _model_dir(tmp_path: Path) -> tuple[Path, str]:
    """A local "model" directory with fake weights, and their digest (the pin for this test)."""
    model_dir = tmp_path / "model"
    model_dir.mkdir(exist_ok=True)
    weights = model_dir / "model.safetensors"
    weights.write_bytes(b"stub weights for the controlled group")
    return model_dir, file_sha256(weights)


def _load_stub_encoder(
    stub: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vectors: dict[str, list[float]]
) -> tuple[Any, Any, str]:
    """Production-loaded encoder over the stub SDK: ``(encoder, stub model instance, digest)``."""
    _protect_env(monkeypatch)
    stub.vectors.update(vectors)
    model_dir, digest = _model_dir(tmp_path)
    encoder = load_encoder(model_dir, expected_sha256=digest)
    return encoder, stub.instances[-1], digest


def _view(result: Any) -> list[tuple[str, list[str], list[int]]]:
    return [(chunk.text, chunk.block_ids, chunk.page_numbers) for chunk in result.chunks]


class _SpyEncoder:
    """An encoder that must not be used: records calls and fails the test if encode runs."""

    name = "spy"
    weights_sha256 = None

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: Any) -> Any:
        self.calls.append(list(texts))
        raise AssertionError("the encoder must not be called")


# --- B04 semantic boundaries in the pipeline ------------------------------------------------------


@pytest.mark.case("B04")
def test_B04_semantic_boundary_starts_new_chunk_across_prose_runs(make_block, monkeypatch):
    """Section-level boundary indices skip list items and still map to the right prose blocks."""
    seen: list[Any] = []

    def fake_boundaries(sections, encoder, threshold):
        seen.append(([list(s) for s in sections], threshold))
        return [{1, 3}], 4

    monkeypatch.setattr(pipeline_module, "section_boundaries", fake_boundaries)
    encoder = type("Enc", (), {"name": "stub-model", "weights_sha256": "abc"})()
    blocks = [make_block("P0."), make_block("P1."), make_block("Lead:"), make_block("item", "list_item"),
              make_block("P2."), make_block("P3.")]
    result = run_engine(blocks, Resources(encoder=encoder), use_semantic_chunking=True,
                        semantic_threshold=0.4)
    assert seen == [([["P0.", "P1.", "P2.", "P3."]], 0.4)]
    assert [(c.chunk_type, c.text) for c in result.chunks] == [
        ("section", "P0."), ("section", "P1."), ("list", "Lead:\nitem"),
        ("section", "P2."), ("section", "P3."),
    ]
    semantic = result.stats.semantic
    assert (semantic.requested, semantic.available, semantic.boundaries, semantic.texts_embedded) == (
        True, True, 2, 4)
    assert (semantic.model, semantic.weights_sha256) == ("stub-model", "abc")


@pytest.mark.case("B04")
def test_B04_semantic_requested_without_encoder_packs_structurally(make_block, monkeypatch, caplog):
    monkeypatch.setattr(pipeline_module, "section_boundaries", lambda *a: pytest.fail("encoder path used"))
    blocks = [make_block("A."), make_block("B.")]
    with caplog.at_level(logging.WARNING, logger="longparser.pipeline"):
        result = run_engine(blocks, Resources(encoder_error="sentence-transformers not installed"),
                        use_semantic_chunking=True)
    assert [c.text for c in result.chunks] == ["A.\n\nB."]
    semantic = result.stats.semantic
    assert (semantic.requested, semantic.available) == (True, False)
    assert semantic.reason == "sentence-transformers not installed"
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
    default = run_engine(blocks, use_semantic_chunking=True)
    assert default.stats.semantic.reason == "no encoder provided"


@pytest.mark.case("B04")
def test_B04_semantic_off_never_touches_the_encoder(make_block, monkeypatch):
    class _Untouchable:
        name, weights_sha256 = "stub", None

        def encode(self, texts):
            raise AssertionError("encoder used with semantic mode off")

    monkeypatch.setattr(pipeline_module, "section_boundaries", lambda *a: pytest.fail("boundaries computed"))
    result = run_engine([make_block("A."), make_block("B.")], Resources(encoder=_Untouchable()))
    assert [c.text for c in result.chunks] == ["A.\n\nB."]
    assert result.stats.semantic.requested is False and result.stats.semantic.texts_embedded == 0
    assert result.stats.resources == {
        "word_list": False, "language_id": False, "encoder": True, "model_counter": False}


# --- S01 short input ------------------------------------------------------------------------------


@pytest.mark.case("S01")
@pytest.mark.parametrize(
    "sections",
    [[], [[]], [["only one text"]], [["only one text", "", "   "]], [["first section"], ["second section"]]],
    ids=["no-sections", "empty-section", "one-text", "one-text-and-blanks", "one-text-per-section"],
)
def test_S01_short_input_has_no_boundaries_and_never_calls_the_encoder(
    sections: list[list[str]],
    stub_sentence_transformers: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encoder, model, _ = _load_stub_encoder(stub_sentence_transformers, tmp_path, monkeypatch, {})
    assert section_boundaries(sections, encoder, 0.3) == ([set() for _ in sections], 0)
    assert model.encode_calls == []


@pytest.mark.case("S01")
def test_S01_single_block_document_is_one_chunk_without_embedding(
    make_block: Any, stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoder, model, digest = _load_stub_encoder(stub_sentence_transformers, tmp_path, monkeypatch, {})
    result = chunk_blocks([make_block("A lone paragraph.", page=4)], _CONFIG, Resources(encoder=encoder))
    assert _view(result) == [("A lone paragraph.", ["b1"], [4])]
    assert model.encode_calls == []
    assert result.stats.semantic == SemanticStats(
        requested=True,
        available=True,
        boundaries=0,
        boundaries_found=0,
        texts_embedded=0,
        method="adjacent",
        model=MODEL_NAME,
        weights_sha256=digest,
    )


# --- S02 similar vectors / S03 equality / S04 different vectors / S05 zero norms ------------------


@pytest.mark.case("S02")
def test_S02_similar_vectors_place_no_boundary(
    stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = {"cats purr": [1.0, 0.0], "kittens purr": [0.9, 0.1], "cats nap": [0.8, 0.3]}
    encoder, model, _ = _load_stub_encoder(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    assert cosine_similarity([1.0, 0.0], [0.9, 0.1]) == pytest.approx(0.9 / 0.82**0.5)
    assert section_boundaries([list(vectors)], encoder, 0.3) == ([set()], 3)
    assert model.encode_calls == [["cats purr", "kittens purr", "cats nap"]]


@pytest.mark.case("S03")
@pytest.mark.parametrize(
    ("threshold", "expected"),
    [(0.6, set()), (float(np.nextafter(0.6, 1.0)), {1}), (float(np.nextafter(0.6, 0.0)), set())],
    ids=["equal", "just-above", "just-below"],
)
def test_S03_equal_to_threshold_is_not_a_boundary(
    threshold: float,
    expected: set[int],
    stub_sentence_transformers: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # [1, 0] vs [3, 4]: cosine is exactly 3/5 = 0.6 in float64.
    vectors = {"x": [1, 0], "y": [3, 4]}
    encoder, _, _ = _load_stub_encoder(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    assert cosine_similarity([1.0, 0.0], [3.0, 4.0]) == 0.6
    assert section_boundaries([["x", "y"]], encoder, threshold) == ([expected], 2)


@pytest.mark.case("S03")
def test_S03_equal_to_threshold_keeps_one_chunk(
    make_block: Any, stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoder, _, _ = _load_stub_encoder(
        stub_sentence_transformers, tmp_path, monkeypatch, {"x y": [1, 0], "y z": [3, 4]}
    )
    config = {**_CONFIG, "semantic_threshold": 0.6}
    result = chunk_blocks([make_block("x y"), make_block("y z", page=2)], config, Resources(encoder=encoder))
    assert _view(result) == [("x y\n\ny z", ["b1", "b2"], [1, 2])]
    assert result.stats.semantic.boundaries == 0


@pytest.mark.case("S04")
@pytest.mark.parametrize(
    ("first", "second", "threshold"),
    [([1, 0], [0, 1], 0.3), ([1, 0], [-1, 0], 0.0), ([1, 0], [1, 1], 0.75)],
    ids=["orthogonal", "opposite-below-zero", "45-degrees-below-0.75"],
)
def test_S04_different_vectors_place_a_boundary(
    first: list[float],
    second: list[float],
    threshold: float,
    stub_sentence_transformers: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectors = {"topic one": first, "topic two": second}
    encoder, _, _ = _load_stub_encoder(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    assert section_boundaries([["topic one", "topic two"]], encoder, threshold) == ([{1}], 2)


@pytest.mark.case("S04")
def test_S04_chunks_split_at_the_semantic_boundary(
    make_block: Any, stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [
        "Stars form in clouds.",
        "Nebulae collapse into stars.",
        "Knead the dough well.",
        "Bake the loaf.",
    ]
    vectors = dict(zip(texts, [[1, 0], [0.95, 0.05], [0, 1], [0.1, 0.9]], strict=True))
    encoder, model, digest = _load_stub_encoder(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    blocks = [make_block(text, page=page) for text, page in zip(texts, [1, 1, 2, 3], strict=True)]
    before = copy.deepcopy(blocks)
    result = chunk_blocks(blocks, _CONFIG, Resources(encoder=encoder))
    assert _view(result) == [
        ("Stars form in clouds.\n\nNebulae collapse into stars.", ["b1", "b2"], [1]),
        ("Knead the dough well.\n\nBake the loaf.", ["b3", "b4"], [2, 3]),
    ]
    assert [chunk.section_path for chunk in result.chunks] == [["Intro"], ["Intro"]]
    assert model.encode_calls == [texts]
    assert result.stats.semantic == SemanticStats(
        requested=True,
        available=True,
        boundaries=1,
        boundaries_found=1,
        texts_embedded=4,
        method="adjacent",
        model=MODEL_NAME,
        weights_sha256=digest,
    )
    assert blocks == before  # the caller's blocks are never mutated
    structural = chunk_blocks(blocks, {**_CONFIG, "use_semantic_chunking": False})
    assert [chunk.block_ids for chunk in structural.chunks] == [["b1", "b2", "b3", "b4"]]


@pytest.mark.case("S05")
@pytest.mark.parametrize(
    ("threshold", "expected"), [(0.3, {1, 2}), (0.0, set())], ids=["below-threshold", "0.0-not-below-0.0"]
)
def test_S05_zero_norm_vectors_have_similarity_zero(
    threshold: float,
    expected: set[int],
    stub_sentence_transformers: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectors = {"a": [1, 0], "zero": [0, 0], "b": [1, 0]}
    encoder, _, _ = _load_stub_encoder(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    assert cosine_similarity([0.0, 0.0], [1.0, 0.0]) == 0.0
    assert cosine_similarity([0.0, 0.0], [0.0, 0.0]) == 0.0
    assert section_boundaries([["a", "zero", "b"]], encoder, threshold) == ([expected], 3)


@pytest.mark.case("S05")
def test_S05_zero_norm_block_is_its_own_chunk(
    make_block: Any, stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = {"Alpha text.": [1, 0], "Odd text.": [0, 0], "Beta text.": [1, 0]}
    encoder, _, _ = _load_stub_encoder(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    blocks = [make_block(text, page=page) for text, page in zip(vectors, [1, 2, 2], strict=True)]
    result = chunk_blocks(blocks, _CONFIG, Resources(encoder=encoder))
    assert _view(result) == [
        ("Alpha text.", ["b1"], [1]),
        ("Odd text.", ["b2"], [2]),
        ("Beta text.", ["b3"], [2]),
    ]
    assert result.stats.semantic.boundaries == 2


# --- S06 missing SDK ------------------------------------------------------------------------------


@pytest.mark.case("S06")
@pytest.mark.parametrize(
    "broken", [None, types.ModuleType("sentence_transformers")], ids=["absent", "no-class"]
)
def test_S06_missing_sdk_raises_with_install_hint(
    broken: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _protect_env(monkeypatch)
    monkeypatch.setitem(sys.modules, "sentence_transformers", broken)
    model_dir, digest = _model_dir(tmp_path)
    with pytest.raises(EncoderUnavailable) as info:
        load_encoder(model_dir, expected_sha256=digest)
    message = str(info.value)
    assert message.startswith("sentence-transformers cannot be imported")
    assert "`pip install torch==2.13.0`" in message
    assert "`pip install -e '.[embeddings-cpu]'`" in message


@pytest.mark.case("S06")
def test_S06_missing_sdk_packs_structurally_and_says_why(
    make_block: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _protect_env(monkeypatch)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    model_dir, digest = _model_dir(tmp_path)
    spec = ResourceSpec(encoder="optional", model_path=model_dir, expected_sha256=digest)
    with caplog.at_level(logging.WARNING):
        resources = build_resources(spec)
    assert resources.encoder is None
    assert resources.encoder_error is not None
    assert resources.encoder_error.startswith("sentence-transformers cannot be imported")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, f"semantic boundaries unavailable, packing structurally: {resources.encoder_error}")
    ]
    blocks = [make_block("Stars form in clouds.", page=1), make_block("Knead the dough.", page=2)]
    result = chunk_blocks(blocks, _CONFIG, resources)
    assert _view(result) == [("Stars form in clouds.\n\nKnead the dough.", ["b1", "b2"], [1, 2])]
    assert result.stats.semantic == SemanticStats(
        requested=True, available=False, boundaries=0, texts_embedded=0, reason=resources.encoder_error
    )
    with pytest.raises(EncoderUnavailable):
        build_resources(ResourceSpec(encoder="required", model_path=model_dir, expected_sha256=digest))


# --- S07 semantic disabled ------------------------------------------------------------------------


@pytest.mark.case("S07")
def test_S07_semantic_disabled_never_touches_the_encoder(make_block: Any) -> None:
    spy = _SpyEncoder()
    blocks = [make_block("Stars form in clouds.", page=1), make_block("Knead the dough.", page=2)]
    config = {**_CONFIG, "use_semantic_chunking": False}
    result = chunk_blocks(blocks, config, Resources(encoder=spy))
    assert spy.calls == []
    assert result.stats.semantic == SemanticStats()
    assert _view(result) == [("Stars form in clouds.\n\nKnead the dough.", ["b1", "b2"], [1, 2])]


# --- S08 blank texts filtered, indices aligned ----------------------------------------------------


@pytest.mark.case("S08")
@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["a", "", "  ", "b", "\n\t", "c", ""], {3}),  # c compares with b, not with the blank before it
        (["a", " ", "b"], {2}),  # the boundary lands on b's index, never on the blank
        (["a", "", "a again"], set()),  # a blank between similar texts creates nothing
        (["", "a", "b"], {2}),  # leading blank: nothing to compare it with
    ],
)
def test_S08_blank_texts_filtered_before_embedding_with_aligned_indices(
    texts: list[str],
    expected: set[int],
    stub_sentence_transformers: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectors = {"a": [1, 0], "a again": [1, 0.1], "b": [0, 1], "c": [0, 1]}
    encoder, model, _ = _load_stub_encoder(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    non_blank = [t for t in texts if t.strip()]
    assert section_boundaries([texts], encoder, 0.3) == ([expected], len(non_blank))
    assert model.encode_calls == [non_blank]


@pytest.mark.case("S08")
def test_S08_blank_blocks_excluded_and_boundaries_stay_on_the_right_blocks(
    make_block: Any, stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = {"Orbits are ellipses.": [1, 0], "Whisk the eggs.": [0, 1], "Fold in flour.": [0.1, 1]}
    encoder, model, _ = _load_stub_encoder(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    blocks = [
        make_block("Orbits are ellipses.", page=1),
        make_block("   ", page=1),
        make_block("Whisk the eggs.", page=2),
        make_block("-----", page=2),
        make_block("Fold in flour.", page=3),
    ]
    result = chunk_blocks(blocks, _CONFIG, Resources(encoder=encoder))
    assert _view(result) == [
        ("Orbits are ellipses.", ["b1"], [1]),
        ("Whisk the eggs.\n\nFold in flour.", ["b3", "b5"], [2, 3]),
    ]
    assert model.encode_calls == [["Orbits are ellipses.", "Whisk the eggs.", "Fold in flour."]]
    assert result.stats.blocks_excluded == {"blank": 1, "separator": 1}
    assert (result.stats.semantic.boundaries, result.stats.semantic.texts_embedded) == (1, 3)


# --- one batch per request, identical texts once; the vectorised helpers --------------------------


def test_semantic_identical_texts_are_encoded_once_per_request(
    make_block: Any, stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boiler = "Confidential draft, do not distribute."
    vectors = {boiler: [1, 0], "Revenue grew.": [0, 1], "Costs fell.": [0.1, 1]}
    encoder, model, _ = _load_stub_encoder(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    blocks = [
        make_block(boiler, path=["Revenue"]),
        make_block("Revenue grew.", path=["Revenue"]),
        make_block(boiler, path=["Costs"], page=2),
        make_block("Costs fell.", path=["Costs"], page=2),
    ]
    result = chunk_blocks(blocks, _CONFIG, Resources(encoder=encoder))
    assert model.encode_calls == [[boiler, "Revenue grew.", "Costs fell."]]
    assert _view(result) == [
        (boiler, ["b1"], [1]),
        ("Revenue grew.", ["b2"], [1]),
        (boiler, ["b3"], [2]),
        ("Costs fell.", ["b4"], [2]),
    ]
    assert [chunk.section_path for chunk in result.chunks] == [["Revenue"], ["Revenue"], ["Costs"], ["Costs"]]
    assert (result.stats.semantic.boundaries, result.stats.semantic.texts_embedded) == (2, 3)


class _FixedEncoder:
    name, weights_sha256 = "fixed", None

    def __init__(self, output: Any):
        self.output = output

    def encode(self, texts: Any) -> Any:
        return self.output


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (np.zeros((1, 2)), r"encoder returned shape \(1, 2\) for 2 texts"),
        (np.zeros(2), r"encoder returned shape \(2,\) for 2 texts"),
        (np.array([[1.0, 0.0], [np.nan, 1.0]]), "NaN or infinite"),
    ],
)
def test_semantic_bad_encoder_output_fails_loudly(output: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        section_boundaries([["a", "b"]], _FixedEncoder(output), 0.3)


def test_semantic_vector_helpers() -> None:
    vectors = [[1, 0], [1, 0], [0, 1], [0, 0], [0, 2]]
    unit = unit_rows(vectors)
    assert np.einsum("ij,ij->i", unit[:-1], unit[1:]).tolist() == [1.0, 0.0, 0.0, 0.0]
    assert adjacent(unit_rows(vectors), 0.3) == [2, 3, 4]
    assert adjacent(unit_rows([[1, 0]]), 0.3) == []
    with pytest.raises(ValueError, match="expected a 2-D array"):
        unit_rows([1.0, 2.0, 3.0])
