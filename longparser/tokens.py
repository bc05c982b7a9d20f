"""Token estimate (DEC-04) and the injectable token-counter type.

``tokens(text) = max(1, int(len(text.split()) * 1.33))`` - an estimate of the embedding
tokenizer's count, cheap enough to run on every block. It truncates (``int``), so per-block
sums may differ from the count of the joined text; packing works on per-block sums.
A model-tokenizer counter can be injected through :class:`longparser.resources.Resources`.
"""

from __future__ import annotations

from collections.abc import Callable

TokenCounter = Callable[[str], int]

TOKENS_PER_WORD = 1.33


def estimate_tokens(text: str) -> int:
    """DEC-04 estimate: whitespace words x 1.33, truncated, at least 1."""
    return max(1, int(len(text.split()) * TOKENS_PER_WORD))
