#!/usr/bin/env python3
"""First-task wait of a semantic worker: from its ``ready`` line to the first result stored.

A semantic worker (``celery -A worker worker -Q semantic -c 2``, the pinned model, as deployed)
is started against a redis-server this script starts on a free port; the moment its log says
``ready``, one semantic document (``gen_blocks.generate(50)``) is submitted and the script
waits for its result in the store. Rows per checkout:

* ``start -> ready``: seconds from starting the worker to its ``ready`` line;
* ``ready -> stored``: seconds from ``ready`` to the first result stored: what a producer that
  trusts ``ready`` (or ``ping``, or Flower's "online") waits for its first document;
* ``task``: what the task reports of itself (``chunked document ... in X ms``).

``--baseline-root DIR`` measures another checkout (its ``worker`` and engine, started from DIR)
in the same run, alternating with this one, with this checkout's producer. Needs the model
(``make embeddings``) and ``redis-server`` on PATH.

Usage:
    .venv/bin/python bench/bench_worker_ready.py --runs 2 --baseline-root ../before
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path[:0] = [str(BENCH_DIR), str(ROOT)]

import gen_blocks  # noqa: E402 - the copy beside this file
import redis  # noqa: E402

from config.settings import Settings  # noqa: E402
from tasks import client  # noqa: E402

READY_LINE = re.compile(rb" ready\.\s*$", re.MULTILINE)
TASK_LINE = re.compile(rb"chunked document \S+: \d+ blocks -> \d+ chunks in ([0-9.]+) ms")
START_LIMIT_S = 300.0
POLL_S = 0.01


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def redis_server(directory: Path) -> Any:
    port = free_port()
    proc = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind",
                             "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(directory)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(redis.exceptions.ConnectionError):
                if redis.Redis.from_url(url).ping():
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not answer")
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def _env(settings: Settings, root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LONGPARSER_")}
    for name, value in settings.model_dump().items():
        env[f"LONGPARSER_{name.upper()}"] = "" if value is None else (
            ("true" if value else "false") if isinstance(value, bool) else str(value))
    env.update(PYTHONPATH=str(root), OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    return env


def wait_for(predicate: Any, limit_s: float, what: str) -> Any:
    deadline = time.monotonic() + limit_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {limit_s:g} s")
        time.sleep(POLL_S)


def one_run(root: Path, settings: Settings, log_path: Path, document: dict[str, Any]) -> dict[str, float]:
    node = f"ready-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
    argv = [str(Path(sys.executable).with_name("celery")), "-A", "worker", "worker", "-P", "prefork",
            "-c", "2", "-n", node, "-Q", settings.semantic_queue, "-l", "INFO", "--without-gossip",
            "--without-mingle", "--without-heartbeat"]
    started = time.perf_counter()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, cwd=root, env=_env(settings, root), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def ready() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"worker exited with {proc.returncode}; see {log_path}")
            return READY_LINE.search(log_path.read_bytes()) is not None

        wait_for(ready, START_LIMIT_S, "ready line")
        ready_at = time.perf_counter()
        with client.Producer(settings) as producer:
            handle = producer.submit(document)
            stored_at = wait_for(lambda: producer.fetch_record(handle.document_id) and time.perf_counter(),
                                 START_LIMIT_S, "stored result")
        task = wait_for(lambda: TASK_LINE.search(log_path.read_bytes()), 10, "task line")
        return {"start_ready": ready_at - started, "ready_stored": stored_at - ready_at,
                "task_ms": float(task.group(1))}
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="worker starts per checkout (2)")
    parser.add_argument("--baseline-root", type=Path, help="another checkout, measured in the same run")
    args = parser.parse_args(argv)
    checkouts = {"this checkout": ROOT}
    if args.baseline_root:
        checkouts = {"baseline": args.baseline_root.resolve(), **checkouts}
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    with tempfile.TemporaryDirectory(prefix="bench-ready-") as tmp, redis_server(Path(tmp)) as url:
        settings = Settings(broker_url=url, result_url=url, semantic_enabled=True, word_list_path=None,
                            key_prefix=f"bench-ready-{uuid.uuid4().hex[:6]}", _env_file=None)
        for run in range(args.runs):
            for name, root in checkouts.items():
                document = {"document_id": f"ready-{run}-{uuid.uuid4().hex[:6]}",
                            "blocks": gen_blocks.generate(50, seed=run),
                            "config": {"use_semantic_chunking": True}}
                log_path = Path(tmp) / f"{name.replace(' ', '-')}-{run}.log"
                rows[name].append(one_run(root, settings, log_path, document))
                figures = ", ".join(f"{k} {v:.2f}" for k, v in rows[name][-1].items())
                print(f"run {run + 1} {name}: {figures}", flush=True)
    print(f"\nsemantic worker, -c 2, {args.runs} starts each (medians)")
    print(f"{'checkout':<16} {'start -> ready s':>17} {'ready -> stored s':>18} {'task ms':>8}")
    for name, results in rows.items():
        print(f"{name:<16} {statistics.median(r['start_ready'] for r in results):>17.1f} "
              f"{statistics.median(r['ready_stored'] for r in results):>18.2f} "
              f"{statistics.median(r['task_ms'] for r in results):>8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
