"""A pool child killed with SIGKILL in the middle of a task (acks_late + reject_on_worker_lost).

The task must be redelivered and its result stored exactly once, and the pool must get its
second child back without a restart loop. The worker is this module's own (concurrency 2).
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from config.settings import Settings
from longparser import chunk_request
from schemas import parse_input
from tasks import client
from tests.integration.conftest import (
    SESSION_PREFIX,
    EventLog,
    ManagedProcess,
    WorkerFactory,
    chunk_signature,
    make_document,
    wait_until,
)

pytestmark = pytest.mark.integration

MIN_ENGINE_SECONDS = 0.25  # direct engine time of the document (the worker takes ~10x: scoring)
STABLE_WINDOW_S = 8.0  # the pool's children must stay the same for this long after recovery


@pytest.fixture(scope="module")
def crash_worker(workers: WorkerFactory) -> ManagedProcess:
    return workers.start("crash", concurrency=2)


def slow_document() -> tuple[dict[str, Any], Any]:
    """A document whose direct chunking takes >= MIN_ENGINE_SECONDS on this machine.

    Sized by measurement instead of a fixed block count, so the kill (about 0.5 s after the
    submit) lands mid-task on slow and fast machines alike: in the worker, quality scoring with
    language ID makes the task several times longer than the direct call. Returns the document
    and the direct engine result.
    """
    sections = 25
    while True:
        document = make_document(f"{SESSION_PREFIX}-crash-{sections}", sections=sections, paragraphs=20)
        started = time.perf_counter()
        expected = chunk_request(parse_input(document))
        if time.perf_counter() - started >= MIN_ENGINE_SECONDS or sections >= 3200:
            return document, expected
        sections *= 2


def _stable_pool(workers: WorkerFactory, proc: ManagedProcess, killed: int) -> list[int]:
    """Wait for two live children (the killed one gone), then check they stay the same."""
    pids = wait_until(lambda: (p := workers.pool_pids(proc)) and len(p) == 2 and killed not in p and p,
                      30, interval=0.5, what="the pool to have 2 children again")
    deadline = time.monotonic() + STABLE_WINDOW_S
    while time.monotonic() < deadline:
        time.sleep(1.0)
        assert sorted(workers.pool_pids(proc)) == sorted(pids), "pool children keep changing (restart loop?)"
    assert proc.alive()
    return pids


def test_killed_child_task_is_redelivered_and_stored_once(
    crash_worker: ManagedProcess, workers: WorkerFactory, lp_settings: Settings, event_log: EventLog
) -> None:
    document, expected = slow_document()
    children_before = workers.pool_pids(crash_worker)
    handle = client.submit(document, settings=lp_settings)

    event_log.wait_for(handle.task_id, "task-started")
    victim = wait_until(lambda: workers.active_pid(crash_worker, handle.task_id), 10, interval=0.05,
                        what="the child running the task")
    assert victim in children_before
    os.kill(victim, signal.SIGKILL)
    assert event_log.for_task(handle.task_id, "task-succeeded") == [], "task finished before the kill"

    result = client.get_result(handle, timeout=120, settings=lp_settings)
    assert chunk_signature(result) == chunk_signature(expected)
    record = client.fetch_record(document["document_id"], settings=lp_settings)
    assert (record["status"], record["task_id"]) == ("SUCCESS", handle.task_id)
    assert [c["chunk_id"] for c in record["result"]["chunks"]] == [c.chunk_id for c in expected.chunks]

    kinds = [e["type"] for e in event_log.for_task(handle.task_id)]
    assert kinds.count("task-received") == 2  # delivered, lost with its child, redelivered
    assert kinds.count("task-succeeded") == 1  # stored once: one successful run
    assert "task-failed" not in kinds  # a lost child is requeued, not failed
    pids = _stable_pool(workers, crash_worker, victim)
    assert victim not in pids
    log = crash_worker.log_text()
    # One child lost, and no other child died since (a restart loop logs one line per death).
    assert log.count(f"pid:{victim} exited with 'signal 9 (SIGKILL)'") == 1
    assert log.count("exited with") == 1
