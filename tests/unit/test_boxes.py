"""Provenance for citations (docs/chunking.md, "Provenance"): a chunk's boxes are its primary
blocks' boxes merged per page, and a piece of a cut block says which characters of the block's
text it holds (``metadata.block_parts``)."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from longparser.boxes import keep_box, merged_boxes
from longparser.prepare import Rec
from longparser.resources import Resources
from schemas import Chunk
from tests.counters import CallableCounter
from tests.unit.engine_helpers import run_engine, table_dict, words

STRICT = {"strict_max_tokens": True}


def boxed(block: dict[str, Any], x0: float, y0: float, x1: float, y1: float, **extra: Any) -> dict[str, Any]:
    """``block`` with a box (and ``coord_origin`` when given)."""
    block["provenance"]["bbox"] = {"x0": x0, "y0": y0, "x1": x1, "y1": y1, **extra}
    return block


def rec(page: int | None, bbox: dict[str, Any] | None) -> Rec:
    record = Rec(0, "b", "paragraph", "text", page, (), 1.0, None)
    if bbox is not None:
        keep_box(record, bbox)
    return record


def box(page: int | None, l: float, t: float, r: float, b: float, origin: str = "TOPLEFT") -> dict[str, Any]:  # noqa: E741
    return {"page": page, "l": l, "t": t, "r": r, "b": b, "coord_origin": origin}


# --- the merge ------------------------------------------------------------------------------


def test_one_block_gives_its_own_box_unchanged() -> None:
    assert merged_boxes([rec(2, {"x0": 72.5, "y0": 100.25, "x1": 540.0, "y1": 130.0})]) == [
        box(2, 72.5, 100.25, 540.0, 130.0)]


def test_boxes_on_one_page_merge_into_the_rectangle_that_holds_them_all() -> None:
    recs = [rec(1, {"x0": 300, "y0": 100, "x1": 550, "y1": 200}),  # right column
            rec(1, {"x0": 50, "y0": 600, "x1": 290, "y1": 700})]   # left column, lower down
    assert merged_boxes(recs) == [box(1, 50, 100, 550, 700)]


def test_one_box_per_page_in_page_order() -> None:
    recs = [rec(3, {"x0": 50, "y0": 10, "x1": 60, "y1": 20}), rec(2, {"x0": 1, "y0": 2, "x1": 3, "y1": 4}),
            rec(3, {"x0": 40, "y0": 30, "x1": 55, "y1": 35})]
    assert merged_boxes(recs) == [box(2, 1, 2, 3, 4), box(3, 40, 10, 60, 35)]


def test_bottom_left_boxes_keep_their_origin_top_above_bottom() -> None:
    # a PDF's own coordinates: y grows upwards, so the top edge has the larger y
    recs = [rec(1, {"x0": 50, "y0": 700, "x1": 500, "y1": 680, "coord_origin": "BOTTOMLEFT"}),
            rec(1, {"x0": 60, "y0": 670, "x1": 510, "y1": 600, "coord_origin": "BOTTOMLEFT"})]
    assert merged_boxes(recs) == [box(1, 50, 700, 510, 600, "BOTTOMLEFT")]


def test_origins_are_never_mixed_in_one_rectangle() -> None:
    recs = [rec(1, {"x0": 50, "y0": 700, "x1": 500, "y1": 680, "coord_origin": "BOTTOMLEFT"}),
            rec(1, {"x0": 50, "y0": 100, "x1": 500, "y1": 120})]
    assert merged_boxes(recs) == [box(1, 50, 700, 500, 680, "BOTTOMLEFT"), box(1, 50, 100, 500, 120)]


def test_swapped_corners_are_read_as_the_same_rectangle() -> None:
    assert merged_boxes([rec(1, {"x0": 500, "y0": 120, "x1": 50, "y1": 100})]) == [box(1, 50, 100, 500, 120)]


def test_blocks_without_boxes_add_nothing_and_a_page_less_box_keeps_no_page() -> None:
    assert merged_boxes([rec(1, None), rec(2, None)]) == []
    page_less = rec(None, {"x0": 1, "y0": 2, "x1": 3, "y1": 4})
    assert merged_boxes([rec(1, None), page_less]) == [box(None, 1, 2, 3, 4)]


# --- chunks ---------------------------------------------------------------------------------


def test_a_chunk_carries_its_blocks_boxes_per_page(make_block) -> None:
    blocks = [boxed(make_block("First paragraph here.", page=1), 72, 100, 300, 130),
              boxed(make_block("Second paragraph here.", page=1), 320, 90, 540, 140),
              boxed(make_block("Third paragraph here.", page=2), 72, 60, 540, 80),
              make_block("A block without a box.", page=2)]
    (chunk,) = run_engine(blocks, max_tokens=200).chunks
    assert chunk.boxes == [box(1, 72, 90, 540, 140), box(2, 72, 60, 540, 80)]
    assert {(b["page"]) for b in chunk.boxes} <= set(chunk.page_numbers)
    assert "boxes" in chunk.model_dump() and "boxes" in chunk.model_dump_json()


def test_without_boxes_in_the_input_chunks_have_none_and_say_nothing(make_block) -> None:
    (chunk,) = run_engine([make_block("No box anywhere.")]).chunks
    assert chunk.boxes == []
    assert "boxes" not in chunk.model_dump() and '"boxes"' not in chunk.model_dump_json()
    assert Chunk.model_validate(chunk.model_dump()) == chunk  # a reader of the old shape gets []


def test_boxes_are_kept_out_of_the_text(make_block) -> None:
    (chunk,) = run_engine([boxed(make_block("Plain words.", page=4), 1.5, 2.5, 3.5, 4.5)]).chunks
    assert chunk.text == "Plain words." and chunk.embed_text is None


def test_overlap_blocks_are_not_boxed(make_block) -> None:
    blocks = [boxed(make_block(words(30, "one")), 10, 10, 100, 20),
              boxed(make_block(words(30, "two")), 10, 500, 100, 520)]
    result = run_engine(blocks, max_tokens=45, overlap_blocks=1)
    second = result.chunks[1]
    assert second.metadata["overlap_block_ids"] == ["b1"] and second.block_ids == ["b2"]
    assert second.boxes == [box(1, 10, 500, 100, 520)]


def test_a_repeated_lead_in_is_not_boxed(make_block) -> None:
    lead = boxed(make_block("The items are:"), 10, 10, 200, 20)
    items = [boxed(make_block(f"• {words(12, 'item')}", "list_item"), 20, 30 + 20 * k, 200, 45 + 20 * k)
             for k in range(4)]
    result = run_engine([lead, *items], max_tokens=40)
    later = [c for c in result.chunks if c.metadata.get("lead_in_repeated")]
    assert later
    for chunk in later:
        assert "b1" not in chunk.block_ids
        assert chunk.boxes[0]["t"] >= 30  # the items' boxes only, not the lead-in's (t=10)


def test_every_row_batch_of_a_table_carries_the_table_box(make_block) -> None:
    rows = [["Name", "Value"], *[[f"n{i}", words(4, "v")] for i in range(12)]]
    caption = boxed(make_block("Table 1: Values by name.", "caption"), 72, 90, 540, 100)
    table = boxed(make_block("", "table", table=table_dict(rows)), 72, 110, 540, 400)
    result = run_engine([caption, table], max_tokens=60, table_rows_per_chunk=4,
                        generate_schema_chunks=False)
    batches = [c for c in result.chunks if c.chunk_type == "table"]
    assert len(batches) >= 3
    assert batches[0].block_ids == ["b1", "b2"] and batches[0].boxes == [box(1, 72, 90, 540, 400)]
    for batch in batches[1:]:  # the title repeated as context: not boxed
        assert batch.block_ids == ["b2"] and batch.boxes == [box(1, 72, 110, 540, 400)]


def test_pieces_of_a_cut_block_carry_its_box_and_its_character_ranges(make_block) -> None:
    text = "  " + " ".join(f"Sentence {i} has exactly six words." for i in range(6)) + "\n"
    result = run_engine([boxed(make_block(text, page=3), 72, 100, 540, 300)], max_tokens=16, **STRICT)
    assert len(result.chunks) == 3
    for chunk in result.chunks:
        assert chunk.boxes == [box(3, 72, 100, 540, 300)]
        (part,) = chunk.metadata["block_parts"]
        assert text[part["start"] : part["end"]] == chunk.text
    spans = [(p["start"], p["end"]) for c in result.chunks for p in c.metadata["block_parts"]]
    # the text is the pieces with whitespace between them (and around them, where the text has it)
    assert spans[0][0] == 2 and spans[-1][1] == len(text) - 1
    assert all(text[end:start].isspace() for (_, end), (start, _) in pairwise(spans))


def test_a_word_cut_in_two_leaves_no_gap_between_its_ranges(make_block) -> None:
    word = "x" * 400
    by_length = Resources(model_counter=CallableCounter(lambda text: len(text) // 3 + 1, name="length"))
    result = run_engine([make_block(word)], by_length, max_tokens=40, token_counter="model", **STRICT)
    spans = [(p["start"], p["end"]) for c in result.chunks for p in c.metadata["block_parts"]]
    assert len(spans) > 1 and spans[0][0] == 0 and spans[-1][1] == len(word)
    assert all(end == start for (_, end), (start, _) in pairwise(spans))
    assert [word[s:e] for s, e in spans] == [c.text for c in result.chunks]


def test_a_table_cut_inside_its_rendered_rows_gives_no_character_ranges(make_block) -> None:
    # strict mode cuts a pipe row too long for a piece inside the text the engine rendered from
    # the cells, not inside the block's text (a table block's text is empty): such pieces name
    # their rows (row_start/row_end), never a character range of the block
    caption = make_block("Table 1: Notes by name of the person.", "caption")
    rows = [["Name", "Notes"], ["Ada", words(60, "note")]]
    table = boxed(make_block("", "table", table=table_dict(rows)), 72, 110, 540, 400)
    result = run_engine([caption, table], max_tokens=12, generate_schema_chunks=False,
                        table_chunk_format="pipe", **STRICT)
    holding = [c for c in result.chunks if "b2" in c.block_ids]
    assert len(holding) > 2
    for chunk in holding:
        assert all(p["block_id"] != "b2" for p in chunk.metadata.get("block_parts", []))
        assert chunk.boxes == [box(1, 72, 110, 540, 400)]  # the caption has no box


@pytest.mark.parametrize("origin", ["TOPLEFT", "BOTTOMLEFT"])
def test_the_block_schema_reads_a_coord_origin(make_block, origin: str) -> None:
    block = boxed(make_block("Words."), 10, 20, 30, 40, coord_origin=origin)
    (chunk,) = run_engine([block]).chunks
    assert chunk.boxes[0]["coord_origin"] == origin


def test_an_unknown_coord_origin_is_refused(make_block) -> None:
    from schemas import InputError

    with pytest.raises(InputError, match="coord_origin"):
        run_engine([boxed(make_block("Words."), 10, 20, 30, 40, coord_origin="CENTER")])


def test_a_code_line_too_long_after_its_indentation_is_cut_without_it(make_block) -> None:
    # found by the property tests: a code piece keeps its line's indentation, but when not even
    # a fragment of the line fits after it, the indentation goes with the cut (it was refused)
    text = "def f():\n    " + "x" * 60 + " = 1"
    by_length = Resources(model_counter=CallableCounter(lambda text: len(text) // 3 + 1, name="length"))
    result = run_engine([make_block(text, "code")], by_length, max_tokens=8, token_counter="model", **STRICT)
    spans = [(p["start"], p["end"]) for c in result.chunks for p in c.metadata["block_parts"]]
    assert [text[s:e] for s, e in spans] == [c.text for c in result.chunks]
    assert result.chunks[1].text.startswith("x")
    assert all(not text[end:start].strip() for (_, end), (start, _) in pairwise(spans))


def test_a_line_break_cut_leaves_the_lines_trailing_spaces_out_of_both_pieces(make_block) -> None:
    # found by the property tests: the piece before a line-break cut kept the line's trailing spaces
    text = f"{words(9)}  \t\n{words(9, 'beta')}"
    result = run_engine([make_block(text)], max_tokens=12, **STRICT)
    assert [c.text for c in result.chunks] == [words(9), words(9, "beta")]
    assert [(p["start"], p["end"]) for c in result.chunks for p in c.metadata["block_parts"]] == [
        (0, len(words(9))), (len(words(9)) + 4, len(text))]
