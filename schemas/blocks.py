"""Block: one layout element as LongParser's extractors emit it (``Block.model_dump(mode="json")``).

Upload services forward their blocks unchanged, so unknown fields are ignored rather than
rejected, and table cells accept both LongParser's field names (``row_index`` ...) and the
short aliases its own inputs sometimes use (``r0``, ``c0``, ``rspan``, ``cspan``).
Blocks are frozen: the engine re-tags copies (``model_copy(update=...)``), never the caller's
objects.

Only :class:`Block` is a ``BaseModel``; the parts nested in it (bbox, provenance, confidence,
table and its cells) are frozen, slotted pydantic dataclasses: the same validation, errors,
attribute access and dumps, but ~1.2x cheaper to validate (a table of 50 rows x 10 columns is
500 cell objects; the 10k benchmark stream holds 50k of them), and a slot read is cheaper than
a model's attribute lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.dataclasses import dataclass

BlockType = Literal[
    "heading",
    "paragraph",
    "list_item",
    "table",
    "figure",
    "caption",
    "footer",
    "header",
    "equation",
    "code",
]

# Text that reaches chunks must be valid Unicode: a lone surrogate (``"\ud800"``, which JSON can
# carry as an escape from a broken extractor) cannot be encoded as UTF-8, so it would fail the
# chunk ids, the result store and every UTF-8 output downstream. The empty pattern makes
# pydantic-core read the string as UTF-8 (its Rust regex needs that), in native code and
# nearly free, and a lone surrogate fails there as ``string_unicode``; the message a caller
# sees is reworded by schemas.inputs. tests/unit/test_block_dicts.py pins the behaviour.
UnicodeText = Annotated[str, Field(pattern="")]

# Field types shared with the dict mirror (schemas.block_dicts): constraints and aliases are
# written once; only the defaults are spelled in each schema.
BlockId = Annotated[UnicodeText, Field(min_length=1)]
PageNumber = Annotated[int, Field(ge=0)]
Count = Annotated[int, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
RowIndex = Annotated[int, Field(ge=0, validation_alias=AliasChoices("row_index", "r0"))]
ColIndex = Annotated[int, Field(ge=0, validation_alias=AliasChoices("col_index", "c0"))]
RowSpan = Annotated[int, Field(ge=1, validation_alias=AliasChoices("row_span", "rspan"))]
ColSpan = Annotated[int, Field(ge=1, validation_alias=AliasChoices("col_span", "cspan"))]

_INPUT = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)
_NESTED = ConfigDict(extra="ignore", populate_by_name=True)  # frozen: set on each dataclass
_nested = dataclass(frozen=True, slots=True, config=_NESTED)


@_nested
class BBox:
    """Bounding box in page coordinates (points)."""

    x0: float = 0.0
    y0: float = 0.0
    x1: float = 0.0
    y1: float = 0.0


@_nested
class Provenance:
    """Where a block came from."""

    source_file: str | None = None
    page_number: PageNumber = 1
    bbox: BBox | None = None
    extractor: str | None = None


@_nested
class Confidence:
    """Extractor confidence; only ``overall`` is used by the engine."""

    overall: Fraction = 1.0


@_nested
class TableCell:
    """One cell of a structured table (0-based row/column, spans >= 1)."""

    row_index: RowIndex
    col_index: ColIndex
    row_span: RowSpan = 1
    col_span: ColSpan = 1
    text: UnicodeText = ""
    column_header: bool = False

    @field_validator("text", mode="before")
    @classmethod
    def _none_text_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value


# A table's grid has one row per distinct row index and one column per distinct column index
# of its cells (longparser.tables), so n cells can span up to n x n positions: 10k cells on a
# diagonal would be a 10**8-position grid. Grids over this many positions AND over
# SPARSE_TABLE_FACTOR x their cell count are refused; under it, no check is needed at all.
MAX_TABLE_POSITIONS = 1_000_000
SPARSE_TABLE_FACTOR = 4
_UNCHECKED_CELLS = 1_000  # 1,000 cells span at most 10**6 positions


def check_table_density(
    cells: Sequence[Any], row_of: Callable[[Any], int], col_of: Callable[[Any], int]
) -> None:
    """Raise ValueError for a table whose grid would be absurdly sparse (see above).

    ``row_of``/``col_of`` read a cell's indices (attributes of TableCells, items of cell dicts).
    """
    n_cells = len(cells)
    if n_cells <= _UNCHECKED_CELLS:
        return
    rows, cols = set(map(row_of, cells)), set(map(col_of, cells))
    positions = len(rows) * len(cols)
    if positions > max(MAX_TABLE_POSITIONS, SPARSE_TABLE_FACTOR * n_cells):
        raise ValueError(
            f"table too sparse: {n_cells} cells spread over {len(rows)} rows x {len(cols)} columns "
            f"({positions} grid positions, over {MAX_TABLE_POSITIONS} and over {SPARSE_TABLE_FACTOR}x "
            "the cells); send row and column indices of the table as extracted"
        )


@_nested
class Table:
    """Structured table content; ``cells`` may be empty (the engine then uses the block text)."""

    n_rows: Count = 0
    n_cols: Count = 0
    cells: list[TableCell] = Field(default_factory=list)

    @model_validator(mode="after")
    def _not_absurdly_sparse(self) -> Table:
        check_table_density(self.cells, attrgetter("row_index"), attrgetter("col_index"))
        return self


class Block(BaseModel):
    """One layout block in reading order."""

    model_config = _INPUT

    block_id: BlockId
    type: BlockType
    text: UnicodeText = ""
    order_index: int = 0
    heading_level: int | None = None
    indent_level: int = 0
    hierarchy_path: list[UnicodeText] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)
    confidence: Confidence = Field(default_factory=Confidence)
    flags: Any = None
    table: Table | None = None

    @field_validator("text", mode="before")
    @classmethod
    def _none_text_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("hierarchy_path", mode="before")
    @classmethod
    def _none_path_is_root(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("provenance", "confidence", mode="before")
    @classmethod
    def _none_is_default(cls, value: Any) -> Any:
        # LongParser dumps ``null`` for a missing provenance/confidence.
        return {} if value is None else value

    @property
    def page_number(self) -> int:
        """Shortcut for ``provenance.page_number``."""
        return self.provenance.page_number
