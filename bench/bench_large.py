#!/usr/bin/env python3
"""One very large document end to end (by reference), with the worker's peak memory measured.

A ``gen_blocks`` document of ``--blocks`` blocks (100,000 by default, about 100 MB of JSON) goes
through a real structural worker (``celery -A worker worker -c 1``, prefork, events on, as
deployed) twice:

* ``cli``: ``longparser submit FILE --wait`` in a subprocess (its result printed to a file);
* ``client``: ``tasks.client.Producer.submit`` in this process, then ``get_result``.

For each run it reports the wall time, the request's JSON size and what it cost in memory:

* worker: the pool child's peak RSS (``VmHWM``, reset before each run through
  ``/proc/PID/clear_refs``) minus its idle RSS before the run, plus the parent's growth over the
  run (its peak minus its RSS before); the bound is stated against the document's JSON (the
  file: ``x JSON``); ``x request sent`` divides by the request's JSON as the producer sends it
  (its blocks without their default values, a little smaller than the file here);
* producer: the CLI process's peak RSS (it reads the file and prints the result too), and the
  client's growth in this process during ``submit`` alone, in copies of the JSON size (the
  caller's own dict is already there before it starts).

Everything lives on its own Redis database (default 14) under a unique key prefix, deleted at
the end (no FLUSH). Needs Linux (``/proc``) and root or the same user as the worker for
``clear_refs``.

Usage:
    .venv/bin/python bench/bench_large.py --redis redis://127.0.0.1:6379/11 --blocks 100000
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path[:0] = [str(BENCH_DIR), str(ROOT / "client"), str(ROOT)]  # this checkout's client too

import bench_worker  # noqa: E402 - the copy beside this file
import gen_blocks  # noqa: E402
import redis  # noqa: E402

from config.settings import Settings  # noqa: E402
from schemas import ChunkRequest  # noqa: E402
from service.payloads import COMPRESS_LEVEL  # noqa: E402
from tasks import client  # noqa: E402
from tasks.payload import request_json_pieces  # noqa: E402

DEFAULT_REDIS = "redis://127.0.0.1:6379/14"
MIB = 1024 * 1024


def status_kb(pid: int | str, field: str) -> int:
    """A ``/proc/PID/status`` field in kB (VmRSS, VmHWM)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def reset_peak(pid: int | str) -> None:
    """Reset a process's peak RSS (VmHWM) to its current RSS (Linux: ``clear_refs`` 5)."""
    with open(f"/proc/{pid}/clear_refs", "w") as refs:
        refs.write("5")


def pool_child(pid: int) -> int:
    with open(f"/proc/{pid}/task/{pid}/children") as listing:
        [child] = [int(c) for c in listing.read().split()]
    return child


class WorkerMemory:
    """The worker's memory over one run: child peak - child idle, plus parent peak - parent before."""

    def __init__(self, parent: int) -> None:
        self.parent = parent
        self.child = pool_child(parent)
        for pid in (self.parent, self.child):
            reset_peak(pid)
        self.child_idle = status_kb(self.child, "VmRSS")
        self.parent_before = status_kb(self.parent, "VmRSS")

    def finish(self) -> dict[str, float]:
        if pool_child(self.parent) != self.child:
            raise RuntimeError("the pool child was replaced during the run: its peak is lost "
                               "(raise LONGPARSER_MAX_MEMORY_PER_CHILD_KB)")
        child_peak = status_kb(self.child, "VmHWM")
        parent_peak = status_kb(self.parent, "VmHWM")
        return {"child_idle_mb": self.child_idle / 1024, "child_peak_mb": child_peak / 1024,
                "parent_growth_mb": max(0, parent_peak - self.parent_before) / 1024,
                "worker_mb": (child_peak - self.child_idle + max(0, parent_peak - self.parent_before)) / 1024}


def run_cli(path: Path, settings: Settings, env: dict[str, str], out: Path) -> dict[str, Any]:
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with out.open("wb") as sink:
        argv = [str(Path(sys.executable).with_name("longparser")), "submit", str(path), "--wait",
                "--timeout", "1800"]
        proc = subprocess.run(argv,
                              cwd=ROOT, env=env, stdout=sink, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        raise RuntimeError(f"longparser submit exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    chunks = len(json.loads(out.read_bytes())["chunks"])
    return {"seconds": elapsed, "chunks": chunks,
            "producer_peak_mb": peak / 1024 if peak > before else float("nan")}


def run_client(document: dict[str, Any], producer: client.Producer) -> dict[str, Any]:
    gc.collect()
    reset_peak("self")
    rss_before = status_kb("self", "VmRSS")
    started = time.perf_counter()
    handle = producer.submit(document)
    submitted = time.perf_counter()
    growth = status_kb("self", "VmHWM") - rss_before
    result = producer.get_result(handle, timeout=1800)
    return {"seconds": time.perf_counter() - started, "submit_seconds": submitted - started,
            "chunks": len(result.chunks), "producer_growth_mb": growth / 1024}


def _as_sent(document: dict[str, Any]) -> tuple[float, float]:
    """MiB of the request's JSON as the producer sends it, and of its compressed form in Redis."""
    pieces = request_json_pieces(ChunkRequest.model_validate(document))
    packer = zlib.compressobj(COMPRESS_LEVEL)
    stored = sum(map(len, [*map(packer.compress, pieces), packer.flush()]))
    return sum(map(len, pieces)) / MIB, stored / MIB


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=100_000)
    parser.add_argument("--redis", default=os.environ.get("LONGPARSER_BENCH_REDIS_URL", DEFAULT_REDIS))
    args = parser.parse_args(argv)
    prefix = f"lpbig-{uuid.uuid4().hex[:8]}"
    words = Settings.model_fields["word_list_path"].default
    # Structural mode; limits for one very large document (the pool child kept for its peak).
    settings = Settings(broker_url=args.redis, result_url=args.redis, key_prefix=prefix,
                        celery_key_prefix=f"{prefix}-celery:",
                        word_list_path=words if Path(words).exists() else None,
                        soft_time_limit=1500, hard_time_limit=1700, visibility_timeout=3600,
                        max_memory_per_child_kb=16_000_000)
    store = redis.Redis.from_url(args.redis)
    store.ping()
    env = bench_worker._env(settings)
    env["PYTHONPATH"] = bench_worker.checkout_path(ROOT)
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="lpbig-") as tmp:
            tmpdir = Path(tmp)
            document = {"document_id": f"{prefix}-doc", "blocks": gen_blocks.generate(args.blocks, seed=0)}
            path = tmpdir / "large.json"
            path.write_text(json.dumps(document, separators=(",", ":"), ensure_ascii=False))
            json_mb = path.stat().st_size / MIB
            print(f"{args.blocks}-block document: {json_mb:.1f} MiB of JSON ({path.stat().st_size} bytes); "
                  f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
            worker, _ = bench_worker.start_worker(settings, 1, tmpdir / "worker.log")
            try:
                with client.Producer(settings) as producer:
                    warm = {"document_id": f"{prefix}-warm", "blocks": gen_blocks.generate(50, seed=1)}
                    producer.submit(warm)
                    producer.get_result(f"{prefix}-warm", timeout=120)
                    memory = WorkerMemory(worker.pid)
                    cli = run_cli(path, settings, env, tmpdir / "result.json")
                    rows.append(("cli: longparser submit FILE --wait", cli, memory.finish()))
                    memory = WorkerMemory(worker.pid)
                    document["document_id"] = f"{prefix}-doc2"
                    library = run_client(document, producer)
                    rows.append(("client: Producer.submit + get_result", library, memory.finish()))
            finally:
                bench_worker.stop_worker(worker)
            payload_keys = list(store.scan_iter(match=f"{prefix}:payload:*"))
            # after the runs: the validated copy made here would otherwise leave the producer's
            # measured growth memory its allocator already holds
            sent_mb, stored_mb = _as_sent(document)
            print(f"the request as the producer sends it: {sent_mb:.1f} MiB of JSON (blocks without their "
                  f"defaults), {stored_mb:.1f} MiB in Redis ({stored_mb / json_mb:.0%} of the document's "
                  "JSON)")
    finally:
        keys = list(store.scan_iter(match=f"{prefix}*", count=1000))
        for start in range(0, len(keys), 1000):
            store.delete(*keys[start:start + 1000])
    print("\n| path | seconds | chunks | worker child idle -> peak MiB | parent growth MiB | "
          "worker MiB | x JSON | x request sent | producer |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, run, mem in rows:
        if "producer_peak_mb" in run:
            peak = run["producer_peak_mb"]
            producer_mb = f"peak RSS {peak:.0f} MiB ({peak / json_mb:.1f}x JSON)"
        else:
            growth = run["producer_growth_mb"]
            producer_mb = (f"submit: +{growth:.0f} MiB ({growth / json_mb:.2f}x JSON) "
                           f"in {run['submit_seconds']:.1f} s")
        print(f"| {name} | {run['seconds']:.1f} | {run['chunks']} | {mem['child_idle_mb']:.0f} -> "
              f"{mem['child_peak_mb']:.0f} | {mem['parent_growth_mb']:.1f} | {mem['worker_mb']:.0f} | "
              f"{mem['worker_mb'] / json_mb:.2f} | {mem['worker_mb'] / sent_mb:.2f} | {producer_mb} |")
    print(f"\nreferenced bytes left after both runs: {len(payload_keys)} keys (deleted once stored)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
