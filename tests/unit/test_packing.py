"""Packing prose into token-budgeted chunks (plan cases B04 structural part, B06, B12, and the
equation glue of B13): budget splits, the supplied hierarchy, oversized blocks, headings.

Token arithmetic (the word estimate): ``n`` words -> ``int(n * 1.33)`` tokens, e.g. 10 -> 13,
20 -> 26, 40 -> 53.
"""

from __future__ import annotations

import pytest

from tests.unit.engine_helpers import run_engine, table_dict, view, words

# --- B04 normal budget overflow -------------------------------------------------------------------


@pytest.mark.case("B04")
def test_B04_budget_overflow_splits_before_the_exceeding_block(make_block):
    texts = [words(20, w) for w in ("one", "two", "three", "four", "five")]  # 26 tokens each
    result = run_engine([make_block(t, page=i + 1) for i, t in enumerate(texts)], max_tokens=60)
    assert view(result) == [
        ("section", f"{texts[0]}\n\n{texts[1]}", ["b1", "b2"], [1, 2]),
        ("section", f"{texts[2]}\n\n{texts[3]}", ["b3", "b4"], [3, 4]),
        ("section", texts[4], ["b5"], [5]),
    ]


# --- B06 supplied hierarchy -----------------------------------------------------------------------


@pytest.mark.case("B06")
def test_B06_supplied_hierarchy_used_as_given(make_block):
    blocks = [
        make_block("Methods", "heading", path=["Methods"]),
        make_block("Overview.", path=["Methods"]),
        make_block("Setup", "heading", path=["Methods", "Setup"]),
        make_block("Details.", path=["Methods", "Setup"]),
        make_block("Back in methods.", path=["Methods"]),
        make_block("No section.", path=[]),
    ]
    result = run_engine(blocks)
    assert [(c.section_path, c.text, c.block_ids) for c in result.chunks] == [
        (["Methods"], "Methods\n\nOverview.", ["b1", "b2"]),
        (["Methods", "Setup"], "Setup\n\nDetails.", ["b3", "b4"]),
        (["Methods"], "Back in methods.", ["b5"]),
        ([], "No section.", ["b6"]),
    ]


# --- B12 oversized blocks, heading-only sections --------------------------------------------------


@pytest.mark.case("B12")
def test_B12_oversized_paragraph_kept_whole(make_block):
    big = words(50, "huge")
    blocks = [make_block("Small."), make_block(big), make_block("After.")]
    result = run_engine(blocks, max_tokens=20)
    assert view(result) == [
        ("section", "Small.", ["b1"], [1]), ("section", big, ["b2"], [1]), ("section", "After.", ["b3"], [1])]
    assert result.chunks[1].token_count == 66


@pytest.mark.case("B12")
def test_B12_oversized_row_kept_whole(make_block):
    rows = [["Name", "Notes"], ["Ada", words(30, "note")], ["Alan", "short"]]
    blocks = [make_block("", "table", table=table_dict(rows))]
    result = run_engine(blocks, max_tokens=20, generate_schema_chunks=False)
    assert [c.text for c in result.chunks] == [
        f"Row 1: Name=Ada; Notes={words(30, 'note')}", "Row 2: Name=Alan; Notes=short"]
    assert result.chunks[0].token_count > 20


@pytest.mark.case("B12")
@pytest.mark.parametrize(
    ("body", "min_tokens", "expected"),
    [
        ("Scope text.", 0, [
            (["1 Intro", "1.1 Scope"], "1 Intro\n\n1.1 Scope\n\nScope text.", ["b1", "b2", "b3"]),
        ]),
        (words(20), 5, [
            (["1 Intro", "1.1 Scope"], f"1 Intro\n\n1.1 Scope\n\n{words(20)}", ["b1", "b2", "b3"]),
        ]),
    ],
    ids=["min-tokens-0", "min-tokens-5"],
)
def test_B12_heading_only_section(make_block, body, min_tokens, expected):
    # A heading-only section leads the content it opens, whatever min_tokens is (also 0): a
    # heading alone is no chunk a retriever can use.
    blocks = [make_block("1 Intro", "heading", path=["1 Intro"]),
              make_block("1.1 Scope", "heading", path=["1 Intro", "1.1 Scope"]),
              make_block(body, path=["1 Intro", "1.1 Scope"])]
    result = run_engine(blocks, min_tokens=min_tokens)
    assert [(c.section_path, c.text, c.block_ids) for c in result.chunks] == expected


@pytest.mark.case("B12")
def test_B12_trailing_headings_move_to_the_chunk_they_open(make_block):
    p1, p2 = words(20, "one"), words(30, "two")  # 26 + 1 + 1 + 39 > 60
    blocks = [make_block(p1, page=1), make_block("Part", "heading", page=1),
              make_block("Chapter", "heading", page=2), make_block(p2, page=2)]
    result = run_engine(blocks, max_tokens=60)
    assert view(result) == [
        ("section", p1, ["b1"], [1]),
        ("section", f"Part\n\nChapter\n\n{p2}", ["b2", "b3", "b4"], [1, 2]),
    ]


@pytest.mark.case("B12")
def test_B12_heading_before_equation_takes_precedence_over_paragraph_glue(make_block):
    p1 = words(20, "one")
    blocks = [make_block(p1), make_block("Model", "heading"), make_block(words(40, "x"), "equation")]
    result = run_engine(blocks, max_tokens=60)
    assert [(c.chunk_type, c.block_ids) for c in result.chunks] == [
        ("section", ["b1"]), ("equation", ["b2", "b3"])]


@pytest.mark.case("B12")
def test_B12_consecutive_headings_pack_with_following_text(make_block):
    blocks = [make_block("Part", "heading"), make_block("Chapter", "heading"), make_block("Body.")]
    assert view(run_engine(blocks)) == [("section", "Part\n\nChapter\n\nBody.", ["b1", "b2", "b3"], [1])]


# --- B13 equation glue ----------------------------------------------------------------------------


@pytest.mark.case("B13")
def test_B13_equation_glue_moves_paragraph_with_cross_page_provenance(make_block):
    p1, p2 = words(20, "one"), words(10, "two")  # 26 + 13 = 39 tokens
    blocks = [make_block(p1, page=2), make_block(p2, page=3), make_block("E = m c2", "equation", page=4)]
    result = run_engine(blocks, max_tokens=40)
    assert view(result) == [
        ("section", p1, ["b1"], [2]),
        ("equation", f"{p2}\n\nE = m c2", ["b2", "b3"], [3, 4]),
    ]
    assert [c.equation_detected for c in result.chunks] == [False, True]


@pytest.mark.case("B13")
def test_B13_equation_glue_never_empties_closed_chunk(make_block):
    p = words(10)
    result = run_engine([make_block(p, page=1), make_block("E = m c2", "equation", page=2)], max_tokens=14)
    assert view(result) == [("section", p, ["b1"], [1]), ("equation", "E = m c2", ["b2"], [2])]


@pytest.mark.case("B13")
def test_B13_equation_glue_with_overlap_does_not_duplicate(make_block):
    p1, p2, p3 = words(10, "one"), words(10, "two"), words(10, "three")
    blocks = [make_block(p1), make_block(p2), make_block(p3), make_block("E = m c2", "equation")]
    result = run_engine(blocks, max_tokens=40, overlap_blocks=1)
    assert [(c.text, c.block_ids, c.overlap_with_previous) for c in result.chunks] == [
        (f"{p1}\n\n{p2}", ["b1", "b2"], False),
        (f"{p2}\n\n{p3}\n\nE = m c2", ["b3", "b4"], True),
    ]
