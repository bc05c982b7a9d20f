"""Table grids from sparse or hostile cell indices (longparser.tables.build_grid).

A grid holds only the rows and columns where some cell starts, so its size is bounded by the
number of cells whatever indices a payload sends (two cells at row and column 10**9 once
made the engine allocate gigabytes), and the common gap-free table is unchanged; a table so
sparse that even that grid would be huge (cells on a diagonal) is refused at validation.
"""

from __future__ import annotations

import tracemalloc

import pytest
from pydantic import ValidationError

from longparser import chunk_blocks
from longparser.tables import build_grid
from schemas import Block, TableCell


def _cell(row: int, col: int, text: str, **extra: object) -> TableCell:
    return {"row_index": row, "col_index": col, "row_span": 1, "col_span": 1, "text": text,  # type: ignore[return-value]
            "column_header": False, **extra}


def test_far_away_indices_add_one_row_and_one_column_each() -> None:
    cells = [_cell(0, 0, "Name"), _cell(0, 10**9, "Score"), _cell(10**9, 0, "Ada"), _cell(10**9, 10**9, "9")]
    tracemalloc.start()
    try:
        grid = build_grid(cells)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (grid.columns, grid.rows) == (["Name", "Score"], [["Ada", "9"]])
    assert peak < 1_000_000  # bytes: a 2 x 2 grid, not 10**9 rows


def test_huge_spans_are_clipped_to_the_existing_rows_and_columns() -> None:
    cells = [_cell(0, 0, "Region", column_header=True), _cell(0, 1, "Q1", column_header=True),
             _cell(1, 0, "North", row_span=10**12), _cell(1, 1, "5"), _cell(2, 1, "7")]
    grid = build_grid(cells)
    assert (grid.columns, grid.rows) == (["Region", "Q1"], [["North", "5"], ["North", "7"]])


def test_gap_column_is_skipped_and_an_unnamed_column_keeps_its_index() -> None:
    cells = [_cell(0, 0, "Name"), _cell(0, 3, ""), _cell(1, 0, "Ada"), _cell(1, 3, "1843")]
    grid = build_grid(cells)
    assert (grid.columns, grid.rows) == (["Name", "col_3"], [["Ada", "1843"]])


def test_without_header_flags_the_first_present_row_is_the_header() -> None:
    cells = [_cell(5, 0, "Name"), _cell(5, 1, "Year"), _cell(6, 0, "Ada"), _cell(6, 1, "1843")]
    grid = build_grid(cells)
    assert (grid.columns, grid.rows) == (["Name", "Year"], [["Ada", "1843"]])


def test_hostile_table_payload_is_chunked_quickly_through_the_engine() -> None:
    block = {"block_id": "t1", "type": "table", "table": {"n_rows": 10**9, "n_cols": 10**9, "cells": [
        {"r0": 0, "c0": 0, "text": "Name"}, {"r0": 10**9, "c0": 10**9, "text": "Ada", "rspan": 10**9}]}}
    result = chunk_blocks([block])
    assert [chunk.chunk_type for chunk in result.chunks] == ["table_schema", "table"]
    assert result.chunks[1].text == "Row 1: Name=; col_1000000000=Ada"


def _table_block(cells: list[dict[str, object]]) -> dict[str, object]:
    return {"block_id": "t1", "type": "table", "table": {"cells": cells}}


def test_absurdly_sparse_table_is_refused_at_validation() -> None:
    # 2,000 cells on a diagonal would be a 4,000,000-position grid: refused.
    diagonal = _table_block([{"r0": i, "c0": i, "text": "x"} for i in range(2_000)])
    with pytest.raises(ValidationError, match="too sparse: 2000 cells spread over 2000 rows x 2000"):
        Block.model_validate(diagonal)
    with pytest.raises(ValidationError) as raised:
        chunk_blocks([diagonal])
    assert raised.value.title == "Block" and raised.value.errors()[0]["loc"] == ("table",)


def test_large_dense_and_moderately_sparse_tables_are_accepted() -> None:
    dense = [{"r0": r, "c0": c, "text": f"{r}.{c}"} for r in range(200) for c in range(30)]
    half_empty = [cell for cell in dense if (cell["r0"] + cell["c0"]) % 2]  # type: ignore[operator]
    for cells in (dense, half_empty):
        assert len(chunk_blocks([_table_block(cells)]).chunks) > 1
