"""The invariants on long documents: 10,000-block streams of ``bench/gen_blocks.py`` (the
benchmark's generator: headings at several levels, prose, lists, tables, equations, page
furniture) and the five real DoclingDocument fixtures, with the default config, a 256-token
budget, and strict mode with the model's tokenizer and heading breadcrumbs.

Hypothesis explores small documents; these check that nothing changes at the size of real
reports: no chunk ends with a heading, nothing is lost, reading order and provenance hold, and
in strict mode every emitted text fits.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from loaders.docling import convert_docling
from loaders.tokenizer import load_model_counter
from longparser import chunk_blocks
from longparser.resources import Resources
from schemas import ChunkingConfig
from tests.property.test_invariants import (
    check_exclusions,
    check_headings_lead,
    check_nothing_lost,
    check_order_and_provenance,
)
from tests.property.test_strict import check_maximum, check_nothing_lost_in_pieces

BLOCKS = 10_000
ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "bench" / "gen_blocks.py"
DOCLING = sorted((ROOT / "tests" / "fixtures" / "docling").glob("*.docling.json"))
MODEL = load_model_counter()
STRICT_256 = {"max_tokens": 256, "min_tokens": 50, "strict_max_tokens": True, "token_counter": "model",
              "heading_context": True, "overlap_max_share": 0.05, "table_chunk_format": "pipe"}


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_blocks", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(
    scope="module",
    params=[9, 20240601, *(path.name for path in DOCLING)],
    ids=lambda source: f"seed{source}" if isinstance(source, int) else source.removesuffix(".docling.json"),
)
def stream(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    if isinstance(request.param, str):
        document = json.loads((DOCLING[0].parent / request.param).read_text(encoding="utf-8"))
        return convert_docling(document).blocks
    blocks = _generator().generate(BLOCKS, request.param)
    assert len(blocks) == BLOCKS
    return blocks


def test_every_docling_fixture_is_a_source() -> None:
    assert len(DOCLING) == 5


@pytest.mark.parametrize(
    "overrides",
    [{}, {"max_tokens": 256, "min_tokens": 50}],
    ids=["default", "256-50"],
)
def test_headings_lead_and_nothing_is_lost(stream: list[dict[str, Any]], overrides: dict[str, Any]) -> None:
    config = ChunkingConfig.model_validate(overrides).model_dump()
    result = chunk_blocks(stream, overrides)

    kept = check_exclusions(stream, config, result)
    check_nothing_lost(stream, kept, result)
    check_order_and_provenance(stream, kept, result)
    check_headings_lead(stream, kept, config, result)


def test_strict_model_mode_fits_every_chunk(stream: list[dict[str, Any]]) -> None:
    config = ChunkingConfig.model_validate(STRICT_256).model_dump()
    result = chunk_blocks(stream, STRICT_256, Resources(model_counter=MODEL))

    kept = check_exclusions(stream, config, result)
    check_maximum(result, MODEL, 256)
    check_nothing_lost_in_pieces(stream, kept, result)
    check_order_and_provenance(stream, kept, result)
    check_headings_lead(stream, kept, config, result)
