"""The target exceptions (the test plan's case DEC-04, docs/strict.md): where a chunk may exceed
``max_tokens`` by default (oversized blocks, merges, overlap, captions and schema chunks) and
where it may not (divisible paragraphs, row batches).

Token arithmetic (the word estimate): ``n`` words -> ``int(n * 1.33)`` tokens, e.g. 10 -> 13,
20 -> 26, 40 -> 53.
"""

from __future__ import annotations

import pytest

from tests.unit.engine_helpers import run_engine, table_dict, words


@pytest.mark.case("DEC-04")
def test_target_exception_divisible_paragraphs_split_before_target_exceeded(make_block):
    texts = [words(30, w) for w in ("a", "b", "c")]  # 39 tokens each
    result = run_engine([make_block(t) for t in texts], max_tokens=80)
    assert [c.text for c in result.chunks] == [f"{texts[0]}\n\n{texts[1]}", texts[2]]
    assert all(c.token_count <= 80 for c in result.chunks)


@pytest.mark.case("DEC-04")
def test_target_exception_oversized_paragraph_and_row_kept_whole(make_block):
    big = words(100, "big")
    rows = [["K", "V"], ["a", words(100, "cell")]]
    blocks = [make_block(big), make_block("", "table", table=table_dict(rows))]
    result = run_engine(blocks, max_tokens=50, generate_schema_chunks=False)
    assert [(c.text, c.token_count) for c in result.chunks] == [
        (big, 133), (f"Row 1: K=a; V={words(100, 'cell')}", int(103 * 1.33))]


@pytest.mark.case("DEC-04")
def test_target_exception_below_minimum_merge_may_exceed_target(make_block):
    p1, tail = words(40, "a"), words(10, "b")
    result = run_engine([make_block(p1), make_block(tail)], max_tokens=60, min_tokens=20)
    assert [(c.text, c.block_ids, c.token_count) for c in result.chunks] == [
        (f"{p1}\n\n{tail}", ["b1", "b2"], 66)]


@pytest.mark.case("DEC-04")
def test_target_exception_overlap_prepended_after_packing_may_exceed_target(make_block):
    p1, p2 = words(40, "a"), words(40, "b")
    result = run_engine([make_block(p1), make_block(p2)], max_tokens=60, overlap_blocks=1)
    second = result.chunks[1]
    assert (second.text, second.block_ids, second.overlap_with_previous) == (f"{p1}\n\n{p2}", ["b2"], True)
    assert second.token_count == 106 > 60


@pytest.mark.case("DEC-04")
def test_target_exception_captions_and_schema_chunks_outside_packing(make_block):
    caption = "Table 1: " + words(30, "caption")
    rows = [[f"Column{c}" for c in range(6)]] + [[f"value{r}{c}" for c in range(6)] for r in range(5)]
    blocks = [make_block(caption, "caption"), make_block("", "table", table=table_dict(rows))]
    result = run_engine(blocks, max_tokens=21)
    schema, rows_chunks = result.chunks[0], result.chunks[1:]
    assert schema.chunk_type == "table_schema" and schema.block_ids == ["b1", "b2"]
    assert schema.text.startswith(caption + "\nTable schema: 5 data rows, 6 columns.")
    assert schema.token_count > 21
    # row batches still respect the target: 8-word (10-token) records, two per batch
    assert [(c.metadata["row_start"], c.metadata["row_end"]) for c in rows_chunks] == [(1, 2), (3, 4), (5, 5)]
    assert all(c.token_count <= 21 for c in rows_chunks)
