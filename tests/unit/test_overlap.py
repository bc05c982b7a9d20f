"""Overlap (plan case B07): the previous chunk's last paragraphs are prepended, never across
sections, tables or equations.

Token arithmetic (the word estimate): ``n`` words -> ``int(n * 1.33)`` tokens, e.g. 10 -> 13,
20 -> 26, 40 -> 53.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.engine_helpers import run_engine, table_dict, words


def _three(make_block) -> tuple[list[dict[str, Any]], list[str]]:
    texts = [words(20, w) for w in ("one", "two", "three")]
    return [make_block(t, page=i + 1) for i, t in enumerate(texts)], texts


@pytest.mark.case("B07")
def test_B07_positive_overlap_prepends_previous_paragraph(make_block):
    blocks, texts = _three(make_block)
    result = run_engine(blocks, max_tokens=60, overlap_blocks=1)
    second = result.chunks[1]
    assert second.text == f"{texts[1]}\n\n{texts[2]}"
    assert (second.block_ids, second.page_numbers, second.overlap_with_previous) == (["b3"], [3], True)
    assert second.metadata["overlap_block_ids"] == ["b2"]
    assert second.token_count == int(40 * 1.33)
    assert result.chunks[0].overlap_with_previous is False


@pytest.mark.case("B07")
def test_B07_overlap_of_two_paragraphs(make_block):
    blocks, texts = _three(make_block)
    result = run_engine(blocks, max_tokens=60, overlap_blocks=2)
    assert result.chunks[1].text == "\n\n".join(texts)
    assert result.chunks[1].metadata["overlap_block_ids"] == ["b1", "b2"]
    assert result.chunks[1].block_ids == ["b3"]


@pytest.mark.case("B07")
def test_B07_zero_overlap_leaves_chunks_untouched(make_block):
    blocks, texts = _three(make_block)
    result = run_engine(blocks, max_tokens=60, overlap_blocks=0)
    assert [c.text for c in result.chunks] == [f"{texts[0]}\n\n{texts[1]}", texts[2]]
    assert [c.overlap_with_previous for c in result.chunks] == [False, False]
    assert all("overlap_block_ids" not in c.metadata for c in result.chunks)


@pytest.mark.case("B07")
def test_B07_no_overlap_across_sections_tables_or_equations(make_block):
    blocks = [
        make_block(words(20, "a"), path=["A"]), make_block(words(20, "b"), path=["B"]),
        make_block("", "table", path=["B"], table=table_dict([["K"], ["v"]])),
        make_block(words(20, "c"), path=["B"]),
        make_block("y = 2", "equation", path=["B"]), make_block(words(50, "d"), path=["B"]),
    ]
    result = run_engine(blocks, max_tokens=60, overlap_blocks=1, generate_schema_chunks=False)
    assert [(c.text, c.overlap_with_previous) for c in result.chunks] == [
        (words(20, "a"), False), (words(20, "b"), False), ("Row 1: K=v", False),
        (f"{words(20, 'c')}\n\ny = 2", False), (words(50, "d"), False),
    ]
