"""Chunk and ChunkResult: what the engine produces and the result store keeps."""

from __future__ import annotations

import base64
import sys
from array import array
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FieldSerializationInfo,
    SerializerFunctionWrapHandler,
    SkipValidation,
    field_serializer,
    field_validator,
    model_serializer,
)
from typing_extensions import TypedDict

from longparser_client.schemas.blocks import CoordOrigin

ChunkType = Literal["section", "table", "table_schema", "list", "equation"]
ParentKind = Literal["section", "table", "document"]
DOCUMENT_PARENT_ID = "doc"

_OUTPUT = ConfigDict(extra="forbid")


class ChunkBox(TypedDict):
    """Where a chunk's source blocks lie on one page: the smallest rectangle holding their boxes,
    in the blocks' own coordinates (``docs/chunking.md``, "Provenance").

    ``l``/``r``: left and right edges; ``t``/``b``: top and bottom edges as ``coord_origin``
    reads them (``TOPLEFT``: ``t < b``; ``BOTTOMLEFT``: ``t > b``). ``page``: the blocks'
    ``provenance.page_number``.
    """

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    page: int | None
    l: float  # noqa: E741 - docling's and the PDF world's name for the left edge
    t: float
    r: float
    b: float
    coord_origin: CoordOrigin


def _empty(value: list[Any]) -> bool:
    return not value


def _none(value: Any) -> bool:
    return value is None


# Serialisation context under which each chunk's ``embedding`` is written packed (the stored
# record): ``{PACKED_EMBEDDINGS: True}``.
PACKED_EMBEDDINGS = "pack_embeddings"


def pack_vector(vector: Sequence[float]) -> str:
    """A vector as the stored record keeps it: base64 of its little-endian float32 values."""
    values = array("f", vector)
    if sys.byteorder == "big":
        values.byteswap()
    return base64.b64encode(values.tobytes()).decode("ascii")


def unpack_vector(packed: str) -> list[float]:
    """The floats :func:`pack_vector` packed (each exactly the float32 it stored)."""
    values = array("f")
    values.frombytes(base64.b64decode(packed, validate=True))
    if sys.byteorder == "big":
        values.byteswap()
    return values.tolist()


def embedded_text(chunk: Mapping[str, Any] | Chunk) -> str:
    """What is embedded for a chunk: its ``embed_text`` (heading breadcrumb and text) when it has
    one, else its ``text``; the one definition the worker, the vector store and the adapters use."""
    if isinstance(chunk, Mapping):
        return chunk.get("embed_text") or chunk["text"]
    return chunk.embed_text or chunk.text


class Chunk(BaseModel):
    """One retrieval unit.

    ``block_ids`` and ``page_numbers`` describe the chunk's *primary* content only; text copied
    in as context (paragraph overlap, a repeated list lead-in) is flagged in
    ``overlap_with_previous`` / ``metadata`` instead.
    """

    model_config = _OUTPUT

    chunk_id: str
    text: str
    token_count: int = Field(ge=0)
    chunk_type: ChunkType
    section_path: list[str] = Field(default_factory=list)
    page_numbers: list[int] = Field(default_factory=list)
    block_ids: list[str] = Field(default_factory=list)
    # the id of the ChunkParent (in ChunkResult.parents) this chunk belongs to; None in results
    # stored before parents existed
    parent_id: str | None = None
    overlap_with_previous: bool = False
    equation_detected: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    quality_score: float = Field(default=0.0, ge=0.0, le=1.0)
    # heading_context: the chunk's heading breadcrumb then its text (what to embed); else null
    embed_text: str | None = None
    # the primary blocks' boxes merged per page; absent (not []) when no source block has a box,
    # so results of inputs without boxes are as they were. Not validated when read: the engine
    # is their only writer (longparser.boxes builds them in this shape, property-tested), and
    # copying a list and a dict per chunk into the model cost the default mode's speed (the
    # collector's full passes grow with every container a result holds).
    boxes: Annotated[list[ChunkBox], SkipValidation] = Field(default_factory=list, exclude_if=_empty)
    # with ``embed``: the vector of embedded_text(chunk); floats, packed in the stored record
    # (pack_vector); absent without ``embed``, so other results stay as they were
    embedding: list[float] | None = Field(default=None, exclude_if=_none)

    @field_validator("embedding", mode="before")
    @classmethod
    def _unpacked(cls, value: Any) -> Any:
        return unpack_vector(value) if isinstance(value, str) else value

    @field_serializer("embedding", when_used="unless-none")
    def _packed_in_the_record(self, value: Any, info: FieldSerializationInfo) -> Any:
        if info.context and info.context.get(PACKED_EMBEDDINGS):
            return pack_vector(value)
        return value.tolist() if hasattr(value, "tolist") else value


class ChunkParent(BaseModel):
    """What a group of chunks belongs to, so a retriever can go from a chunk to its context
    (small-to-big retrieval, citations, merging siblings); docs/chunking.md, "Parents".

    No text is copied here: a parent's text is its chunks' texts joined, or its blocks read
    from ``first_block_id`` to ``last_block_id``.

    ``kind``: ``section`` (the innermost heading's scope: from the heading to the next heading
    of the same or a higher level), ``table`` (a whole table: its row batches and schema chunk)
    or ``document`` (id ``doc``: the root, and the parent of chunks under no heading).
    ``parent_id``: the enclosing parent (a table's section, a subsection's section, ``doc`` for
    the top ones; None for ``doc``). ``chunk_ids``: the chunks whose ``parent_id`` this is, in
    reading order (a section's subsections list their own). ``first_block_id`` /
    ``last_block_id`` and ``page_numbers``: the blocks and pages the parent spans (a section
    with its subsections).
    """

    model_config = _OUTPUT

    id: str
    kind: ParentKind
    title: str | None = None
    parent_id: str | None = None
    first_block_id: str | None = None
    last_block_id: str | None = None
    page_numbers: list[int] = Field(default_factory=list)
    chunk_ids: list[str] = Field(default_factory=list)


class SemanticStats(BaseModel):
    """What happened to semantic boundary placement for one request."""

    model_config = _OUTPUT

    requested: bool = False
    available: bool = False
    # boundaries between the emitted chunks (a boundary a merge or a heading undid is not one)
    boundaries: int = 0
    # boundaries the method found, before packing and merging (None: semantic mode did not run)
    boundaries_found: int | None = None
    texts_embedded: int = 0
    method: str | None = None
    model: str | None = None
    weights_sha256: str | None = None
    reason: str | None = None


class EmbeddingStoreStats(BaseModel):
    """What the vector store did with one document's chunks (one transaction)."""

    model_config = _OUTPUT

    collection: str
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0


class EmbeddingStats(BaseModel):
    """Which model embedded a request's chunks, and how many vectors were computed or reused."""

    model_config = _OUTPUT

    model: str
    weights_sha256: str | None = None
    backend: str
    dimension: int
    normalized: bool
    # vectors computed for this request, and vectors the store kept (same weights, same text)
    embedded: int = 0
    reused: int = 0
    store: EmbeddingStoreStats | None = None


class ChunkStats(BaseModel):
    """Counts and timings for one chunking run (nothing is dropped without a trace here)."""

    model_config = _OUTPUT

    blocks_in: int = 0
    blocks_excluded: dict[str, int] = Field(default_factory=dict)
    equations_detected: int = 0
    chunks_out: int = 0
    chunks_by_type: dict[str, int] = Field(default_factory=dict)
    token_counter: str = "estimate"
    strict_max_tokens: bool = False
    semantic: SemanticStats = Field(default_factory=SemanticStats)
    resources: dict[str, bool] = Field(default_factory=dict)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    # where the chunks' section paths come from: the blocks' own hierarchy_path ("input"), the
    # headings' levels when no block has a path ("derived"), or nowhere ("none")
    section_paths: Literal["input", "derived", "none"] = "input"
    warnings: list[str] = Field(default_factory=list)
    # With the ``fit`` preset: the config it expanded to (``fit`` and every field); absent otherwise.
    config: dict[str, Any] | None = None
    # With ``embed``: the model, its weights and backend, the vectors' shape and counts; absent otherwise.
    embedding: EmbeddingStats | None = None

    @model_serializer(mode="wrap")
    def _without_absent_config(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # absent, not null: results of requests without the preset (or embed) stay as they were
        data = handler(self)
        for optional in ("config", "embedding"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return data


class ChunkResult(BaseModel):
    """The engine's output for one document: chunks in reading order plus stats."""

    model_config = _OUTPUT

    schema_version: str = "1.0"
    document_id: str | None = None
    chunks: list[Chunk] = Field(default_factory=list)
    # what the chunks belong to (ChunkParent); empty in results stored before parents existed
    parents: list[ChunkParent] = Field(default_factory=list)
    stats: ChunkStats = Field(default_factory=ChunkStats)
