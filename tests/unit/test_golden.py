"""Golden file: the whole result for ``examples/sample_document.json``.

The sample is chunked with fixed resources (none: no word list, no language ID, no encoder,
so the golden depends on the engine alone) and compared, timings aside, with
``tests/fixtures/golden/sample_document.result.json``. A mismatch fails with a unified diff.

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

from longparser import chunk_blocks
from schemas import parse_input

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_document.json"
GOLDEN = ROOT / "tests" / "fixtures" / "golden" / "sample_document.result.json"
REGENERATE_FLAG = "LONGPARSER_REGENERATE_GOLDEN"
MAX_DIFF_LINES = 200


def sample_result() -> dict[str, Any]:
    """The sample document's result as JSON data, without ``stats.timings_ms``."""
    request = parse_input(json.loads(SAMPLE.read_text(encoding="utf-8")))
    result = chunk_blocks(request.blocks, request.config, None, document_id=request.document_id)
    data = result.model_dump(mode="json")
    data["stats"].pop("timings_ms")
    return data


def as_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def test_sample_document_matches_golden() -> None:
    actual = as_text(sample_result())
    if os.environ.get(REGENERATE_FLAG) == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(actual, encoding="utf-8")
    expected = GOLDEN.read_text(encoding="utf-8")
    if actual != expected:
        diff = list(
            difflib.unified_diff(
                expected.splitlines(),
                actual.splitlines(),
                str(GOLDEN.relative_to(ROOT)),
                "actual",
                lineterm="",
            )
        )
        shown = "\n".join(diff[:MAX_DIFF_LINES])
        more = f"\n... {len(diff) - MAX_DIFF_LINES} more diff lines" if len(diff) > MAX_DIFF_LINES else ""
        pytest.fail(
            f"result for {SAMPLE.name} differs from the golden file; if the change is intended, "
            f"review it and regenerate with {REGENERATE_FLAG}=1:\n{shown}{more}",
            pytrace=False,
        )


def test_regenerate_flag_is_off() -> None:
    """Guard: a run with the regenerate flag set must never pass (CI cannot silently regenerate)."""
    assert os.environ.get(REGENERATE_FLAG) is None, (
        f"{REGENERATE_FLAG} is set: the golden file was rewritten; unset it and review the diff"
    )


def test_golden_records_what_the_sample_is_for() -> None:
    """Hand-checked facts, so a careless regeneration cannot bless a regression.

    Headers/footers (4 pages) and the separator are excluded; the caption joins the table's
    first chunk and every month's row is in a table chunk; the formula is re-tagged and shares
    a chunk with its lead-in ("... is given by:"); the list's lead-in and its five bullets are
    one list chunk; section 2.2.1 continues on page 4 in a chunk that repeats the previous
    paragraph as overlap without citing it.
    """
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    stats, chunks = golden["stats"], golden["chunks"]
    assert (stats["blocks_in"], stats["blocks_excluded"]) == (45, {"footer": 4, "header": 4, "separator": 1})
    assert stats["equations_detected"] == 1
    by_block = {b: c for c in chunks for b in c["block_ids"]}
    assert not set(by_block) & {"p1-header", "p1-footer", "p4-header", "p4-footer", "p1-b12"}
    caption = by_block["p2-b06"]
    assert caption["block_ids"] == ["p2-b06", "p2-b07"] and caption["chunk_type"] == "table_schema"
    assert caption["text"].startswith("Table 1: Net fleet output")
    table_text = "\n".join(c["text"] for c in chunks if c["chunk_type"] == "table")
    assert all(month in table_text for month in ("January", "April", "August"))
    equation = by_block["p3-b05"]
    assert (equation["chunk_type"], equation["equation_detected"]) == ("equation", True)
    assert "p3-b04" in equation["block_ids"] and "is given by:\n\nη = P / (ρ · g · Q · H)" in equation["text"]
    ids = by_block["p1-b07"]["block_ids"]
    assert by_block["p1-b07"]["chunk_type"] == "list"
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
