"""A pool child killed with SIGKILL in the middle of a task (acks_late + reject_on_worker_lost).

The task must be redelivered and its result stored exactly once, and the pool must get its
second child back without a restart loop. The worker is this module's own (concurrency 2).
Both children are frozen (SIGSTOP) as soon as the task has started, so the kill lands mid-task
on any machine speed; the other child is thawed (SIGCONT) right after the kill.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

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

SECTIONS = 100  # 2,100 blocks, ~1.4 MB of JSON: a task of several hundred ms here
STABLE_WINDOW_S = 8.0  # the pool's children must stay the same for this long after recovery


@pytest.fixture(scope="module")
def crash_worker(workers: WorkerFactory) -> ManagedProcess:
    return workers.start("crash", concurrency=2)


def freeze(pids: list[int]) -> None:
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)


def thaw(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


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
    document = make_document(f"{SESSION_PREFIX}-crash", sections=SECTIONS, paragraphs=20)
    expected = chunk_request(parse_input(document))
    children = workers.pool_pids(crash_worker)
    assert len(children) == 2
    handle = client.submit(document, settings=lp_settings)

    # Deterministic "mid-task": once the task has started, freeze both children (SIGSTOP), so
    # however fast this machine is the task cannot finish while the test finds its child.
    event_log.wait_for(handle.task_id, "task-started")
    freeze(children)
    try:
        victim = wait_until(lambda: workers.active_pid(crash_worker, handle.task_id), 10, interval=0.05,
                            what="the child running the task")
        assert victim in children
        assert client.fetch_record(document["document_id"], settings=lp_settings) is None, "task already done"
        os.kill(victim, signal.SIGKILL)
    finally:
        thaw(children)

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
