"""ChunkingConfig: the per-request knobs of the chunking engine (docs/config.md).

The field descriptions are the config reference: docs/config.md's table of fields is generated
from them (``python -m docs.config_doc --write``), and a unit test fails when the two differ.
"""

from __future__ import annotations

import json
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
# adjacent method: a boundary where two neighbours' cosine similarity falls below this
SEMANTIC_THRESHOLD = 0.3
DEFAULT_MAX_TOKENS = 512
DEFAULT_MIN_TOKENS = 100
# The largest max_tokens the fit preset chooses, whatever the model's window: at the same token
# budget a retriever recalls more with chunks of about 256 tokens than with larger ones, also with
# a model whose window is larger (bench/README.md, the second encoder's rows).
FIT_MAX_TOKENS = 256
# The recommended settings: what the fit preset sets besides the budget (strict mode, the fitted
# tokenizer, max_tokens = min(its window, FIT_MAX_TOKENS)). Chosen on the retrieval benchmark's
# dev split only (bench/README.md has the ablations each choice rests on).
FIT_SETTINGS: Mapping[str, Any] = MappingProxyType({
    "min_tokens": 0,
    "overlap_blocks": 0,
    "table_chunk_format": "labelled",
    "table_batch_tokens": 64,
    "table_titles": True,
    "generate_schema_chunks": False,
    "pack_tables": True,
    "heading_context": True,
    "breadcrumb_titles": 1,
    "breadcrumb_repeats_heading": True,
})


def fit_preset(fit: str, window: int) -> dict[str, Any]:
    """Every field the ``fit`` preset sets for the tokenizer ``fit`` of ``window`` tokens."""
    return {"max_tokens": min(window, FIT_MAX_TOKENS), "strict_max_tokens": True, "token_counter": fit,
            **FIT_SETTINGS}


# {"fit": "model"} spelled out: the README shows it and the retrieval benchmark's "recommended"
# row runs it (docs/retrieval-benchmark.md); a unit test holds the README to this mapping.
RECOMMENDED_CONFIG: Mapping[str, Any] = MappingProxyType(fit_preset("model", MODEL_WINDOW))
# Every field a client before this release sent, filled in at its default when its caller left it
# unset (the fields of the first release with fit). A config carrying all of them is such a
# client's whole dump: its fields win over fit as they did then (docs/operations.md#upgrading).
OLDER_CLIENT_FIELDS = frozenset({
    "detect_equations", "exclude_headers_footers", "fit", "generate_schema_chunks", "heading_context",
    "max_tokens", "min_tokens", "overlap_blocks", "overlap_max_share", "reserve_tokens",
    "semantic_boundary_cost", "semantic_method", "semantic_pair_threshold", "semantic_threshold",
    "strict_max_tokens", "table_chunk_format", "table_rows_per_chunk", "token_counter",
    "use_semantic_chunking", "wide_table_col_threshold",
})
# Older names a request may still use; each is warned (stats.warnings) with the name to use.
DEPRECATED_SEMANTIC_METHODS = MappingProxyType({"recommended": "cohesion"})


def default_min_tokens(max_tokens: int) -> int:
    """``min_tokens`` where a request leaves it unset: 100, or half of ``max_tokens`` when
    ``max_tokens`` is 100 or less (a minimum must stay below the maximum; every ``max_tokens``
    a request could use with the old fixed default keeps it)."""
    return DEFAULT_MIN_TOKENS if max_tokens > DEFAULT_MIN_TOKENS else max_tokens // 2


def known_window(counter: str) -> int | None:
    """The window of a counter that is known without loading it: the pinned model's; None otherwise."""
    return MODEL_WINDOW if counter == "model" else None


def above_window(max_tokens: int, window: int | None, named: str) -> str | None:
    """The one window rule: why chunks of ``max_tokens`` cannot be kept within ``window`` tokens
    of the counter ``named`` (``token_counter 'model'``, ``fit 'e5'``); None when they can."""
    if window is None or max_tokens <= window:
        return None
    return (f"max_tokens {max_tokens} is above the window of {named} ({window} tokens): strict mode could "
            f"not keep chunks within what the model embeds; set max_tokens to {window} or less")


def is_tokenizer_name(value: str) -> bool:
    """Whether ``value`` is a built-in counter or has the shape of a declared tokenizer's name."""
    return value in BUILTIN_COUNTERS or _TOKENIZER_NAME.fullmatch(value) is not None


def _counter_reference(value: str, field: str) -> str:
    if not value.strip() or len(value) > MAX_COUNTER_CHARS or not value.isprintable():
        raise ValueError(f"{field} must be 'estimate', 'model', a tokenizer name or a path "
                         f"(printable, at most {MAX_COUNTER_CHARS} characters)")
    return value


def _min_tokens_default(validated: dict[str, Any]) -> int:
    # max_tokens is validated before (field order); pydantic does not call this when it was invalid.
    # Absent only for a request that sets no field (docs/config_doc.py asks for that default).
    return default_min_tokens(validated.get("max_tokens", DEFAULT_MAX_TOKENS))


# The names of longparser.boundary_methods.METHODS and the deprecated names (a unit test keeps them equal).
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

    # Each field's docstring is its description: docs/config.md's table of fields is generated from them.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True)

    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1, le=100_000)
    """packing target, or the hard maximum with `strict_max_tokens` ([strict.md](strict.md))"""
    min_tokens: int = Field(default_factory=_min_tokens_default, ge=0)
    """below `max_tokens`; unset: 100, or `max_tokens` // 2 when `max_tokens` is 100 or less. A smaller
    chunk merges into an adjacent chunk (its section's first), never across a table or a semantic
    boundary; a heading-only chunk always leads the next
    """
    overlap_blocks: int = Field(default=1, ge=0, le=16)
    """trailing paragraphs (or sentences) of the previous chunk prepended, repeated (0: none)"""
    # --- tables (docs/chunking.md) ------------------------------------------------------------
    table_rows_per_chunk: int = Field(default=15, ge=1)
    """rows per table chunk, at most (also bounded by `max_tokens`): a table of more rows never fits
    one chunk, so it is cut into row batches and never packed with its neighbours"""
    table_batch_tokens: int | None = Field(default=None, ge=1, le=100_000)
    """a table (column band) that does not fit one chunk is cut into row batches whose rows count at most
    this many tokens (title and header lines aside); one that fits (within `max_tokens` and
    `table_rows_per_chunk` rows) stays whole (none: batches as large as `max_tokens` allows)
    """
    table_chunk_format: TableChunkFormat = "row_record"
    """`Row 3: Name=Ada; Year=1843`, `Ada: Year=1843`, `Ada | 1843` under the repeated header line, or a
    Markdown table ([chunking.md](chunking.md))
    """
    generate_schema_chunks: bool = True
    """one `table_schema` chunk per table: shape, column types, null rates, up to 5 sample rows (in strict
    mode as many as fit; never cut)
    """
    wide_table_col_threshold: int = Field(default=25, ge=1)
    """wider tables are cut into bands of 12 columns (a fixed width: this says when to band, not how
    wide), each repeating column 0"""
    table_titles: bool = False
    """a table's title (its caption, or a "Table N ..." paragraph next to it) opens its first row chunk and
    is repeated on every later row chunk and on the schema chunk
    """
    table_header_inference: bool = True
    """without `column_header` flags, infer the header rows (the rows above the first half-numeric row, up
    to 6); false: flagged rows only
    """
    pack_tables: bool = False
    """consecutive tables (nothing between them) that each make one chunk are packed into one chunk while
    they fit, like paragraphs (a spreadsheet or form converted as many small tables)
    """
    detect_equations: bool = True
    """re-tag equation-like paragraphs as equations (and glue their lead-in)"""
    exclude_headers_footers: bool = True
    """drop page headers and footers (`stats.blocks_excluded`)"""
    # --- budget (docs/strict.md, docs/tokenizers.md) ------------------------------------------
    token_counter: str = "estimate"
    """how tokens are counted: `estimate` (whitespace words x 1.33), `model` (the pinned model's own
    tokenizer), or any tokenizer: a name the workers declare, a path in the library and CLI
    ([tokenizers.md](tokenizers.md))
    """
    strict_max_tokens: bool = False
    """every chunk's final text (`embed_text` with `heading_context`) counts at most `max_tokens`;
    `max_tokens` above the counter's window (256 for `model`) is refused
    """
    fit: str | None = None
    """the recommended settings for a model in one key: `model`, a tokenizer's declared name or (library
    and CLI) path. Strict mode, that tokenizer, `max_tokens` = min(its window, 256) and the settings
    [below](#for-a-256-token-embedding-model). Other fields set explicitly win (a field given at its
    default value too), except those that would undo the fit, which are refused: another
    `token_counter`, `strict_max_tokens` false, `max_tokens` above the window. `stats.config` echoes
    what it expanded to, on every path ([tokenizers.md](tokenizers.md),
    [producers.md](producers.md#the-request))
    """
    reserve_tokens: int = Field(default=0, ge=0, le=100_000)
    """below `max_tokens`: room kept free for a prefix the embedder adds (e5's `passage: `); chunks count
    at most `max_tokens - reserve_tokens`
    """
    # --- context and overlap ------------------------------------------------------------------
    heading_context: bool = False
    """each chunk also gets `embed_text`: its heading breadcrumb, then its text
    ([below](#heading_context-what-it-changes-in-retrieval))
    """
    breadcrumb_titles: int | None = Field(default=None, ge=1, le=32)
    """with `heading_context`: the breadcrumb shows at most this many innermost titles of the section path
    (none: all)
    """
    breadcrumb_repeats_heading: bool = False
    """with `heading_context`: a chunk that starts with its section's heading keeps that title in its
    breadcrumb too when the section has other chunks, so the chunk opening it says its title twice and
    stands out among the section's chunks, which all carry it (off, or a section of one chunk: a title
    the text starts with is left out of the breadcrumb)
    """
    overlap_max_share: float | None = Field(default=None, gt=0.0, le=1.0)
    """overlap takes at most this share of `max_tokens` less `reserve_tokens` and at most a third of
    its chunk's own tokens (never a quarter of the chunk or more): whole paragraphs first, then a
    sentence or word cut (none: whole paragraphs)
    """
    overlap_unit: OverlapUnit = "paragraph"
    """what `overlap_blocks` counts: the previous chunk's last paragraphs, or its last sentences"""
    # --- semantic boundaries (docs/semantic.md) -----------------------------------------------
    use_semantic_chunking: bool = False
    """place boundaries where the topic changes, with the pinned encoder (goes to the `semantic` queue;
    [semantic.md](semantic.md))
    """
    semantic_method: SemanticMethod = "adjacent"
    """with `use_semantic_chunking`: how boundaries are chosen, `adjacent` (the default, unchanged
    behaviour) or `cohesion`; `recommended`, an older name of `cohesion`, still works and is warned
    """
    semantic_threshold: float = Field(default=SEMANTIC_THRESHOLD, ge=0.0, le=1.0)
    """`adjacent` only: a boundary where cosine(previous block, block) < threshold"""
    semantic_pair_threshold: float = Field(default=0.21, ge=0.0, le=1.0)
    """`cohesion` only: blocks up to 8 apart "belong together" above this cosine"""
    semantic_boundary_cost: float = Field(default=0.15, ge=0.0, le=10.0)
    """`cohesion` only: what a boundary must save to be placed"""
    # --- vectors (docs/encoders.md) -----------------------------------------------------------
    embed: bool | str = False
    """each chunk also gets `embedding`, the vector of its embedded text: `true` (the encoder `fit`
    names when the workers declare one by that name, else the pinned all-MiniLM-L6-v2) or an
    encoder's declared name, never a path (goes to the `semantic` queue;
    [encoders.md](encoders.md#embedding-chunks))
    """

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

    @field_validator("embed")
    @classmethod
    def _encoder_name(cls, value: bool | str) -> bool | str:
        if isinstance(value, str) and (value in BUILTIN_COUNTERS or not _TOKENIZER_NAME.fullmatch(value)):
            raise ValueError(f"embed {value!r} is not an encoder's name: true, false, or a name the "
                             f"workers declare (LONGPARSER_ENCODERS; {TOKENIZER_NAME_PATTERN}); a request "
                             "never names a path")
        return value

    @property
    def needs_encoder(self) -> bool:
        """Whether the request needs a worker holding an encoder (semantic boundaries or ``embed``)."""
        return self.use_semantic_chunking or self.embed is not False

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

    @property
    def older_client_dump(self) -> bool:
        """Whether this config is a client's whole dump from before this release (every field set)."""
        return self.model_fields_set >= OLDER_CLIENT_FIELDS

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
            raise ValueError(
                f"min_tokens ({self.min_tokens}) must be smaller than max_tokens ({self.max_tokens}): "
                f"set min_tokens below {self.max_tokens}"
            )
        refusal = strict_window_refusal(self, known_window(self.token_counter))
        if refusal:
            raise ValueError(refusal)
        return self


def strict_window_refusal(config: ChunkingConfig, window: int | None) -> str | None:
    """Why ``config`` cannot be served in strict mode by its counter of ``window`` tokens, or None:
    chunks above the window would be cut by the model, silently."""
    if not config.strict_max_tokens:
        return None
    return above_window(config.max_tokens, window, f"token_counter {config.token_counter!r}")


def fit_refusal(config: ChunkingConfig, window: int | None) -> str | None:
    """Why the fields set explicitly in a ``fit`` request would undo the fit, or None.

    Explicit fields win over the preset, except these: another ``token_counter`` (the chunks would
    not be counted in the fitted tokenizer), ``strict_max_tokens`` false (they would not be held
    to its window) and ``max_tokens`` above ``window`` (None: not known here, checked where the
    tokenizer is loaded). A client's whole dump from before this release is read as it was then
    (:attr:`ChunkingConfig.older_client_dump`).
    """
    fit, explicit = config.fit, config.model_fields_set
    if fit is None or config.older_client_dump:
        return None
    if "token_counter" in explicit and config.token_counter != fit:
        return (f"fit {fit!r} counts in that tokenizer; token_counter {config.token_counter!r} would undo "
                f"it: leave token_counter out (or fit out, to count with {config.token_counter!r})")
    if "strict_max_tokens" in explicit and not config.strict_max_tokens:
        return (f"fit {fit!r} keeps every chunk within the tokenizer's window; strict_max_tokens false would "
                "undo it: leave strict_max_tokens out (or fit out, for a packing target)")
    if "max_tokens" in explicit:
        return above_window(config.max_tokens, window, f"fit {fit!r}")
    return None


def fit_config(config: ChunkingConfig, window: int) -> ChunkingConfig:
    """The config the ``fit`` preset of ``config`` expands to, for a tokenizer of ``window`` tokens.

    The preset (:func:`fit_preset`) with every field set explicitly in ``config`` winning (the
    caller refuses first what would undo it: :func:`fit_refusal`). The result has no ``fit`` (it
    is a plain config, validated as one).

    Raises:
        pydantic.ValidationError: the explicit fields and the preset do not make a valid config
            (``min_tokens`` above the fitted ``max_tokens``, for example).
    """
    if config.fit is None:
        return config
    explicit = config.model_dump(include=config.model_fields_set - {"fit"})
    return ChunkingConfig.model_validate({**fit_preset(config.fit, window), **explicit})


# --- fields that do nothing in a request's mode ---------------------------------------------------

def _mode(config: ChunkingConfig, name: str) -> Any:
    """What a field that decides a mode will be once the preset is expanded (the preset's value,
    unless the request set it)."""
    if config.fit is not None and name not in config.model_fields_set and name in FIT_SETTINGS:
        return FIT_SETTINGS[name]
    return getattr(config, name)


def _idle_reason(config: ChunkingConfig, name: str) -> str | None:
    """Why ``name`` does nothing in ``config``'s mode, or None when it does something."""
    if name.startswith("semantic_") and not config.use_semantic_chunking:
        return "use_semantic_chunking is off"
    method = DEPRECATED_SEMANTIC_METHODS.get(config.semantic_method, config.semantic_method)
    if name == "semantic_threshold" and method != "adjacent":
        return f"it applies to semantic_method 'adjacent' only, and this request uses {method!r}"
    if name in ("semantic_pair_threshold", "semantic_boundary_cost") and method != "cohesion":
        return f"it applies to semantic_method 'cohesion' only, and this request uses {method!r}"
    if name in ("overlap_unit", "overlap_max_share") and _mode(config, "overlap_blocks") == 0:
        return "overlap_blocks is 0"
    if name in ("breadcrumb_titles", "breadcrumb_repeats_heading") and not _mode(config, "heading_context"):
        return "heading_context is off"
    return None


def config_warnings(config: ChunkingConfig) -> list[str]:
    """What a request should hear about its config, each once: a field set to something other
    than its default that does nothing in the request's mode, a deprecated name, a ``fit`` that
    an older client's whole dump leaves nothing to set. Chunks are made as asked all the same."""
    warnings = []
    for name, field in ChunkingConfig.model_fields.items():
        value = getattr(config, name)
        if name not in config.model_fields_set or value == field.default:
            continue
        reason = _idle_reason(config, name)
        if reason:
            warnings.append(f"{name} {json.dumps(value)} does nothing: {reason}")
    if config.use_semantic_chunking and config.semantic_method in DEPRECATED_SEMANTIC_METHODS:
        warnings.append(f"semantic_method {config.semantic_method!r} is an older name of "
                        f"{DEPRECATED_SEMANTIC_METHODS[config.semantic_method]!r}: use that name")
    if config.fit is not None and config.older_client_dump:
        warnings.append(f"fit {config.fit!r} sets nothing: the config carries every field, as a client "
                        "before this release sent it, and each wins over the preset; an upgraded client "
                        "sends only the fields its caller set")
    return warnings
