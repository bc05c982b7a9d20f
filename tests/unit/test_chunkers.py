"""Controlled chunker tests: every case of the test plan (B01-B14, S01-S08) and DEC-04.

Each test names its plan case in its name and in a ``case`` marker, so ``pytest -k B09`` finds
it. The controlled group runs with no model and no network: the sentence-transformers SDK is a
stub (fixed 2-D vectors, the production loader/cosine/packing code runs), fastText and the word
list are fakes handed in through :class:`longparser.resources.Resources`. Fixtures build fresh
blocks per test; several tests assert the caller's blocks are unchanged after chunking.

Sections: structural engine (B01-B13, DEC-04); equation detection and quality (B13, B14);
semantic boundaries (S01-S08).
"""

from __future__ import annotations

import copy
import gc
import json
import logging
import os
import re
import sys
import types
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import longparser.pipeline as pipeline_module
import longparser.prepare as prepare_module
from loaders.encoder import OFFLINE_ENV, QUIET_ENV, load_encoder
from loaders.pinned_model import MODEL_NAME, EncoderUnavailable, file_sha256
from loaders.resources import build_resources
from longparser import Resources, chunk_blocks, chunk_request
from longparser.equations import (
    EQUATION_THRESHOLD,
    equation_score,
    equation_signals,
    looks_like_equation,
    pattern_kinds,
)
from longparser.ids import chunk_id
from longparser.prepare import is_separator
from longparser.quality import (
    LANGUAGE_SAMPLE_CHARS,
    UNKNOWN_SOURCES_SCORE,
    alphabetic_tokens,
    noise_count,
    score_chunk,
)
from longparser.semantic import (
    adjacent_similarities,
    boundaries_from_vectors,
    cosine_similarity,
    section_boundaries,
)
from schemas import Block, ChunkRequest, ChunkResult, SemanticStats

# ================================================================================================
# Controlled tests of the structural engine: plan cases B01-B13 (structural parts) and DEC-04.
#
# Every chunking test asserts exact texts, block ids, pages, section paths and types. Token
# arithmetic (DEC-04): ``n`` words -> ``int(n * 1.33)`` tokens, e.g. 10 -> 13, 20 -> 26,
# 40 -> 53. Equation detection is switched off (or replaced) where a test is about structure,
# so these tests do not depend on the detector's heuristics.
# ================================================================================================

# Structure-only defaults: no overlap, no merging, no detector, unless a test says otherwise.
_S_BASE: dict[str, Any] = {"overlap_blocks": 0, "min_tokens": 0, "detect_equations": False}


def _s_words(n: int, word: str = "alpha") -> str:
    return " ".join([word] * n)


def _s_run(blocks: list[Any], resources: Resources | None = None, **config: Any) -> ChunkResult:
    return chunk_blocks(blocks, {**_S_BASE, **config}, resources, document_id="doc-1")


def _s_view(result: ChunkResult) -> list[tuple[str, str, list[str], list[int]]]:
    """(type, text, block_ids, pages) per chunk."""
    return [(c.chunk_type, c.text, c.block_ids, c.page_numbers) for c in result.chunks]


def _s_table(rows: list[list[str]], *, flag_header: bool = False) -> dict[str, Any]:
    """A structured table dict; row 0 is the header row (flagged ``column_header`` on request)."""
    cells = [
        {"row_index": r, "col_index": c, "text": text, "column_header": flag_header and r == 0}
        for r, row in enumerate(rows)
        for c, text in enumerate(row)
    ]
    return {"n_rows": len(rows), "n_cols": len(rows[0]), "cells": cells}


_S_PEOPLE = [
    ["Name", "Year", "Field"],
    ["Ada", "1843", "Math"],
    ["Alan", "1936", "CS"],
    ["Grace", "", "Navy"],
    ["Edsger", "1968", "CS"],
    ["Barbara", "1974", "CS"],
]
_S_PEOPLE_RECORDS = [
    "Row 1: Name=Ada; Year=1843; Field=Math",
    "Row 2: Name=Alan; Year=1936; Field=CS",
    "Row 3: Name=Grace; Year=; Field=Navy",
    "Row 4: Name=Edsger; Year=1968; Field=CS",
    "Row 5: Name=Barbara; Year=1974; Field=CS",
]


# --- B01 empty input ------------------------------------------------------------------------


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
    result = _s_run(blocks)
    assert result.chunks == []
    assert result.stats.blocks_in == 3
    assert result.stats.blocks_excluded == {"blank": 1, "footer": 1, "separator": 1}


# --- B02 normal input -----------------------------------------------------------------------


@pytest.mark.case("B02")
def test_B02_normal_section_is_one_chunk_with_provenance(make_block):
    texts = ["Intro heading", _s_words(10), _s_words(12, "beta")]
    blocks = [
        make_block(texts[0], "heading", heading_level=1, path=["Intro"]),
        make_block(texts[1], page=1, path=["Intro"]),
        make_block(texts[2], page=2, path=["Intro"]),
    ]
    result = _s_run(blocks)
    assert _s_view(result) == [("section", "\n\n".join(texts), ["b1", "b2", "b3"], [1, 2])]
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
        make_block("Lead in:"), make_block("E = mc2"), make_block(_s_words(30)),
        make_block("one", "list_item"), make_block("two", "list_item"),
        make_block("Table 1: People", "caption"), make_block("", "table", table=_s_table(_S_PEOPLE)),
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
    blocks = [make_block(_s_words(20)), make_block(_s_words(20)), make_block(_s_words(20)),
              make_block("", "table", table=_s_table(_S_PEOPLE))]
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


@pytest.mark.case("B02")
def test_B02_chunk_id_is_sha256_prefix_of_its_inputs():
    ident = chunk_id("doc", 3, "section", ["b1", "b2"], "text")
    assert ident == chunk_id("doc", 3, "section", ["b1", "b2"], "text")
    assert len(ident) == 32
    assert ident != chunk_id("doc", 4, "section", ["b1", "b2"], "text")
    assert ident != chunk_id(None, 3, "section", ["b1", "b2"], "text")


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


# --- B03 blank and separator exclusion ------------------------------------------------------


@pytest.mark.case("B03")
def test_B03_blank_and_separator_blocks_excluded_with_stats(make_block):
    blocks = [
        make_block("First."), make_block(""), make_block("  \n\t"), make_block("----------"),
        make_block("· · · · ·"), make_block("──────────"), make_block("___ ___ ==="),
        make_block("• • •", "list_item"), make_block("Last."),
    ]
    result = _s_run(blocks)
    assert _s_view(result) == [("section", "First.\n\nLast.", ["b1", "b9"], [1])]
    assert result.stats.blocks_excluded == {"blank": 2, "separator": 5}
    assert result.stats.blocks_in == 9


@pytest.mark.case("B03")
@pytest.mark.parametrize(
    ("text", "expected"),
    [("-----", True), ("=== ___ ...", True), ("·•·•", True), ("┌──────┐", True), ("- - -", True),
     ("", False), ("   ", False), ("- item", False), ("1.", False), ("---a---", False)],
)
def test_B03_separator_classification(text, expected):
    assert is_separator(text) is expected


@pytest.mark.case("B03")
def test_B03_table_with_cells_but_empty_text_is_not_blank(make_block):
    result = _s_run([make_block("", "table", table=_s_table([["A"], ["1"]]))], generate_schema_chunks=False)
    assert _s_view(result) == [("table", "Row 1: A=1", ["b1"], [1])]
    assert result.stats.blocks_excluded == {}


# --- B04 normal budget overflow -------------------------------------------------------------


@pytest.mark.case("B04")
def test_B04_budget_overflow_splits_before_the_exceeding_block(make_block):
    texts = [_s_words(20, w) for w in ("one", "two", "three", "four", "five")]  # 26 tokens each
    result = _s_run([make_block(t, page=i + 1) for i, t in enumerate(texts)], max_tokens=60)
    assert _s_view(result) == [
        ("section", f"{texts[0]}\n\n{texts[1]}", ["b1", "b2"], [1, 2]),
        ("section", f"{texts[2]}\n\n{texts[3]}", ["b3", "b4"], [3, 4]),
        ("section", texts[4], ["b5"], [5]),
    ]


@pytest.mark.case("B04")
def test_B04_semantic_boundary_starts_new_chunk_across_prose_runs(make_block, monkeypatch):
    """Section-level boundary indices skip list items and still map to the right prose blocks."""
    seen: list[Any] = []

    def fake_boundaries(sections, encoder, threshold):
        seen.append(([list(s) for s in sections], threshold))
        return [{1, 3}], 4

    monkeypatch.setattr(pipeline_module, "section_boundaries", fake_boundaries)
    encoder = type("Enc", (), {"name": "stub-model", "weights_sha256": "abc"})()
    blocks = [make_block("P0."), make_block("P1."), make_block("Lead:"), make_block("item", "list_item"),
              make_block("P2."), make_block("P3.")]
    result = _s_run(blocks, Resources(encoder=encoder), use_semantic_chunking=True, semantic_threshold=0.4)
    assert seen == [([["P0.", "P1.", "P2.", "P3."]], 0.4)]
    assert [(c.chunk_type, c.text) for c in result.chunks] == [
        ("section", "P0."), ("section", "P1."), ("list", "Lead:\nitem"),
        ("section", "P2."), ("section", "P3."),
    ]
    semantic = result.stats.semantic
    assert (semantic.requested, semantic.available, semantic.boundaries, semantic.texts_embedded) == (
        True, True, 2, 4)
    assert (semantic.model, semantic.weights_sha256) == ("stub-model", "abc")


@pytest.mark.case("B04")
def test_B04_semantic_requested_without_encoder_packs_structurally(make_block, monkeypatch, caplog):
    monkeypatch.setattr(pipeline_module, "section_boundaries", lambda *a: pytest.fail("encoder path used"))
    blocks = [make_block("A."), make_block("B.")]
    with caplog.at_level(logging.WARNING, logger="longparser.pipeline"):
        result = _s_run(blocks, Resources(encoder_error="sentence-transformers not installed"),
                        use_semantic_chunking=True)
    assert [c.text for c in result.chunks] == ["A.\n\nB."]
    semantic = result.stats.semantic
    assert (semantic.requested, semantic.available) == (True, False)
    assert semantic.reason == "sentence-transformers not installed"
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
    default = _s_run(blocks, use_semantic_chunking=True)
    assert default.stats.semantic.reason == "no encoder provided"


@pytest.mark.case("B04")
def test_B04_semantic_off_never_touches_the_encoder(make_block, monkeypatch):
    class _Untouchable:
        name, weights_sha256 = "stub", None

        def encode(self, texts):
            raise AssertionError("encoder used with semantic mode off")

    monkeypatch.setattr(pipeline_module, "section_boundaries", lambda *a: pytest.fail("boundaries computed"))
    result = _s_run([make_block("A."), make_block("B.")], Resources(encoder=_Untouchable()))
    assert [c.text for c in result.chunks] == ["A.\n\nB."]
    assert result.stats.semantic.requested is False and result.stats.semantic.texts_embedded == 0
    assert result.stats.resources == {"word_list": False, "language_id": False, "encoder": True}


# --- B05 short-tail merging -----------------------------------------------------------------


@pytest.mark.case("B05")
def test_B05_short_tail_merges_into_previous_chunk_of_section(make_block):
    p1, p2, tail = _s_words(40, "one"), _s_words(40, "two"), _s_words(10, "tail")
    blocks = [make_block(p1, page=1), make_block(p2, page=2), make_block(tail, page=3)]
    result = _s_run(blocks, max_tokens=60, min_tokens=20)
    assert _s_view(result) == [
        ("section", p1, ["b1"], [1]),
        ("section", f"{p2}\n\n{tail}", ["b2", "b3"], [2, 3]),
    ]


@pytest.mark.case("B05")
def test_B05_short_head_merges_into_next_chunk_of_same_section(make_block):
    short, big = _s_words(5, "head"), _s_words(50, "body")
    blocks = [make_block(_s_words(50, "prev"), path=["A"]), make_block(short, path=["B"]),
              make_block(big, path=["B"])]
    result = _s_run(blocks, max_tokens=60, min_tokens=20)
    assert _s_view(result) == [
        ("section", _s_words(50, "prev"), ["b1"], [1]),
        ("section", f"{short}\n\n{big}", ["b2", "b3"], [1]),
    ]
    assert result.chunks[1].section_path == ["B"]


@pytest.mark.case("B05")
def test_B05_lone_short_section_merges_into_previous_section(make_block):
    blocks = [make_block(_s_words(30, "a"), path=["A"]), make_block("tiny", path=["B"]),
              make_block(_s_words(30, "c"), path=["C"])]
    result = _s_run(blocks, max_tokens=60, min_tokens=20)
    assert [(c.text, c.block_ids, c.section_path) for c in result.chunks] == [
        (f"{_s_words(30, 'a')}\n\ntiny", ["b1", "b2"], ["A"]),
        (_s_words(30, "c"), ["b3"], ["C"]),
    ]


@pytest.mark.case("B05")
def test_B05_table_chunks_never_merge_nor_absorb(make_block):
    blocks = [make_block("Short intro."), make_block("", "table", table=_s_table([["A"], ["1"]])),
              make_block("Short outro.")]
    result = _s_run(blocks, min_tokens=50)
    assert _s_view(result) == [
        ("section", "Short intro.\n\nShort outro.", ["b1", "b3"], [1]),
        ("table_schema", "Table schema: 1 data rows, 1 columns.\nColumns: A (number, 0% null)\n"
                         "Sample rows:\nRow 1: A=1", ["b2"], [1]),
        ("table", "Row 1: A=1", ["b2"], [1]),
    ]


@pytest.mark.case("B05")
def test_B05_merged_type_keeps_target_but_equation_wins(make_block):
    blocks = [make_block(_s_words(40)), make_block("x = 1", "equation")]
    result = _s_run(blocks, max_tokens=60, min_tokens=20)
    assert [(c.chunk_type, c.equation_detected, c.text) for c in result.chunks] == [
        ("equation", True, f"{_s_words(40)}\n\nx = 1")]


@pytest.mark.case("B05")
def test_B05_long_run_of_small_chunks_merges_into_one(make_block, monkeypatch):
    """Every block a semantic boundary, all chunks under the minimum: one chunk, in order."""
    texts = [f"Sentence {i}." for i in range(50)]
    monkeypatch.setattr(pipeline_module, "section_boundaries",
                        lambda sections, encoder, threshold: ([set(range(1, 50))], 50))
    encoder = type("Enc", (), {"name": "stub", "weights_sha256": None})()
    result = _s_run([make_block(t) for t in texts], Resources(encoder=encoder), use_semantic_chunking=True,
                    min_tokens=400, max_tokens=500)
    assert _s_view(result) == [("section", "\n\n".join(texts), [f"b{i}" for i in range(1, 51)], [1])]


# --- B06 supplied hierarchy -----------------------------------------------------------------


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
    result = _s_run(blocks)
    assert [(c.section_path, c.text, c.block_ids) for c in result.chunks] == [
        (["Methods"], "Methods\n\nOverview.", ["b1", "b2"]),
        (["Methods", "Setup"], "Setup\n\nDetails.", ["b3", "b4"]),
        (["Methods"], "Back in methods.", ["b5"]),
        ([], "No section.", ["b6"]),
    ]


# --- B07 overlap ----------------------------------------------------------------------------


def _s_three(make_block) -> tuple[list[dict[str, Any]], list[str]]:
    texts = [_s_words(20, w) for w in ("one", "two", "three")]
    return [make_block(t, page=i + 1) for i, t in enumerate(texts)], texts


@pytest.mark.case("B07")
def test_B07_positive_overlap_prepends_previous_paragraph(make_block):
    blocks, texts = _s_three(make_block)
    result = _s_run(blocks, max_tokens=60, overlap_blocks=1)
    second = result.chunks[1]
    assert second.text == f"{texts[1]}\n\n{texts[2]}"
    assert (second.block_ids, second.page_numbers, second.overlap_with_previous) == (["b3"], [3], True)
    assert second.metadata["overlap_block_ids"] == ["b2"]
    assert second.token_count == int(40 * 1.33)
    assert result.chunks[0].overlap_with_previous is False


@pytest.mark.case("B07")
def test_B07_overlap_of_two_paragraphs(make_block):
    blocks, texts = _s_three(make_block)
    result = _s_run(blocks, max_tokens=60, overlap_blocks=2)
    assert result.chunks[1].text == "\n\n".join(texts)
    assert result.chunks[1].metadata["overlap_block_ids"] == ["b1", "b2"]
    assert result.chunks[1].block_ids == ["b3"]


@pytest.mark.case("B07")
def test_B07_zero_overlap_leaves_chunks_untouched(make_block):
    blocks, texts = _s_three(make_block)
    result = _s_run(blocks, max_tokens=60, overlap_blocks=0)
    assert [c.text for c in result.chunks] == [f"{texts[0]}\n\n{texts[1]}", texts[2]]
    assert [c.overlap_with_previous for c in result.chunks] == [False, False]
    assert all("overlap_block_ids" not in c.metadata for c in result.chunks)


@pytest.mark.case("B07")
def test_B07_no_overlap_across_sections_tables_or_equations(make_block):
    blocks = [
        make_block(_s_words(20, "a"), path=["A"]), make_block(_s_words(20, "b"), path=["B"]),
        make_block("", "table", path=["B"], table=_s_table([["K"], ["v"]])),
        make_block(_s_words(20, "c"), path=["B"]),
        make_block("y = 2", "equation", path=["B"]), make_block(_s_words(50, "d"), path=["B"]),
    ]
    result = _s_run(blocks, max_tokens=60, overlap_blocks=1, generate_schema_chunks=False)
    assert [(c.text, c.overlap_with_previous) for c in result.chunks] == [
        (_s_words(20, "a"), False), (_s_words(20, "b"), False), ("Row 1: K=v", False),
        (f"{_s_words(20, 'c')}\n\ny = 2", False), (_s_words(50, "d"), False),
    ]


# --- B08 sections and header/footer exclusion ------------------------------------------------


def _s_paged(make_block) -> list[dict[str, Any]]:
    return [
        make_block("Annual Report", "header", page=1, path=[]),
        make_block("First part.", page=1, path=["A"]),
        make_block("Page 1", "footer", page=1, path=[]),
        make_block("Annual Report", "header", page=2, path=[]),
        make_block("Second part.", page=2, path=["A"]),
        make_block("Other section.", page=2, path=["B"]),
    ]


@pytest.mark.case("B08")
def test_B08_headers_footers_excluded_and_sections_rejoined(make_block):
    result = _s_run(_s_paged(make_block))
    assert [(c.section_path, c.text, c.block_ids, c.page_numbers) for c in result.chunks] == [
        (["A"], "First part.\n\nSecond part.", ["b2", "b5"], [1, 2]),
        (["B"], "Other section.", ["b6"], [2]),
    ]
    assert result.stats.blocks_excluded == {"header": 2, "footer": 1}


@pytest.mark.case("B08")
def test_B08_headers_footers_kept_as_content_when_config_off(make_block):
    result = _s_run(_s_paged(make_block), exclude_headers_footers=False)
    assert [(c.section_path, c.text, c.block_ids) for c in result.chunks] == [
        ([], "Annual Report", ["b1"]),
        (["A"], "First part.", ["b2"]),
        ([], "Page 1\n\nAnnual Report", ["b3", "b4"]),
        (["A"], "Second part.", ["b5"]),
        (["B"], "Other section.", ["b6"]),
    ]
    assert result.stats.blocks_excluded == {}


# --- B09 structured row batches -------------------------------------------------------------


@pytest.mark.case("B09")
def test_B09_row_batches_record_format(make_block):
    blocks = [make_block("", "table", page=4, table=_s_table(_S_PEOPLE))]
    result = _s_run(blocks, table_rows_per_chunk=2, generate_schema_chunks=False)
    assert _s_view(result) == [
        ("table", "\n".join(_S_PEOPLE_RECORDS[0:2]), ["b1"], [4]),
        ("table", "\n".join(_S_PEOPLE_RECORDS[2:4]), ["b1"], [4]),
        ("table", _S_PEOPLE_RECORDS[4], ["b1"], [4]),
    ]
    keys = ("table_block_id", "row_start", "row_end", "col_band", "table_format")
    metas = [tuple(c.metadata[k] for k in keys) for c in result.chunks]
    assert metas == [
        ("b1", 1, 2, None, "row_record"), ("b1", 3, 4, None, "row_record"), ("b1", 5, 5, None, "row_record"),
    ]


@pytest.mark.case("B09")
def test_B09_row_batches_limited_by_token_budget(make_block):
    # records have 5 words (6 tokens): two rows (12) exceed 11
    blocks = [make_block("", "table", table=_s_table(_S_PEOPLE))]
    result = _s_run(blocks, max_tokens=11, generate_schema_chunks=False)
    assert [c.text for c in result.chunks] == _S_PEOPLE_RECORDS
    assert [(c.metadata["row_start"], c.metadata["row_end"]) for c in result.chunks] == [
        (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
    fits_two = _s_run(blocks, max_tokens=12, generate_schema_chunks=False)
    assert [(c.metadata["row_start"], c.metadata["row_end"]) for c in fits_two.chunks] == [
        (1, 2), (3, 4), (5, 5)]


@pytest.mark.case("B09")
def test_B09_empty_cells_and_empty_columns_keep_their_headers(make_block):
    rows = [["Name", "Notes"], ["Ada", ""], ["Alan", ""]]
    result = _s_run([make_block("", "table", table=_s_table(rows))], generate_schema_chunks=False)
    assert [c.text for c in result.chunks] == ["Row 1: Name=Ada; Notes=\nRow 2: Name=Alan; Notes="]


@pytest.mark.case("B09")
def test_B09_flagged_header_rows_spans_and_empty_names(make_block):
    cells = [
        {"r0": 0, "c0": 0, "text": "", "column_header": True},
        {"r0": 0, "c0": 1, "cspan": 2, "text": "Score", "column_header": True},
        {"r0": 1, "c0": 1, "text": "2023", "column_header": True},
        {"r0": 1, "c0": 2, "text": "2024", "column_header": True},
        {"r0": 2, "c0": 0, "rspan": 2, "text": "North"},
        {"r0": 2, "c0": 1, "text": "1"}, {"r0": 2, "c0": 2, "text": "2"},
        {"r0": 3, "c0": 1, "text": "3"}, {"r0": 3, "c0": 2, "text": " 4\n"},
    ]
    table = {"n_rows": 4, "n_cols": 3, "cells": cells}
    result = _s_run([make_block("", "table", table=table)], generate_schema_chunks=False)
    assert [c.text for c in result.chunks] == [
        "Row 1: col_0=North; Score / 2023=1; Score / 2024=2\n"
        "Row 2: col_0=North; Score / 2023=3; Score / 2024=4"
    ]


# --- B10 schema chunks and pipe format --------------------------------------------------------


_S_TYPED = [
    ["Name", "Year", "Born", "Share"],
    ["Ada", "1843", "1815-12-10", "12.5%"],
    ["Alan", "1936", "23/06/1912", "$1,200"],
    ["Grace", "", "1906-12-09", "-3"],
    ["Edsger", "1968", "1930-05-11", "€4.5"],
    ["Barbara", "1974", "1939-11-07", "0"],
    ["Betty", "1946", "1924-01-01", "7"],
]


@pytest.mark.case("B10")
def test_B10_schema_chunk_types_null_rates_and_samples(make_block):
    result = _s_run([make_block("", "table", table=_s_table(_S_TYPED))])
    schema = result.chunks[0]
    assert schema.chunk_type == "table_schema"
    assert schema.text == (
        "Table schema: 6 data rows, 4 columns.\n"
        "Columns: Name (string, 0% null); Year (number, 17% null); Born (date, 0% null); "
        "Share (number, 0% null)\n"
        "Sample rows:\n"
        "Row 1: Name=Ada; Year=1843; Born=1815-12-10; Share=12.5%\n"
        "Row 2: Name=Alan; Year=1936; Born=23/06/1912; Share=$1,200\n"
        "Row 3: Name=Grace; Year=; Born=1906-12-09; Share=-3\n"
        "Row 4: Name=Edsger; Year=1968; Born=1930-05-11; Share=€4.5\n"
        "Row 5: Name=Barbara; Year=1974; Born=1939-11-07; Share=0"
    )
    assert schema.metadata["columns"] == [
        {"name": "Name", "type": "string", "null_rate": 0.0},
        {"name": "Year", "type": "number", "null_rate": 0.1667},
        {"name": "Born", "type": "date", "null_rate": 0.0},
        {"name": "Share", "type": "number", "null_rate": 0.0},
    ]
    assert (schema.metadata["n_rows"], schema.metadata["n_cols"], schema.block_ids) == (6, 4, ["b1"])
    assert [c.chunk_type for c in result.chunks] == ["table_schema", "table"]


@pytest.mark.case("B10")
def test_B10_pipe_format_repeats_header_line_in_every_batch(make_block):
    result = _s_run([make_block("", "table", table=_s_table(_S_TYPED))], table_chunk_format="pipe",
                    table_rows_per_chunk=4, generate_schema_chunks=False)
    header = "Name | Year | Born | Share"
    assert [c.text for c in result.chunks] == [
        "\n".join([header, "Ada | 1843 | 1815-12-10 | 12.5%", "Alan | 1936 | 23/06/1912 | $1,200",
                   "Grace |  | 1906-12-09 | -3", "Edsger | 1968 | 1930-05-11 | €4.5"]),
        "\n".join([header, "Barbara | 1974 | 1939-11-07 | 0", "Betty | 1946 | 1924-01-01 | 7"]),
    ]
    assert [(c.metadata["row_start"], c.metadata["row_end"], c.metadata["table_format"])
            for c in result.chunks] == [(1, 4, "pipe"), (5, 6, "pipe")]


@pytest.mark.case("B10")
def test_B10_pipe_schema_samples_carry_header(make_block):
    result = _s_run([make_block("", "table", table=_s_table([["K", "V"], ["a", "x"]]))],
                    table_chunk_format="pipe")
    assert result.chunks[0].text == (
        "Table schema: 1 data rows, 2 columns.\nColumns: K (string, 0% null); V (string, 0% null)\n"
        "Sample rows:\nK | V\na | x"
    )


# --- B11 table-only, fallback text, wide tables, captions -------------------------------------


@pytest.mark.case("B11")
def test_B11_table_only_document(make_block):
    result = _s_run([make_block("", "table", page=3, path=["Data"], table=_s_table(_S_PEOPLE))])
    assert [(c.chunk_type, c.page_numbers, c.section_path, c.block_ids) for c in result.chunks] == [
        ("table_schema", [3], ["Data"], ["b1"]), ("table", [3], ["Data"], ["b1"])]
    assert result.chunks[1].text == "\n".join(_S_PEOPLE_RECORDS)
    assert result.stats.chunks_by_type == {"table_schema": 1, "table": 1}


@pytest.mark.case("B11")
@pytest.mark.parametrize(
    "table", [None, {"n_rows": 0, "n_cols": 0, "cells": []}], ids=["no-table", "no-cells"]
)
def test_B11_table_without_cells_falls_back_to_its_text(make_block, table):
    text = "| a | b |\n| 1 | 2 |"
    result = _s_run([make_block(text, "table", page=2, table=table)])
    assert _s_view(result) == [("table", text, ["b1"], [2])]
    assert result.chunks[0].metadata["table_format"] == "text"


@pytest.mark.case("B11")
def test_B11_wide_table_cut_into_bands_repeating_key_column(make_block):
    n_cols = 27
    rows = [["Key"] + [f"h{c}" for c in range(1, n_cols)], ["k1"] + [f"v{c}" for c in range(1, n_cols)]]
    result = _s_run([make_block("", "table", table=_s_table(rows))], generate_schema_chunks=False)
    assert [c.metadata["col_band"] for c in result.chunks] == [[0, 11], [12, 22], [23, 26]]
    assert result.chunks[0].text == "Row 1: Key=k1; " + "; ".join(f"h{c}=v{c}" for c in range(1, 12))
    assert result.chunks[1].text == "Row 1: Key=k1; " + "; ".join(f"h{c}=v{c}" for c in range(12, 23))
    assert result.chunks[2].text == "Row 1: Key=k1; h23=v23; h24=v24; h25=v25; h26=v26"


@pytest.mark.case("B11")
def test_B11_table_at_threshold_is_not_banded(make_block):
    rows = [[f"h{c}" for c in range(25)], [f"v{c}" for c in range(25)]]
    result = _s_run([make_block("", "table", table=_s_table(rows))], generate_schema_chunks=False)
    assert [c.metadata["col_band"] for c in result.chunks] == [None]


@pytest.mark.case("B11")
def test_B11_caption_before_table_attached_to_first_chunk(make_block):
    blocks = [make_block("Intro text."), make_block("Table 1: People", "caption"),
              make_block("", "table", table=_s_table(_S_PEOPLE))]
    result = _s_run(blocks, table_rows_per_chunk=3)
    assert [(c.chunk_type, c.block_ids) for c in result.chunks] == [
        ("section", ["b1"]), ("table_schema", ["b2", "b3"]), ("table", ["b3"]), ("table", ["b3"])]
    assert result.chunks[1].text.startswith("Table 1: People\nTable schema: 5 data rows, 3 columns.\n")
    assert result.chunks[1].metadata["caption_block_id"] == "b2"
    assert result.chunks[2].text == "\n".join(_S_PEOPLE_RECORDS[:3])


@pytest.mark.case("B11")
def test_B11_caption_after_table_attached_without_schema(make_block):
    blocks = [make_block("", "table", page=5, table=_s_table(_S_PEOPLE)),
              make_block("Table 2: People", "caption", page=5), make_block("After.", page=5)]
    result = _s_run(blocks, generate_schema_chunks=False)
    assert _s_view(result) == [
        ("table", "Table 2: People\n" + "\n".join(_S_PEOPLE_RECORDS), ["b1", "b2"], [5]),
        ("section", "After.", ["b3"], [5]),
    ]


@pytest.mark.case("B11")
def test_B11_caption_on_another_page_not_attached(make_block):
    blocks = [make_block("Table 3: People", "caption", page=1),
              make_block("", "table", page=2, table=_s_table(_S_PEOPLE))]
    result = _s_run(blocks, generate_schema_chunks=False)
    assert _s_view(result) == [
        ("section", "Table 3: People", ["b1"], [1]),
        ("table", "\n".join(_S_PEOPLE_RECORDS), ["b2"], [2]),
    ]


@pytest.mark.case("B11")
def test_B11_caption_between_two_tables_goes_to_one_table_only(make_block):
    blocks = [make_block("", "table", table=_s_table([["A"], ["1"]])), make_block("Cap", "caption"),
              make_block("", "table", table=_s_table([["B"], ["2"]]))]
    result = _s_run(blocks, generate_schema_chunks=False)
    assert _s_view(result) == [
        ("table", "Cap\nRow 1: A=1", ["b1", "b2"], [1]),
        ("table", "Row 1: B=2", ["b3"], [1]),
    ]


# --- B12 oversized blocks, heading-only sections ----------------------------------------------


@pytest.mark.case("B12")
def test_B12_oversized_paragraph_kept_whole(make_block):
    big = _s_words(50, "huge")
    blocks = [make_block("Small."), make_block(big), make_block("After.")]
    result = _s_run(blocks, max_tokens=20)
    assert _s_view(result) == [
        ("section", "Small.", ["b1"], [1]), ("section", big, ["b2"], [1]), ("section", "After.", ["b3"], [1])]
    assert result.chunks[1].token_count == 66


@pytest.mark.case("B12")
def test_B12_oversized_row_kept_whole(make_block):
    rows = [["Name", "Notes"], ["Ada", _s_words(30, "note")], ["Alan", "short"]]
    blocks = [make_block("", "table", table=_s_table(rows))]
    result = _s_run(blocks, max_tokens=20, generate_schema_chunks=False)
    assert [c.text for c in result.chunks] == [
        f"Row 1: Name=Ada; Notes={_s_words(30, 'note')}", "Row 2: Name=Alan; Notes=short"]
    assert result.chunks[0].token_count > 20


@pytest.mark.case("B12")
def test_B12_heading_only_section_is_a_valid_chunk(make_block):
    blocks = [make_block("1 Intro", "heading", path=["1 Intro"]),
              make_block("1.1 Scope", "heading", path=["1 Intro", "1.1 Scope"]),
              make_block("Scope text.", path=["1 Intro", "1.1 Scope"])]
    result = _s_run(blocks)
    assert [(c.section_path, c.text, c.block_ids) for c in result.chunks] == [
        (["1 Intro"], "1 Intro", ["b1"]),
        (["1 Intro", "1.1 Scope"], "1.1 Scope\n\nScope text.", ["b2", "b3"]),
    ]


@pytest.mark.case("B12")
def test_B12_heading_only_section_merges_when_below_minimum(make_block):
    blocks = [make_block("1 Intro", "heading", path=["1 Intro"]),
              make_block("1.1 Scope", "heading", path=["1 Intro", "1.1 Scope"]),
              make_block(_s_words(20), path=["1 Intro", "1.1 Scope"])]
    result = _s_run(blocks, min_tokens=5)
    assert [(c.section_path, c.text, c.block_ids) for c in result.chunks] == [
        (["1 Intro", "1.1 Scope"], f"1 Intro\n\n1.1 Scope\n\n{_s_words(20)}", ["b1", "b2", "b3"])]


@pytest.mark.case("B12")
def test_B12_trailing_headings_move_to_the_chunk_they_open(make_block):
    p1, p2 = _s_words(20, "one"), _s_words(30, "two")  # 26 + 1 + 1 + 39 > 60
    blocks = [make_block(p1, page=1), make_block("Part", "heading", page=1),
              make_block("Chapter", "heading", page=2), make_block(p2, page=2)]
    result = _s_run(blocks, max_tokens=60)
    assert _s_view(result) == [
        ("section", p1, ["b1"], [1]),
        ("section", f"Part\n\nChapter\n\n{p2}", ["b2", "b3", "b4"], [1, 2]),
    ]


@pytest.mark.case("B12")
def test_B12_heading_before_equation_takes_precedence_over_paragraph_glue(make_block):
    p1 = _s_words(20, "one")
    blocks = [make_block(p1), make_block("Model", "heading"), make_block(_s_words(40, "x"), "equation")]
    result = _s_run(blocks, max_tokens=60)
    assert [(c.chunk_type, c.block_ids) for c in result.chunks] == [
        ("section", ["b1"]), ("equation", ["b2", "b3"])]


@pytest.mark.case("B12")
def test_B12_consecutive_headings_pack_with_following_text(make_block):
    blocks = [make_block("Part", "heading"), make_block("Chapter", "heading"), make_block("Body.")]
    assert _s_view(_s_run(blocks)) == [("section", "Part\n\nChapter\n\nBody.", ["b1", "b2", "b3"], [1])]


# --- B13 lists, equation glue, reading order --------------------------------------------------


@pytest.mark.case("B13")
def test_B13_list_with_lead_in_is_one_chunk(make_block):
    blocks = [make_block("Before."), make_block("You need:"), make_block("• eggs", "list_item"),
              make_block("• flour", "list_item"), make_block("After.")]
    result = _s_run(blocks)
    assert _s_view(result) == [
        ("section", "Before.", ["b1"], [1]),
        ("list", "You need:\n• eggs\n• flour", ["b2", "b3", "b4"], [1]),
        ("section", "After.", ["b5"], [1]),
    ]


@pytest.mark.case("B13")
def test_B13_long_list_split_at_bullets_with_lead_in_repeated(make_block):
    lead = _s_words(10, "lead")  # 13 tokens
    items = [_s_words(8, w) for w in ("i1", "i2", "i3")]  # 10 tokens each
    blocks = [make_block(lead, page=1), make_block(items[0], "list_item", page=1),
              make_block(items[1], "list_item", page=2), make_block(items[2], "list_item", page=2)]
    result = _s_run(blocks, max_tokens=30)
    assert _s_view(result) == [
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
    lead, big, small = "Steps:", _s_words(44, "big"), "last step"  # 1 + 58 + 2 tokens > 60
    blocks = [make_block(lead), make_block(big, "list_item"), make_block(small, "list_item")]
    result = _s_run(blocks, max_tokens=60, min_tokens=10)
    assert _s_view(result) == [("list", f"{lead}\n{big}\n\n{small}", ["b1", "b2", "b3"], [1])]
    assert "lead_in_repeated" not in result.chunks[0].metadata


@pytest.mark.case("B13")
def test_B13_list_without_lead_in(make_block):
    blocks = [make_block("Heading", "heading"), make_block("a", "list_item"), make_block("b", "list_item")]
    assert _s_view(_s_run(blocks)) == [
        ("section", "Heading", ["b1"], [1]), ("list", "a\nb", ["b2", "b3"], [1])]


@pytest.mark.case("B13")
def test_B13_equation_glue_moves_paragraph_with_cross_page_provenance(make_block):
    p1, p2 = _s_words(20, "one"), _s_words(10, "two")  # 26 + 13 = 39 tokens
    blocks = [make_block(p1, page=2), make_block(p2, page=3), make_block("E = m c2", "equation", page=4)]
    result = _s_run(blocks, max_tokens=40)
    assert _s_view(result) == [
        ("section", p1, ["b1"], [2]),
        ("equation", f"{p2}\n\nE = m c2", ["b2", "b3"], [3, 4]),
    ]
    assert [c.equation_detected for c in result.chunks] == [False, True]


@pytest.mark.case("B13")
def test_B13_equation_glue_never_empties_closed_chunk(make_block):
    p = _s_words(10)
    result = _s_run([make_block(p, page=1), make_block("E = m c2", "equation", page=2)], max_tokens=14)
    assert _s_view(result) == [("section", p, ["b1"], [1]), ("equation", "E = m c2", ["b2"], [2])]


@pytest.mark.case("B13")
def test_B13_equation_glue_with_overlap_does_not_duplicate(make_block):
    p1, p2, p3 = _s_words(10, "one"), _s_words(10, "two"), _s_words(10, "three")
    blocks = [make_block(p1), make_block(p2), make_block(p3), make_block("E = m c2", "equation")]
    result = _s_run(blocks, max_tokens=40, overlap_blocks=1)
    assert [(c.text, c.block_ids, c.overlap_with_previous) for c in result.chunks] == [
        (f"{p1}\n\n{p2}", ["b1", "b2"], False),
        (f"{p2}\n\n{p3}\n\nE = m c2", ["b3", "b4"], True),
    ]


@pytest.mark.case("B13")
def test_B13_reading_order_of_prose_lists_and_tables(make_block):
    blocks = [
        make_block("Intro.", page=1), make_block("Items:", page=1), make_block("x", "list_item", page=1),
        make_block("Table 9: T", "caption", page=2),
        make_block("", "table", page=2, table=_s_table([["A"], ["1"]])),
        make_block("Middle.", page=2), make_block("E = 1", "equation", page=3), make_block("End.", page=3),
    ]
    result = _s_run(blocks)
    assert [(c.chunk_type, c.block_ids) for c in result.chunks] == [
        ("section", ["b1"]), ("list", ["b2", "b3"]), ("table_schema", ["b4", "b5"]), ("table", ["b5"]),
        ("equation", ["b6", "b7", "b8"]),
    ]
    firsts = [int(c.block_ids[0][1:]) for c in result.chunks]
    assert firsts == sorted(firsts)


# --- DEC-04: where a chunk may exceed max_tokens ----------------------------------------------


@pytest.mark.case("DEC-04")
def test_DEC04_divisible_paragraphs_split_before_target_exceeded(make_block):
    texts = [_s_words(30, w) for w in ("a", "b", "c")]  # 39 tokens each
    result = _s_run([make_block(t) for t in texts], max_tokens=80)
    assert [c.text for c in result.chunks] == [f"{texts[0]}\n\n{texts[1]}", texts[2]]
    assert all(c.token_count <= 80 for c in result.chunks)


@pytest.mark.case("DEC-04")
def test_DEC04_oversized_paragraph_and_row_kept_whole(make_block):
    big = _s_words(100, "big")
    rows = [["K", "V"], ["a", _s_words(100, "cell")]]
    blocks = [make_block(big), make_block("", "table", table=_s_table(rows))]
    result = _s_run(blocks, max_tokens=50, generate_schema_chunks=False)
    assert [(c.text, c.token_count) for c in result.chunks] == [
        (big, 133), (f"Row 1: K=a; V={_s_words(100, 'cell')}", int(103 * 1.33))]


@pytest.mark.case("DEC-04")
def test_DEC04_below_minimum_merge_may_exceed_target(make_block):
    p1, tail = _s_words(40, "a"), _s_words(10, "b")
    result = _s_run([make_block(p1), make_block(tail)], max_tokens=60, min_tokens=20)
    assert [(c.text, c.block_ids, c.token_count) for c in result.chunks] == [
        (f"{p1}\n\n{tail}", ["b1", "b2"], 66)]


@pytest.mark.case("DEC-04")
def test_DEC04_overlap_prepended_after_packing_may_exceed_target(make_block):
    p1, p2 = _s_words(40, "a"), _s_words(40, "b")
    result = _s_run([make_block(p1), make_block(p2)], max_tokens=60, overlap_blocks=1)
    second = result.chunks[1]
    assert (second.text, second.block_ids, second.overlap_with_previous) == (f"{p1}\n\n{p2}", ["b2"], True)
    assert second.token_count == 106 > 60


@pytest.mark.case("DEC-04")
def test_DEC04_captions_and_schema_chunks_outside_packing(make_block):
    caption = "Table 1: " + _s_words(30, "caption")
    rows = [[f"Column{c}" for c in range(6)]] + [[f"value{r}{c}" for c in range(6)] for r in range(5)]
    blocks = [make_block(caption, "caption"), make_block("", "table", table=_s_table(rows))]
    result = _s_run(blocks, max_tokens=21)
    schema, rows_chunks = result.chunks[0], result.chunks[1:]
    assert schema.chunk_type == "table_schema" and schema.block_ids == ["b1", "b2"]
    assert schema.text.startswith(caption + "\nTable schema: 5 data rows, 6 columns.")
    assert schema.token_count > 21
    # row batches still respect the target: 8-word (10-token) records, two per batch
    assert [(c.metadata["row_start"], c.metadata["row_end"]) for c in rows_chunks] == [(1, 2), (3, 4), (5, 5)]
    assert all(c.token_count <= 21 for c in rows_chunks)


# ================================================================================================
# Equation detection (plan case B13, detection part) and quality scoring (B14), controlled.
#
# Exact values throughout: every score below is worked out by hand from SPEC 3.1 / 3.9 and the
# decisions documented in longparser/equations.py and longparser/quality.py.
# ================================================================================================

# ---------------------------------------------------------------------------------------------
# B13: equation detection
# ---------------------------------------------------------------------------------------------

# (text, previous block's text). Includes every form of gen_blocks' _Gen.equation and the three
# equation_paragraph styles (bare, "..., where ... denotes ...", "..., which is defined as ...").
_Q_EQUATION_POSITIVES = [
    ("f(x) = α x_i + β", None),
    ("L(θ) = ∑_i (θ x_i − y_i)² + λ ‖w‖²", None),
    ("E = mc²", "Einstein's mass-energy relation is given by:"),
    ("y_t = β y_{t-1} + (1 − β) x_t", None),
    ("\\frac{a}{b} + \\sum_{i=1}^n x_i", None),
    ("∂L/∂w_j = η · ∑_k a_k x_kj", None),
    ("P(y | x) = exp(z_y) / ∑_k exp(z_k)", None),
    ("α ≤ ∫ g(t) dt ≤ β + 3", None),
    ("h_i = σ(W x_i + b), i = 1, …, n", None),
    ("E = αβ / (2γ²)", None),
    ("y = a*x + b", None),
    ("E = mc^2", None),
    ("f(x) = μ x_i + ν, where μ denotes the revenue and x_i is the i-th margin.", None),
    (
        "Revenue and the liquidity of capital grow with each fiscal quarter of the year, which is "
        "defined as P(y | x) = exp(z_y) / ∑_k exp(z_k).",
        None,
    ),
    (
        "The gradient of the loss over the training batch, which is defined as E = αβ / (2γ²).",
        None,
    ),
]

_Q_EQUATION_NEGATIVES = [
    "Results for d1, d2 and d3 are shown in Table 2 (p < 0.05).",
    "Run pip install x_y then set the a b c flags.",
    "Section 3.2 describes the results of the survey.",
    "Set max_tokens to 512 in the config file.",
    "(Smith et al., 2020, p. 12)",
    "I think a cat is a good pet, and so do I. A dog is fine too.",
    "Revenue grew 12% in 2023 versus 8.5% in 2022 (n = 30), a record since 1998.",
    "Grade A students scored higher than the B group on average.",
    "The keynote was given by Dr Smith in the hall where it is warm.",
    "Use the A/B test and w/o caching; see Appendix C for details.",
    "The company reported revenue of $4.2 million, up from $3.9 million in Q3 2022.",
    "Λόγος και ψυχή είναι έννοιες της αρχαίας φιλοσοφίας.",
    "· · · · · ·",
    "The temperature rose by 3 °C – roughly 5% – over the “reference” decade…",
]


@pytest.mark.case("B13")
@pytest.mark.parametrize(("text", "previous"), _Q_EQUATION_POSITIVES)
def test_B13_equation_positives_are_detected(text, previous):
    assert equation_score(text, previous) >= EQUATION_THRESHOLD
    assert looks_like_equation(text, previous) is True


@pytest.mark.case("B13")
@pytest.mark.parametrize("text", _Q_EQUATION_NEGATIVES)
def test_B13_equation_negatives_prose_is_not_detected(text):
    assert equation_score(text) < EQUATION_THRESHOLD
    assert looks_like_equation(text) is False


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Results for d1, d2 and d3 are shown in Table 2 (p < 0.05).", 0.5),  # one kind, once
        ("Run pip install x_y then set the a b c flags.", 0.5),  # x_y only; no operator after a b c
        ("Section 3.2 describes the results of the survey.", 0.0),
        ("E = mc²", 3.5),  # density 1/5 -> 2.0, one kind (definition) 0.5, short + "E =" 1.0
    ],
)
def test_B13_equation_score_exact_values(text, expected):
    signals = equation_signals(text)
    assert equation_score(text) == pytest.approx(expected)
    assert sum(signals.values()) == pytest.approx(expected)


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "previous"), [*_Q_EQUATION_POSITIVES, *((t, None) for t in _Q_EQUATION_NEGATIVES)]
)
def test_B13_looks_like_equation_agrees_with_the_score(text, previous):
    # looks_like_equation skips the own-phrase test when it cannot change the outcome.
    assert looks_like_equation(text, previous) is (equation_score(text, previous) >= EQUATION_THRESHOLD)


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("previous", "points"),
    [
        ("The energy is given by:", 1.5),
        ("The loss is defined as", 1.5),
        ("It can be expressed as,", 1.5),
        ("The margin is computed as :", 1.5),
        ("The average is Calculated As", 1.5),
        ("The update rule, where x denotes", 1.5),
        ("Here the output, where θ is", 1.5),
        ("The steps are as follows:", 0.0),
        ("The value given by the sensor is stored.", 0.0),  # phrase not at the end
        ("", 0.0),
        (None, 0.0),
    ],
)
def test_B13_signal_lead_in_from_previous_block(previous, points):
    assert equation_signals("x + y", previous)["lead_in"] == points


@pytest.mark.case("B13")
def test_B13_lead_in_alone_does_not_retag_but_lifts_a_formula_over_the_threshold():
    assert equation_score("x = 2", "The constant is given by:") == pytest.approx(1.5)  # lead-in only
    # A weak formula (only "* n", a short isolated variable: 1.0) needs the lead-in.
    assert equation_score("total = 2 * n") == pytest.approx(1.0)
    assert looks_like_equation("total = 2 * n") is False
    assert looks_like_equation("total = 2 * n", "The index is defined as:") is True


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("The loss is defined as the mean of the squared errors over the batch.", 1.0),
        ("Given by the board, the budget was approved.", 1.0),
        ("The output is obtained in the usual way from the inputs.", 0.0),
        ("The keynote, where it is warm, was fun.", 0.0),  # "where it is" is not "where x is"
        ("The layer output, where h denotes the hidden state, is normalised.", 1.0),
    ],
)
def test_B13_signal_own_phrase(text, points):
    signals = equation_signals(text)
    assert signals["own_phrase"] == points
    assert equation_score(text) == pytest.approx(points)  # nothing else fires in these sentences


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("The step size parameter of the optimiser, called λ here, matters most in practice.", 0.5),
        ("Both the λ and the μ parameters of the optimiser matter for the final accuracy.", 1.5),
        ("The three values λ, μ and ν of the optimiser are tuned on the validation split.", 1.5),
        ("Λόγος και ψυχή είναι έννοιες της αρχαίας φιλοσοφίας.", 0.0),  # Greek words, not symbols
        ("No Greek letters here at all, just plain English words.", 0.0),
    ],
)
def test_B13_signal_greek_letter_counts(text, points):
    assert equation_signals(text)["greek"] == points


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("∞ " + "x" * 18, 2.0),  # 1/19 non-space characters: 5.3% > 5%
        ("∞ " + "x" * 19, 1.0),  # exactly 5%: not above 5%
        ("∞ " + "x" * 98, 1.0),  # 1/99: 1.01% > 1%
        ("∞ " + "x" * 99, 0.0),  # exactly 1%: not above 1%
        ("x = y + z and more plain ascii operators < > * ^", 0.0),  # ASCII operators are not density
    ],
)
def test_B13_signal_density_tiers(text, points):
    assert equation_signals(text)["density"] == points


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("The plain sentence has no pattern at all in it.", 0.0),
        ("Results for d1 are shown here, and d2 and d3 as well.", 0.5),  # one kind, three times
        ("Use the x_i values and the d1 run for this experiment.", 1.5),  # scripts + d1-style
        ("Use the x_i values, the d1 run and exp(z) for this.", 2.0),  # + function call
        ("Use x_i, d1, exp(z) and \\alpha for the experiment.", 2.0),  # 4 kinds: still 2.0
    ],
)
def test_B13_signal_pattern_tiers(text, points):
    assert equation_signals(text)["patterns"] == points


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("the x_i and y_{t-1} terms, and x^2", ["scripts"]),
        ("then f(x) = 3 holds", ["definition"]),
        ("then P(y | x) = 3 holds", ["definition"]),
        ("so E = mc here", ["definition"]),
        ("so n = 30 here", []),  # a variable set to a bare number is a statistic
        ("the ∑ and ∫ signs", ["big_operator"]),
        ("apply softmax(z) and argmax(p)", ["function_call"]),
        ("apply max (the budget)", []),  # a call has no space before the parenthesis
        ("use \\mathbf{v} and \\alpha", ["latex"]),
        ("runs d1 and x12", ["indexed_variable"]),
        ("no H2O, COVID19 or x123 here", []),
        ("the λ, μ pair", ["greek_list"]),
        ("then a * b and c d e + 1", ["variable_run"]),
        ("the a b c flags", []),  # a run of lone letters needs an operator
        ("see Section 3.2, Table 4 and (Smith, 2020)", []),
    ],
)
def test_B13_pattern_kinds_what_counts_as_a_hit(text, kinds):
    assert pattern_kinds(text) == kinds


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("E = mc²", 1.0),
        ("a + b", 1.0),
        ("Significant at p < 0.05 only.", 0.0),  # letter, operator, bare number: a statistic
        ("I am a person and A is a grade.", 0.0),  # lone words, no operator
        ("The rule x = y holds for every one of the many records stored in the large table here.", 0.0),
    ],
)
def test_B13_signal_short_text_with_isolated_variable(text, points):
    assert equation_signals(text)["short_variable"] == points


@pytest.mark.case("B13")
def test_B13_separator_rule_of_math_dots_scores_zero():
    assert equation_signals("· · · · · ·") == dict.fromkeys(
        ("density", "patterns", "short_variable", "lead_in", "own_phrase", "greek"), 0.0
    )


@pytest.mark.case("B13")
def test_B13_pipeline_retags_formula_paragraph_as_equation_chunk(make_block):
    blocks = [
        make_block("The regularised squared loss of the linear model is given by:", block_id="lead"),
        make_block("L(θ) = ∑_i (θ x_i − y_i)² + λ ‖w‖²", block_id="eq"),
        make_block("Results for d1, d2 and d3 are shown in Table 2 (p < 0.05).", block_id="prose"),
    ]
    result = chunk_blocks(blocks, {"max_tokens": 512, "min_tokens": 1, "overlap_blocks": 0})
    assert result.stats.equations_detected == 1
    assert blocks[1]["type"] == "paragraph"  # the caller's block is not re-tagged
    holding = [c for c in result.chunks if "eq" in c.block_ids]
    assert len(holding) == 1
    assert holding[0].equation_detected is True
    assert holding[0].chunk_type == "equation"


@pytest.mark.case("B13")
def test_B13_pipeline_detection_off_keeps_paragraph(make_block):
    blocks = [make_block("L(θ) = ∑_i (θ x_i − y_i)² + λ ‖w‖²", block_id="eq")]
    result = chunk_blocks(blocks, {"detect_equations": False, "min_tokens": 1})
    assert result.stats.equations_detected == 0
    assert [c.equation_detected for c in result.chunks] == [False]


_Q_MATHY_TEXT = st.text(alphabet=st.sampled_from(list("xyzabdIA01 _^=+*<>()\\,.:αβ∑∫−²·\n")), max_size=60)


@pytest.mark.case("B13")
@settings(max_examples=300, deadline=None)
@given(
    text=st.one_of(st.text(max_size=120), _Q_MATHY_TEXT),
    previous=st.one_of(st.none(), st.text(max_size=80)),
)
def test_B13_looks_like_equation_matches_score_on_any_text(text, previous):
    score = equation_score(text, previous)
    assert 0.0 <= score <= 9.0  # 2.0 + 2.0 + 1.0 + 1.5 + 1.0 + 1.5
    assert looks_like_equation(text, previous) is (score >= EQUATION_THRESHOLD)


# ---------------------------------------------------------------------------------------------
# B14: quality score
# ---------------------------------------------------------------------------------------------

_Q_REQUIRED_KEYS = {
    "confidence", "noise_ratio", "noise_penalty", "dictionary_coverage", "coverage_penalty",
    "language", "language_confidence", "language_penalty", "penalty_total", "sentence_end_bonus",
    "score",
}


@pytest.mark.case("B14")
def test_B14_confidence_weighting_by_text_length():
    # (0.9 * 100 + 0.5 * 300) / 400 = 0.6; no noise, no resources, no sentence end.
    score, parts = score_chunk("alpha beta gamma", [(0.9, 100), (0.5, 300)])
    assert parts["confidence"] == pytest.approx(0.6)
    assert score == pytest.approx(0.6)
    assert parts["penalty_total"] == 0.0


@pytest.mark.case("B14")
def test_B14_confidence_of_empty_sources_is_plain_mean():
    score, parts = score_chunk("alpha beta gamma", [(0.8, 0), (0.4, 0)])
    assert parts["confidence"] == pytest.approx(0.6)
    assert score == pytest.approx(0.6)


@pytest.mark.case("B14")
def test_B14_noise_penalty_is_twice_the_noise_ratio():
    text = "a" * 19 + "\ufffd"  # 1 noise character in 20: ratio 0.05, penalty 0.1
    score, parts = score_chunk(text, [(1.0, 20)])
    assert parts["noise_ratio"] == pytest.approx(0.05)
    assert parts["noise_penalty"] == pytest.approx(0.1)
    assert score == pytest.approx(0.9)


@pytest.mark.case("B14")
def test_B14_noise_penalty_is_capped_at_half():
    text = "ab" + "\x07" * 8  # ratio 0.8 -> 2 * 0.8 = 1.6, capped at 0.5
    score, parts = score_chunk(text, [(1.0, 10)])
    assert parts["noise_ratio"] == pytest.approx(0.8)
    assert parts["noise_penalty"] == pytest.approx(0.5)
    assert score == pytest.approx(0.5)


@pytest.mark.case("B14")
@pytest.mark.parametrize(
    ("text", "noise"),
    [
        ("Plain words, digits 123, punctuation . , ; : ! ? ' \" ( ) [ ] { } - / % & * + = < > @ # $ _ |", 0),
        ("Typographic “quotes” ‘single’ – — … • · ° § © ® ™ ± × ÷ € £ ¥ «guillemets»", 0),
        ("Accents é ü ß ñ, Greek αβγ, Cyrillic жук, CJK 漢字, decomposed e\u0301, superscript x²", 0),
        ("\x00\x01\x1b\x7f", 4),  # control characters (whitespace controls are whitespace)
        ("^`\\", 3),
        ("\ufffd\ue000╬✂∑∫", 6),  # replacement char, private use, box drawing, dingbat, math ops
        ("tab\tnew\nline\r\x0b\x0c no-break\u00a0space", 0),
    ],
)
def test_B14_noise_character_set(text, noise):
    assert noise_count(text) == noise


def _q_naive_noise(text: str) -> int:
    allowed = set(".,;:!?'\"()[]{}-/%&*+=<>@#$_|~–—‐‑‒−…“”‘’„‚«»‹›•·°§¶©®™±×÷′″€£¥¢‰†‡¡¿\u00a0\u202f")
    return sum(
        1 for c in text
        if not (c.isalnum() or c.isspace() or c in allowed or unicodedata.category(c)[0] == "M")
    )


def _q_naive_tokens(text: str) -> list[str]:
    runs, current = [], ""
    for c in text.lower() + " ":
        if c.isalpha() or unicodedata.category(c)[0] == "M":  # letters and combining marks
            current += c
        else:
            runs.append(current)
            current = ""
    return [r for r in runs if len(r) > 1]


@pytest.mark.case("B14")
@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200))
def test_B14_noise_and_tokens_match_the_per_character_definition(text):
    # The byte-level fast paths must agree with the plain per-character definitions.
    assert noise_count(text) == _q_naive_noise(text)
    if "Σ" not in text and len(text.lower()) == len(text):  # case mapping that changes length aside
        assert alphabetic_tokens(text) == _q_naive_tokens(text)


@pytest.mark.case("B14")
def test_B14_total_penalty_capped_at_point_eight_and_score_clamped_at_zero(fake_word_list, fake_language_id):
    text = "zzzz qqqq " + "\x07" * 5  # noise 5/15 -> 0.5 (capped); coverage 0/2 -> 0.3
    language_id = fake_language_id(language="xx", confidence=0.0)  # (0.8 - 0.0) * 0.5 = 0.4
    score, parts = score_chunk(text, [(0.5, 15)], word_list=fake_word_list, language_id=language_id)
    assert (parts["noise_penalty"], parts["coverage_penalty"], parts["language_penalty"]) == pytest.approx(
        (0.5, 0.3, 0.4)
    )
    assert parts["penalty_total"] == pytest.approx(0.8)  # 1.2 capped
    assert score == 0.0  # 0.5 - 0.8 clamped
    assert parts["score"] == 0.0


@pytest.mark.case("B14")
def test_B14_score_clamped_at_one_with_sentence_bonus():
    score, parts = score_chunk("Alpha beta.", [(1.0, 11)])
    assert parts["sentence_end_bonus"] == 0.05
    assert score == 1.0


@pytest.mark.case("B14")
def test_B14_dictionary_unavailable_gives_no_coverage_penalty():
    score, parts = score_chunk("zzz qqq xxx vvv", [(0.9, 15)], word_list=None)
    assert parts["dictionary_coverage"] is None
    assert parts["coverage_penalty"] == 0.0
    assert score == pytest.approx(0.9)


@pytest.mark.case("B14")
def test_B14_dictionary_low_coverage_exact_penalty(fake_word_list):
    # Tokens (2+ letters): the, alpha, zzz, qqq, xxx -> 2/5 = 0.4; "a" and "I" (single letters,
    # "a" IS in the word list) and "x_1 2024" do not count. Penalty 0.6 - 0.4 = 0.2.
    text = "The alpha zzz qqq xxx a I x_1 2024"
    score, parts = score_chunk(text, [(1.0, len(text))], word_list=fake_word_list)
    assert alphabetic_tokens(text) == ["the", "alpha", "zzz", "qqq", "xxx"]
    assert parts["dictionary_coverage"] == pytest.approx(0.4)
    assert parts["coverage_penalty"] == pytest.approx(0.2)
    assert score == pytest.approx(0.8)


@pytest.mark.case("B14")
@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The “Quick” brown—fox isn't here", ["the", "quick", "brown", "fox", "isn", "here"]),
        ("Éclair CAFÉ x_1 2024 a I ok.", ["éclair", "café", "ok"]),
        ("Жук пишет по-русски", ["жук", "пишет", "по", "русски"]),
        ("ΟΔΟΣ • alpha", ["οδος", "alpha"]),  # Unicode lower-casing: final sigma
        ("L(θ) = ∑_i (θ x_i − y_i)²", []),
    ],
)
def test_B14_dictionary_tokens_are_lowercased_letter_runs(text, tokens):
    assert alphabetic_tokens(text) == tokens


@pytest.mark.case("B14")
def test_B14_dictionary_coverage_penalty_capped(fake_word_list):
    score, parts = score_chunk("zzz qqq xxx", [(1.0, 11)], word_list=fake_word_list)
    assert parts["dictionary_coverage"] == 0.0
    assert parts["coverage_penalty"] == pytest.approx(0.3)  # min(0.6 - 0.0, 0.3)
    assert score == pytest.approx(0.7)


@pytest.mark.case("B14")
@pytest.mark.parametrize(
    ("text", "coverage"),
    [
        ("The data table is in the report section.", 1.0),
        ("the data row zzz qqq", 0.6),  # exactly 60%: not under, no penalty
    ],
)
def test_B14_dictionary_high_coverage_no_penalty(fake_word_list, text, coverage):
    _, parts = score_chunk(text, [(1.0, 10)], word_list=fake_word_list)
    assert parts["dictionary_coverage"] == pytest.approx(coverage)
    assert parts["coverage_penalty"] == 0.0


@pytest.mark.case("B14")
def test_B14_dictionary_without_alphabetic_tokens_is_unmeasured(fake_word_list):
    _, parts = score_chunk("12 345 x_1 a I", [(1.0, 14)], word_list=fake_word_list)
    assert parts["dictionary_coverage"] is None
    assert parts["coverage_penalty"] == 0.0


@pytest.mark.case("B14")
def test_B14_fasttext_low_confidence_exact_penalty(fake_language_id):
    language_id = fake_language_id(language="de", confidence=0.5)
    score, parts = score_chunk("alpha beta\ngamma delta", [(1.0, 22)], language_id=language_id)
    assert language_id.calls == ["alpha beta gamma delta"]  # one line for fastText
    assert parts["language"] == "de"
    assert parts["language_confidence"] == pytest.approx(0.5)
    assert parts["language_penalty"] == pytest.approx(0.15)  # (0.8 - 0.5) * 0.5
    assert score == pytest.approx(0.85)


@pytest.mark.case("B14")
@pytest.mark.parametrize(("confidence", "penalty"), [(0.8, 0.0), (0.99, 0.0), (0.79, 0.005)])
def test_B14_fasttext_penalty_only_under_point_eight(fake_language_id, confidence, penalty):
    language_id = fake_language_id(confidence=confidence)
    _, parts = score_chunk("alpha beta gamma", [(1.0, 16)], language_id=language_id)
    assert parts["language_penalty"] == pytest.approx(penalty)


@pytest.mark.case("B14")
def test_B14_fasttext_raising_counts_as_confidence_one(fake_language_id):
    language_id = fake_language_id(error=RuntimeError("model file unreadable"))
    score, parts = score_chunk("alpha beta gamma", [(0.9, 16)], language_id=language_id)
    assert len(language_id.calls) == 1
    assert parts["language_confidence"] == 1.0
    assert parts["language_penalty"] == 0.0
    assert parts["language"] is None
    assert parts["language_error"] == "RuntimeError"
    assert score == pytest.approx(0.9)


@pytest.mark.case("B14")
@pytest.mark.parametrize(
    ("text", "queried"), [("Short.", False), ("  123456789  ", False), ("1234567890", True)]
)
def test_B14_short_text_is_not_sent_to_language_id(fake_language_id, text, queried):
    language_id = fake_language_id(confidence=0.1)
    _, parts = score_chunk(text, [(1.0, len(text))], language_id=language_id)
    assert bool(language_id.calls) is queried
    if not queried:
        language = (parts["language"], parts["language_confidence"], parts["language_penalty"])
        assert language == (None, 1.0, 0.0)


@pytest.mark.case("B14")
def test_B14_long_text_sends_a_bounded_whole_word_sample_to_language_id(fake_language_id):
    language_id = fake_language_id(confidence=0.5)
    text = "alpha beta\n" * 100  # 1,100 characters
    _, parts = score_chunk(text, [(1.0, len(text))], language_id=language_id)
    (sent,) = language_id.calls
    assert sent == " ".join(["alpha beta"] * 46) + " alpha"  # 511 characters, no word cut
    assert len(sent) <= LANGUAGE_SAMPLE_CHARS == 512
    assert parts["language_penalty"] == pytest.approx(0.15)


@pytest.mark.case("B14")
def test_B14_unknown_sources_score_half(fake_word_list, fake_language_id):
    language_id = fake_language_id(confidence=0.1)
    score, parts = score_chunk("zzz \x07\x07 qqq", [], word_list=fake_word_list, language_id=language_id)
    assert score == UNKNOWN_SOURCES_SCORE == 0.5
    assert parts["unknown_sources"] is True
    assert parts["score"] == 0.5
    assert language_id.calls == []  # nothing else is computed


@pytest.mark.case("B14")
@pytest.mark.parametrize(
    ("text", "bonus"),
    [
        ("It ends.", 0.05), ("It ends!", 0.05), ("It ends?", 0.05), ("It ends:", 0.05),
        ('He said "stop"', 0.05), ("He said “stop”", 0.05), ("It trails…", 0.05),
        ("(See Table 2.)", 0.05), ("‘It ends.’", 0.05), ("It ends.  \n", 0.05),
        ("It does not end", 0.0), ("It does not end,", 0.0), ("It does not end;", 0.0),
        ("(no end)", 0.0), ("", 0.0),
    ],
)
def test_B14_sentence_end_bonus(text, bonus):
    score, parts = score_chunk(text, [(0.5, 10)])
    assert parts["sentence_end_bonus"] == bonus
    assert score == pytest.approx(0.5 + bonus)


@pytest.mark.case("B14")
def test_B14_components_complete_json_serialisable_and_rounded(fake_resources):
    text = "The alpha model results show the data. zzz \ufffd"
    score, parts = score_chunk(
        text, [(0.7777777, 13), (0.3333333, 29)],
        word_list=fake_resources.word_list, language_id=fake_resources.language_id,
    )
    assert parts.keys() >= _Q_REQUIRED_KEYS
    assert json.loads(json.dumps(parts)) == parts
    for value in parts.values():
        if isinstance(value, float):
            assert value == round(value, 4)
    assert score == parts["score"]


@pytest.mark.case("B14")
def test_B14_pipeline_stores_quality_components(make_block, fake_resources):
    blocks = [
        make_block("Alpha beta", confidence=0.9),  # 10 characters
        make_block("Model results show table data.", confidence=0.5),  # 30 characters
    ]
    result = chunk_blocks(blocks, {"min_tokens": 1, "overlap_blocks": 0}, fake_resources)
    assert len(result.chunks) == 1
    chunk = result.chunks[0]
    quality = chunk.metadata["quality"]
    assert quality["confidence"] == pytest.approx(0.6)  # (0.9 * 10 + 0.5 * 30) / 40
    assert quality["dictionary_coverage"] == 1.0
    assert quality["language"] == "en"
    assert quality["sentence_end_bonus"] == 0.05
    assert chunk.quality_score == pytest.approx(0.65)
    assert quality["score"] == pytest.approx(0.65)


@pytest.mark.case("B14")
def test_B14_pipeline_without_resources_scores_confidence_only(make_block):
    blocks = [make_block("zzz qqq xxx vvv", confidence=0.8)]
    result = chunk_blocks(blocks, {"min_tokens": 1}, Resources())
    quality = result.chunks[0].metadata["quality"]
    assert (quality["dictionary_coverage"], quality["language"]) == (None, None)
    assert result.chunks[0].quality_score == pytest.approx(0.8)


# ================================================================================================
# Semantic boundaries, controlled group (plan cases S01-S08).
#
# The embedding SDK is the ``stub_sentence_transformers`` fake of ``tests/unit/conftest.py``
# (fixed 2-D vectors chosen per text); the encoder is built by the PRODUCTION loader from a
# temporary directory holding a fake ``model.safetensors`` whose digest is passed as the pin, so
# the import path, digest check, cosine decisions and packing code all run for real.
# Module-level helpers are prefixed ``_sem_`` (this module is merged into test_chunkers.py).
# ================================================================================================

_SEM_CONFIG = {"use_semantic_chunking": True, "semantic_threshold": 0.3, "min_tokens": 1, "overlap_blocks": 0}


def _sem_protect_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader sets process-wide variables: record their values so the test restores them."""
    for name in (*OFFLINE_ENV, *QUIET_ENV):
        monkeypatch.setenv(name, os.environ.get(name, ""))


def _sem_model_dir(tmp_path: Path) -> tuple[Path, str]:
    """A local "model" directory with fake weights, and their digest (the pin for this test)."""
    model_dir = tmp_path / "model"
    model_dir.mkdir(exist_ok=True)
    weights = model_dir / "model.safetensors"
    weights.write_bytes(b"stub weights for the controlled group")
    return model_dir, file_sha256(weights)


def _sem_load(
    stub: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vectors: dict[str, list[float]]
) -> tuple[Any, Any, str]:
    """Production-loaded encoder over the stub SDK: ``(encoder, stub model instance, digest)``."""
    _sem_protect_env(monkeypatch)
    monkeypatch.setitem(sys.modules, "torch", None)  # never touch a real torch's thread count
    stub.vectors.update(vectors)
    model_dir, digest = _sem_model_dir(tmp_path)
    encoder = load_encoder(model_dir, expected_sha256=digest)
    return encoder, stub.instances[-1], digest


def _sem_view(result: Any) -> list[tuple[str, list[str], list[int]]]:
    return [(chunk.text, chunk.block_ids, chunk.page_numbers) for chunk in result.chunks]


class _SemSpyEncoder:
    """An encoder that must not be used: records calls and fails the test if encode runs."""

    name = "spy"
    weights_sha256 = None

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: Any) -> Any:
        self.calls.append(list(texts))
        raise AssertionError("the encoder must not be called")


# --- S01 short input ------------------------------------------------------------------------


@pytest.mark.case("S01")
@pytest.mark.parametrize(
    "sections",
    [[], [[]], [["only one text"]], [["only one text", "", "   "]], [["first section"], ["second section"]]],
    ids=["no-sections", "empty-section", "one-text", "one-text-and-blanks", "one-text-per-section"],
)
def test_S01_short_input_has_no_boundaries_and_never_calls_the_encoder(
    sections: list[list[str]],
    stub_sentence_transformers: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encoder, model, _ = _sem_load(stub_sentence_transformers, tmp_path, monkeypatch, {})
    assert section_boundaries(sections, encoder, 0.3) == ([set() for _ in sections], 0)
    assert model.encode_calls == []


@pytest.mark.case("S01")
def test_S01_single_block_document_is_one_chunk_without_embedding(
    make_block: Any, stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoder, model, digest = _sem_load(stub_sentence_transformers, tmp_path, monkeypatch, {})
    result = chunk_blocks([make_block("A lone paragraph.", page=4)], _SEM_CONFIG, Resources(encoder=encoder))
    assert _sem_view(result) == [("A lone paragraph.", ["b1"], [4])]
    assert model.encode_calls == []
    assert result.stats.semantic == SemanticStats(
        requested=True,
        available=True,
        boundaries=0,
        texts_embedded=0,
        model=MODEL_NAME,
        weights_sha256=digest,
    )


# --- S02 similar vectors / S03 equality / S04 different vectors / S05 zero norms ------------


@pytest.mark.case("S02")
def test_S02_similar_vectors_place_no_boundary(
    stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = {"cats purr": [1.0, 0.0], "kittens purr": [0.9, 0.1], "cats nap": [0.8, 0.3]}
    encoder, model, _ = _sem_load(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    assert cosine_similarity([1.0, 0.0], [0.9, 0.1]) == pytest.approx(0.9 / 0.82**0.5)
    assert section_boundaries([list(vectors)], encoder, 0.3) == ([set()], 3)
    assert model.encode_calls == [["cats purr", "kittens purr", "cats nap"]]


@pytest.mark.case("S03")
@pytest.mark.parametrize(
    ("threshold", "expected"),
    [(0.6, set()), (float(np.nextafter(0.6, 1.0)), {1}), (float(np.nextafter(0.6, 0.0)), set())],
    ids=["equal", "just-above", "just-below"],
)
def test_S03_equal_to_threshold_is_not_a_boundary(
    threshold: float,
    expected: set[int],
    stub_sentence_transformers: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # [1, 0] vs [3, 4]: cosine is exactly 3/5 = 0.6 in float64.
    encoder, _, _ = _sem_load(stub_sentence_transformers, tmp_path, monkeypatch, {"x": [1, 0], "y": [3, 4]})
    assert cosine_similarity([1.0, 0.0], [3.0, 4.0]) == 0.6
    assert section_boundaries([["x", "y"]], encoder, threshold) == ([expected], 2)


@pytest.mark.case("S03")
def test_S03_equal_to_threshold_keeps_one_chunk(
    make_block: Any, stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoder, _, _ = _sem_load(
        stub_sentence_transformers, tmp_path, monkeypatch, {"x y": [1, 0], "y z": [3, 4]}
    )
    config = {**_SEM_CONFIG, "semantic_threshold": 0.6}
    result = chunk_blocks([make_block("x y"), make_block("y z", page=2)], config, Resources(encoder=encoder))
    assert _sem_view(result) == [("x y\n\ny z", ["b1", "b2"], [1, 2])]
    assert result.stats.semantic.boundaries == 0


@pytest.mark.case("S04")
@pytest.mark.parametrize(
    ("first", "second", "threshold"),
    [([1, 0], [0, 1], 0.3), ([1, 0], [-1, 0], 0.0), ([1, 0], [1, 1], 0.75)],
    ids=["orthogonal", "opposite-below-zero", "45-degrees-below-0.75"],
)
def test_S04_different_vectors_place_a_boundary(
    first: list[float],
    second: list[float],
    threshold: float,
    stub_sentence_transformers: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectors = {"topic one": first, "topic two": second}
    encoder, _, _ = _sem_load(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    assert section_boundaries([["topic one", "topic two"]], encoder, threshold) == ([{1}], 2)


@pytest.mark.case("S04")
def test_S04_chunks_split_at_the_semantic_boundary(
    make_block: Any, stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [
        "Stars form in clouds.",
        "Nebulae collapse into stars.",
        "Knead the dough well.",
        "Bake the loaf.",
    ]
    vectors = dict(zip(texts, [[1, 0], [0.95, 0.05], [0, 1], [0.1, 0.9]], strict=True))
    encoder, model, digest = _sem_load(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    blocks = [make_block(text, page=page) for text, page in zip(texts, [1, 1, 2, 3], strict=True)]
    before = copy.deepcopy(blocks)
    result = chunk_blocks(blocks, _SEM_CONFIG, Resources(encoder=encoder))
    assert _sem_view(result) == [
        ("Stars form in clouds.\n\nNebulae collapse into stars.", ["b1", "b2"], [1]),
        ("Knead the dough well.\n\nBake the loaf.", ["b3", "b4"], [2, 3]),
    ]
    assert [chunk.section_path for chunk in result.chunks] == [["Intro"], ["Intro"]]
    assert model.encode_calls == [texts]
    assert result.stats.semantic == SemanticStats(
        requested=True,
        available=True,
        boundaries=1,
        texts_embedded=4,
        model=MODEL_NAME,
        weights_sha256=digest,
    )
    assert blocks == before  # the caller's blocks are never mutated
    structural = chunk_blocks(blocks, {**_SEM_CONFIG, "use_semantic_chunking": False})
    assert [chunk.block_ids for chunk in structural.chunks] == [["b1", "b2", "b3", "b4"]]


@pytest.mark.case("S05")
@pytest.mark.parametrize(
    ("threshold", "expected"), [(0.3, {1, 2}), (0.0, set())], ids=["below-threshold", "0.0-not-below-0.0"]
)
def test_S05_zero_norm_vectors_have_similarity_zero(
    threshold: float,
    expected: set[int],
    stub_sentence_transformers: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectors = {"a": [1, 0], "zero": [0, 0], "b": [1, 0]}
    encoder, _, _ = _sem_load(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    assert cosine_similarity([0.0, 0.0], [1.0, 0.0]) == 0.0
    assert cosine_similarity([0.0, 0.0], [0.0, 0.0]) == 0.0
    assert section_boundaries([["a", "zero", "b"]], encoder, threshold) == ([expected], 3)


@pytest.mark.case("S05")
def test_S05_zero_norm_block_is_its_own_chunk(
    make_block: Any, stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = {"Alpha text.": [1, 0], "Odd text.": [0, 0], "Beta text.": [1, 0]}
    encoder, _, _ = _sem_load(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    blocks = [make_block(text, page=page) for text, page in zip(vectors, [1, 2, 2], strict=True)]
    result = chunk_blocks(blocks, _SEM_CONFIG, Resources(encoder=encoder))
    assert _sem_view(result) == [
        ("Alpha text.", ["b1"], [1]),
        ("Odd text.", ["b2"], [2]),
        ("Beta text.", ["b3"], [2]),
    ]
    assert result.stats.semantic.boundaries == 2


# --- S06 missing SDK --------------------------------------------------------------------------


@pytest.mark.case("S06")
@pytest.mark.parametrize(
    "broken", [None, types.ModuleType("sentence_transformers")], ids=["absent", "no-class"]
)
def test_S06_missing_sdk_raises_with_install_hint(
    broken: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _sem_protect_env(monkeypatch)
    monkeypatch.setitem(sys.modules, "sentence_transformers", broken)
    model_dir, digest = _sem_model_dir(tmp_path)
    with pytest.raises(EncoderUnavailable) as info:
        load_encoder(model_dir, expected_sha256=digest)
    message = str(info.value)
    assert message.startswith("sentence-transformers cannot be imported")
    assert "`pip install torch==2.13.0`" in message
    assert "`pip install -e '.[embeddings-cpu]'`" in message


@pytest.mark.case("S06")
def test_S06_missing_sdk_packs_structurally_and_says_why(
    make_block: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _sem_protect_env(monkeypatch)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    model_dir, digest = _sem_model_dir(tmp_path)
    with caplog.at_level(logging.WARNING):
        resources = build_resources(
            word_list_path=None,
            language_id=False,
            semantic=True,
            model_path=model_dir,
            threads=1,
            strict=False,
            expected_sha256=digest,
        )
    assert resources.encoder is None
    assert resources.encoder_error is not None
    assert resources.encoder_error.startswith("sentence-transformers cannot be imported")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, f"semantic boundaries unavailable, packing structurally: {resources.encoder_error}")
    ]
    blocks = [make_block("Stars form in clouds.", page=1), make_block("Knead the dough.", page=2)]
    result = chunk_blocks(blocks, _SEM_CONFIG, resources)
    assert _sem_view(result) == [("Stars form in clouds.\n\nKnead the dough.", ["b1", "b2"], [1, 2])]
    assert result.stats.semantic == SemanticStats(
        requested=True, available=False, boundaries=0, texts_embedded=0, reason=resources.encoder_error
    )
    with pytest.raises(EncoderUnavailable):
        build_resources(
            word_list_path=None,
            language_id=False,
            semantic=True,
            model_path=model_dir,
            threads=1,
            strict=True,
            expected_sha256=digest,
        )


# --- S07 semantic disabled ----------------------------------------------------------------------


@pytest.mark.case("S07")
def test_S07_semantic_disabled_never_touches_the_encoder(make_block: Any) -> None:
    spy = _SemSpyEncoder()
    blocks = [make_block("Stars form in clouds.", page=1), make_block("Knead the dough.", page=2)]
    config = {**_SEM_CONFIG, "use_semantic_chunking": False}
    result = chunk_blocks(blocks, config, Resources(encoder=spy))
    assert spy.calls == []
    assert result.stats.semantic == SemanticStats()
    assert _sem_view(result) == [("Stars form in clouds.\n\nKnead the dough.", ["b1", "b2"], [1, 2])]


# --- S08 blank texts filtered, indices aligned ----------------------------------------------------


@pytest.mark.case("S08")
@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["a", "", "  ", "b", "\n\t", "c", ""], {3}),  # c compares with b, not with the blank before it
        (["a", " ", "b"], {2}),  # the boundary lands on b's index, never on the blank
        (["a", "", "a again"], set()),  # a blank between similar texts creates nothing
        (["", "a", "b"], {2}),  # leading blank: nothing to compare it with
    ],
)
def test_S08_blank_texts_filtered_before_embedding_with_aligned_indices(
    texts: list[str],
    expected: set[int],
    stub_sentence_transformers: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectors = {"a": [1, 0], "a again": [1, 0.1], "b": [0, 1], "c": [0, 1]}
    encoder, model, _ = _sem_load(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    non_blank = [t for t in texts if t.strip()]
    assert section_boundaries([texts], encoder, 0.3) == ([expected], len(non_blank))
    assert model.encode_calls == [non_blank]


@pytest.mark.case("S08")
def test_S08_blank_blocks_excluded_and_boundaries_stay_on_the_right_blocks(
    make_block: Any, stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = {"Orbits are ellipses.": [1, 0], "Whisk the eggs.": [0, 1], "Fold in flour.": [0.1, 1]}
    encoder, model, _ = _sem_load(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    blocks = [
        make_block("Orbits are ellipses.", page=1),
        make_block("   ", page=1),
        make_block("Whisk the eggs.", page=2),
        make_block("-----", page=2),
        make_block("Fold in flour.", page=3),
    ]
    result = chunk_blocks(blocks, _SEM_CONFIG, Resources(encoder=encoder))
    assert _sem_view(result) == [
        ("Orbits are ellipses.", ["b1"], [1]),
        ("Whisk the eggs.\n\nFold in flour.", ["b3", "b5"], [2, 3]),
    ]
    assert model.encode_calls == [["Orbits are ellipses.", "Whisk the eggs.", "Fold in flour."]]
    assert result.stats.blocks_excluded == {"blank": 1, "separator": 1}
    assert (result.stats.semantic.boundaries, result.stats.semantic.texts_embedded) == (1, 3)


# --- one batch per request, identical texts once; the vectorised helpers ---------------------------


def test_semantic_identical_texts_are_encoded_once_per_request(
    make_block: Any, stub_sentence_transformers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boiler = "Confidential draft, do not distribute."
    vectors = {boiler: [1, 0], "Revenue grew.": [0, 1], "Costs fell.": [0.1, 1]}
    encoder, model, _ = _sem_load(stub_sentence_transformers, tmp_path, monkeypatch, vectors)
    blocks = [
        make_block(boiler, path=["Revenue"]),
        make_block("Revenue grew.", path=["Revenue"]),
        make_block(boiler, path=["Costs"], page=2),
        make_block("Costs fell.", path=["Costs"], page=2),
    ]
    result = chunk_blocks(blocks, _SEM_CONFIG, Resources(encoder=encoder))
    assert model.encode_calls == [[boiler, "Revenue grew.", "Costs fell."]]
    assert _sem_view(result) == [
        (boiler, ["b1"], [1]),
        ("Revenue grew.", ["b2"], [1]),
        (boiler, ["b3"], [2]),
        ("Costs fell.", ["b4"], [2]),
    ]
    assert [chunk.section_path for chunk in result.chunks] == [["Revenue"], ["Revenue"], ["Costs"], ["Costs"]]
    assert (result.stats.semantic.boundaries, result.stats.semantic.texts_embedded) == (2, 3)


class _SemFixedEncoder:
    name, weights_sha256 = "fixed", None

    def __init__(self, output: Any):
        self.output = output

    def encode(self, texts: Any) -> Any:
        return self.output


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (np.zeros((1, 2)), r"encoder returned shape \(1, 2\) for 2 texts"),
        (np.zeros(2), r"encoder returned shape \(2,\) for 2 texts"),
        (np.array([[1.0, 0.0], [np.nan, 1.0]]), "NaN or infinite"),
    ],
)
def test_semantic_bad_encoder_output_fails_loudly(output: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        section_boundaries([["a", "b"]], _SemFixedEncoder(output), 0.3)


def test_semantic_vector_helpers() -> None:
    vectors = [[1, 0], [1, 0], [0, 1], [0, 0], [0, 2]]
    assert adjacent_similarities(vectors).tolist() == [1.0, 0.0, 0.0, 0.0]
    assert boundaries_from_vectors(vectors, 0.3) == [2, 3, 4]
    assert boundaries_from_vectors([[1, 0]], 0.3) == []
    with pytest.raises(ValueError, match="differ in length"):
        cosine_similarity([1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="expected a 2-D array"):
        adjacent_similarities([1.0, 2.0, 3.0])
