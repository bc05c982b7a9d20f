"""Strict mode holds for three tokenizer families, recounted with the REAL tokenizer (Hypothesis).

Families: the pinned model's WordPiece tokenizer (window 256), a byte-level BPE with a
512-token window (GPT-2's pre-tokenizer pattern), and a tiktoken encoding (cl100k's pattern,
window 8191), the last two trained in the test run (nothing can be downloaded here). Each is
loaded the way a worker loads a declared tokenizer; the checks never ask the engine's counter:
every count is ``encode(text, add_special_tokens=True)`` of the tokenizer itself, loaded apart
(:func:`tests.tokenizer_builds.real_count`).

On generated documents (every block type, unicode, huge paragraphs, ragged tables) and on the
real fixtures (the docling documents, the sample document): no chunk's embedded text counts
more than ``max_tokens - reserve_tokens`` (with ``fit``: ``min(window, FIT_MAX_TOKENS)``), every
``token_count`` is the real count of the chunk's text, nothing is lost, reading order holds.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from loaders.docling import convert_docling
from loaders.tokenizer import TOKENIZER_FILE
from loaders.tokenizers import load_tokenizer, spec_for_path
from longparser import chunk_blocks
from longparser.errors import RequestRefused
from longparser.resources import Resources
from schemas import ChunkResult, parse_input
from schemas.config import FIT_MAX_TOKENS
from schemas.tokenizers import TokenizerSpec
from tests.property.strategies import block_streams, configs
from tests.property.test_invariants import PROPERTY_SETTINGS, check_exclusions
from tests.property.test_strict import check_nothing_lost_in_pieces, check_reading_order
from tests.tokenizer_builds import bpe_model_dir, real_count, tiktoken_declaration

ROOT = Path(__file__).resolve().parents[2]
# Three real tokenizers recount every chunk: fewer examples than the engine-only property tests
# by default (LONGPARSER_PROPERTY_EXAMPLES sets both).
FAMILY_SETTINGS = settings(PROPERTY_SETTINGS,
                           max_examples=int(os.environ.get("LONGPARSER_PROPERTY_EXAMPLES", "60")))
FIXTURES = [*sorted((ROOT / "tests" / "fixtures" / "docling").glob("*.docling.json")),
            ROOT / "examples" / "sample_document.json"]
# family -> (how the real tokenizer is found, the declaration a worker would load, window)
FAMILIES = {
    "wordpiece-256": (lambda: TOKENIZER_FILE,
                      lambda: TokenizerSpec(path=str(TOKENIZER_FILE), kind="hf", window=256), 256),
    "bpe-512": (bpe_model_dir, lambda: spec_for_path(str(bpe_model_dir())), 512),
    "tiktoken": (tiktoken_declaration, lambda: spec_for_path(str(tiktoken_declaration())), 8191),
}


@functools.cache
def family_resources(family: str) -> Resources:
    _, spec, window = FAMILIES[family]
    counter = load_tokenizer(spec(), name=family)
    assert counter.window == window
    return Resources(counters={family: counter})


def check_fits_real_tokenizer(result: ChunkResult, family: str, maximum: int) -> None:
    real = FAMILIES[family][0]()
    for chunk in result.chunks:
        embedded = chunk.embed_text if chunk.embed_text is not None else chunk.text
        assert real_count(real, embedded) <= maximum, f"{family}: chunk over {maximum}: {embedded[:80]!r}"
        assert chunk.token_count == real_count(real, chunk.text), f"{family}: token_count is not the count"


@FAMILY_SETTINGS
@given(
    blocks=block_streams(),
    config=configs(),
    family=st.sampled_from(sorted(FAMILIES)),
    max_tokens=st.sampled_from([16, 32, 64, 128, 256, 512]),
    reserve=st.sampled_from([0, 0, 3, 10]),
)
def test_strict_chunks_fit_the_real_tokenizer(
    blocks: list[dict[str, Any]], config: dict[str, Any], family: str, max_tokens: int, reserve: int
) -> None:
    max_tokens = min(max_tokens, FAMILIES[family][2])
    strict = {**config, "max_tokens": max_tokens, "reserve_tokens": reserve,
              "min_tokens": min(config["min_tokens"], max_tokens - 1), "strict_max_tokens": True,
              "token_counter": family}
    try:
        result = chunk_blocks(blocks, strict, family_resources(family), document_id="doc")
    except RequestRefused as exc:
        # A room of a few tokens over much text can make more chunks than the chunk cap allows
        # (longparser.repeats, held by its own tests): such a request is refused, by design,
        # and lies outside what this property is about.
        assume("chunks, over the cap of" not in str(exc))
        raise
    kept = check_exclusions(blocks, strict, result)
    check_fits_real_tokenizer(result, family, max_tokens - reserve)
    check_nothing_lost_in_pieces(blocks, kept, result)
    check_reading_order(blocks, result)


@FAMILY_SETTINGS
@given(blocks=block_streams(), family=st.sampled_from(sorted(FAMILIES)), reserve=st.sampled_from([0, 4]))
def test_fit_fits_the_window_with_the_recommended_settings(
    blocks: list[dict[str, Any]], family: str, reserve: int
) -> None:
    config = {"fit": family, "reserve_tokens": reserve}
    result = chunk_blocks(blocks, config, family_resources(family), document_id="doc")
    maximum = min(FAMILIES[family][2], FIT_MAX_TOKENS)
    assert result.stats.config is not None and result.stats.config["max_tokens"] == maximum
    kept = check_exclusions(blocks, result.stats.config, result)
    check_fits_real_tokenizer(result, family, maximum - reserve)
    check_nothing_lost_in_pieces(blocks, kept, result)


def _fixture_blocks(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    blocks = convert_docling(data).blocks if path.name.endswith(".docling.json") else parse_input(data).blocks
    return [block if isinstance(block, dict) else block.model_dump(mode="json") for block in blocks]


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda path: path.name)
@pytest.mark.parametrize("max_tokens", [64, 256])
def test_real_documents_fit_the_real_tokenizer(family: str, fixture: Path, max_tokens: int) -> None:
    blocks = _fixture_blocks(fixture)
    for config in ({"fit": family, "max_tokens": max_tokens, "min_tokens": min(50, max_tokens - 1)},
                   {"fit": family, "max_tokens": max_tokens, "min_tokens": 0, "heading_context": False,
                    "table_chunk_format": "row_record", "overlap_blocks": 2, "overlap_max_share": None}):
        result = chunk_blocks(blocks, config, family_resources(family), document_id="doc")
        kept = check_exclusions(blocks, result.stats.config, result)
        check_fits_real_tokenizer(result, family, max_tokens)
        check_nothing_lost_in_pieces(blocks, kept, result)
        check_reading_order(blocks, result)


REGRESSIONS = ROOT / "tests" / "fixtures" / "regressions"


def open_case(name: str, reason: str) -> Any:
    """A case still failing, kept as a strict xfail so that a fix shows."""
    return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=f"open: {reason}"))


@pytest.mark.parametrize(
    "case",
    [
        # a 3,000-token BPE spends two to four tokens on each Greek or CJK character: the
        # breadcrumb ("Δ σύνοψη", "数据") left no room beside it for any piece of a table cell's
        # column name, and the request was refused instead of the breadcrumb giving way
        "tokenizer_breadcrumb_leaves_no_room_for_a_cell",
        # a code line's indentation left no room for a fragment of its first word (6 tiktoken
        # tokens): the cut inside the word saw only the indentation, and the request was refused
        "tokenizer_code_indentation_leaves_no_room",
        # a table cell's text under a 6-token budget fitted after the header line as the cut
        # search joins it but not as it was appended: it was cut again into itself, for ever
        "tokenizer_cell_cut_again_forever",
        # Found with the streams that carry boxes, and failing before them too (the same blocks
        # on the tree before boxes): open, kept here so that a fix shows (strict xfail).
        open_case("tokenizer_heading_piece_over_a_tiny_window",
                  "with a 6-token tiktoken window and heading_context, a piece "
            "of a cut heading emits '\\nAda ñ' (7 tokens): a count that does not add up across a join"),
        open_case("tokenizer_character_over_a_tiny_window",
                  "a paragraph '𐀀0𐀀' (9 tokens) under a 6-token window is "
            "refused though '𐀀0' (5) and '𐀀' (4) fit: the cut inside the word misses them"),
        # Found by a clean clone's search on 2026-12-06, failing the same on the tree before that
        # day's engine work (e4c355c): open, the same family of tiny BPE windows as the two above.
        open_case("tokenizer_heading_piece_over_a_tiny_bpe_window",
                  "with a 13-token BPE room and heading_context, a cut heading "
            "emits '\\n𐀀09:\\x80𐀀' (14 tokens)"),
        open_case("tokenizer_repeated_text_leaves_no_room_in_a_tiny_window",
                  "a 6-token BPE room is refused as leaving no room beside the "
            "text a chunk must repeat (list lead-ins of '± \\n:')"),
    ],
)
def test_cases_the_search_found(case: str) -> None:
    """Examples Hypothesis found (kept, since a random search may not find them again)."""
    example = json.loads((REGRESSIONS / f"{case}.json").read_text(encoding="utf-8"))
    test_strict_chunks_fit_the_real_tokenizer.hypothesis.inner_test(**example)  # type: ignore[attr-defined]
