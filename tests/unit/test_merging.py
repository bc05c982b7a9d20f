"""Minimum-size merging (plan case B05): short tails, heads and sections merge into a neighbour;
tables never merge; an equation's type wins.

Token arithmetic (DEC-04): ``n`` words -> ``int(n * 1.33)`` tokens, e.g. 10 -> 13, 20 -> 26, 40 -> 53.
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
