"""Encoders a request may embed with: the pinned model by its name, and the ones a fleet declares.

A worker fleet declares encoders in ``LONGPARSER_ENCODERS`` (JSON, name -> :class:`EncoderSpec`),
as it declares tokenizers; requests name them (``embed``), never a path. ``loaders.embedding``
loads them (docs/encoders.md, "Embedding chunks").
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from longparser_client.schemas.tokenizers import MAX_WINDOW, SHA256_PATTERN

if TYPE_CHECKING:
    from longparser_client.schemas.config import ChunkingConfig

# The pinned model's name as requests give it (``embed: "all-MiniLM-L6-v2"``): every worker that
# holds an encoder holds this one, and a declaration may not take its name.
PINNED_ENCODER = "all-MiniLM-L6-v2"


class EncoderSpec(BaseModel):
    """One declared encoder: a sentence-transformers model directory and what it lacks.

    Attributes:
        path: the model directory (``modules.json``, ``model.safetensors``, ``tokenizer.json``).
        sha256: the digest of its ``model.safetensors``, checked by the worker's parent before it
            forks and again by each pool child when it loads the model.
        passage_prefix: what the model expects before a passage (e5: ``"passage: "``); its
            tokens are kept free in every chunk (``reserve_tokens`` is raised to them).
        query_prefix: what the model expects before a query (e5: ``"query: "``).
        window: the tokens the model reads, special tokens included; None: the directory's
            ``max_seq_length``. Longer texts are embedded in windows.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1, max_length=4096)
    sha256: str = Field(pattern=SHA256_PATTERN)
    passage_prefix: str = Field(default="", max_length=256)
    query_prefix: str = Field(default="", max_length=256)
    window: int | None = Field(default=None, ge=8, le=MAX_WINDOW)


def embedding_encoder(config: ChunkingConfig, declared: Collection[str]) -> str | None:
    """The encoder a request embeds with: None without ``embed``; the name ``embed`` gives; for
    ``embed: true``, the encoder ``fit`` names when one is declared under that name, else the
    pinned model."""
    if config.embed is False:
        return None
    if isinstance(config.embed, str):
        return config.embed
    if config.fit is not None and config.fit in declared:
        return config.fit
    return PINNED_ENCODER
