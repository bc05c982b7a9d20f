"""Block: one layout element as LongParser's extractors emit it (``Block.model_dump(mode="json")``).

Upload services forward their blocks unchanged, so unknown fields are ignored rather than
rejected, and table cells accept both LongParser's field names (``row_index`` ...) and the
short aliases its own inputs sometimes use (``r0``, ``c0``, ``rspan``, ``cspan``).
Blocks are frozen, and the engine never modifies the caller's objects.

:class:`Block` is the one definition of the contract. The parts nested in it (provenance,
bbox, confidence, table and its cells) are typed dicts, validated with their defaults filled
in: a table holds one cell per position, so cells must be cheap to validate and to read, and
the engine then reads the same shape whether the caller passed models or plain dicts.
"""

from __future__ import annotations

from itertools import chain, repeat
from operator import itemgetter, mul
from typing import Annotated, Any, Literal, Required

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    model_validator,
)
from typing_extensions import TypedDict

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
# sees is reworded by schemas.inputs.
UnicodeText = Annotated[str, Field(pattern="")]

BlockId = Annotated[UnicodeText, Field(min_length=1)]
PageNumber = Annotated[int, Field(ge=0)]
Count = Annotated[int, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
RowIndex = Annotated[int, Field(ge=0, validation_alias=AliasChoices("row_index", "r0"))]
ColIndex = Annotated[int, Field(ge=0, validation_alias=AliasChoices("col_index", "c0"))]
RowSpan = Annotated[int, Field(ge=1, validation_alias=AliasChoices("row_span", "rspan"))]
ColSpan = Annotated[int, Field(ge=1, validation_alias=AliasChoices("col_span", "cspan"))]

_INPUT = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)
_PART = ConfigDict(extra="ignore", populate_by_name=True)


CoordOrigin = Literal["TOPLEFT", "BOTTOMLEFT"]
TOPLEFT: CoordOrigin = "TOPLEFT"


class BBox(TypedDict, total=False):
    """Bounding box in page coordinates (points): ``x0, x1`` left and right, ``y0, y1`` top and
    bottom as the origin reads them.

    ``coord_origin``: where ``y`` is 0. Absent means ``TOPLEFT`` (LongParser's convention: ``y``
    grows downwards, ``y0 < y1``); ``BOTTOMLEFT`` is a PDF's own (docling's when it has no page
    height to convert with: ``y0 > y1``). Chunks' boxes are merged in the blocks' own system.
    """

    __pydantic_config__ = _PART  # type: ignore[misc]

    x0: Annotated[float, Field(default=0.0)]
    y0: Annotated[float, Field(default=0.0)]
    x1: Annotated[float, Field(default=0.0)]
    y1: Annotated[float, Field(default=0.0)]
    coord_origin: CoordOrigin


class Provenance(TypedDict, total=False):
    """Where a block came from."""

    __pydantic_config__ = _PART  # type: ignore[misc]

    source_file: Annotated[str | None, Field(default=None)]
    # null or absent: no page is known (Markdown, plain text, a block without provenance); such
    # blocks give a chunk no page - a page the producer never stated would be a citation to nowhere
    page_number: Annotated[PageNumber | None, Field(default=None)]
    bbox: Annotated[BBox | None, Field(default=None)]
    extractor: Annotated[str | None, Field(default=None)]


class Confidence(TypedDict, total=False):
    """Extractor confidence; only ``overall`` is used by the engine."""

    __pydantic_config__ = _PART  # type: ignore[misc]

    overall: Annotated[Fraction, Field(default=1.0)]


class TableCell(TypedDict, total=False):
    """One cell of a structured table (0-based row/column, spans >= 1).

    ``text`` may be null: it reads as empty (a per-cell validator to replace it would cost more
    than the rest of a cell's validation).
    """

    __pydantic_config__ = _PART  # type: ignore[misc]

    row_index: Required[RowIndex]
    col_index: Required[ColIndex]
    row_span: Annotated[RowSpan, Field(default=1)]
    col_span: Annotated[ColSpan, Field(default=1)]
    text: Annotated[UnicodeText | None, Field(default="")]
    column_header: Annotated[bool, Field(default=False)]
    # the cell labels its row (docling's ``row_header``): a row's label is its row-header cells
    row_header: Annotated[bool, Field(default=False)]


# What expanding a table costs (longparser.tables): a grid of one row per distinct row index and
# one column per distinct column index of its cells, and the positions each cell's span covers
# in it. Both are counted here, before anything is expanded, so that the producer's client
# refuses what a worker would: a table's area is the larger of its grid (distinct rows x
# distinct columns) and the sum of its cells' declared row_span x col_span. For a well-formed
# table of R rows and C columns both are R x C; a diagonal of cells makes the grid huge and
# overlapping or oversized spans the sum. Declared spans are counted as sent, not clipped to the
# grid, so the check stays one C-level pass over the cells. The cap keeps the expansion of any
# table within the worker's memory bound (bench/README.md, "Table area cap").
MAX_TABLE_AREA = 250_000
# n cells form at most an n x n grid: tables of this many cells or fewer need no grid count
_GRID_UNCHECKED_CELLS = 500
_ROW_INDEX, _COL_INDEX = itemgetter("row_index"), itemgetter("col_index")
_ROW_SPAN, _COL_SPAN = itemgetter("row_span"), itemgetter("col_span")


def fills_grid_row_by_row(rows: list[int], cols: list[int]) -> bool:
    """Whether cells starting at ``rows[k]``, ``cols[k]`` start once at every position of a full
    rows x columns grid, row by row (the usual extractor output). Then no two start at one
    position, and each cell's position is its own index. C-level passes, no tuple per cell."""
    n_rows, n_cols = rows[-1] + 1, cols[-1] + 1
    return (
        len(rows) == n_rows * n_cols
        and cols == list(range(n_cols)) * n_rows
        and rows == list(chain.from_iterable(map(repeat, range(n_rows), repeat(n_cols))))
    )


def has_spans(cells: list[TableCell]) -> bool:
    """Whether a cell spans more than one row or column."""
    return max(map(_ROW_SPAN, cells)) > 1 or max(map(_COL_SPAN, cells)) > 1


def _table_rules(table: Table) -> Table:
    """The rules a table's cells keep, checked in C-level passes over them: its area (see above)
    within :data:`MAX_TABLE_AREA`, then one cell per position."""
    cells = table["cells"]
    if not cells:
        return table
    rows, cols = list(map(_ROW_INDEX, cells)), list(map(_COL_INDEX, cells))
    in_order = fills_grid_row_by_row(rows, cols)
    _area_within_cap(cells, rows, cols, in_order)
    if not in_order:
        _one_cell_per_position(rows, cols)
    return table


def _area_within_cap(cells: list[TableCell], rows: list[int], cols: list[int], in_order: bool) -> None:
    """Refuse a table whose area (see above) is over :data:`MAX_TABLE_AREA`, naming the numbers.
    Declared spans count as sent, overlaps each time."""
    spans = sum(map(mul, map(_ROW_SPAN, cells), map(_COL_SPAN, cells))) if has_spans(cells) else len(cells)
    if spans <= MAX_TABLE_AREA and (in_order or len(cells) <= _GRID_UNCHECKED_CELLS):
        return
    n_rows, n_cols = len(set(rows)), len(set(cols))
    area = max(n_rows * n_cols, spans)
    if area > MAX_TABLE_AREA:
        raise ValueError(
            f"table area {area} is over the cap of {MAX_TABLE_AREA} positions: {len(cells)} cells on a grid "
            f"of {n_rows} rows x {n_cols} columns ({n_rows * n_cols} positions) whose spans "
            f"(row_span x col_span) sum to {spans}; split the table, or send its indices and spans as "
            "extracted"
        )


class Table(TypedDict, total=False):
    """Structured table content; ``cells`` may be empty (the engine then uses the block text)."""

    __pydantic_config__ = _PART  # type: ignore[misc]

    n_rows: Annotated[Count, Field(default=0)]
    n_cols: Annotated[Count, Field(default=0)]
    cells: Annotated[list[TableCell], Field(default_factory=list)]


def _one_cell_per_position(rows: list[int], cols: list[int]) -> None:
    """Refuse two cells that start at the same row and column: one text would hide the other."""
    positions = list(zip(rows, cols, strict=True))
    if len(set(positions)) == len(positions):
        return
    first: dict[tuple[int, int], int] = {}
    for index, position in enumerate(positions):
        earlier = first.setdefault(position, index)
        if earlier != index:
            raise ValueError(
                f"cells[{earlier}] and cells[{index}] are both at row {position[0]}, column {position[1]}: "
                "a table holds one cell per position (join their texts into one cell, or fix the indices)"
            )


CheckedTable = Annotated[Table, AfterValidator(_table_rules)]


class BlockIds:
    """The block ids of one document seen so far: ids are unique within a document (chunk ids,
    ``block_ids`` and overlap all name blocks by id). One rule for requests and the engine."""

    __slots__ = ("_first",)

    def __init__(self) -> None:
        self._first: dict[str, int] = {}

    def add(self, block_id: str, position: int) -> None:
        """Remember the block at ``position``; ValueError when an earlier block has its id."""
        earlier = self._first.setdefault(block_id, position)
        if earlier != position:
            raise ValueError(f"blocks {earlier} and {position} have the same block_id {block_id!r}: "
                             "block ids must be unique within a document")


def _default_provenance() -> Provenance:
    return {"source_file": None, "page_number": None, "bbox": None, "extractor": None}


def _default_confidence() -> Confidence:
    return {"overall": 1.0}


class Block(BaseModel):
    """One layout block in reading order."""

    model_config = _INPUT

    block_id: BlockId
    type: BlockType
    # Required: a block whose text is missing or misnamed (``content``) would otherwise be read
    # as blank and dropped without a word. ``null`` (LongParser dumps) and "" are blank text,
    # excluded and counted by the engine; tables and figures may omit it (TEXT_OPTIONAL_TYPES).
    text: UnicodeText
    order_index: int = 0
    heading_level: int | None = None
    indent_level: int = 0
    hierarchy_path: list[UnicodeText] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=_default_provenance)
    confidence: Confidence = Field(default_factory=_default_confidence)
    flags: Any = None
    table: CheckedTable | None = None

    @model_validator(mode="before")
    @classmethod
    def _read_as_dumped(cls, data: Any) -> Any:
        return read_as_dumped(data)


# A table's content is its cells and a figure's its image: either may come without a text.
TEXT_OPTIONAL_TYPES = frozenset({"table", "figure"})


def read_as_dumped(data: Any) -> Any:
    """A block as LongParser dumps it, before validation (one check per block, the input copied
    only when something is filled in).

    LongParser dumps ``null`` for an absent text, path, provenance or confidence: each reads as
    its default. A table or figure without a ``text`` has an empty one.
    """
    if not isinstance(data, dict):
        return data
    if "text" not in data and data.get("type") in TEXT_OPTIONAL_TYPES:
        data = {**data, "text": ""}
    if None in (data.get("text", ""), data.get("hierarchy_path", ()), data.get("provenance", ()),
                data.get("confidence", ())):
        data = {**data}
        for name, default in _NULL_DEFAULTS.items():
            if name in data and data[name] is None:
                data[name] = default
    return data


_NULL_DEFAULTS: dict[str, Any] = {"text": "", "hierarchy_path": [], "provenance": {}, "confidence": {}}


def _block_fields_validator() -> Any:
    """A validator of a block dict into the plain dict of a Block's fields.

    Derived from :class:`Block`'s own fields (types, constraints, aliases, defaults, which are
    required) and its reading of dumps, so the contract stays written once; what it returns is
    what ``Block(...).__dict__`` holds. The engine reads blocks in this shape: building the dict
    is cheaper than building the model, for the same validation.
    """
    fields = {name: Required[Annotated[info.annotation, info]] if info.is_required() else
              Annotated[info.annotation, info] for name, info in Block.model_fields.items()}
    shape = TypedDict("BlockFields", fields, total=False)  # type: ignore[operator]
    shape.__pydantic_config__ = ConfigDict(extra="ignore", populate_by_name=True)  # type: ignore[attr-defined]
    return TypeAdapter(Annotated[shape, BeforeValidator(read_as_dumped)]).validator.validate_python


validate_block_fields = _block_fields_validator()
