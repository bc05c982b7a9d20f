"""Broker and store faults with real processes: nothing accepted by ``submit`` is lost.

Every scenario starts its own ``redis-server`` processes (AOF on, free loopback ports) and real
``celery -A worker worker`` processes, breaks something, and asserts that every document
``submit`` accepted ends stored (chunks or a FAILURE record), each under one key, and records
its table row: submitted, stored, processed more than once, seconds from Redis back to the last
document stored. Each scenario is bounded in time; everything it started is stopped by PID.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from config.settings import Settings
from service.keys import TASK_NAME
from tasks.client import Producer
from tests.faults.harness import (
    REDIS_SERVER,
    REPO_ROOT,
    Proc,
    RedisServer,
    Report,
    Row,
    StoreWatcher,
    base_values,
    diagnose,
    events_missing,
    free_port,
    make_document,
    restart_scenario,
    spawn,
    start_worker,
    task_runs,
    wait_until,
)

WINDOW_S = 120  # "within 2 minutes of Redis returning"
BLOCKS = 2000  # ~0.1 s of engine, ~2 MB of JSON: several tasks are always in flight
SIGTERM_BACKLOG = 100  # documents queued before the SIGTERM scenario's two workers start


def _keys(client: Any, prefix: str) -> list[str]:
    return sorted(k.decode() for k in client.scan_iter(match=f"{prefix}:result:*", count=1000))


def _assert_all_stored(accepted: list[str], watcher: StoreWatcher, client: Any, prefix: str) -> list[str]:
    keys = _keys(client, prefix)
    stored = [d for d in accepted if d in watcher.seen]
    assert sorted(set(accepted) - set(stored)) == [], "accepted but never stored"
    assert events_missing(client, prefix, stored) == [], "stored without its completion event"
    assert len(set(accepted)) == len(accepted)
    assert keys == sorted(f"{prefix}:result:{d}" for d in accepted), "each document under one key"
    return stored


def _submit_burst(producer: Producer, prefix: str, n: int, watcher: StoreWatcher) -> list[str]:
    """Submit ``n`` documents of :data:`BLOCKS` blocks, each watched for in the store; their ids."""
    accepted = [producer.submit(make_document(f"{prefix}-d{i:03d}", BLOCKS, seed=i)).document_id
                for i in range(n)]
    for document_id in accepted:
        watcher.want(document_id)
    return accepted


def _all_stored_row(
    title: str, accepted: list[str], watcher: StoreWatcher, client: Any, prefix: str, workers: list[Any],
    since: float, note: str,
) -> Row:
    """The row of a scenario where every accepted document must be stored once: checked here,
    with the seconds from ``since`` (Redis back) to the last document stored."""
    stored = _assert_all_stored(accepted, watcher, client, prefix)
    runs = task_runs(workers)
    last = max(watcher.seen[d] for d in stored)
    return Row(title, len(accepted), len(stored), sum(1 for d in accepted if runs[d] > 1),
               max(0.0, last - since), note)


def test_redis_restarted_mid_burst_while_the_producer_submits(space: Any, report: Report) -> None:
    base, logs = space
    started = time.monotonic()
    row, details = restart_scenario(base, logs, wait_s=WINDOW_S)
    report(row)
    assert details["producer_errors"] == [] and details["producer_exit"] == 0, details["producer_log_tail"]
    assert row.submitted == 40  # the producer rode out the outage: every submission accepted
    assert details["missing"] == [], details
    assert details["events_missing"] == [], details  # every stored record has its completion event
    assert row.stored == row.submitted
    assert details["keys"] == sorted(f"{d.rsplit('-d', 1)[0]}:result:{d}" for d in details["accepted"])
    assert row.back_to_last_stored_s is not None and row.back_to_last_stored_s <= WINDOW_S
    assert time.monotonic() - started < 180


def test_redis_unreachable_for_20_s_while_tasks_run(space: Any, report: Report) -> None:
    base, logs = space
    server = RedisServer("main", base, logs).start()
    prefix = f"lpfault-{uuid.uuid4().hex[:6]}"
    values = base_values(server.url, prefix)
    watcher = StoreWatcher(lambda: server.client(5), lambda d: f"{prefix}:result:{d}").start()
    worker: Proc | None = None
    try:
        # The backlog first: a worker faster than the producer would otherwise have finished the
        # burst while it was being submitted, leaving nothing in flight for the outage.
        with Producer(Settings(**values)) as producer:
            accepted = _submit_burst(producer, prefix, 30, watcher)
        worker = start_worker("outage", values, logs)
        wait_until(lambda: len(watcher.seen) >= 4, 60, 0.02, what="the burst to start")
        server.shutdown()
        stored_before = len(watcher.seen)
        time.sleep(20)
        server.start()
        back = time.monotonic()
        assert watcher.wait_all(accepted, WINDOW_S), diagnose(server.client(), prefix, watcher, accepted,
                                                              [worker])
        log = worker.log_text()
        waits = log.count("Redis unavailable (")
        note = f"{waits} in-process waits logged; {len(accepted) - stored_before} stored after the outage"
        row = _all_stored_row("Redis unreachable for 20 s while tasks run (stopped, started again)",
                              accepted, watcher, server.client(), prefix, [worker], back, note)
        report(row)
        assert "requeue=False" not in log
        assert "Redis unavailable" in log or "put " in log  # the wait or the restore was logged
        assert row.back_to_last_stored_s is not None and row.back_to_last_stored_s <= WINDOW_S
        assert worker.alive()
    finally:
        watcher.stop()
        if worker is not None:
            worker.stop()
        server.stop()


def _write_sentinel_conf(path: Path, port: int, master_port: int) -> None:
    path.write_text(f"port {port}\nbind 127.0.0.1\ndir {path.parent}\n"
                    f"sentinel monitor lpmaster 127.0.0.1 {master_port} 2\n"
                    "sentinel down-after-milliseconds lpmaster 1000\n"
                    "sentinel failover-timeout lpmaster 10000\n"
                    "sentinel parallel-syncs lpmaster 1\n")


def _sentinel_master(port: int) -> tuple[str, int] | None:
    try:
        client = redis.Redis(port=port, socket_connect_timeout=1, socket_timeout=1)
        host, master_port = client.sentinel_get_master_addr_by_name("lpmaster")
        return host.decode() if isinstance(host, bytes) else host, int(master_port)
    except (redis.RedisError, OSError, TypeError):
        return None


def test_sentinel_failover_mid_burst(space: Any, report: Report) -> None:
    base, logs = space
    master = RedisServer("master", base, logs).start()
    replica = RedisServer("replica", base, logs, extra=["--replicaof", "127.0.0.1", "0"])
    replica.extra = ["--replicaof", "127.0.0.1", str(master.port)]
    replica.start()
    sentinels: list[Proc] = []
    ports = [free_port() for _ in range(3)]
    for index, port in enumerate(ports):
        conf = base / f"sentinel-{index}" / "sentinel.conf"
        conf.parent.mkdir()
        _write_sentinel_conf(conf, port, master.port)
        sentinels.append(spawn(f"sentinel-{index}", [REDIS_SERVER, str(conf), "--sentinel"], logs))
    url = ";".join(f"sentinel://127.0.0.1:{port}/0" for port in ports)
    prefix = f"lpfault-{uuid.uuid4().hex[:6]}"
    values = base_values(url, prefix, sentinel_master="lpmaster")
    settings = Settings(**values)
    worker: Proc | None = None
    watcher: StoreWatcher | None = None
    try:
        wait_until(lambda: all(_sentinel_master(p) == ("127.0.0.1", master.port) for p in ports), 20,
                   what="the sentinels to agree on the master")
        wait_until(lambda: master.client().info("replication").get("connected_slaves") == 1, 20,
                   what="the replica to sync")
        from service.redis_client import redis_client

        watcher = StoreWatcher(lambda: redis_client(url, settings), lambda d: f"{prefix}:result:{d}").start()
        worker = start_worker("sentinel", values, logs)
        with Producer(settings) as producer:
            accepted = _submit_burst(producer, prefix, 30, watcher)
            wait_until(lambda: len(watcher.seen) >= 4, 60, what="the burst to start")
            # A planned switchover, as an operator runs one: writes paused on the master until the
            # replica has everything, Sentinel promotes the replica, the old master is made its
            # replica at once (Sentinel alone converts it only seconds later: meanwhile clients
            # still connected to it would write where nobody reads). Paused writes then fail with
            # READONLY and the clients follow Sentinel to the new master.
            master.client().execute_command("CLIENT", "PAUSE", "10000", "WRITE")
            wait_until(lambda: replica.client().info("replication").get("slave_repl_offset")
                       == master.client().info("replication").get("master_repl_offset"), 10,
                       interval=0.05, what="the replica to catch up")
            redis.Redis(port=ports[0]).execute_command("SENTINEL", "FAILOVER", "lpmaster")
            wait_until(lambda: _sentinel_master(ports[0]) == ("127.0.0.1", replica.port), 30,
                       interval=0.05, what="the replica to be promoted")
            master.client().execute_command("REPLICAOF", "127.0.0.1", str(replica.port))
            master.client().execute_command("CLIENT", "UNPAUSE")
            back = time.monotonic()
            assert watcher.wait_all(accepted, WINDOW_S), "not all stored within 2 minutes of the failover"
            more = producer.submit(make_document(f"{prefix}-after", 50)).document_id  # producers follow
            watcher.want(more)
            accepted.append(more)
            assert watcher.wait_all(accepted, 60)
        new_master = replica.client()
        assert new_master.info("replication")["role"] == "master"
        title = "Sentinel failover mid-burst (master + replica + 3 sentinels, SENTINEL FAILOVER)"
        report(_all_stored_row(title, accepted, watcher, new_master, prefix, [worker], back,
                               "times from the promotion"))
        assert worker.alive()
    finally:
        if watcher is not None:
            watcher.stop()
        if worker is not None:
            worker.stop()
        for proc in sentinels:
            proc.stop(grace_s=3)
        replica.stop()
        master.stop()


def test_sigterm_of_a_worker_mid_burst_with_a_second_worker(space: Any, report: Report) -> None:
    base, logs = space
    server = RedisServer("main", base, logs).start()
    prefix = f"lpfault-{uuid.uuid4().hex[:6]}"
    values = base_values(server.url, prefix)
    watcher = StoreWatcher(lambda: server.client(5), lambda d: f"{prefix}:result:{d}").start()
    workers: list[Proc] = []
    try:
        # The backlog first (a producer is about as fast as one worker process), then the fleet;
        # large enough that the second worker still has work when the first has shut down.
        with Producer(Settings(**values)) as producer:
            accepted = _submit_burst(producer, prefix, SIGTERM_BACKLOG, watcher)
        first = start_worker("first", values, logs)
        workers.append(first)
        second = start_worker("second", values, logs)
        workers.append(second)
        wait_until(lambda: len(watcher.seen) >= 4 and second.alive(), 60, what="the burst to start")
        first.signal(15)  # SIGTERM: warm shutdown
        stopped = time.monotonic()
        first.popen.wait(timeout=60)
        exited = time.monotonic()
        assert first.popen.returncode == 0, first.log_text()[-2000:]
        assert watcher.wait_all(accepted, WINDOW_S), diagnose(server.client(), prefix, watcher, accepted,
                                                              [first, second])
        stored = _assert_all_stored(accepted, watcher, server.client(), prefix)
        runs = task_runs([first, second])
        by_first, by_second = task_runs([first]), task_runs([second])
        after_exit = sum(1 for d in stored if watcher.seen[d] > exited)
        row = Row("SIGTERM of one of two workers mid-burst (warm shutdown)", len(accepted), len(stored),
                  sum(1 for d in accepted if runs[d] > 1), None,
                  f"terminated worker ran {sum(by_first.values())} and exited 0 in {exited - stopped:.1f} s; "
                  f"the other ran {sum(by_second.values())}, {after_exit} of them after that exit")
        report(row)
        assert after_exit > 0, "the second worker drained the rest"
    finally:
        watcher.stop()
        for proc in workers:
            proc.stop()
        server.stop()


BAD = [
    # (payload or args, error type, has a usable document id)
    ("list", lambda i: [[{"block_id": "b", "type": "paragraph"}]], "InvalidPayload", False),
    ("no-id", lambda i: [{"blocks": []}], "InvalidPayload", False),
    ("bad-type", lambda i: [{"document_id": f"{{p}}-bad-{i}",
                             "blocks": [{"block_id": "b", "type": "banana"}]}], "InvalidPayload", True),
    ("unknown-config", lambda i: [{"document_id": f"{{p}}-bad-{i}", "blocks": [],
                                   "config": {"max_token": 5}}], "InvalidPayload", True),
    ("semantic", lambda i: [{"document_id": f"{{p}}-bad-{i}", "blocks": [],
                             "config": {"use_semantic_chunking": True}}], "SemanticUnavailable", True),
    ("string", lambda i: ["not a request"], "InvalidPayload", False),
    ("null", lambda i: [None], "InvalidPayload", False),
    ("too-large", lambda i: [{"document_id": f"{{p}}-bad-{i}", "blocks": [
        {"block_id": "b", "type": "paragraph", "text": "word " * 30_000}]}], "PayloadTooLarge", True),
    ("no-args", lambda i: [], "TypeError", False),
    ("surrogate", lambda i: [{"document_id": f"{{p}}-bad-{i}", "blocks": [
        {"block_id": "b", "type": "paragraph", "text": "bad \udc80"}]}], "InvalidPayload", True),
]


def _fill(args: list[Any], prefix: str) -> list[Any]:
    if args and isinstance(args[0], dict) and "document_id" in args[0]:
        return [{**args[0], "document_id": args[0]["document_id"].replace("{p}", prefix)}]
    return args


def test_malformed_raw_messages_mixed_with_good_documents(space: Any, report: Report) -> None:
    base, logs = space
    server = RedisServer("main", base, logs).start()
    prefix = f"lpfault-{uuid.uuid4().hex[:6]}"
    values = base_values(server.url, prefix, max_payload_bytes=100_000)
    settings = Settings(**values)
    watcher = StoreWatcher(lambda: server.client(5), lambda d: f"{prefix}:result:{d}").start()
    worker = start_worker("malformed", values, logs)
    try:
        with Producer(settings) as producer:
            children = wait_until(lambda: _pool(producer, worker), 20, what="pool pids")
            good: list[str] = []
            bad: list[tuple[str, str, str | None]] = []  # (task id, error type, document id)
            for i in range(200):
                _, build, error, has_id = BAD[i % len(BAD)]
                args = _fill(build(i), prefix)
                sent = producer.app.send_task(TASK_NAME, args=args, queue="chunking")
                bad.append((sent.id, error, args[0]["document_id"] if has_id else None))
                if i % 17 == 0:
                    good.append(producer.submit(make_document(f"{prefix}-good-{i}", 50, seed=i)).document_id)
            for document_id in good + [d for _, _, d in bad if d]:
                watcher.want(document_id)
            assert watcher.wait_all(good + [d for _, _, d in bad if d], WINDOW_S)
            for task_id, error, document_id in bad:
                if document_id is not None:
                    stored = producer.fetch_record(document_id)
                    assert (stored["status"], stored["error"]["type"]) == ("FAILURE", error), stored
                else:
                    outcome = producer.app.AsyncResult(task_id)
                    wait_until(lambda o=outcome: o.state == "FAILURE", 60, what=f"{task_id} to fail")
                    assert type(outcome.result).__name__ == error
            for document_id in good:
                assert producer.fetch_record(document_id)["status"] == "SUCCESS"
            with_records = good + [d for _, _, d in bad if d]
            assert events_missing(server.client(), prefix, with_records) == []
            assert _pool(producer, worker) == children, "a pool child was replaced"
        runs = task_runs([worker])
        row = Row(f"{len(bad)} malformed raw messages (send_task) mixed with {len(good)} good documents",
                  len(good), sum(1 for d in good if d in watcher.seen), sum(1 for d in good if runs[d] > 1),
                  None, f"all {len(bad)} bad ones FAILURE with their error type; no pool child replaced")
        report(row)
        assert " exited with " not in worker.log_text()
    finally:
        watcher.stop()
        worker.stop()
        server.stop()


def _pool(producer: Producer, worker: Proc) -> list[int]:
    node = worker.extra["node"]
    stats = producer.app.control.inspect(destination=[node], timeout=1.0).stats() or {}
    return sorted(stats.get(node, {}).get("pool", {}).get("processes", []))


@pytest.mark.parametrize("command", ["submit", "result"])
def test_producer_cli_with_redis_down_says_so_at_once_and_exits_3(space: Any, report: Report,
                                                                  command: str) -> None:
    base, _ = space
    port = free_port()  # nothing listens there
    url = f"redis://:s3cret@127.0.0.1:{port}/0"
    document = base / "doc.json"
    document.write_text('{"document_id": "doc-1", "blocks": [{"block_id": "b1", "type": "paragraph", '
                        '"text": "x"}]}')
    env = {k: v for k, v in os.environ.items() if not k.startswith("LONGPARSER_")}
    window = 6
    env.update({"LONGPARSER_BROKER_URL": url, "LONGPARSER_RESULT_URL": url,
                "LONGPARSER_SUBMIT_RETRY_WINDOW": str(window), "PYTHONPATH": str(REPO_ROOT)})
    argv = [sys.executable, "-m", "cli", command, str(document) if command == "submit" else "doc-1"]
    started = time.monotonic()
    with subprocess.Popen(argv, cwd=base, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        assert proc.stderr is not None and proc.stdout is not None
        timed = [(time.monotonic() - started, line.rstrip("\n")) for line in proc.stderr]
        returncode, stdout = proc.wait(timeout=60), proc.stdout.read()
    elapsed = time.monotonic() - started
    lines = [line for _, line in timed]
    said_after = f"{timed[0][0]:.1f} s" if timed else "never"
    row = Row(f"`longparser {command}` with Redis down (window {window} s)", 0, 0, 0, None,
              f"exit {returncode} after {elapsed:.1f} s; first line after {said_after}: "
              f"{' | '.join(line[:70] for line in lines)}")
    report(row)
    assert returncode == 3, lines
    assert lines == [
        f"longparser {command}: Redis at redis://:**@127.0.0.1:{port}/0 does not answer; retrying for up to "
        f"{window} s (LONGPARSER_SUBMIT_RETRY_WINDOW)", lines[-1]], lines
    assert lines[-1].startswith(f"longparser {command}: error: broker/store unreachable at "
                                f"redis://:**@127.0.0.1:{port}/0 for {window} s")
    all_text = "\n".join(lines)
    assert "s3cret" not in all_text and "Traceback" not in all_text and stdout == ""
    # waited (a retry that would end past the window is not made) within the window (+ start-up)
    assert window / 2 <= elapsed < window + 10
    assert timed[-1][0] - timed[0][0] >= window / 2  # the first line came at the start, not the end


def _make_full(client: Any) -> int:
    """Set ``maxmemory`` far under what Redis uses now: every write is refused (noeviction).

    Returns the previous limit, to give back when the test frees memory (an operator raising
    maxmemory, or workers draining the queue, has the same effect).
    """
    previous = int(client.config_get("maxmemory")["maxmemory"])
    client.config_set("maxmemory", "1mb")  # Redis with data and clients uses several MB
    return previous


def test_a_full_redis_makes_workers_wait_and_producers_fail_typed(space: Any, report: Report) -> None:
    """noeviction + maxmemory: the worker waits (in-process) until memory is freed; nothing lost;
    `longparser submit` exits 4 with one line while Redis is full."""
    base, logs = space
    server = RedisServer("full", base, logs, extra=["--maxmemory", "100mb"]).start()
    prefix = f"lpfault-{uuid.uuid4().hex[:6]}"
    values = base_values(server.url, prefix)
    watcher = StoreWatcher(lambda: server.client(5), lambda d: f"{prefix}:result:{d}").start()
    worker: Proc | None = None
    try:
        # One process and 40 documents: seconds of work, so Redis fills while tasks are still to
        # run (two processes finished a 16-document burst before the test could fill it).
        worker = start_worker("full", values, logs, concurrency=1)  # it starts only with room
        with Producer(Settings(**values)) as producer:
            accepted = _submit_burst(producer, prefix, 40, watcher)
        wait_until(lambda: len(watcher.seen) >= 1, 60, what="the burst to start")
        client = server.client(5)
        previous = _make_full(client)
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            client.set(f"{prefix}-probe", "x")
        full_at = len(watcher.seen)
        document = base / "doc.json"
        document.write_text('{"document_id": "doc-full", "blocks": [{"block_id": "b1", "type": "paragraph", '
                            '"text": "x"}]}')
        env = {k: v for k, v in os.environ.items() if not k.startswith("LONGPARSER_")}
        env.update({"LONGPARSER_BROKER_URL": server.url, "LONGPARSER_RESULT_URL": server.url,
                    "LONGPARSER_KEY_PREFIX": prefix, "PYTHONPATH": str(REPO_ROOT)})
        done = subprocess.run([sys.executable, "-m", "cli", "submit", str(document)], cwd=base, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 4, done.stderr
        [line] = done.stderr.splitlines()
        assert "is full (OOM under noeviction)" in line
        wait_until(lambda: "OutOfMemoryError" in worker.log_text() or "OOM" in worker.log_text(), 60,
                   what="the worker to meet the full Redis")
        time.sleep(3)
        assert len(watcher.seen) <= full_at + 2, "stored while Redis refused writes?"
        client.config_set("maxmemory", str(previous))
        freed = time.monotonic()
        assert watcher.wait_all(accepted, WINDOW_S), diagnose(client, prefix, watcher, accepted, [worker])
        title = "Redis full (noeviction, maxmemory under its use) while tasks run, then raised"
        report(_all_stored_row(title, accepted, watcher, client, prefix, [worker], freed,
                               "times from memory freed; `longparser submit` meanwhile: exit 4, one line"))
        assert worker.alive() and " exited with " not in worker.log_text()
    finally:
        watcher.stop()
        if worker is not None:
            worker.stop()
        server.stop()


# --------------------------------------------------------------------------- documents by reference

REF_BLOCKS = 4000  # ~1.5 MB of JSON as sent: over the 1 MiB reference threshold
BIG_BLOCKS = 24_000  # ~10 MB of JSON: seconds of work, so a kill lands while the worker holds it


def _payload_keys(client: Any, prefix: str) -> list[bytes]:
    return list(client.scan_iter(match=f"{prefix}:payload:*", count=1000))


def _referenced(producer: Producer, document: dict[str, Any], watcher: StoreWatcher) -> str:
    """Submit a document that must travel by reference; its id."""
    assert len(json.dumps(document)) > producer.settings.reference_threshold_bytes
    document_id = producer.submit(document).document_id
    watcher.want(document_id)
    return document_id


def test_redis_restarted_while_referenced_documents_wait_in_the_queue(space: Any, report: Report) -> None:
    base, logs = space
    server = RedisServer("main", base, logs).start()
    prefix = f"lpfault-{uuid.uuid4().hex[:6]}"
    values = base_values(server.url, prefix)
    watcher = StoreWatcher(lambda: server.client(5), lambda d: f"{prefix}:result:{d}").start()
    worker: Proc | None = None
    try:
        with Producer(Settings(**values)) as producer:
            accepted = [_referenced(producer, make_document(f"{prefix}-d{i:03d}", REF_BLOCKS, seed=i),
                                    watcher) for i in range(6)]
        assert len(_payload_keys(server.client(), prefix)) == len(accepted)
        server.shutdown()  # no worker yet: the messages and their bytes wait in Redis
        time.sleep(2)
        server.start()
        back = time.monotonic()
        kept = len(_payload_keys(server.client(), prefix))
        worker = start_worker("after-restart", values, logs)
        assert watcher.wait_all(accepted, WINDOW_S), diagnose(server.client(), prefix, watcher, accepted,
                                                              [worker])
        row = _all_stored_row("Redis restarted while referenced documents wait in the queue (no worker yet)",
                              accepted, watcher, server.client(), prefix, [worker], back,
                              f"{kept}/{len(accepted)} referenced requests kept across the restart (AOF); "
                              f"{len(_payload_keys(server.client(), prefix))} left once stored")
        report(row)
        assert kept == len(accepted)
        records = [json.loads(server.client().get(f"{prefix}:result:{d}")) for d in accepted]
        assert {r["status"] for r in records} == {"SUCCESS"} and all(r["request_sha256"] for r in records)
        wait_until(lambda: not _payload_keys(server.client(), prefix), 10,
                   what="the referenced bytes deleted")
    finally:
        watcher.stop()
        if worker is not None:
            worker.stop()
        server.stop()


def test_sigkill_of_a_worker_holding_a_referenced_document(space: Any, report: Report) -> None:
    base, logs = space
    server = RedisServer("main", base, logs).start()
    prefix = f"lpfault-{uuid.uuid4().hex[:6]}"
    # A short visibility timeout: the held message is handed out again 40 s after its delivery.
    values = base_values(server.url, prefix, soft_time_limit=15, hard_time_limit=20, visibility_timeout=40)
    watcher = StoreWatcher(lambda: server.client(5), lambda d: f"{prefix}:result:{d}").start()
    workers: list[Proc] = []
    try:
        killed = start_worker("killed", values, logs, concurrency=1)
        workers.append(killed)
        with Producer(Settings(**values)) as producer:
            big = _referenced(producer, make_document(f"{prefix}-big", BIG_BLOCKS, seed=99), watcher)
            accepted = [big] + [_referenced(producer, make_document(f"{prefix}-d{i:03d}", REF_BLOCKS, seed=i),
                                            watcher) for i in range(4)]
        # The big document is first in the queue and this worker holds one message at a time.
        wait_until(lambda: "received" in killed.log_text(), 60, 0.05, what="the big document to be received")
        os.killpg(killed.popen.pid, 9)  # SIGKILL of the worker, parent and pool child, mid-task
        killed_at = time.monotonic()
        killed.popen.wait(timeout=10)
        assert big not in watcher.seen, "the kill landed after the document was stored: inconclusive"
        assert f"chunked document {big}:" not in killed.log_text()
        survivor = start_worker("survivor", values, logs, concurrency=1)
        workers.append(survivor)
        # Handed out again once the visibility timeout has passed (kombu looks every few seconds).
        assert watcher.wait_all(accepted, values["visibility_timeout"] + WINDOW_S), \
            diagnose(server.client(), prefix, watcher, accepted, workers)
        record = json.loads(server.client().get(f"{prefix}:result:{big}"))
        assert record["status"] == "SUCCESS" and record["request_sha256"]
        assert f"chunked document {big}:" in survivor.log_text()
        wait_until(lambda: not _payload_keys(server.client(), prefix), 10,
                   what="the referenced bytes deleted")
        row = _all_stored_row("SIGKILL of a worker (parent and child) holding a referenced document",
                              accepted, watcher, server.client(), prefix, workers, killed_at,
                              f"the {BIG_BLOCKS}-block document redelivered after the 40 s visibility "
                              f"timeout and stored {watcher.seen[big] - killed_at:.0f} s after the kill; "
                              "no referenced bytes left")
        report(row)
    finally:
        watcher.stop()
        for proc in workers:
            proc.stop()
        server.stop()
