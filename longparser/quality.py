"""Stage 10: per-chunk quality score, how much to trust a chunk's text, with the reasons.

``score = clamp(confidence - min(noise + coverage + language penalties, 0.8) + bonus, 0, 1)``:

* **confidence**: the mean of the primary source blocks' ``confidence.overall`` weighted by
  their text length (a plain mean when every source is empty). No known source: the chunk
  scores :data:`UNKNOWN_SOURCES_SCORE` and nothing else is computed.
* **noise**: ``min(2 * noise_ratio, 0.5)``; ``noise_ratio`` = noise characters / all
  characters. Noise is anything that is not alphanumeric (``str.isalnum``: letters and digits of
  any script, ``²`` included), whitespace (``str.isspace``), a combining mark (Unicode category
  M*, so decomposed accents are not noise) or common punctuation: ASCII
  ``. , ; : ! ? ' " ( ) [ ] { } - / % & * + = < > @ # $ _ | ~`` and typographic
  ``– — ‐ ‑ ‒ − … “ ” ‘ ’ „ ‚ « » ‹ › • · ° § ¶ © ® ™ ± × ÷ ′ ″ € £ ¥ ¢ ‰ † ‡ ¡ ¿`` and the
  no-break spaces. So noise is OCR debris: control characters, U+FFFD, private-use glyphs,
  box drawing, dingbats, ``` ` ^ \\ ``` and mathematical operators such as ∑ ∫ ∂ (an equation
  chunk pays a small penalty for those).
* **dictionary coverage** (only with a word list): the share of alphabetic tokens found in it.
  A token is a maximal run of letters (and combining marks, so NFD text keeps its words;
  digits, ``_``, apostrophes and any other character split tokens: "don't" gives "don"),
  lower-cased, of 2+ characters. Under 60%:
  ``min(0.6 - coverage, 0.3)``. No word list, or no alphabetic token: coverage None, no
  penalty.
* **language** (only with a language identifier, on texts of 10+ non-blank characters): the
  stripped text, or for a longer chunk its first :data:`LANGUAGE_SAMPLE_CHARS` characters cut
  back to a whole word, is sent with line breaks as spaces (fastText reads one line).
  Confidence under 0.8 costs ``(0.8 - confidence) * 0.5``; any exception from ``predict``
  counts as confidence 1.0: the error's type is recorded as ``language_error`` and the first
  failure of a document is logged as a warning (a broken language model must not pass unseen).
* **bonus**: +0.05 when the stripped text ends a sentence: ``. ! ? : " ” …``, or ``.!?``
  followed by a closing ``) ] ’ ' »``.

Speed: no per-character Python loop. Noise is counted on the UTF-8 bytes with
``bytes.translate(None, delete)`` (C): deleting the allowed ASCII bytes and every non-ASCII byte
leaves the ASCII noise; deleting the ASCII bytes leaves whole UTF-8 sequences of the non-ASCII
characters, whose DISTINCT characters are classified once each (cached). Tokens come from one
byte-level translate (lower-case + separate) and ``bytes.split``; a document's chunks share one
:class:`ChunkScorer`, whose memo classifies each distinct token once, so a chunk's coverage
is one C-level ``sum(map(...))`` of packed counts (no Python loop per token).
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Container, Sequence
from functools import lru_cache
from typing import Any

from longparser.resources import LanguageIdentifier

_log = logging.getLogger(__name__)

UNKNOWN_SOURCES_SCORE = 0.5
NOISE_PENALTY_CAP = 0.5
COVERAGE_TARGET = 0.6
COVERAGE_PENALTY_CAP = 0.3
LANGUAGE_CONFIDENCE_TARGET = 0.8
LANGUAGE_PENALTY_FACTOR = 0.5
MIN_LANGUAGE_TEXT = 10
# fastText's cost grows with its input, and a chunk's language is decided by its opening: the
# first 512 characters gave the same penalties as the whole text on the benchmark stream (256
# did not). bench/README.md has the measurement.
LANGUAGE_SAMPLE_CHARS = 512
PENALTY_CAP = 0.8
SENTENCE_END_BONUS = 0.05
_DIGITS = 4  # components are rounded to this many decimals (JSON-friendly, stable)

_ASCII_PUNCT = ".,;:!?'\"()[]{}-/%&*+=<>@#$_|~"
_TYPOGRAPHIC = "–—‐‑‒−…“”‘’„‚«»‹›•·°§¶©®™±×÷′″€£¥¢‰†‡¡¿\u00a0\u202f"
_OK_CHARS = frozenset(_TYPOGRAPHIC)
_ASCII_OK = bytes(b for b in range(128) if chr(b).isalnum() or chr(b).isspace() or chr(b) in _ASCII_PUNCT)
_ASCII_BYTES = bytes(range(128))
_DELETE_FOR_ASCII_NOISE = _ASCII_OK + bytes(range(128, 256))  # what is left: ASCII noise
# Tokenizer table: ASCII letters lower-cased, non-ASCII bytes kept (UTF-8 sequences stay
# whole), every other ASCII byte becomes a space.
_WORD_TABLE = bytes(b if b >= 128 else ord(chr(b).lower()) if chr(b).isalpha() else 32 for b in range(256))
_SENTENCE_ENDS = (*'.!?:"”…', *(p + c for p in ".!?" for c in ")]’'»"))


class _Scan:
    """A text's UTF-8 bytes and its non-ASCII characters, computed once per chunk.

    Deleting the ASCII bytes from UTF-8 leaves the whole multi-byte sequences of the non-ASCII
    characters (UTF-8 is self-synchronising), so ``others`` costs one C-level translate.
    """

    __slots__ = ("others", "raw", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.raw = text.encode("utf-8", "surrogatepass")
        ascii_only = len(self.raw) == len(text)
        self.others = (
            "" if ascii_only else self.raw.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")
        )


@lru_cache(maxsize=4096)
def _is_noise_char(c: str) -> bool:
    """Noise test for one non-ASCII character (cached: a text has few distinct ones)."""
    return not (c.isalnum() or c.isspace() or c in _OK_CHARS or unicodedata.category(c)[0] == "M")


@lru_cache(maxsize=4096)
def _token_bytes(c: str) -> bytes | None:
    """What a non-ASCII character becomes for tokenizing: its lower case, a space, or None (kept)."""
    if c.isalpha():
        low = c.lower()
        return None if low == c else low.encode("utf-8", "surrogatepass")
    return None if unicodedata.category(c)[0] == "M" else b" "  # combining marks stay in words


def _noise(scan: _Scan) -> int:
    noise = len(scan.raw.translate(None, _DELETE_FOR_ASCII_NOISE))
    if scan.others:
        others = scan.others
        noise += sum(others.count(c) for c in set(others) if _is_noise_char(c))
    return noise


def _letter_runs(scan: _Scan) -> list[bytes]:
    """Lower-cased maximal letter runs of any length, UTF-8 (the coverage tokens and one-letter runs).

    Runs stay bytes: splitting bytes is cheaper than decoding and splitting a str, and only
    each distinct run is decoded (by :class:`_CoverageWeights`). After the replacements below
    the only whitespace left is the ASCII space, so ``bytes.split`` cuts where ``str.split``
    would.
    """
    raw = scan.raw
    # Mostly non-Latin text: one Unicode lower() is cheaper than per-character fixes; and a
    # capital sigma needs it (its lower case depends on its position: final sigma).
    if len(scan.others) * 8 > len(scan.text) or "Σ" in scan.others:
        raw = scan.text.lower().encode("utf-8", "surrogatepass")
        for c in set(raw.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")):
            if _token_bytes(c) == b" ":
                raw = raw.replace(c.encode("utf-8", "surrogatepass"), b" ")
    elif scan.others:  # a few non-ASCII characters: fix each distinct one in the bytes
        for c in set(scan.others):
            replacement = _token_bytes(c)
            if replacement is not None:
                raw = raw.replace(c.encode("utf-8", "surrogatepass"), replacement)
    # One C pass lower-cases ASCII letters and turns every other ASCII byte into a space.
    return raw.translate(_WORD_TABLE).split()


# A run's class is a packed pair of counts (known words << 32 | tokens), so that summing the
# classes of a chunk's runs counts both at once in C (``sum`` of small ints) with no Counter;
# the token count cannot reach 2**32 (that many runs would be gigabytes of text in one chunk).
_KNOWN_SHIFT = 32
NOT_A_TOKEN, UNKNOWN_WORD, KNOWN_WORD = 0, 1, (1 << _KNOWN_SHIFT) | 1


class _Dictionary(dict[bytes, int]):
    """Each distinct letter run's class against one word list, looked up once (memo).

    :data:`NOT_A_TOKEN` for a one-letter run, :data:`KNOWN_WORD` for a token in the word list,
    :data:`UNKNOWN_WORD` for any other token (see ``_KNOWN_SHIFT`` for why these values). A
    document repeats its words, so each distinct run is decoded and looked up once per document.
    """

    __slots__ = ("word_list",)

    def __init__(self, word_list: Container[str]) -> None:
        super().__init__()
        self.word_list = word_list

    def __missing__(self, run: bytes) -> int:
        token = run.decode("utf-8", "surrogatepass")
        kind = NOT_A_TOKEN if len(token) < 2 else KNOWN_WORD if token in self.word_list else UNKNOWN_WORD
        self[run] = kind
        return kind


def _weighted_confidence(sources: Sequence[tuple[float, int]]) -> float:
    # list comprehensions, not generators: cheaper for a chunk's few sources, same sums
    total = sum([length for _, length in sources])
    if total <= 0:  # every source is empty: plain mean
        return sum([conf for conf, _ in sources]) / len(sources)
    return sum([conf * length for conf, length in sources]) / total


def _coverage(scan: _Scan, dictionary: _Dictionary) -> tuple[float | None, float]:
    """(dictionary coverage or None, its penalty)."""
    counts = sum(map(dictionary.__getitem__, _letter_runs(scan)))
    known, tokens = counts >> _KNOWN_SHIFT, counts & ((1 << _KNOWN_SHIFT) - 1)
    if not tokens:
        return None, 0.0
    coverage = known / tokens
    penalty = min(COVERAGE_TARGET - coverage, COVERAGE_PENALTY_CAP) if coverage < COVERAGE_TARGET else 0.0
    return coverage, penalty


def _language(
    text: str, language_id: LanguageIdentifier | None
) -> tuple[str | None, float, Exception | None]:
    """(language code or None, confidence, the identifier's error or None)."""
    stripped = text.strip()
    if language_id is None or len(stripped) < MIN_LANGUAGE_TEXT:
        return None, 1.0, None
    if len(stripped) > LANGUAGE_SAMPLE_CHARS:  # whole words only
        head = stripped[:LANGUAGE_SAMPLE_CHARS]
        cut = head.rfind(" ")
        stripped = head[:cut] if cut > LANGUAGE_SAMPLE_CHARS // 2 else head
    try:
        code, confidence = language_id.predict(stripped.replace("\r", " ").replace("\n", " "))
        return str(code), max(0.0, min(1.0, float(confidence))), None
    except Exception as exc:  # any language-ID failure counts as confidence 1.0 (see module doc)
        return None, 1.0, exc


def _unknown_components() -> dict[str, Any]:
    keys = (
        "confidence", "noise_ratio", "noise_penalty", "dictionary_coverage", "coverage_penalty",
        "language", "language_confidence", "language_penalty", "language_error", "penalty_total",
        "sentence_end_bonus",
    )
    return dict.fromkeys(keys) | {"unknown_sources": True, "score": UNKNOWN_SOURCES_SCORE}


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
        ``(score in [0, 1], components)``; components go to ``chunk.metadata["quality"]``. The
        returned score equals ``components["score"]`` (both rounded to 4 decimals).
    """
    return ChunkScorer(word_list, language_id).score(text, sources)


class ChunkScorer:
    """:func:`score_chunk` for the many chunks of one document, with the same resources.

    Dictionary lookups are memoized per distinct token for the scorer's lifetime (one
    document): the scores are the same as :func:`score_chunk`'s.
    """

    __slots__ = ("dictionary", "language_failures", "language_id")

    def __init__(
        self, word_list: Container[str] | None = None, language_id: LanguageIdentifier | None = None
    ) -> None:
        self.dictionary = None if word_list is None else _Dictionary(word_list)
        self.language_id = language_id
        self.language_failures = 0

    def score(self, text: str, sources: Sequence[tuple[float, int]]) -> tuple[float, dict[str, Any]]:
        """``(score, components)`` of one chunk, as :func:`score_chunk` documents."""
        if not sources:
            return UNKNOWN_SOURCES_SCORE, _unknown_components()
        score, components, error = _scored(text, _weighted_confidence(sources), self.dictionary,
                                           self.language_id)
        if error is not None:
            self.language_failures += 1
            if self.language_failures == 1:
                _log.warning("language identification failed (%s: %s): counted as confidence 1.0 "
                             "(chunk metadata quality.language_error)", type(error).__name__, error)
        return score, components


def _scored(
    text: str, confidence: float, dictionary: _Dictionary | None, language_id: LanguageIdentifier | None
) -> tuple[float, dict[str, Any], Exception | None]:
    """``(score, components, the language identifier's error or None)``."""
    scan = _Scan(text)
    noise_ratio = _noise(scan) / len(text) if text else 0.0
    noise_penalty = min(2.0 * noise_ratio, NOISE_PENALTY_CAP)
    # An absent resource's components are constants (already rounded): no call computes them.
    if dictionary is None:
        coverage, coverage_penalty, coverage_written = None, 0.0, None
    else:
        coverage, coverage_penalty = _coverage(scan, dictionary)
        coverage_written = None if coverage is None else _rounded(coverage)
    if language_id is None:
        language, language_confidence, language_error, language_penalty = None, 1.0, None, 0.0
    else:
        language, language_confidence, language_error = _language(text, language_id)
        shortfall = max(0.0, LANGUAGE_CONFIDENCE_TARGET - language_confidence)
        language_penalty = shortfall * LANGUAGE_PENALTY_FACTOR
    penalty_total = min(noise_penalty + coverage_penalty + language_penalty, PENALTY_CAP)
    bonus = SENTENCE_END_BONUS if text.rstrip().endswith(_SENTENCE_ENDS) else 0.0
    score = _rounded(max(0.0, min(1.0, confidence - penalty_total + bonus)))
    components = {
        "confidence": _rounded(confidence),
        "noise_ratio": _rounded(noise_ratio),
        "noise_penalty": _rounded(noise_penalty),
        "dictionary_coverage": coverage_written,
        "coverage_penalty": coverage_penalty if dictionary is None else _rounded(coverage_penalty),
        "language": language,
        "language_confidence": language_confidence if language_id is None else _rounded(language_confidence),
        "language_penalty": language_penalty if language_id is None else _rounded(language_penalty),
        "language_error": None if language_error is None else type(language_error).__name__,
        "penalty_total": _rounded(penalty_total),
        "sentence_end_bonus": bonus,
        "score": score,
        "unknown_sources": False,
    }
    return score, components, language_error


def _rounded(value: float) -> float:
    """``round(value, _DIGITS)``, skipping the call for an integral value (its own rounding).

    Most components are 0.0 or 1.0 (an absent penalty, no language check), and ``round`` with
    digits is slow (it converts through decimal). Same value, sign of zero included.
    """
    return value if value.is_integer() else round(value, _DIGITS)
