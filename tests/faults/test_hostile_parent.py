"""Hostile messages aimed at the worker parent (issue 25, measured problems 5, 6, 7, 8 and 11).

Each scenario starts its own redis-server and a real worker (``celery -A worker worker``), pushes
raw envelopes onto the queue's list as any producer that may ``LPUSH`` there can, and reports its
table row (peak RSS growth of the parent and of its pool child, deliveries, record) before it
asserts what docs/producers.md promises ("What a producer may set, and what is refused"):

* a ``compression`` header is refused, the body never inflated;
* a body over the inline limit is refused before it is decoded (the raw length first);
* a body the parent cannot decode (JSON nested 5,000 deep) is refused cleanly;
* a refused message, whose document id cannot be read, is counted (``longparser metrics``), logged
  once with its task id, and its task id gets Celery's FAILURE state;
* the producer's ``eta``, ``expires``, ``timelimit`` and ``retries`` change nothing: the
  operator's time limits hold and nothing waits in the parent;
* a held message put back at a warm shutdown goes to the queue it came from, never where its
  routing key points;
* no message of up to 1 MB raises the parent or the child by more than 64 MB.

``LONGPARSER_FAULTS_CODE_ROOT=/work/base`` runs the same scenarios against the branch point, for
the "before" column (its rows print, its asserts fail); the two gigabyte-scale "before" runs are
not repeated (issue 25 gives their figures).
"""

from __future__ import annotations

import json
import socket
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from service.keys import (
    celery_task_meta_key,
    queue_list_keys,
    result_key,
    unacked_key,
    unreadable_messages_key,
)
from tests.faults.harness import (
    CELERY,
    REPO_ROOT,
    Proc,
    RedisServer,
    base_values,
    completion_events,
    make_document,
    settings_env,
    spawn,
    wait_until,
)
from tests.faults.hostile import (
    MB,
    RSS_BOUND_BYTES,
    HostileRow,
    RssSampler,
    code_root,
    deliveries,
    push_raw,
    raw_message,
    record_summary,
    rss_bytes,
    task_body,
    task_headers,
    wait_for,
)

QUEUE = "chunking"
BEFORE = code_root() != REPO_ROOT
HostileReport = Callable[[HostileRow], None]


@dataclass
class Fleet:
    """One redis-server, one worker, and what a scenario reads back."""

    server: RedisServer
    prefix: str
    worker: Proc

    @property
    def client(self) -> redis.Redis:
        return self.server.client(10)

    @property
    def celery_prefix(self) -> str:
        return f"{self.prefix}-celery:"

    @property
    def queue_key(self) -> str:
        return queue_list_keys(self.celery_prefix, QUEUE)[0]

    def push(self, body: bytes, task_id: str, **options: Any) -> int:
        message = raw_message(body, queue=QUEUE, task_id=task_id, **options)
        return push_raw(self.client, self.queue_key, message)

    def record(self, document_id: str) -> dict[str, Any] | None:
        raw = self.client.get(result_key(self.prefix, document_id))
        return None if raw is None else json.loads(raw)

    def unreadable(self) -> int:
        return int(self.client.get(unreadable_messages_key(self.prefix)) or 0)

    def celery_state(self, task_id: str) -> dict[str, Any] | None:
        raw = self.client.get(celery_task_meta_key(self.celery_prefix, task_id))
        return None if raw is None else json.loads(raw)

    def idle(self) -> bool:
        """Nothing waiting in the queue and nothing held by the worker."""
        client = self.client
        return client.llen(self.queue_key) == 0 and client.hlen(unacked_key(self.celery_prefix)) == 0


def start_worker(name: str, values: dict[str, Any], logs: Any, *, concurrency: int = 1,
                 extra: tuple[str, ...] = ()) -> Proc:
    """``celery -A worker worker`` from the checkout under test, ready to consume."""
    node = f"{name}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
    argv = [CELERY, "-A", "worker", "worker", "-P", "prefork", "-c", str(concurrency), "-n", node,
            "-Q", QUEUE, "-E", "-l", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat",
            *extra]
    env = settings_env(values)
    env["PYTHONPATH"] = str(code_root())
    proc = spawn(f"worker-{name}", argv, logs, env=env, cwd=code_root())
    wait_until(lambda: (not proc.alive()) or " ready." in proc.log_text(), 90, 0.1, what=f"worker {name}")
    if not proc.alive():
        raise RuntimeError(f"worker {name} exited:\n{proc.log_text()[-3000:]}")
    return proc


@contextmanager
def fleet(space: Any, name: str, *, concurrency: int = 1, extra: tuple[str, ...] = (),
          **values: Any) -> Iterator[Fleet]:
    base, logs = space
    server = RedisServer("main", base, logs).start()
    prefix = f"lphostile-{uuid.uuid4().hex[:6]}"
    worker: Proc | None = None
    try:
        worker = start_worker(name, base_values(server.url, prefix, **values), logs, concurrency=concurrency,
                              extra=extra)
        yield Fleet(server, prefix, worker)
    finally:
        if worker is not None:
            worker.stop()
        server.stop()


def settle(fleet: Fleet, timeout: float, quiet_s: float = 2.0) -> None:
    """Wait until nothing is queued or held for ``quiet_s`` in a row (or ``timeout`` passed)."""
    deadline = time.monotonic() + timeout
    quiet_since: float | None = None
    while time.monotonic() < deadline:
        if fleet.idle():
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= quiet_s:
                return
        else:
            quiet_since = None
        time.sleep(0.1)


def zlib_zeros(size: int) -> bytes:
    """``size`` zero bytes, zlib-compressed in pieces (kombu's ``application/x-gzip`` is zlib)."""
    packer, piece, out = zlib.compressobj(9), bytes(MB), []
    for _ in range(size // MB):
        out.append(packer.compress(piece))
    out.append(packer.flush())
    return b"".join(out)


def refusal_note(fleet: Fleet, task_id: str) -> str:
    state = fleet.celery_state(task_id) or {}
    error = (state.get("result") or {}).get("exc_type")
    return f"counted {fleet.unreadable()}; Celery state {state.get('status', 'none')} {error or ''}".strip()


def assert_refused_unread(fleet: Fleet, task_id: str, words: str) -> None:
    """The message was refused in the parent: counted, logged once with its task id, its task id
    FAILURE with the reason, nothing delivered to a task, the worker still serving."""
    assert wait_for(lambda: fleet.unreadable() == 1, 10), "refused messages are counted"
    state = wait_for(lambda: fleet.celery_state(task_id), 10)
    assert state and state["status"] == "FAILURE" and state["result"]["exc_type"] == "MessageRefused", state
    assert words in " ".join(state["result"]["exc_message"])  # the exception's args
    log = fleet.worker.log_text()
    lines = [line for line in log.splitlines() if "refused before its document id could be read" in line]
    assert len(lines) == 1 and task_id in lines[0] and words in lines[0], lines
    assert "CRITICAL" not in log and "Traceback" not in log
    assert deliveries([fleet.worker], task_id) == 0
    assert fleet.worker.alive()


def assert_still_serves(fleet: Fleet) -> None:
    """A plain document sent after the hostile one is chunked: the worker was not harmed."""
    document = make_document(f"{fleet.prefix}-after", 20)
    fleet.push(task_body(document), str(uuid.uuid4()))
    record = wait_for(lambda: fleet.record(document["document_id"]), 60)
    assert record is not None and record["status"] == "SUCCESS"


def slow_document(document_id: str, paragraphs: int = 4, words: int = 300_000) -> dict[str, Any]:
    """A request of a few MB that takes the engine seconds: long paragraphs of short sentences,
    cut into strict 64-token chunks (several seconds for the default)."""
    vocabulary = ("ledger", "harbour", "signal", "orchard", "quarry", "lantern", "meadow", "circuit")
    sentence = " ".join(vocabulary[n % len(vocabulary)] for n in range(12))
    text = ". ".join(sentence for _ in range(words // 12))
    return {"document_id": document_id,
            "blocks": [{"block_id": f"b{n}", "type": "paragraph", "text": text} for n in range(paragraphs)],
            "config": {"max_tokens": 64, "min_tokens": 1, "strict_max_tokens": True}}


# --------------------------------------------------------------------------- (5) compression


@pytest.mark.parametrize("inflated", [100 * MB, 250 * MB], ids=["100MiB-of-zeros", "250MiB-of-zeros"])
def test_a_compressed_body_is_refused_not_inflated(space: Any, hostile_report: HostileReport,
                                                   inflated: int) -> None:
    if BEFORE and inflated > 100 * MB:
        pytest.skip("before: the parent inflates it to 1.83 GB (issue 25 gives the figure); not repeated")
    with fleet(space, "gzip") as lp:
        task_id = str(uuid.uuid4())
        sampler = RssSampler(lp.worker.popen.pid).start()
        size = lp.push(zlib_zeros(inflated), task_id,
                       headers=task_headers(task_id, compression="application/x-gzip"),
                       content_encoding="binary")
        settle(lp, 60)
        wait_for(lambda: lp.unreadable(), 5)
        sampler.stop()
        hostile_report(HostileRow(f"gzip body ({inflated // MB} MiB inflated)", size, sampler.parent_growth,
                                  sampler.child_growth, deliveries([lp.worker], task_id), "none",
                                  refusal_note(lp, task_id)))
        assert_refused_unread(lp, task_id, "compressed body")
        assert sampler.parent_growth < RSS_BOUND_BYTES and sampler.child_growth < RSS_BOUND_BYTES
        assert_still_serves(lp)


# --------------------------------------------------------------------------- (6) scheduling headers


def test_a_producer_timelimit_does_not_beat_the_operators_limits(space: Any,
                                                                 hostile_report: HostileReport) -> None:
    # A document of a few MB that costs the engine seconds (four paragraphs of 300,000 words, cut
    # into strict 64-token chunks) and next to nothing to decode, on a worker whose operator
    # allows 2 s (soft) and 3 s (hard): the soft limit lands in the engine, which stores the
    # FAILURE record. The producer asks for 600/700 s.
    with fleet(space, "timelimit", soft_time_limit=2, hard_time_limit=3) as lp:
        document = slow_document(f"{lp.prefix}-slow")
        task_id = str(uuid.uuid4())
        sampler = RssSampler(lp.worker.popen.pid).start()
        started = time.monotonic()
        size = lp.push(task_body(document), task_id, headers=task_headers(task_id, timelimit=[600, 700]))
        record = wait_for(lambda: lp.record(document["document_id"]), 120)
        elapsed = time.monotonic() - started
        sampler.stop()
        error = ((record or {}).get("error") or {}).get("message", "")
        hostile_report(HostileRow("timelimit [600, 700] on a worker limited to 2/3 s", size,
                                  sampler.parent_growth, sampler.child_growth,
                                  deliveries([lp.worker], task_id), record_summary(record),
                                  f"record after {elapsed:.1f} s; {error[:70]}"))
        assert record is not None and record["status"] == "FAILURE", "the operator's limit stopped it"
        assert record["error"]["type"] == "ChunkingFailed"
        assert "TimeLimitExceeded" in record["error"]["message"]
        log = lp.worker.log_text()
        assert "the producer set timelimit" in log and task_id in log
        assert lp.worker.alive()


def test_a_producer_eta_and_expiry_change_nothing(space: Any, hostile_report: HostileReport) -> None:
    with fleet(space, "eta") as lp:
        a_year = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() + 365 * 86400))
        gone = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - 3600))
        documents = [make_document(f"{lp.prefix}-eta-{n}", 1000, seed=n) for n in range(3)]
        task_ids = [str(uuid.uuid4()) for _ in documents]
        headers = [{"eta": a_year, "expires": a_year, "retries": 7}, {"eta": a_year}, {"expires": gone}]
        sampler = RssSampler(lp.worker.popen.pid).start()
        sizes = [lp.push(task_body(document), task_id, headers=task_headers(task_id, **extra))
                 for document, task_id, extra in zip(documents, task_ids, headers, strict=True)]
        records = wait_for(lambda: all(lp.record(d["document_id"]) for d in documents) and
                           [lp.record(d["document_id"]) for d in documents], 30) or []
        settle(lp, 10)
        sampler.stop()
        held = lp.client.hlen(unacked_key(lp.celery_prefix))
        summary = ", ".join(record_summary(r) for r in records) or "none"
        hostile_report(HostileRow("eta a year ahead / expires (3 messages)", max(sizes),
                                  sampler.parent_growth, sampler.child_growth,
                                  sum(deliveries([lp.worker], t) for t in task_ids), summary,
                                  f"held by the parent afterwards: {held}"))
        assert [r["status"] for r in records] == ["SUCCESS"] * 3, "run at once, expiry ignored"
        assert held == 0
        lines = [line for line in lp.worker.log_text().splitlines() if "the producer set" in line]
        assert len(lines) == 1 and "eta, expires, retries" in lines[0], lines  # once per worker
        assert sampler.parent_growth < RSS_BOUND_BYTES and sampler.child_growth < RSS_BOUND_BYTES


# --------------------------------------------------------------------------- (7) sizes


INLINE_LIMIT = 64 * 1024  # small, so the refused bodies stay fast to build and push


@pytest.mark.parametrize("blocks", [200, 2100], ids=["body-over-the-limit", "raw-over-the-limit"])
def test_a_body_over_the_inline_limit_is_refused_before_it_is_decoded(
        space: Any, hostile_report: HostileReport, blocks: int) -> None:
    # 200 blocks (about 80 KB): over the 64 KB limit, under the raw limit (2 x 64 KB + 256 KB), so
    # the envelope is decoded and the body's leading document id read: its FAILURE record.
    # 2,100 blocks (about 830 KB): over the raw limit, refused before kombu decodes anything.
    with fleet(space, "inline", max_inline_bytes=INLINE_LIMIT, reference_threshold_bytes=INLINE_LIMIT) as lp:
        document = make_document(f"{lp.prefix}-big", blocks)
        body = task_body(document)
        task_id = str(uuid.uuid4())
        sampler = RssSampler(lp.worker.popen.pid).start()
        size = lp.push(body, task_id)
        settle(lp, 60)
        wait_for(lambda: lp.unreadable() or lp.record(document["document_id"]), 5)
        sampler.stop()
        record = lp.record(document["document_id"])
        hostile_report(HostileRow(f"inline body of {len(body) // 1024} KB, limit {INLINE_LIMIT // 1024} KB",
                                  size, sampler.parent_growth, sampler.child_growth,
                                  deliveries([lp.worker], task_id), record_summary(record),
                                  refusal_note(lp, task_id)))
        assert sampler.parent_growth < RSS_BOUND_BYTES and sampler.child_growth < RSS_BOUND_BYTES
        assert deliveries([lp.worker], task_id) == 0, "refused in the parent: no task ran"
        if size > 2 * INLINE_LIMIT + 256 * 1024:
            assert record is None
            assert_refused_unread(lp, task_id, "limit of a raw message")
            return
        assert record is not None and record["status"] == "FAILURE" and record["task_id"] == task_id
        assert record["error"]["type"] == "PayloadTooLarge" and "refused before it was decoded" in \
            record["error"]["message"]
        assert completion_events(lp.client, lp.prefix)[document["document_id"]] == 1
        assert lp.unreadable() == 0, "a document with its record is not counted as unreadable"
        state = lp.celery_state(task_id) or {}
        assert state.get("status") == "FAILURE", state


def test_a_100_mib_inline_body_is_refused_by_its_raw_length(space: Any,
                                                            hostile_report: HostileReport) -> None:
    # The default inline limit (16 MiB): the raw message (133 MiB of base64) is refused as Redis
    # returns it; kombu never decodes its envelope, Celery never its body. Over 1 MB, so not under
    # the 64 MB bound while it is read; what the parent keeps afterwards is.
    with fleet(space, "inline-100mib") as lp:
        document_id = f"{lp.prefix}-huge"
        body = task_body({"document_id": document_id,
                          "blocks": [{"block_id": "b", "type": "paragraph", "text": "x" * (100 * MB)}]})
        task_id = str(uuid.uuid4())
        sampler = RssSampler(lp.worker.popen.pid).start()
        size = lp.push(body, task_id)
        del body
        settle(lp, 120)
        wait_for(lambda: lp.unreadable(), 10)
        time.sleep(1)
        kept = (rss_bytes(lp.worker.popen.pid) or 0) - sampler.parent_base
        sampler.stop()
        hostile_report(HostileRow("inline body of 100 MiB (default limit 16 MiB)", size,
                                  sampler.parent_growth, sampler.child_growth,
                                  deliveries([lp.worker], task_id), record_summary(lp.record(document_id)),
                                  f"{refusal_note(lp, task_id)}; parent kept {kept / MB:.0f} MB"))
        assert_refused_unread(lp, task_id, "limit of a raw message")
        assert sampler.child_growth < RSS_BOUND_BYTES
        # Reading the reply costs the parent a few copies of it for a moment (redis-py's socket
        # buffer); nothing of it is decoded, and nothing is kept.
        assert kept < RSS_BOUND_BYTES


def test_a_one_megabyte_document_costs_under_64_mb(space: Any, hostile_report: HostileReport) -> None:
    with fleet(space, "one-mb") as lp:
        document = make_document(f"{lp.prefix}-1mb", 2400)
        body = task_body(document)
        assert 0.9 * MB < len(body) <= MB
        task_id = str(uuid.uuid4())
        sampler = RssSampler(lp.worker.popen.pid).start()
        size = lp.push(body, task_id)
        record = wait_for(lambda: lp.record(document["document_id"]), 60)
        settle(lp, 10)
        sampler.stop()
        hostile_report(HostileRow("plain 1 MB document (accepted)", size, sampler.parent_growth,
                                  sampler.child_growth, deliveries([lp.worker], task_id),
                                  record_summary(record)))
        assert record is not None and record["status"] == "SUCCESS"
        assert sampler.parent_growth < RSS_BOUND_BYTES and sampler.child_growth < RSS_BOUND_BYTES


# --------------------------------------------------------------------------- (8) nesting


def test_json_nested_5000_deep_is_refused_cleanly(space: Any, hostile_report: HostileReport) -> None:
    with fleet(space, "nested") as lp:
        document_id = f"{lp.prefix}-nested"
        body = (f'[[{{"document_id": "{document_id}", "blocks": ' + "[" * 5000 + "]" * 5000
                + '}], {}, {"callbacks": null, "errbacks": null, "chain": null, "chord": null}]').encode()
        task_id = str(uuid.uuid4())
        sampler = RssSampler(lp.worker.popen.pid).start()
        size = lp.push(body, task_id)
        settle(lp, 30)
        wait_for(lambda: lp.unreadable(), 5)
        sampler.stop()
        record = lp.record(document_id)
        hostile_report(HostileRow("JSON nested 5,000 deep", size, sampler.parent_growth, sampler.child_growth,
                                  deliveries([lp.worker], task_id), record_summary(record),
                                  refusal_note(lp, task_id)))
        assert_refused_unread(lp, task_id, "cannot be decoded")
        assert sampler.parent_growth < RSS_BOUND_BYTES and sampler.child_growth < RSS_BOUND_BYTES
        assert_still_serves(lp)


def test_bodies_celery_cannot_unpack_are_refused_and_the_worker_serves_on(
        space: Any, hostile_report: HostileReport) -> None:
    # Decodable, but not Celery's [args, kwargs, embed]: Celery unpacks the body in the parent
    # without a check (a 3-byte "[1]" stopped the worker); a JSON object with "args" is read as
    # a "hybrid" message, its eta taken from the body.
    with fleet(space, "shapes") as lp:
        a_year = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 365 * 86400))
        bodies = [b"[1]", b'"a string"', json.dumps({"args": [make_document(f"{lp.prefix}-hybrid", 5)],
                                                      "kwargs": {}, "eta": a_year}).encode()]
        task_ids = [str(uuid.uuid4()) for _ in bodies]
        sampler = RssSampler(lp.worker.popen.pid).start()
        sizes = [lp.push(body, task_id) for body, task_id in zip(bodies, task_ids, strict=True)]
        settle(lp, 30)
        wait_for(lambda: lp.unreadable() >= len(bodies), 5)
        sampler.stop()
        alive = lp.worker.alive()
        hostile_report(HostileRow("bodies Celery cannot unpack ([1], a string, a hybrid object with eta)",
                                  max(sizes), sampler.parent_growth, sampler.child_growth,
                                  sum(deliveries([lp.worker], t) for t in task_ids),
                                  record_summary(lp.record(f"{lp.prefix}-hybrid")),
                                  f"worker alive: {alive}; counted {lp.unreadable()}"))
        assert alive, "a malformed body must not stop the worker"
        assert lp.unreadable() == len(bodies)
        for task_id in task_ids:
            state = lp.celery_state(task_id)
            assert state and state["result"]["exc_type"] == "MessageRefused", state
        assert lp.client.hlen(unacked_key(lp.celery_prefix)) == 0, "nothing held (no eta honoured)"
        assert "Unrecoverable error" not in lp.worker.log_text()
        assert_still_serves(lp)


# --------------------------------------------------------------------------- (11) restore


def test_a_held_message_is_put_back_only_on_the_queue_it_came_from(space: Any,
                                                                   hostile_report: HostileReport) -> None:
    # Prefetch 2 on one process: while the first document runs, the worker holds the hostile
    # one without running it; the warm shutdown (SIGTERM) puts it back.
    with fleet(space, "restore", extra=("--prefetch-multiplier", "2")) as lp:
        victim = f"{lp.celery_prefix}celery-task-meta-victim-task"
        running = make_document(f"{lp.prefix}-running", 20_000)
        held = make_document(f"{lp.prefix}-held", 20)
        held_id = str(uuid.uuid4())
        sampler = RssSampler(lp.worker.popen.pid).start()
        running_id = str(uuid.uuid4())
        lp.push(task_body(running), running_id)
        hostile_routing = {"exchange": "", "routing_key": "celery-task-meta-victim-task"}
        size = lp.push(task_body(held), held_id, properties={"delivery_info": hostile_routing})
        # Signalled once the pool child runs the first (its PROGRESS state): a warm shutdown while
        # the parent still writes a large job into the child's pipe waits for ever (Celery's too).
        wait_until(lambda: (lp.client.hlen(unacked_key(lp.celery_prefix)) == 2
                            and lp.celery_state(running_id) is not None) or lp.record(held["document_id"]),
                   60, 0.02, what="the worker to run the first message and hold the second")
        assert lp.record(held["document_id"]) is None, "the held one ran before the shutdown: inconclusive"
        lp.worker.signal(15)
        lp.worker.popen.wait(timeout=60)
        sampler.stop()
        client = lp.client
        written = client.type(victim).decode()
        back = [json.loads(item)["headers"]["id"] for item in client.lrange(lp.queue_key, 0, -1)]
        hostile_report(HostileRow("held message with routing_key celery-task-meta-victim-task, warm shutdown",
                                  size, sampler.parent_growth, sampler.child_growth,
                                  deliveries([lp.worker], held_id),
                                  record_summary(lp.record(held["document_id"])),
                                  f"victim key: {written}; back on {QUEUE}: {held_id in back}"))
        assert written == "none", "nothing written where the routing key pointed"
        assert held_id in back, "put back on the queue it came from"
        assert client.hlen(unacked_key(lp.celery_prefix)) == 0
        assert lp.worker.popen.returncode == 0
