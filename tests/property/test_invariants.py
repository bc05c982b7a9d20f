"""Hypothesis invariants of the engine (DESIGN convention 6), for every stream the strategies make.

For any valid request (blocks from :mod:`tests.property.strategies`, any valid config, with or
without resources):

* chunking never raises, and the result validates against the output schema;
* nothing is lost: every kept block's text appears (whitespace-normalised, see
  :func:`norm`) in a chunk that lists the block among its sources; for a table with cells,
  every non-empty cell text does;
* exclusions match docs/chunking.md (header/footer when enabled, blank, separator-only, a
  table emitted twice: named by the chunks of the table it repeats) and are counted in the
  stats;
* chunks are in reading order (by first primary block), each chunk's block ids are in
  reading order without repeats, exist in the input and were not excluded;
* chunk ids are unique; page numbers are sorted, unique and exactly the pages of the
  chunk's primary blocks;
* overlap copies the previous chunk's trailing paragraphs (same section, never tables) without
  citing them; a chunk holding an equation block is an equation chunk; token counts are the
  word estimate of the final text;
* a split list's later pieces repeat the lead-in without citing it; a table's row chunks cover
  its data rows contiguously from 1 in batches of at most ``table_rows_per_chunk``;
* a chunk's boxes (docs/chunking.md, "Provenance") are its primary blocks' boxes merged per page
  and origin: every such block's box lies inside its page's box, every edge of a box is an
  edge of one of them, and a chunk none of whose primary blocks has a box has none;
* parents (docs/chunking.md, "Parents"): every chunk's ``parent_id`` names a parent that lists
  it, every chunk is listed once, table chunks' parents are tables, and every parent chains up
  to the document;
* the same input twice gives byte-identical result JSON (timings aside), and Block models
  give the same result as their dicts;
* the caller's blocks are unchanged.

"Appears" compares whitespace-normalised text (``" ".join(text.split())``): the engine keeps
block texts verbatim, but table cells are stripped and their inner whitespace runs collapsed
(longparser/tables.py), and a cell's text is embedded in a row rendering.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longparser import chunk_blocks
from longparser.resources import Resources
from longparser.tokens import ESTIMATE, count
from schemas import Block, ChunkRequest, ChunkResult
from tasks.payload import request_json_pieces
from tests.property.strategies import block_streams, configs

PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("LONGPARSER_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
SEPARATOR_CHARS = frozenset("_-=.·•") | frozenset(chr(c) for c in range(0x2500, 0x2580))


class HashEncoder:
    """Deterministic stand-in encoder: 3-D vectors from a text hash, some of them zero-norm."""

    name = "hash-encoder"
    weights_sha256 = None

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            digest = hashlib.sha256(text.encode("utf-8")).digest()
            vectors.append([0.0, 0.0, 0.0] if digest[0] < 32 else [(b - 128) / 128 for b in digest[1:4]])
        return vectors


class FixedLanguageId:
    def predict(self, text: str) -> tuple[str, float]:
        return ("en", 0.5 + (len(text) % 50) / 100)


RESOURCES = {
    "none": None,
    "all": Resources(
        word_list=frozenset(
            ["the", "data", "model", "shows", "results", "report", "section", "table", "value"]
        ),
        language_id=FixedLanguageId(),
        encoder=HashEncoder(),
    ),
}


def norm(text: str) -> str:
    """Whitespace-normalised text: what "appears in a chunk" compares."""
    return " ".join(text.split())


def expected_exclusion(block: dict[str, Any], exclude_headers_footers: bool) -> str | None:
    """docs/chunking.md (exclusions), independently of the engine: why a block is excluded, or None."""
    if exclude_headers_footers and block["type"] in ("header", "footer"):
        return block["type"]
    table = block.get("table")
    if block["type"] == "table" and table and table["cells"]:
        return None
    text = block["text"]
    if all(c.isspace() or unicodedata.category(c) in ("Cc", "Cf") for c in text):  # nothing visible
        return "blank"
    if all(c in SEPARATOR_CHARS or c.isspace() for c in text):
        return "separator"
    return None


def _cell_key(cell: dict[str, Any], name: str, alias: str, default: int | None = None) -> int:
    return cell.get(name, cell.get(alias, default))


def _cell_area(cell: dict[str, Any], rows: set[int], cols: set[int]) -> set[tuple[int, int]]:
    """The grid positions a cell covers: the existing rows and columns in its span."""
    r0, c0 = _cell_key(cell, "row_index", "r0"), _cell_key(cell, "col_index", "c0")
    r1 = r0 + _cell_key(cell, "row_span", "rspan", 1)
    c1 = c0 + _cell_key(cell, "col_span", "cspan", 1)
    return {(r, c) for r in rows if r0 <= r < r1 for c in cols if c0 <= c < c1}


def _shadowed_cells(cells: list[dict[str, Any]]) -> set[int]:
    """Cells whose text the engine may legitimately not show: those hidden by an overlap.

    longparser/tables.py (documented decision) builds the grid from the rows and columns where
    some cell starts, a span covers the existing rows/columns in its range, and where cells
    overlap the first non-empty text wins; a cell whose every position an earlier non-empty cell
    fills is hidden. Every other non-empty cell must appear (headers of columns without any data
    value included).
    """
    rows = {_cell_key(c, "row_index", "r0") for c in cells}
    cols = {_cell_key(c, "col_index", "c0") for c in cells}
    filled: set[tuple[int, int]] = set()
    shadowed = set()
    for index, cell in enumerate(cells):
        area = _cell_area(cell, rows, cols)
        if norm(cell["text"]):
            if area <= filled:
                shadowed.add(index)
            filled |= area
    return shadowed


def expected_texts(block: dict[str, Any]) -> list[str]:
    """The texts of a kept block that must appear in one of its chunks."""
    table = block.get("table")
    if block["type"] == "table" and table and table["cells"]:
        shadowed = _shadowed_cells(table["cells"])
        return [
            norm(cell["text"])
            for index, cell in enumerate(table["cells"])
            if norm(cell["text"]) and index not in shadowed
        ]
    return [norm(block["text"])]


def without_timings(result: ChunkResult) -> str:
    data = result.model_dump(mode="json")
    data["stats"].pop("timings_ms")
    return json.dumps(data, ensure_ascii=False, sort_keys=True)


def check_exclusions(blocks: list[dict[str, Any]], config: dict[str, Any], result: ChunkResult) -> set[str]:
    reasons = {b["block_id"]: expected_exclusion(b, config["exclude_headers_footers"]) for b in blocks}
    counts: dict[str, int] = {}
    for reason in reasons.values():
        if reason is not None:
            counts[reason] = counts.get(reason, 0) + 1
    duplicates = check_duplicate_tables(blocks, result)
    if duplicates:
        counts["duplicate_table"] = len(duplicates)
    assert result.stats.blocks_in == len(blocks)
    assert result.stats.blocks_excluded == counts
    return {block_id for block_id, reason in reasons.items() if reason is None} - duplicates


def check_duplicate_tables(blocks: list[dict[str, Any]], result: ChunkResult) -> set[str]:
    """The tables chunked once as an earlier one (docs/chunking.md, "Tables from filings and
    office documents"): each is named by the chunks of a table of its section that comes before
    it and shows the same cell texts, so nothing of it is lost. Returns their block ids."""
    by_id = {b["block_id"]: b for b in blocks}
    position = {b["block_id"]: i for i, b in enumerate(blocks)}
    named: dict[str, str] = {}
    for chunk in result.chunks:
        for duplicate in chunk.metadata.get("duplicate_block_ids", []):
            named[duplicate] = chunk.metadata["table_block_id"]
    for duplicate, first in named.items():
        again, kept = by_id[duplicate], by_id[first]
        assert again["type"] == kept["type"] == "table" and position[first] < position[duplicate]
        assert again["hierarchy_path"] == kept["hierarchy_path"]
        assert set(expected_texts(again)) == set(expected_texts(kept)), f"{duplicate} is not {first}"
    return set(named)


def check_nothing_lost(blocks: list[dict[str, Any]], kept: set[str], result: ChunkResult) -> None:
    texts_by_block: dict[str, list[str]] = {}
    for chunk in result.chunks:
        for block_id in chunk.block_ids:
            texts_by_block.setdefault(block_id, []).append(norm(chunk.text))
    for block in blocks:
        if block["block_id"] not in kept:
            continue
        holding = texts_by_block.get(block["block_id"], [])
        assert holding, f"kept block {block['block_id']} ({block['type']}) is in no chunk"
        for text in expected_texts(block):
            assert any(text in chunk_text for chunk_text in holding), (
                f"text of {block['block_id']} ({block['type']}) missing: {text[:80]!r}"
            )


def check_order_and_provenance(blocks: list[dict[str, Any]], kept: set[str], result: ChunkResult) -> None:
    position = {b["block_id"]: i for i, b in enumerate(blocks)}
    page = {b["block_id"]: b["provenance"]["page_number"] for b in blocks}
    firsts = []
    for chunk in result.chunks:
        assert chunk.block_ids, f"chunk {chunk.chunk_id} has no primary block"
        assert set(chunk.block_ids) <= kept, f"unknown or excluded block in {chunk.block_ids}"
        order = [position[b] for b in chunk.block_ids]
        assert order == sorted(set(order)), f"block ids out of reading order: {chunk.block_ids}"
        assert chunk.page_numbers == sorted({page[b] for b in chunk.block_ids})
        firsts.append(order[0])
    assert firsts == sorted(firsts), "chunks out of reading order"
    ids = [chunk.chunk_id for chunk in result.chunks]
    assert len(ids) == len(set(ids)), "duplicate chunk ids"
    assert result.stats.chunks_out == len(result.chunks)


def _normalised(bbox: dict[str, Any]) -> tuple[str, float, float, float, float]:
    """(origin, left, top, right, bottom) with top/bottom as the origin reads them."""
    origin = bbox.get("coord_origin", "TOPLEFT")
    low, high = sorted((bbox["y0"], bbox["y1"]))
    top, bottom = (low, high) if origin == "TOPLEFT" else (high, low)
    return origin, min(bbox["x0"], bbox["x1"]), top, max(bbox["x0"], bbox["x1"]), bottom


def check_boxes(blocks: list[dict[str, Any]], result: ChunkResult) -> None:
    """Each chunk's boxes: its primary blocks' boxes, one rectangle per page and origin that
    holds them all and is no larger (every edge is one block's edge)."""
    by_id = {b["block_id"]: b for b in blocks}
    for chunk in result.chunks:
        found: dict[tuple[Any, str], list[tuple[float, float, float, float]]] = {}
        for block_id in chunk.block_ids:
            provenance = by_id[block_id]["provenance"]
            if provenance["bbox"] is not None:
                origin, *edges = _normalised(provenance["bbox"])
                found.setdefault((provenance["page_number"], origin), []).append(tuple(edges))
        assert len(chunk.boxes) == len(found), f"{chunk.chunk_id}: boxes {chunk.boxes} for {sorted(found)}"
        pages = [box["page"] for box in chunk.boxes]
        assert pages == sorted(pages), "boxes out of page order"
        for box in chunk.boxes:
            members = found[(box["page"], box["coord_origin"])]
            down = 1 if box["coord_origin"] == "TOPLEFT" else -1  # which way a bottom edge lies
            for left, top, right, bottom in members:
                assert box["l"] <= left and right <= box["r"], f"{(left, right)} outside {box}"
                assert down * box["t"] <= down * top, f"top {top} outside {box}"
                assert down * bottom <= down * box["b"], f"bottom {bottom} outside {box}"
            assert box["l"] in {m[0] for m in members} and box["t"] in {m[1] for m in members}
            assert box["r"] in {m[2] for m in members} and box["b"] in {m[3] for m in members}


def check_overlap_and_types(
    blocks: list[dict[str, Any]], config: dict[str, Any], result: ChunkResult
) -> None:
    """Overlap copies the previous chunk's trailing paragraphs (same section, no tables), never
    cites them; chunks holding an equation block say so, and only they are equation chunks;
    token counts are the word estimate's."""
    by_id = {b["block_id"]: b for b in blocks}
    tables = ("table", "table_schema")
    for index, chunk in enumerate(result.chunks):
        assert chunk.token_count == count(ESTIMATE, chunk.text)
        if chunk.chunk_type not in tables and any(by_id[b]["type"] == "equation" for b in chunk.block_ids):
            # equation when the equation and the text next to it are all it holds (build.chunk_type)
            assert chunk.equation_detected and chunk.chunk_type in ("equation", "section")
        if chunk.chunk_type == "equation":
            assert chunk.equation_detected
        copied = chunk.metadata.get("overlap_block_ids", [])
        assert chunk.overlap_with_previous == bool(copied)
        if not copied:
            continue
        previous = result.chunks[index - 1]
        assert index > 0 and 1 <= len(copied) <= config["overlap_blocks"]
        assert previous.section_path == chunk.section_path
        assert previous.chunk_type not in tables and chunk.chunk_type not in tables
        assert previous.block_ids[-len(copied) :] == copied and not set(copied) & set(chunk.block_ids)
        assert all(by_id[b]["type"] == "paragraph" for b in copied)
        assert chunk.text.startswith("\n\n".join(by_id[b]["text"] for b in copied))


def check_list_and_table_pieces(
    blocks: list[dict[str, Any]], config: dict[str, Any], result: ChunkResult
) -> None:
    """A split list's later pieces carry the lead-in (context, not cited); a table's row
    chunks cover data rows 1..n contiguously per column band, at most table_rows_per_chunk each."""
    by_id = {b["block_id"]: b for b in blocks}
    ranges: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for chunk in result.chunks:
        meta = chunk.metadata
        if meta.get("lead_in_repeated"):
            lead = meta["lead_in_block_id"]
            # A small piece may since have merged with a neighbour (even an equation chunk):
            # the lead-in stays context, uncited, and its text stays in the chunk.
            assert lead not in chunk.block_ids and by_id[lead]["text"] in chunk.text
        if chunk.chunk_type == "table" and meta.get("row_start") is not None:
            key = (meta["table_block_id"], json.dumps(meta.get("col_band")))
            ranges.setdefault(key, []).append((meta["row_start"], meta["row_end"]))
    for key, spans in ranges.items():
        assert spans[0][0] == 1, f"{key}: rows do not start at 1: {spans}"
        for (start, end), (next_start, _) in zip(spans, [*spans[1:], (None, None)], strict=True):
            assert 1 <= end - start + 1 <= config["table_rows_per_chunk"], f"{key}: batch {start}-{end}"
            assert next_start is None or next_start == end + 1, f"{key}: rows not contiguous: {spans}"


def check_headings_lead(
    blocks: list[dict[str, Any]], kept: set[str], config: dict[str, Any], result: ChunkResult
) -> None:
    """No chunk ends with a heading block unless the document does (its last kept block) or,
    with merging off, the chunk is made only of headings; embed_text is the chunk's
    breadcrumb (titles of its section path) then its text."""
    kind = {b["block_id"]: b["type"] for b in blocks}
    last_kept = next((b for b in reversed(blocks) if b["block_id"] in kept), None)
    for chunk in result.chunks:
        last = chunk.block_ids[-1]
        if kind[last] == "heading" and last != (last_kept or {}).get("block_id"):
            only_headings = all(kind[b] == "heading" for b in chunk.block_ids)
            assert config["min_tokens"] == 0 and only_headings, f"chunk ends with heading {last}"
        if not config.get("heading_context"):
            assert chunk.embed_text is None
            continue
        assert chunk.embed_text is not None and chunk.embed_text.endswith(chunk.text)
        titles = chunk.embed_text[: len(chunk.embed_text) - len(chunk.text)].splitlines()
        assert all(title in chunk.section_path for title in titles)


def check_parents(blocks: list[dict[str, Any]], result: ChunkResult) -> None:
    """Every chunk's parent_id names a parent that lists it, every chunk is listed once, parent
    ids are unique and every parent chains up to the document (``doc``); a table's chunks have
    the table as parent, other chunks a section or the document; a parent spans kept blocks in
    reading order."""
    if not result.chunks:
        assert result.parents == []
        return
    parents = {p.id: p for p in result.parents}
    assert len(parents) == len(result.parents), "parent ids repeat"
    listed = [cid for p in result.parents for cid in p.chunk_ids]
    assert sorted(listed) == sorted(c.chunk_id for c in result.chunks), "a chunk not listed once"
    for chunk in result.chunks:
        parent = parents[chunk.parent_id]
        assert chunk.chunk_id in parent.chunk_ids
        table = chunk.chunk_type in ("table", "table_schema")
        assert (parent.kind == "table") == table, f"{chunk.chunk_type} chunk under a {parent.kind}"
    assert result.parents[0].id == "doc" and result.parents[0].parent_id is None
    position = {b["block_id"]: i for i, b in enumerate(blocks)}
    for parent in result.parents:
        assert position[parent.first_block_id] <= position[parent.last_block_id]
        chain, current = set(), parent
        while current.parent_id is not None:
            assert current.id not in chain, "a cycle among parents"
            chain.add(current.id)
            current = parents[current.parent_id]
        assert current.id == "doc"


@PROPERTY_SETTINGS
@given(blocks=block_streams(), config=configs(), resources=st.sampled_from(sorted(RESOURCES)))
def test_valid_requests_keep_every_invariant(
    blocks: list[dict[str, Any]], config: dict[str, Any], resources: str
) -> None:
    snapshot = copy.deepcopy(blocks)

    result = chunk_blocks(blocks, config, RESOURCES[resources], document_id="prop-doc")

    assert blocks == snapshot, "caller's blocks were modified"
    ChunkResult.model_validate(result.model_dump(mode="json"))  # output schema holds
    kept = check_exclusions(blocks, config, result)
    check_nothing_lost(blocks, kept, result)
    check_order_and_provenance(blocks, kept, result)
    check_overlap_and_types(blocks, config, result)
    check_list_and_table_pieces(blocks, config, result)
    check_headings_lead(blocks, kept, config, result)
    check_boxes(blocks, result)
    check_parents(blocks, result)
    again = chunk_blocks(blocks, config, RESOURCES[resources], document_id="prop-doc")
    assert without_timings(again) == without_timings(result), "same input gave a different result"


@settings(PROPERTY_SETTINGS, max_examples=60)
@given(blocks=block_streams(max_blocks=25), config=configs())
def test_block_models_and_their_dicts_give_the_same_result(
    blocks: list[dict[str, Any]], config: dict[str, Any]
) -> None:
    models = [Block.model_validate(b) for b in blocks]
    frozen = [m.model_dump() for m in models]

    from_dicts = chunk_blocks(blocks, config, None, document_id="d")
    from_models = chunk_blocks(models, config, None, document_id="d")

    assert without_timings(from_models) == without_timings(from_dicts)
    assert [m.model_dump() for m in models] == frozen, "caller's Block models were modified"


FILING_TABLES = Path(__file__).resolve().parents[1] / "fixtures" / "filing_tables"


@settings(PROPERTY_SETTINGS, max_examples=40)
@given(config=configs())
def test_filing_tables_keep_every_invariant(config: dict[str, Any]) -> None:
    """The four table rules (signs joined, columns dropped, a table emitted twice chunked once, a
    list converted as a table) under any config: the strategies' tables rarely take these shapes."""
    blocks = json.loads((FILING_TABLES / "synthetic_10k_tables.json").read_text(encoding="utf-8"))["blocks"]

    result = chunk_blocks(blocks, config, None, document_id="filing")

    kept = check_exclusions(blocks, config, result)
    assert result.stats.blocks_excluded.get("duplicate_table") == 1 and "t1-again" not in kept
    check_nothing_lost(blocks, kept, result)
    check_order_and_provenance(blocks, kept, result)
    check_overlap_and_types(blocks, config, result)
    check_list_and_table_pieces(blocks, config, result)
    check_headings_lead(blocks, kept, config, result)


@settings(PROPERTY_SETTINGS, max_examples=60)
@given(blocks=block_streams(max_blocks=25), config=configs())
def test_the_request_a_producer_sends_validates_to_the_request_it_was(
    blocks: list[dict[str, Any]], config: dict[str, Any]
) -> None:
    """Blocks travel without their default values (``request_json_pieces``): the worker's
    validation fills them in again, so it reads the very request the producer validated."""
    request = ChunkRequest.model_validate({"document_id": "d", "blocks": blocks, "config": config})
    sent = ChunkRequest.model_validate_json(b"".join(request_json_pieces(request)))
    assert sent == request
    assert sent.config.model_fields_set == request.config.model_fields_set


@pytest.mark.parametrize("table_format", ["row_record", "pipe", "labelled", "markdown"])
def test_header_of_an_empty_column_is_kept(table_format: str) -> None:
    """Regression (found by the invariant above): row records once left out the header of a
    column with no data value when no schema chunk was generated, so "Notes" vanished."""
    cells = [
        {"row_index": 0, "col_index": 0, "text": "Name"},
        {"row_index": 0, "col_index": 1, "text": "Notes"},
        {"row_index": 1, "col_index": 0, "text": "Ada"},
        {"row_index": 1, "col_index": 1, "text": ""},
    ]
    block = {"block_id": "t", "type": "table", "text": "", "table": {"cells": cells}}

    result = chunk_blocks([block], {"generate_schema_chunks": False, "table_chunk_format": table_format})

    assert [c.text for c in result.chunks] == [{
        "row_record": "Row 1: Name=Ada; Notes=",
        "pipe": "Name | Notes\nAda | ",
        "labelled": "Name\nAda: Notes=",  # the label column's name, which its rows never write
        "markdown": "| Name | Notes |\n|---|---|\n| Ada |  |",
    }[table_format]]


def test_merged_list_pieces_repeat_the_lead_in_only_once() -> None:
    """Found while checking lead-in invariants: pieces 2 and 3 of a split list merge (piece 3 is
    under min_tokens) and the lead-in then appears twice in the merged chunk's text."""

    def block(i: int, text: str, kind: str = "list_item") -> dict[str, Any]:
        return {"block_id": f"b{i}", "type": kind, "text": text, "hierarchy_path": ["S"]}

    bullet = "• " + " ".join(["step"] * 12)
    blocks = [block(0, "The plan has these steps:", "paragraph")]
    blocks += [block(i, bullet) for i in range(1, 5)] + [block(5, "• tiny")]

    result = chunk_blocks(blocks, {"max_tokens": 40, "min_tokens": 10, "overlap_blocks": 0})

    assert [c.block_ids for c in result.chunks] == [["b0", "b1", "b2"], ["b3", "b4", "b5"]]
    last = result.chunks[1].text
    assert last.startswith("The plan has these steps:\n") and last.endswith("• tiny")
    assert last.count("The plan has these steps:") == 1 and last.count(bullet) == 2
