#!/usr/bin/env python3
"""Completion-event latency: from the store write to the waiting client waking up.

A redis-server of its own (free loopback port, no persistence) is started and stopped by this
script. For each document a job entry is written, a thread calls ``Producer.wait`` on it (it
notes the stream's newest id, sees the job PENDING and blocks in ``XREAD BLOCK``), then the main
thread stores the document's SUCCESS record with ``ResultStore.save_success`` (the worker's own
write: record, chunk-id side key and event in one MULTI/EXEC). Latency = the waiter's return time
minus the time just before that write started (so it includes the write's round trip and the
waiter's status check after waking).

Modes:

* ``sequential``: one waiter at a time (the latency of one waiting client);
* ``burst``: 50 waiters blocked at once (each blocked wait holds one connection of the client's
  pool, 100 by default in redis-py), their records stored back to back, repeated until N
  documents: every waiter wakes on every event and reads on (many clients on one stream).

Usage:
    .venv/bin/python bench/bench_events.py                 # 200 documents, both modes
    .venv/bin/python bench/bench_events.py --documents 500
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from config.settings import Settings  # noqa: E402
from tasks.client import Producer  # noqa: E402

SETTLE_S = 0.03  # the waiter's first status check and XREVRANGE before the write


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def result_json(document_id: str, chunks: int = 20) -> tuple[str, list[str]]:
    ids = [uuid.uuid4().hex for _ in range(chunks)]
    return json.dumps({"document_id": document_id, "chunks": [{"chunk_id": i} for i in ids]}), ids


def waiter(producer: Producer, document_id: str, out: dict[str, float]) -> None:
    view = producer.wait(document_id, timeout=30)
    out[document_id] = time.perf_counter() if view["state"] == "SUCCESS" else float("nan")


def sequential(producer: Producer, n: int, run: str) -> list[float]:
    store, latencies, woke = producer.store, [], {}
    for i in range(n):
        doc = f"{run}-seq-{i}"
        store.save_job(doc, f"t-{doc}", "chunking")
        thread = threading.Thread(target=waiter, args=(producer, doc, woke))
        thread.start()
        time.sleep(SETTLE_S)
        body, ids = result_json(doc)
        started = time.perf_counter()
        store.save_success(doc, f"t-{doc}", body, ids)
        thread.join(30)
        latencies.append(woke[doc] - started)
    return latencies


BURST = 50


def burst(producer: Producer, n: int, run: str) -> list[float]:
    latencies: list[float] = []
    for start in range(0, n, BURST):
        latencies += _burst(producer, [f"{run}-burst-{i}" for i in range(start, min(n, start + BURST))])
    return latencies


def _burst(producer: Producer, docs: list[str]) -> list[float]:
    store, woke, written = producer.store, {}, {}
    threads = []
    for doc in docs:
        store.save_job(doc, f"t-{doc}", "chunking")
        threads.append(threading.Thread(target=waiter, args=(producer, doc, woke)))
        threads[-1].start()
    time.sleep(1.0)  # every waiter blocked
    for doc in docs:
        body, ids = result_json(doc)
        written[doc] = time.perf_counter()
        store.save_success(doc, f"t-{doc}", body, ids)
    for thread in threads:
        thread.join(60)
    return [woke[d] - written[d] for d in docs]


def summary(name: str, latencies: list[float]) -> str:
    ms = sorted(x * 1000 for x in latencies)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    return (f"| {name} | {len(ms)} | {statistics.median(ms):.1f} | {p95:.1f} | {ms[-1]:.1f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=200)
    args = parser.parse_args(argv)
    port, tmp = free_port(), tempfile.mkdtemp(prefix="bench-events-")
    server = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind",
                               "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        settings = Settings(broker_url=url, result_url=url, key_prefix="bench-events", word_list_path=None)
        run = uuid.uuid4().hex[:6]
        with Producer(settings) as producer:
            seq = sequential(producer, args.documents, run)
            many = burst(producer, args.documents, run)
        print("| mode | documents | p50 ms | p95 ms | max ms |\n|---|---:|---:|---:|---:|")
        print(summary("sequential (one waiter)", seq))
        print(summary(f"burst ({BURST} waiters at once)", many))
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
