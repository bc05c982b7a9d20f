"""Semantic boundaries (SPEC section 4): where adjacent blocks change topic.

A boundary is placed before block ``i`` of a section when the cosine similarity of the
embeddings of block ``i`` and of the previous non-blank block of the same section is strictly
less than the threshold (equal to the threshold is *not* a boundary). A zero-norm vector has
similarity 0.0 with anything. Blank texts are never embedded, never start a boundary and never
absorb one: the comparison skips over them, and the indices returned refer to the caller's
lists. A section with fewer than two non-blank texts has no boundaries and sends nothing to
the encoder.

Cost model: one request makes ONE ``encoder.encode`` call holding each distinct non-blank text
once (repeated page headers and boilerplate are embedded once per request), then a vectorised
numpy pass (rows normalised once, row-wise dot products for every adjacent pair of every
section at once). Arithmetic is float64 so that a cosine equal to the threshold compares equal
(e.g. ``[1, 0]`` vs ``[3, 4]`` gives exactly 0.6).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from longparser.resources import Encoder


def _unit_rows(vectors: Any) -> np.ndarray:
    """Rows scaled to unit length (float64); zero-norm rows stay all-zero (similarity 0.0)."""
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"expected a 2-D array of embeddings, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("embeddings contain NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # Dividing by 1.0 where the norm is 0 keeps zero rows at zero instead of producing NaN.
    return matrix / np.where(norms == 0.0, 1.0, norms)


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of two vectors; 0.0 when either has zero norm.

    Raises:
        ValueError: the vectors differ in length or hold non-finite values.
    """
    if len(a) != len(b):
        raise ValueError(f"vectors differ in length: {len(a)} != {len(b)}")
    unit = _unit_rows([list(a), list(b)])
    return float(unit[0] @ unit[1])


def adjacent_similarities(vectors: Any) -> np.ndarray:
    """Cosine of each row with the next: ``out[i] = cos(v[i], v[i + 1])``, length ``n - 1``."""
    unit = _unit_rows(vectors)
    if len(unit) < 2:
        return np.zeros(0, dtype=np.float64)
    return np.einsum("ij,ij->i", unit[:-1], unit[1:])


def boundaries_from_vectors(vectors: Any, threshold: float) -> list[int]:
    """Boundary indices ``b`` (a segment starts before row ``b``, ``1 <= b < n``) for one sequence.

    Every row is treated as a non-blank block; used by ``longparser evaluate`` and tests.
    """
    sims = adjacent_similarities(vectors)
    return [int(i) + 1 for i in np.flatnonzero(sims < threshold)]


def _non_blank(texts: Sequence[str]) -> list[int]:
    return [i for i, text in enumerate(texts) if text.strip()]


def _plan(sections: Sequence[Sequence[str]]) -> tuple[list[str], list[tuple[int, int, int, int]]]:
    """Distinct texts to embed, and the pairs to compare.

    Returns:
        ``(unique_texts, pairs)`` where each pair is ``(section, index, prev_row, row)``: block
        ``index`` of ``section`` is compared with the previous non-blank block of that section,
        ``prev_row``/``row`` being rows of ``unique_texts``.
    """
    rows: dict[str, int] = {}
    pairs: list[tuple[int, int, int, int]] = []
    for section_no, texts in enumerate(sections):
        kept = _non_blank(texts)
        if len(kept) < 2:
            continue  # nothing to compare: these texts are never sent to the encoder
        for index in kept:
            rows.setdefault(texts[index], len(rows))
        for prev, index in itertools.pairwise(kept):
            pairs.append((section_no, index, rows[texts[prev]], rows[texts[index]]))
    return list(rows), pairs


def section_boundaries(
    sections: Sequence[Sequence[str]], encoder: Encoder, threshold: float
) -> tuple[list[set[int]], int]:
    """Boundaries per section.

    Args:
        sections: for each section, the texts of the blocks that reach packing, in order.
        encoder: the sentence encoder.
        threshold: a boundary is placed before block ``i`` when
            ``cosine(e[i-1], e[i]) < threshold`` (strictly less), ``e[i-1]`` being the
            previous non-blank block of the same section.

    Returns:
        ``(boundaries, texts_embedded)``: for each section the set of indices ``i`` such that
        a new chunk starts before block ``i`` (indices refer to the input lists; blank texts are
        skipped, never embedded, and never start a boundary), and how many texts were encoded
        (distinct texts: a text repeated within the request is embedded once).

    Raises:
        ValueError: the encoder returned an array of the wrong shape or non-finite values.
    """
    boundaries: list[set[int]] = [set() for _ in sections]
    unique_texts, pairs = _plan(sections)
    if not pairs:
        return boundaries, 0
    vectors = np.asarray(encoder.encode(unique_texts))
    if vectors.ndim != 2 or vectors.shape[0] != len(unique_texts):
        raise ValueError(
            f"encoder returned shape {vectors.shape} for {len(unique_texts)} texts; expected (n_texts, dim)"
        )
    unit = _unit_rows(vectors)
    plan = np.asarray(pairs, dtype=np.int64)
    sims = np.einsum("ij,ij->i", unit[plan[:, 2]], unit[plan[:, 3]])
    for section_no, index in plan[sims < threshold, :2].tolist():
        boundaries[section_no].add(index)
    return boundaries, len(unique_texts)
