"""Any tokenizer as the engine's token counter: Hugging Face, sentence-transformers, tiktoken.

A counter counts what the model sees: a text's count is ``encode(text, add_special_tokens=
True)`` of the model's tokenizer (tiktoken adds no special tokens; a declaration may name the
ones the model adds). Three kinds of file (``schemas.tokenizers.TokenizerSpec``): a Hugging
Face ``tokenizer.json`` or the model directory holding it (the ``tokenizers`` library), a
sentence-transformers model directory (its tokenizer, its ``max_seq_length`` and its
lower-casing), and a tiktoken BPE file (the ``tiktoken`` library; the pattern, special tokens
and window declared). Nothing is downloaded: every file is local, its digest checked when one
is declared.

Counting stays fast by counting each distinct piece of text once per process and remembering
it. Which pieces may be counted apart depends on the tokenizer, so every tokenizer is
examined when it loads (:func:`_probe`) and gets one of three counters:

* :class:`WordCounter`, additive: the pre-tokenizer splits at whitespace and drops it
  (WordPiece models such as BERT, MiniLM, e5, bge), so a text counts the sum of its words and
  texts joined by whitespace count the sum of their counts. Words are split only at the four
  whitespace characters every tokenizer agrees on (space, tab, line feed, carriage return);
  anything else stays inside a word, which is counted by the tokenizer itself.
* :class:`SegmentCounter`, exact but not additive: byte-level BPE (GPT-2, RoBERTa, Llama 3,
  Qwen, tiktoken's encodings) counts whitespace and glues it to words (``" word"`` is one
  token, ``"word"`` another; ``".\\n\\n"`` may be one), so joined texts are counted again. A
  text is counted as the sum of its *segments*, each a run of whitespace and the word after it
  as the pre-tokenizer sees them, cut only where no regex pre-tokenizer of these families joins
  across: before a space or tab that follows a character no engine reads as whitespace, and
  before a line break that follows an ASCII letter or digit (after punctuation, cl100k-style
  patterns glue the line break to it). Recounting a joined text is then a split at line breaks
  and a few dictionary lookups: lines and segments are remembered.
* :class:`WholeTextCounter`, exact and slow: a tokenizer whose pieces cannot be counted
  apart (a SentencePiece ``Metaspace`` pre-tokenizer that joins a line break to the next word,
  for example) counts every text whole.

The probe counts a few thousand texts built from words of every character class joined by
every kind of whitespace, whole and by the candidate counter, and takes the first candidate
that agrees on all of them; the property tests hold the chosen counters to the real tokenizer
on generated documents.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import pairwise, product
from pathlib import Path
from typing import Any

from loaders.errors import ResourceUnavailable
from schemas.tokenizers import TokenizerSpec

logger = logging.getLogger(__name__)

MEMO_LIMIT = 500_000  # distinct words, segments or lines remembered per process before starting again
TEXT_MEMO_CHARS = 32_000_000  # characters of whole texts remembered before starting again
TIKTOKEN_HINT = "install the tiktoken package (`pip install 'longparser-worker[tiktoken]'`)"
TOKENIZERS_HINT = "install the `tokenizers` package (`pip install tokenizers`, part of longparser-worker)"


class TokenizerUnavailable(ResourceUnavailable):
    """The model's tokenizer cannot be loaded; the message says what to install."""


class NamedTokenizerUnavailable(TokenizerUnavailable):
    """A tokenizer a request or the settings name cannot be loaded (the pinned model's own
    counter raises its base class); the message is one line."""


# The pre-tokenizer patterns of tiktoken's own encodings (tiktoken_ext/openai_public.py, MIT),
# by name, so that a declaration can name one instead of spelling it out.
_O200K_PARTS = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
)
TIKTOKEN_PATTERNS = {
    "r50k_base": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
    "p50k_base": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
    "cl100k_base": (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
                    r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""),
    "o200k_base": "|".join(_O200K_PARTS),
}

# sentence-transformers' Transformer module, as modules.json names it
_ST_TRANSFORMER = "sentence_transformers.models.Transformer"
# Pre-tokenizers that split at whitespace and drop it, and normalizers that work character by
# character: with them (and only them) a text counts the sum of its words.
_WHITESPACE_PRE_TOKENIZERS = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})
_WORD_PRE_TOKENIZERS = _WHITESPACE_PRE_TOKENIZERS | {"Punctuation", "Digits", "UnicodeScripts"}
_CHARACTER_NORMALIZERS = frozenset({"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD",
                                    "StripAccents"})


# BertNormalizer on ASCII: control characters removed (tab, line feed and carriage return are
# whitespace); BertPreTokenizer on ASCII: words end at whitespace and every ASCII punctuation
# character is a word of its own. A BERT tokenizer's ASCII text is split by these rules here,
# its pieces cut by the tokenizer's own model: no normalizer or pre-tokenizer call per word.
_ASCII_CONTROLS = bytes([b for b in range(0x20) if chr(b) not in "\t\n\r"] + [0x7F])
_HAS_CONTROL = re.compile("[" + re.escape(_ASCII_CONTROLS.decode("ascii")) + "]")
_ASCII_WORDS = re.compile(r"[!-/:-@\[-`{-~]|[^\t\n\r !-/:-@\[-`{-~]+")


# Pieces a model reads poorly (:meth:`TokenizerCounter.poorly_read`): one character of these
# scripts alone, its word-piece or word-start marker aside (a Hangul jamo, a syllable, a Han
# ideograph, a kana).
_SINGLE_SCRIPT_CHARACTER = re.compile(
    "(?:##|\u2581|\u0120)?[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf"
    "\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\U00020000-\U0003134f]")
# Text only in the Latin, Greek and Cyrillic blocks, punctuation and symbols (arrows, math, box
# drawing, shapes): no script a vocabulary may lack, so nothing is tokenized to say so; the
# words holding any other character are looked at (split as :func:`words` splits them).
_READ_WELL = re.compile("[\x00-\u052f\u1e00-\u2bff]*")
_OTHER_SCRIPT_WORDS = re.compile("(?<![^ \t\n\r])[^ \t\n\r]*?[^\x00-\u052f\u1e00-\u2bff \t\n\r][^ \t\n\r]*")


# --- what the counters need from a tokenizer ----------------------------------------------


class _Memo(dict[Any, Any]):
    """A value per distinct key, computed on first use; it starts again at :data:`MEMO_LIMIT`."""

    def __init__(self, compute: Callable[[Any], Any]) -> None:
        super().__init__()
        self.compute = compute

    def __missing__(self, key: Any) -> Any:
        if len(self) >= MEMO_LIMIT:
            self.clear()
        value = self[key] = self.compute(key)
        return value


def _bert_ascii_rules(tokenizer: Any) -> bool | None:
    """Whether ASCII text may be split by BERT's rules here (:data:`_ASCII_WORDS`), and
    lower-cased first: None unless the tokenizer is a BertNormalizer (cleaning text) followed by
    a BertPreTokenizer alone, else the normalizer's ``lowercase``."""
    config = json.loads(tokenizer.to_str())
    normalizer, pre = config.get("normalizer") or {}, config.get("pre_tokenizer") or {}
    if (normalizer.get("type") != "BertNormalizer" or not normalizer.get("clean_text")
            or pre.get("type") != "BertPreTokenizer"):
        return None
    return bool(normalizer.get("lowercase"))


class HuggingFaceTokens:
    """A ``tokenizers.Tokenizer``: counts without special tokens, the count they add, offsets.

    A text is counted the way ``encode`` counts it, step by step: split by the pre-tokenizer,
    each piece cut by the model; the pieces' counts are remembered (a BPE tokenizer's pieces
    repeat far more than the words around them). A text holding one of the tokenizer's added
    tokens (``encode`` takes them out first), or one its normalizer changes, is encoded whole;
    a BERT tokenizer's ASCII text is split by BERT's rules here (:func:`_bert_ascii_rules`),
    which is what makes the pinned model's counter fast.
    """

    def __init__(self, tokenizer: Any, lower: bool) -> None:
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self.tokenizer, self.lower = tokenizer, lower
        self.specials = tokenizer.num_special_tokens_to_add(False)
        self.added = [token.content for token in tokenizer.get_added_tokens_decoder().values()]
        contents = sorted({content for content in self.added if content}, key=len, reverse=True)
        self._added = re.compile("|".join(map(re.escape, contents))) if contents else None
        normalizer, pre = tokenizer.normalizer, tokenizer.pre_tokenizer
        self._normalize = normalizer.normalize_str if normalizer is not None else None
        self._split = pre.pre_tokenize_str if pre is not None else None
        tokenize = tokenizer.model.tokenize
        self.pieces = _Memo(lambda piece: len(tokenize(piece)))
        self._bert_ascii = _bert_ascii_rules(tokenizer)
        # words counted one by one cost less than batching them (BERT's ASCII words)
        self.cheap_words = self._bert_ascii is not None

    def _text(self, text: str) -> str:
        return text.lower() if self.lower else text

    def count(self, text: str) -> int:
        seen = self._text(text)
        if self._added is not None and self._added.search(seen):
            return len(self.tokenizer.encode(seen, add_special_tokens=False).ids)
        piece = self.pieces.__getitem__
        if self._bert_ascii is not None and seen.isascii():
            if _HAS_CONTROL.search(seen):
                seen = seen.encode("ascii").translate(None, _ASCII_CONTROLS).decode("ascii")
            return sum(map(piece, _ASCII_WORDS.findall(seen.lower() if self._bert_ascii else seen)))
        if self._split is None or (self._normalize is not None and self._normalize(seen) != seen):
            return len(self.tokenizer.encode(seen, add_special_tokens=False).ids)
        return sum(piece(split) for split, _ in self._split(seen))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        # encode_batch_fast (tokenizers >= 0.20) skips the offsets a count does not need
        encode = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        encodings = encode([self._text(text) for text in texts], add_special_tokens=False)
        return [len(encoding.ids) for encoding in encodings]

    def poorly_read(self, word: str) -> int:
        """The pieces of ``word`` read poorly: the unknown token, and a single jamo, syllable,
        Han ideograph or kana alone (what a vocabulary without the script falls back to)."""
        tokens = self.tokenizer.encode(self._text(word), add_special_tokens=False).tokens
        unknown = getattr(self.tokenizer.model, "unk_token", None)
        return sum(token == unknown or _SINGLE_SCRIPT_CHARACTER.fullmatch(token) is not None
                   for token in tokens)

    def ends(self, text: str) -> list[int] | None:
        """Where each token ends, in characters of ``text`` (None: offsets do not map back)."""
        seen = self._text(text)
        if len(seen) != len(text):
            return None
        return [end for _, end in self.tokenizer.encode(seen, add_special_tokens=False).offsets]


class _Tiktoken:
    """A ``tiktoken.Encoding``; special tokens in a text are counted as the plain text they are."""

    cheap_words = False

    def __init__(self, encoding: Any, specials: int) -> None:
        self.encoding, self.specials = encoding, specials
        self.added = list(encoding.special_tokens_set)

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [len(self.encoding.encode_ordinary(text)) for text in texts]

    def ends(self, text: str) -> list[int] | None:
        tokens = self.encoding.encode_ordinary(text)
        decoded, starts = self.encoding.decode_with_offsets(tokens)
        if decoded != text:
            return None
        return [*starts[1:], len(text)]


# --- the counters ---------------------------------------------------------------------------


class _TextMemo(dict[str, Any]):
    """A value per distinct text, bounded by the characters held (texts are long, and many)."""

    def __init__(self, compute: Callable[[str], Any]) -> None:
        super().__init__()
        self.compute, self.chars = compute, 0

    def __missing__(self, text: str) -> Any:
        if self.chars > TEXT_MEMO_CHARS:
            self.clear()
        value = self[text] = self.compute(text)
        self.chars += len(text)
        return value

    def clear(self) -> None:
        super().clear()
        self.chars = 0


class TokenizerCounter:
    """What every tokenizer counter shares: its name, kind and window, exact whole-text counts
    and the prefix search (see the module doc for the three ways of counting)."""

    additive = False
    method = "whole"

    def __init__(self, tokens: HuggingFaceTokens | _Tiktoken, *, name: str, kind: str, window: int) -> None:
        self.tokens, self.name, self.kind, self.window = tokens, name, kind, window
        self.special_tokens = tokens.specials
        self._reading: _Memo | None = None  # each word's tokens read poorly, once asked

    def count(self, text: str) -> int:
        """The model's count of ``text``, special tokens included."""
        raise NotImplementedError

    def forget(self) -> None:
        """Empty what this counter remembers (a benchmark measures a cold start)."""
        for memo in [*vars(self).values(), *vars(self.tokens).values()]:
            if isinstance(memo, dict):
                memo.clear()

    def poorly_read(self, text: str) -> int | None:
        """How many of ``text``'s tokens the model reads poorly: the unknown token, single jamo
        and single CJK characters (``longparser.scripts``); None for a tokenizer whose pieces
        are bytes (tiktoken). Counted word by word, each word once per process."""
        if not isinstance(self.tokens, HuggingFaceTokens):
            return None
        if text.isascii() or _READ_WELL.fullmatch(text):
            return 0
        if self._reading is None:
            self._reading = _Memo(self.tokens.poorly_read)
        return sum(map(self._reading.__getitem__, _OTHER_SCRIPT_WORDS.findall(text)))

    def fitting_prefix(self, text: str, budget: int) -> int:
        """Up to the end of the last token that fits (a word may be cut between its tokens).

        The end of the ``budget``-th token is where to look first; a prefix is tokenized anew
        when counted, so the search steps back a token until the prefix really fits.
        """
        room = budget - self.special_tokens
        if room <= 0:
            return 0
        if self.count(text) <= budget:
            return len(text)
        ends = self.tokens.ends(text)
        if ends is None:
            from longparser.tokens import bisect_prefix

            return bisect_prefix(self, text, budget)
        index = min(room, len(ends)) - 1
        while index >= 0 and (ends[index] == 0 or self.count(text[: ends[index]]) > budget):
            index -= 1
        return ends[index] if index >= 0 else 0


class _TextCounter(TokenizerCounter):
    """Not additive: a text's units are its count (``self.texts``, remembered), and a joined
    text is counted again."""

    texts: _TextMemo

    def count(self, text: str) -> int:
        return self.texts[text]

    def measure(self, texts: Sequence[str]) -> list[int]:
        return list(map(self.texts.__getitem__, texts))

    def count_joined(self, text: str, units: Sequence[int]) -> int:
        return self.texts[text]


class WholeTextCounter(_TextCounter):
    """Exact: every text is counted whole by the tokenizer (remembered); not additive."""

    def __init__(self, tokens: HuggingFaceTokens | _Tiktoken, *, name: str, kind: str, window: int) -> None:
        super().__init__(tokens, name=name, kind=kind, window=window)
        self.texts = _TextMemo(lambda text: tokens.count(text) + self.special_tokens)


# Space, tab, line feed and carriage return: whitespace to every tokenizer. (Python's str.split
# also splits at \x0b \x0c \x1c-\x1f \x85, which BERT's normalizer deletes, joining the words.)
_WORD_SEPARATORS = re.compile(r"[ \t\n\r]+")
# Every other character str.split splits at (a character class is searched faster than "[^\S...]").
OTHER_PYTHON_WHITESPACE = ("\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029"
                           "\u202f\u205f\u3000")
_HAS_OTHER_PYTHON_WHITESPACE = re.compile(f"[{OTHER_PYTHON_WHITESPACE}]")


def words(text: str) -> list[str]:
    """``text``'s words: split only at spaces, tabs, line feeds and carriage returns."""
    if not _HAS_OTHER_PYTHON_WHITESPACE.search(text):
        return text.split()
    return [word for word in _WORD_SEPARATORS.split(text) if word]


class WordCounter(TokenizerCounter):
    """Additive: a text's units are the tokens of its words, each word counted once per
    process; texts joined by whitespace count the sum of their units plus the special tokens."""

    additive = True
    method = "words"

    def __init__(self, tokens: HuggingFaceTokens | _Tiktoken, *, name: str, kind: str, window: int) -> None:
        super().__init__(tokens, name=name, kind=kind, window=window)
        self.words = _Memo(tokens.count)

    def _fill(self, texts_words: Iterable[list[str]]) -> None:
        """Count the words not yet remembered in one batch (the tokenizer batches them)."""
        known = self.words
        missing = list({word for found in texts_words for word in found if word not in known})
        if missing:
            if len(known) + len(missing) > MEMO_LIMIT:
                known.clear()
            known.update(zip(missing, self.tokens.count_many(missing), strict=True))

    def measure(self, texts: Sequence[str]) -> list[int]:
        word_units = self.words.__getitem__
        if len(texts) > 1 and not self.tokens.cheap_words:
            split = [words(text) for text in texts]
            self._fill(split)
            return [sum(map(word_units, found)) for found in split]
        return [sum(map(word_units, words(text))) for text in texts]

    def count_joined(self, text: str, units: Sequence[int]) -> int:
        return sum(units) + self.special_tokens

    def count(self, text: str) -> int:
        return self.count_joined(text, self.measure((text,)))


# Characters some regex engine or normalizer may read as whitespace: never cut beside them.
_MAYBE_WHITESPACE = r"\s\x1c-\x1f\x85\u180e\u200b\u2060\ufeff"
# A cut inside a line (no \n in it): before a space or tab after a character nobody reads as
# whitespace, before a carriage return after an ASCII letter or digit.
_LINE_CUTS = re.compile(rf"(?<=[^{_MAYBE_WHITESPACE}])(?=[ \t])|(?<=[A-Za-z0-9])(?=\r)")
_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


class SegmentCounter(_TextCounter):
    """Exact and fast, not additive: a text counts the sum of its segments (module doc).

    A text is walked line by line (lines are what the engine joins): each distinct line is
    cut into its first segment, the segments inside it (their sum) and its last segment once,
    and the segments that run across line breaks are put together on the way.
    """

    method = "segments"

    def __init__(self, tokens: HuggingFaceTokens | _Tiktoken, *, name: str, kind: str, window: int) -> None:
        super().__init__(tokens, name=name, kind=kind, window=window)
        self.segments = _Memo(tokens.count)
        self.spaced = _Memo(lambda word: self.segments[" " + word])
        self.lines = _TextMemo(self._line)
        self.texts = _TextMemo(self._count)

    def _line(self, line: str) -> tuple[str | None, int, str, bool]:
        """``(first segment or None when the line is one segment, sum of the segments inside,
        last segment, whether a cut follows the line: it ends with an ASCII letter or digit)``."""
        cut_after = line[-1:] in _ASCII_ALNUM
        if line.isprintable() and "  " not in line and not line.startswith(" "):
            # only single spaces, each after a printable character: a cut before every space
            found = line.split(" ")
            if len(found) == 1:
                return None, 0, line, cut_after
            return found[0], sum(map(self.spaced.__getitem__, found[1:-1])), " " + found[-1], cut_after
        cuts = [match.start() for match in _LINE_CUTS.finditer(line, 1)]
        if not cuts:
            return None, 0, line, cut_after
        segment = self.segments.__getitem__
        inner = sum(segment(line[start:end]) for start, end in pairwise(cuts))
        return line[: cuts[0]], inner, line[cuts[-1] :], cut_after

    def _count(self, text: str) -> int:
        segment, line_parts = self.segments.__getitem__, self.lines.__getitem__
        if "\n" not in text:  # one line (most texts the engine counts)
            first, inner, last, _ = line_parts(text)
            rest = segment(last) if last else 0
            return self.special_tokens + rest + (0 if first is None else segment(first) + inner)
        total = self.special_tokens
        open_segment, cut_after = "", False
        for index, line in enumerate(text.split("\n")):
            if index:
                if cut_after:
                    total += segment(open_segment)
                    open_segment = "\n"
                else:
                    open_segment += "\n"
            first, inner, last, cut_after = line_parts(line)
            if first is None:
                open_segment += last
            else:
                total += segment(open_segment + first) + inner
                open_segment = last
        if open_segment:
            total += segment(open_segment)
        return total


# --- choosing the counter: the probe -------------------------------------------------------

# Words of every character class the patterns and normalizers treat apart, and every kind of
# whitespace between them. A counter is taken only if it counts every probe exactly.
PROBE_WORDS = (
    "word", "Word", "7", "2024", "x_1", "end.", "end:", "(x)", "it's", "it'", "don’t", "“q”", "'", "-",
    "—", "/", "€5", "50%", "é", "e\u0301", "数据", "한국어", "مرحبا", "🙂", "ﬁ", "½", "⑴", "¨", "\u00ad",
    "x\u200by", "...", "<|endoftext|>", "[CLS]", "</s>",
)
PROBE_HEADS = ("word", "Word", "7", "end.", "'s", "é", "数据", "🙂", "(x)", "—", "⑴", "¨")
PROBE_SEPARATORS = (
    " ", "  ", "\t", " \t", "\n", "\n\n", "\n\n\n", " \n", "\n ", "\n\n ", "\r\n", "\r", "\u3000",
    "\xa0", "\x0b", "\x85", "\u2028", "\x1c", " \x1c ",
)


def probe_texts(extra_words: Sequence[str] = ()) -> list[str]:
    """The probe: pairs of words around every separator, and texts opening or closing with one."""
    words_ = (*PROBE_WORDS, *extra_words)
    heads = (*PROBE_HEADS, *extra_words)
    texts = {left + sep + right for left, sep, right in product(words_, PROBE_SEPARATORS, heads)}
    texts |= {left + sep + right for left, sep, right in product(heads, PROBE_SEPARATORS, words_)}
    texts |= {sep + word for sep, word in product(PROBE_SEPARATORS, words_)}
    texts |= {word + sep for sep, word in product(PROBE_SEPARATORS, words_)}
    texts |= set(PROBE_SEPARATORS) | {" ".join(words_), "\n".join(words_), "\n\n".join(heads) + "\n"}
    return sorted(texts)


def _whitespace_splitting(tokenizer: Any) -> bool:
    """Whether a ``tokenizers.Tokenizer`` splits at whitespace, drops it and normalizes by
    character (then its words count apart: :class:`WordCounter`)."""
    config = json.loads(tokenizer.to_str())

    def types(node: Any, list_key: str) -> list[str]:
        if not node:
            return []
        if node.get("type") == "Sequence":
            return [kind for child in node.get(list_key, []) for kind in types(child, list_key)]
        return [node.get("type", "")]

    pre = types(config.get("pre_tokenizer"), "pretokenizers")
    normalizers = types(config.get("normalizer"), "normalizers")
    added = [token.get("content", "") for token in config.get("added_tokens", [])]
    return (bool(pre) and pre[0] in _WHITESPACE_PRE_TOKENIZERS and all(p in _WORD_PRE_TOKENIZERS for p in pre)
            and all(n in _CHARACTER_NORMALIZERS for n in normalizers)
            and not any(re.search(r"\s", content) for content in added))


def _probe(counter: TokenizerCounter, tokens: HuggingFaceTokens | _Tiktoken) -> str | None:
    """The first probe text ``counter`` counts differently from the tokenizer, or None."""
    texts = probe_texts([word for word in tokens.added[:16] if word.strip()])
    expected = tokens.count_many(texts)
    for text, raw in zip(texts, expected, strict=True):
        if counter.count(text) != raw + tokens.specials:
            return text
    return None


def choose_counter(tokens: HuggingFaceTokens | _Tiktoken, *, name: str, kind: str, window: int,
                   splits_at_whitespace: bool) -> TokenizerCounter:
    """The fastest counter that counts every probe exactly (module doc)."""
    candidates: list[type[TokenizerCounter]] = [SegmentCounter]
    if splits_at_whitespace:
        candidates.insert(0, WordCounter)
    for candidate in candidates:
        counter = candidate(tokens, name=name, kind=kind, window=window)
        failed = _probe(counter, tokens)
        if failed is None:
            logger.debug("tokenizer %s: counted by %s", name, counter.method)
            return counter
        logger.debug("tokenizer %s: %s miscounts %r", name, counter.method, failed)
    logger.info("tokenizer %s: its pieces cannot be counted apart; every text is counted whole (slower)",
                name)
    return WholeTextCounter(tokens, name=name, kind=kind, window=window)


# --- loading --------------------------------------------------------------------------------


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise NamedTokenizerUnavailable(f"{path}: not readable JSON ({exc})") from None
    return data if isinstance(data, dict) else None


def _checked_bytes(file: Path, sha256: str | None) -> bytes:
    """The file's bytes, its digest checked against ``sha256`` (when declared)."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise NamedTokenizerUnavailable(f"{file}: cannot read ({exc.strerror or exc})") from None
    if sha256 is not None and (digest := hashlib.sha256(data).hexdigest()) != sha256:
        raise NamedTokenizerUnavailable(f"{file} has sha256 {digest}, not the declared {sha256}")
    return data


def model_window(directory: Path) -> int | None:
    """A model's window from its own config files: ``sentence_bert_config.json``
    ``max_seq_length``, else ``tokenizer_config.json`` ``model_max_length`` when below 1e6
    (transformers writes a huge number for "no limit"), else ``config.json``
    ``max_position_embeddings``; None when none says."""
    sentence = _read_json(directory / "sentence_bert_config.json") or {}
    if isinstance(sentence.get("max_seq_length"), int):
        return int(sentence["max_seq_length"])
    tokenizer = _read_json(directory / "tokenizer_config.json") or {}
    length = tokenizer.get("model_max_length")
    if isinstance(length, int | float) and 0 < length < 1e6:
        return int(length)
    model = _read_json(directory / "config.json") or {}
    if isinstance(model.get("max_position_embeddings"), int):
        return int(model["max_position_embeddings"])
    return None


def _window(declared: int | None, own: int | None, where: Path) -> int:
    if own is None and declared is None:
        raise NamedTokenizerUnavailable(
            f"{where}: the model's window is not in its config files (sentence_bert_"
            "config.json, tokenizer_config.json, config.json): declare it")
    if own is not None and declared is not None and declared > own:
        raise NamedTokenizerUnavailable(f"{where}: declared window {declared} is above the model's own {own}")
    return declared if declared is not None else own  # type: ignore[return-value]


def _hf_tokenizer(data: bytes, where: Path) -> Any:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise NamedTokenizerUnavailable(
            f"the tokenizers library is missing ({exc}); {TOKENIZERS_HINT}") from None
    try:
        return Tokenizer.from_str(data.decode("utf-8"))
    except Exception as exc:  # tokenizers raises its own Exception type for a bad file
        raise NamedTokenizerUnavailable(f"{where}: not a tokenizers file ({exc})") from None


def _load_hf(spec: TokenizerSpec, name: str) -> TokenizerCounter:
    path = Path(spec.path)
    file = path / "tokenizer.json" if path.is_dir() else path
    if not file.is_file():
        raise NamedTokenizerUnavailable(
            f"{file}: no such file (an hf tokenizer is a tokenizer.json file or the "
            "model directory holding one)")
    tokenizer = _hf_tokenizer(_checked_bytes(file, spec.sha256), file)
    window = _window(spec.window, model_window(file.parent), file.parent)
    tokens = HuggingFaceTokens(tokenizer, lower=False)
    return choose_counter(tokens, name=name, kind="hf", window=window,
                          splits_at_whitespace=_whitespace_splitting(tokenizer))


def _load_st(spec: TokenizerSpec, name: str) -> TokenizerCounter:
    root = Path(spec.path)
    modules = root / "modules.json"
    if not modules.is_file():
        raise NamedTokenizerUnavailable(
            f"{root}: not a sentence-transformers model directory (no modules.json)")
    try:
        listed = json.loads(modules.read_text(encoding="utf-8"))
        module = next(m for m in listed if m.get("type") == _ST_TRANSFORMER)
    except (OSError, ValueError, StopIteration, AttributeError, TypeError):
        raise NamedTokenizerUnavailable(f"{modules}: names no {_ST_TRANSFORMER} module") from None
    directory = root / module.get("path", "")
    settings = _read_json(directory / "sentence_bert_config.json") or _read_json(
        root / "sentence_bert_config.json") or {}
    file = directory / "tokenizer.json"
    if not file.is_file():
        raise NamedTokenizerUnavailable(f"{file}: no such file (the tokenizers library reads tokenizer.json)")
    tokenizer = _hf_tokenizer(_checked_bytes(file, spec.sha256), file)
    own = settings.get("max_seq_length") if isinstance(settings.get("max_seq_length"), int) else None
    window = _window(spec.window, own if own is not None else model_window(directory), root)
    tokens = HuggingFaceTokens(tokenizer, lower=bool(settings.get("do_lower_case", False)))
    return choose_counter(tokens, name=name, kind="st", window=window,
                          splits_at_whitespace=_whitespace_splitting(tokenizer))


def tiktoken_ranks(data: bytes, where: Path) -> dict[bytes, int]:
    """tiktoken's BPE file format: one ``base64(token) rank`` per line.

    Parsed here from the bytes whose digest was checked (tiktoken's own loader copies local
    files into a cache directory first).
    """
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except ValueError:
            raise NamedTokenizerUnavailable(f"{where}: line {number} is not 'base64-token rank'") from None
    if not ranks:
        raise NamedTokenizerUnavailable(f"{where}: holds no tokens")
    return ranks


def _load_tiktoken(spec: TokenizerSpec, name: str) -> TokenizerCounter:
    try:
        import tiktoken
    except ImportError as exc:
        raise NamedTokenizerUnavailable(f"the tiktoken library is missing ({exc}); {TIKTOKEN_HINT}") from None
    file = Path(spec.path)
    if not file.is_file():
        raise NamedTokenizerUnavailable(f"{file}: no such file")
    ranks = tiktoken_ranks(_checked_bytes(file, spec.sha256), file)
    pattern = TIKTOKEN_PATTERNS.get(spec.pattern or "", spec.pattern)
    try:
        encoding = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks,
                                     special_tokens=dict(spec.special_tokens))
    except Exception as exc:  # tiktoken raises ValueError or its Rust core's errors
        raise NamedTokenizerUnavailable(f"{file}: tiktoken cannot build the encoding ({exc})") from None
    tokens = _Tiktoken(encoding, specials=len(spec.add_special_tokens))
    return choose_counter(tokens, name=name, kind="tiktoken", window=spec.window or 0,
                          splits_at_whitespace=False)


_LOADERS = {"hf": _load_hf, "st": _load_st, "tiktoken": _load_tiktoken}


def load_tokenizer(spec: TokenizerSpec, name: str | None = None) -> TokenizerCounter:
    """The counter of a declared tokenizer (``name``: how requests and stats name it).

    Raises:
        NamedTokenizerUnavailable: a file is missing or unreadable, its digest differs from the
            declared one, the window is unknown, or a library is missing (one line).
    """
    return _LOADERS[spec.kind](spec, name or spec.path)


def spec_for_path(reference: str) -> TokenizerSpec:
    """The declaration a path stands for (library and command line): a declaration file
    (``.json`` holding ``kind``), a ``tokenizer.json``, a sentence-transformers directory
    (``modules.json``), a Hugging Face model directory (``tokenizer.json``). A bare ``.tiktoken``
    file cannot say its pattern and window: it needs a declaration file.

    Raises:
        NamedTokenizerUnavailable: nothing there, or nothing a tokenizer can be loaded from.
    """
    path = Path(os.path.expanduser(reference))
    if path.is_dir():
        if (path / "modules.json").is_file():
            return TokenizerSpec(path=str(path), kind="st")
        if (path / "tokenizer.json").is_file():
            return TokenizerSpec(path=str(path), kind="hf")
        raise NamedTokenizerUnavailable(
            f"{path}: neither a sentence-transformers directory (modules.json) nor "
            "a Hugging Face model directory (tokenizer.json)")
    if not path.is_file():
        raise NamedTokenizerUnavailable(f"{path}: no such file or directory")
    if path.suffix == ".tiktoken":
        raise NamedTokenizerUnavailable(
            f"{path}: a tiktoken file needs its pattern and window: name a "
            'declaration file instead ({"path": ..., "kind": "tiktoken", '
            '"window": ..., "pattern": "cl100k_base"})')
    data = _read_json(path)
    if data is not None and "kind" in data:
        try:
            spec = TokenizerSpec.model_validate(data)
        except ValueError as exc:
            raise NamedTokenizerUnavailable(
                f"{path}: not a tokenizer declaration: {' '.join(str(exc).split())}") from None
        named = Path(os.path.expanduser(spec.path))
        return spec.model_copy(update={"path": str(named if named.is_absolute() else path.parent / named)})
    return TokenizerSpec(path=str(path), kind="hf")


def load_path(reference: str) -> TokenizerCounter:
    """The counter a path names (library and command line: :func:`spec_for_path`), named by
    the path as given."""
    return load_tokenizer(spec_for_path(reference), name=reference)


def load_declared(declared: Mapping[str, TokenizerSpec]) -> dict[str, TokenizerCounter]:
    """Every declared tokenizer's counter, by name (a worker, once, before its pool forks).

    Raises:
        NamedTokenizerUnavailable: one of them cannot be loaded; the message starts with its name.
    """
    counters = {}
    for name, spec in declared.items():
        try:
            counters[name] = load_tokenizer(spec, name=name)
        except TokenizerUnavailable as exc:
            raise NamedTokenizerUnavailable(f"tokenizer {name!r}: {exc}") from None
    return counters


def load_named(references: Iterable[str | None], declared: Mapping[str, TokenizerSpec] | None = None
               ) -> dict[str, TokenizerCounter]:
    """The counters ``references`` name (library and command line): a declared name is loaded
    from its declaration, anything path-shaped from that path; ``estimate`` and ``model`` are
    not tokenizers here (the model's counter is loaded apart).

    Raises:
        NamedTokenizerUnavailable: a name that is declared nowhere, or a tokenizer that cannot load.
    """
    from schemas.config import BUILTIN_COUNTERS, is_tokenizer_name

    declared = declared or {}
    counters: dict[str, TokenizerCounter] = {}
    for reference in references:
        if reference is None or reference in BUILTIN_COUNTERS or reference in counters:
            continue
        if reference in declared:
            counters.update(load_declared({reference: declared[reference]}))
        elif not is_tokenizer_name(reference):  # not name-shaped: a path
            counters[reference] = load_path(reference)
        else:
            known = ", ".join(sorted(declared)) or "none"
            raise NamedTokenizerUnavailable(
                f"tokenizer {reference!r} is not declared (LONGPARSER_TOKENIZERS "
                f"declares: {known}); name a path to load one")
    return counters
