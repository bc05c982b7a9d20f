"""The chunking pipeline (SPEC section 3). PLACEHOLDER: replaced by the structural engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from longparser.resources import Resources
from schemas import Block, ChunkingConfig, ChunkRequest, ChunkResult


def chunk_blocks(
    blocks: Sequence[Block | dict[str, Any]],
    config: ChunkingConfig | dict[str, Any] | None = None,
    resources: Resources | None = None,
) -> ChunkResult:
    """Chunk a document's blocks (reading order) into retrieval chunks."""
    raise NotImplementedError


def chunk_request(request: ChunkRequest, resources: Resources | None = None) -> ChunkResult:
    """Chunk a validated request; the result carries its document id."""
    result = chunk_blocks(request.blocks, request.config, resources)
    return result.model_copy(update={"document_id": request.document_id})
