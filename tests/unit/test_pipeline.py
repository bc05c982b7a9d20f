"""The whole call (plan cases B01, B02): empty input, provenance, inputs never mutated,
determinism and chunk ids, stats, reading order.

Token arithmetic (the word estimate): ``n`` words -> ``int(n * 1.33)`` tokens, e.g. 10 -> 13,
20 -> 26, 40 -> 53.
"""

from __future__ import annotations

import copy
import gc
import importlib.util
import re
import threading
from pathlib import Path
from typing import Any

import pytest

import longparser.prepare as prepare_module
from longparser import Resources, chunk_blocks, chunk_request
from longparser.ids import chunk_ids, content_digest
from longparser.pipeline import collector_paused
from schemas import Block, ChunkRequest, InputError, parse_input
from schemas.blocks import validate_block_fields
from tests.unit.engine_helpers import PEOPLE, run_engine, table_dict, view, words

# --- B01 empty input ------------------------------------------------------------------------------


@pytest.mark.case("B01")
def test_B01_empty_input_gives_no_chunks_and_zero_stats():
    result = chunk_blocks([])
    assert result.chunks == []
    assert result.document_id is None
    assert result.stats.blocks_in == 0
    assert result.stats.chunks_out == 0
    assert result.stats.blocks_excluded == {}
    assert result.stats.chunks_by_type == {}
    assert set(result.stats.timings_ms) >= {"prepare", "structure", "semantic", "quality", "total"}


@pytest.mark.case("B01")
def test_B01_only_excluded_blocks_gives_no_chunks_but_counts(make_block):
    blocks = [make_block("", "paragraph"), make_block("Page 1", "footer"), make_block("-----")]
    result = run_engine(blocks)
    assert result.chunks == []
    assert result.stats.blocks_in == 3
    assert result.stats.blocks_excluded == {"blank": 1, "footer": 1, "separator": 1}


# --- B02 normal input -----------------------------------------------------------------------------


@pytest.mark.case("B02")
def test_B02_normal_section_is_one_chunk_with_provenance(make_block):
    texts = ["Intro heading", words(10), words(12, "beta")]
    blocks = [
        make_block(texts[0], "heading", heading_level=1, path=["Intro"]),
        make_block(texts[1], page=1, path=["Intro"]),
        make_block(texts[2], page=2, path=["Intro"]),
    ]
    result = run_engine(blocks)
    assert view(result) == [("section", "\n\n".join(texts), ["b1", "b2", "b3"], [1, 2])]
    chunk = result.chunks[0]
    assert chunk.section_path == ["Intro"]
    assert chunk.token_count == int(24 * 1.33)
    assert chunk.overlap_with_previous is False and chunk.equation_detected is False
    assert re.fullmatch(r"[0-9a-f]{32}", chunk.chunk_id)
    assert 0.0 <= chunk.quality_score <= 1.0 and "quality" in chunk.metadata
    assert result.document_id == "doc-1"
    assert result.stats.chunks_out == 1 and result.stats.chunks_by_type == {"section": 1}


@pytest.mark.case("B02")
@pytest.mark.parametrize("as_models", [False, True], ids=["dicts", "models"])
def test_B02_caller_blocks_are_never_mutated(make_block, monkeypatch, as_models):
    monkeypatch.setattr(prepare_module, "looks_like_equation", lambda text, prev: text == "E = mc2")
    raw = [
        make_block("Lead in:"), make_block("E = mc2"), make_block(words(30)),
        make_block("one", "list_item"), make_block("two", "list_item"),
        make_block("Table 1: People", "caption"), make_block("", "table", table=table_dict(PEOPLE)),
        make_block("Page 1", "footer"),
    ]
    blocks = [Block.model_validate(b) for b in raw] if as_models else raw
    before = [b.model_dump() for b in blocks] if as_models else copy.deepcopy(raw)
    chunk_blocks(blocks, {"max_tokens": 20, "min_tokens": 5, "overlap_blocks": 1})
    after = [b.model_dump() for b in blocks] if as_models else blocks
    assert after == before
    if as_models:
        assert blocks[1].type == "paragraph"


@pytest.mark.case("B02")
def test_B02_same_input_twice_gives_identical_result_and_ids(make_block):
    blocks = [make_block(words(20)), make_block(words(20)), make_block(words(20)),
              make_block("", "table", table=table_dict(PEOPLE))]
    first = chunk_blocks(blocks, {"max_tokens": 60, "min_tokens": 10}, document_id="doc-1")
    second = chunk_blocks(copy.deepcopy(blocks), {"max_tokens": 60, "min_tokens": 10}, document_id="doc-1")
    dump = lambda r: r.model_dump(exclude={"stats": {"timings_ms"}})  # noqa: E731
    assert dump(first) == dump(second)
    ids = [c.chunk_id for c in first.chunks]
    assert len(set(ids)) == len(ids) == 4
    other = chunk_blocks(blocks, {"max_tokens": 60, "min_tokens": 10}, document_id="doc-2")
    assert not set(ids) & {c.chunk_id for c in other.chunks}


@pytest.mark.case("B02")
@pytest.mark.parametrize("enabled", [True, False])
def test_B02_gc_setting_restored_after_call(make_block, enabled):
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        chunk_blocks([make_block("Text.")])
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


class _CollectorWatch:
    """A language identifier that records whether the collector runs while the engine scores,
    and (when given an event) holds the call there until the event is set."""

    def __init__(self, hold: threading.Event | None = None) -> None:
        self.enabled: list[bool] = []
        self.hold, self.scoring = hold, threading.Event()

    def predict(self, text: str) -> tuple[str, float]:
        self.enabled.append(gc.isenabled())
        self.scoring.set()
        if self.hold is not None:
            assert self.hold.wait(30)
        return "en", 0.99


@pytest.mark.case("B02")
def test_B02_collector_is_paused_during_a_call_and_back_after(make_block):
    was = gc.isenabled()
    gc.enable()
    try:
        watch = _CollectorWatch()
        blocks = [make_block(words(12)), make_block(words(12, "beta"))]
        chunk_blocks(blocks, {"max_tokens": 20, "min_tokens": 0}, Resources(language_id=watch))
        assert watch.enabled and not any(watch.enabled)
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.case("B02")
def test_B02_nested_pauses_resume_the_collector_when_the_last_ends():
    was = gc.isenabled()
    gc.enable()
    try:
        with collector_paused():
            with collector_paused():
                assert not gc.isenabled()
            assert not gc.isenabled()  # the outer call is still under way
        assert gc.isenabled()
        with pytest.raises(RuntimeError), collector_paused():
            raise RuntimeError("a call that fails")
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.case("B02")
def test_B02_calls_in_two_threads_share_one_pause(make_block):
    was = gc.isenabled()
    gc.enable()
    hold = threading.Event()
    held = _CollectorWatch(hold)
    blocks = [make_block(words(12))]
    thread = threading.Thread(target=chunk_blocks, args=(blocks, None, Resources(language_id=held)))
    try:
        thread.start()
        assert held.scoring.wait(30)
        chunk_blocks(blocks)  # starts and ends while the other thread's call is under way
        assert not gc.isenabled()
        hold.set()
        thread.join(30)
        assert not thread.is_alive()
        assert gc.isenabled()
    finally:
        hold.set()
        thread.join(30)
        (gc.enable if was else gc.disable)()


def _gen_blocks() -> Any:
    path = Path(__file__).resolve().parents[2] / "bench" / "gen_blocks.py"
    spec = importlib.util.spec_from_file_location("gen_blocks", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_VARIANT = {"overlap_blocks": 2, "table_chunk_format": "pipe", "max_tokens": 120, "min_tokens": 30,
            "heading_context": True, "pack_tables": True}


@pytest.mark.case("B02")
@pytest.mark.parametrize("config", [None, _VARIANT])
def test_B02_a_call_leaves_no_cyclic_garbage(config):
    """What the engine drops is freed by reference counting, so pausing the collector during a
    call leaves nothing for it to find afterwards (the pause cannot grow a worker's memory)."""
    blocks = _gen_blocks().generate(400, 7)
    was = gc.isenabled()
    try:
        chunk_blocks(blocks, config, document_id="d")  # first-use caches
        gc.collect()
        gc.disable()
        result = chunk_blocks(blocks, config, document_id="d")
        assert result.chunks
        assert gc.collect() == 0
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.case("B02")
def test_B02_chunk_id_is_the_content_hash_then_the_occurrence():
    ids = chunk_ids("doc", [("section", ["a", "b"]), ("section", ["c"]), ("section", ["a", "b"])])
    assert ids[0] == content_digest("doc", "section", ["a", "b"])[:32]
    assert len(set(ids)) == 3  # the duplicate's occurrence number keeps it distinct
    assert ids == chunk_ids("doc", [("section", ["a", "b"]), ("section", ["c"]), ("section", ["a", "b"])])
    assert chunk_ids(None, [("section", ["a", "b"])])[0] != ids[0]
    assert chunk_ids("doc", [("list", ["a", "b"])])[0] != ids[0]
    assert chunk_ids("doc", [("section", ["ab"])])[0] != ids[0]  # part boundaries count
    # position does not: the same content after an inserted chunk keeps its id
    assert chunk_ids("doc", [("section", ["new"]), ("section", ["a", "b"])])[1] == ids[0]


@pytest.mark.case("B02")
def test_B02_ids_survive_an_edit_elsewhere_and_ignore_overlap(make_block):
    paras = [words(30, f"w{i}") for i in range(8)]
    config = {"max_tokens": 60, "min_tokens": 0, "overlap_blocks": 1}
    before = chunk_blocks([make_block(p) for p in paras], config, document_id="doc")
    edited = [paras[0], paras[1].replace("w1", "changed", 2), *paras[2:]]
    after = chunk_blocks([make_block(p) for p in edited], config, document_id="doc")
    assert any(c.overlap_with_previous for c in after.chunks)  # overlap is in play
    old, new = [c.chunk_id for c in before.chunks], [c.chunk_id for c in after.chunks]
    assert len(old) == len(new) >= 4
    # only the edited chunk's id changes: the next chunk's overlap copy of it is not its content
    assert [o == n for o, n in zip(old, new, strict=True)].count(False) == 1


@pytest.mark.case("B02")
def test_B02_chunk_request_carries_document_id(make_block):
    request = ChunkRequest(document_id="report-7", blocks=[make_block("Hello world.")])
    result = chunk_request(request)
    assert result.document_id == "report-7"
    assert [c.text for c in result.chunks] == ["Hello world."]


@pytest.mark.case("B02")
def test_B02_equation_retag_counts_and_config_off(make_block, monkeypatch):
    monkeypatch.setattr(prepare_module, "looks_like_equation", lambda text, prev: text.startswith("f(x)"))
    blocks = [make_block("f(x) = a x + b"), make_block("x = 1", "equation"), make_block("Plain text.")]
    on = chunk_blocks(blocks, {"overlap_blocks": 0, "min_tokens": 0})
    assert on.stats.equations_detected == 1
    assert [(c.chunk_type, c.equation_detected) for c in on.chunks] == [("equation", True)]
    off = chunk_blocks(blocks, {"overlap_blocks": 0, "min_tokens": 0, "detect_equations": False})
    assert off.stats.equations_detected == 0
    assert off.chunks[0].chunk_type == "equation"  # the extractor-typed equation stays one


# --- reading order (B13) --------------------------------------------------------------------------


@pytest.mark.case("B13")
def test_B13_reading_order_of_prose_lists_and_tables(make_block):
    blocks = [
        make_block("Intro.", page=1), make_block("Items:", page=1), make_block("x", "list_item", page=1),
        make_block("Table 9: T", "caption", page=2),
        make_block("", "table", page=2, table=table_dict([["A"], ["1"]])),
        make_block("Middle.", page=2), make_block("E = 1", "equation", page=3), make_block("End.", page=3),
    ]
    result = run_engine(blocks)
    assert [(c.chunk_type, c.block_ids) for c in result.chunks] == [
        ("section", ["b1"]), ("list", ["b2", "b3"]), ("table_schema", ["b4", "b5"]), ("table", ["b5"]),
        ("equation", ["b6", "b7", "b8"]),
    ]
    firsts = [int(c.block_ids[0][1:]) for c in result.chunks]
    assert firsts == sorted(firsts)


# --- intake: a dict is read in the shape of a Block's fields --------------------------------------

_INTAKE_SHAPES = [
    {"block_id": "a", "type": "paragraph", "text": "Plain."},
    {"block_id": "b", "type": "heading", "text": None, "hierarchy_path": None, "provenance": None,
     "confidence": None, "heading_level": 2, "unknown_field": 1},
    {"block_id": "c", "type": "table", "table": {"cells": [
        {"r0": 0, "c0": 0, "text": "Name", "column_header": True},
        {"row_index": 1, "col_index": 0, "rspan": 2, "text": None}]},
     "provenance": {"page_number": 4, "bbox": {"x0": 1, "y1": 2}}, "confidence": {"overall": 0.5}},
]


@pytest.mark.parametrize("block", _INTAKE_SHAPES, ids=["plain", "nulls-and-extra", "table-with-aliases"])
def test_a_dict_block_is_validated_into_exactly_the_fields_of_its_model(block):
    assert validate_block_fields(block) == Block.model_validate(block).__dict__


def test_the_dict_form_has_every_block_field():
    fields = validate_block_fields({"block_id": "a", "type": "code", "text": ""})
    assert set(fields) == set(Block.model_fields)


def test_a_rejected_dict_block_is_named_by_position_with_the_block_models_own_messages():
    with pytest.raises(InputError) as caught:
        chunk_blocks([{"block_id": "a", "type": "paragraph", "text": "ok"},
                      {"block_id": "", "type": "sidebar", "text": "", "confidence": {"overall": 2}}])
    assert str(caught.value) == (
        "block 1: block_id: String should have at least 1 character; block 1: type: Input should be "
        "'heading', 'paragraph', 'list_item', 'table', 'figure', 'caption', 'footer', 'header', 'equation' "
        "or 'code'; block 1: confidence.overall: Input should be less than or equal to 1")


def test_a_config_typo_in_the_library_call_gets_a_suggestion():
    with pytest.raises(InputError, match=r"^config\.max_tokns: unknown field, did you mean 'max_tokens'\?$"):
        chunk_blocks([{"block_id": "a", "type": "paragraph", "text": "ok"}], {"max_tokns": 256})


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        ({"metadata": {}, "pages": [{"blocks": []}]},
         "expected a sequence of blocks, got a LongParser document dump (an object with 'pages'); "
         "schemas.parse_input(data) validates any input shape into a ChunkRequest: chunk its .blocks"),
        ({"document_id": "d", "blocks": []},
         "expected a sequence of blocks, got a ChunkRequest (an object with 'blocks'); schemas.parse_input"),
        ({"schema_name": "DoclingDocument", "name": "x"},
         "expected a sequence of blocks, got a DoclingDocument: convert it with "
         "schemas.parse_input(document, docling=longparser_client.converters.docling.blocks_from_docling)"),
        ("blocks.json", "expected a sequence of blocks (Block models or dicts), got a string"),
    ],
    ids=["dump", "request", "docling", "string"],
)
def test_a_whole_input_passed_as_blocks_says_how_to_turn_it_into_blocks(blocks, message):
    with pytest.raises(InputError) as caught:
        chunk_blocks(blocks)
    assert str(caught.value).startswith(message)


def test_every_input_shape_becomes_blocks_through_parse_input():
    blocks = [{"block_id": "a", "type": "paragraph", "text": "alpha beta", "provenance": {"page_number": 1}}]
    dump = {"metadata": {"document_id": "d"}, "pages": [{"page_number": 1, "blocks": blocks}]}
    expected = chunk_blocks(blocks, document_id="d").chunks
    for data in (blocks, {"document_id": "d", "blocks": blocks}, dump):
        request = parse_input(data, default_document_id="d")
        result = chunk_blocks(request.blocks, request.config, document_id=request.document_id)
        assert result.chunks == expected


@pytest.mark.parametrize("provenance", [{}, {"provenance": None}, {"provenance": {"bbox": None}}],
                         ids=["absent", "null", "without-page"])
def test_a_block_without_a_stated_page_gives_no_page_like_markdown(provenance: dict) -> None:
    from loaders.markdown import blocks_from_markdown

    block = {"block_id": "a", "type": "paragraph", "text": "alpha beta", **provenance}
    [json_chunk] = chunk_blocks([block]).chunks
    [markdown_chunk] = chunk_blocks(blocks_from_markdown("alpha beta")).chunks
    assert json_chunk.page_numbers == markdown_chunk.page_numbers == []
    assert Block.model_validate(block).provenance["page_number"] is None
    # a dump states the page its blocks are listed under
    dump = {"metadata": {"document_id": "d"}, "pages": [{"page_number": 3, "blocks": [block]}]}
    request = parse_input(dump)
    assert chunk_blocks(request.blocks, document_id="d").chunks[0].page_numbers == [3]


def test_duplicate_block_ids_are_refused_naming_both_positions():
    blocks = [{"block_id": "a", "type": "paragraph", "text": "one"},
              {"block_id": "b", "type": "paragraph", "text": "two"},
              {"block_id": "a", "type": "paragraph", "text": "three"}]
    message = "blocks 0 and 2 have the same block_id 'a': block ids must be unique within a document"
    with pytest.raises(InputError, match=f"^{message}$"):
        chunk_blocks(blocks)
    with pytest.raises(InputError, match=f"^blocks: {message}$"):
        parse_input({"document_id": "d", "blocks": blocks})
