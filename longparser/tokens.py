"""Token estimate (DEC-04) and the injectable token-counter type.

``tokens(text) = max(1, int(len(text.split()) * 1.33))`` - an estimate of the embedding
tokenizer's count, cheap enough to run on every block. It truncates (``int``), so per-block
sums may differ from the count of the joined text; packing works on per-block sums.
A model-tokenizer counter can be injected through :class:`longparser.resources.Resources`.

The estimate's unit, the whitespace word count, is additive: texts joined by a whitespace
separator have exactly the sum of their word counts (no word can span the separator). The
engine uses this with the default counter: each block's words are counted once, and a
chunk's count is summed from its parts instead of counting every chunk text again
(``Draft.tokens``).

Counting words does not need the words: :func:`word_count` counts the starts of
non-whitespace runs in C (no string object per word, ~5x cheaper than ``str.split`` on
ASCII text); it is exactly ``len(text.split())``.
"""

from __future__ import annotations

from collections.abc import Callable

TokenCounter = Callable[[str], int]

TOKENS_PER_WORD = 1.33

# ASCII whitespace as str.split() sees it (str.isspace: \t \n \v \f \r, \x1c-\x1f, space) -> b" ",
# every other byte -> b"w": a word starts at each b" w" and at a leading b"w".
_WORD_RUN_TABLE = bytes(32 if chr(b).isspace() else ord("w") for b in range(128)) + b"w" * 128
# The same, but the line break is kept (line_word_counts splits on it): words also start at b"\nw".
_RUN_TABLE = bytes(b if b == 10 else 32 if chr(b).isspace() else ord("w") for b in range(128)) + b"w" * 128


def word_count(text: str) -> int:
    """Whitespace words of ``text``: exactly ``len(text.split())``, the unit of the DEC-04 estimate.

    ASCII text (``str.isascii`` is O(1)) is counted on its bytes by one translate and one
    substring count (a two-byte count is the costliest step: one, not one per kind of
    whitespace); other text (whose whitespace may be non-ASCII) is split.
    """
    if not text.isascii():
        return len(text.split())
    runs = text.encode("ascii").translate(_WORD_RUN_TABLE)
    return runs.count(b" w") + runs.startswith(b"w")


def line_word_counts(lines: list[str]) -> list[int]:
    """``[word_count(line) for line in lines]``, for many short lines at once (table rows).

    ASCII lines without line breaks are joined and translated once; each line's count is then
    two C calls on its slice, instead of a function call, an encode and a translate per line.
    """
    joined = "\n".join(lines)
    if not joined.isascii() or joined.count("\n") != len(lines) - 1:
        return list(map(word_count, lines))
    # a line break is whitespace too, so each line's runs start at its own first byte
    runs = joined.encode("ascii").translate(_RUN_TABLE).split(b"\n")
    return [line.count(b" w") + line.startswith(b"w") for line in runs]


def tokens_for_words(words: int) -> int:
    """DEC-04 estimate of a text of ``words`` whitespace words.

    ``max(1, ...)`` written as a comparison: this runs for every block, row and chunk, and the
    builtin call was a third of its cost.
    """
    tokens = int(words * TOKENS_PER_WORD)
    return tokens if tokens > 1 else 1


def estimate_tokens(text: str) -> int:
    """DEC-04 estimate: whitespace words x 1.33, truncated, at least 1."""
    return max(1, int(word_count(text) * TOKENS_PER_WORD))
