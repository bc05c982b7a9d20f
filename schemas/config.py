"""ChunkingConfig: the per-request knobs of the chunking engine (docs/config.md)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

TableChunkFormat = Literal["row_record", "pipe", "markdown", "labelled"]
OverlapUnit = Literal["paragraph", "sentence"]
TokenCounterName = Literal["estimate", "model"]
# The pinned embedding model's window in its own tokens, special tokens included
# (sentence-transformers' max_seq_length for all-MiniLM-L6-v2): what fits is embedded whole.
MODEL_WINDOW = 256
# The settings recommended for the pinned 256-token model: the README shows them, the retrieval
# benchmark's "recommended" row runs them (docs/retrieval-benchmark.md), and a unit test holds
# the README to this mapping. Changed only on the benchmark's dev split (bench/README.md has the
# ablations each choice rests on).
RECOMMENDED_CONFIG: Mapping[str, Any] = MappingProxyType({
    "max_tokens": 256,
    "min_tokens": 0,
    "strict_max_tokens": True,
    "token_counter": "model",
    "overlap_blocks": 0,
    "table_chunk_format": "labelled",
    "table_titles": True,
    "generate_schema_chunks": False,
    "pack_tables": True,
    "heading_context": True,
    "breadcrumb_titles": 1,
})
# The names of longparser.boundary_methods.METHODS and ALIASES (a unit test keeps them equal).
SemanticMethod = Literal["adjacent", "cohesion", "recommended"]


class ChunkingConfig(BaseModel):
    """Chunking options; every field is optional in a request, and the defaults are the
    service's original behaviour (docs/config.md).

    ``max_tokens`` is a packing *target* by default, and a true maximum of every chunk's final
    text with ``strict_max_tokens`` (docs/strict.md). The embedding model is deliberately not
    configurable here: the worker's settings name it, so a payload can never make a worker load
    arbitrary weights.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tokens: int = Field(default=512, ge=1, le=100_000)
    min_tokens: int = Field(default=100, ge=0)
    overlap_blocks: int = Field(default=1, ge=0, le=16)
    table_rows_per_chunk: int = Field(default=15, ge=1)
    table_chunk_format: TableChunkFormat = "row_record"
    generate_schema_chunks: bool = True
    wide_table_col_threshold: int = Field(default=25, ge=1)
    # --- tables (docs/chunking.md) ------------------------------------------------------------
    # A table's title (its caption, or a "Table N" paragraph next to it) opens its first row
    # chunk and is repeated on every later row chunk and on the schema chunk (then after the rows).
    table_titles: bool = False
    # Without header flags, infer the header rows (off: only flagged rows are header rows).
    table_header_inference: bool = True
    # Consecutive tables that each make one chunk are packed together while they fit.
    pack_tables: bool = False
    detect_equations: bool = True
    exclude_headers_footers: bool = True
    # --- budget (docs/strict.md) ------------------------------------------------------------
    # "estimate": the word estimate (whitespace words x 1.33); "model": the pinned model's own tokenizer.
    token_counter: TokenCounterName = "estimate"
    # Every chunk's final text (embed_text with heading_context) counts at most max_tokens.
    strict_max_tokens: bool = False
    # --- context ------------------------------------------------------------------------------
    # Each chunk also gets embed_text: its heading breadcrumb, then its text.
    heading_context: bool = False
    # The breadcrumb shows at most this many innermost titles of the section path (None: all).
    breadcrumb_titles: int | None = Field(default=None, ge=1, le=32)
    # Overlap may take at most this share of max_tokens, and never a quarter of its chunk or more
    # (None: whole paragraphs, as before).
    overlap_max_share: float | None = Field(default=None, gt=0.0, le=1.0)
    # What overlap copies: the previous chunk's last overlap_blocks paragraphs, or sentences.
    overlap_unit: OverlapUnit = "paragraph"
    # --- semantic boundaries (docs/semantic.md) -----------------------------------------------
    use_semantic_chunking: bool = False
    # "adjacent" (the default, unchanged behaviour), "cohesion", or "recommended" (= cohesion).
    semantic_method: SemanticMethod = "adjacent"
    # adjacent: a boundary where cos(previous block, block) < semantic_threshold.
    semantic_threshold: float = Field(default=0.3, ge=0.0, le=1.0)
    # cohesion: blocks "belong together" above this cosine (pairs up to 8 blocks apart) ...
    semantic_pair_threshold: float = Field(default=0.21, ge=0.0, le=1.0)
    # ... and a boundary must separate pairs worth more than this below it.
    semantic_boundary_cost: float = Field(default=0.15, ge=0.0, le=10.0)

    def semantic_method_args(self) -> dict[str, Any]:
        """Keyword arguments of ``longparser.semantic.section_boundaries`` after the threshold.

        Empty for ``adjacent``, so that the default method's call is exactly the seed's
        ``section_boundaries(texts, encoder, semantic_threshold)``.
        """
        if self.semantic_method == "adjacent":
            return {}
        return {
            "method": self.semantic_method,
            "pair_threshold": self.semantic_pair_threshold,
            "boundary_cost": self.semantic_boundary_cost,
        }

    @model_validator(mode="after")
    def _budget_is_consistent(self) -> ChunkingConfig:
        if self.min_tokens >= self.max_tokens:
            default = "" if "min_tokens" in self.model_fields_set else ", its default"
            raise ValueError(
                f"min_tokens ({self.min_tokens}{default}) must be smaller than max_tokens "
                f"({self.max_tokens}): set min_tokens below {self.max_tokens}"
            )
        if self.strict_max_tokens and self.token_counter == "model" and self.max_tokens > MODEL_WINDOW:
            raise ValueError(
                f"max_tokens ({self.max_tokens}) is above the embedding model's window "
                f"({MODEL_WINDOW} tokens) while strict_max_tokens and token_counter 'model' ask for "
                f"chunks that fit it: set max_tokens to {MODEL_WINDOW} or less"
            )
        return self
