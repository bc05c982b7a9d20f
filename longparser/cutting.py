"""Cutting a text where it fits, at the most natural places: line breaks, then sentence ends,
then word boundaries, and only then inside a word (at the counter's own token boundaries, never
inside a character cluster).

A text holding Chinese, Japanese or Korean characters has more sentence ends and word
boundaries (:mod:`longparser.scripts`): ``。`` and its kin end a sentence without whitespace
after them, and a word boundary may fall between two characters beside a Han ideograph.

Used where a maximum must hold (strict mode) and where context is shortened (overlap, lead-ins,
breadcrumbs). "Fits" is a predicate on a candidate piece (a chunk with some context around the
piece), and a longer piece never fits when a shorter one does not. Every piece is a span of the
original text; the whitespace at a cut is left out of both pieces, so the pieces hold every
other character of the text, in order. A piece never starts or ends with whitespace, except
that a piece of code starts with its first line's indentation.

Cost: each piece is searched for in a window that doubles from the piece's start until it
holds more than fits, so cutting a long text costs about as many counts as it has pieces times
the logarithm of a piece's length, never a count of the whole rest per piece.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from longparser.scripts import CJK_SENTENCES, CJK_WORDS, cluster_start, has_cjk
from longparser.tokens import TokenCounter, count

# Each level's cuts: the whitespace (group 1) between two pieces; a line's trailing spaces are
# part of the cut, so a piece never ends with whitespace.
_LINES = re.compile(r"([^\S\n]*\n\s*)(?=\S)")
_SENTENCES = re.compile(r"[.!?…][\"'”’)\]]*(\s+)(?=\S)")  # after . ! ? … and closing quotes
_WORDS = re.compile(r"(\s+)(?=\S)")
# Code is cut at line ends only, the next line's indentation kept with it (a line longer than
# the whole budget is still cut at spaces: a strict maximum wins over a line).
_CODE_LINES = re.compile(r"([^\S\n]*\n+)(?=[^\n])")
LEVELS = (_LINES, _SENTENCES, _WORDS)
CODE_LEVELS = (_CODE_LINES, _WORDS)
# A CJK or Korean text's levels: the same, with its scripts' sentence ends and word boundaries.
_CJK_LEVELS = {_SENTENCES: CJK_SENTENCES, _WORDS: CJK_WORDS}
FIRST_WINDOW = 256  # characters

Cut = tuple[int, int]  # (where the piece before ends, where the piece after starts)
Fits = Callable[[str], bool]


def text_bounds(text: str) -> tuple[int, int]:
    """Where ``text`` starts and ends without its surrounding whitespace."""
    return len(text) - len(text.lstrip()), len(text.rstrip())


def _for_text(levels: tuple[re.Pattern[str], ...], text: str) -> tuple[re.Pattern[str], ...]:
    """``levels`` as they apply to ``text``: with CJK and Korean rules where it holds such characters."""
    if not has_cjk(text):
        return levels
    return tuple(_CJK_LEVELS.get(level, level) for level in levels)


def _cuts(pattern: re.Pattern[str], text: str, start: int, end: int) -> list[Cut]:
    """The cuts of one level strictly inside ``text[start:end]``."""
    cuts = []
    for match in pattern.finditer(text, start, end):
        before, after = match.span(1)
        if start < before and after < end:
            cuts.append((before, after))
    return cuts


def _last_fitting(cuts: list[Cut], text: str, start: int, fits: Fits) -> Cut | None:
    """The last cut whose piece fits (bisection: a longer piece never fits when a shorter does not)."""
    low, high, best = 0, len(cuts) - 1, None
    while low <= high:
        middle = (low + high) // 2
        if fits(text[start : cuts[middle][0]]):
            best, low = cuts[middle], middle + 1
        else:
            high = middle - 1
    return best


def _inside_word(text: str, start: int, end: int, fits: Fits, counter: TokenCounter) -> int:
    """The end of the longest fitting start of ``text[start:end]`` (one word), cut at the
    counter's token boundaries (its prefix search for a token budget, the budget found by
    bisection); ``start`` when not even one character fits."""
    word = text[start:end]
    # token budgets: low's prefix fits, above high none can (a byte-level BPE may spend several
    # tokens on one character: the word's own count bounds it, not its length)
    low, high = 0, max(1, len(word), count(counter, word))
    while low < high:
        middle = (low + high + 1) // 2
        length = counter.fitting_prefix(word, middle)
        if length and fits(word[:length]):
            low = middle
        else:
            high = middle - 1
    if not low:
        return start
    cut = counter.fitting_prefix(word, low)
    # out of a character cluster, unless the cluster alone is longer than the budget
    return start + (cluster_start(word, cut, 0) or cut)


def _first_word_end(words: re.Pattern[str], text: str, start: int, stop: int) -> int:
    """Where the first word of ``text[start:stop]`` ends (a boundary between two characters
    right at ``start`` does not end an empty word)."""
    gap = words.search(text, start, stop)
    if gap is not None and gap.start(1) == gap.end(1) == start:
        gap = words.search(text, start + 1, stop)
    return gap.start(1) if gap else stop


def _next_piece(
    text: str, start: int, end: int, fits: Fits, counter: TokenCounter, levels: tuple[re.Pattern[str], ...],
    inside_words: bool = True,
) -> Cut | None:
    """Where the piece starting at ``start`` ends and the next one starts; None if nothing fits
    (or only a piece of a word, unless ``inside_words``)."""
    window = FIRST_WINDOW
    words = levels[-1]  # the finest level: word boundaries
    while True:
        stop = min(end, start + window)
        if stop < end:  # extend the window to the next word boundary: no word cut by the window
            gap = words.search(text, stop, end)
            stop = gap.start(1) if gap else end
        if stop == end and fits(text[start:end]):
            return end, end
        if stop < end and fits(text[start:stop]):
            window *= 2
            continue
        for level in levels:
            cut = _last_fitting(_cuts(level, text, start, stop), text, start, fits)
            if cut is not None:
                return cut
        if not inside_words:
            return None
        first_word_end = _first_word_end(words, text, start, stop)
        cut_at = _inside_word(text, start, first_word_end, fits, counter)
        return (cut_at, cut_at) if cut_at > start else None


def split_spans(
    text: str, fits: Fits, counter: TokenCounter, levels: tuple[re.Pattern[str], ...] = LEVELS,
    *, whole_words: bool = False,
) -> list[tuple[int, int]] | None:
    """Spans of ``text`` that each fit, cut at the coarsest of ``levels`` that works (code:
    :data:`CODE_LEVELS`); None if not even one character fits (and ``[]`` for a blank text).

    With ``whole_words``, no piece is cut inside a word: None if not even the first word fits,
    and from a word that does not fit on, the rest is one more span, to be cut where it goes.
    """
    start, end = text_bounds(text)
    levels = _for_text(levels, text)
    spans: list[tuple[int, int]] = []
    while start < end:
        cut = _next_piece(text, start, end, fits, counter, levels, not whole_words)
        if cut is None and text[start].isspace():
            # a code line's indentation, and not even a fragment of the line fits after it: the
            # indentation goes with the cut, like the whitespace at any other cut
            start = end - len(text[start:end].lstrip())
            cut = _next_piece(text, start, end, fits, counter, levels, not whole_words)
        if cut is None and whole_words and spans:
            spans.append((start, end))
            break
        if cut is None:
            return None
        spans.append((start, cut[0]))
        start = cut[1]
    return spans


def sentence_starts(text: str) -> list[int]:
    """Where each sentence of ``text`` starts (the first at its first non-space character)."""
    start, end = text_bounds(text)
    sentences = _for_text((_SENTENCES,), text)[0]
    return [start, *(after for _, after in _cuts(sentences, text, start, end))] if start < end else []


def fitting_tail(text: str, fits: Fits) -> str:
    """The longest end of ``text`` (surrounding whitespace aside) that ``fits``: from a sentence
    start if one fits, else from a word start; "" when not even the last word fits."""
    start, end = text_bounds(text)
    if fits(text[start:end]):
        return text[start:end]
    for level in _for_text((_SENTENCES, _WORDS), text):
        starts = [after for _, after in _cuts(level, text, start, end)]
        low, high, best = 0, len(starts) - 1, None  # a shorter end never counts more
        while low <= high:
            middle = (low + high) // 2
            if fits(text[starts[middle] : end]):
                best, high = starts[middle], middle - 1
            else:
                low = middle + 1
        if best is not None:
            return text[best:end]
    return ""
