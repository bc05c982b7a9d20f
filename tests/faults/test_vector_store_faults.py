"""The vector store's fault rows: a worker that embeds and stores loses PostgreSQL mid-write, or
is SIGKILLed mid-embedding.

A real worker process (the pinned encoder, torch on the CPU) with ``LONGPARSER_VECTOR_STORE_URL``
pointing at a real PostgreSQL with pgvector (tests/pg.py) chunks, embeds and stores a backlog
submitted with ``embed=True``.

* PostgreSQL restarted: once the first documents are stored, PostgreSQL is stopped like a crash
  (``pg_ctl -m immediate``: every connection cut mid-transaction) and started again 3 s later.
* SIGKILL mid-embedding: while one document's progress says ``embedding``, its pool child is
  SIGKILLed (the message is requeued, a new child runs it again); while another's does, the whole
  worker is (its held message is handed on once its lease lapses), and a new worker started. Then
  a third document's child is SIGKILLed the moment its vectors are committed, before its record
  is stored: its next run must find its rows and write none again.

Either way every document must be stored once (one task run, one record), its vectors once (the
store's rows are exactly the record's chunk ids, none twice) and its completion event once.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from config.settings import Settings
from service.encoders import live_encoders
from service.keys import encoders_key
from tasks.client import JobHandle, Producer
from tests.faults.harness import (
    Proc,
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
from tests.faults.hostile import children_of
from tests.pg import Postgres, running_postgres

DOCUMENTS = 10
BLOCKS = 120
OUTAGE_S = 3.0
WINDOW_S = 120.0
KILL_WINDOW_S = 240.0  # three documents run twice, one after a lease lapses and a new worker loads its model
KILL_DOCUMENTS = 4
KILL_BLOCKS = 1200  # a few hundred chunks: seconds of embedding, so a kill lands in it
LEASE = {"lease_interval": 1, "lease_timeout": 5}  # a dead worker's message is handed on within seconds


def _vector_rows(url: str, collection: str) -> dict[str, list[str]]:
    """The collection's chunk ids by document (none before the worker's first write creates it)."""
    with psycopg.connect(url) as connection:
        if connection.execute("SELECT to_regclass(%s)", (f'"{collection}"',)).fetchone()[0] is None:
            return {}
        rows = connection.execute(f'SELECT document_id, chunk_id FROM "{collection}"').fetchall()
    found: dict[str, list[str]] = {}
    for document_id, chunk_id in rows:
        found.setdefault(document_id, []).append(chunk_id)
    return found


def _record_chunk_ids(client: Any, prefix: str, document_id: str) -> list[str]:
    from service.store import ResultStore

    record = ResultStore(client, prefix, 600).load_record(document_id)
    assert record is not None and record["status"] == "SUCCESS", record
    return [chunk["chunk_id"] for chunk in record["result"]["chunks"]]


def _submit_embedding(server: RedisServer, prefix: str, documents: int, blocks: int,
                      watcher: StoreWatcher, **values: Any) -> list[JobHandle]:
    """Submit ``documents`` with ``embed=True`` once a worker announced its encoders (``submit``
    refuses embed until then); each watched for in the store."""
    with Producer(Settings(**base_values(server.url, prefix, **values))) as producer:
        wait_until(lambda: live_encoders(server.client().hgetall(encoders_key(prefix)),
                                         producer.settings.semantic_queue),
                   120, 0.2, what="the worker's encoders announced")
        handles = [producer.submit(make_document(f"{prefix}-d{i:03d}", blocks, seed=i), embed=True)
                   for i in range(documents)]
    for handle in handles:
        watcher.want(handle.document_id)
    return handles


def _assert_each_once(server: RedisServer, prefix: str, accepted: list[str], watcher: StoreWatcher,
                      workers: list[Proc], url: str, collection: str, window_s: float = WINDOW_S) -> Counter:
    """Every accepted document stored within ``window_s``, by one run, its vectors once, its event
    once; the runs."""
    assert watcher.wait_all(accepted, window_s), diagnose(server.client(), prefix, watcher, accepted, workers)
    runs, events = task_runs(workers), completion_events(server.client(), prefix)
    rows = _vector_rows(url, collection)
    for document_id in accepted:
        chunk_ids = _record_chunk_ids(server.client(), prefix, document_id)
        assert sorted(rows.get(document_id, [])) == sorted(chunk_ids), document_id  # vectors once
        assert len(set(chunk_ids)) == len(chunk_ids)
        assert runs[document_id] == 1, (document_id, runs)  # stored once, by one run
        assert events[document_id] == 1, (document_id, events)  # its event once
    return runs


@dataclass
class Scene:
    """One scenario's Redis, PostgreSQL, key prefix, collection, store watcher and worker values;
    ``workers`` it started are stopped with the rest."""

    server: RedisServer
    postgres: Postgres
    prefix: str
    collection: str
    watcher: StoreWatcher
    values: dict[str, Any]
    logs: Path
    workers: list[Proc] = field(default_factory=list)

    def start_worker(self, name: str) -> Proc:
        """A worker of one pool child consuming the ``semantic`` queue (where embed requests go)."""
        worker = start_worker(name, self.values, self.logs, concurrency=1, queues="chunking,semantic")
        self.workers.append(worker)
        return worker

    def submit(self, documents: int, blocks: int, **values: Any) -> list[JobHandle]:
        return _submit_embedding(self.server, self.prefix, documents, blocks, self.watcher, **values)

    def assert_each_once(self, accepted: list[str], window_s: float = WINDOW_S) -> Counter:
        return _assert_each_once(self.server, self.prefix, accepted, self.watcher, self.workers,
                                 self.postgres.url, self.collection, window_s)


@contextlib.contextmanager
def _scene(space: tuple[Path, Path], **more: Any) -> Iterator[Scene]:
    """A Redis and a PostgreSQL with pgvector for one scenario, the worker values pointing at them."""
    base, logs = space
    server = RedisServer("main", base, logs).start()
    prefix = f"lpfault-{uuid.uuid4().hex[:6]}"
    collection = f"fault_{uuid.uuid4().hex[:8]}"
    watcher = StoreWatcher(lambda: server.client(5), lambda d: f"{prefix}:result:{d}").start()
    workers: list[Proc] = []
    try:
        with running_postgres() as postgres:
            values = base_values(server.url, prefix, semantic_enabled=True, vector_store_url=postgres.url,
                                 vector_collection=collection, **more)
            yield Scene(server, postgres, prefix, collection, watcher, values, logs, workers)
    finally:
        watcher.stop()
        for proc in workers:
            proc.stop()
        server.stop()


def test_postgres_restarted_mid_write_while_a_worker_embeds_and_stores(space: Any, report: Report) -> None:
    with _scene(space) as scene:
        worker = scene.start_worker("vectors")
        accepted = [h.document_id for h in scene.submit(DOCUMENTS, BLOCKS)]
        watcher = scene.watcher
        wait_until(lambda: len(watcher.seen) >= 2, 180, 0.02, what="the first documents stored")
        stored_before = len(watcher.seen)
        scene.postgres.restart(outage_s=OUTAGE_S)
        back = time.monotonic()
        runs = scene.assert_each_once(accepted)
        log = worker.log_text()
        waits = log.count("PostgreSQL unavailable (")
        last = max(watcher.seen[d] for d in accepted)
        report(Row(f"PostgreSQL restarted mid-write (pg_ctl -m immediate, back after {OUTAGE_S:g} s), "
                   "worker embedding and storing", len(accepted), len(accepted),
                   sum(1 for d in accepted if runs[d] > 1), max(0.0, last - back),
                   f"{waits} in-process PostgreSQL waits logged; {len(accepted) - stored_before} stored "
                   "after the restart; vectors and events once each"))
        assert waits >= 1, "the restart hit no write: nothing was waited out"
        assert "requeue=False" not in log and worker.alive()


def _embedding_now(producer: Producer, handles: list[JobHandle], watcher: StoreWatcher) -> JobHandle | None:
    """The unstored document whose task's progress says ``embedding`` (the worker runs one at a time)."""
    for handle in handles:
        if handle.document_id in watcher.seen:
            continue
        progress = producer.status(handle).get("progress") or {}
        if progress.get("stage") == "embedding":
            return handle
    return None


def _kill_mid_embedding(producer: Producer, handles: list[JobHandle], watcher: StoreWatcher,
                        url: str, collection: str, kill: Any) -> str:
    """Wait until one of ``handles`` is being embedded, ``kill()``, and check that the kill landed
    before anything of it was written (no record, no rows); its document id."""
    handle = wait_until(lambda: _embedding_now(producer, handles, watcher), 180, 0.02,
                        what="a document being embedded")
    kill()
    time.sleep(0.5)  # anything the dead process had in flight has landed by now, or never will
    assert handle.document_id not in watcher.seen, "the kill landed after the document was stored"
    assert handle.document_id not in _vector_rows(url, collection), "the kill landed after its rows"
    return handle.document_id


def _kill_after_commit(server: RedisServer, prefix: str, handles: list[JobHandle], url: str,
                       collection: str, kill: Any) -> tuple[str, int]:
    """Wait until one of ``handles`` has rows in the collection (its transaction committed),
    ``kill()`` at once, and check that its record was not stored yet; its document id and rows.

    Polled on one connection every millisecond: the record follows the commit within tens of them."""
    ids = [h.document_id for h in handles]
    exists = "SELECT to_regclass(%s)"
    committed = f'SELECT document_id FROM "{collection}" WHERE document_id = ANY(%s) LIMIT 1'
    deadline = time.monotonic() + 180
    with psycopg.connect(url, autocommit=True) as connection:
        while True:
            assert time.monotonic() < deadline, "no document's vectors were committed"
            if connection.execute(exists, (f'"{collection}"',)).fetchone()[0] is not None:
                row = connection.execute(committed, (ids,)).fetchone()
                if row is not None:
                    break
            time.sleep(0.001)
    kill()
    document_id = row[0]
    assert server.client().get(f"{prefix}:result:{document_id}") is None, \
        "the kill landed after the record was stored"
    return document_id, len(_vector_rows(url, collection)[document_id])


def _store_outcomes(workers: list[Proc], document_id: str) -> list[str]:
    """The vector store's outcome logged by each run of ``document_id`` that reached its log line
    (a run killed right after its commit may not have), in order."""
    pattern = re.compile(rf"document {re.escape(document_id)}: vector collection \S+: StoreOutcome\((.*?)\)")
    return [m.group(1) for proc in workers for m in pattern.finditer(proc.log_text())]


def test_sigkill_mid_embedding_of_a_pool_child_then_of_the_whole_worker(space: Any, report: Report) -> None:
    with _scene(space, progress_min_blocks=0, **LEASE) as scene:
        workers, watcher, url, collection = scene.workers, scene.watcher, scene.postgres.url, scene.collection
        scene.start_worker("embedding")
        handles = scene.submit(KILL_DOCUMENTS, KILL_BLOCKS, **LEASE)
        accepted = [h.document_id for h in handles]

        def kill_child() -> None:
            children = children_of(workers[-1].popen.pid)
            assert len(children) == 1, f"expected one pool child (-c 1), found {children}"
            os.kill(children[0], signal.SIGKILL)

        def kill_worker() -> None:
            os.killpg(workers[-1].popen.pid, signal.SIGKILL)  # parent and pool child
            workers[-1].popen.wait(timeout=10)

        with Producer(Settings(**base_values(scene.server.url, scene.prefix, **LEASE))) as producer:
            child_killed = _kill_mid_embedding(producer, handles, watcher, url, collection, kill_child)
            # another document: killing one twice is the poison-message scenario's business
            others = [h for h in handles if h.document_id != child_killed]
            worker_killed = _kill_mid_embedding(producer, others, watcher, url, collection, kill_worker)
        killed_at = time.monotonic()
        scene.start_worker("after-kill")
        rest = [h for h in handles if h.document_id not in (child_killed, worker_killed)]
        committed_killed, rows_at_kill = _kill_after_commit(scene.server, scene.prefix, rest, url, collection,
                                                            kill_child)
        runs = scene.assert_each_once(accepted, KILL_WINDOW_S)
        last = max(watcher.seen[d] for d in accepted)
        logs_text = "".join(proc.log_text() for proc in workers)
        for document_id in (child_killed, worker_killed, committed_killed):
            assert f"document {document_id}: redelivered task" in logs_text, document_id  # run again
        # the run killed after its commit had written every row (one transaction); the next one found
        # them all and wrote none
        chunk_ids = _record_chunk_ids(scene.server.client(), scene.prefix, committed_killed)
        assert rows_at_kill == len(chunk_ids), (rows_at_kill, len(chunk_ids))
        again = _store_outcomes(workers, committed_killed)[-1]
        assert re.fullmatch(r"embedded=0, reused=(\d+), inserted=0, updated=0, deleted=0, unchanged=\1",
                            again), again
        report(Row("SIGKILL mid-embedding (pgvector store): a pool child, then the whole worker "
                   "(a new one started); then a child right after its vectors' commit",
                   len(accepted), len(accepted),
                   sum(1 for d in accepted if runs[d] > 1), max(0.0, last - killed_at),
                   f"{KILL_BLOCKS}-block documents; the child's document run again by a new child, "
                   f"the worker's handed on after its {LEASE['lease_timeout']} s lease and stored "
                   f"{watcher.seen[worker_killed] - killed_at:.0f} s after its kill; "
                   f"{logs_text.count('redelivered task')} redelivered runs logged; the document "
                   f"killed after its commit run again writing no row ({again}); vectors and "
                   "events once each"))
