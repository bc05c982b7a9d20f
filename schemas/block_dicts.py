"""The Block contract as plain validated dicts: the engine's fast intake for dict input.

:class:`BlockDict` and its parts mirror :class:`schemas.blocks.Block` field for field: the same
names, aliases (``r0``/``c0``/``rspan``/``cspan``), types, constraints and defaults, unknown
fields ignored. Validating a dict with them builds plain dicts instead of a model per block
and a dataclass per provenance, confidence, table and cell: ~2.6x cheaper on the benchmark
stream, whose 10k blocks hold 50k table cells.

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

from typing import Annotated, Any, Required

from pydantic import AfterValidator, AliasChoices, ConfigDict, Field, TypeAdapter
from typing_extensions import TypedDict

from schemas.blocks import _UNCHECKED_CELLS, BlockType, UnicodeText, check_table_density

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
    page_number: Annotated[int, Field(default=1, ge=0)]
    bbox: Annotated[BBoxDict | None, Field(default=None)]
    extractor: Annotated[str | None, Field(default=None)]


class ConfidenceDict(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]

    overall: Annotated[float, Field(default=1.0, ge=0.0, le=1.0)]


class TableCellDict(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]

    row_index: Required[Annotated[int, Field(ge=0, validation_alias=AliasChoices("row_index", "r0"))]]
    col_index: Required[Annotated[int, Field(ge=0, validation_alias=AliasChoices("col_index", "c0"))]]
    row_span: Annotated[int, Field(default=1, ge=1, validation_alias=AliasChoices("row_span", "rspan"))]
    col_span: Annotated[int, Field(default=1, ge=1, validation_alias=AliasChoices("col_span", "cspan"))]
    text: Annotated[UnicodeText | None, Field(default="")]
    column_header: Annotated[bool, Field(default=False)]


class TableDict(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]

    n_rows: Annotated[int, Field(default=0, ge=0)]
    n_cols: Annotated[int, Field(default=0, ge=0)]
    cells: Annotated[list[TableCellDict], Field(default_factory=list)]


def _not_absurdly_sparse(table: TableDict) -> TableDict:
    """Block's Table check (schemas.blocks.check_table_density) on a validated dict."""
    cells = table["cells"]
    if len(cells) > _UNCHECKED_CELLS:
        check_table_density(len(cells), {c["row_index"] for c in cells}, {c["col_index"] for c in cells})
    return table


class BlockDict(TypedDict, total=False):
    __pydantic_config__ = _CONFIG  # type: ignore[misc]

    block_id: Required[Annotated[UnicodeText, Field(min_length=1)]]
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
