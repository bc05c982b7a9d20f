"""The token-counting seam: every stage counts through one :class:`TokenCounter`.

Texts are measured once, in batches, and a chunk's count is derived from the measures of its
pieces. A counter provides:

* ``measure(texts)``: each text's *units*, a measure that adds up when texts are joined with
  whitespace (the word estimate's whitespace words; a WordPiece tokenizer's tokens without
  its special tokens). A counter that has no such measure returns its counts;
* ``count_joined(text, units)``: the count of ``text``, the whitespace-join of pieces that
  measured ``units``. An additive counter (``additive``) computes it from the units alone, so nothing is
  counted twice and a caller may pass any text; any other counter counts ``text``;
* ``fitting_prefix(text, budget)``: the length, in characters, of the longest prefix of
  ``text`` counting at most ``budget`` (how a single over-long word is cut in strict mode);
* optionally, ``poorly_read(text)``: how many of the text's tokens the model reads poorly
  (``[UNK]``, single jamo, single CJK characters), or None when the counter cannot say; a
  tokenizer's counter has it, and ``stats.warnings`` says when chunks are mostly read so
  (:func:`longparser.scripts.poorly_read_warning`).

The default is the word estimate, ``max(1, int(words * 1.33))`` with ``words`` the
whitespace-separated words of the text. It is an estimate of the embedding tokenizer's count,
not that count: it truncates, so per-block counts may not add up to the joined text's count.
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate, compress
from operator import add, not_, sub
from typing import Protocol

import numpy as np

TOKENS_PER_WORD = 1.33
ESTIMATE_NAME = "estimate"
# Characters from which a batch's words are counted on its bytes (numpy's fixed cost per call is
# that of splitting a few short texts)
BATCH_CHARS = 2048
SLICE_CHARS = 1 << 20

# ASCII whitespace as str.split() sees it (str.isspace: \t \n \v \f \r, \x1c-\x1f, space) -> b" ",
# every other byte -> b"w" (the larger byte: a word starts where a byte is larger than the one before).
_WORD_RUN_TABLE = bytes(32 if chr(b).isspace() else ord("w") for b in range(128)) + b"w" * 128


class TokenCounter(Protocol):
    """What the engine needs from a token counter (see the module doc)."""

    name: str
    additive: bool

    def measure(self, texts: Sequence[str]) -> list[int]:
        """Each text's units (additive over whitespace joins for an additive counter)."""
        ...

    def count_joined(self, text: str, units: Sequence[int]) -> int:
        """The count of ``text``, the whitespace-join of pieces that measured ``units``."""
        ...

    def fitting_prefix(self, text: str, budget: int) -> int:
        """Characters of the longest prefix of ``text`` counting at most ``budget`` (0 if none)."""
        ...


def count(counter: TokenCounter, text: str) -> int:
    """One text's count."""
    return counter.count_joined(text, counter.measure((text,)))


def counts(counter: TokenCounter, texts: Sequence[str], units: Sequence[int]) -> list[int]:
    """Each text's count, given its measure (``units``, from ``counter.measure(texts)``): the word
    estimate's from the measures alone, in one C-level pass (a document has a count per block and
    per table row), any other counter's through ``count_joined``."""
    if type(counter) is EstimateCounter:
        return list(map(estimate_for_words, units))
    return [counter.count_joined(text, (n,)) for text, n in zip(texts, units, strict=True)]


def word_counts(texts: Sequence[str]) -> list[int]:
    """Each text's whitespace words: exactly ``len(text.split())``, the unit of the word estimate.

    A few short texts are split. A larger batch is counted in slices of about
    :data:`SLICE_CHARS` characters (so a long document's measure holds a few MB at a time), each
    by :func:`_counted_on_bytes`.
    """
    ends = list(accumulate(map(len, texts)))
    if not ends or ends[-1] < BATCH_CHARS:
        return [len(text.split()) for text in texts]
    counts: list[int] = []
    start = 0
    while start < len(texts):
        # the texts up to the one that reaches the slice's size (at least one text per slice)
        stop = max(start + 1, bisect_left(ends, (ends[start - 1] if start else 0) + SLICE_CHARS, start) + 1)
        counts += _counted_on_bytes(texts[start:stop])
        start = stop
    return counts


def _counted_on_bytes(texts: Sequence[str]) -> list[int]:
    """:func:`word_counts` of a slice: its ASCII texts counted together on their bytes (see
    :func:`_ascii_counts`), other text (whose whitespace may be non-ASCII) split."""
    joined = " ".join(texts)
    if joined.isascii():  # a flag of the string: no pass over it
        return _ascii_counts(texts, joined)
    is_ascii = np.fromiter(map(str.isascii, texts), dtype=bool, count=len(texts))
    counts = np.empty(len(texts), dtype=np.int64)
    counts[~is_ascii] = [len(text.split()) for text in compress(texts, map(not_, is_ascii.tolist()))]
    chosen = list(compress(texts, is_ascii.tolist()))
    if chosen:
        counts[is_ascii] = _ascii_counts(chosen, " ".join(chosen))
    return counts.tolist()


def _ascii_counts(texts: Sequence[str], joined: str) -> list[int]:
    """The words of ASCII ``texts`` (``joined``: the texts joined by spaces, a space between two
    texts ending any word), without a string per word: every byte mapped to a space or a word
    byte by one translate (ASCII whitespace as ``str.split`` sees it); a word starts at each word
    byte after a space byte, and a text's count is the number of starts within its span."""
    runs = np.frombuffer((" " + joined + " ").encode("ascii").translate(_WORD_RUN_TABLE), dtype=np.uint8)
    starts = np.flatnonzero(runs[1:] > runs[:-1])  # b"w" after b" ": a word starts at index + 1
    # text k's starts lie before the index of the space after it: its cumulative length + k + 1
    found = np.searchsorted(starts, list(map(add, accumulate(map(len, texts)), itertools.count(1)))).tolist()
    return list(map(sub, found, [0, *found[:-1]]))


def estimate_for_words(words: int) -> int:
    """The word estimate of a text of ``words`` whitespace words (at least 1)."""
    return max(1, int(words * TOKENS_PER_WORD))


def bisect_prefix(counter: TokenCounter, text: str, budget: int) -> int:
    """Longest fitting prefix by bisection over its length (a longer prefix never counts less)."""
    if count(counter, text) <= budget:
        return len(text)
    low, high = 0, len(text)  # text[:low] fits (or low == 0), text[:high] does not
    while high - low > 1:
        middle = (low + high) // 2
        if count(counter, text[:middle]) <= budget:
            low = middle
        else:
            high = middle
    return low


class EstimateCounter:
    """The word estimate: ``max(1, int(whitespace words x 1.33))``; units are words."""

    name = ESTIMATE_NAME
    additive = True

    def measure(self, texts: Sequence[str]) -> list[int]:
        return word_counts(texts)

    def count_joined(self, text: str, units: Sequence[int]) -> int:
        return estimate_for_words(sum(units))

    def fitting_prefix(self, text: str, budget: int) -> int:
        """Up to the end of the last whole word that keeps the estimate within ``budget``.

        A single word estimates to 1 token, so a budget of at least 1 always fits a word.
        """
        words = math.floor(budget / TOKENS_PER_WORD)
        while estimate_for_words(words + 1) <= budget:  # float rounding of the division
            words += 1
        spans = text.split()
        if len(spans) <= words:
            return len(text)
        if words == 0:
            return 0
        end = 0
        for word in spans[:words]:
            end = text.index(word, end) + len(word)
        return end


ESTIMATE = EstimateCounter()

