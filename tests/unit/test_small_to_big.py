"""Small-to-big retrieval over a result (``adapters/small_to_big.py``): retrieved chunks in,
their parents out, in rank order, no text twice, within a token budget."""

from __future__ import annotations

import pytest

from adapters.small_to_big import parent_key, parent_text, scope_chunks, small_to_big
from schemas import ChunkResult
from tests.unit.engine_helpers import PEOPLE, run_engine, table_dict, words


@pytest.fixture
def result(make_block) -> ChunkResult:
    """1 Methods (intro, 1.1 Data with two chunks, a table), 2 Results; 30-word paragraphs."""
    return run_engine([
        make_block(words(30, "preamble"), path=[]),
        make_block("1 Methods", "heading", path=["1 Methods"]),
        make_block(words(30, "intro"), path=["1 Methods"]),
        make_block("1.1 Data", "heading", path=["1 Methods", "1.1 Data"]),
        make_block(words(30, "data"), path=["1 Methods", "1.1 Data"]),
        make_block(words(30, "more"), path=["1 Methods", "1.1 Data"]),
        make_block("", "table", path=["1 Methods", "1.1 Data"], table=table_dict(PEOPLE)),
        make_block("2 Results", "heading", path=["2 Results"]),
        make_block(words(30, "results"), path=["2 Results"]),
    ], max_tokens=45)


def _chunk(result: ChunkResult, word: str):
    return next(c for c in result.chunks if word in c.text)


def _titles(units) -> list:
    return [(u.kind, u.title) for u in units]


def test_a_parents_text_is_its_scope_its_subsections_included(result):
    methods = next(p for p in result.parents if p.title == "1 Methods")
    text = parent_text(result, methods)
    assert [c.chunk_id for c in scope_chunks(result)[methods.id]] == \
        [c.chunk_id for c in result.chunks if c.section_path[:1] == ["1 Methods"]]
    assert "intro" in text and "data" in text and "Ada" in text and "results" not in text
    assert parent_text(result, methods.id) == text
    with pytest.raises(KeyError):
        parent_text(result, "no-such-parent")


def test_hits_become_their_parents_in_rank_order_each_once(result):
    data, more, results = (_chunk(result, w).chunk_id for w in ("data data", "more more", "results results"))
    units = small_to_big(result, [results, data, more, "not-a-chunk"])
    assert _titles(units) == [("section", "2 Results"), ("section", "1.1 Data")]
    assert units[1].hits == [data, more]  # the second hit of 1.1 Data adds nothing
    assert units[1].tokens == sum(c.token_count for c in scope_chunks(result)[result.chunks[2].parent_id])
    table_row = next(c for c in result.chunks if c.chunk_type == "table")
    [table] = small_to_big(result, [table_row.chunk_id])
    assert table.kind == "table"
    assert table.chunk_ids == [c.chunk_id for c in result.chunks if c.parent_id == table_row.parent_id]


def test_an_enclosing_section_replaces_the_subsection_returned_before_it(result):
    data, intro = _chunk(result, "data data").chunk_id, _chunk(result, "intro intro").chunk_id
    units = small_to_big(result, [data, intro])
    assert _titles(units) == [("section", "1 Methods")]
    assert units[0].hits == [data, intro]
    assert len(units[0].chunk_ids) == len(set(units[0].chunk_ids))


def test_the_budget_skips_what_does_not_fit_and_takes_what_does(result):
    data, results = _chunk(result, "data data").chunk_id, _chunk(result, "results results").chunk_id
    whole = small_to_big(result, [data, results])
    budget = whole[1].tokens + 1  # 1.1 Data (two chunks and a table) does not fit, 2 Results does
    assert whole[0].tokens > budget
    assert _titles(small_to_big(result, [data, results], budget=budget)) == [("section", "2 Results")]
    assert sum(u.tokens for u in small_to_big(result, [data, results], budget=10_000)) <= 10_000


def test_a_parent_over_max_parent_tokens_gives_the_chunk_itself(result):
    data = _chunk(result, "data data")
    units = small_to_big(result, [data.chunk_id], max_parent_tokens=data.token_count)
    assert [(u.kind, u.id, u.text) for u in units] == [("chunk", data.chunk_id, data.text)]
    counted = small_to_big(result, [data.chunk_id], count=len)
    assert counted[0].tokens == len(counted[0].text)


def test_the_documents_parent_is_named_with_the_document_id(result):
    preamble = _chunk(result, "preamble")
    assert preamble.parent_id == "doc"
    [unit] = small_to_big(result, [preamble.chunk_id])
    assert unit.kind == "document" and unit.id == parent_key(result, "doc") == "doc-1:doc"
    assert parent_key(result.model_copy(update={"document_id": None}), "doc") == "doc"


def test_a_result_without_parents_is_refused(result):
    chunks = [c.model_copy(update={"parent_id": None}) for c in result.chunks]
    old = result.model_copy(update={"parents": [], "chunks": chunks})
    with pytest.raises(ValueError, match="no parents"):
        small_to_big(old, [old.chunks[0].chunk_id])
