#!/usr/bin/env python3
"""What repeated text can cost: each way a request of at most 1 MB makes the engine write a
text again, at its worst, and what it costs a pool child.

Each case runs in a fresh interpreter under a 1.5 GB address-space limit, as a pool child
handles an inline request: the body is validated from its JSON into a ChunkRequest
(``worker.serialization.InlineRequest``), chunked (``longparser.chunk_request``) and the result
dumped to JSON (what the worker stores), after one small warm-up document. The row is the
request's size, the peak RSS growth over the warm interpreter, the characters of chunk text and
``embed_text`` written, the time and the outcome (``MemoryError`` where the limit was hit).

Cases (every one a request of at most 1 MB):

* ``header-per-row``: 10 header cells of 5,000 characters, 2,000 one-cell rows (``row_record``:
  every row writes every column's name);
* ``header-line``: the same table as ``pipe`` (the header line at the top of every batch);
* ``title``: a 400,000-character one-sentence caption, ``table_titles``, 2,000 one-cell rows;
* ``lead-in``: a 400,000-character list lead-in and 5,000 one-word items, ``max_tokens`` 8 (a
  piece per item: about the most chunks the chunk cap lets its text make);
* ``breadcrumb``: a 300,000-character section title, ``heading_context``, and a table of 10,000
  one-cell rows in that section;
* ``merged-header``: a 100,000-character header cell spanning 500 columns over a row of
  sub-headers, 400 data rows (every column's name holds the spanning text);
* ``spanned-cell``: a 400,000-character cell spanning 500 rows beside 500 one-cell rows;
* ``many-chunks`` (no repetition): 20,000 one-word paragraphs, ``max_tokens`` 1,
  ``overlap_blocks`` 0: a chunk per block (over the chunk cap: refused);
* ``chunk-cap``: many chunks the chunk cap lets a 1 MB request make: 5,700 paragraphs of 120
  characters, ``max_tokens`` 20, a chunk each (the cap for their text is 7,420; 100-character
  paragraphs would make about 6,800, the most).

Usage:
    .venv/bin/python bench/bench_amplification.py [CASE ...]
    LONGPARSER_BENCH_CODE_ROOT=/path/to/checkout .venv/bin/python bench/bench_amplification.py  # before
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASES = ("header-per-row", "header-line", "title", "lead-in", "breadcrumb", "merged-header", "spanned-cell",
         "many-chunks", "chunk-cap")
ADDRESS_SPACE_BYTES = 1536 * 2**20


def _table(cells: list[dict[str, Any]], block_id: str = "t1", **extra: Any) -> dict[str, Any]:
    return {"block_id": block_id, "type": "table", "text": "", "table": {"cells": cells}, **extra}


def _headed_rows(header: list[str], rows: int) -> list[dict[str, Any]]:
    cells = [{"r0": 0, "c0": c, "text": text, "column_header": True} for c, text in enumerate(header)]
    return cells + [{"r0": r, "c0": 0, "text": str(r)} for r in range(1, rows + 1)]


def request_of(case: str) -> dict[str, Any]:
    """The case's request: ``{"document_id", "blocks", "config"}``."""
    config: dict[str, Any] = {}
    words = ("lorem ipsum dolor sit amet " * 20_000)
    if case in ("header-per-row", "header-line"):
        blocks = [_table(_headed_rows([f"H{c} " + "w" * 4_995 for c in range(10)], 2_000))]
        config = {"table_chunk_format": "pipe"} if case == "header-line" else {}
    elif case == "title":
        caption = {"block_id": "c1", "type": "caption", "text": "Table 1: " + words[:400_000].rstrip() + "."}
        blocks = [caption, _table(_headed_rows(["Name"], 2_000))]
        config = {"table_titles": True}
    elif case == "lead-in":
        lead = {"block_id": "p1", "type": "paragraph", "text": words[:400_000].rstrip() + " as follows:"}
        items = [{"block_id": f"i{k}", "type": "list_item", "text": "x"} for k in range(5_000)]
        blocks = [lead, *items]
        config = {"max_tokens": 8, "min_tokens": 0}
    elif case == "breadcrumb":
        path = [words[:300_000].rstrip()]
        blocks = [{"block_id": "h1", "type": "heading", "text": "Results", "hierarchy_path": path},
                  _table(_headed_rows(["Name"], 10_000), hierarchy_path=path)]
        config = {"heading_context": True}
    elif case == "merged-header":
        cells = [{"r0": 0, "c0": 0, "cspan": 500, "text": "G " + "w" * 100_000, "column_header": True}]
        cells += [{"r0": 1, "c0": c, "text": f"s{c}", "column_header": True} for c in range(500)]
        cells += [{"r0": r, "c0": 0, "text": str(r)} for r in range(2, 402)]
        blocks = [_table(cells)]
    elif case == "spanned-cell":
        cells = [{"r0": 0, "c0": 0, "text": "Key", "column_header": True},
                 {"r0": 0, "c0": 1, "text": "Value", "column_header": True},
                 {"r0": 1, "c0": 0, "rspan": 500, "text": words[:400_000]}]
        cells += [{"r0": r, "c0": 1, "text": str(r)} for r in range(1, 501)]
        blocks = [_table(cells)]
    elif case == "many-chunks":
        blocks = [{"block_id": f"p{k}", "type": "paragraph", "text": "x"} for k in range(20_000)]
        config = {"max_tokens": 1, "min_tokens": 0, "overlap_blocks": 0}
    elif case == "chunk-cap":
        text = ("lorem ipsum dolor sit amet " * 5)[:119] + "."
        blocks = [{"block_id": f"p{k}", "type": "paragraph", "text": text} for k in range(5_700)]
        config = {"max_tokens": 20, "min_tokens": 0, "overlap_blocks": 0}
    else:
        raise SystemExit(f"unknown case {case!r}: one of {', '.join(CASES)}")
    return {"document_id": "d", "blocks": blocks, "config": config}


def _body(case: str) -> str:
    return json.dumps(request_of(case), separators=(",", ":"))


def _rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def measure(case: str) -> str:
    """One case, in this interpreter: its table row."""
    from longparser import chunk_request
    from worker.serialization import InlineRequest

    body = _body(case)
    warm = {"document_id": "w", "blocks": [{"block_id": "b", "type": "paragraph", "text": "Warm."}]}
    chunk_request(InlineRequest.model_validate_json(json.dumps(warm))).model_dump_json()
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))
    base, started = _rss_mb(), time.perf_counter()
    written = "-"
    try:
        result = chunk_request(InlineRequest.model_validate_json(body))
        result.model_dump_json()
        chars = sum(len(c.text) + len(c.embed_text or "") for c in result.chunks)
        written = f"{chars / 1e6:,.2f} M"
        outcome = f"{len(result.chunks)} chunks"
    except MemoryError:
        outcome = f"MemoryError (over {ADDRESS_SPACE_BYTES // 2**20} MB of address space)"
    except ValueError as exc:
        outcome = f"refused: {str(exc).splitlines()[0][:60]}"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return (f"| {case} | {len(body) / 1024:,.0f} KB | {peak - base:.1f} MB | {written} | "
            f"{time.perf_counter() - started:.2f} s | {outcome} |")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(measure(sys.argv[2]))
        return
    print("| case | request | peak RSS growth | chunk text | time | outcome |\n|---|---|---|---|---|---|")
    for case in sys.argv[1:] or CASES:
        code_root = os.environ.get("LONGPARSER_BENCH_CODE_ROOT", str(ROOT))
        done = subprocess.run([sys.executable, __file__, "--one", case], cwd=ROOT, capture_output=True,
                              text=True, check=False, env={"PYTHONPATH": code_root})
        print(done.stdout.strip() or f"| {case} | {len(_body(case)) / 1024:,.0f} KB | "
              f"aborted (exit {done.returncode}: {_last_error(done.stderr)}) |")


def _last_error(stderr: str) -> str:
    """The line saying why a case's interpreter died (Rust code that cannot allocate panics)."""
    lines = [line for line in stderr.splitlines() if "memory" in line.lower() or "panicked" in line]
    return (lines or stderr.strip().splitlines()[-1:] or ["no output"])[0][:80]


if __name__ == "__main__":
    main()
