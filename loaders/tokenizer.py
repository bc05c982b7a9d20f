"""The embedding model's own token counter (``token_counter: "model"``), from its tokenizer file.

all-MiniLM-L6-v2 embeds at most 256 tokens of its WordPiece tokenizer, ``[CLS]`` and
``[SEP]`` included, and silently drops the rest. Its counter is the WordPiece counter of
:mod:`loaders.tokenizers` (:class:`~loaders.tokenizers.WordCounter`, with BERT's rules for
ASCII words) over the tokenizer file that ships in ``loaders/model_files`` (the model
package's own file, digest checked at every load), counted with the ``tokenizers`` library
(Rust; no torch, no weights). The file's own settings are undone on load: it truncates at 128
tokens and pads to 128, which would cap every count. Tests hold the counts to the tokenizer's
encode on whole texts.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from loaders.pinned_model import MODEL_NAME, file_sha256
from loaders.tokenizers import TOKENIZERS_HINT, HuggingFaceTokens, TokenizerUnavailable, WordCounter
from schemas.config import MODEL_WINDOW

__all__ = ["TOKENIZER_FILE", "TOKENIZER_SHA256", "TokenizerUnavailable", "load_model_counter"]

logger = logging.getLogger(__name__)

TOKENIZER_FILE = Path(__file__).resolve().parent / "model_files" / "all-MiniLM-L6-v2.tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def load_model_counter(path: str | os.PathLike[str] | None = None) -> WordCounter:
    """The model's token counter from ``path`` (default: the bundled file, digest checked).

    No probe (:func:`loaders.tokenizers.choose_counter`): the pinned tokenizer is WordPiece,
    whose words count apart, and the tests hold this counter to its encode.

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
    tokens = HuggingFaceTokens(Tokenizer.from_file(str(file)), lower=False)
    logger.debug("loaded the %s tokenizer from %s", MODEL_NAME, file)
    return WordCounter(tokens, name=MODEL_NAME, kind="hf", window=MODEL_WINDOW)
