"""ChunkingConfig: the per-request knobs of the chunking engine (docs/config.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

TableChunkFormat = Literal["row_record", "pipe", "markdown", "labelled"]
OverlapUnit = Literal["paragraph", "sentence"]
# The two counters every process has; any other token_counter names a tokenizer (docs/tokenizers.md).
BUILTIN_COUNTERS = ("estimate", "model")
# A tokenizer a worker fleet declares (LONGPARSER_TOKENIZERS) is named like this: no dot, no slash,
# so a name never reads as a path and a path never passes for a name.
TOKENIZER_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
# fullmatch: in Python's re "$" also matches before a final newline ("bert\n" is no name)
_TOKENIZER_NAME = re.compile(TOKENIZER_NAME_PATTERN)
MAX_COUNTER_CHARS = 4096
# The pinned embedding model's window in its own tokens, special tokens included
# (sentence-transformers' max_seq_length for all-MiniLM-L6-v2): what fits is embedded whole.
MODEL_WINDOW = 256
# The settings recommended for the pinned 256-token model: the README shows them, the retrieval
# benchmark's "recommended" row runs them (docs/retrieval-benchmark.md), the fit preset applies
# them with its own tokenizer and window (fit_config), and a unit test holds the README to this
# mapping. Changed only on the benchmark's dev split (bench/README.md has the ablations each
# choice rests on).
RECOMMENDED_CONFIG: Mapping[str, Any] = MappingProxyType({
    "max_tokens": 256,
    "min_tokens": 0,
    "strict_max_tokens": True,
    "token_counter": "model",
    "overlap_blocks": 0,
    "table_chunk_format": "labelled",
    "table_batch_tokens": 64,
    "table_titles": True,
    "generate_schema_chunks": False,
    "pack_tables": True,
    "heading_context": True,
    "breadcrumb_titles": 1,
})
# The largest max_tokens the fit preset chooses, whatever the model's window (retrieval prefers
# chunks of a few hundred tokens even where a model embeds thousands).
FIT_MAX_TOKENS = 512


def is_tokenizer_name(value: str) -> bool:
    """Whether ``value`` is a built-in counter or has the shape of a declared tokenizer's name."""
    return value in BUILTIN_COUNTERS or _TOKENIZER_NAME.fullmatch(value) is not None


def is_path_like(value: str) -> bool:
    """Whether ``value`` names a file or directory rather than a counter (anything not name-shaped)."""
    return not is_tokenizer_name(value)


def _counter_reference(value: str, field: str) -> str:
    if not value.strip() or len(value) > MAX_COUNTER_CHARS or not value.isprintable():
        raise ValueError(f"{field} must be 'estimate', 'model', a tokenizer name or a path "
                         f"(printable, at most {MAX_COUNTER_CHARS} characters)")
    return value


# The names of longparser.boundary_methods.METHODS and ALIASES (a unit test keeps them equal).
SemanticMethod = Literal["adjacent", "cohesion", "recommended"]


class ChunkingConfig(BaseModel):
    """Chunking options; every field is optional in a request, and the defaults are the
    service's original behaviour (docs/config.md).

    ``max_tokens`` is a packing *target* by default, and a true maximum of every chunk's final
    text with ``strict_max_tokens`` (docs/strict.md). The embedding model is deliberately not
    configurable here: the worker's settings name it, so a payload can never make a worker load
    arbitrary weights.

    Values are taken as their JSON type and never converted (strict): ``true`` is not the
    number 1, ``"256"`` is not 256 and ``1`` is not true; an integer is accepted as a float.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    max_tokens: int = Field(default=512, ge=1, le=100_000)
    min_tokens: int = Field(default=100, ge=0)
    overlap_blocks: int = Field(default=1, ge=0, le=16)
    table_rows_per_chunk: int = Field(default=15, ge=1)
    # A table (column band) that does not fit one chunk is cut into row batches of at most this
    # many tokens of rows (title and header lines aside): a few facts per chunk under the table's
    # title; one that fits stays whole (None: batches as large as max_tokens allows).
    table_batch_tokens: int | None = Field(default=None, ge=1, le=100_000)
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
    # --- budget (docs/strict.md, docs/tokenizers.md) ------------------------------------------
    # "estimate": the word estimate (whitespace words x 1.33); "model": the pinned model's own
    # tokenizer; a tokenizer's declared name (workers) or path (library and CLI only).
    token_counter: str = "estimate"
    # Every chunk's final text (embed_text with heading_context) counts at most max_tokens.
    strict_max_tokens: bool = False
    # The preset: "model", a declared name or a path. Strict mode, that tokenizer,
    # max_tokens = min(its window, 512) and RECOMMENDED_CONFIG; fields set explicitly win.
    fit: str | None = None
    # Room kept free in every chunk for a prefix the embedder adds (e5's "passage: "): chunks
    # are sized to max_tokens - reserve_tokens.
    reserve_tokens: int = Field(default=0, ge=0, le=100_000)
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

    @field_validator("token_counter")
    @classmethod
    def _token_counter_reference(cls, value: str) -> str:
        return _counter_reference(value, "token_counter")

    @field_validator("fit")
    @classmethod
    def _fit_reference(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if value == "estimate":
            raise ValueError("fit names a tokenizer ('model', a declared name or a path); "
                             "the estimate has no window to fit")
        return _counter_reference(value, "fit")

    @property
    def chunk_budget(self) -> int:
        """What a chunk may count: ``max_tokens`` less the room reserved for the embedder's prefix."""
        return self.max_tokens - self.reserve_tokens

    @model_validator(mode="after")
    def _budget_is_consistent(self) -> ChunkingConfig:
        if self.fit is not None:
            return self  # checked on the config the preset expands to (it depends on the window)
        if self.reserve_tokens >= self.max_tokens:
            raise ValueError(
                f"reserve_tokens ({self.reserve_tokens}) leaves no room in max_tokens ({self.max_tokens}): "
                f"set reserve_tokens below {self.max_tokens}"
            )
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


def fit_config(config: ChunkingConfig, window: int) -> ChunkingConfig:
    """The config the ``fit`` preset of ``config`` expands to, for a tokenizer of ``window`` tokens.

    The preset: :data:`RECOMMENDED_CONFIG`, strict mode, ``token_counter`` = the fitted
    tokenizer, ``max_tokens = min(window, FIT_MAX_TOKENS)``; every field set explicitly in
    ``config`` wins. The result has no ``fit`` (it is a plain config, validated as one).

    Raises:
        pydantic.ValidationError: the explicit fields and the preset do not make a valid config
            (``min_tokens`` above the fitted ``max_tokens``, for example).
    """
    if config.fit is None:
        return config
    preset = {**RECOMMENDED_CONFIG, "strict_max_tokens": True, "token_counter": config.fit,
              "max_tokens": min(window, FIT_MAX_TOKENS)}
    explicit = config.model_dump(include=config.model_fields_set - {"fit"})
    return ChunkingConfig.model_validate({**preset, **explicit})
