"""Minimum-size merging (plan case B05, rule 7 as corrected): a short chunk merges with a chunk
adjacent to it in reading order (previous in its section, next in its section, previous, next),
never with or across a table, never across a semantic boundary; a heading-only chunk leads the
content after it at any ``min_tokens``; an equation's type wins.

Token arithmetic (the word estimate): ``n`` words -> ``int(n * 1.33)`` tokens, e.g. 10 -> 13,
20 -> 26, 40 -> 53.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from longparser import Resources, chunk_blocks
from tests.unit.engine_helpers import run_engine, table_dict, view, words

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.case("B05")
def test_B05_short_tail_merges_into_previous_chunk_of_section(make_block):
    p1, p2, tail = words(40, "one"), words(40, "two"), words(10, "tail")
    blocks = [make_block(p1, page=1), make_block(p2, page=2), make_block(tail, page=3)]
    result = run_engine(blocks, max_tokens=60, min_tokens=20)
    assert view(result) == [
        ("section", p1, ["b1"], [1]),
        ("section", f"{p2}\n\n{tail}", ["b2", "b3"], [2, 3]),
    ]


@pytest.mark.case("B05")
def test_B05_short_head_merges_into_next_chunk_of_same_section(make_block):
    short, big = words(5, "head"), words(50, "body")
    blocks = [make_block(words(50, "prev"), path=["A"]), make_block(short, path=["B"]),
              make_block(big, path=["B"])]
    result = run_engine(blocks, max_tokens=60, min_tokens=20)
    assert view(result) == [
        ("section", words(50, "prev"), ["b1"], [1]),
        ("section", f"{short}\n\n{big}", ["b2", "b3"], [1]),
    ]
    assert result.chunks[1].section_path == ["B"]


@pytest.mark.case("B05")
def test_B05_lone_short_section_merges_into_previous_section(make_block):
    blocks = [make_block(words(30, "a"), path=["A"]), make_block("tiny", path=["B"]),
              make_block(words(30, "c"), path=["C"])]
    result = run_engine(blocks, max_tokens=60, min_tokens=20)
    assert [(c.text, c.block_ids, c.section_path) for c in result.chunks] == [
        (f"{words(30, 'a')}\n\ntiny", ["b1", "b2"], ["A"]),
        (words(30, "c"), ["b3"], ["C"]),
    ]


@pytest.mark.case("B05")
def test_B05_table_chunks_never_merge_nor_absorb_nor_let_text_across(make_block):
    # Changed with rule 7's correction: the short paragraphs before and after the table used to
    # merge across it (the outro moved ahead of the table). Nothing merges across a table now, so
    # each stays a chunk of its own, in reading order.
    blocks = [make_block("Short intro."), make_block("", "table", table=table_dict([["A"], ["1"]])),
              make_block("Short outro.")]
    result = run_engine(blocks, min_tokens=50)
    assert [(c.chunk_type, c.block_ids) for c in result.chunks] == [
        ("section", ["b1"]), ("table_schema", ["b2"]), ("table", ["b2"]), ("section", ["b3"])]
    assert result.chunks[0].text == "Short intro." and result.chunks[3].text == "Short outro."


@pytest.mark.case("B05")
def test_B05_a_short_chunk_merges_only_with_an_adjacent_one(make_block):
    # The short paragraph after the table has the table before it: it joins the next section's
    # chunk, never the prose before the table.
    blocks = [make_block(words(30, "before"), path=["A"]),
              make_block("", "table", path=["A"], table=table_dict([["K"], ["v"]])),
              make_block("Short note.", path=["A"]), make_block(words(30, "next"), path=["B"])]
    result = run_engine(blocks, min_tokens=20, generate_schema_chunks=False)
    assert [(c.chunk_type, c.block_ids, c.section_path) for c in result.chunks] == [
        ("section", ["b1"], ["A"]), ("table", ["b2"], ["A"]), ("section", ["b3", "b4"], ["B"])]


@pytest.mark.case("B05")
def test_B05_lists_take_part_in_merging(make_block):
    blocks = [make_block("- one", "list_item"), make_block("- two", "list_item"), make_block("Short tail.")]
    result = run_engine(blocks, min_tokens=20)
    assert view(result) == [("section", "- one\n- two\n\nShort tail.", ["b1", "b2", "b3"], [1])]


@pytest.mark.case("B05")
def test_B05_preference_previous_then_next_of_the_section_then_any_neighbour(make_block):
    big = words(50, "big")
    # previous of the same section first
    same_before = [make_block(big, path=["A"]), make_block("tiny", path=["A"]), make_block(big, path=["A"])]
    assert [c.block_ids for c in run_engine(same_before, max_tokens=60, min_tokens=20).chunks] == [
        ["b1", "b2"], ["b3"]]
    # next of the same section before the previous chunk of another section
    next_same = [make_block(big, path=["A"]), make_block("tiny", path=["B"]), make_block(big, path=["B"])]
    assert [c.block_ids for c in run_engine(next_same, max_tokens=60, min_tokens=20).chunks] == [
        ["b4"], ["b5", "b6"]]
    # no neighbour of its section: the previous chunk, then the next
    alone = [make_block(big, path=["A"]), make_block("tiny", path=["B"]), make_block(big, path=["C"])]
    assert [c.block_ids for c in run_engine(alone, max_tokens=60, min_tokens=20).chunks] == [
        ["b7", "b8"], ["b9"]]


@pytest.mark.case("B05")
def test_B05_merged_type_keeps_target_but_equation_wins(make_block):
    blocks = [make_block(words(40)), make_block("x = 1", "equation")]
    result = run_engine(blocks, max_tokens=60, min_tokens=20)
    assert [(c.chunk_type, c.equation_detected, c.text) for c in result.chunks] == [
        ("equation", True, f"{words(40)}\n\nx = 1")]


class _EveryBlockNewTopic:
    """A stub encoder giving neighbouring texts orthogonal vectors: a boundary before every block."""

    name, weights_sha256 = "stub", None

    def encode(self, texts):
        return np.array([[1.0, 0.0] if i % 2 == 0 else [0.0, 1.0] for i in range(len(texts))])


@pytest.mark.case("B05")
def test_B05_small_chunks_never_merge_across_a_semantic_boundary(make_block):
    """Every block a semantic boundary, all chunks under the minimum: they stay apart (before
    rule 7's correction they were merged into one chunk, undoing every boundary), and the stats
    count the boundaries between the chunks as emitted."""
    texts = [f"Sentence {i}." for i in range(50)]
    result = run_engine([make_block(t) for t in texts], Resources(encoder=_EveryBlockNewTopic()),
                        use_semantic_chunking=True, min_tokens=400, max_tokens=500)
    assert [c.block_ids for c in result.chunks] == [[f"b{i}"] for i in range(1, 51)]
    assert (result.stats.semantic.boundaries, result.stats.semantic.boundaries_found) == (49, 49)


@pytest.mark.case("B05")
def test_B05_long_run_of_small_sections_merges_into_one(make_block):
    """A long run of one-block sections, all under the minimum, each merging into the one before
    it: one chunk, in order (and in linear time: merged drafts are never walked again)."""
    texts = [f"Sentence {i}." for i in range(2000)]
    result = run_engine([make_block(t, path=[f"S{i}"]) for i, t in enumerate(texts)], min_tokens=10_000,
                        max_tokens=20_000)
    assert view(result) == [("section", "\n\n".join(texts), [f"b{i}" for i in range(1, 2001)], [1])]


def test_semantic_boundaries_in_stats_are_those_between_emitted_chunks(make_block):
    """Boundaries found that a heading merge undoes are not counted as boundaries; overlap never
    crosses one."""
    blocks = [make_block("Topic one, first words."), make_block("Topic one, more words."),
              make_block("Second topic", "heading"), make_block("Topic two, its words.")]
    result = run_engine(blocks, Resources(encoder=_EveryBlockNewTopic()), use_semantic_chunking=True,
                        min_tokens=0, overlap_blocks=1)
    assert [c.block_ids for c in result.chunks] == [["b1"], ["b2"], ["b3", "b4"]]
    assert (result.stats.semantic.boundaries, result.stats.semantic.boundaries_found) == (2, 3)
    assert not any(c.overlap_with_previous for c in result.chunks)


# --- headings lead what they head -------------------------------------------------------------


def _heading(make_block, text, path, **kw):
    return make_block(text, "heading", path=path, **kw)


def test_heading_of_the_next_part_opens_it_instead_of_ending_the_previous_chunk(make_block):
    # The sample document's case: a heading-only section ("3 Maintenance Plan") between a
    # chunk of the previous part and the first subsection of its own part.
    body_a, body_b = words(60, "efficiency"), words(60, "schedule")
    blocks = [make_block(body_a, path=["2 Fleet"]), _heading(make_block, "3 Plan", ["3 Plan"]),
              _heading(make_block, "3.1 Schedule", ["3 Plan", "3.1 Schedule"]),
              make_block(body_b, path=["3 Plan", "3.1 Schedule"])]
    result = run_engine(blocks, min_tokens=50)
    assert [(c.text, c.block_ids, c.section_path) for c in result.chunks] == [
        (body_a, ["b1"], ["2 Fleet"]),
        (f"3 Plan\n\n3.1 Schedule\n\n{body_b}", ["b2", "b3", "b4"], ["3 Plan", "3.1 Schedule"]),
    ]


def test_consecutive_heading_only_sections_all_join_the_subsection_they_open(make_block):
    blocks = [make_block(words(40, "intro"), path=["0"]), _heading(make_block, "1", ["1"]),
              _heading(make_block, "1.1", ["1", "1.1"]), _heading(make_block, "1.1.1", ["1", "1.1", "1.1.1"]),
              make_block(words(40, "deep"), path=["1", "1.1", "1.1.1"])]
    result = run_engine(blocks, min_tokens=20)
    assert [c.block_ids for c in result.chunks] == [["b1"], ["b2", "b3", "b4", "b5"]]
    assert result.chunks[1].text.startswith("1\n\n1.1\n\n1.1.1\n\n")
    assert result.chunks[1].section_path == ["1", "1.1", "1.1.1"]


def test_heading_before_a_table_opens_the_tables_first_chunk_like_a_caption(make_block):
    table = table_dict([["Name", "Year"], ["Ada", "1843"]])
    blocks = [make_block(words(40), path=["A"]), _heading(make_block, "Results", ["B"]),
              make_block("", "table", path=["B"], table=table)]
    result = run_engine(blocks, min_tokens=20)
    assert view(result) == [
        ("section", words(40), ["b1"], [1]),
        ("table_schema", "Results\nTable schema: 1 data rows, 2 columns.\nColumns: Name (string, 0% null); "
                         "Year (number, 0% null)\nSample rows:\nRow 1: Name=Ada; Year=1843",
         ["b2", "b3"], [1]),
        ("table", "Row 1: Name=Ada; Year=1843", ["b3"], [1]),
    ]
    assert result.chunks[1].section_path == ["B"]


def test_heading_at_the_end_of_the_document_joins_the_previous_chunk(make_block):
    blocks = [make_block(words(40), path=["A"]), _heading(make_block, "Appendix", ["Appendix"])]
    result = run_engine(blocks, min_tokens=20)
    assert [(c.text, c.block_ids, c.section_path) for c in result.chunks] == [
        (f"{words(40)}\n\nAppendix", ["b1", "b2"], ["A"])]


def test_headings_ending_a_prose_run_move_to_the_list_or_table_after_them(make_block):
    # Headings that share the path of the text around them: the prose run ends with a heading
    # that opens the list after it (even with merging off).
    blocks = [make_block(words(30, "prose")), _heading(make_block, "Steps", ["Intro"]),
              make_block("Do this first:"), make_block("- one", "list_item"),
              make_block("- two", "list_item")]
    result = run_engine(blocks, min_tokens=0)
    assert [(c.chunk_type, c.text) for c in result.chunks] == [
        ("section", words(30, "prose")),
        ("list", "Steps\n\nDo this first:\n- one\n- two"),
    ]


def test_a_heading_only_chunk_leads_what_follows_at_min_tokens_zero(make_block):
    blocks = [make_block(words(30, "intro"), path=["A"]), _heading(make_block, "Highlights", ["B"]),
              make_block(words(30, "body"), path=["B"])]
    result = run_engine(blocks, min_tokens=0)
    assert [(c.text, c.block_ids, c.section_path) for c in result.chunks] == [
        (words(30, "intro"), ["b1"], ["A"]), (f"Highlights\n\n{words(30, 'body')}", ["b2", "b3"], ["B"])]


def test_a_heading_at_the_very_end_after_a_table_stays_alone(make_block):
    blocks = [make_block("", "table", table=table_dict([["K"], ["v"]])), _heading(make_block, "Notes", ["N"])]
    result = run_engine(blocks, min_tokens=20, generate_schema_chunks=False)
    assert [(c.chunk_type, c.block_ids) for c in result.chunks] == [("table", ["b1"]), ("section", ["b2"])]


def test_the_hand_written_report_merges_neighbours_only():
    """Issue 18's 15-block report: merging used to pull the paragraph after the table and the
    whole outlook section into the first chunk, ahead of the table. Now each small chunk joins a
    neighbour: the title section the list section after it; the paragraph after the table the
    outlook section after it (the table keeps them apart from what precedes it)."""
    report = json.loads((FIXTURES / "merging" / "quarterly_report.json").read_text(encoding="utf-8"))
    result = chunk_blocks(report["blocks"], None, document_id=report["document_id"])
    assert [(c.chunk_type, c.block_ids, c.section_path[-1]) for c in result.chunks] == [
        ("section", ["h1", "p1", "h2", "p2", "l1", "l2", "l3"], "Operations"),  # prose and a list
        ("table_schema", ["h3", "cap1", "t1"], "Results"),
        ("table", ["t1"], "Results"),
        ("section", ["p3", "h4", "p4"], "Outlook"),
    ]
    assert [c.block_ids for c in chunk_blocks(report["blocks"], {"min_tokens": 0}).chunks] == [
        ["h1", "p1"], ["h2", "p2", "l1", "l2", "l3"], ["h3", "cap1", "t1"], ["t1"], ["p3"], ["h4", "p4"]]


# --- a chunk's type is worked out from its own parts, not carried through merges ------------------


def test_a_list_merged_with_its_heading_stays_a_list_and_one_with_prose_is_a_section(make_block):
    listed = [make_block("Steps", "heading", heading_level=1), make_block("Do these:"),
              make_block("first", "list_item"), make_block("second", "list_item")]
    assert [c.chunk_type for c in chunk_blocks(listed, {"min_tokens": 100}).chunks] == ["list"]
    with_prose = [*listed, make_block("A closing remark about the steps.")]
    merged = chunk_blocks(with_prose, {"min_tokens": 100}).chunks
    assert [(c.chunk_type, len(c.block_ids)) for c in merged] == [("section", 5)]


def test_an_equation_chunk_holds_an_equation_and_the_text_next_to_it_only(make_block):
    equation = [make_block("The loss is:"), make_block("x = 1", "equation"),
                make_block("where x is the input.")]
    only = chunk_blocks(equation, {"min_tokens": 0}).chunks
    assert [(c.chunk_type, c.equation_detected) for c in only] == [("equation", True)]
    prose = [make_block("An opening paragraph."), make_block("Another paragraph."), *equation]
    mixed = chunk_blocks(prose, {"min_tokens": 0}).chunks
    assert [(c.chunk_type, c.equation_detected) for c in mixed] == [("section", True)]
