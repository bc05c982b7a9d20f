"""The Block contract as plain validated dicts: the engine's fast intake for dict input.

:class:`BlockDict` and its parts mirror :class:`schemas.blocks.Block` field for field: the same
names, aliases (``r0``/``c0``/``rspan``/``cspan``), types, constraints and defaults, unknown
fields ignored; the constrained field types (``RowIndex``, ``PageNumber``, ...) are Block's own,
from schemas.blocks, so only the defaults are written twice. Validating a dict with them
builds plain dicts instead of a model per block and a dataclass per provenance, confidence,
table and cell: ~1.8x cheaper on the benchmark stream, whose 10k blocks hold 50k table cells
(``bench/profile_engine.py validation``).

Differences, on purpose, which readers of these dicts must apply (``longparser.intake`` does):

* ``text`` (block and cell) may be None where Block turns None into ``""``, and
  ``hierarchy_path`` may be None where Block makes it ``[]`` (Block does both with Python
  validators, one call per field and cell; here they would cost more than the rest).
* ``provenance``, ``confidence`` and ``table`` are None when missing or null, where Block
  holds its defaults (page 1, confidence 1.0).

Who uses it: ``longparser.chunk_blocks`` on dict input only. A dict these schemas reject is
validated again by Block, so the error a caller sees is always Block's own; a divergence
between the two could only cost speed, never accept what Block refuses - and
``tests/unit/test_block_dicts.py`` checks that they agree (same fields, and the same verdict
and values on generated valid and invalid blocks).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Annotated, Any, Required

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter
from typing_extensions import TypedDict

from schemas.blocks import (
    BlockId,
    BlockType,
    ColIndex,
    ColSpan,
    Count,
    Fraction,
    PageNumber,
    RowIndex,
    RowSpan,
    UnicodeText,
    check_table_density,
)

_CONFIG = ConfigDict(extra="ignore", populate_by_name=True)


class BBoxDict(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]

    x0: Annotated[float, Field(default=0.0)]
    y0: Annotated[float, Field(default=0.0)]
    x1: Annotated[float, Field(default=0.0)]
    y1: Annotated[float, Field(default=0.0)]


class ProvenanceDict(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]

    source_file: Annotated[str | None, Field(default=None)]
    page_number: Annotated[PageNumber, Field(default=1)]
    bbox: Annotated[BBoxDict | None, Field(default=None)]
    extractor: Annotated[str | None, Field(default=None)]


class ConfidenceDict(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]

    overall: Annotated[Fraction, Field(default=1.0)]


class TableCellDict(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]

    row_index: Required[RowIndex]
    col_index: Required[ColIndex]
    row_span: Annotated[RowSpan, Field(default=1)]
    col_span: Annotated[ColSpan, Field(default=1)]
    text: Annotated[UnicodeText | None, Field(default="")]
    column_header: Annotated[bool, Field(default=False)]


class TableDict(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]

    n_rows: Annotated[Count, Field(default=0)]
    n_cols: Annotated[Count, Field(default=0)]
    cells: Annotated[list[TableCellDict], Field(default_factory=list)]


def _not_absurdly_sparse(table: TableDict) -> TableDict:
    """Block's Table check (schemas.blocks.check_table_density) on a validated dict."""
    check_table_density(table["cells"], itemgetter("row_index"), itemgetter("col_index"))
    return table


class BlockDict(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]

    block_id: Required[BlockId]
    type: Required[BlockType]
    text: Annotated[UnicodeText | None, Field(default="")]
    order_index: Annotated[int, Field(default=0)]
    heading_level: Annotated[int | None, Field(default=None)]
    indent_level: Annotated[int, Field(default=0)]
    hierarchy_path: Annotated[list[UnicodeText] | None, Field(default_factory=list)]
    provenance: Annotated[ProvenanceDict | None, Field(default=None)]
    confidence: Annotated[ConfidenceDict | None, Field(default=None)]
    flags: Annotated[Any, Field(default=None)]
    table: Annotated[Annotated[TableDict, AfterValidator(_not_absurdly_sparse)] | None, Field(default=None)]


# pydantic-core's validator without the TypeAdapter wrapper (one call per block).
validate_block_dict = TypeAdapter(BlockDict).validator.validate_python
