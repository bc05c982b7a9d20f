"""The embedding model's own token counter (``token_counter: "model"``), from its tokenizer file.

all-MiniLM-L6-v2 embeds at most 256 tokens of its WordPiece tokenizer, ``[CLS]`` and
``[SEP]`` included, and silently drops the rest. This counter counts exactly those tokens with
the ``tokenizers`` library (Rust; no torch, no weights), from the tokenizer file that ships in
``loaders/model_files`` (the model package's own file, digest checked at every load).

The file's own settings are undone on load: it truncates at 128 tokens and pads to 128, which
would cap every count. Counting is additive: the tokenizer splits words at whitespace and
punctuation before it cuts them into pieces, so texts joined by whitespace have exactly the
sum of their pieces plus one ``[CLS]``/``[SEP]`` pair (:meth:`ModelTokenCounter.count_joined`).

Each distinct whitespace-separated word is counted once per process and remembered.
Python's ``str.split`` and the tokenizer agree on whitespace except for a few control
characters that the normalizer deletes (joining their neighbours) while Python splits at them:
those are deleted first. An ASCII word is cut by the tokenizer's own WordPiece model after the
normalizer's ASCII rules (control characters removed, lower case) and the pre-tokenizer's
(every ASCII punctuation character is a word of its own); any other word goes through the
tokenizer's full encode. Tests hold the counts to that encode on whole texts.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from loaders.errors import ResourceUnavailable
from loaders.pinned_model import MODEL_NAME, file_sha256
from schemas.config import MODEL_WINDOW

logger = logging.getLogger(__name__)

TOKENIZER_FILE = Path(__file__).resolve().parent / "model_files" / "all-MiniLM-L6-v2.tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
TOKENIZERS_HINT = "install the `tokenizers` package (`pip install tokenizers`, part of longparser-worker)"


class TokenizerUnavailable(ResourceUnavailable):
    """The model's tokenizer cannot be loaded; the message says what to install."""


# BertNormalizer on ASCII: control characters removed (tab, line feed and carriage return are
# whitespace); BertPreTokenizer on ASCII: words end at whitespace and every ASCII punctuation
# character is a word of its own.
_ASCII_CONTROLS = bytes([b for b in range(0x20) if chr(b) not in "\t\n\r"] + [0x7F])
_HAS_CONTROL = re.compile("[" + re.escape(_ASCII_CONTROLS.decode("ascii")) + "]")
_ASCII_WORDS = re.compile(r"[!-/:-@\[-`{-~]|[^\t\n\r !-/:-@\[-`{-~]+")
# Control characters Python's str.split splits at but the normalizer deletes: deleting them first
# makes the split the tokenizer's.
_SPLIT_ONLY_BY_PYTHON = "\x0b\x0c\x1c\x1d\x1e\x1f\x85"
_HAS_SPLIT_ONLY_BY_PYTHON = re.compile("[" + _SPLIT_ONLY_BY_PYTHON + "]")
_DELETE_SPLIT_ONLY_BY_PYTHON = str.maketrans("", "", _SPLIT_ONLY_BY_PYTHON)
MEMO_LIMIT = 500_000  # distinct words remembered per process before the memo starts again


class _Memo(dict[str, int]):
    """A count per distinct key, computed on first use; it starts again at :data:`MEMO_LIMIT`."""

    def __init__(self, compute: Callable[[str], int]) -> None:
        super().__init__()
        self.compute = compute

    def __missing__(self, key: str) -> int:
        if len(self) >= MEMO_LIMIT:
            self.clear()
        units = self[key] = self.compute(key)
        return units


def _word_counts(tokenizer: Any) -> _Memo:
    """Tokens per distinct whitespace-separated word, as the tokenizer counts the word alone.

    An ASCII word's pieces (after punctuation is split off) are remembered as well: numbers and
    words with punctuation attached are many, their pieces few.
    """
    tokenize = tokenizer.model.tokenize
    pieces = _Memo(lambda piece: len(tokenize(piece)))

    def count(word: str) -> int:
        if not word.isascii():
            return len(tokenizer.encode(word, add_special_tokens=False).ids)
        if _HAS_CONTROL.search(word):
            word = word.encode("ascii").translate(None, _ASCII_CONTROLS).decode("ascii")
        return sum(map(pieces.__getitem__, _ASCII_WORDS.findall(word.lower())))

    return _Memo(count)


class ModelTokenCounter:
    """The engine's ``TokenCounter`` over the pinned model's WordPiece tokenizer.

    Units are a text's tokens without the special tokens the model adds once per input.
    """

    additive = True
    window = MODEL_WINDOW

    def __init__(self, tokenizer: Any, *, name: str = MODEL_NAME) -> None:
        self.tokenizer = tokenizer
        self.name = name
        self.special_tokens = tokenizer.num_special_tokens_to_add(False)
        self.words = _word_counts(tokenizer)

    def measure(self, texts: Sequence[str]) -> list[int]:
        word_units = self.words.__getitem__
        units = []
        for text in texts:
            if _HAS_SPLIT_ONLY_BY_PYTHON.search(text):
                text = text.translate(_DELETE_SPLIT_ONLY_BY_PYTHON)
            units.append(sum(map(word_units, text.split())))
        return units

    def count_joined(self, text: str, units: Sequence[int]) -> int:
        return sum(units) + self.special_tokens

    def fitting_prefix(self, text: str, budget: int) -> int:
        """Up to the end of the last token that fits (a word may be cut between its pieces)."""
        room = budget - self.special_tokens
        if room <= 0:
            return 0
        offsets = self.tokenizer.encode(text, add_special_tokens=False).offsets
        if len(offsets) <= room:
            return len(text)
        return offsets[room - 1][1]


def load_model_counter(path: str | os.PathLike[str] | None = None) -> ModelTokenCounter:
    """The model's token counter from ``path`` (default: the bundled file, digest checked).

    Raises:
        TokenizerUnavailable: ``tokenizers`` is missing, or the file is missing or not the pinned one.
    """
    file = Path(path) if path is not None else TOKENIZER_FILE
    if not file.is_file():
        raise TokenizerUnavailable(f"tokenizer file {file} not found (reinstall longparser-worker)")
    if path is None and (digest := file_sha256(file)) != TOKENIZER_SHA256:
        raise TokenizerUnavailable(
            f"tokenizer file {file} has sha256 {digest}, not the pinned {TOKENIZER_SHA256} "
            "(reinstall longparser-worker)"
        )
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise TokenizerUnavailable(f"the tokenizers library is missing ({exc}); {TOKENIZERS_HINT}") from exc
    tokenizer = Tokenizer.from_file(str(file))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    logger.debug("loaded the %s tokenizer from %s", MODEL_NAME, file)
    return ModelTokenCounter(tokenizer)
