"""PostgreSQL restarted mid-write while a worker embeds and stores (the vector store's fault row).

A real worker process (the pinned encoder, torch on the CPU) with ``LONGPARSER_VECTOR_STORE_URL``
pointing at a real PostgreSQL with pgvector (tests/pg.py) chunks, embeds and stores a backlog;
once the first documents are stored, PostgreSQL is stopped like a crash (``pg_ctl -m immediate``:
every connection cut mid-transaction) and started again 3 s later. Every document must be stored
once (one task run, one record), its vectors once (the store's rows are exactly the record's
chunk ids, none twice) and its completion event once.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import psycopg

from config.settings import Settings
from service.encoders import live_encoders
from service.keys import encoders_key
from tasks.client import Producer
from tests.faults.harness import (
    RedisServer,
    Report,
    Row,
    StoreWatcher,
    base_values,
    completion_events,
    diagnose,
    make_document,
    start_worker,
    task_runs,
    wait_until,
)
from tests.pg import running_postgres

DOCUMENTS = 10
BLOCKS = 120
OUTAGE_S = 3.0
WINDOW_S = 120.0


def _vector_rows(url: str, collection: str) -> dict[str, list[str]]:
    with psycopg.connect(url) as connection:
        rows = connection.execute(f'SELECT document_id, chunk_id FROM "{collection}"').fetchall()
    found: dict[str, list[str]] = {}
    for document_id, chunk_id in rows:
        found.setdefault(document_id, []).append(chunk_id)
    return found


def test_postgres_restarted_mid_write_while_a_worker_embeds_and_stores(space: Any, report: Report) -> None:
    base, logs = space
    server = RedisServer("main", base, logs).start()
    prefix = f"lpfault-{uuid.uuid4().hex[:6]}"
    collection = f"fault_{uuid.uuid4().hex[:8]}"
    watcher = StoreWatcher(lambda: server.client(5), lambda d: f"{prefix}:result:{d}").start()
    worker = None
    try:
        with running_postgres() as postgres:
            values = base_values(server.url, prefix, semantic_enabled=True, vector_store_url=postgres.url,
                                 vector_collection=collection)
            # first the worker: submit refuses embed until a worker announces an encoder
            worker = start_worker("vectors", values, logs, concurrency=1, queues="chunking,semantic")
            with Producer(Settings(**base_values(server.url, prefix))) as producer:
                wait_until(lambda: live_encoders(server.client().hgetall(encoders_key(prefix)),
                                                 producer.settings.semantic_queue),
                           120, 0.2, what="the worker's encoders announced")
                accepted = [producer.submit(make_document(f"{prefix}-d{i:03d}", BLOCKS, seed=i),
                                            embed=True).document_id
                            for i in range(DOCUMENTS)]
            for document_id in accepted:
                watcher.want(document_id)
            wait_until(lambda: len(watcher.seen) >= 2, 180, 0.02, what="the first documents stored")
            stored_before = len(watcher.seen)
            postgres.restart(outage_s=OUTAGE_S)
            back = time.monotonic()
            assert watcher.wait_all(accepted, WINDOW_S), diagnose(server.client(), prefix, watcher, accepted,
                                                                  [worker])
            log = worker.log_text()
            runs, events = task_runs([worker]), completion_events(server.client(), prefix)
            rows = _vector_rows(postgres.url, collection)
            for document_id in accepted:
                chunk_ids = _record_chunk_ids(server.client(), prefix, document_id)
                assert sorted(rows.get(document_id, [])) == sorted(chunk_ids), document_id  # vectors once
                assert len(set(chunk_ids)) == len(chunk_ids)
                assert runs[document_id] == 1, (document_id, runs)  # stored once, by one run
                assert events[document_id] == 1, (document_id, events)  # its event once
            waits = log.count("PostgreSQL unavailable (")
            last = max(watcher.seen[d] for d in accepted)
            report(Row(f"PostgreSQL restarted mid-write (pg_ctl -m immediate, back after {OUTAGE_S:g} s), "
                       "worker embedding and storing", len(accepted), len(accepted),
                       sum(1 for d in accepted if runs[d] > 1), max(0.0, last - back),
                       f"{waits} in-process PostgreSQL waits logged; {len(accepted) - stored_before} stored "
                       "after the restart; vectors and events once each"))
            assert waits >= 1, "the restart hit no write: nothing was waited out"
            assert "requeue=False" not in log and worker.alive()
    finally:
        watcher.stop()
        if worker is not None:
            worker.stop()
        server.stop()


def _record_chunk_ids(client: Any, prefix: str, document_id: str) -> list[str]:
    from service.store import ResultStore

    record = ResultStore(client, prefix, 600).load_record(document_id)
    assert record is not None and record["status"] == "SUCCESS", record
    return [chunk["chunk_id"] for chunk in record["result"]["chunks"]]
