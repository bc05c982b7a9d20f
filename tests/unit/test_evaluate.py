"""``lpeval evaluate`` and ``evaluate-retrieval``: metrics on hand-computed cases, input checks, exits.

No model: predictions are given directly, or the CLI's encoder loader is replaced by a fake
encoder whose vectors are chosen per text.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lpeval.evaluate as evaluate
import lpeval.evaluate_retrieval as retrieval
from loaders.encoder import OFFLINE_ENV, QUIET_ENV
from lpeval.evaluation import (
    LabelledDocument,
    LabelledInputError,
    Question,
    aggregate,
    evaluate_predictions,
    parse_labelled,
    pk_windowdiff,
    prf,
    score_document,
    window_size,
)
from lpeval.main import main
from schemas import Chunk


def _doc(doc_id: str, n: int, boundaries: list[int], kind: str = "topic") -> LabelledDocument:
    return LabelledDocument(doc_id, kind, tuple(f"{doc_id} block {i}" for i in range(n)), tuple(boundaries))


@pytest.mark.parametrize(
    ("tp", "fp", "fn", "expected"),
    [
        (0, 0, 0, (1.0, 1.0, 1.0)),  # nothing to find, nothing predicted: perfect by convention
        (0, 0, 3, (1.0, 0.0, 0.0)),  # predicted nothing: no false boundary, but everything missed
        (0, 2, 0, (0.0, 1.0, 0.0)),  # nothing to find, two false boundaries
        (1, 0, 1, (1.0, 0.5, 2 / 3)),
        (2, 1, 1, (2 / 3, 2 / 3, 2 / 3)),
        (3, 1, 0, (0.75, 1.0, 6 / 7)),
    ],
)
def test_prf_hand_computed(tp: int, fp: int, fn: int, expected: tuple[float, float, float]) -> None:
    got = prf(tp, fp, fn)
    assert (got["precision"], got["recall"], got["f1"]) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("n", "reference", "k"),
    [
        (3, [2], 1),  # mean segment 1.5, half 0.75 -> 1
        (3, [], 2),  # mean 3, half 1.5 -> 2 (half up)
        (10, [5], 3),  # mean 5, half 2.5 -> 3 (half up; Python's round() would give 2)
        (12, [3, 6, 9], 2),  # mean 3, half 1.5 -> 2
        (6, [1, 2, 3, 4, 5], 1),  # mean 1, half 0.5 -> 1
        (1, [], 1),  # mean 1, half 0.5 -> 1
        (4, [], 2),
    ],
)
def test_window_size_half_mean_segment_rounded_half_up(n: int, reference: list[int], k: int) -> None:
    assert window_size(n, reference) == k


@pytest.mark.parametrize(
    ("n", "reference", "predicted", "k", "expected"),
    [
        (3, [2], [2], 1, (0.0, 0.0)),
        # windows (0,1): 0 vs 0 ok; (1,2): 1 vs 0 -> both metrics err: 1/2 each
        (3, [2], [], 1, (0.5, 0.5)),
        # ref segs 000111, hyp 001222, k=2, 4 windows:
        # (0,2) ref 0 hyp 1 -> Pk+WD err; (1,3) ref 1 hyp 2 -> WD err only; (2,4) 1/1; (3,5) 0/0
        (6, [3], [2, 3], 2, (0.25, 0.5)),
        # near miss: ref 00001111, hyp 00000111, k=2, 6 windows; errors at (2,4) and (4,6)
        (8, [4], [5], 2, (2 / 6, 2 / 6)),
        (3, [], [1, 2], 2, (1.0, 1.0)),  # one window (0,2): 0 vs 2 boundaries
        (1, [], [], 1, None),  # no window: n <= k
    ],
)
def test_pk_windowdiff_hand_computed(
    n: int, reference: list[int], predicted: list[int], k: int, expected: tuple[float, float] | None
) -> None:
    got = pk_windowdiff(n, reference, predicted, k)
    assert got == (None if expected is None else pytest.approx(expected))


def test_score_document_counts_exact_positions() -> None:
    score = score_document(_doc("d", 8, [4]), [5])
    assert score == {
        "id": "d",
        "kind": "topic",
        "n_blocks": 8,
        "reference": [4],
        "predicted": [5],
        "tp": 0,
        "fp": 1,
        "fn": 1,
        "k": 2,
        "pk": pytest.approx(1 / 3),
        "windowdiff": pytest.approx(1 / 3),
    }


def test_aggregate_is_micro_averaged_and_skips_windowless_documents() -> None:
    docs = [_doc("a", 3, [2]), _doc("b", 3, [2]), _doc("c", 3, [], kind="control"), _doc("d", 1, [])]
    report = evaluate_predictions(docs, [[2], [1], [], []])
    overall = report["overall"]
    # tp: a 1; fp: b 1; fn: b 1 -> 1/2, 1/2 (the macro mean of per-document P would be 0.75)
    assert (overall["tp"], overall["fp"], overall["fn"]) == (1, 1, 1)
    assert (overall["precision"], overall["recall"], overall["f1"]) == (0.5, 0.5, 0.5)
    # Pk per doc: a 0, b (k=1: (0,1) ref 0 hyp 1 err, (1,2) ref 1 hyp 0 err) 1.0, c 0, d none
    assert overall["pk"] == pytest.approx(1 / 3)
    assert overall["windowdiff"] == pytest.approx(1 / 3)
    assert overall["documents"] == 4
    assert set(report["kinds"]) == {"control", "topic"}
    assert report["kinds"]["control"] == {
        "documents": 1, "tp": 0, "fp": 0, "fn": 0,
        "precision": 1.0, "recall": 1.0, "f1": 1.0, "pk": 0.0, "windowdiff": 0.0,
    }  # fmt: skip
    assert report["kinds"]["topic"]["pk"] == pytest.approx(0.5)  # d has no window


def test_aggregate_of_only_windowless_documents_has_null_pk() -> None:
    assert aggregate([score_document(_doc("x", 1, []), [])])["pk"] is None


def test_parse_labelled_sorts_boundaries_and_defaults_kind() -> None:
    docs = parse_labelled([{"id": "x", "blocks": ["a", "b", "c", "d"], "boundaries": [3, 1]}])
    assert docs == [LabelledDocument("x", "all", ("a", "b", "c", "d"), (1, 3))]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"id": "x"}, "non-empty JSON list"),
        ([], "non-empty JSON list"),
        (["text"], "document 0: expected an object"),
        ([{"blocks": ["a"], "boundaries": []}], "document 0: 'id'"),
        ([{"id": "x", "blocks": [], "boundaries": []}], "'blocks' must be a non-empty list"),
        ([{"id": "x", "blocks": ["a", 3], "boundaries": []}], "'blocks' must be a non-empty list"),
        ([{"id": "x", "blocks": ["a", "b"]}], "'boundaries' must be a list of integers"),
        ([{"id": "x", "blocks": ["a", "b"], "boundaries": [True]}], "list of integers"),
        ([{"id": "x", "blocks": ["a", "b"], "boundaries": [0]}], "in 1..1"),
        ([{"id": "x", "blocks": ["a", "b"], "boundaries": [2]}], "in 1..1"),
        ([{"id": "x", "blocks": ["a", "b", "c"], "boundaries": [1, 1]}], "distinct"),
        ([{"id": "x", "kind": "", "blocks": ["a"], "boundaries": []}], "'kind'"),
        ([{"id": "x", "blocks": ["a"], "boundaries": []}] * 2, "duplicate document ids: ['x']"),
    ],
)
def test_parse_labelled_rejects_bad_input(data: Any, message: str) -> None:
    with pytest.raises(LabelledInputError) as info:
        parse_labelled(data)
    assert message in str(info.value)


class _EvalFakeEncoder:
    name = "fake-model"
    weights_sha256 = "f" * 64

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors, self.calls = vectors, []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


def _write(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "labelled.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return str(path)


_LABELLED = [
    {"id": "same", "kind": "control", "blocks": ["p", "p", "p"], "boundaries": []},
    {"id": "shift", "kind": "topic", "blocks": ["p", "q", "r"], "boundaries": [2]},
]
_VECTORS = {"p": [1.0, 0.0], "q": [0.0, 1.0], "r": [0.0, 1.0]}


def test_cli_json_report_runs_the_production_detector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    encoder = _EvalFakeEncoder(_VECTORS)
    monkeypatch.setattr(evaluate, "load_encoder", lambda path, **_: encoder)
    status = main(["evaluate", _write(tmp_path, _LABELLED), "--threshold", "0.3", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0
    assert encoder.calls == [["p", "q", "r"]]  # one batch, "p" embedded once for both documents
    assert [(d["id"], d["predicted"]) for d in report["documents"]] == [("same", []), ("shift", [1])]
    # shift: predicted [1] vs reference [2] -> tp 0, fp 1, fn 1; k=1, windows (0,1) err, (1,2) err
    assert report["overall"] == {
        "documents": 2, "tp": 0, "fp": 1, "fn": 1,
        "precision": 0.0, "recall": 0.0, "f1": 0.0, "pk": 0.5, "windowdiff": 0.5,
    }  # fmt: skip
    assert (report["threshold"], report["model"], report["weights_sha256"]) == (0.3, "fake-model", "f" * 64)


def test_cli_text_report_lists_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(evaluate, "load_encoder", lambda path, **_: _EvalFakeEncoder(_VECTORS))
    assert main(["evaluate", _write(tmp_path, _LABELLED)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"method adjacent  threshold 0.3  model fake-model  sha256 {'f' * 64}"
    assert "shift                        topic          [2] -> [1]" in lines
    assert (
        "boundaries in one-topic documents (reference has none): 0 in 1 documents, 0 cut (control 0 in 1)"
    ) in lines
    assert [line.split()[0] for line in lines[-3:]] == ["control", "topic", "overall"]
    assert lines[-1].split() == ["overall", "2", "0", "1", "1", "0.000", "0.000", "0.000", "0.500", "0.500"]


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        ("not json", [], ": not valid JSON: Expecting value (line 1, column 1)"),
        ([{"id": "x", "blocks": ["a"], "boundaries": [1]}], [], "in 1..0"),
        (_LABELLED, ["--threshold", "1.5"], "--threshold must be within [0, 1], got 1.5"),
        (None, [], "missing.json: no such file"),
    ],
)
def test_cli_bad_input_exits_2_with_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any, extra: list[str], message: str
) -> None:
    path = _write(tmp_path, content) if content is not None else str(tmp_path / "missing.json")
    assert main(["evaluate", path, *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("lpeval evaluate: error: ")
    assert message in captured.err


def test_cli_missing_model_exits_3_with_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in (*OFFLINE_ENV, *QUIET_ENV):  # the loader sets these; restore them after the test
        monkeypatch.setenv(name, os.environ.get(name, ""))
    empty_model_dir = tmp_path / "model"
    empty_model_dir.mkdir()
    status = main(["evaluate", _write(tmp_path, _LABELLED), "--model-path", str(empty_model_dir)])
    err = capsys.readouterr().err
    assert status == 3
    assert f"model directory {empty_model_dir} has no model.safetensors" in err
    assert "pip install -e '.[embeddings-cpu]'" in err


def test_cli_invalid_settings_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from config.settings import get_settings

    monkeypatch.setenv("LONGPARSER_TORCH_THREADS", "0")
    get_settings.cache_clear()
    try:
        status = main(["evaluate", _write(tmp_path, _LABELLED)])
    finally:
        get_settings.cache_clear()
    assert status == 2
    assert "settings (LONGPARSER_* environment / .env): torch_threads" in capsys.readouterr().err


# --- methods, parameters, one-topic documents ----------------------------------------------------

# p, q and r are near each other's opposites, s agrees with p: a 4-block "one-topic" document
# whose middle block is an aside (adjacent cuts twice, cohesion keeps it) and a real shift.
_METHOD_VECTORS = {
    "p": [1.0, 0.0, 0.0], "aside": [0.0, 0.0, 1.0], "p2": [0.98, 0.2, 0.0],
    "q": [0.0, 1.0, 0.0], "q2": [0.1, 0.99, 0.0],
}  # fmt: skip
_METHOD_LABELLED = [
    {"id": "one", "kind": "one_topic", "blocks": ["p", "aside", "p2", "p"], "boundaries": []},
    {"id": "shift", "kind": "clear_shift", "blocks": ["p", "p2", "q", "q2"], "boundaries": [2]},
]


@pytest.mark.parametrize(
    ("extra", "method", "parameters", "predicted"),
    [
        ([], "adjacent", {"threshold": 0.3}, [[1, 2], [2]]),
        (["--method", "recommended"], "cohesion",
         {"pair_threshold": 0.21, "boundary_cost": 0.15}, [[], [2]]),
        (["--method", "cohesion", "--pair-threshold", "0.9", "--boundary-cost", "0"], "cohesion",
         {"pair_threshold": 0.9, "boundary_cost": 0.0}, [[1, 2], [2]]),  # the aside alone
    ],
)  # fmt: skip
def test_cli_method_and_parameters_from_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    extra: list[str], method: str, parameters: dict[str, float], predicted: list[list[int]],
) -> None:
    encoder = _EvalFakeEncoder(_METHOD_VECTORS)
    monkeypatch.setattr(evaluate, "load_encoder", lambda path, **_: encoder)
    assert main(["evaluate", _write(tmp_path, _METHOD_LABELLED), "--json", *extra]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(encoder.calls) == 1
    assert (report["method"], report["parameters"]) == (method, {"method": method, **parameters})
    assert [d["predicted"] for d in report["documents"]] == predicted
    assert [(d["kind"], d["reference"]) for d in report["documents"]] == [
        ("one_topic", []), ("clear_shift", [2])]  # fmt: skip
    unsegmented = report["no_boundary_documents"]
    assert unsegmented["boundaries"] == len(predicted[0])
    assert unsegmented["kinds"] == {"one_topic": {"documents": 1, "boundaries": len(predicted[0])}}
    assert set(report) >= {"overall", "kinds", "documents"}


def test_cli_method_from_a_config_file_and_flags_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(evaluate, "load_encoder", lambda path, **_: _EvalFakeEncoder(_METHOD_VECTORS))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"semantic_method": "recommended", "semantic_boundary_cost": 0.5}))
    assert main(["evaluate", _write(tmp_path, _METHOD_LABELLED), "-c", str(config), "--json",
                 "--pair-threshold", "0.3"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert (report["requested_method"], report["parameters"]) == (
        "recommended", {"method": "cohesion", "pair_threshold": 0.3, "boundary_cost": 0.5})


def test_no_boundary_documents_counts_per_kind() -> None:
    docs = [_doc("a", 4, [], "one_topic"), _doc("b", 4, [], "hard_negative"), _doc("c", 4, [2], "shift"),
            _doc("d", 4, [], "hard_negative")]  # fmt: skip
    report = evaluate_predictions(docs, [[1], [1, 3], [1], []])
    assert report["no_boundary_documents"] == {
        "documents": 3, "boundaries": 3, "documents_with_boundaries": 2,
        "kinds": {"hard_negative": {"documents": 2, "boundaries": 2},
                  "one_topic": {"documents": 1, "boundaries": 1}},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--pair-threshold", "1.2"], "--pair-threshold must be within [0, 1], got 1.2"),
        (["--boundary-cost", "-1"], "--boundary-cost must be within [0, 10], got -1.0"),
        (["-c", "{missing}"], "none.json: no such file"),
        (["-c", "[1, 2]"], "config (inline JSON): config must be a JSON object of ChunkingConfig fields"),
        (["-c", '{{"semantic_threshold": "0.3"}}'], 'config.semantic_threshold: must be a number, got "0.3"'),
        (["-c", "{bad}"], "config.semantic_methd: unknown field, did you mean 'semantic_method'?"),
    ],
)
def test_cli_bad_parameters_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"semantic_methd": "cohesion"}))
    extra = [e.format(missing=tmp_path / "none.json", bad=bad) for e in extra]
    assert main(["evaluate", _write(tmp_path, _LABELLED), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lpeval evaluate: error: ")
    assert message in err


def test_parse_labelled_reads_questions() -> None:
    docs = parse_labelled([{"id": "x", "blocks": ["a", "b"], "boundaries": [],
                            "questions": [{"question": "what?", "answer_block": 1}]}])  # fmt: skip
    assert docs[0].questions == (Question("what?", 1),)


@pytest.mark.parametrize(
    ("questions", "message"),
    [
        ("q", "'questions' must be a list"),
        ([{"question": "", "answer_block": 0}], "question 0: 'question' must be a non-empty string"),
        ([{"question": "q", "answer_block": 2}], "question 0: 'answer_block' must be an integer in 0..1"),
        ([{"question": "q", "answer_block": True}], "'answer_block' must be an integer"),
    ],
)
def test_parse_labelled_rejects_bad_questions(questions: Any, message: str) -> None:
    with pytest.raises(LabelledInputError, match=re.escape(message)):
        parse_labelled([{"id": "x", "blocks": ["a", "b"], "boundaries": [], "questions": questions}])


# --- evaluate-retrieval --------------------------------------------------------------------------


class _WordEncoder:
    """Bag-of-words vectors over a fixed vocabulary: deterministic for any text (chunks, questions)."""

    name = "word-model"
    weights_sha256 = "e" * 64
    VOCABULARY = ("volcano", "lava", "payroll", "tax", "orchid", "bloom")

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([[t.lower().count(w) for w in self.VOCABULARY] for t in texts], dtype=np.float32)


_RETRIEVAL = [
    {"id": "geo", "kind": "clear_shift", "boundaries": [2],
     "blocks": ["volcano lava " * 20, "lava volcano " * 20, "payroll tax " * 20, "tax payroll " * 20],
     "questions": [{"question": "payroll", "answer_block": 2}, {"question": "volcano", "answer_block": 0}]},
    {"id": "garden", "kind": "one_topic", "boundaries": [],
     "blocks": ["orchid bloom " * 20, "bloom orchid " * 20], "questions": []},
]  # fmt: skip


def _chunk(ids: list[str], tokens: int, overlap: list[str] | None = None) -> Chunk:
    return Chunk(chunk_id="c", text="t", token_count=tokens, chunk_type="section", block_ids=ids,
                 metadata={"overlap_block_ids": overlap} if overlap else {})  # fmt: skip


_TOKENS = {"a#0": 10, "a#1": 10, "b#0": 10, "b#1": 10}
_SOURCE = {"a#0": "a", "a#1": "a", "b#0": "b", "b#1": "b"}


@pytest.mark.parametrize(
    ("order", "budget", "taken"),
    [
        ([1, 2, 0], 25, [(("a#0", False), 10), (("b#0", True), 10), (("b#1", True), 5)]),  # last block cut
        ([2, 0, 1], 20, [(("a#1", True), 10), (("a#0", True), 10)]),  # exactly the budget
        ([2, 1], 5, [(("a#1", True), 5)]),  # the best chunk alone is cut to the budget
        ([2], 100, [(("a#1", True), 10)]),  # the corpus is smaller than the budget
    ],
)
def test_take_context_fills_exactly_the_budget(order: list[int], budget: int, taken: list[Any]) -> None:
    chunks = [_chunk(["a#0"], 10), _chunk(["b#0", "b#1"], 20, overlap=["a#0"]), _chunk(["a#1"], 10)]
    carried = [retrieval.carried_blocks(c) for c in chunks]
    assert retrieval.take_context(order, carried, _TOKENS, budget) == taken


@pytest.mark.parametrize(
    ("order", "answer", "budget", "expected"),
    [
        # a#0 only as overlap context of chunk 1: not a hit; context a#0 + b#0 + half of b#1
        ([1, 2, 0], "a#0", 25, {"hit": False, "rank": 3, "reciprocal_rank": 1 / 3, "context_tokens": 25,
                                "context_precision": 10 / 25}),
        ([0, 2, 1], "a#0", 20, {"hit": True, "rank": 1, "reciprocal_rank": 1.0, "context_tokens": 20,
                                "context_precision": 1.0}),
        # b#1 is cut (5 of its 10 tokens): ranked 1st, but not inside the context
        ([1, 0], "b#1", 25, {"hit": False, "rank": 1, "reciprocal_rank": 1.0, "context_tokens": 25,
                             "context_precision": 15 / 25}),
    ],
)  # fmt: skip
def test_score_question_hit_rank_and_precision(
    order: list[int], answer: str, budget: int, expected: dict[str, Any]
) -> None:
    chunks = [_chunk(["a#0"], 10), _chunk(["b#0", "b#1"], 20, overlap=["a#0"]), _chunk(["a#1"], 10)]
    got = retrieval.score_question(order, chunks, answer, _SOURCE[answer], budget, _TOKENS, _SOURCE)
    assert got == expected


def test_long_documents_take_every_lth_document() -> None:
    docs = [_doc(str(i), 2, []) for i in range(7)]
    groups = retrieval.long_documents(docs, 3)
    assert [[d.id for d in g] for g in groups] == [["0", "3", "6"], ["1", "4"], ["2", "5"]]


def test_cli_retrieval_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    encoder = _WordEncoder()
    monkeypatch.setattr(evaluate, "load_encoder", lambda path, **_: encoder)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"max_tokens": 60, "min_tokens": 0, "overlap_blocks": 0}))
    args = ["evaluate-retrieval", _write(tmp_path, _RETRIEVAL), "-c", str(config), "--budget", "60",
            "--group-size", "2", "--json"]  # fmt: skip
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["long_documents"], report["documents"], report["blocks"], report["chunks"]) == (1, 2, 6, 6)
    assert report["token_counter"] == "word estimate (whitespace words x 1.33)"
    assert (report["questions"], report["hit_rate"], report["mrr"]) == (2, 1.0, 1.0)
    # each question's best chunk is its answer block alone (53 tokens), then 7 tokens of its
    # neighbour from the same document: the context is all from the source document
    assert report["context_precision"] == 1.0
    assert report["mean_context_tokens"] == 60
    assert [q["answer_block_id"] for q in report["per_question"]] == ["geo#2", "geo#0"]
    assert len(encoder.calls) == 1  # structural config: chunks and questions in one batch
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out) == report  # deterministic


def test_cli_retrieval_takes_an_inline_config_like_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(evaluate, "load_encoder", lambda path, **_: _WordEncoder())
    fields = {"max_tokens": 60, "min_tokens": 0, "overlap_blocks": 0}
    config = tmp_path / "config.json"
    config.write_text(json.dumps(fields))
    reports = []
    for option in (str(config), json.dumps(fields)):
        assert main(["evaluate-retrieval", _write(tmp_path, _RETRIEVAL), "-c", option, "--budget", "60",
                     "--group-size", "2", "--json"]) == 0  # fmt: skip
        reports.append(json.loads(capsys.readouterr().out))
    assert reports[0] == reports[1]
    assert reports[1]["config"]["max_tokens"] == 60


def test_cli_evaluate_takes_an_inline_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(evaluate, "load_encoder", lambda path, **_: _EvalFakeEncoder(_METHOD_VECTORS))
    assert main(["evaluate", _write(tmp_path, _METHOD_LABELLED), "-c", '{"semantic_method": "recommended"}',
                 "--json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["requested_method"] == "recommended"


@pytest.mark.parametrize("command", ["evaluate", "evaluate-retrieval"])
def test_evaluate_help_describes_the_labelled_file_and_the_exit_statuses(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    for fragment in ('"boundaries": [3, 7]', '"answer_block": 4', "3 the encoder",
                     "exit status: 0 report printed; 2 bad input"):
        assert fragment in out


def test_cli_retrieval_semantic_config_uses_the_encoder_for_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    encoder = _WordEncoder()
    monkeypatch.setattr(evaluate, "load_encoder", lambda path, **_: encoder)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"use_semantic_chunking": True, "semantic_method": "recommended",
                                  "min_tokens": 0, "overlap_blocks": 0}))  # fmt: skip
    assert main(["evaluate-retrieval", _write(tmp_path, _RETRIEVAL), "-c", str(config), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["method"] == "cohesion"
    assert report["semantic_boundaries"] == 2  # geo | payroll and payroll | garden
    assert report["chunks"] == 3
    assert len(encoder.calls) == 2  # the engine's batch, then chunks and questions


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (_RETRIEVAL, ["--budget", "0"], "--budget must be at least 1, got 0"),
        (_RETRIEVAL, ["--group-size", "0"], "--group-size must be at least 1, got 0"),
        (_LABELLED, [], "no document has questions"),
        ("not json", [], ": not valid JSON: Expecting value"),
        (_RETRIEVAL, ["-c", "[1]"], "config (inline JSON): config must be a JSON object"),
    ],
)
def test_cli_retrieval_bad_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any, extra: list[str], message: str
) -> None:
    assert main(["evaluate-retrieval", _write(tmp_path, content), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lpeval evaluate-retrieval: error: ")
    assert message in err


def test_cli_retrieval_missing_model_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in (*OFFLINE_ENV, *QUIET_ENV):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    empty_model_dir = tmp_path / "model"
    empty_model_dir.mkdir()
    path = _write(tmp_path, _RETRIEVAL)
    assert main(["evaluate-retrieval", path, "--model-path", str(empty_model_dir)]) == 3
    assert "has no model.safetensors" in capsys.readouterr().err


# --- config messages and the encoder backend (both commands) ------------------------------------


@pytest.mark.parametrize("command", ["evaluate", "evaluate-retrieval"])
@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"semantic_methd": "cohesion"},
         "config.semantic_methd: unknown field, did you mean 'semantic_method'?"),
        ({"min_tokens": 500, "max_tokens": 100},
         "config: min_tokens (500) must be smaller than max_tokens (100): set min_tokens below 100"),
        ({"semantic_method": "nope"}, "config.semantic_method: Input should be"),
    ],
    ids=["typo", "cross-field", "bad-value"],
)  # fmt: skip
def test_cli_invalid_config_is_one_line_like_chunk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, config: dict[str, Any], message: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    labelled = _write(tmp_path, _RETRIEVAL if command == "evaluate-retrieval" else _LABELLED)
    assert main([command, labelled, "-c", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"lpeval {command}: error: {message}")
    assert captured.err.count("\n") == 1  # one line
    assert "Value error" not in captured.err and "validation error" not in captured.err


@pytest.fixture
def settings_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """``LONGPARSER_*`` variables set by the test, read afresh by the settings, forgotten after."""
    from config.settings import get_settings

    for name in ("LONGPARSER_ENCODER_BACKEND", "LONGPARSER_TORCH_THREADS", "LONGPARSER_MODEL_PATH"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


class _ExportedWordEncoder(_WordEncoder):
    name = "word-model (onnx-int8)"


@pytest.mark.parametrize("command", ["evaluate", "evaluate-retrieval"])
@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, {"backend": "torch", "threads": 1}),
        ({"LONGPARSER_ENCODER_BACKEND": "onnx-int8", "LONGPARSER_TORCH_THREADS": "3"},
         {"backend": "onnx-int8", "threads": 3}),
        ({"LONGPARSER_ENCODER_BACKEND": "openvino", "LONGPARSER_MODEL_PATH": "/models/minilm"},
         {"backend": "openvino", "threads": 1}),
    ],
    ids=["default", "onnx-int8", "openvino"],
)  # fmt: skip
def test_cli_loads_the_configured_encoder_backend(
    tmp_path: Path, settings_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str,
    env: dict[str, str], expected: dict[str, Any],
) -> None:
    for name, value in env.items():
        settings_env.setenv(name, value)
    calls: list[tuple[Any, dict[str, Any]]] = []

    def load(path: Any, **kwargs: Any) -> _WordEncoder:
        calls.append((path, kwargs))
        return _ExportedWordEncoder()

    settings_env.setattr(evaluate, "load_encoder", load)
    assert main([command, _write(tmp_path, _RETRIEVAL), "--json"]) == 0
    assert calls == [(env.get("LONGPARSER_MODEL_PATH"), expected)]
    assert json.loads(capsys.readouterr().out)["model"] == "word-model (onnx-int8)"  # the encoder's own name


def test_cli_model_path_flag_wins_over_the_settings(
    tmp_path: Path, settings_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings_env.setenv("LONGPARSER_MODEL_PATH", "/models/from-settings")
    calls: list[Any] = []
    settings_env.setattr(evaluate, "load_encoder",
                         lambda path, **_: calls.append(path) or _EvalFakeEncoder(_VECTORS))
    assert main(["evaluate", _write(tmp_path, _LABELLED), "--model-path", "/models/flag"]) == 0
    assert calls == ["/models/flag"]


def test_cli_without_the_settings_module_uses_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "config.settings", None)  # import fails; restored after
    calls: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(evaluate, "load_encoder",
                        lambda path, **kw: calls.append((path, kw)) or _EvalFakeEncoder(_VECTORS))
    assert main(["evaluate", _write(tmp_path, _LABELLED)]) == 0
    assert calls == [(None, {"backend": "torch", "threads": 1})]


def test_cli_backend_that_cannot_load_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from loaders.pinned_model import EncoderUnavailable

    def refuse(path: Any, **kwargs: Any) -> Any:
        raise EncoderUnavailable(f"encoder backend {kwargs['backend']!r} needs onnxruntime; "
                                 "pip install -e '.[onnx]'")

    monkeypatch.setattr(evaluate, "load_encoder", refuse)
    assert main(["evaluate", _write(tmp_path, _LABELLED)]) == 3
    assert "pip install -e '.[onnx]'" in capsys.readouterr().err


# --- the lpeval command line's help ------------------------------------------------------------


def _help(*argv: str, capsys: Any) -> str:
    from lpeval.main import build_parser

    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*argv, "--help"])
    assert exit_info.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps at the terminal width


@pytest.mark.parametrize("command", [[], ["evaluate"], ["evaluate-retrieval"], ["bench-retrieval"]])
def test_help_has_no_rst_markup(command: list[str], capsys: Any) -> None:
    assert "``" not in _help(*command, capsys=capsys)


def test_evaluate_help_states_the_threshold_default(capsys: Any) -> None:
    assert ("--threshold THRESHOLD adjacent: cosine threshold below which a boundary is placed "
            "(default: the config's semantic_threshold, 0.3)") in _help("evaluate", capsys=capsys)


@pytest.mark.parametrize("command", ["evaluate", "evaluate-retrieval"])
def test_config_help_points_to_the_config_reference(command: str, capsys: Any) -> None:
    text = _help(command, capsys=capsys)
    assert "(fields: docs/config.md)" in text
    assert "README" not in text


def test_library_warnings_print_as_lpeval_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: Any) -> None:
    """A warning logged while an lpeval command runs prints once, as that command's own line."""
    import logging

    def warn_and_fail(args: Any) -> Any:
        logging.getLogger("loaders.resources").warning("encoder gone: %s", "no SDK")
        raise evaluate.CommandError(3, "no model")

    monkeypatch.setattr(evaluate, "encoder_for", warn_and_fail)
    assert main(["evaluate", _write(tmp_path, _LABELLED)]) == 3
    assert capsys.readouterr().err == ("lpeval evaluate: warning: encoder gone: no SDK\n"
                                       "lpeval evaluate: error: no model\n")


def test_python_m_lpeval_is_the_entry_point(tmp_path: Path) -> None:
    """The real entry point, run as the docs say (from the repository's root): one error line, exit 2."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-m", "lpeval", "evaluate", str(tmp_path / "missing.json")],
                          capture_output=True, text=True, cwd=root, timeout=120, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"lpeval evaluate: error: labelled file {tmp_path / 'missing.json'}: no such file\n"


def test_bench_retrieval_runs_through_the_lpeval_command_line(capsys: Any) -> None:
    assert main(["bench-retrieval", "--split", "dev", "--document", "no-such-document"]) == 2
    assert capsys.readouterr().err == (
        "lpeval bench-retrieval: error: not in the dev split: ['no-such-document']\n")
