"""Table grids from sparse or hostile cell indices (longparser.tables.build_grid).

A grid holds only the rows and columns where some cell starts, so its size is bounded by the
number of cells whatever indices a payload sends (two cells at row and column 10**9 once
made the engine allocate gigabytes), and the common gap-free table is unchanged; a table whose
area (its grid, or the sum of its cells' spans) is over the cap is refused at validation.

Table chunks (plan cases B09-B11): row batches, schema chunks, pipe format, fallback text, wide
tables cut into column bands, captions. Token arithmetic (the word estimate): ``n`` words ->
``int(n * 1.33)`` tokens.
"""

from __future__ import annotations

import tracemalloc

import pytest
from pydantic import ValidationError

from longparser import chunk_blocks
from longparser.tables import _is_figure, build_grid
from schemas import Block, InputError, TableCell, parse_input
from schemas.blocks import MAX_TABLE_AREA
from tests.unit.engine_helpers import PEOPLE, PEOPLE_RECORDS, run_engine, table_dict, view, words


def _cell(row: int, col: int, text: str, **extra: object) -> TableCell:
    return {"row_index": row, "col_index": col, "row_span": 1, "col_span": 1, "text": text,  # type: ignore[return-value]
            "column_header": False, "row_header": False, **extra}


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


def test_cells_in_any_order_fill_the_same_grid_as_row_by_row() -> None:
    in_rows = [_cell(r, c, f"{r}{c}" if r else f"h{c}") for r in range(3) for c in range(2)]
    by_columns = [_cell(r, c, f"{r}{c}" if r else f"h{c}") for c in range(2) for r in range(3)]
    expected = (["h0", "h1"], [["10", "11"], ["20", "21"]])
    assert (build_grid(in_rows).columns, build_grid(in_rows).rows) == expected
    assert (build_grid(by_columns).columns, build_grid(by_columns).rows) == expected


def test_a_position_written_twice_keeps_the_first_non_empty_text() -> None:
    cells = [_cell(0, 0, "Name"), _cell(0, 1, "Year"), _cell(1, 0, ""), _cell(1, 1, "1843"),
             _cell(1, 0, "Ada"), _cell(1, 0, "Grace")]
    grid = build_grid(cells)
    assert (grid.columns, grid.rows) == (["Name", "Year"], [["Ada", "1843"]])


def test_without_header_flags_the_first_present_row_is_the_header() -> None:
    cells = [_cell(5, 0, "Name"), _cell(5, 1, "Year"), _cell(6, 0, "Ada"), _cell(6, 1, "1843")]
    grid = build_grid(cells)
    assert (grid.columns, grid.rows) == (["Name", "Year"], [["Ada", "1843"]])


def test_far_away_indices_and_declared_sizes_pass_the_engine_cheaply() -> None:
    block = {"block_id": "t1", "type": "table", "table": {"n_rows": 10**9, "n_cols": 10**9, "cells": [
        {"r0": 0, "c0": 0, "text": "Name"}, {"r0": 10**9, "c0": 10**9, "text": "Ada"}]}}
    result = chunk_blocks([block])
    assert [chunk.chunk_type for chunk in result.chunks] == ["table_schema", "table"]
    assert result.chunks[1].text == "Row 1: Name=; col_1000000000=Ada"


def _table_block(cells: list[dict[str, object]]) -> dict[str, object]:
    return {"block_id": "t1", "type": "table", "table": {"cells": cells}}


def _diagonal(n: int, span: int = 1) -> list[dict[str, object]]:
    return [{"r0": i, "c0": i, "rspan": span, "cspan": span, "text": "x"} for i in range(n)]


def _one_cell_spanning(n: int) -> list[dict[str, object]]:
    """The issue's 54 KB table: one cell spanning n x n, a diagonal giving the grid n rows and columns."""
    return [{"r0": 0, "c0": 0, "rspan": n, "cspan": n, "text": "x"}, *_diagonal(n)[1:]]


def _area_message(area: int, cells: int, rows: int, cols: int, spans: int) -> str:
    return (f"block 0 (id 't1'): table: table area {area} is over the cap of {MAX_TABLE_AREA} positions: "
            f"{cells} cells on a grid of {rows} rows x {cols} columns ({rows * cols} positions) whose spans "
            f"(row_span x col_span) sum to {spans}; split the table, or send its indices and spans as "
            "extracted")


@pytest.mark.parametrize(("cells", "expected"), [
    # the hostile tables: spans of 10**9 on a diagonal, one cell spanning 1,000 x 1,000
    (_diagonal(400, 10**9), _area_message(400 * 10**18, 400, 400, 400, 400 * 10**18)),
    (_diagonal(1_000, 10**9), _area_message(1_000 * 10**18, 1_000, 1_000, 1_000, 1_000 * 10**18)),
    (_one_cell_spanning(1_000), _area_message(1_000_999, 1_000, 1_000, 1_000, 1_000_999)),
    # no span at all: 501 cells on a diagonal make a 501 x 501 grid
    (_diagonal(501), _area_message(501 * 501, 501, 501, 501, 501)),
    # a span of 10**9 counts as sent, not clipped to the grid's two rows
    ([{"r0": 0, "c0": 0, "text": "Name"}, {"r0": 1, "c0": 0, "rspan": 10**9, "text": "Ada"}],
     _area_message(10**9 + 1, 2, 2, 1, 10**9 + 1)),
])
def test_a_table_over_the_area_cap_is_refused_naming_the_numbers(
    cells: list[dict[str, object]], expected: str
) -> None:
    block = _table_block(cells)
    with pytest.raises(InputError) as raised:
        chunk_blocks([block])
    assert str(raised.value) == expected
    with pytest.raises(InputError) as raised:
        parse_input({"document_id": "d", "blocks": [block]})
    assert str(raised.value) == expected
    with pytest.raises(ValidationError, match="table area"):
        Block.model_validate(block)


def test_tables_at_the_area_cap_are_accepted() -> None:
    # a 500 x 500 grid (cells on a diagonal) and, on it, spans summing to the cap exactly
    at_cap = [{"r0": 0, "c0": 0, "rspan": 499, "cspan": 500, "text": "x"}, *_diagonal(500)[1:],
              {"r0": 1, "c0": 0, "text": "y"}]
    assert MAX_TABLE_AREA == 499 * 500 + 499 + 1
    assert len(chunk_blocks([_table_block(at_cap)]).chunks) > 1
    assert len(chunk_blocks([_table_block(_diagonal(500))]).chunks) > 1
    over = [*at_cap, {"r0": 2, "c0": 0, "text": "z"}]
    with pytest.raises(InputError, match=f"table area {MAX_TABLE_AREA + 1} is over the cap"):
        chunk_blocks([_table_block(over)])


def test_two_cells_at_one_position_are_refused_naming_both() -> None:
    cells = [{"r0": 0, "c0": 0, "text": "Name"}, {"r0": 0, "c0": 1, "text": "Age"},
             {"r0": 1, "c0": 0, "text": "Ada"}, {"r0": 0, "c0": 1, "text": "Years"}]
    message = ("block 0 (id 't1'): table: cells[1] and cells[3] are both at row 0, column 1: a table holds "
               "one cell per position (join their texts into one cell, or fix the indices)")
    with pytest.raises(InputError) as raised:
        chunk_blocks([_table_block(cells)])
    assert str(raised.value) == message
    with pytest.raises(InputError) as raised:
        parse_input({"document_id": "d", "blocks": [_table_block(cells)]})
    assert str(raised.value) == message


def test_large_dense_and_moderately_sparse_tables_are_accepted() -> None:
    dense = [{"r0": r, "c0": c, "text": f"{r}.{c}"} for r in range(200) for c in range(30)]
    half_empty = [cell for cell in dense if (cell["r0"] + cell["c0"]) % 2]  # type: ignore[operator]
    for cells in (dense, half_empty):
        assert len(chunk_blocks([_table_block(cells)]).chunks) > 1


# --- B09 structured row batches -------------------------------------------------------------------


@pytest.mark.case("B09")
def test_B09_row_batches_record_format(make_block):
    blocks = [make_block("", "table", page=4, table=table_dict(PEOPLE))]
    result = run_engine(blocks, table_rows_per_chunk=2, generate_schema_chunks=False)
    assert view(result) == [
        ("table", "\n".join(PEOPLE_RECORDS[0:2]), ["b1"], [4]),
        ("table", "\n".join(PEOPLE_RECORDS[2:4]), ["b1"], [4]),
        ("table", PEOPLE_RECORDS[4], ["b1"], [4]),
    ]
    keys = ("table_block_id", "row_start", "row_end", "col_band", "table_format")
    metas = [tuple(c.metadata[k] for k in keys) for c in result.chunks]
    assert metas == [
        ("b1", 1, 2, None, "row_record"), ("b1", 3, 4, None, "row_record"), ("b1", 5, 5, None, "row_record"),
    ]


def test_table_batch_tokens_cuts_a_table_that_does_not_fit_into_small_batches(make_block):
    # records have 5 words (6 tokens): max_tokens 20 takes three rows, table_batch_tokens 12 two
    blocks = [make_block("", "table", table=table_dict(PEOPLE))]
    plain = run_engine(blocks, max_tokens=20, generate_schema_chunks=False)
    assert [(c.metadata["row_start"], c.metadata["row_end"]) for c in plain.chunks] == [(1, 3), (4, 5)]
    small = run_engine(blocks, max_tokens=20, table_batch_tokens=12, generate_schema_chunks=False)
    assert [(c.metadata["row_start"], c.metadata["row_end"]) for c in small.chunks] == [
        (1, 2), (3, 4), (5, 5)]
    assert [c.text for c in small.chunks] == ["\n".join(PEOPLE_RECORDS[0:2]), "\n".join(PEOPLE_RECORDS[2:4]),
                                              PEOPLE_RECORDS[4]]


def test_table_batch_tokens_leaves_a_table_that_fits_whole(make_block):
    blocks = [make_block("", "table", table=table_dict(PEOPLE))]
    whole = run_engine(blocks, table_batch_tokens=6, generate_schema_chunks=False)
    assert [c.text for c in whole.chunks] == ["\n".join(PEOPLE_RECORDS)]


def test_a_table_fits_one_chunk_within_the_budget_and_table_rows_per_chunk_rows(make_block):
    # 20 short rows fit the default budget; the default row cap (15) still cuts them, and a
    # table cut in batches is not packed with the small table after it
    long = table_dict([["K", "V"], *[[f"k{i}", str(i)] for i in range(20)]], flag_header=True)
    small = table_dict([["K", "V"], ["a", "1"]], flag_header=True)
    blocks = [make_block("", "table", table=long), make_block("", "table", table=small)]
    config = {"pack_tables": True, "generate_schema_chunks": False, "table_chunk_format": "pipe"}
    capped = run_engine(blocks, **config)
    assert [(c.block_ids, c.metadata["row_start"], c.metadata["row_end"]) for c in capped.chunks] == [
        (["b1"], 1, 15), (["b1"], 16, 20), (["b2"], 1, 1)]
    whole = run_engine(blocks, table_rows_per_chunk=20, **config)
    assert [c.metadata["table_block_ids"] for c in whole.chunks] == [["b1", "b2"]]


@pytest.mark.case("B09")
def test_B09_row_batches_limited_by_token_budget(make_block):
    # records have 5 words (6 tokens): two rows (12) exceed 11
    blocks = [make_block("", "table", table=table_dict(PEOPLE))]
    result = run_engine(blocks, max_tokens=11, generate_schema_chunks=False)
    assert [c.text for c in result.chunks] == PEOPLE_RECORDS
    assert [(c.metadata["row_start"], c.metadata["row_end"]) for c in result.chunks] == [
        (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
    fits_two = run_engine(blocks, max_tokens=12, generate_schema_chunks=False)
    assert [(c.metadata["row_start"], c.metadata["row_end"]) for c in fits_two.chunks] == [
        (1, 2), (3, 4), (5, 5)]


@pytest.mark.case("B09")
def test_B09_empty_cells_and_empty_columns_keep_their_headers(make_block):
    rows = [["Name", "Notes"], ["Ada", ""], ["Alan", ""]]
    result = run_engine([make_block("", "table", table=table_dict(rows))], generate_schema_chunks=False)
    assert [c.text for c in result.chunks] == ["Row 1: Name=Ada; Notes=\nRow 2: Name=Alan; Notes="]


@pytest.mark.case("B09")
def test_B09_flagged_header_rows_spans_and_empty_names(make_block):
    cells = [
        {"r0": 0, "c0": 0, "text": "", "column_header": True},
        {"r0": 0, "c0": 1, "cspan": 2, "text": "Score", "column_header": True},
        {"r0": 1, "c0": 1, "text": "2023", "column_header": True},
        {"r0": 1, "c0": 2, "text": "2024", "column_header": True},
        {"r0": 2, "c0": 0, "rspan": 2, "text": "North"},
        {"r0": 2, "c0": 1, "text": "1"}, {"r0": 2, "c0": 2, "text": "2"},
        {"r0": 3, "c0": 1, "text": "3"}, {"r0": 3, "c0": 2, "text": " 4\n"},
    ]
    table = {"n_rows": 4, "n_cols": 3, "cells": cells}
    result = run_engine([make_block("", "table", table=table)], generate_schema_chunks=False)
    assert [c.text for c in result.chunks] == [
        "Row 1: col_0=North; Score: 2023=1, 2024=2\n"
        "Row 2: col_0=North; Score: 2023=3, 2024=4"
    ]


# --- B10 schema chunks and pipe format ------------------------------------------------------------


_TYPED = [
    ["Name", "Year", "Born", "Share"],
    ["Ada", "1843", "1815-12-10", "12.5%"],
    ["Alan", "1936", "23/06/1912", "$1,200"],
    ["Grace", "", "1906-12-09", "-3"],
    ["Edsger", "1968", "1930-05-11", "€4.5"],
    ["Barbara", "1974", "1939-11-07", "0"],
    ["Betty", "1946", "1924-01-01", "7"],
]


@pytest.mark.case("B10")
def test_B10_schema_chunk_types_null_rates_and_samples(make_block):
    result = run_engine([make_block("", "table", table=table_dict(_TYPED))])
    schema = result.chunks[0]
    assert schema.chunk_type == "table_schema"
    assert schema.text == (
        "Table schema: 6 data rows, 4 columns.\n"
        "Columns: Name (string, 0% null); Year (number, 17% null); Born (date, 0% null); "
        "Share (number, 0% null)\n"
        "Sample rows:\n"
        "Row 1: Name=Ada; Year=1843; Born=1815-12-10; Share=12.5%\n"
        "Row 2: Name=Alan; Year=1936; Born=23/06/1912; Share=$1,200\n"
        "Row 3: Name=Grace; Year=; Born=1906-12-09; Share=-3\n"
        "Row 4: Name=Edsger; Year=1968; Born=1930-05-11; Share=€4.5\n"
        "Row 5: Name=Barbara; Year=1974; Born=1939-11-07; Share=0"
    )
    assert schema.metadata["columns"] == [
        {"name": "Name", "type": "string", "null_rate": 0.0},
        {"name": "Year", "type": "number", "null_rate": 0.1667},
        {"name": "Born", "type": "date", "null_rate": 0.0},
        {"name": "Share", "type": "number", "null_rate": 0.0},
    ]
    assert (schema.metadata["n_rows"], schema.metadata["n_cols"], schema.block_ids) == (6, 4, ["b1"])
    assert [c.chunk_type for c in result.chunks] == ["table_schema", "table"]


@pytest.mark.case("B10")
def test_B10_pipe_format_repeats_header_line_in_every_batch(make_block):
    result = run_engine([make_block("", "table", table=table_dict(_TYPED))], table_chunk_format="pipe",
                    table_rows_per_chunk=4, generate_schema_chunks=False)
    header = "Name | Year | Born | Share"
    assert [c.text for c in result.chunks] == [
        "\n".join([header, "Ada | 1843 | 1815-12-10 | 12.5%", "Alan | 1936 | 23/06/1912 | $1,200",
                   "Grace |  | 1906-12-09 | -3", "Edsger | 1968 | 1930-05-11 | €4.5"]),
        "\n".join([header, "Barbara | 1974 | 1939-11-07 | 0", "Betty | 1946 | 1924-01-01 | 7"]),
    ]
    assert [(c.metadata["row_start"], c.metadata["row_end"], c.metadata["table_format"])
            for c in result.chunks] == [(1, 4, "pipe"), (5, 6, "pipe")]


@pytest.mark.case("B10")
def test_B10_pipe_schema_samples_carry_header(make_block):
    result = run_engine([make_block("", "table", table=table_dict([["K", "V"], ["a", "x"]]))],
                    table_chunk_format="pipe")
    assert result.chunks[0].text == (
        "Table schema: 1 data rows, 2 columns.\nColumns: K (string, 0% null); V (string, 0% null)\n"
        "Sample rows:\nK | V\na | x"
    )


# --- B11 table-only, fallback text, wide tables, captions -----------------------------------------


@pytest.mark.case("B11")
def test_B11_table_only_document(make_block):
    result = run_engine([make_block("", "table", page=3, path=["Data"], table=table_dict(PEOPLE))])
    assert [(c.chunk_type, c.page_numbers, c.section_path, c.block_ids) for c in result.chunks] == [
        ("table_schema", [3], ["Data"], ["b1"]), ("table", [3], ["Data"], ["b1"])]
    assert result.chunks[1].text == "\n".join(PEOPLE_RECORDS)
    assert result.stats.chunks_by_type == {"table_schema": 1, "table": 1}


@pytest.mark.case("B11")
@pytest.mark.parametrize(
    "table", [None, {"n_rows": 0, "n_cols": 0, "cells": []}], ids=["no-table", "no-cells"]
)
def test_B11_table_without_cells_falls_back_to_its_text(make_block, table):
    text = "| a | b |\n| 1 | 2 |"
    result = run_engine([make_block(text, "table", page=2, table=table)])
    assert view(result) == [("table", text, ["b1"], [2])]
    assert result.chunks[0].metadata["table_format"] == "text"


@pytest.mark.case("B11")
def test_B11_wide_table_cut_into_bands_repeating_key_column(make_block):
    n_cols = 27
    rows = [["Key"] + [f"h{c}" for c in range(1, n_cols)], ["k1"] + [f"v{c}" for c in range(1, n_cols)]]
    result = run_engine([make_block("", "table", table=table_dict(rows))], generate_schema_chunks=False)
    assert [c.metadata["col_band"] for c in result.chunks] == [[0, 11], [12, 22], [23, 26]]
    assert result.chunks[0].text == "Row 1: Key=k1; " + "; ".join(f"h{c}=v{c}" for c in range(1, 12))
    assert result.chunks[1].text == "Row 1: Key=k1; " + "; ".join(f"h{c}=v{c}" for c in range(12, 23))
    assert result.chunks[2].text == "Row 1: Key=k1; h23=v23; h24=v24; h25=v25; h26=v26"


@pytest.mark.case("B11")
def test_B11_table_at_threshold_is_not_banded(make_block):
    rows = [[f"h{c}" for c in range(25)], [f"v{c}" for c in range(25)]]
    result = run_engine([make_block("", "table", table=table_dict(rows))], generate_schema_chunks=False)
    assert [c.metadata["col_band"] for c in result.chunks] == [None]


@pytest.mark.case("B11")
def test_B11_caption_before_table_attached_to_first_chunk(make_block):
    # a paragraph of prose (over 40 words, no lead-in ending) is not the table's lead-in
    blocks = [make_block(words(45) + "."), make_block("Table 1: People", "caption"),
              make_block("", "table", table=table_dict(PEOPLE))]
    result = run_engine(blocks, table_rows_per_chunk=3)
    assert [(c.chunk_type, c.block_ids) for c in result.chunks] == [
        ("section", ["b1"]), ("table_schema", ["b2", "b3"]), ("table", ["b3"]), ("table", ["b3"])]
    assert result.chunks[1].text.startswith("Table 1: People\nTable schema: 5 data rows, 3 columns.\n")
    assert result.chunks[1].metadata["caption_block_id"] == "b2"
    assert result.chunks[2].text == "\n".join(PEOPLE_RECORDS[:3])


def test_the_paragraph_that_introduces_a_titled_table_opens_its_first_chunk(make_block):
    # the rule of a list's lead-in; a table titled below (or untitled) takes no lead-in
    lead = "Table 1 lists the people and the year of their first paper."
    blocks = [make_block("Prose of the section, " + words(45) + "."), make_block(lead),
              make_block("Table 1: People", "caption"), make_block("", "table", table=table_dict(PEOPLE))]
    result = run_engine(blocks, generate_schema_chunks=False)
    assert [(c.chunk_type, c.block_ids) for c in result.chunks] == [
        ("section", ["b1"]), ("table", ["b2", "b3", "b4"])]
    assert result.chunks[1].text.startswith(f"{lead}\nTable 1: People\nRow 1: ")
    below = run_engine([blocks[0], blocks[1], blocks[3], make_block("Table 1: People", "caption")],
                       generate_schema_chunks=False)
    assert below.chunks[0].block_ids == ["b1", "b2"]


@pytest.mark.case("B11")
def test_B11_caption_after_table_attached_without_schema(make_block):
    blocks = [make_block("", "table", page=5, table=table_dict(PEOPLE)),
              make_block("Table 2: People", "caption", page=5), make_block("After.", page=5)]
    result = run_engine(blocks, generate_schema_chunks=False)
    assert view(result) == [
        ("table", "Table 2: People\n" + "\n".join(PEOPLE_RECORDS), ["b1", "b2"], [5]),
        ("section", "After.", ["b3"], [5]),
    ]


@pytest.mark.case("B11")
def test_B11_caption_on_another_page_not_attached(make_block):
    blocks = [make_block("Table 3: People", "caption", page=1),
              make_block("", "table", page=2, table=table_dict(PEOPLE))]
    result = run_engine(blocks, generate_schema_chunks=False)
    assert view(result) == [
        ("section", "Table 3: People", ["b1"], [1]),
        ("table", "\n".join(PEOPLE_RECORDS), ["b2"], [2]),
    ]


@pytest.mark.case("B11")
def test_B11_caption_between_two_tables_goes_to_one_table_only(make_block):
    # Changed: a caption directly before a table is that table's (tables are titled above them);
    # the table before it used to take it because it was seen first.
    blocks = [make_block("", "table", table=table_dict([["A"], ["1"]])), make_block("Cap", "caption"),
              make_block("", "table", table=table_dict([["B"], ["2"]]))]
    result = run_engine(blocks, generate_schema_chunks=False)
    assert view(result) == [
        ("table", "Row 1: A=1", ["b1"], [1]),
        ("table", "Cap\nRow 1: B=2", ["b2", "b3"], [1]),
    ]


# --- header rows without flags ----------------------------------------------------------------


def _grid_of(rows: list[list[str]]):
    return build_grid([_cell(r, c, text) for r, row in enumerate(rows) for c, text in enumerate(row)])


def test_a_text_row_above_numeric_columns_is_a_second_header_row() -> None:
    grid = _grid_of([
        ["Class", "Count", "Count", "% of Total", "% of Total"],
        ["", "Train", "Test", "Train", "Test"],
        ["Caption", "22524", "1059", "2.04", "1.77"],
        ["Footnote", "6318", "345", "0.60", "0.31"],
    ])
    assert grid.columns == [
        "Class", "Count / Train", "Count / Test", "% of Total / Train", "% of Total / Test"]
    assert grid.rows == [
        ["Caption", "22524", "1059", "2.04", "1.77"], ["Footnote", "6318", "345", "0.60", "0.31"]]


def test_a_row_of_years_heads_its_columns_when_other_figures_follow() -> None:
    grid = _grid_of([["Region", "Revenue", "Revenue"], ["", "2023", "2024"], ["North", "10", "12"]])
    assert grid.columns == ["Region", "Revenue / 2023", "Revenue / 2024"]
    assert grid.rows == [["North", "10", "12"]]
    years_first = _grid_of([["Year", "2023", "2024"], ["Sales", "10", "12"]])
    assert (years_first.columns, years_first.rows) == (["Year", "2023", "2024"], [["Sales", "10", "12"]])


def test_rows_of_years_with_no_other_figures_are_data() -> None:
    rows = [["Name", "Born", "Died"], ["Ada", "1815", "1852"], ["Alan", "1912", "1954"]]
    grid = _grid_of(rows)
    assert (grid.columns, grid.rows) == (rows[0], rows[1:])


def test_a_table_whose_first_row_is_numeric_has_no_header_row() -> None:
    # The rows above the first half-numeric row are the header: none above row 0.
    grid = _grid_of([["12", "7.5"], ["14", "8.1"]])
    assert (grid.columns, grid.rows) == (["col_0", "col_1"], [["12", "7.5"], ["14", "8.1"]])


def test_measured_quantities_are_figures_so_a_deep_header_above_them_is_kept() -> None:
    rows = [
        ["", "SENSITIVITY-EC50 VALUES", "SENSITIVITY-EC50 VALUES"],
        ["GROWTH STAGE OF", "ZEOCIN", "CONTROL"],
        ["ASSAY REAGENT", "TREATED", "CELLS"],
        ["Lag Phase", "1.445 ppm ZnSO4", "1.580 ppm ZnSO4"],
        ["Stationary phase", "0.426 ppm ZnSO4", "0.457 ppm ZnSO4"],
    ]
    grid = _grid_of(rows)
    assert grid.columns == ["GROWTH STAGE OF / ASSAY REAGENT", "SENSITIVITY-EC50 VALUES / ZEOCIN / TREATED",
                            "SENSITIVITY-EC50 VALUES / CONTROL / CELLS"]
    assert grid.rows == rows[3:]


@pytest.mark.parametrize(
    ("value", "figure"),
    [("7,015", True), ("84-89", True), ("4.68 (2.22–9.87)", True), ("45.8 %", True), ("135 kA", True),
     ("1.445 ppm ZnSO4", True), ("R50", False), ("v5x6", False), ("n = 12", False),
     ("2 x 136V AC UPS 1 x 137V AC normal", False), ("Page 1 of 10", False), ("Total", False)],
)
def test_what_counts_as_a_figure(value, figure) -> None:
    assert _is_figure(value) is figure


@pytest.mark.parametrize(
    "rows",
    [
        [["Name", "Field"], ["Ada", "Math"], ["Alan", "CS"]],  # no numeric column: one header row
        [["Name", "Year"], ["Ada", "1843"]],  # the usual table
        [["Name", "Note"], ["Total", ""], ["Ada", "x"]],  # a text row over text columns is data
    ],
)
def test_only_the_first_row_is_header_without_numeric_evidence(rows) -> None:
    grid = _grid_of(rows)
    assert grid.columns == rows[0]
    assert grid.rows == [row for row in rows[1:] if any(row)]


def test_flags_win_over_inference() -> None:
    cells = [_cell(0, 0, "A", column_header=True), _cell(0, 1, "B", column_header=True),
             _cell(1, 0, "sub"), _cell(1, 1, ""), _cell(2, 0, "x"), _cell(2, 1, "3")]
    grid = build_grid(cells)
    assert (grid.columns, grid.rows) == (["A", "B"], [["sub", ""], ["x", "3"]])


def test_a_deep_header_without_flags_names_every_column() -> None:
    # Six header rows (a title row, groups, sub-groups, units...) above the first row of figures:
    # every column gets the names of all of them (issue 18: once col_0 ... col_3).
    rows = [
        ["Crop trial 2023", "Crop trial 2023", "Crop trial 2023", "Crop trial 2023"],
        ["Item", "Fresh weight", "Fresh weight", "Dry weight"],
        ["", "Whole plant", "Edible part", "Whole plant"],
        ["", "mean", "mean", "mean"],
        ["", "(g)", "(g)", "(g)"],
        ["", "n = 12", "n = 12", "n = 12"],
        ["Lettuce", "412.5", "26.2", "21.7"],
        ["Spinach", "198.0", "120.4", "15.2"],
    ]
    grid = _grid_of(rows)
    assert grid.columns[2] == "Crop trial 2023 / Fresh weight / Edible part / mean / (g) / n = 12"
    assert grid.columns[0] == "Crop trial 2023 / Item"
    assert grid.rows == rows[6:]


def test_the_first_half_numeric_row_ends_the_header_and_a_late_one_leaves_row_0_alone() -> None:
    rows = [["Item", "Unit", "Average", "Peak"], ["Milk", "kg", "7,015", "7,900"], ["Eggs", "n", "25", "30"]]
    assert _grid_of(rows).columns == rows[0]  # the "Milk" row: 2 of its 4 cells are numbers, data
    rows = [["H"], *[[f"text {i}"] for i in range(7)], ["12"]]  # the numeric row comes too late
    assert _grid_of(rows).columns == ["H"]


def test_header_inference_off_leaves_unflagged_tables_without_header() -> None:
    cells = [_cell(0, 0, "Name"), _cell(0, 1, "Year"), _cell(1, 0, "Ada"), _cell(1, 1, "1843")]
    grid = build_grid(cells, infer_header=False)
    assert (grid.columns, grid.rows) == (["col_0", "col_1"], [["Name", "Year"], ["Ada", "1843"]])


def test_a_rows_label_is_its_row_header_cells_else_its_first_column() -> None:
    cells = [_cell(0, 0, "Q"), _cell(0, 1, "Region"), _cell(0, 2, "Sales"),
             _cell(1, 0, "Q1"), _cell(1, 1, "North", row_header=True), _cell(1, 2, "10")]
    grid = build_grid(cells)
    assert grid.label_columns == [1] and grid.label(grid.rows[0]) == "North"
    plain = _grid_of([["Name", "Year"], ["Ada", "1843"]])
    assert plain.label_columns == [0] and plain.label(plain.rows[0]) == "Ada"


# --- row renderings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "first", "second"),
    [
        ("row_record", PEOPLE_RECORDS[0], PEOPLE_RECORDS[1]),
        ("pipe", "Name | Year | Field\nAda | 1843 | Math", "Name | Year | Field\nAlan | 1936 | CS"),
        ("markdown", "| Name | Year | Field |\n|---|---|---|\n| Ada | 1843 | Math |",
         "| Name | Year | Field |\n|---|---|---|\n| Alan | 1936 | CS |"),
        ("labelled", "Name\nAda: Year=1843; Field=Math", "Alan: Year=1936; Field=CS"),
    ],
)
def test_row_renderings(make_block, fmt, first, second):
    blocks = [make_block("", "table", table=table_dict(PEOPLE))]
    result = run_engine(blocks, table_rows_per_chunk=1, generate_schema_chunks=False, table_chunk_format=fmt)
    assert [c.text for c in result.chunks[:2]] == [first, second]


def test_markdown_cells_escape_pipes_and_labelled_rows_without_label_say_their_number(make_block):
    rows = [["Key", "Value"], ["a|b", "1"], ["", "2"]]
    blocks = [make_block("", "table", table=table_dict(rows, flag_header=True))]
    markdown = run_engine(blocks, generate_schema_chunks=False, table_chunk_format="markdown")
    assert markdown.chunks[0].text.splitlines()[2] == "| a\\|b | 1 |"
    labelled = run_engine(blocks, generate_schema_chunks=False, table_chunk_format="labelled")
    assert labelled.chunks[0].text == "Key\na|b: Value=1\nRow 2: Value=2"


def test_names_and_values_holding_format_characters_are_written_as_given(make_block):
    # Rows are written through a %-format template of the column names: a % or brace in a name
    # or a value is text, never a field.
    rows = [["Share %", "{Key}", "Note %s"], ["12.5%", "{x}", "100%s"]]
    blocks = [make_block("", "table", table=table_dict(rows, flag_header=True))]
    record = run_engine(blocks, generate_schema_chunks=False)
    assert record.chunks[0].text == "Row 1: Share %=12.5%; {Key}={x}; Note %s=100%s"
    labelled = run_engine(blocks, generate_schema_chunks=False, table_chunk_format="labelled")
    assert labelled.chunks[0].text == "Share %\n12.5%: {Key}={x}; Note %s=100%s"


# --- table titles ---------------------------------------------------------------------------------


def test_a_table_n_paragraph_after_the_table_titles_every_chunk_of_it(make_block):
    # The legend after the table (a paragraph, not a caption) opens the first row chunk and is
    # repeated on the later row chunks and the schema chunk, which comes after the rows.
    legend = "Table 2: Structure results on PubTabNet (PTN) and FinTabNet (FTN)."
    rows = [["Dataset", "TEDS"], ["PTN", "96.5"], ["FTN", "95.1"], ["PTN+FTN", "94.0"]]
    table = table_dict(rows, flag_header=True)
    blocks = [make_block(words(30, "before")), make_block("", "table", table=table),
              make_block(legend), make_block(words(30, "after"))]
    result = run_engine(blocks, table_titles=True, table_rows_per_chunk=2, table_chunk_format="pipe")
    assert [(c.chunk_type, c.text, c.block_ids) for c in result.chunks] == [
        ("section", words(30, "before"), ["b1"]),
        ("table", f"{legend}\nDataset | TEDS\nPTN | 96.5\nFTN | 95.1", ["b2", "b3"]),
        ("table", f"{legend}\nDataset | TEDS\nPTN+FTN | 94.0", ["b2"]),
        ("table_schema", f"{legend}\nTable schema: 3 data rows, 2 columns.\nColumns: Dataset (string, "
                         "0% null); TEDS (number, 0% null)\nSample rows:\nDataset | TEDS\nPTN | 96.5\n"
                         "FTN | 95.1\nPTN+FTN | 94.0", ["b2"]),
        ("section", words(30, "after"), ["b4"]),
    ]
    metas = [{k: c.metadata.get(k) for k in ("title_block_id", "title_repeated", "caption_block_id")}
             for c in result.chunks[1:4]]
    assert metas == [{"title_block_id": "b3", "title_repeated": None, "caption_block_id": "b3"},
                     {"title_block_id": "b3", "title_repeated": True, "caption_block_id": None},
                     {"title_block_id": "b3", "title_repeated": True, "caption_block_id": None}]


def test_without_table_titles_a_table_n_paragraph_stays_prose(make_block):
    blocks = [make_block("", "table", table=table_dict([["K"], ["v"]])), make_block("Table 2: The legend.")]
    result = run_engine(blocks, generate_schema_chunks=False)
    assert [(c.chunk_type, c.block_ids) for c in result.chunks] == [("table", ["b1"]), ("section", ["b2"])]


@pytest.mark.parametrize(
    ("text", "is_title"),
    [
        ("Table 2: Structure results", True), ("TABLE 3 Distribution of cases", True),
        ("Table S1. Primers", True),
        ("Table 2 shows the results of the survey.", False), ("Tables 2 and 3 list the sites.", False),
    ],
)
def test_which_paragraph_names_a_table(make_block, text, is_title):
    blocks = [make_block(text), make_block("", "table", table=table_dict([["K"], ["v"]]))]
    result = run_engine(blocks, table_titles=True, generate_schema_chunks=False)
    assert (result.chunks[0].block_ids == ["b1", "b2"]) is is_title


def test_a_figure_caption_next_to_a_table_is_not_its_title(make_block):
    blocks = [make_block("Figure 3: The plant.", "caption"),
              make_block("", "table", table=table_dict([["K"], ["v"]]))]
    result = run_engine(blocks, table_titles=True, generate_schema_chunks=False)
    assert [c.block_ids for c in result.chunks] == [["b1"], ["b2"]]


def test_strict_schema_chunk_drops_sample_rows_instead_of_being_cut(make_block):
    # issue 18: a caption attached after the schema was sized made it too long; the fit stage cut
    # it, leaving a piece of one sample row without its header line ("sample_rows: 5" on both).
    rows = [["Month", "Output", "Notes"], *[[f"M{i}", str(1000 + i), words(4, f"n{i}")] for i in range(8)]]
    blocks = [make_block("Table 1: " + words(12, "caption"), "caption"),
              make_block("", "table", table=table_dict(rows, flag_header=True))]
    result = run_engine(blocks, max_tokens=80, table_chunk_format="pipe", strict_max_tokens=True)
    schemas = [c for c in result.chunks if c.chunk_type == "table_schema"]
    assert len(schemas) == 1
    shown = schemas[0].metadata["sample_rows"]
    assert 0 < shown < 5 and schemas[0].text.count("\nM") == shown + 1  # the header line "Month | ..." too
    assert "Month | Output | Notes\nM0 | 1000" in schemas[0].text
    assert all(c.token_count <= 80 for c in result.chunks)


def test_later_chunks_repeat_the_titles_first_sentence_only(make_block):
    title = "Table 1: Crop yields. Yields are means of three plots, measured after harvest in 2023."
    rows = [["Crop", "Yield"], ["Wheat", "7.1"], ["Barley", "6.2"]]
    blocks = [make_block(title, "caption"), make_block("", "table", table=table_dict(rows, flag_header=True))]
    result = run_engine(blocks, table_titles=True, table_rows_per_chunk=1, generate_schema_chunks=False,
                        table_chunk_format="labelled")
    assert [c.text for c in result.chunks] == [
        f"{title}\nCrop\nWheat: Yield=7.1", "Table 1: Crop yields.\nBarley: Yield=6.2"]


def test_a_paragraph_introducing_a_table_is_its_title(make_block):
    rows = [["Food", "Calories"], ["Leaves", "50"], ["Berries", "150"]]
    blocks = [make_block("Here are things a duck could eat:"),
              make_block("", "table", table=table_dict(rows, flag_header=True))]
    result = run_engine(blocks, table_titles=True, generate_schema_chunks=False,
                        table_chunk_format="labelled")
    text = "Here are things a duck could eat:\nFood\nLeaves: Calories=50\nBerries: Calories=150"
    assert view(result) == [("table", text, ["b1", "b2"], [1])]


def test_labelled_rows_write_a_spanning_header_once(make_block):
    cells = [
        {"row_index": 0, "col_index": 0, "text": "Class", "column_header": True},
        {"row_index": 0, "col_index": 1, "text": "Share", "col_span": 2, "column_header": True},
        {"row_index": 1, "col_index": 1, "text": "Train", "column_header": True},
        {"row_index": 1, "col_index": 2, "text": "Test", "column_header": True},
        {"row_index": 2, "col_index": 0, "text": "Text"}, {"row_index": 2, "col_index": 1, "text": "45.8"},
        {"row_index": 2, "col_index": 2, "text": "49.3"},
    ]
    blocks = [make_block("", "table", table={"n_rows": 3, "n_cols": 3, "cells": cells})]
    result = run_engine(blocks, generate_schema_chunks=False, table_chunk_format="labelled")
    assert result.chunks[0].text == "Class\nText: Share: Train=45.8, Test=49.3"


def test_labelled_rows_keep_the_label_columns_name_without_a_schema_chunk(make_block):
    # the rows start with the label's text, never its column's name: the first batch of each
    # band says it once (found by the tokenizer property tests: a spreadsheet's one-column
    # tables lost their header cell, "Rated system voltage", with the recommended settings)
    one_column = table_dict([["Rated system voltage"], ["Rated system frequency"], ["No. of phases"]])
    blocks = [make_block("", "table", table=one_column)]
    result = run_engine(blocks, generate_schema_chunks=False, table_chunk_format="labelled")
    assert result.chunks[0].text == "Rated system voltage\nRated system frequency: \nNo. of phases: "
    # repeated on no later batch; an unnamed label column adds no line
    batches = run_engine([make_block("", "table", table=table_dict(PEOPLE))], generate_schema_chunks=False,
                         table_chunk_format="labelled", table_rows_per_chunk=2)
    assert [c.text.splitlines()[0] for c in batches.chunks] == ["Name", "Grace: Year=; Field=Navy",
                                                                "Barbara: Year=1974; Field=CS"]
    unnamed = table_dict([["", "Year"], ["Ada", "1843"]])
    result = run_engine([make_block("", "table", table=unnamed)], generate_schema_chunks=False,
                        table_chunk_format="labelled")
    assert result.chunks[0].text == "Ada: Year=1843"


def test_every_band_of_a_wide_labelled_table_names_its_label_column(make_block):
    rows = [["Key", *[f"c{i}" for i in range(1, 30)]], ["k1", *[str(i) for i in range(1, 30)]]]
    blocks = [make_block("", "table", table=table_dict(rows))]
    result = run_engine(blocks, generate_schema_chunks=False, table_chunk_format="labelled")
    assert len(result.chunks) == 3
    assert all(c.text.startswith("Key\nk1: ") for c in result.chunks)


def test_a_column_repeating_one_mark_does_not_label_the_rows() -> None:
    grid = _grid_of([["", "Group", "Funded"], ["x", "Children", "yes"], ["x", "Women", "no"]])
    assert grid.label_columns == [1] and grid.label(grid.rows[0]) == "Children"


def test_consecutive_small_tables_are_packed_when_asked(make_block):
    labels = table_dict([["Item"], ["Rated voltage"], ["Frequency"]], flag_header=True)
    values = table_dict([["Value"], ["130 kV"], ["50 Hz"]], flag_header=True)
    big = table_dict([["K", "V"], *[[f"k{i}", str(i)] for i in range(40)]], flag_header=True)
    blocks = [make_block("", "table", table=labels), make_block("", "table", table=values),
              make_block("A paragraph between."), make_block("", "table", table=big),
              make_block("", "table", table=labels)]
    packed = run_engine(blocks, pack_tables=True, generate_schema_chunks=False, max_tokens=60,
                        table_chunk_format="pipe")
    first = packed.chunks[0]
    assert (first.block_ids, first.metadata["table_block_ids"]) == (["b1", "b2"], ["b1", "b2"])
    assert first.text == "Item\nRated voltage\nFrequency\n\nValue\n130 kV\n50 Hz"
    assert [c.block_ids for c in packed.chunks[1:2]] == [["b3"]]
    assert all(c.block_ids == ["b4"] for c in packed.chunks[2:-1]) and packed.chunks[-1].block_ids == ["b5"]
    unpacked = run_engine(blocks, generate_schema_chunks=False, max_tokens=60, table_chunk_format="pipe")
    assert [c.block_ids for c in unpacked.chunks[:2]] == [["b1"], ["b2"]]
