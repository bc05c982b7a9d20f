"""Stage 4: semantic boundaries (docs/semantic.md), where a section's topic changes.

The decision rule is a boundary method of :mod:`longparser.boundary_methods`, applied to each
section on its own (cut-offs are per section): ``adjacent`` by default (a boundary is placed
before block ``i`` when the cosine similarity of the embeddings of block ``i`` and of the
previous non-blank block of the same section is strictly less than the threshold; equal to the
threshold is *not* a boundary), or ``cohesion`` (``recommended``: its older name). A
zero-norm vector has similarity 0.0 with anything. Blank texts are never embedded, never start a
boundary and never absorb one: methods see only the non-blank blocks, and the indices returned refer to the
caller's lists. A section with fewer than two non-blank texts has no boundaries and sends
nothing to the encoder.

Cost model: one request makes ONE ``encoder.encode`` call holding each distinct non-blank text
once (repeated page headers and boilerplate are embedded once per request), rows normalised
once, then the method on each section's rows (numpy, linear in the section's length).
Arithmetic is float64 so that a cosine equal to the threshold compares equal (e.g. ``[1, 0]``
vs ``[3, 4]`` gives exactly 0.6).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from longparser.boundary_methods import boundary_rule, resolve
from longparser.resources import Encoder
from schemas.config import SEMANTIC_THRESHOLD


def unit_rows(vectors: Any) -> np.ndarray:
    """Rows scaled to unit length (float64); zero-norm rows stay all-zero (similarity 0.0)."""
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"expected a 2-D array of embeddings, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("embeddings contain NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # Dividing by 1.0 where the norm is 0 keeps zero rows at zero instead of producing NaN.
    return matrix / np.where(norms == 0.0, 1.0, norms)


def _non_blank(texts: Sequence[str]) -> list[int]:
    return [i for i, text in enumerate(texts) if text.strip()]


def _plan(sections: Sequence[Sequence[str]]) -> tuple[list[str], list[tuple[int, list[int], list[int]]]]:
    """Distinct texts to embed, and what each section compares.

    Returns:
        ``(unique_texts, plans)`` where each plan is ``(section, kept, rows)`` for a section
        with at least two non-blank texts: ``kept`` their indices in the section, ``rows`` their
        rows of ``unique_texts``.
    """
    row_of: dict[str, int] = {}
    plans: list[tuple[int, list[int], list[int]]] = []
    for section_no, texts in enumerate(sections):
        kept = _non_blank(texts)
        if len(kept) < 2:
            continue  # nothing to compare: these texts are never sent to the encoder
        rows = [row_of.setdefault(texts[index], len(row_of)) for index in kept]
        plans.append((section_no, kept, rows))
    return list(row_of), plans


def section_boundaries(
    sections: Sequence[Sequence[str]],
    encoder: Encoder,
    threshold: float = SEMANTIC_THRESHOLD,
    *,
    method: str = "adjacent",
    **parameters: float,
) -> tuple[list[set[int]], int]:
    """Boundaries per section.

    Args:
        sections: for each section, the texts of the blocks that reach packing, in order.
        encoder: the sentence encoder.
        threshold: the ``adjacent`` method's threshold: a boundary is placed before block ``i``
            when ``cosine(e[i-1], e[i]) < threshold`` (strictly less), ``e[i-1]`` being the
            previous non-blank block of the same section. Unused by other methods.
        method: a name of :data:`longparser.boundary_methods.METHODS` or an alias of it.
        parameters: the method's own parameters (``cohesion``: ``pair_threshold``,
            ``boundary_cost``).

    Returns:
        ``(boundaries, texts_embedded)``: for each section the set of indices ``i`` such that
        a new chunk starts before block ``i`` (indices refer to the input lists; blank texts are
        skipped, never embedded, and never start a boundary), and how many texts were encoded
        (distinct texts: a text repeated within the request is embedded once).

    Raises:
        ValueError: unknown method, or the encoder returned an array of the wrong shape or
            non-finite values.
    """
    name = resolve(method)
    rule = boundary_rule(name, **({"threshold": threshold} if name == "adjacent" else parameters))
    boundaries: list[set[int]] = [set() for _ in sections]
    unique_texts, plans = _plan(sections)
    if not plans:
        return boundaries, 0
    vectors = np.asarray(encoder.encode(unique_texts))
    if vectors.ndim != 2 or vectors.shape[0] != len(unique_texts):
        raise ValueError(
            f"encoder returned shape {vectors.shape} for {len(unique_texts)} texts; expected (n_texts, dim)"
        )
    unit = unit_rows(vectors)
    for section_no, kept, rows in plans:
        boundaries[section_no] = {kept[b] for b in rule(unit[rows])}
    return boundaries, len(unique_texts)
