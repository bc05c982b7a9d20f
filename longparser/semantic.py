"""Semantic boundaries (SPEC section 4). PLACEHOLDER: replaced by the full implementation."""

from __future__ import annotations

from collections.abc import Sequence

from longparser.resources import Encoder


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of two vectors; 0.0 when either has zero norm."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return 0.0 if na == 0 or nb == 0 else dot / (na * nb)


def section_boundaries(
    sections: Sequence[Sequence[str]], encoder: Encoder, threshold: float
) -> tuple[list[set[int]], int]:
    """Boundaries per section.

    Args:
        sections: for each section, the texts of the blocks that reach packing, in order.
        encoder: the sentence encoder.
        threshold: a boundary is placed before block ``i`` when
            ``cosine(e[i-1], e[i]) < threshold`` (strictly less).

    Returns:
        ``(boundaries, texts_embedded)``: for each section the set of indices ``i`` such that
        a new chunk starts before block ``i`` (indices refer to the input lists; blank texts are
        skipped, never embedded, and never start a boundary), and how many texts were encoded.
    """
    return [set() for _ in sections], 0
