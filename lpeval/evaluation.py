"""Boundary quality on labelled documents: P/R/F1, Pk and WindowDiff (``lpeval evaluate``).

Input (the format of ``tests/fixtures/semantic_documents.json`` and ``eval/boundaries_v1``): a
JSON list of documents ``{"id": str, "blocks": [text, ...], "boundaries": [int, ...],
"kind": str?, "rationale": str?, "questions": [{"question": str, "answer_block": int}, ...]?}``
(other fields are ignored; questions are used by ``lpeval evaluate-retrieval``).

Conventions:
    * A document of ``n`` blocks is one section. Boundary ``b`` means "a new segment starts
      before block ``b``" (zero-based), so ``1 <= b < n``; ``[]`` is a single segment.
    * Predictions come from :func:`longparser.semantic.section_boundaries` with the real
      encoder and the chosen method: all documents in ONE encode batch, exactly the
      production path. Methods never see ids or kinds.
    * Precision, recall and F1 compare exact positions and are micro-averaged: true positives,
      false positives and false negatives are summed over the documents of a group first.
      Empty denominators: precision is 1.0 when nothing was predicted (no false boundary was
      placed), recall is 1.0 when there is nothing to find; F1 is 0.0 when P + R is 0. So a
      document with no reference and no predicted boundaries scores 1.0 / 1.0 / 1.0, while
      predicting nothing where boundaries exist scores P 1.0, R 0.0, F1 0.0.
    * Pk (Beeferman et al.) and WindowDiff (Pevzner & Hearst) are computed per document over
      the ``n - k`` windows ``(i, i + k)``, ``k`` = half the document's mean reference segment
      length ``n / (len(boundaries) + 1)``, rounded half up, at least 1. Pk counts windows
      where reference and prediction disagree on "same segment"; WindowDiff counts windows
      where they disagree on the number of boundaries inside. A document with no window
      (``n <= k``, i.e. a single block) has no Pk/WindowDiff and is left out of those averages
      (``null`` when no document of a group has one). Group values are plain means over
      documents. Lower is better for both.
    * "Boundaries in one-topic documents" (``no_boundary_documents``) counts the boundaries
      placed in documents whose reference has none, whatever their kind (in
      ``eval/boundaries_v1``: ``one_topic`` and ``hard_negative``), in total and per kind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from longparser.resources import Encoder
from longparser.semantic import section_boundaries


class LabelledInputError(ValueError):
    """The labelled file is not in the expected format; the message names the document/field."""


@dataclass(frozen=True)
class Question:
    """A retrieval question and the index of the one block that answers it."""

    question: str
    answer_block: int


@dataclass(frozen=True)
class LabelledDocument:
    """One labelled document (boundaries sorted, unique, within ``1..n-1``)."""

    id: str
    kind: str
    blocks: tuple[str, ...]
    boundaries: tuple[int, ...]
    questions: tuple[Question, ...] = ()


def _parse_questions(where: str, raw: Any, n_blocks: int) -> tuple[Question, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise LabelledInputError(f"{where}: 'questions' must be a list")
    questions = []
    for i, item in enumerate(raw):
        text = item.get("question") if isinstance(item, dict) else None
        answer = item.get("answer_block") if isinstance(item, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise LabelledInputError(f"{where}: question {i}: 'question' must be a non-empty string")
        if type(answer) is not int or not 0 <= answer < n_blocks:
            raise LabelledInputError(
                f"{where}: question {i}: 'answer_block' must be an integer in 0..{n_blocks - 1}"
            )
        questions.append(Question(text, answer))
    return tuple(questions)


def _parse_document(position: int, raw: Any) -> LabelledDocument:
    where = f"document {position}"
    if not isinstance(raw, dict):
        raise LabelledInputError(f"{where}: expected an object, got {type(raw).__name__}")
    doc_id, kind = raw.get("id"), raw.get("kind", "all")
    blocks, bounds = raw.get("blocks"), raw.get("boundaries")
    if not isinstance(doc_id, str) or not doc_id:
        raise LabelledInputError(f"{where}: 'id' must be a non-empty string")
    where = f"document {position} (id {doc_id!r})"
    if not isinstance(kind, str) or not kind:
        raise LabelledInputError(f"{where}: 'kind' must be a non-empty string")
    if not isinstance(blocks, list) or not blocks or not all(isinstance(t, str) for t in blocks):
        raise LabelledInputError(f"{where}: 'blocks' must be a non-empty list of strings")
    if not isinstance(bounds, list) or not all(type(b) is int for b in bounds):
        raise LabelledInputError(f"{where}: 'boundaries' must be a list of integers")
    bad = [b for b in bounds if not 1 <= b < len(blocks)]
    if bad or len(set(bounds)) != len(bounds):
        raise LabelledInputError(
            f"{where}: 'boundaries' must be distinct integers in 1..{len(blocks) - 1} "
            f"(a boundary b starts a segment before block b), got {bounds}"
        )
    questions = _parse_questions(where, raw.get("questions"), len(blocks))
    return LabelledDocument(doc_id, kind, tuple(blocks), tuple(sorted(bounds)), questions)


def parse_labelled(data: Any) -> list[LabelledDocument]:
    """Validate decoded JSON into documents (ids must be unique)."""
    if not isinstance(data, list) or not data:
        raise LabelledInputError("expected a non-empty JSON list of labelled documents")
    documents = [_parse_document(i, raw) for i, raw in enumerate(data)]
    ids = [d.id for d in documents]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise LabelledInputError(f"duplicate document ids: {duplicates}")
    return documents


def prf(tp: int, fp: int, fn: int) -> dict[str, float]:
    """Precision, recall and F1 from counts, with the empty-denominator conventions above."""
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def window_size(n_blocks: int, reference: Sequence[int]) -> int:
    """k = half the mean reference segment length, rounded half up (exact arithmetic), >= 1."""
    half_mean = Fraction(n_blocks, 2 * (len(reference) + 1))
    return max(1, math.floor(half_mean + Fraction(1, 2)))


def _segment_ids(n_blocks: int, boundaries: Sequence[int]) -> list[int]:
    """Segment number of each block: how many boundaries lie at or before it."""
    starts = set(boundaries)
    ids, current = [], 0
    for block in range(n_blocks):
        current += block in starts
        ids.append(current)
    return ids


def pk_windowdiff(
    n_blocks: int, reference: Sequence[int], predicted: Sequence[int], k: int
) -> tuple[float, float] | None:
    """``(Pk, WindowDiff)`` over the windows ``(i, i + k)``, ``0 <= i < n - k``; None if none."""
    windows = n_blocks - k
    if windows < 1:
        return None
    ref, hyp = _segment_ids(n_blocks, reference), _segment_ids(n_blocks, predicted)
    pk_errors = wd_errors = 0
    for i in range(windows):
        ref_count, hyp_count = ref[i + k] - ref[i], hyp[i + k] - hyp[i]
        pk_errors += (ref_count == 0) != (hyp_count == 0)
        wd_errors += ref_count != hyp_count
    return pk_errors / windows, wd_errors / windows


def score_document(doc: LabelledDocument, predicted: Sequence[int]) -> dict[str, Any]:
    """Per-document counts and window metrics."""
    ref, hyp = set(doc.boundaries), set(predicted)
    k = window_size(len(doc.blocks), doc.boundaries)
    windows = pk_windowdiff(len(doc.blocks), doc.boundaries, sorted(hyp), k)
    return {
        "id": doc.id,
        "kind": doc.kind,
        "n_blocks": len(doc.blocks),
        "reference": sorted(ref),
        "predicted": sorted(hyp),
        "tp": len(ref & hyp),
        "fp": len(hyp - ref),
        "fn": len(ref - hyp),
        "k": k,
        "pk": None if windows is None else windows[0],
        "windowdiff": None if windows is None else windows[1],
    }


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def aggregate(scores: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Micro-averaged P/R/F1 and mean Pk/WindowDiff over a group of scored documents."""
    tp, fp, fn = (sum(s[key] for s in scores) for key in ("tp", "fp", "fn"))
    return {
        "documents": len(scores),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        **prf(tp, fp, fn),
        "pk": _mean([s["pk"] for s in scores]),
        "windowdiff": _mean([s["windowdiff"] for s in scores]),
    }


def no_boundary_documents(scores: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Boundaries placed in documents whose reference has none: total, per kind, documents cut."""
    unsegmented = [s for s in scores if not s["reference"]]
    kinds = sorted({s["kind"] for s in unsegmented})
    return {
        "documents": len(unsegmented),
        "boundaries": sum(len(s["predicted"]) for s in unsegmented),
        "documents_with_boundaries": sum(1 for s in unsegmented if s["predicted"]),
        "kinds": {
            kind: {
                "documents": sum(1 for s in unsegmented if s["kind"] == kind),
                "boundaries": sum(len(s["predicted"]) for s in unsegmented if s["kind"] == kind),
            }
            for kind in kinds
        },
    }


def evaluate_predictions(
    documents: Sequence[LabelledDocument], predictions: Sequence[Sequence[int]]
) -> dict[str, Any]:
    """The full report: per document, per kind (sorted by name), overall, one-topic documents."""
    scores = [score_document(doc, pred) for doc, pred in zip(documents, predictions, strict=True)]
    kinds = sorted({s["kind"] for s in scores})
    return {
        "documents": scores,
        "kinds": {kind: aggregate([s for s in scores if s["kind"] == kind]) for kind in kinds},
        "overall": aggregate(scores),
        "no_boundary_documents": no_boundary_documents(scores),
    }


def predict_boundaries(
    documents: Sequence[LabelledDocument], encoder: Encoder, threshold: float, **method: Any
) -> list[list[int]]:
    """The production detector, each document being one section, all in one encode batch.

    ``threshold`` and ``method`` are :func:`longparser.semantic.section_boundaries`'s (for a
    config: ``config.semantic_threshold, **config.semantic_method_args()``).
    """
    found, _ = section_boundaries([doc.blocks for doc in documents], encoder, threshold, **method)
    return [sorted(b) for b in found]
