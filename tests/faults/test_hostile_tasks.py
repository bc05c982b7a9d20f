"""Hostile tasks (issue 25, problems 10 and 13): real redis-server, real workers, the ACL users.

Each scenario runs a redis-server whose users are the ``user`` lines of docs/operations.md (read
from the page, as the least-privilege scenario does): workers connect as ``longparser-worker``,
the producer and the hostile pushes as ``longparser-producer``, under the key prefixes those
lines are written for. Each builds its table row (:class:`~tests.faults.hostile.HostileRow`)
before its asserts, so a "before" run (``LONGPARSER_FAULTS_CODE_ROOT=/work/base``) prints it too.

* (13) a poison message: a document whose run is killed every time it starts (the test SIGKILLs
  the pool child as soon as the task's start count rises; its second start with the whole
  worker, which is replaced) ends as a FAILURE ``PoisonMessage`` record with its completion
  event at its third start, and is never delivered again, across another worker restart; a
  document killed once is run again and stored. Not run "before": there the message is
  delivered again for as long as it keeps killing (no bound to measure).
* (10) a message naming another document's pending referenced bytes (right key and digest,
  wrong ``bytes``) is refused without deleting them: the victim's own message ends SUCCESS.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import redis

from config.settings import Settings
from service.keys import events_key, payload_key, queue_list_keys, result_key, start_count_key, unacked_key
from service.payloads import RedisPayloads, Reference
from tasks.client import Producer
from tests.faults.harness import Proc, RedisServer, make_document, start_worker
from tests.faults.hostile import (
    HostileRow,
    RssSampler,
    children_of,
    code_root,
    deliveries,
    push_raw,
    raw_message,
    record_summary,
    task_body,
    wait_for,
)
from tests.faults.test_least_privilege import acl_lines

KEY_PREFIX, CELERY_PREFIX = "longparser", "lpcelery:"  # the names the documented rules are written for
QUEUE = "chunking"
PASSWORDS = {user: f"{user}-{uuid.uuid4().hex}" for user in
             ("longparser-worker", "longparser-producer", "longparser-events")}
SLOW_BLOCKS = 15_000  # seconds of work per run: a kill always lands mid-run
LEASE = {"lease_interval": 1, "lease_timeout": 5}  # a dead worker's message is handed on within seconds


class AclRedis(RedisServer):
    """A redis-server whose users are the documented ones (the test's own client: ``default``)."""

    def __init__(self, base: Path, logs: Path) -> None:
        acl_file = base / "users.acl"
        acl_file.write_text("\n".join(["user default on nopass ~* &* +@all", *acl_lines(PASSWORDS)]) + "\n")
        super().__init__("acl", base, logs, extra=["--aclfile", str(acl_file)])

    def user_url(self, user: str) -> str:
        return f"redis://{user}:{PASSWORDS[user]}@127.0.0.1:{self.port}/0"

    def user_client(self, user: str) -> redis.Redis:
        return redis.Redis.from_url(self.user_url(user), socket_timeout=5)


def values_for(server: AclRedis, user: str, **more: Any) -> dict[str, Any]:
    url = server.user_url(user)
    return {"broker_url": url, "result_url": url, "key_prefix": KEY_PREFIX,
            "celery_key_prefix": CELERY_PREFIX, "word_list_path": "", "language_id": False, **more}


def _record(client: Any, document_id: str) -> dict[str, Any] | None:
    raw = client.get(result_key(KEY_PREFIX, document_id))
    return None if raw is None else json.loads(raw)


def _starts(client: Any, task_id: str) -> int:
    return int(client.get(start_count_key(KEY_PREFIX, task_id)) or 0)


def _events_of(client: Any, document_id: str) -> list[dict[str, str]]:
    return [{k.decode(): v.decode() for k, v in fields.items()}
            for _, fields in client.xrange(events_key(KEY_PREFIX))
            if fields[b"document_id"].decode() == document_id]


class ForgeAfterPut:
    """A producer's payload store that calls ``then(reference)`` once the bytes are written."""

    def __init__(self, inner: RedisPayloads, then: Any) -> None:
        self.inner, self.then = inner, then

    def put(self, document_id: str, data: bytes) -> Reference:
        reference = self.inner.put(document_id, data)
        self.then(reference)
        return reference

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _kill_child(worker: Proc) -> int:
    """SIGKILL the worker's pool child (``-c 1``: the one running the task); returns its pid."""
    children = children_of(worker.popen.pid)
    assert len(children) == 1, f"expected one pool child, found {children}"
    os.kill(children[0], signal.SIGKILL)
    return children[0]


def test_a_message_whose_runs_kill_their_process_ends_as_a_poison_message(
    space: Any, hostile_report: Any
) -> None:
    base, logs = space
    server = AclRedis(base, logs).start()
    admin = server.client(5)
    worker_values = values_for(server, "longparser-worker", **LEASE)
    workers: list[Proc] = []
    sampler: RssSampler | None = None
    try:
        prefix = f"poison-{uuid.uuid4().hex[:6]}"
        with Producer(Settings(**values_for(server, "longparser-producer", **LEASE))) as producer:
            poison = producer.submit(make_document(f"{prefix}-poison", SLOW_BLOCKS, seed=1))
            once = producer.submit(make_document(f"{prefix}-once", SLOW_BLOCKS, seed=2))
        queued = admin.lrange(queue_list_keys(CELERY_PREFIX, QUEUE)[0], 0, -1)
        message_bytes = max(len(m) for m in queued)  # the envelopes as the queue holds them
        first = start_worker("first", worker_values, logs, concurrency=1, cwd=code_root())
        workers.append(first)
        sampler = RssSampler(first.popen.pid).start()
        # What the test does at each start it sees: the poison message's first run loses its
        # child, its second its whole worker (replaced at once); the other document loses one child.
        actions = {(poison.task_id, 1): "child", (poison.task_id, 2): "worker", (once.task_id, 1): "child"}
        done: list[tuple[str, int, str]] = []
        names = {poison.task_id: "poison", once.task_id: "once"}
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and len(done) < len(actions):
            for (task_id, start), action in actions.items():
                if (task_id, start, action) in done or _starts(admin, task_id) != start:
                    continue
                worker = workers[-1]
                if action == "child":
                    _kill_child(worker)
                else:
                    sampler.stop()
                    os.killpg(worker.popen.pid, signal.SIGKILL)
                    worker.popen.wait(timeout=10)
                    workers.append(start_worker(f"after-kill-{len(workers)}", worker_values, logs,
                                                concurrency=1, cwd=code_root()))
                done.append((task_id, start, action))
            time.sleep(0.01)
        wait_for(lambda: _record(admin, poison.document_id) and _record(admin, once.document_id), 180)
        # Never run again: another worker restart, and twice the lease for anything held to come back.
        workers[-1].stop()
        workers.append(start_worker("restarted", worker_values, logs, concurrency=1, cwd=code_root()))
        time.sleep(2 * LEASE["lease_timeout"] + 2)
        poison_record, once_record = _record(admin, poison.document_id), _record(admin, once.document_id)
        poison_deliveries = deliveries(workers, poison.task_id)
        left = admin.llen(queue_list_keys(CELERY_PREFIX, QUEUE)[0]) + admin.hlen(unacked_key(CELERY_PREFIX))
        hostile_report(HostileRow(
            "(13) a document whose every run is SIGKILLed at its start (the 2nd run with its whole worker)",
            message_bytes, sampler.parent_growth if sampler else 0, sampler.child_growth if sampler else 0,
            poison_deliveries, record_summary(poison_record),
            f"kills {[(names[t], s, a) for t, s, a in done]}; "
            f"killed-once document: {record_summary(once_record)}; messages left queued or held: {left}"))

        assert len(done) == len(actions), f"the test did not see every start it expected: {done}"
        assert poison_record is not None and poison_record["task_id"] == poison.task_id
        assert poison_record["error"] == {"type": "PoisonMessage", "message": (
            f"task {poison.task_id} was started 3 times without storing a record (the earlier runs died "
            "with their worker process); refused instead of run again (LONGPARSER_MAX_STARTS=3)")}
        poison_events = _events_of(admin, poison.document_id)
        assert [(e["status"], e["error_type"], e["task_id"]) for e in poison_events] == [
            ("FAILURE", "PoisonMessage", poison.task_id)]
        assert poison_deliveries == 3  # two runs killed, the third start refused: never delivered again
        assert once_record is not None and once_record["status"] == "SUCCESS"
        assert once_record["task_id"] == once.task_id and deliveries(workers, once.task_id) == 2
        assert left == 0
        assert not list(admin.scan_iter(match=f"{KEY_PREFIX}:starts:*"))
    finally:
        if sampler is not None:
            sampler.stop()
        for proc in workers:
            proc.stop()
        server.stop()


def test_a_reference_with_another_documents_key_and_a_wrong_size_leaves_its_bytes(
    space: Any, hostile_report: Any
) -> None:
    base, logs = space
    server = AclRedis(base, logs).start()
    admin = server.client(5)
    workers: list[Proc] = []
    sampler: RssSampler | None = None
    try:
        victim_id = f"victim-{uuid.uuid4().hex[:6]}"
        producer_client = server.user_client("longparser-producer")
        hostile_task = str(uuid.uuid4())
        pushed: list[tuple[Reference, int]] = []

        def push_forged(reference: Reference) -> None:
            """Another producer's message, naming the victim's key and digest with a wrong size."""
            forged = {"document_id": victim_id, "reference": {
                "key": reference.key, "sha256": reference.sha256, "bytes": reference.bytes + 1,
                "encoding": "zlib"}}
            size = push_raw(producer_client, queue_list_keys(CELERY_PREFIX, QUEUE)[0],
                            raw_message(task_body(forged), queue=QUEUE, task_id=hostile_task))
            pushed.append((reference, size))

        with Producer(Settings(**values_for(server, "longparser-producer"))) as producer:
            # The hostile message arrives between the victim's bytes and the victim's message (its
            # producer writes the bytes, then publishes): first in the queue, the bytes pending.
            producer.payloads = ForgeAfterPut(producer.payloads, push_forged)
            victim = producer.submit(make_document(victim_id, 4000, seed=3))  # ~1.5 MB as sent: by reference
        assert len(pushed) == 1, "the victim was not sent by reference"
        reference, message_bytes = pushed[0]
        assert reference.key == payload_key(KEY_PREFIX, victim_id, reference.sha256)
        worker = start_worker("refs", values_for(server, "longparser-worker"), logs, concurrency=1,
                              cwd=code_root())
        workers.append(worker)
        sampler = RssSampler(worker.popen.pid).start()
        wait_for(lambda: (_record(admin, victim_id) or {}).get("task_id") == victim.task_id, 90)
        sampler.stop()
        final = _record(admin, victim_id)
        hostile_runs = [e for e in _events_of(admin, victim_id) if e["task_id"] == hostile_task]
        bytes_left = admin.exists(reference.key)
        victims_own = final is not None and final["task_id"] == victim.task_id
        hostile_report(HostileRow(
            "(10) reference with another document's key and digest, declared bytes + 1",
            message_bytes, sampler.parent_growth, sampler.child_growth, deliveries(workers, hostile_task),
            record_summary(final),
            f"hostile message's record: {[e['error_type'] for e in hostile_runs]}; the victim's own message: "
            f"{record_summary(final) if victims_own else 'no record'}; "
            f"victim's bytes left: {bool(bytes_left)}"))

        assert [e["error_type"] for e in hostile_runs] == ["ReferenceCorrupt"]  # refused, recorded
        assert final is not None and final["task_id"] == victim.task_id
        assert final["status"] == "SUCCESS", final["error"]
        assert final["request_sha256"] == reference.sha256
        assert not bytes_left  # deleted by the run that owns them, once it stored its record
    finally:
        if sampler is not None:
            sampler.stop()
        for proc in workers:
            proc.stop()
        server.stop()
