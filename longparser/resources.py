"""External resources handed to the engine: what they must provide, and the bundle passed in.

The engine never reads files, environment variables or models itself: the caller (CLI,
worker process, tests) builds a :class:`Resources` and passes it to
:func:`longparser.chunk_blocks`. ``Resources()`` (or ``resources=None``) means "none": no word
list, no language ID, no encoder - the result's stats say so. The code that loads real
resources lives in the ``loaders`` package, outside the engine.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from longparser.errors import RequestRefused
from longparser.tokens import ESTIMATE, TokenCounter


class LanguageIdentifier(Protocol):
    """Language identification (fastText ``lid.176`` in production)."""

    def predict(self, text: str) -> tuple[str, float]:
        """Return ``(language_code, confidence in [0, 1])`` for one text."""
        ...


class Encoder(Protocol):
    """A sentence encoder (all-MiniLM-L6-v2 in production)."""

    name: str
    weights_sha256: str | None

    def encode(self, texts: Sequence[str]) -> Any:
        """Return a 2-D float array-like of shape ``(len(texts), dim)``."""
        ...


@dataclass(frozen=True)
class Resources:
    """What the engine may use beyond its inputs.

    Attributes:
        word_list: lower-cased dictionary words for the coverage penalty (None: check off).
        language_id: language identifier for the language penalty (None: confidence 1.0).
        encoder: sentence encoder for semantic boundaries (None: structural packing only).
        encoder_error: why the encoder is unavailable, recorded in the result's stats.
        model_counter: the embedding model's token counter, for ``token_counter: "model"``
            (None: such a request is refused with ``model_counter_error``).
        model_counter_error: why the model's counter is unavailable (what to install).
        counters: tokenizers' counters by the name a request's ``token_counter`` (or ``fit``)
            gives: a worker's declared names; a path, where the library or the command line
            loaded one. Each has a ``window`` (tokens, special tokens included).
    """

    word_list: Container[str] | None = None
    language_id: LanguageIdentifier | None = None
    encoder: Encoder | None = None
    encoder_error: str | None = None
    model_counter: TokenCounter | None = None
    model_counter_error: str | None = None
    counters: Mapping[str, TokenCounter] = field(default_factory=dict)

    def availability(self) -> dict[str, bool]:
        """Which resources are present, for the result's stats."""
        return {
            "word_list": self.word_list is not None,
            "language_id": self.language_id is not None,
            "encoder": self.encoder is not None,
            "model_counter": self.model_counter is not None,
        }


NO_RESOURCES = Resources()
NO_MODEL_COUNTER = "no model token counter provided"


def select_counter(name: str, resources: Resources) -> TokenCounter:
    """The counter a request's ``token_counter`` names.

    Raises:
        RequestRefused: ``"model"`` without the model's counter (the message says what to
            install), or a tokenizer ``resources`` does not hold (the message names those it does).
    """
    if name == "estimate":
        return ESTIMATE
    if name != "model":
        if name in resources.counters:
            return resources.counters[name]
        held = ", ".join(sorted(resources.counters)) or "none"
        raise RequestRefused(f"token_counter {name!r} is not a tokenizer this process holds "
                             f"(it holds: {held})")
    if resources.model_counter is None:
        raise RequestRefused(
            f"token_counter 'model' needs the embedding model's tokenizer: "
            f"{resources.model_counter_error or NO_MODEL_COUNTER}"
        )
    return resources.model_counter
