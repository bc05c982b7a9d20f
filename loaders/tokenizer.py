"""The embedding model's own token counter (``token_counter: "model"``), from its tokenizer file.

all-MiniLM-L6-v2 embeds at most 256 tokens of its WordPiece tokenizer, ``[CLS]`` and
``[SEP]`` included, and silently drops the rest. This counter counts exactly those tokens with
the ``tokenizers`` library (Rust; no torch, no weights), from the tokenizer file that ships in
``loaders/model_files`` (the model package's own file, digest checked at every load).

The file's own settings are undone on load: it truncates at 128 tokens and pads to 128, which
would cap every count. Counting is additive: the tokenizer splits words at whitespace and
punctuation before it cuts them into pieces, so texts joined by whitespace have exactly the
sum of their pieces plus one ``[CLS]``/``[SEP]`` pair (:meth:`ModelTokenCounter.join`).

ASCII text, most of what a document holds, is counted without the tokenizer's full encode:
for ASCII the model's normalizer only removes control characters and lower-cases, and its
pre-tokenizer only splits at whitespace and ASCII punctuation (BertNormalizer and
BertPreTokenizer, as tokenizer.json configures them), so the words are found by one regular
expression and each distinct word is cut into word pieces once, by the tokenizer's own model,
and remembered. Other text goes through ``encode_batch_fast``. Tests check both paths against
the tokenizer's own encode.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loaders.errors import ResourceUnavailable
from loaders.pinned_model import MODEL_NAME, file_sha256

logger = logging.getLogger(__name__)

TOKENIZER_FILE = Path(__file__).resolve().parent / "model_files" / "all-MiniLM-L6-v2.tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
TOKENIZERS_HINT = "install the `tokenizers` package (`pip install tokenizers`, part of longparser-worker)"
BATCH = 256  # texts per encode_batch call: large enough to amortise the call, small in memory


class TokenizerUnavailable(ResourceUnavailable):
    """The model's tokenizer cannot be loaded; the message says what to install."""


# BertNormalizer on ASCII: control characters removed (tab, line feed and carriage return are
# whitespace); BertPreTokenizer on ASCII: words end at whitespace and every ASCII punctuation
# character is a word of its own.
_ASCII_CONTROLS = bytes([b for b in range(0x20) if chr(b) not in "\t\n\r"] + [0x7F])
_HAS_CONTROL = re.compile("[" + re.escape(_ASCII_CONTROLS.decode("ascii")) + "]")
_ASCII_WORDS = re.compile(r"[!-/:-@\[-`{-~]|[^\t\n\r !-/:-@\[-`{-~]+")
MEMO_LIMIT = 500_000  # distinct words remembered per process before the memo starts again


class _WordPieces(dict[str, int]):
    """Word pieces per distinct (normalised) word, cut by the tokenizer's own WordPiece model."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def __missing__(self, word: str) -> int:
        if len(self) >= MEMO_LIMIT:
            self.clear()
        pieces = len(self.model.tokenize(word))
        self[word] = pieces
        return pieces


class ModelTokenCounter:
    """The engine's ``TokenCounter`` over the pinned model's WordPiece tokenizer.

    Units are a text's tokens without the special tokens the model adds once per input.
    """

    additive = True

    def __init__(self, tokenizer: Any, *, name: str = MODEL_NAME) -> None:
        self.tokenizer = tokenizer
        self.name = name
        self.special_tokens = tokenizer.num_special_tokens_to_add(False)
        self.pieces = _WordPieces(tokenizer.model)

    def _ascii_units(self, text: str) -> int:
        if _HAS_CONTROL.search(text):
            text = text.encode("ascii").translate(None, _ASCII_CONTROLS).decode("ascii")
        return sum(map(self.pieces.__getitem__, _ASCII_WORDS.findall(text.lower())))

    def measure(self, texts: Sequence[str]) -> list[int]:
        units = [self._ascii_units(text) if text.isascii() else -1 for text in texts]
        others = [i for i, n in enumerate(units) if n < 0]
        for start in range(0, len(others), BATCH):
            batch = others[start : start + BATCH]
            encodings = self.tokenizer.encode_batch_fast([texts[i] for i in batch], add_special_tokens=False)
            for i, encoding in zip(batch, encodings, strict=True):
                units[i] = len(encoding.ids)
        return units

    def join(self, text: str, units: Sequence[int]) -> int:
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
