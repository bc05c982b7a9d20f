"""Hostile input: what a message's blocks and document id can cost a worker (issue 25, 4 and 9).

Each scenario starts its own ``redis-server`` and a real worker (one pool child), lets the child
chunk one good document first (its first task's own start-up is not the message's cost), then
pushes one raw message straight onto the queue's list, as any producer holding the producer ACL
user can, and reports its table row (RSS growth of the parent and the child, deliveries, record)
before asserting:

* a table whose spans would expand past the area cap (400 or 1,000 cells on a diagonal with
  spans of 10**9; one cell spanning 1,000 x 1,000) and a block whose text is under another name
  end as a FAILURE record, ``InvalidPayload``, whose message gives the numbers;
* a document id ending in a newline cannot be a key: no record, and no key with a newline;
* text repeated without bound (a table's 5,000-character column names in each of 2,000 row
  records; a 100,000-character header spanning 500 columns, said in each column's name) is
  chunked, SUCCESS, its repetitions in their short forms (longparser/repeats.py);
* a request of more chunks than its text allows (20,000 one-word paragraphs, ``max_tokens`` 1)
  ends as a FAILURE record, ``RequestRefused``, giving the numbers; one just under the cap
  (5,700 chunks in 1 MB) is chunked;
* every message is delivered once, no process grows by 64 MB or more, no pool child is replaced.

``LONGPARSER_FAULTS_CODE_ROOT=/work/base`` runs the worker from another checkout for the
"before" rows; the 1,000-cell table is not run that way (it kills pool children in a loop), nor
the spanning header (it passes 1.5 GB in-process: bench/bench_amplification.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from bench.bench_amplification import request_of
from config.settings import Settings
from service.keys import queue_list_keys, result_key
from tasks.client import Producer
from tests.faults.harness import RedisServer, base_values, make_document, start_worker
from tests.faults.hostile import (
    RSS_BOUND_BYTES,
    HostileRow,
    RssSampler,
    code_root,
    deliveries,
    push_raw,
    raw_message,
    record_summary,
    task_body,
    wait_for,
)

OUTCOME_S = 60  # the before-run's 400-cell table took 7 s; a refusal takes well under one
SETTLE_S = 1.0  # sampling after the outcome, so a late allocation is still seen


def _diagonal(n: int, span: int) -> list[dict[str, Any]]:
    return [{"row_index": i, "col_index": i, "row_span": span, "col_span": span, "text": f"c{i}"}
            for i in range(n)]


def _table(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"block_id": "t1", "type": "table", "text": "", "table": {"cells": cells}}]


def _area(cells: int, area: int) -> str:
    """The start of the refusal of a table of ``cells`` cells on a ``cells`` x ``cells`` grid."""
    return (f"block 0 (id 't1'): table: table area {area} is over the cap of 250000 positions: {cells} cells "
            f"on a grid of {cells} rows x {cells} columns")


def _at_the_cap() -> list[dict[str, Any]]:
    """The costliest table the cap lets through in a message of 1 MB: a 500 x 500 grid (50 full
    rows, then one cell per row) whose cells' spans sum to 249,950 positions (one cell spans
    the rest of the grid)."""
    cells = [{"r0": r, "c0": c, "text": "1"} for r in range(50) for c in range(500)]
    cells += [{"r0": r, "c0": 1, "text": "2"} for r in range(50, 500)]
    cells.append({"r0": 50, "c0": 0, "rspan": 449, "cspan": 500, "text": "x"})
    return _table(cells)


def _amplifying(case: str) -> dict[str, Any]:
    """The blocks and config of bench/bench_amplification.py's crafted request ``case``."""
    request = request_of(case)
    return {"blocks": request["blocks"], "config": request["config"]}


# (scenario, blocks (or blocks and config), id suffix, expected record, start of its error
# message); a record of None: the id is unreadable as a key, so nothing can be stored under it
SCENARIOS: list[tuple[str, Callable[[], list[dict[str, Any]] | dict[str, Any]], str, str | None, str]] = [
    ("400 diagonal cells, spans 10^9", lambda: _table(_diagonal(400, 10**9)), "", "FAILURE InvalidPayload",
     _area(400, 400 * 10**18)),
    ("1,000 diagonal cells, spans 10^9", lambda: _table(_diagonal(1_000, 10**9)), "",
     "FAILURE InvalidPayload", _area(1_000, 1_000 * 10**18)),
    ("one cell spanning 1,000 x 1,000",
     lambda: _table([{"row_index": 0, "col_index": 0, "row_span": 1_000, "col_span": 1_000, "text": "x"},
                     *_diagonal(1_000, 1)[1:]]), "", "FAILURE InvalidPayload", _area(1_000, 1_000_999)),
    ("document id ending in a newline",
     lambda: [{"block_id": "b1", "type": "paragraph", "text": "A paragraph."}], "\n", None, ""),
    ("block with `content` instead of `text`",
     lambda: [{"block_id": "b1", "type": "paragraph", "content": "The text under another name."}], "",
     "FAILURE InvalidPayload", "block 0 (id 'b1'): text: field required (it has 'content')"),
    ("table at the area cap (accepted)", _at_the_cap, "", "SUCCESS", ""),
    ("10 column names of 5,000 chars, 2,000 rows", lambda: _amplifying("header-per-row"), "", "SUCCESS", ""),
    ("100,000-char header over 500 columns", lambda: _amplifying("merged-header"), "", "SUCCESS", ""),
    ("20,000 one-word paragraphs, max_tokens 1", lambda: _amplifying("many-chunks"), "",
     "FAILURE RequestRefused", "the request makes 20000 chunks, over the cap of 4100"),
    ("5,700 chunks of 120 chars (the chunk cap)", lambda: _amplifying("chunk-cap"), "", "SUCCESS", ""),
]


def _newline_keys(client: Any) -> list[bytes]:
    return [key for key in client.scan_iter(count=1000) if b"\n" in key or b"\r" in key]


def _finished(worker: Any, task_id: str) -> bool:
    """The worker logged the task's outcome (any line naming it besides ``received``)."""
    lines = [line for line in worker.log_text().splitlines() if f"[{task_id}]" in line]
    return any(" received" not in line for line in lines)


IDS = ["spans-400", "spans-1000", "span-1000x1000", "id-newline", "text-misnamed", "at-cap", "header-per-row",
       "merged-header", "many-chunks", "chunk-cap"]


@pytest.mark.parametrize(("scenario", "blocks", "suffix", "expected", "error"), SCENARIOS, ids=IDS)
def test_hostile_input_is_refused_within_the_memory_bound(
    space: Any, hostile_report: Callable[[HostileRow], None], scenario: str,
    blocks: Callable[[], list[dict[str, Any]] | dict[str, Any]], suffix: str, expected: str | None,
    error: str,
) -> None:
    base, logs = space
    server = RedisServer("main", base, logs).start()
    prefix = f"lphostile-{uuid.uuid4().hex[:6]}"
    values = base_values(server.url, prefix)
    worker = start_worker("hostile", values, logs, concurrency=1, cwd=code_root())
    client = server.client()
    try:
        with Producer(Settings(**values)) as producer:
            warm = producer.submit(make_document(f"{prefix}-warm", 50, seed=1))
            assert producer.wait(warm, timeout=OUTCOME_S)["state"] == "SUCCESS"
            document_id = f"{prefix}-report{suffix}"
            task_id = str(uuid.uuid4())
            content = blocks()
            payload = {"document_id": document_id,
                       **(content if isinstance(content, dict) else {"blocks": content})}
            message = raw_message(task_body(payload), queue="chunking", task_id=task_id)
            sampler = RssSampler(worker.popen.pid).start()
            size = push_raw(client, queue_list_keys(values["celery_key_prefix"], "chunking")[0], message)
            finished = wait_for(lambda: _finished(worker, task_id), OUTCOME_S)
            wait_for(lambda: False, SETTLE_S)
            sampler.stop()
            readable = expected is not None
            record = producer.fetch_record(document_id) if readable else None
            newline_keys = _newline_keys(client)
            delivered = deliveries([worker], task_id)
            notes = [] if finished else [f"no outcome in {OUTCOME_S} s"]
            if sampler.children_replaced:
                notes.append(f"{sampler.children_replaced} pool children replaced")
            if newline_keys:
                notes.append(f"{len(newline_keys)} keys with a newline")
            if record is not None and record.get("error"):
                notes.append(" ".join(str(record["error"].get("message", "")).split())[:90])
            summary = record_summary(record) if readable else "none (id unreadable)"
            hostile_report(HostileRow(scenario, size, sampler.parent_growth, sampler.child_growth, delivered,
                                      summary, "; ".join(notes)))

        assert finished, f"no outcome logged for {task_id} in {OUTCOME_S} s"
        assert newline_keys == []
        if readable:
            assert record is not None and record_summary(record) == expected, record
            assert (record.get("error") or {}).get("message", "").startswith(error), record.get("error")
            assert client.exists(result_key(prefix, document_id))
        else:
            assert client.keys(f"{prefix}:result:*") == [result_key(prefix, warm.document_id).encode()]
        assert delivered == 1
        assert sampler.parent_growth < RSS_BOUND_BYTES, f"parent grew {sampler.parent_growth} bytes"
        assert sampler.child_growth < RSS_BOUND_BYTES, f"child grew {sampler.child_growth} bytes"
        assert sampler.children_replaced == 0, "a pool child was replaced"
        assert worker.alive()
    finally:
        worker.stop()
        server.stop()
