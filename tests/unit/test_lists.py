"""Lists (plan case B13, list part): a lead-in stays with its items; a long list is split at
bullets with the lead-in repeated.

Token arithmetic (the word estimate): ``n`` words -> ``int(n * 1.33)`` tokens, e.g. 10 -> 13,
20 -> 26, 40 -> 53.
"""

from __future__ import annotations

import pytest

from tests.unit.engine_helpers import run_engine, view, words


@pytest.mark.case("B13")
def test_B13_list_with_lead_in_is_one_chunk(make_block):
    blocks = [make_block("Before."), make_block("You need:"), make_block("• eggs", "list_item"),
              make_block("• flour", "list_item"), make_block("After.")]
    result = run_engine(blocks)
    assert view(result) == [
        ("section", "Before.", ["b1"], [1]),
        ("list", "You need:\n• eggs\n• flour", ["b2", "b3", "b4"], [1]),
        ("section", "After.", ["b5"], [1]),
    ]


@pytest.mark.case("B13")
def test_B13_long_list_split_at_bullets_with_lead_in_repeated(make_block):
    lead = words(10, "lead")  # 13 tokens
    items = [words(8, w) for w in ("i1", "i2", "i3")]  # 10 tokens each
    blocks = [make_block(lead, page=1), make_block(items[0], "list_item", page=1),
              make_block(items[1], "list_item", page=2), make_block(items[2], "list_item", page=2)]
    result = run_engine(blocks, max_tokens=30)
    assert view(result) == [
        ("list", f"{lead}\n{items[0]}", ["b1", "b2"], [1]),
        ("list", f"{lead}\n{items[1]}", ["b3"], [2]),
        ("list", f"{lead}\n{items[2]}", ["b4"], [2]),
    ]
    assert "lead_in_repeated" not in result.chunks[0].metadata
    for chunk in result.chunks[1:]:
        assert chunk.metadata["lead_in_repeated"] is True
        assert chunk.metadata["lead_in_block_id"] == "b1"


@pytest.mark.case("B13")
def test_B13_list_pieces_rejoined_by_merge_do_not_repeat_lead_in(make_block):
    lead, big, small = "Steps:", words(44, "big"), "last step"  # 1 + 58 + 2 tokens > 60
    blocks = [make_block(lead), make_block(big, "list_item"), make_block(small, "list_item")]
    result = run_engine(blocks, max_tokens=60, min_tokens=10)
    assert view(result) == [("list", f"{lead}\n{big}\n\n{small}", ["b1", "b2", "b3"], [1])]
    assert "lead_in_repeated" not in result.chunks[0].metadata


@pytest.mark.case("B13")
def test_B13_list_without_lead_in(make_block):
    # A heading is not a lead-in: it opens the list's chunk (a heading-only chunk merges forward
    # at any min_tokens), and the list keeps its type.
    blocks = [make_block("Heading", "heading"), make_block("a", "list_item"), make_block("b", "list_item")]
    result = run_engine(blocks)
    assert view(result) == [("list", "Heading\n\na\nb", ["b1", "b2", "b3"], [1])]
    assert "lead_in_block_id" not in result.chunks[0].metadata


# --- what is a lead-in -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "is_lead_in"),
    [
        ("The review covers the following stations:", True),  # ends with a colon
        (words(60, "context") + " and the stations are as follows.", True),  # a lead-in phrase
        (words(35, "short"), True),  # short: at most 40 words
        (words(60, "fragment") + " of a reference that a column break cut.", False),  # long prose
    ],
    ids=["colon", "phrase", "short", "long-prose"],
)
def test_only_a_paragraph_that_introduces_the_list_is_its_lead_in(make_block, before, is_lead_in):
    lead = make_block(before)
    items = [make_block(words(40, "first"), "list_item"), make_block(words(40, "second"), "list_item")]
    result = run_engine([lead, *items], max_tokens=70)
    lists = [c for c in result.chunks if c.chunk_type == "list"]
    if is_lead_in:
        assert lists[0].block_ids[0] == "b1" and lists[1].metadata["lead_in_block_id"] == "b1"
        assert lists[1].text.startswith(before)
    else:
        assert result.chunks[0].chunk_type == "section" and result.chunks[0].block_ids == ["b1"]
        assert all("lead_in_block_id" not in c.metadata and before not in c.text for c in lists)
