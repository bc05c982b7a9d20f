#!/usr/bin/env python3
"""What a table costs a worker child, by its area (``schemas.blocks.MAX_TABLE_AREA``).

Each case runs in a fresh interpreter, as a pool child handles an inline request: the body is
validated from its JSON into a ChunkRequest (``worker.serialization.InlineRequest``), then
chunked (``longparser.chunk_request``, default config), after one small warm-up document. The
row is the peak RSS growth over the warm interpreter (``ru_maxrss`` against ``/proc`` RSS
before the request), the request's size, the time and the outcome. Cases at the cap:

* ``grid``: 500 cells on a diagonal, a 500 x 500 grid (250,000 positions), no span;
* ``spans``: 500 diagonal cells each spanning 22 x 22 (242,000 positions covered);
* ``grid+spans``: the 500 x 500 grid, one cell spanning 499 x 500 on it (249,999 in all);
* ``1 MB``: the costliest table the cap lets through in 1 MB of message: 50 full rows of 500
  columns, one cell per further row, one cell spanning the rest (249,950 positions).

Usage:
    .venv/bin/python bench/bench_table_area.py
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASES = ("grid", "spans", "grid+spans", "1 MB")


def _diagonal(n: int, span: int = 1) -> list[dict[str, Any]]:
    return [{"r0": i, "c0": i, "rspan": span, "cspan": span, "text": "x"} for i in range(n)]


def cells_of(case: str) -> list[dict[str, Any]]:
    if case == "grid":
        return _diagonal(500)
    if case == "spans":
        return _diagonal(500, 22)
    if case == "grid+spans":
        return [{"r0": 0, "c0": 0, "rspan": 499, "cspan": 500, "text": "x"}, *_diagonal(500)[1:]]
    cells = [{"r0": r, "c0": c, "text": "1"} for r in range(50) for c in range(500)]
    cells += [{"r0": r, "c0": 1, "text": "2"} for r in range(50, 500)]
    cells.append({"r0": 50, "c0": 0, "rspan": 449, "cspan": 500, "text": "x"})
    return cells


def request_json(document_id: str, cells: list[dict[str, Any]]) -> str:
    block = {"block_id": "t1", "type": "table", "text": "", "table": {"cells": cells}}
    return json.dumps({"document_id": document_id, "blocks": [block]}, separators=(",", ":"))


def _rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def measure(case: str) -> str:
    """One case, in this interpreter: its table row."""
    from longparser import chunk_request
    from worker.serialization import InlineRequest

    body = request_json("d", cells_of(case))
    chunk_request(InlineRequest.model_validate_json(request_json("w", _diagonal(2))))
    base, started = _rss_mb(), time.perf_counter()
    try:
        outcome = f"{len(chunk_request(InlineRequest.model_validate_json(body)).chunks)} chunks"
    except ValueError as exc:
        outcome = f"refused: {str(exc).splitlines()[0][:60]}"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return (f"| {case} | {len(body) / 1024:,.0f} KB | {peak - base:.1f} MB | "
            f"{time.perf_counter() - started:.2f} s | {outcome} |")


def main() -> None:
    if len(sys.argv) == 2:
        print(measure(sys.argv[1]))
        return
    print("| case | request | peak RSS growth | time | outcome |\n|---|---|---|---|---|")
    for case in CASES:
        done = subprocess.run([sys.executable, __file__, case], cwd=ROOT, capture_output=True, text=True,
                              check=True, env={"PYTHONPATH": str(ROOT)})
        print(done.stdout.strip())


if __name__ == "__main__":
    main()
