"""The wire contract shared by producers (upload services) and LongParser workers.

Everything that crosses the broker or the result store is one of these pydantic models,
serialised as JSON. Input models ignore unknown fields (forward compatibility with
LongParser's Block dumps); output models are strict and versioned.
"""

from longparser_client.schemas.blocks import (
    BBox,
    Block,
    BlockType,
    Confidence,
    Provenance,
    Table,
    TableCell,
)
from longparser_client.schemas.chunks import (
    Chunk,
    ChunkParent,
    ChunkResult,
    ChunkStats,
    ChunkType,
    SemanticStats,
)
from longparser_client.schemas.config import ChunkingConfig
from longparser_client.schemas.inputs import (
    InputError,
    document_id_from_name,
    format_validation_error,
    is_docling_input,
    parse_config,
    parse_input,
)
from longparser_client.schemas.requests import SCHEMA_VERSION, ChunkRequest

__all__ = [
    "SCHEMA_VERSION",
    "BBox",
    "Block",
    "BlockType",
    "Chunk",
    "ChunkParent",
    "ChunkRequest",
    "ChunkResult",
    "ChunkStats",
    "ChunkType",
    "ChunkingConfig",
    "Confidence",
    "InputError",
    "Provenance",
    "SemanticStats",
    "Table",
    "TableCell",
    "document_id_from_name",
    "format_validation_error",
    "is_docling_input",
    "parse_config",
    "parse_input",
]
