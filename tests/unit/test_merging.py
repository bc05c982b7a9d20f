"""Minimum-size merging (plan case B05): short tails, heads and sections merge into a neighbour;
tables never merge; an equation's type wins.

Token arithmetic (the word estimate): ``n`` words -> ``int(n * 1.33)`` tokens, e.g. 10 -> 13,
20 -> 26, 40 -> 53.
"""

from __future__ import annotations

import numpy as np
import pytest

from longparser import Resources
from tests.unit.engine_helpers import run_engine, table_dict, view, words


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
def test_B05_table_chunks_never_merge_nor_absorb(make_block):
    blocks = [make_block("Short intro."), make_block("", "table", table=table_dict([["A"], ["1"]])),
              make_block("Short outro.")]
    result = run_engine(blocks, min_tokens=50)
    assert view(result) == [
        ("section", "Short intro.\n\nShort outro.", ["b1", "b3"], [1]),
        ("table_schema", "Table schema: 1 data rows, 1 columns.\nColumns: A (number, 0% null)\n"
                         "Sample rows:\nRow 1: A=1", ["b2"], [1]),
        ("table", "Row 1: A=1", ["b2"], [1]),
    ]


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
def test_B05_long_run_of_small_chunks_merges_into_one(make_block):
    """Every block a semantic boundary, all chunks under the minimum: one chunk, in order."""
    texts = [f"Sentence {i}." for i in range(50)]
    result = run_engine([make_block(t) for t in texts], Resources(encoder=_EveryBlockNewTopic()),
                        use_semantic_chunking=True, min_tokens=400, max_tokens=500)
    assert result.stats.semantic.boundaries == 49  # the premise: every block starts a chunk
    assert view(result) == [("section", "\n\n".join(texts), [f"b{i}" for i in range(1, 51)], [1])]


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
