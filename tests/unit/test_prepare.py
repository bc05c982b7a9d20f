"""Stage prepare (plan cases B03, B08): blank, separator-only, header and footer blocks are
excluded and counted in the stats; a section interrupted by excluded blocks is rejoined.
"""

from __future__ import annotations

from typing import Any

import pytest

from longparser.prepare import exclusion_reason, is_separator
from schemas import InputError
from tests.unit.engine_helpers import run_engine, table_dict, view

# --- B03 blank and separator exclusion ------------------------------------------------------------


@pytest.mark.case("B03")
def test_B03_blank_and_separator_blocks_excluded_with_stats(make_block):
    blocks = [
        make_block("First."), make_block(""), make_block("  \n\t"), make_block("----------"),
        make_block("· · · · ·"), make_block("──────────"), make_block("___ ___ ==="),
        make_block("• • •", "list_item"), make_block("Last."),
    ]
    result = run_engine(blocks)
    assert view(result) == [("section", "First.\n\nLast.", ["b1", "b9"], [1])]
    assert result.stats.blocks_excluded == {"blank": 2, "separator": 5}
    assert result.stats.blocks_in == 9


@pytest.mark.case("B03")
@pytest.mark.parametrize(
    ("text", "expected"),
    [("-----", True), ("=== ___ ...", True), ("·•·•", True), ("┌──────┐", True), ("- - -", True),
     ("", False), ("   ", False), ("- item", False), ("1.", False), ("---a---", False)],
)
def test_B03_separator_classification(text, expected):
    assert is_separator(text) is expected


@pytest.mark.case("B03")
def test_B03_table_with_cells_but_empty_text_is_not_blank(make_block):
    blocks = [make_block("", "table", table=table_dict([["A"], ["1"]]))]
    result = run_engine(blocks, generate_schema_chunks=False)
    assert view(result) == [("table", "Row 1: A=1", ["b1"], [1])]
    assert result.stats.blocks_excluded == {}


@pytest.mark.case("B03")
def test_null_and_blank_text_are_excluded_and_counted_a_missing_text_is_refused(make_block):
    blocks = [make_block("First."), {**make_block(""), "text": None}, make_block(" \n"),
              {"block_id": "f", "type": "figure"}]
    result = run_engine(blocks)
    assert view(result) == [("section", "First.", ["b1"], [1])]
    assert result.stats.blocks_excluded == {"blank": 3}
    misnamed = {key: value for key, value in make_block("Lost.").items() if key != "text"}
    misnamed["content"] = "Lost."
    with pytest.raises(InputError, match=r"^block 1 \(id 'b4'\): text: field required \(it has 'content'\)$"):
        run_engine([blocks[0], misnamed])


# --- B08 sections and header/footer exclusion -----------------------------------------------------


def _paged(make_block) -> list[dict[str, Any]]:
    return [
        make_block("Annual Report", "header", page=1, path=[]),
        make_block("First part.", page=1, path=["A"]),
        make_block("Page 1", "footer", page=1, path=[]),
        make_block("Annual Report", "header", page=2, path=[]),
        make_block("Second part.", page=2, path=["A"]),
        make_block("Other section.", page=2, path=["B"]),
    ]


@pytest.mark.case("B08")
def test_B08_headers_footers_excluded_and_sections_rejoined(make_block):
    result = run_engine(_paged(make_block))
    assert [(c.section_path, c.text, c.block_ids, c.page_numbers) for c in result.chunks] == [
        (["A"], "First part.\n\nSecond part.", ["b2", "b5"], [1, 2]),
        (["B"], "Other section.", ["b6"], [2]),
    ]
    assert result.stats.blocks_excluded == {"header": 2, "footer": 1}


@pytest.mark.case("B08")
def test_B08_headers_footers_kept_as_content_when_config_off(make_block):
    result = run_engine(_paged(make_block), exclude_headers_footers=False)
    assert [(c.section_path, c.text, c.block_ids) for c in result.chunks] == [
        ([], "Annual Report", ["b1"]),
        (["A"], "First part.", ["b2"]),
        ([], "Page 1\n\nAnnual Report", ["b3", "b4"]),
        (["A"], "Second part.", ["b5"]),
        (["B"], "Other section.", ["b6"]),
    ]
    assert result.stats.blocks_excluded == {}


@pytest.mark.parametrize("text", ["\x84", "\x84 \x84", "\u200b", "\x00\n"])
def test_text_with_nothing_visible_is_blank(text):
    assert exclusion_reason("paragraph", text, False, True) == "blank"
