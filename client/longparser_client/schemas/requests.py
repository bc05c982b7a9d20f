"""ChunkRequest: the task payload an upload service enqueues."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from longparser_client.schemas.blocks import Block, BlockIds
from longparser_client.schemas.config import ChunkingConfig

SCHEMA_VERSION = "1.0"

# Document ids become parts of Redis keys and file names: keep them to a safe alphabet. The
# first character is never "-" (an option on a command line) or "." (a hidden file name).
# Matched whole: pydantic's Rust regex reads "$" as the end of the text, while Python's re also
# matches it before a final newline, so Python code checks an id with fullmatch
# (service.keys.is_valid_document_id).
DOCUMENT_ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9._:@-]{0,199}$"


class ChunkRequest(BaseModel):
    """One document's blocks plus optional chunking config."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: Literal["1.0"] = SCHEMA_VERSION
    document_id: str = Field(pattern=DOCUMENT_ID_PATTERN)
    blocks: list[Block] = Field(default_factory=list)
    config: ChunkingConfig = Field(default_factory=ChunkingConfig)

    @field_validator("blocks")
    @classmethod
    def _unique_block_ids(cls, blocks: list[Block]) -> list[Block]:
        seen = BlockIds()
        for position, block in enumerate(blocks):
            seen.add(block.block_id, position)
        return blocks
