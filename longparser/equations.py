"""Equation detection: is a paragraph block really a formula?

A paragraph is re-tagged as an equation when the sum of these signals reaches
:data:`EQUATION_THRESHOLD` (the weights and thresholds are the service's specified ones, in
:data:`SIGNALS`; the judgement calls are what counts as a math character, a pattern hit and an
isolated variable, recorded here):

* **density** of math characters: > 5% +2.0, > 1% +1.0 (strictly above). Density = math
  characters / non-whitespace characters. Math characters are NON-ASCII only: Greek letters,
  Unicode category ``Sm`` (∑ ∫ ∂ ∇ ± ≤ ≥ ≈ × ÷ √ ∞ ∈ ⊂ → ⇒ ≠ ≡ ...), ``· ‖ ′ ″``, super/subscript
  digits and signs, and the Mathematical Alphanumeric block. ASCII ``= + < > |`` are ``Sm`` too
  but are everyday prose ("p < 0.05", "A|B"), so they count only through the patterns below.
  Runs of 3+ Greek letters are Greek words (a Greek-language text), not symbols: they count
  nowhere (nor as Greek letters).
* **patterns**: the number of distinct pattern KINDS present (a kind counts once however often
  it occurs, so "d1, d2 and d3" is one hit): >= 3 +2.0, 2 +1.5, 1 +0.5. The kinds
  (:func:`pattern_kinds` lists them for a text):
  ``scripts`` ``x_i``, ``y_{t-1}``, ``x^2`` (a lone letter before ``_``: "max_tokens" is not);
  ``definition`` ``f(x) =``, ``P(y | x) =``, or a one-letter (optionally subscripted) variable
  set to anything but a bare number (``E = mc²``; "n = 30" is a statistic);
  ``big_operator`` ∑ ∏ ∫ ∮ √ or ``\\sum \\prod \\int \\sqrt``;
  ``function_call`` ``sqrt( log( ln( exp( sin( cos( tan( tanh( sigmoid( softmax( argmax(
  argmin( max( min( det(`` with no space before the parenthesis;
  ``latex`` a known LaTeX math command or any ``\\command{``;
  ``indexed_variable`` a lone letter followed by 1-2 digits (``d1``, ``x12``; not "H2O");
  ``greek_list`` ``α, β``;
  ``variable_run`` lone letters joined by an operator (``a * b``) or 2+ lone letters running
  into one (``a b c =``; "the a b c flags" has no operator and is not a hit).
  Operators: ASCII ``= + * ^ < >`` and ``− ± × · ÷ ≤ ≥ ≠ ≈ ≡ ∝ ∈ ∉ ⊂ ⊆ ∪ ∩ → ⇒ ⇔``; the ASCII
  hyphen and ``/`` are not operators ("A-B", "A/B testing", "w/o").
* **short** (< 80 characters, stripped) with an isolated single-letter variable: +1.0. A
  variable is a lone letter next to an operator - so a lone "a", "I" or "A" in prose is a word,
  not a variable - and "letter, operator, bare number" ("p < 0.05", "n = 30") is a statistic.
* **lead-in**: the previous block ends with "defined as", "given by", "expressed as",
  "computed as", "calculated as", "written as", "denoted by/as" or "where x is/denotes" (x a
  letter, optionally subscripted, a Greek letter or a LaTeX command), case and spacing free,
  optionally followed by ":" or ",": +1.5. The text itself contains such a phrase: +1.0.
* **Greek letters**: >= 2 +1.5, exactly 1 +0.5 (occurrences, not distinct letters).

A text with math characters but not one letter or digit (``· · ·``) is a separator rule or an
ornament, never a formula: it scores 0.

Cost (this runs on every paragraph): no per-character Python loops. ASCII text skips the
Unicode counts; every pattern kind is gated by a C-speed ``in`` test on a character it cannot
match without; regexes that run on a whole text start with a literal (the regex engine then
jumps between occurrences with a substring search instead of trying every position); and
operator-centred patterns are matched AT each operator, the left context by ``re.match`` on
the reversed window before it. :func:`looks_like_equation` stops as soon as the answer is
decided.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

_GREEK_LETTERS = "".join(chr(c) for c in range(0x391, 0x3AA) if c != 0x3A2) + "".join(
    chr(c) for c in range(0x3B1, 0x3CA)
) + "ϑϕϖϵϱ"
_GREEK_ANY = "\u0370-\u03ff\u1f00-\u1fff"  # Greek and Greek Extended: what a Greek word is made of
_EXTRA_MATH = "·‖′″⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎"
# Blocks scanned for category Sm at import (ms, not the 1.1M code points): Latin-1, Greek,
# General Punctuation .. Misc Symbols and Arrows, Alphabetic Presentation .. Halfwidth Forms.
_SM_SCAN = ((0x80, 0x400), (0x2000, 0x2C00), (0xFB00, 0x10000))


def _math_class() -> str:
    """The regex character class body of the non-ASCII math characters."""
    chars = set(_GREEK_LETTERS) | set(_EXTRA_MATH)
    for lo, hi in _SM_SCAN:
        chars.update(chr(c) for c in range(lo, hi) if unicodedata.category(chr(c)) == "Sm")
    return "".join(re.escape(c) for c in sorted(chars)) + "\U0001d400-\U0001d7ff"


_MATH_CLASS = _math_class()
_GREEK_SET = frozenset(_GREEK_LETTERS)

_MATH_RE = re.compile(f"[{_MATH_CLASS}]")
_GREEK_WORD_RE = re.compile(f"[{_GREEK_ANY}]{{3,}}")

_OP_CHARS = "=+*^<>−±×·÷≤≥≠≈≡∝∈∉⊂⊆∪∩→⇒⇔"
_ASCII_OPS = "=+*^<>"
_UNICODE_OPS = frozenset(_OP_CHARS) - frozenset(_ASCII_OPS)
_NO_SYMBOLS: frozenset[str] = frozenset()
_NO_MATH = (0, 0, _NO_SYMBOLS)  # (math characters, Greek letters, symbols) of an ASCII text
_WINDOW = 40  # characters of left context examined before an operator
_MAX_OPS = 64  # operators examined per text (a formula has few; bounds pathological input)
_SCRIPT = r"(?:\{[^{}\n]{1,16}\}|[A-Za-z0-9]{1,3}\b)"
_NOT_WORD_BEFORE = r"(?![\w'’.\\])"  # in a REVERSED window: the char before the letter
_BARE_RHS_RE = re.compile(r"\s*(?:[-−]?\d[\d.,]*%?(?![\w(^_])|$)")  # "= 30", "< 0.05": statistic

_SUB_RE = re.compile(rf"_(?<=(?<![\w\\])[A-Za-z]_){_SCRIPT}")
_SUP_RE = re.compile(rf"\^(?<=[A-Za-z0-9)\]}}]\^){_SCRIPT}")
_BIG_OP_RE = re.compile(r"\\(?:sum|prod|int|oint|sqrt)(?![A-Za-z])")
_BIG_OPS = ("∑", "∏", "∫", "∮", "√")
_CALL_RE = re.compile(
    r"\((?:(?<=\b(?:log|exp|sin|cos|tan|max|min|det)\()|(?<=\bln\()|(?<=\b(?:sqrt|tanh)\()"
    r"|(?<=\barg(?:max|min)\()|(?<=\b(?:sigmoid|softmax)\())"
)
_LATEX_RE = re.compile(
    r"\\(?:frac|dfrac|sum|prod|int|sqrt|partial|nabla|cdot|times|leq?|geq?|neq|approx|infty"
    r"|alpha|beta|gamma|delta|epsilon|varepsilon|theta|lambda|mu|sigma|phi|pi|omega|Sigma|Delta"
    r"|mathbf|mathrm|mathcal|hat|bar|vec|tilde|left|right|log|exp|in|to|rightarrow)(?![A-Za-z])"
    r"|\\[A-Za-z]+\{"
)
_GREEK_LIST_RE = re.compile(f"[{_GREEK_LETTERS}]\\s*,\\s*[{_GREEK_LETTERS}](?!\\w)")
# Reversed left contexts of an operator ("... f(x) =" reads ") x ( f ..." backwards).
_REV_LONE_RE = re.compile(rf"\s*[A-Za-z]{_NOT_WORD_BEFORE}")
_REV_RUN_RE = re.compile(rf"\s*[A-Za-z](?:[ \t]+[A-Za-z](?![\w'’]))+{_NOT_WORD_BEFORE}")
# x, x_i, y_{t-1} before "=" (reversed):
_REV_VAR_RE = re.compile(rf"\s*(?:\}}[^{{}}\n]{{1,12}}\{{_|\w{{1,6}}_)?[A-Za-z]{_NOT_WORD_BEFORE}")
_REV_FUNC_RE = re.compile(r"\s*\)[^()=\n]{1,30}\(\s*[A-Za-z0-9]{0,3}[A-Za-z](?!\w)")  # f(x), P(y|x)
_LONE_AFTER_RE = re.compile(r"\s*[A-Za-z](?![\w'’(])")
# Text "shape" for d1-style variables: letters/underscore -> a, digits -> 0, other ASCII -> space,
# non-ASCII bytes -> # (word characters, as \b treats them). bytes.translate is a C loop.
_SHAPE = bytes(
    ord("a") if chr(b).isalpha() or b == ord("_") else ord("0") if chr(b).isdigit() else ord(" ")
    for b in range(128)
) + b"#" * 128

# Lead-in phrases. A verb stem without its first letter matches "Given" and "given" alike; a
# hit is confirmed on the lower-cased text by a regex that starts with the literal verb.
_VERBS = ("defined", "given", "expressed", "computed", "calculated", "written", "denoted")
_VERB_ENDINGS = tuple(f"{v} {p}" for v in _VERBS for p in ("as", "by"))
_WHERE = (
    r"where(?<!\wwhere)\s+"
    rf"(?:[a-z](?:_\{{?\w+\}}?|\d+)?|[{_GREEK_LETTERS}]\w*|\\[a-z]+)\s+(?:is|denotes)"
)
_WHERE_RE = re.compile(_WHERE + r"\b")
_WHERE_END_RE = re.compile(_WHERE + "$")
_STEM_RES = (
    *((v[1:], re.compile(rf"{v}(?<!\w{v})\s+(?:as|by)\b")) for v in _VERBS),
    ("here", _WHERE_RE),  # "where" and "Where"
)
_LEAD_IN_LAST = frozenset(("as", "by", "is", "es"))  # how every lead-in phrase ends
_LEAD_IN_TAIL = 60  # the longest lead-in phrase is far shorter; only the tail is searched
# What the last character of a text ending with a lead-in can be: the last letter of one of
# _LEAD_IN_LAST (either case), a trailing ":" or ",", or whitespace (stripped before the test).
_LEAD_IN_END_CHARS = frozenset("sySY:,")
_ALNUM_RE = re.compile(r"[^\W_]")


def _math_scan(text: str) -> tuple[int, int, frozenset[str]]:
    """(math characters, Greek letters, the distinct math characters) of ``text``.

    Letters of Greek words are not counted. ASCII text returns at once: ``str.isascii`` is O(1)
    in CPython and no math character is ASCII.
    """
    if text.isascii():
        return _NO_MATH
    symbols = _MATH_RE.findall(text)
    n_greek = sum(map(_GREEK_SET.__contains__, symbols))
    if n_greek >= 3:  # only then can a Greek word (3+ letters) be present
        in_words = sum(map(_GREEK_SET.__contains__, "".join(_GREEK_WORD_RE.findall(text))))
        return len(symbols) - in_words, n_greek - in_words, frozenset(symbols)
    return len(symbols), n_greek, frozenset(symbols)


def _op_positions(text: str, symbols: frozenset[str]) -> list[int]:
    """Indices of operator characters (at most :data:`_MAX_OPS`), found by C-speed str.find.

    The non-ASCII operators are all math characters, so ``symbols`` says which are present.
    """
    found: list[int] = []
    for op in (*_ASCII_OPS, *(symbols & _UNICODE_OPS)) if symbols else _ASCII_OPS:
        i = text.find(op)
        while i >= 0 and len(found) < _MAX_OPS:
            found.append(i)
            i = text.find(op, i + 1)
    return found


def _left(text: str, i: int) -> str:
    """The reversed window of text before index ``i`` (so its end can be ``re.match``-ed)."""
    return text[max(0, i - _WINDOW):i][::-1]


def _has_definition(text: str, ops: list[int]) -> bool:
    """``f(x) =``, ``P(y | x) =``, or a one-letter variable set to something but a bare number."""
    for i in ops:
        if text[i] != "=" or text[i - 1 : i] in ("=", "<", ">", "!") or text[i + 1 : i + 2] == "=":
            continue
        left = _left(text, i)
        if _REV_FUNC_RE.match(left) or (_REV_VAR_RE.match(left) and not _BARE_RHS_RE.match(text, i + 1)):
            return True
    return False


def _has_variable_run(text: str, ops: list[int]) -> bool:
    """Lone letters joined by an operator (``a*x + b``) or running into one (``a b c =``)."""
    for i in ops:
        left = _left(text, i)
        if _REV_RUN_RE.match(left) or (_REV_LONE_RE.match(left) and _LONE_AFTER_RE.match(text, i + 1)):
            return True
    return False


def _has_isolated_variable(text: str, ops: list[int]) -> bool:
    """A lone letter next to an operator, "letter, operator, bare number" (a statistic) aside."""
    for i in ops:
        if _LONE_AFTER_RE.match(text, i + 1):
            return True
        if _REV_LONE_RE.match(_left(text, i)) and not _BARE_RHS_RE.match(text, i + 1):
            return True
    return False


def _has_indexed_variable(text: str) -> bool:
    """d1-style variables: a lone letter followed by one or two digits (``d1``, ``x12``)."""
    shape = text.encode("utf-8").translate(_SHAPE)
    if b"0" not in shape:  # memchr: most prose has no digit at all
        return False
    shape = b" " + shape + b" "
    return b" a0 " in shape or b" a00 " in shape


def _has_script(text: str) -> bool:
    return ("_" in text and _SUB_RE.search(text) is not None) or (
        "^" in text and _SUP_RE.search(text) is not None
    )


def _has_big_operator(text: str, symbols: frozenset[str]) -> bool:
    return bool(symbols and not symbols.isdisjoint(_BIG_OPS)) or (
        "\\" in text and _BIG_OP_RE.search(text) is not None
    )


# The pattern kinds: (name, ASCII characters an ASCII text needs for the kind to occur, test).
# An ASCII text holding none of a kind's characters cannot show it: the score's bound and the
# early exit read that from here, so a kind's test and its characters are written together.
# Digits are all read as "0" when a text's characters are gathered (see _GATES_ONLY).
_KINDS: tuple[tuple[str, str, Any], ...] = (
    ("scripts", "_^", lambda c: _has_script(c.text)),
    ("definition", "=", lambda c: _has_definition(c.text, c.ops)),
    ("big_operator", "\\", lambda c: _has_big_operator(c.text, c.symbols)),
    ("function_call", "(", lambda c: _CALL_RE.search(c.text) is not None),
    ("latex", "\\", lambda c: _LATEX_RE.search(c.text) is not None),
    ("indexed_variable", "0", lambda c: _has_indexed_variable(c.text)),  # any digit: gates read it as 0
    ("greek_list", "", lambda c: c.n_greek >= 2 and _GREEK_LIST_RE.search(c.text) is not None),
    ("variable_run", _ASCII_OPS, lambda c: _has_variable_run(c.text, c.ops)),
)
_GATE_CHARS = "".join(sorted(set("".join(chars for _, chars, _ in _KINDS))))
# ASCII text -> the pattern characters it holds, digits all read as "0" (few distinct sets)
_DIGITS_AS_ZERO = bytes(ord("0") if chr(b).isdigit() else b for b in range(256))
_NOT_GATES = bytes(b for b in range(256) if not (chr(b) in _GATE_CHARS or chr(b).isdigit()))


@lru_cache(maxsize=1024)
def _open_kinds(gates: frozenset[str] | None) -> int:
    """How many pattern kinds an ASCII text holding ``gates`` may show (None: not ASCII, all)."""
    return sum(gates is None or not gates.isdisjoint(chars) for _, chars, _ in _KINDS)


def pattern_kinds(text: str) -> list[str]:
    """The equation-like pattern kinds found in ``text`` (each counts once)."""
    candidate = _Candidate(text, None, _gates(text))
    return [name for name, chars, test in _KINDS if candidate.may_hold(chars) and test(candidate)]


def _has_phrase(text: str) -> bool:
    """Whether ``text`` contains a lead-in phrase ("defined as", "given by", "where x denotes")."""
    lowered = None
    for stem, pattern in _STEM_RES:
        if stem in text:
            lowered = lowered or text.lower()
            if pattern.search(lowered):
                return True
    return False


def _ends_with_lead_in(previous_text: str | None) -> bool:
    """Whether the previous block ends with a lead-in phrase, optionally followed by ':' or ','."""
    if not previous_text:
        return False
    last = previous_text[-1]  # most prose ends with "." : decided without slicing or stripping
    if last.isascii() and last not in _LEAD_IN_END_CHARS and not last.isspace():
        return False
    tail = previous_text[-_LEAD_IN_TAIL:]
    if tail.rstrip().rstrip(":,").rstrip()[-2:].lower() not in _LEAD_IN_LAST:  # most prose: "."
        return False
    tail = " ".join(tail.lower().split()).rstrip(":,").rstrip()
    return tail.endswith(_VERB_ENDINGS) or (
        tail.endswith(("is", "denotes")) and _WHERE_END_RE.search(tail) is not None
    )


# ---------------------------------------------------------------------------------------------
# The score: one table of signals and their points. The full score and the early-exit test
# both read it, so a weight is written once.
# ---------------------------------------------------------------------------------------------

EQUATION_THRESHOLD = 2.0
SHORT_TEXT = 80  # characters: a short text with an isolated variable is likely a formula

# (threshold, points): the first level whose threshold the measure reaches (strictly above, for
# density) gives the points; below every level, 0.
DENSITY_LEVELS = ((0.05, 2.0), (0.01, 1.0))
PATTERN_LEVELS = ((3, 2.0), (2, 1.5), (1, 0.5))
GREEK_LEVELS = ((2, 1.5), (1, 0.5))
SHORT_VARIABLE_POINTS = 1.0
LEAD_IN_POINTS = 1.5
OWN_PHRASE_POINTS = 1.0


def _level_points(value: float, levels: tuple[tuple[float, float], ...], strict: bool = False) -> float:
    for threshold, points in levels:
        if value > threshold if strict else value >= threshold:
            return points
    return 0.0


def _gates(text: str) -> frozenset[str] | None:
    """The pattern characters an ASCII text holds, digits read as "0" (None: not ASCII, so
    every kind may occur)."""
    if not text.isascii():
        return None
    return frozenset(text.encode("ascii").translate(_DIGITS_AS_ZERO, _NOT_GATES).decode())


class _Candidate:
    """A text (and the text before it) with the shared measurements computed once, on demand."""

    __slots__ = ("_ops", "gates", "n_greek", "n_math", "previous", "symbols", "text")

    def __init__(self, text: str, previous: str | None, gates: frozenset[str] | None) -> None:
        self.text, self.previous, self.gates = text, previous, gates
        # an ASCII text (gates known) holds no math character
        self.n_math, self.n_greek, self.symbols = _math_scan(text) if gates is None else _NO_MATH
        self._ops: list[int] | None = None

    def may_hold(self, chars: str) -> bool:
        """Whether a pattern needing one of ``chars`` (in ASCII text) can occur here."""
        return self.gates is None or not self.gates.isdisjoint(chars)

    @property
    def ops(self) -> list[int]:
        if self._ops is None:
            self._ops = _op_positions(self.text, self.symbols)
        return self._ops

    def is_ornament(self) -> bool:
        """Math characters but not one letter or digit (``· · ·``): a rule, never a formula."""
        return bool(self.n_math) and _ALNUM_RE.search(self.text) is None


def _density(c: _Candidate) -> float:
    if not c.n_math:
        return 0.0
    density = c.n_math / sum(map(len, c.text.split()))  # over non-space characters; runs in C
    return _level_points(density, DENSITY_LEVELS, strict=True)


def _greek(c: _Candidate) -> float:
    return _level_points(c.n_greek, GREEK_LEVELS)


def _lead_in(c: _Candidate) -> float:
    return LEAD_IN_POINTS if _ends_with_lead_in(c.previous) else 0.0


def _patterns(c: _Candidate) -> float:
    return _level_points(sum(c.may_hold(chars) and test(c) for _, chars, test in _KINDS), PATTERN_LEVELS)


def _short_variable(c: _Candidate) -> float:
    short = len(c.text) < SHORT_TEXT or len(c.text.strip()) < SHORT_TEXT
    return SHORT_VARIABLE_POINTS if short and _has_isolated_variable(c.text, c.ops) else 0.0


def _own_phrase(c: _Candidate) -> float:
    return OWN_PHRASE_POINTS if _has_phrase(c.text) else 0.0


# (name, most points, measure, what an ASCII text needs for the signal to give points: None
# for anything, "" for nothing at all), cheapest measure first. The early-exit test reads the
# bounds from here (see _bounds), so a signal's weight and its needs are written once.
SIGNALS: tuple[tuple[str, float, Any, str | None], ...] = (
    ("density", DENSITY_LEVELS[0][1], _density, ""),  # math characters are not ASCII
    ("greek", GREEK_LEVELS[0][1], _greek, ""),
    ("lead_in", LEAD_IN_POINTS, _lead_in, None),
    ("patterns", PATTERN_LEVELS[0][1], _patterns, _GATE_CHARS),
    ("short_variable", SHORT_VARIABLE_POINTS, _short_variable, _ASCII_OPS),  # an operator
    ("own_phrase", OWN_PHRASE_POINTS, _own_phrase, None),
)


@lru_cache(maxsize=1024)
def _bounds(gates: frozenset[str] | None) -> tuple[float, ...]:
    """Each signal's most points for a text holding the pattern characters ``gates``.

    None (a text that is not ASCII): every signal's top points. Patterns: the points of as many
    kinds as the text has characters for.
    """
    bounds = []
    for name, most, _, needs in SIGNALS:
        if gates is not None and needs is not None and gates.isdisjoint(needs):
            most = 0.0
        elif name == "patterns":
            most = _level_points(_open_kinds(gates), PATTERN_LEVELS)
        bounds.append(most)
    return tuple(bounds)


def equation_signals(text: str, previous_text: str | None = None) -> dict[str, float]:
    """Each signal's points (they sum to :func:`equation_score`).

    A text with math characters but no letter or digit (a separator rule such as ``· · ·``)
    scores 0 everywhere: a formula has operands.

    Args:
        text: the candidate block's text.
        previous_text: the preceding block's text (its ending may announce a formula).
    """
    candidate = _Candidate(text, previous_text, _gates(text))
    if candidate.is_ornament():
        return {name: 0.0 for name, _, _, _ in SIGNALS}
    return {name: measure(candidate) for name, _, measure, _ in SIGNALS}


def equation_score(text: str, previous_text: str | None = None) -> float:
    """Score how equation-like ``text`` is; ``previous_text`` is the preceding block's text."""
    return sum(equation_signals(text, previous_text).values())


@lru_cache(maxsize=1024)
def _plan(gates: frozenset[str] | None) -> tuple[float, tuple[tuple[Any, float], ...]]:
    """For a text holding ``gates``: the most points it can score, and the signals that can give
    any, as ``(measure, most points)`` cheapest first (read from :data:`SIGNALS` by :func:`_bounds`)."""
    bounds = _bounds(gates)
    steps = tuple((measure, most) for (_, _, measure, _), most in zip(SIGNALS, bounds, strict=True) if most)
    return sum(bounds), steps


def looks_like_equation(text: str, previous_text: str | None = None) -> bool:
    """Whether :func:`equation_score` reaches :data:`EQUATION_THRESHOLD`, deciding early.

    Every signal is non-negative and bounded (see :func:`_bounds`), so the signals are measured
    cheapest first and the answer is returned as soon as it can no longer change: most prose is
    decided by its bounds and the lead-in test alone.
    """
    gates = _gates(text)
    still_possible, steps = _plan(gates)
    if still_possible < EQUATION_THRESHOLD:
        return False
    candidate = _Candidate(text, previous_text, gates)
    if candidate.is_ornament():
        return False
    total = 0.0
    for measure, most in steps:
        still_possible -= most
        total += measure(candidate)
        if total >= EQUATION_THRESHOLD:
            return True
        if total + still_possible < EQUATION_THRESHOLD:
            return False
    return False
