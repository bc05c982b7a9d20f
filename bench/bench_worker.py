#!/usr/bin/env python3
"""Worker benchmark: small structural documents through real Redis and real worker processes.

Documents: ``gen_blocks.generate(BLOCKS, seed=i)`` (50 blocks by default), one per seed. Rows:

* ``direct``: ``longparser.chunk_request`` in this process, with the same resources a worker
  child builds (language ID, word list when present): the engine's own cost per document;
* ``worker c=N sequential``: one document in flight at a time: latency from ``submit`` to the
  result being stored (visible in Redis) is the service's overhead on top of the engine;
* ``worker c=N burst``: every document submitted at once: throughput (documents / s from the
  first submit to the last stored result) and latency including queueing.

Each worker (``celery -A worker worker -c N``, prefork, events on, as deployed) is started and
stopped by this script; the store is polled by one thread with ``MGET`` every 5 ms, so a
result's arrival time does not depend on a client's polling interval. Everything lives on its
own Redis database (default 14) under a unique key prefix, deleted at the end (no FLUSH).
``task p50 ms`` is what the task reports of itself (validate + chunk + store, inside the worker
child), read from the workers' INFO log lines.

``--baseline-root DIR`` adds the same worker rows for another checkout (its ``worker`` and
engine, started from DIR), measured in the same run with this checkout's producer: the before
and after of a change on the same machine load. The baseline's documents always travel inline
(an older worker does not follow references); this checkout's go by reference above
``LONGPARSER_REFERENCE_THRESHOLD_BYTES``, as a deployed producer sends them.

Usage:
    .venv/bin/python bench/bench_worker.py                     # 200 docs of 50 blocks, c=1 and c=2
    .venv/bin/python bench/bench_worker.py --redis redis://127.0.0.1:6379/11 --blocks 50 2000 \
        --baseline-root ../before
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path[:0] = [str(BENCH_DIR), str(ROOT / "client"), str(ROOT)]  # this checkout's client too

import gen_blocks  # noqa: E402 - the copy beside this file
import redis  # noqa: E402

from config.settings import Settings  # noqa: E402
from longparser import chunk_blocks, chunk_request  # noqa: E402
from schemas import parse_input  # noqa: E402
from service.keys import result_key  # noqa: E402
from tasks import client  # noqa: E402
from worker.context import build_process_resources  # noqa: E402

DEFAULT_REDIS = "redis://127.0.0.1:6379/14"
READY_TIMEOUT_S = 60.0
POLL_S = 0.005
TASK_LINE = re.compile(r"chunked document (\S+): \d+ blocks -> \d+ chunks in ([0-9.]+) ms")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def documents(n: int, blocks: int, prefix: str) -> list[dict[str, Any]]:
    return [{"document_id": f"{prefix}-doc-{i}", "blocks": gen_blocks.generate(blocks, seed=i)}
            for i in range(n)]


def bench_direct(docs: list[dict[str, Any]], settings: Settings) -> dict[str, float]:
    """The engine in this process, validation included (what the task does)."""
    resources = build_process_resources(settings)
    chunk_request(parse_input(docs[0]), resources)  # warm-up
    latencies = []
    cpu0 = time.process_time()
    started = time.perf_counter()
    for doc in docs:
        t0 = time.perf_counter()
        chunk_request(parse_input(doc), resources)
        latencies.append(time.perf_counter() - t0)
    cpu_ms = (time.process_time() - cpu0) * 1000 / len(docs)
    return {"elapsed": time.perf_counter() - started, "cpu_ms": cpu_ms, **_stats(latencies, len(docs))}


def bench_engine(docs: list[dict[str, Any]], settings: Settings) -> dict[str, float]:
    """The denominator: ``json.loads`` of each document's JSON + ``chunk_blocks`` on the dicts,
    in this process (the engine's own cost of a document that arrives as JSON)."""
    resources = build_process_resources(settings)
    texts = [json.dumps(doc, separators=(",", ":"), ensure_ascii=False) for doc in docs]

    def run(text: str) -> None:
        doc = json.loads(text)
        chunk_blocks(doc["blocks"], doc.get("config"), resources, document_id=doc["document_id"])

    run(texts[0])  # warm-up
    latencies = []
    cpu0 = time.process_time()
    started = time.perf_counter()
    for text in texts:
        t0 = time.perf_counter()
        run(text)
        latencies.append(time.perf_counter() - t0)
    cpu_ms = (time.process_time() - cpu0) * 1000 / len(docs)
    return {"elapsed": time.perf_counter() - started, "cpu_ms": cpu_ms, **_stats(latencies, len(docs))}


def _stats(latencies: list[float], n: int, elapsed: float | None = None) -> dict[str, float]:
    total = elapsed if elapsed is not None else sum(latencies)
    return {"p50_ms": percentile(latencies, 50) * 1000, "p95_ms": percentile(latencies, 95) * 1000,
            "docs_per_s": n / total}


class StoreWatcher:
    """Records when each document's result key appears (one MGET loop in a thread)."""

    def __init__(self, url: str, prefix: str, document_ids: list[str]) -> None:
        self.client = redis.Redis.from_url(url)
        self.keys = {result_key(prefix, d): d for d in document_ids}
        self.seen: dict[str, float] = {}
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        pending = list(self.keys)
        while pending:
            values = self.client.mget(pending)
            now = time.perf_counter()
            for key, value in zip(pending, values, strict=True):
                if value is not None:
                    self.seen[self.keys[key]] = now
            pending = [k for k, v in zip(pending, values, strict=True) if v is None]
            time.sleep(POLL_S)

    def start(self) -> StoreWatcher:
        self._thread.start()
        return self

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"only {len(self.seen)}/{len(self.keys)} results stored in {timeout} s")


def _env(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LONGPARSER_")}
    for name, value in settings.model_dump().items():
        env[f"LONGPARSER_{name.upper()}"] = "" if value is None else (
            ("true" if value else "false") if isinstance(value, bool) else str(value))
    return env


def checkout_path(root: Path) -> str:
    """PYTHONPATH for a checkout's own code: its packages and its producer client
    (``client/``, a distribution of its own, installed editable from one checkout only)."""
    return os.pathsep.join((str(root / "client"), str(root)))


def start_worker(settings: Settings, concurrency: int, log_path: Path, root: Path = ROOT
                 ) -> tuple[subprocess.Popen, str]:
    node = f"bench-c{concurrency}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
    argv = [str(Path(sys.executable).with_name("celery")), "-A", "worker", "worker", "-P", "prefork",
            "-c", str(concurrency), "-n", node, "-Q", settings.structural_queue, "-E", "-l", "INFO",
            "--without-gossip", "--without-mingle", "--without-heartbeat"]
    env = _env(settings)
    env["PYTHONPATH"] = checkout_path(root)  # that checkout's packages first
    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    app = client.producer_celery(settings)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not app.control.ping(destination=[node], timeout=0.5):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_worker(proc)
            raise RuntimeError(f"worker {node} did not start; see {log_path}")
    return proc, node


def stop_worker(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # pool children left behind
    proc.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds of a worker: (parent, pool children together)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            children = [int(child) for child in listing.read().split()]
        return cpu_seconds(pid), sum(cpu_seconds(child) for child in children)
    except (OSError, ValueError):
        return float("nan"), float("nan")


def _run_batch(docs: list[dict[str, Any]], producer: client.Producer, log_path: Path,
               sequential: bool, pid: int | None = None) -> dict[str, float]:
    settings = producer.settings
    ids = [d["document_id"] for d in docs]
    watcher = StoreWatcher(settings.result_url, settings.key_prefix, ids).start()
    submitted: dict[str, float] = {}
    cpu_before = worker_cpu(pid) if pid else (float("nan"), float("nan"))
    started = time.perf_counter()
    for doc in docs:
        submitted[doc["document_id"]] = time.perf_counter()
        producer.submit(doc)
        while sequential and doc["document_id"] not in watcher.seen:
            time.sleep(POLL_S / 5)
    watcher.join(timeout=600)
    latencies = [watcher.seen[d] - submitted[d] for d in submitted]
    stats = _stats(latencies, len(docs), elapsed=max(watcher.seen.values()) - started)
    cpu_after = worker_cpu(pid) if pid else cpu_before
    return {**stats, "task_ms": percentile(_task_durations(log_path, set(ids)), 50),
            "parent_cpu_ms": (cpu_after[0] - cpu_before[0]) * 1000 / len(docs),
            "child_cpu_ms": (cpu_after[1] - cpu_before[1]) * 1000 / len(docs)}


def _task_durations(log_path: Path, ids: set[str], timeout: float = 10.0) -> list[float]:
    """The durations the tasks log for themselves (validate + chunk + store, in the worker child)."""
    deadline = time.monotonic() + timeout
    while True:
        text = log_path.read_text(errors="replace")
        found = {m.group(1): float(m.group(2)) for m in TASK_LINE.finditer(text) if m.group(1) in ids}
        if len(found) == len(ids) or time.monotonic() > deadline:
            return list(found.values()) or [float("nan")]
        time.sleep(0.1)


def bench_worker(docs: list[dict[str, Any]], producer: client.Producer, concurrency: int,
                 log_dir: Path, sequential_n: int, root: Path = ROOT, label: str = "current"
                 ) -> dict[str, dict[str, float]]:
    """Sequential and burst runs on one worker with ``concurrency`` pool processes."""
    log_path = log_dir / f"worker-{label}-c{concurrency}-{uuid.uuid4().hex[:4]}.log"
    proc, _ = start_worker(producer.settings, concurrency, log_path, root)
    try:
        tag = f"{label}-c{concurrency}-{uuid.uuid4().hex[:4]}"
        renamed = [{**d, "document_id": f"{d['document_id']}-{tag}"} for d in docs]
        _run_batch(renamed[:4], producer, log_path, sequential=False)  # warm-up: children, connections
        sequential = [{**d, "document_id": f"{d['document_id']}-seq"} for d in renamed[:sequential_n]]
        return {"sequential": _run_batch(sequential, producer, log_path, sequential=True, pid=proc.pid),
                "burst": _run_batch([{**d, "document_id": f"{d['document_id']}-burst"} for d in renamed],
                                    producer, log_path, sequential=False, pid=proc.pid)}
    finally:
        stop_worker(proc)


def print_table(n: int, seq_n: int, blocks: int, engine: dict[str, float], direct: dict[str, float],
                workers: dict[tuple[str, int], dict[str, dict[str, float]]]) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{blocks}-block structural documents (gen_blocks seeds 0..{n - 1}), real Redis; "
          f"{os.cpu_count()} CPUs, load average {load}\n")
    print(f"| {'path':<36} | {'docs':>5} | {'p50 ms':>8} | {'p95 ms':>8} | {'docs/s':>8} | "
          f"{'vs engine':>9} | {'task p50 ms':>11} | {'CPU ms/doc parent + child (x engine)':>36} |")
    print(f"|{'-' * 38}|{'-' * 7}|{'-' * 10}|{'-' * 10}|{'-' * 10}|{'-' * 11}|{'-' * 13}|{'-' * 38}|")
    nan = float("nan")
    rows = [("engine json.loads + chunk_blocks", n,
             {**engine, "task_ms": engine["p50_ms"], "parent_cpu_ms": nan, "child_cpu_ms": engine["cpu_ms"]}),
            ("direct chunk_request", n, {**direct, "task_ms": direct["p50_ms"], "parent_cpu_ms": nan,
                                         "child_cpu_ms": direct["cpu_ms"]})]
    for (label, concurrency), runs in workers.items():
        rows.append((f"{label} worker c={concurrency} sequential", seq_n, runs["sequential"]))
        rows.append((f"{label} worker c={concurrency} burst", n, runs["burst"]))
    for name, count, s in rows:
        ratio = s["docs_per_s"] / engine["docs_per_s"]
        total = (0.0 if s["parent_cpu_ms"] != s["parent_cpu_ms"] else s["parent_cpu_ms"]) + s["child_cpu_ms"]
        cpu = f"{s['parent_cpu_ms']:.1f} + {s['child_cpu_ms']:.1f} ({total / engine['cpu_ms']:.2f}x)"
        print(f"| {name:<36} | {count:>5} | {s['p50_ms']:>8.1f} | {s['p95_ms']:>8.1f} | "
              f"{s['docs_per_s']:>8.1f} | {ratio:>9.0%} | {s['task_ms']:>11.1f} | {cpu:>36} |")
    print("\nsequential: one document in flight (latency = submit -> result stored); burst: all submitted"
          "\nat once (docs/s = documents / (last stored - first submit)); engine (the denominator of"
          "\n'vs engine' and 'x engine'): json.loads + chunk_blocks on dicts in this process; direct:"
          "\nparse_input + chunk_request in this process (what the task calls)."
          "\ntask p50 ms: the duration_ms a task reports (validate + chunk + store, in the worker child)."
          "\nCPU ms/doc: CPU the worker's parent and pool child spent per document during the run (from"
          "\n/proc; the least load-sensitive column on a shared machine).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=200, help="documents per burst run (50-block size)")
    parser.add_argument("--sequential", type=int, default=50, help="documents per sequential run")
    parser.add_argument("--blocks", type=int, nargs="+", default=[50],
                        help="document sizes; sizes over 500 blocks run docs/10 documents")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--redis", default=os.environ.get("LONGPARSER_BENCH_REDIS_URL", DEFAULT_REDIS))
    parser.add_argument("--baseline-root", type=Path, help="also measure the worker of this checkout")
    args = parser.parse_args(argv)
    prefix = f"lpbench-{uuid.uuid4().hex[:8]}"
    # The system word list when this machine has one (set explicitly, it would be required).
    words = Settings.model_fields["word_list_path"].default
    settings = Settings(broker_url=args.redis, result_url=args.redis, key_prefix=prefix,
                        celery_key_prefix=f"{prefix}-celery:",
                        word_list_path=words if Path(words).exists() else None)
    store = redis.Redis.from_url(args.redis)
    store.ping()
    roots = [("current", ROOT)] + ([("baseline", args.baseline_root.resolve())] if args.baseline_root else [])
    try:
        # A baseline checkout may predate references: its documents travel inline, as it expects.
        everything_inline = settings.model_copy(
            update={"reference_threshold_bytes": settings.max_inline_bytes})
        with client.Producer(settings) as producer, client.Producer(everything_inline) as inline, \
                tempfile.TemporaryDirectory(prefix="lpbench-logs-") as logs:
            for blocks in args.blocks:
                n = args.docs if blocks <= 500 else max(4, args.docs // 10)
                seq_n = args.sequential if blocks <= 500 else max(4, args.sequential // 5)
                docs = documents(n, blocks, f"{prefix}-b{blocks}")
                engine = bench_engine(docs, settings)
                direct = bench_direct(docs, settings)
                workers = {(label, c): bench_worker(docs, producer if label == "current" else inline,
                                                    c, Path(logs), seq_n, root, label)
                           for label, root in roots for c in args.concurrency}
                print_table(n, seq_n, blocks, engine, direct, workers)
                del docs
    finally:
        keys = list(store.scan_iter(match=f"{prefix}*", count=1000))
        for start in range(0, len(keys), 1000):
            store.delete(*keys[start:start + 1000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
