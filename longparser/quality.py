"""Per-chunk quality score (SPEC 3.9). PLACEHOLDER: replaced by the full scorer."""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Any

from longparser.resources import LanguageIdentifier

UNKNOWN_SOURCES_SCORE = 0.5


def score_chunk(
    text: str,
    sources: Sequence[tuple[float, int]],
    *,
    word_list: Container[str] | None = None,
    language_id: LanguageIdentifier | None = None,
) -> tuple[float, dict[str, Any]]:
    """Score one chunk's text.

    Args:
        text: the chunk's full text.
        sources: ``(confidence.overall, len(block text))`` for each known primary source block;
            empty when none of the chunk's source ids is known (score 0.5).
        word_list: dictionary for the coverage penalty, or None (check off).
        language_id: language identifier, or None (confidence 1.0).

    Returns:
        ``(score in [0, 1], components)``; components go to ``chunk.metadata["quality"]``.
    """
    if not sources:
        return UNKNOWN_SOURCES_SCORE, {"unknown_sources": True}
    total = sum(length for _, length in sources) or len(sources)
    conf = sum(c * (length or 1) for c, length in sources) / total
    return max(0.0, min(1.0, conf)), {"confidence": conf}
