"""Texts longer than the model's window are embedded in windows, never truncated (every backend).

all-MiniLM-L6-v2 sees at most :data:`~schemas.config.MODEL_WINDOW` tokens, ``[CLS]`` and
``[SEP]`` included; sentence-transformers silently drops the rest of a longer text, so a block's
tail would never take part in a boundary decision. Here a text whose count in the pinned
tokenizer (special tokens excluded) is over the room left by the special tokens is cut into
windows by the tokenizer's offsets:

* every window holds at most the room, and ends where a word starts (a single word longer than
  the room is cut between its word pieces, the only place left);
* consecutive windows share about :data:`WINDOW_OVERLAP` tokens, rounded to a word start, so a
  sentence cut at one window's edge is read whole by the next one;
* the text's vector is the mean of its windows' vectors weighted by their token counts, scaled
  back to unit length (the model's own output is unit length). Weighting by tokens keeps a short
  last window from counting as much as a full one, which is what mean pooling over the whole
  text would do; the overlap's tokens count twice, a small bias accepted for whole sentences.

Rejected: one vector per window (the engine compares one vector per block), the first window
only (the truncation this replaces), and the max over windows (not what the model was trained to
produce). Texts that fit are sent to the backend exactly as before: when no text of a call is
long, the backend sees the same single call with the same list (so torch vectors are
bit-identical to the seed's); otherwise the short texts go in one call and the windows in another.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from schemas.config import MODEL_WINDOW

# Tokens shared by consecutive windows: about one sentence of prose (an eighth of the window).
WINDOW_OVERLAP = 32
# A window re-tokenised on its own can count a few more pieces than its slice of the whole text
# (a word cut between pieces starts afresh); the room shrinks by the excess, at most this often.
_RECUT_TRIES = 3

EncodeFn = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class Window:
    """Characters ``text[start:end]`` of one text, and their count in the model's tokens."""

    start: int
    end: int
    tokens: int


def cut_points(word_ids: Sequence[int | None], room: int, overlap: int) -> list[tuple[int, int]]:
    """Token ranges ``[first, last)`` covering ``len(word_ids)`` tokens, each at most ``room`` long.

    Cuts fall where a word starts; the next range starts at the first word start at or after
    ``last - overlap`` (never after ``last``, so no token is skipped, and always after ``first``,
    so the walk ends).
    """
    n = len(word_ids)
    starts = [i for i in range(n) if i == 0 or word_ids[i] is None or word_ids[i] != word_ids[i - 1]]
    starts.append(n)
    ranges: list[tuple[int, int]] = []
    first = 0
    while True:
        limit = first + room
        if limit >= n:
            ranges.append((first, n))
            return ranges
        # the last word start that leaves the window within the room; none: one over-long word
        candidate = starts[bisect_right(starts, limit) - 1]
        last = candidate if candidate > first else limit
        ranges.append((first, last))
        follow = bisect_left(starts, max(last - overlap, first + 1))
        first = min(starts[follow] if follow < len(starts) else last, last)


class TextWindows:
    """Plans the windows of long texts with the pinned tokenizer (a ``tokenizers.Tokenizer``
    without truncation or padding, as :func:`loaders.tokenizer.load_model_counter` loads it).

    ``count`` gives each text's tokens without the special ones (the model counter's memoised
    ``measure``, so that a text is tokenized in full only when it needs windows); default: the
    tokenizer's own encode.
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        count: Callable[[Sequence[str]], list[int]] | None = None,
        window: int = MODEL_WINDOW,
        overlap: int = WINDOW_OVERLAP,
    ) -> None:
        self.tokenizer = tokenizer
        self.count = count or self._encoded_lengths
        self.room = window - tokenizer.num_special_tokens_to_add(False)
        if not 0 <= overlap < self.room // 2:
            raise ValueError(f"overlap must be in [0, {self.room // 2}), got {overlap}")
        self.overlap = overlap

    def _encoded_lengths(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def plan(self, texts: Sequence[str]) -> list[list[Window] | None]:
        """For each text: None when it fits the window, else its windows in order."""
        plans: list[list[Window] | None] = [None] * len(texts)
        long = [i for i, n in enumerate(self.count(texts)) if n > self.room]
        if long:
            encodings = self.tokenizer.encode_batch([texts[i] for i in long], add_special_tokens=False)
            for i, encoding in zip(long, encodings, strict=True):
                plans[i] = self._windows(texts[i], encoding)
        return plans

    def _windows(self, text: str, encoding: Any) -> list[Window]:
        room = self.room
        for _ in range(_RECUT_TRIES):
            spans = [
                (encoding.offsets[first][0], encoding.offsets[last - 1][1])
                for first, last in cut_points(encoding.word_ids, room, self.overlap)
            ]
            pieces = self.tokenizer.encode_batch([text[a:b] for a, b in spans], add_special_tokens=False)
            counts = [len(piece.ids) for piece in pieces]
            excess = max(counts) - self.room
            if excess <= 0:
                break
            room -= excess
        return [Window(a, b, count) for (a, b), count in zip(spans, counts, strict=True)]


def embed_in_windows(texts: Sequence[str], encode: EncodeFn, windows: TextWindows) -> np.ndarray:
    """``encode`` each text whole when it fits, else by its windows (module docstring).

    ``encode`` takes a non-empty list and returns float32 ``(len, dim)``.
    """
    texts = list(texts)
    plans = windows.plan(texts)
    if all(plan is None for plan in plans):
        return encode(texts)
    short = [i for i, plan in enumerate(plans) if plan is None]
    parts = [(i, window) for i, plan in enumerate(plans) if plan is not None for window in plan]
    part_vectors = np.asarray(encode([texts[i][w.start : w.end] for i, w in parts]), dtype=np.float64)
    out = np.zeros((len(texts), part_vectors.shape[1]), dtype=np.float32)
    if short:
        out[short] = encode([texts[i] for i in short])
    sums = np.zeros((len(texts), part_vectors.shape[1]), dtype=np.float64)
    for (i, window), vector in zip(parts, part_vectors, strict=True):
        sums[i] += window.tokens * vector
    for i, plan in enumerate(plans):
        if plan is not None:
            norm = np.linalg.norm(sums[i])
            out[i] = sums[i] / norm if norm > 0 else sums[i]
    return out
