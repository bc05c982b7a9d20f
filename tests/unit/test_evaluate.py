"""``longparser evaluate``: metrics on hand-computed cases, input validation, exit statuses.

No model: predictions are given directly, or the CLI's encoder loader is replaced by a fake
encoder whose vectors are chosen per text.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cli.evaluate as evaluate
from cli.main import main
from loaders.encoder import OFFLINE_ENV, QUIET_ENV
from longparser.evaluation import (
    LabelledDocument,
    LabelledInputError,
    aggregate,
    evaluate_predictions,
    parse_labelled,
    pk_windowdiff,
    prf,
    score_document,
    window_size,
)


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
    monkeypatch.setattr(evaluate, "load_encoder", lambda path: encoder)
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
    monkeypatch.setattr(evaluate, "load_encoder", lambda path: _EvalFakeEncoder(_VECTORS))
    assert main(["evaluate", _write(tmp_path, _LABELLED)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"threshold 0.3  model fake-model  sha256 {'f' * 64}"
    assert "shift                        topic          [2] -> [1]" in lines
    assert [line.split()[0] for line in lines[-3:]] == ["control", "topic", "overall"]
    assert lines[-1].split() == ["overall", "2", "0", "1", "1", "0.000", "0.000", "0.000", "0.500", "0.500"]


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        ("not json", [], "is not valid JSON"),
        ([{"id": "x", "blocks": ["a"], "boundaries": [1]}], [], "in 1..0"),
        (_LABELLED, ["--threshold", "1.5"], "--threshold must be within [0, 1], got 1.5"),
        (None, [], "cannot read"),
    ],
)
def test_cli_bad_input_exits_2_with_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any, extra: list[str], message: str
) -> None:
    path = _write(tmp_path, content) if content is not None else str(tmp_path / "missing.json")
    assert main(["evaluate", path, *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("longparser evaluate: error: ")
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
    assert "invalid LONGPARSER_* settings" in capsys.readouterr().err
