"""Tables as financial filings and office documents arrive from a converter (docs/chunking.md,
"Tables from filings and office documents"): signs in cells of their own joined to their figures,
a spanning header said once per row, a table emitted twice kept once, a list converted as a
table read as a list.

The document cases come from ``tests/fixtures/filing_tables/`` (synthetic: the shapes a docling
conversion of a 10-K gives, every name and figure invented; see the README there).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longparser.tables import build_grid, join_signs, list_items, redundant_columns
from schemas import TableCell
from tests.unit.engine_helpers import run_engine, table_dict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "filing_tables"


def _cell(row: int, col: int, text: str, **extra: Any) -> TableCell:
    return {"row_index": row, "col_index": col, "row_span": 1, "col_span": 1, "text": text,  # type: ignore[return-value]
            "column_header": False, "row_header": False, **extra}


def _grid_of(rows: list[list[str]], header_rows: int = 0):
    return build_grid([_cell(r, c, text, column_header=r < header_rows)
                       for r, row in enumerate(rows) for c, text in enumerate(row)])


def _filing() -> list[dict[str, Any]]:
    return json.loads((FIXTURES / "synthetic_10k_tables.json").read_text(encoding="utf-8"))["blocks"]


# --- 1. signs in cells of their own ---------------------------------------------------------------

def test_currency_parenthesis_and_percent_cells_join_their_figures() -> None:
    rows, emptied = join_signs([["Revenue", "$", "1,234", ""], ["Loss", "", "(2,070", ")"],
                                ["Margin", "", "12.5", "%"], ["Charges", "$", "—", ""]])
    assert rows == [["Revenue", "", "$1,234", ""], ["Loss", "", "(2,070)", ""],
                    ["Margin", "", "12.5%", ""], ["Charges", "", "$—", ""]]
    assert emptied == {1, 3}


def test_a_sign_with_no_figure_beside_it_stays() -> None:
    rows = [["Currency", "$", "US dollar"], ["Share", "Total", "%"], ["Note", "(", "see below"],
            ["Loss", "(2,070)", ")"], ["Rate", "12.5%", "%"], ["Loss", "2,070", ")"], ["", "2024", "%"]]
    assert join_signs(rows) == (rows, set())


def test_an_opening_parenthesis_in_its_own_cell_joins_too() -> None:
    assert join_signs([["Loss", "(", "2,070", ")"]])[0] == [["Loss", "", "(2,070)", ""]]
    assert join_signs([["Change", "(12.5", "%)"]])[0] == [["Change", "(12.5%)", ""]]


def test_a_column_a_join_emptied_is_dropped_only_when_it_says_nothing_of_its_own() -> None:
    rows = [["", "2024", "2024", "2024"], ["Revenue", "", "$1,234", ""], ["Loss", "", "(2,070)", ""]]
    assert redundant_columns(rows, {1, 3}) == {1, 3}
    kept = [["", "Sign", "2024", "2024"], ["Revenue", "", "$1,234", ""]]  # a header of its own
    assert redundant_columns(kept, {1, 3}) == {3}


def test_an_empty_column_no_join_touched_stays() -> None:
    grid = _grid_of([["Name", "Notes"], ["Ada", ""], ["Alan", ""]])
    assert grid.columns == ["Name", "Notes"]


def test_a_filing_table_reads_one_figure_per_year_under_its_spanning_header() -> None:
    cells = [_cell(0, 0, "", column_header=True),
             _cell(0, 1, "Year ended December 31,", col_span=6, column_header=True),
             _cell(1, 0, "", column_header=True), _cell(1, 1, "2024", col_span=3, column_header=True),
             _cell(1, 4, "2023", col_span=3, column_header=True)]
    for r, row in enumerate([["Revenue", "$", "1,234", "", "$", "1,100", ""],
                             ["Loss", "", "(2,070", ")", "", "(1,500", ")"]], start=2):
        cells += [_cell(r, c, text) for c, text in enumerate(row)]
    grid = build_grid(cells)
    assert grid.columns == ["col_0", "Year ended December 31, / 2024", "Year ended December 31, / 2023"]
    assert grid.rows == [["Revenue", "$1,234", "$1,100"], ["Loss", "(2,070)", "(1,500)"]]


def test_joined_signs_let_an_unflagged_header_be_found() -> None:
    # A lone "$" is no figure: before the join this row was not half numeric, and the header
    # ran on into the data.
    grid = _grid_of([["", "2024", "2024", "2023", "2023"], ["Revenue", "$", "1,234", "$", "1,100"],
                     ["Costs", "$", "800", "$", "700"]])
    assert grid.columns == ["col_0", "2024", "2023"]
    assert grid.rows == [["Revenue", "$1,234", "$1,100"], ["Costs", "$800", "$700"]]


def test_label_columns_are_renumbered_when_a_column_is_dropped() -> None:
    cells = [_cell(0, 0, "$", row_header=False), _cell(0, 1, "5"), _cell(0, 2, "Revenue", row_header=True),
             _cell(1, 0, "$", row_header=False), _cell(1, 1, "7"), _cell(1, 2, "Costs", row_header=True)]
    grid = build_grid(cells, infer_header=False)
    assert grid.rows == [["$5", "Revenue"], ["$7", "Costs"]]
    assert grid.label_columns == [1]


# --- 2. a spanning header said once per row -------------------------------------------------------

@pytest.mark.parametrize(("fmt", "expected"), [
    ("labelled", "Revenue: Year ended: 2024=$1,234, 2023=$1,100"),
    ("row_record", "Row 1: Item=Revenue; Year ended: 2024=$1,234, 2023=$1,100"),
])
def test_a_spanning_header_is_written_once_per_row(make_block, fmt: str, expected: str) -> None:
    rows = [["Item", "Year ended", "Year ended"], ["", "2024", "2023"], ["Revenue", "$1,234", "$1,100"]]
    table = table_dict(rows)
    for cell in table["cells"]:
        cell["column_header"] = cell["row_index"] < 2
    result = run_engine([make_block("", "table", table=table)], generate_schema_chunks=False,
                        table_chunk_format=fmt)
    assert result.chunks[0].text.splitlines()[-1] == expected


def test_columns_of_one_name_say_it_once(make_block) -> None:
    rows = [["Class", "% of Total", "% of Total", "Count"], ["Caption", "2.04", "1.77", "22524"]]
    result = run_engine([make_block("", "table", table=table_dict(rows, flag_header=True))],
                        generate_schema_chunks=False, table_chunk_format="labelled")
    assert result.chunks[0].text.splitlines()[-1] == "Caption: % of Total=2.04, 1.77; Count=22524"


def test_unnamed_columns_are_not_said_once(make_block) -> None:
    rows = [["Name", "", ""], ["Ada", "x", "y"]]
    result = run_engine([make_block("", "table", table=table_dict(rows, flag_header=True))],
                        generate_schema_chunks=False)
    assert result.chunks[0].text == "Row 1: Name=Ada; col_1=x; col_2=y"


def test_identical_adjacent_columns_collapse() -> None:
    grid = _grid_of([["Segment", "Segment", "Net sales"], ["Devices", "Devices", "$2,910"],
                     ["Services", "Services", "$1,218"]], header_rows=1)
    assert grid.columns == ["Segment", "Net sales"]
    assert grid.rows == [["Devices", "$2,910"], ["Services", "$1,218"]]


def test_columns_equal_in_the_header_only_stay() -> None:
    grid = _grid_of([["Score", "Score"], ["1", "2"]], header_rows=1)
    assert grid.columns == ["Score", "Score"] and grid.rows == [["1", "2"]]


# --- 3. a table emitted twice ---------------------------------------------------------------------

def test_a_table_emitted_twice_is_chunked_once_and_names_both_blocks(make_block) -> None:
    rows = [["Name", "Year"], ["Ada", "1843"]]
    blocks = [make_block("", "table", table=table_dict(rows)), make_block("A caption between.", "caption"),
              make_block("", "table", table=table_dict(rows))]
    result = run_engine(blocks, generate_schema_chunks=False)
    tables = [c for c in result.chunks if c.chunk_type == "table"]
    assert [c.block_ids for c in tables] == [["b1", "b2"]]  # the table and its caption, once
    assert tables[0].metadata["duplicate_block_ids"] == ["b3"]
    assert result.stats.blocks_excluded == {"duplicate_table": 1}


def test_packed_tables_name_every_table_emitted_twice(make_block) -> None:
    small = table_dict([["Item"], ["Rated voltage"]], flag_header=True)
    other = table_dict([["Value"], ["130 kV"]], flag_header=True)
    blocks = [make_block("", "table", table=small), make_block("", "table", table=other),
              make_block("", "table", table=other)]
    result = run_engine(blocks, pack_tables=True, generate_schema_chunks=False, table_chunk_format="pipe")
    named = [(c.block_ids, c.metadata["duplicate_block_ids"]) for c in result.chunks]
    assert named == [(["b1", "b2"], ["b3"])]


def test_the_same_table_after_another_table_or_in_another_section_stays(make_block) -> None:
    same = [["Name", "Year"], ["Ada", "1843"]]
    other = [["Key", "Value"], ["k", "v"]]
    blocks = [make_block("", "table", table=table_dict(same)),
              make_block("", "table", table=table_dict(other)),
              make_block("", "table", table=table_dict(same)),
              make_block("", "table", table=table_dict(same), path=("Elsewhere",))]
    result = run_engine(blocks, generate_schema_chunks=False)
    assert [c.block_ids for c in result.chunks] == [["b1"], ["b2"], ["b3"], ["b4"]]
    assert result.stats.blocks_excluded == {}
    assert all("duplicate_block_ids" not in c.metadata for c in result.chunks)


def test_tables_that_differ_in_one_cell_are_both_kept(make_block) -> None:
    blocks = [make_block("", "table", table=table_dict([["Name", "Year"], ["Ada", "1843"]])),
              make_block("", "table", table=table_dict([["Name", "Year"], ["Ada", "1844"]]))]
    assert len(run_engine(blocks, generate_schema_chunks=False).chunks) == 2


# --- 4. a list converted as a table ---------------------------------------------------------------

def test_a_two_column_table_of_bullets_is_a_list() -> None:
    assert list_items([["•", "Customers are few."], ["•", "Supply may be late."]]) == [
        "• Customers are few.", "• Supply may be late."]


def test_a_two_column_table_numbered_1_2_3_is_a_list() -> None:
    assert list_items([["1", "Install it"], ["2", "Run it"], ["", "and wait"]]) == [
        "1 Install it", "2 Run it", "and wait"]


def test_a_one_column_table_of_marked_items_is_a_list_its_first_row_may_be_unmarked() -> None:
    rows = [["Factors:"], ["1. Rates rise."], ["2. Demand slows."]]
    assert list_items(rows) == ["Factors:", "1. Rates rise.", "2. Demand slows."]


@pytest.mark.parametrize("rows", [
    [["1", "2,345"], ["2", "3,456"]],  # numbered figures: a table
    [["3", "Ada"], ["7", "Alan"]],  # numbers out of order: an id column
    [["Ada"], ["Alan"], ["Grace"]],  # names without markers
    [["• One item only"]],  # one item
    [["- 5.3"], ["- 2.1"]],  # signed figures, not items
    [["•", "a", "b"], ["•", "c", "d"]],  # three columns
])
def test_tables_that_are_not_lists(rows: list[list[str]]) -> None:
    assert list_items(rows) is None


def test_a_list_converted_as_a_table_is_chunked_as_a_list(make_block) -> None:
    rows = [["•", "Customers are few."], ["•", "Supply may be late."]]
    blocks = [make_block("Principal risks:"), make_block("", "table", table=table_dict(rows))]
    result = run_engine(blocks)
    assert [(c.chunk_type, c.text, c.block_ids) for c in result.chunks] == [
        ("list", "Principal risks:\n• Customers are few.\n• Supply may be late.", ["b1", "b2"])]


# --- the synthetic filing, end to end --------------------------------------------------------------

def test_the_synthetic_filing_reads_as_its_reader_would() -> None:
    result = run_engine(_filing(), table_chunk_format="labelled", generate_schema_chunks=False,
                        table_titles=True)
    texts = {tuple(c.block_ids): c for c in result.chunks}
    income = texts[("c1", "t1")]
    assert income.text.splitlines()[1:] == [
        "Total revenue: Year ended December 31,: 2024=$4,128, 2023=$3,902",
        "Cost of revenue: Year ended December 31,: 2024=2,544, 2023=2,311",
        "Operating loss: Year ended December 31,: 2024=(2,070), 2023=(1,486)",
        "Gross margin: Year ended December 31,: 2024=38.4%, 2023=40.8%",
        "Impairment charges: Year ended December 31,: 2024=$—, 2023=$215",
    ]
    assert income.metadata["duplicate_block_ids"] == ["t1-again"]
    assert texts[("t2",)].text == ("Segment\nDevices: Net sales=$2,910; Operating income=$412\n"
                                   "Services: Net sales=$1,218; Operating income=$388")
    risks = texts[("p3", "t3", "t4")]
    assert risks.chunk_type == "list" and risks.text.splitlines()[1] == (
        "• Our revenue depends on a small number of large customers.")
    assert result.stats.blocks_excluded == {"duplicate_table": 1}
