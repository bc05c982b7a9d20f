"""Parents (``longparser/parents.py``): each chunk's section, table or document, and the parents
listed on the result (docs/chunking.md, "Parents")."""

from __future__ import annotations

from longparser import chunk_blocks
from schemas import ChunkResult
from tests.unit.engine_helpers import PEOPLE, run_engine, table_dict, words


def _by_id(result: ChunkResult) -> dict:
    return {p.id: p for p in result.parents}


def _parent_of(result: ChunkResult, index: int):
    return _by_id(result)[result.chunks[index].parent_id]


def _check_tree(result: ChunkResult) -> None:
    """Each chunk's parent lists it, every chunk is listed once, parents chain up to ``doc``."""
    parents = _by_id(result)
    assert len(parents) == len(result.parents)  # ids are unique
    listed = [cid for p in result.parents for cid in p.chunk_ids]
    assert sorted(listed) == sorted(c.chunk_id for c in result.chunks)
    for chunk in result.chunks:
        assert chunk.chunk_id in parents[chunk.parent_id].chunk_ids
    for parent in result.parents:
        seen, current = set(), parent
        while current.parent_id is not None:
            assert current.id not in seen
            seen.add(current.id)
            current = parents[current.parent_id]
        assert current.id == "doc"


def _nested(make_block):
    """Heading levels only (paths derived): 1 Methods > 1.1 Data, 1.2 Model; then 2 Results."""
    return [
        make_block("1 Methods", "heading", path=[], heading_level=1, page=1),
        make_block(words(30, "intro"), path=[], page=1),
        make_block("1.1 Data", "heading", path=[], heading_level=2, page=1),
        make_block(words(30, "data"), path=[], page=2),
        make_block("1.2 Model", "heading", path=[], heading_level=2, page=2),
        make_block(words(30, "model"), path=[], page=3),
        make_block("2 Results", "heading", path=[], heading_level=1, page=4),
        make_block(words(30, "results"), path=[], page=4),
    ]


def test_nested_sections_each_chunk_under_its_innermost_heading(make_block):
    result = run_engine(_nested(make_block), max_tokens=45)
    _check_tree(result)
    titles = [_parent_of(result, i).title for i in range(len(result.chunks))]
    assert titles == ["1 Methods", "1.1 Data", "1.2 Model", "2 Results"]
    parents = _by_id(result)
    methods, data, model, results = (_parent_of(result, i) for i in range(4))
    assert data.parent_id == model.parent_id == methods.id
    assert methods.parent_id == results.parent_id == "doc"
    assert parents["doc"].chunk_ids == [] and parents["doc"].kind == "document"
    # a section spans its subsections: from its heading to the next heading of its level
    assert (methods.first_block_id, methods.last_block_id, methods.page_numbers) == ("b1", "b6", [1, 2, 3])
    assert (data.first_block_id, data.last_block_id, data.page_numbers) == ("b3", "b4", [1, 2])
    assert (results.first_block_id, results.last_block_id) == ("b7", "b8")
    assert (parents["doc"].first_block_id, parents["doc"].last_block_id) == ("b1", "b8")
    assert parents["doc"].page_numbers == [1, 2, 3, 4]
    # listed document first, then by first block (an enclosing section before its subsections)
    assert [p.title for p in result.parents] == [None, "1 Methods", "1.1 Data", "1.2 Model", "2 Results"]


def test_a_section_with_subsections_only_lists_no_chunk_but_is_their_parent(make_block):
    blocks = [
        make_block("Guide", "heading", path=["Guide"]),
        make_block("Setup", "heading", path=["Guide", "Setup"]),
        make_block(words(20, "install"), path=["Guide", "Setup"]),
    ]
    result = run_engine(blocks)
    _check_tree(result)
    assert len(result.chunks) == 1  # the heading leads what it heads
    setup = _parent_of(result, 0)
    guide = _by_id(result)[setup.parent_id]
    assert (setup.title, guide.title, guide.chunk_ids) == ("Setup", "Guide", [])


def test_text_after_a_subsection_belongs_to_the_enclosing_section(make_block):
    blocks = [
        make_block("A", "heading", path=["A"]),
        make_block("B", "heading", path=["A", "B"]),
        make_block(words(30, "inner"), path=["A", "B"]),
        make_block(words(30, "outer"), path=["A"]),
    ]
    result = run_engine(blocks, max_tokens=45)
    _check_tree(result)
    inner, outer = _parent_of(result, 0), _parent_of(result, 1)
    assert (inner.title, outer.title) == ("B", "A")
    assert inner.parent_id == outer.id
    assert (outer.first_block_id, outer.last_block_id) == ("b1", "b4")


def test_every_chunk_of_a_table_has_the_table_as_parent_and_the_table_its_section(make_block):
    blocks = [
        make_block("People", "heading", path=["People"]),
        make_block(words(20, "lead"), path=["People"]),
        make_block("Table 1: Who did what", "caption", path=["People"], page=2),
        make_block("", "table", path=["People"], table=table_dict(PEOPLE), page=2),
        make_block(words(20, "after"), path=["People"], page=3),
    ]
    result = run_engine(blocks, max_tokens=60, table_rows_per_chunk=2, generate_schema_chunks=True)
    _check_tree(result)
    table_chunks = [c for c in result.chunks if c.chunk_type in ("table", "table_schema")]
    assert len(table_chunks) >= 3 and {"table", "table_schema"} <= {c.chunk_type for c in table_chunks}
    table = _by_id(result)[table_chunks[0].parent_id]
    assert table.kind == "table" and table.title == "Table 1: Who did what"
    assert table.chunk_ids == [c.chunk_id for c in table_chunks]
    assert (table.first_block_id, table.last_block_id, table.page_numbers) == ("b3", "b4", [2])
    section = _by_id(result)[table.parent_id]
    assert section.title == "People"
    prose = [c for c in result.chunks if c.chunk_type == "section"]
    assert prose and all(c.parent_id == section.id for c in prose)
    assert section.page_numbers == [1, 2, 3]


def test_a_document_without_headings_has_the_document_as_only_parent(make_block):
    blocks = [make_block(words(30, w), path=[]) for w in ("one", "two", "three")]
    result = run_engine(blocks, max_tokens=45)
    assert len(result.chunks) == 3
    [doc] = result.parents
    assert (doc.id, doc.kind, doc.parent_id, doc.title) == ("doc", "document", None, None)
    assert doc.chunk_ids == [c.chunk_id for c in result.chunks]
    assert all(c.parent_id == "doc" for c in result.chunks)


def test_text_before_the_first_heading_is_the_documents(make_block):
    blocks = [make_block(words(30, "preamble"), path=[]), make_block("Body", "heading", path=["Body"]),
              make_block(words(30, "body"), path=["Body"])]
    result = run_engine(blocks, max_tokens=45)
    _check_tree(result)
    assert result.chunks[0].parent_id == "doc"
    assert _parent_of(result, 1).title == "Body"


def test_strict_pieces_of_one_paragraph_share_its_section(make_block):
    sentences = " ".join(f"Sentence {i} has exactly six words." for i in range(6))
    blocks = [make_block("Long", "heading", path=["Long"]), make_block(sentences, path=["Long"])]
    result = run_engine(blocks, max_tokens=16, strict_max_tokens=True)
    _check_tree(result)
    assert len(result.chunks) >= 3
    assert len({c.parent_id for c in result.chunks}) == 1
    assert _parent_of(result, 0).title == "Long"


def test_overlap_chunks_keep_their_own_section(make_block):
    blocks = [
        make_block("Outer", "heading", path=["Outer"]),
        make_block(words(30, "first"), path=["Outer"]),
        make_block(words(30, "second"), path=["Outer"]),
        make_block("Inner", "heading", path=["Outer", "Inner"]),
        make_block(words(30, "third"), path=["Outer", "Inner"]),
    ]
    result = run_engine(blocks, max_tokens=45, overlap_blocks=1)
    _check_tree(result)
    assert result.chunks[1].overlap_with_previous  # the end of the first chunk, as context
    assert [_parent_of(result, i).title for i in range(3)] == ["Outer", "Outer", "Inner"]
    assert _parent_of(result, 0).chunk_ids == [c.chunk_id for c in result.chunks[:2]]


def test_a_chunk_merged_across_sections_belongs_where_its_section_path_says(make_block):
    blocks = [
        make_block("A", "heading", path=["A"]),
        make_block(words(30, "a"), path=["A"]),
        make_block("B", "heading", path=["B"]),
        make_block("short", path=["B"]),  # under min_tokens: joins the previous draft
    ]
    result = run_engine(blocks, max_tokens=100, min_tokens=20)
    _check_tree(result)
    assert result.chunks[0].block_ids == ["b1", "b2", "b3", "b4"]  # spans both sections
    for index, chunk in enumerate(result.chunks):
        assert _parent_of(result, index).title == chunk.section_path[-1]


def test_ids_are_deterministic_and_a_repeated_title_gets_its_own(make_block):
    def doc(factory):
        return [
            factory("Part 1", "heading", path=["Part 1"]),
            factory("Notes", "heading", path=["Part 1", "Notes"]),
            factory(words(30, "one"), path=["Part 1", "Notes"]),
            factory("Part 2", "heading", path=["Part 2"]),
            factory("Notes", "heading", path=["Part 2", "Notes"]),
            factory(words(30, "two"), path=["Part 2", "Notes"]),
        ]

    blocks = doc(make_block)
    first, again = run_engine(blocks, max_tokens=45), run_engine(blocks, max_tokens=45)
    assert first.parents == again.parents
    assert [c.parent_id for c in first.chunks] == [c.parent_id for c in again.chunks]
    _check_tree(first)
    assert len({c.parent_id for c in first.chunks}) == 2
    other = chunk_blocks(blocks, {"max_tokens": 45, "min_tokens": 0}, document_id="doc-2")
    assert {p.id for p in other.parents} & {p.id for p in first.parents} == {"doc"}


def test_ids_do_not_follow_block_ids(make_block):
    """Loaders number blocks by position: renumbering them keeps every parent id."""
    blocks = _nested(make_block)
    renumbered = [{**block, "block_id": f"x{i}"} for i, block in enumerate(blocks)]
    ids = [p.id for p in run_engine(blocks, max_tokens=45).parents]
    assert ids == [p.id for p in run_engine(renumbered, max_tokens=45).parents]


def test_no_chunks_no_parents():
    assert chunk_blocks([], {}).parents == []


def test_results_stored_before_parents_still_read():
    old = {"schema_version": "1.0", "document_id": "d", "stats": {},
           "chunks": [{"chunk_id": "c", "text": "t", "token_count": 1, "chunk_type": "section"}]}
    result = ChunkResult.model_validate(old)
    assert result.parents == [] and result.chunks[0].parent_id is None
    assert ChunkResult.model_validate_json(result.model_dump_json()) == result
