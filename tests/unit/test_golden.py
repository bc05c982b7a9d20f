"""Golden files: the whole result for ``examples/sample_document.json`` (its own config), and
for each real DoclingDocument fixture (``tests/fixtures/docling``) chunked with the settings the
docs recommend for a 256-token model (strict, the model's tokenizer, heading breadcrumbs).

Each document is chunked with fixed resources (no word list, no language ID, no encoder; the
model counter from the tokenizer file in the repository), so a golden depends on the engine
and the converter alone, and compared, timings aside, with its file under
``tests/fixtures/golden/``. A mismatch fails with a unified diff.

Regenerate only on purpose, after reviewing the diff::

    LONGPARSER_REGENERATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/test_golden.py --no-cov

That run rewrites the file and FAILS ``test_regenerate_flag_is_off`` so that no CI run (or
forgotten shell variable) can silently accept a new golden.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from loaders.docling import convert_docling
from loaders.tokenizer import load_model_counter
from longparser import chunk_blocks
from longparser.resources import Resources
from longparser.tokens import count
from schemas import parse_input
from schemas.config import RECOMMENDED_CONFIG

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_document.json"
GOLDEN_DIR = ROOT / "tests" / "fixtures" / "golden"
GOLDEN = GOLDEN_DIR / "sample_document.result.json"
DOCLING_FIXTURES = ROOT / "tests" / "fixtures" / "docling"
DOCLING_NAMES = sorted(path.name for path in DOCLING_FIXTURES.glob("*.docling.json"))
# The settings recommended for a 256-token embedding model (the one constant the docs show).
RECOMMENDED_256 = dict(RECOMMENDED_CONFIG)
REGENERATE_FLAG = "LONGPARSER_REGENERATE_GOLDEN"
MAX_DIFF_LINES = 200


def _as_data(result: Any) -> dict[str, Any]:
    data = result.model_dump(mode="json")
    data["stats"].pop("timings_ms")
    return data


def sample_result() -> dict[str, Any]:
    """The sample document's result as JSON data, without ``stats.timings_ms``."""
    request = parse_input(json.loads(SAMPLE.read_text(encoding="utf-8")))
    return _as_data(chunk_blocks(request.blocks, request.config, None, document_id=request.document_id))


def docling_result(name: str) -> dict[str, Any]:
    """A docling fixture's result with :data:`RECOMMENDED_256`, without ``stats.timings_ms``."""
    conversion = convert_docling(json.loads((DOCLING_FIXTURES / name).read_text(encoding="utf-8")))
    resources = Resources(model_counter=load_model_counter())
    return _as_data(chunk_blocks(conversion.blocks, RECOMMENDED_256, resources, document_id=name))


def as_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def check_golden(actual_data: dict[str, Any], golden: Path, what: str) -> None:
    actual = as_text(actual_data)
    if os.environ.get(REGENERATE_FLAG) == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
    expected = golden.read_text(encoding="utf-8")
    if actual != expected:
        diff = list(
            difflib.unified_diff(
                expected.splitlines(),
                actual.splitlines(),
                str(golden.relative_to(ROOT)),
                "actual",
                lineterm="",
            )
        )
        shown = "\n".join(diff[:MAX_DIFF_LINES])
        more = f"\n... {len(diff) - MAX_DIFF_LINES} more diff lines" if len(diff) > MAX_DIFF_LINES else ""
        pytest.fail(
            f"result for {what} differs from the golden file; if the change is intended, "
            f"review it and regenerate with {REGENERATE_FLAG}=1:\n{shown}{more}",
            pytrace=False,
        )


def test_sample_document_matches_golden() -> None:
    check_golden(sample_result(), GOLDEN, SAMPLE.name)


@pytest.mark.parametrize("name", DOCLING_NAMES)
def test_docling_fixture_matches_golden(name: str) -> None:
    golden = GOLDEN_DIR / "docling" / name.replace(".docling.json", ".result.json")
    check_golden(docling_result(name), golden, f"{name} with the recommended 256-token settings")


def test_every_docling_fixture_has_a_golden() -> None:
    assert len(DOCLING_NAMES) == 5
    goldens = sorted(path.name for path in (GOLDEN_DIR / "docling").glob("*.result.json"))
    assert goldens == sorted(name.replace(".docling.json", ".result.json") for name in DOCLING_NAMES)


def test_regenerate_flag_is_off() -> None:
    """Guard: a run with the regenerate flag set must never pass (CI cannot silently regenerate)."""
    assert os.environ.get(REGENERATE_FLAG) is None, (
        f"{REGENERATE_FLAG} is set: the golden file was rewritten; unset it and review the diff"
    )


def test_golden_records_what_the_sample_is_for() -> None:
    """Hand-checked facts, so a careless regeneration cannot bless a regression.

    Headers/footers (4 pages) and the separator are excluded; the table's heading, lead-in
    ("Table 1 lists ...") and caption open the table's first chunk and every month's row is in
    a table chunk; the formula is re-tagged and shares a chunk with its lead-in ("... is given
    by:"), a chunk of eleven blocks of prose typed ``section`` (it says it holds an equation);
    the list's lead-in and its five bullets are in one chunk with the section's prose, typed
    ``section``; section 2.2.1 continues on page 4 in a chunk that repeats the previous
    paragraph as overlap without citing it.
    """
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    stats, chunks = golden["stats"], golden["chunks"]
    assert (stats["blocks_in"], stats["blocks_excluded"]) == (45, {"footer": 4, "header": 4, "separator": 1})
    assert stats["equations_detected"] == 1
    by_block = {b: c for c in chunks for b in c["block_ids"]}
    assert not set(by_block) & {"p1-header", "p1-footer", "p4-header", "p4-footer", "p1-b12"}
    caption = by_block["p2-b06"]
    assert caption["block_ids"] == ["p2-b04", "p2-b05", "p2-b06", "p2-b07"]
    assert caption["chunk_type"] == "table_schema"
    assert caption["text"].startswith("2.1 Monthly generation\nTable 1 lists the net output")
    assert "\nTable 1: Net fleet output" in caption["text"]
    table_text = "\n".join(c["text"] for c in chunks if c["chunk_type"] == "table")
    assert all(month in table_text for month in ("January", "April", "August"))
    equation = by_block["p3-b05"]
    assert (equation["chunk_type"], equation["equation_detected"]) == ("section", True)
    assert "p3-b04" in equation["block_ids"] and "is given by:\n\nη = P / (ρ · g · Q · H)" in equation["text"]
    ids = by_block["p1-b07"]["block_ids"]
    assert by_block["p1-b07"]["chunk_type"] == "section"
    start = ids.index("p1-b06")
    assert ids[start : start + 6] == ["p1-b06", "p1-b07", "p1-b08", "p1-b09", "p1-b10", "p1-b11"]
    continued = by_block["p4-b01"]
    assert continued["overlap_with_previous"] and continued["page_numbers"] == [4]
    assert continued["text"].startswith("Despite these limits") and "p3-b09" not in continued["block_ids"]
    assert continued["section_path"] == [
        "2 Fleet Performance",
        "2.2 Efficiency model",
        "2.2.1 Hydraulic efficiency",
    ]


@pytest.mark.parametrize("name", DOCLING_NAMES)
def test_docling_goldens_record_what_they_are_for(name: str) -> None:
    """Hand-checked facts, so a careless regeneration cannot bless a regression: every text to
    embed fits the model's window, every table with cells is in table chunks that all show its
    title when it has one (no schema chunks in the recommended settings), no chunk ends with a
    heading, and every kept block of the conversion is cited by some chunk."""
    golden_file = GOLDEN_DIR / "docling" / name.replace(".docling.json", ".result.json")
    golden = json.loads(golden_file.read_text(encoding="utf-8"))
    counter = load_model_counter()
    blocks = convert_docling(json.loads((DOCLING_FIXTURES / name).read_text(encoding="utf-8"))).blocks
    kind = {block["block_id"]: block["type"] for block in blocks}
    chunks = golden["chunks"]
    assert golden["stats"]["token_counter"] == counter.name
    assert all(count(counter, chunk["embed_text"]) <= 256 for chunk in chunks)
    assert all(chunk["token_count"] == count(counter, chunk["text"]) for chunk in chunks)
    tables = [block["block_id"] for block in blocks if (block["table"] or {}).get("cells")]
    for table in tables:
        own = [c for c in chunks if table in c["metadata"].get("table_block_ids", [])
               or c["metadata"].get("table_block_id") == table]
        assert own and all(c["chunk_type"] == "table" for c in own), table
        titles = {c["metadata"].get("title_block_id") for c in own}
        assert len(titles) == 1, (table, titles)  # a title is on every chunk of its table, or on none
    last = blocks[-1]["block_id"]
    assert all(kind[c["block_ids"][-1]] != "heading" or c["block_ids"][-1] == last for c in chunks)
    cited = {block_id for chunk in chunks for block_id in chunk["block_ids"]}
    excluded = sum(golden["stats"]["blocks_excluded"].values())
    assert len(cited) == len(blocks) - excluded
