"""The token-counting seam: every stage counts through one :class:`TokenCounter`.

A counter answers three questions, and nothing in the engine asks which counter it holds:

* ``count(text)``: the tokens of a text, as the counter defines them;
* ``count_many(texts)``: the same for many texts at once (a tokenizer batches them);
* ``fitting_prefix(text, budget)``: the length, in characters, of the longest prefix of
  ``text`` that counts at most ``budget`` (how a single over-long word is cut in strict mode).

``special_tokens`` is what the counter adds once per text whatever its content (a BERT
tokenizer's ``[CLS]`` and ``[SEP]``): the cost of blocks joined into one chunk is then the sum
of their counts less that overhead for every block but the first (:func:`joined_cost`).

The default is the DEC-04 estimate, ``max(1, int(words * 1.33))`` with ``words`` the
whitespace-separated words of the text. It is an estimate of the embedding tokenizer's count,
not that count: it truncates, so per-block sums may differ from the count of the joined text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

TOKENS_PER_WORD = 1.33
ESTIMATE_NAME = "estimate"

# ASCII whitespace as str.split() sees it (str.isspace: \t \n \v \f \r, \x1c-\x1f, space) -> b" ",
# every other byte -> b"w": a word starts at each b" w" and at a leading b"w".
_WORD_RUN_TABLE = bytes(32 if chr(b).isspace() else ord("w") for b in range(128)) + b"w" * 128


class TokenCounter(Protocol):
    """What the engine needs from a token counter (see the module doc)."""

    name: str
    special_tokens: int

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        ...

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """``[count(text) for text in texts]``, possibly batched."""
        ...

    def fitting_prefix(self, text: str, budget: int) -> int:
        """Characters of the longest prefix of ``text`` counting at most ``budget`` (0 if none)."""
        ...


def word_count(text: str) -> int:
    """Whitespace words of ``text``: exactly ``len(text.split())``, the unit of the DEC-04 estimate.

    ASCII text is counted on its bytes by one translate and one substring count, without
    building a string per word; other text (whose whitespace may be non-ASCII) is split.
    """
    if not text.isascii():
        return len(text.split())
    runs = text.encode("ascii").translate(_WORD_RUN_TABLE)
    return runs.count(b" w") + runs.startswith(b"w")


def estimate_for_words(words: int) -> int:
    """DEC-04 estimate of a text of ``words`` whitespace words (at least 1)."""
    return max(1, int(words * TOKENS_PER_WORD))


class CounterBase:
    """Shared behaviour of counters: batching by mapping, prefix search by bisection.

    A subclass defines ``count`` (and may override the others when it can do better, as a
    tokenizer with offsets does for ``fitting_prefix``).
    """

    name = "counter"
    special_tokens = 0

    def count(self, text: str) -> int:
        raise NotImplementedError

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return list(map(self.count, texts))

    def fitting_prefix(self, text: str, budget: int) -> int:
        """Bisection over prefix lengths; assumes a longer prefix never counts less."""
        if self.count(text) <= budget:
            return len(text)
        low, high = 0, len(text)  # count(text[:low]) fits (or low == 0), text[:high] does not
        while high - low > 1:
            middle = (low + high) // 2
            if self.count(text[:middle]) <= budget:
                low = middle
            else:
                high = middle
        return low


class EstimateCounter(CounterBase):
    """The DEC-04 estimate: ``max(1, int(whitespace words x 1.33))``."""

    name = ESTIMATE_NAME

    def count(self, text: str) -> int:
        return estimate_for_words(word_count(text))

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
        end, position = 0, 0
        for word in spans[:words]:
            position = text.index(word, end)
            end = position + len(word)
        return end


class CallableCounter(CounterBase):
    """A plain ``text -> int`` function as a counter (no special tokens)."""

    def __init__(self, function: Callable[[str], int], name: str | None = None) -> None:
        self.function = function
        self.name = name or getattr(function, "__name__", "custom")

    def count(self, text: str) -> int:
        return self.function(text)


ESTIMATE = EstimateCounter()


def as_counter(counter: TokenCounter | Callable[[str], int]) -> TokenCounter:
    """``counter`` itself when it has the counter interface, else a plain function wrapped."""
    if hasattr(counter, "count") and hasattr(counter, "fitting_prefix"):
        return counter  # type: ignore[return-value]
    return CallableCounter(counter)  # type: ignore[arg-type]


def joined_cost(costs: Sequence[int], counter: TokenCounter) -> int:
    """Estimated count of texts joined by whitespace, from their separate counts.

    Each text's count carries the counter's per-text overhead (``special_tokens``) once; the
    joined text carries it once in all.
    """
    if not costs:
        return 0
    return sum(costs) - counter.special_tokens * (len(costs) - 1)
