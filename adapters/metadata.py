"""What the framework adapters keep beside each chunk, shared by LangChain and LlamaIndex."""

from __future__ import annotations

from typing import Any, Literal

from adapters.small_to_big import parent_key
from schemas import Chunk, ChunkParent, ChunkResult

__all__ = ["Content", "chunk_content", "chunk_metadata", "chunk_vectors", "parent_metadata"]

Content = Literal["embed_text", "text"]


def chunk_metadata(result: ChunkResult, index: int) -> dict[str, Any]:
    """What a framework keeps beside a chunk's text: ids, place, type, pages, section, quality.

    ``previous_chunk_id`` / ``next_chunk_id`` link the chunks in reading order (None at the
    ends); ``parent_id`` names the chunk's parent as the adapters' parent documents and nodes
    are named (:func:`adapters.small_to_big.parent_key`; None for a result stored before
    parents existed). Values are strings, numbers, lists of them or None.
    """
    chunks = result.chunks
    chunk = chunks[index]
    return {
        "chunk_id": chunk.chunk_id,
        "document_id": result.document_id,
        "chunk_index": index,
        "chunk_type": chunk.chunk_type,
        "page_numbers": list(chunk.page_numbers),
        "section_path": list(chunk.section_path),
        "quality_score": chunk.quality_score,
        "token_count": chunk.token_count,
        "previous_chunk_id": chunks[index - 1].chunk_id if index else None,
        "next_chunk_id": chunks[index + 1].chunk_id if index + 1 < len(chunks) else None,
        "parent_id": None if chunk.parent_id is None else parent_key(result, chunk.parent_id),
    }


def parent_metadata(result: ChunkResult, parent: ChunkParent) -> dict[str, Any]:
    """What a framework keeps beside a parent's text (its id named by
    :func:`adapters.small_to_big.parent_key`, as its children's ``parent_id``)."""
    return {
        "parent_id": parent_key(result, parent.id),
        "document_id": result.document_id,
        "parent_kind": parent.kind,
        "title": parent.title,
        "enclosing_parent_id": None if parent.parent_id is None else parent_key(result, parent.parent_id),
        "page_numbers": list(parent.page_numbers),
        "chunk_ids": list(parent.chunk_ids),
        "first_block_id": parent.first_block_id,
        "last_block_id": parent.last_block_id,
    }


def chunk_content(chunk: Chunk, content: Content) -> str:
    """The text a framework embeds: ``embed_text`` when the engine made one (and it is asked
    for), else the chunk's text."""
    if content == "embed_text" and chunk.embed_text is not None:
        return chunk.embed_text
    return chunk.text


def chunk_vectors(result: ChunkResult) -> list[list[float]]:
    """Every chunk's ``embedding`` as a list of floats, in reading order.

    Raises:
        ValueError: a chunk has no vector (the result was made without ``embed``).
    """
    missing = [chunk.chunk_id for chunk in result.chunks if chunk.embedding is None]
    if missing:
        raise ValueError(f"chunk {missing[0]!r} has no embedding: chunk with embed (--embed, embed=True) "
                         "to hand vectors to a store")
    return [_floats(chunk.embedding) for chunk in result.chunks]


def _floats(vector: Any) -> list[float]:
    return vector.tolist() if hasattr(vector, "tolist") else list(vector)
