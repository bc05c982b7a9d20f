"""ChunkingConfig: the per-request knobs of the chunking engine (SPEC section 2)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

TableChunkFormat = Literal["row_record", "pipe"]


class ChunkingConfig(BaseModel):
    """Chunking options; every field is optional in a request and defaults as SPEC section 2.

    ``max_tokens`` is a packing *target*, not a hard maximum (see DEC-04 in the README).
    The embedding model is deliberately not configurable here: the worker's settings name it,
    so a payload can never make a worker load arbitrary weights.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tokens: int = Field(default=512, ge=1, le=100_000)
    min_tokens: int = Field(default=100, ge=0)
    overlap_blocks: int = Field(default=1, ge=0, le=16)
    table_rows_per_chunk: int = Field(default=15, ge=1)
    table_chunk_format: TableChunkFormat = "row_record"
    generate_schema_chunks: bool = True
    wide_table_col_threshold: int = Field(default=25, ge=1)
    detect_equations: bool = True
    exclude_headers_footers: bool = True
    use_semantic_chunking: bool = False
    semantic_threshold: float = Field(default=0.3, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _min_below_max(self) -> ChunkingConfig:
        if self.min_tokens >= self.max_tokens:
            raise ValueError(
                f"min_tokens ({self.min_tokens}) must be smaller than max_tokens ({self.max_tokens})"
            )
        return self
