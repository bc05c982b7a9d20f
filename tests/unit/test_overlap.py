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


def test_sentence_overlap_copies_the_last_sentences(make_block):
    first = "One two three. Four five six. Seven eight nine."
    blocks = [make_block(first), make_block(words(40, "next"))]
    result = run_engine(blocks, max_tokens=50, overlap_blocks=2, overlap_unit="sentence")
    assert result.chunks[1].text == f"Four five six. Seven eight nine.\n\n{words(40, 'next')}"
    assert result.chunks[1].metadata["overlap_block_ids"] == ["b1"]


def test_sentence_overlap_reaches_into_the_paragraph_before(make_block):
    blocks = [make_block("A b c. D e f."), make_block("G h i."), make_block(words(60, "next"))]
    result = run_engine(blocks, max_tokens=60, overlap_blocks=2, overlap_unit="sentence")
    assert result.chunks[1].text.startswith("D e f.\n\nG h i.\n\n")
    assert result.chunks[1].metadata["overlap_block_ids"] == ["b1", "b2"]


def test_capped_overlap_is_never_a_quarter_of_its_chunk_or_more(make_block):
    # A short chunk after a long paragraph: the share cap alone (40% of 60 = 24 tokens) would make
    # the overlap most of the chunk; it takes at most a third of the chunk's own tokens.
    blocks = [make_block(words(40, "before")), make_block(words(9, "short"))]  # 9 words: 11 tokens
    result = run_engine(blocks, max_tokens=60, overlap_blocks=1, overlap_max_share=0.4)
    second = result.chunks[1]
    assert second.text == f"{words(3, 'before')}\n\n{words(9, 'short')}"  # 3 words: 3 tokens <= 11 // 3
    assert second.metadata["overlap_block_ids"] == ["b1"]


def test_a_piece_of_a_cut_paragraph_never_overlaps_with_its_own_earlier_piece(make_block):
    # The second piece has room, but the end of the first piece is the same block's earlier part.
    sentences = [f"Sentence {i} has exactly six words." for i in range(8)]  # 7 tokens each
    result = run_engine([make_block(" ".join(sentences))], max_tokens=40, overlap_blocks=1,
                        strict_max_tokens=True)
    assert [c.text for c in result.chunks] == [" ".join(sentences[:5]), " ".join(sentences[5:])]
    assert not any(c.overlap_with_previous for c in result.chunks)
