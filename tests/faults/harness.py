"""The fault suite's machinery: real ``redis-server`` and ``celery -A worker worker`` processes.

Everything here is started by this module, in its own process group, on free loopback ports,
and stopped by PID (SIGTERM, then SIGKILL of the group) when its scenario ends. Redis runs with
an append-only file (``--appendonly yes``) in a temporary directory, so a restart keeps what was
acknowledged to a client, as a production Redis configured like ``docker/compose.yaml`` would.

A scenario submits documents, breaks something, and measures, for its table row: documents
accepted by ``submit``, documents stored (each key once), documents processed more than once
(task runs per document, from the workers' INFO logs) and seconds from Redis returning to the
last document stored.

``python -m tests.faults.harness restart --code-root DIR`` runs the Redis-restart scenario
against another checkout (the "before" measurement of the fault issue).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from tests.processes import ManagedProcess as Proc
from tests.processes import start_process

REPO_ROOT = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
RUN_LINE = re.compile(r"chunked document (\S+): | document (\S+) refused \(task")

_WORDS = ("ledger", "harbour", "signal", "orchard", "quarry", "lantern", "meadow", "circuit", "glacier",
          "compass", "timber", "voltage", "canyon", "parcel", "furnace", "violet", "beacon", "gravel")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.1, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def make_document(document_id: str, blocks: int, seed: int = 0) -> dict[str, Any]:
    """A structural request of ``blocks`` blocks: a heading every 20 blocks, paragraphs between."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    title = "Intro"
    for index in range(blocks):
        if index % 20 == 0:
            title = f"Section {index // 20 + 1} {rng.choice(_WORDS).title()}"
            kind, text, level = "heading", title, 1
        else:
            words = [rng.choice(_WORDS) for _ in range(rng.randint(15, 60))]
            kind, text, level = "paragraph", " ".join(words).capitalize() + ".", None
        out.append({"block_id": f"b{index}", "type": kind, "text": text, "heading_level": level,
                    "hierarchy_path": [title], "provenance": {"page_number": index // 10 + 1}})
    return {"document_id": document_id, "blocks": out,
            "config": {"max_tokens": 200, "min_tokens": 20, "overlap_blocks": 0}}


# --------------------------------------------------------------------------- processes


def spawn(name: str, argv: list[str], log_dir: Path, *, env: dict[str, str] | None = None,
          cwd: Path = REPO_ROOT) -> Proc:
    return start_process(name, argv, log_dir, env=env, cwd=cwd)


class RedisServer:
    """One ``redis-server`` on a free port with AOF in its own directory; restartable."""

    def __init__(self, name: str, base_dir: Path, log_dir: Path, *, extra: list[str] | None = None,
                 port: int | None = None) -> None:
        self.name, self.port, self.log_dir = name, port or free_port(), log_dir
        self.dir = base_dir / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.extra = extra or []
        self.proc: Proc | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self, timeout: float = 2.0) -> redis.Redis:
        return redis.Redis(port=self.port, socket_connect_timeout=timeout, socket_timeout=timeout)

    def answers(self) -> bool:
        try:
            client = self.client(0.5)
            try:
                # LOADING (AOF replay) answers PING but refuses data commands: wait for that too.
                return bool(client.ping()) and client.info("persistence").get("loading") == 0
            finally:
                client.close()
        except (redis.RedisError, OSError):
            return False

    def start(self) -> RedisServer:
        argv = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
                "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--maxmemory-policy",
                "noeviction", *self.extra]
        self.proc = spawn(f"redis-{self.name}", argv, self.log_dir)
        wait_until(lambda: self.answers() or not self.proc.alive(), 20, what=f"redis {self.name}")
        if not self.proc.alive():
            raise RuntimeError(f"redis-server {self.name} exited:\n{self.proc.log_text()[-2000:]}")
        return self

    def shutdown(self) -> None:
        """Stop like an operator would (SHUTDOWN: AOF flushed), and wait for the process."""
        assert self.proc is not None
        with contextlib.suppress(redis.RedisError, OSError):
            self.client().shutdown()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.popen.wait(timeout=10)
        self.proc.stop()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(grace_s=5)


def settings_env(values: dict[str, Any], **overrides: str) -> dict[str, str]:
    """The environment of a worker or producer: only these LONGPARSER_* values."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LONGPARSER_", "FLOWER_"))}
    for name, value in values.items():
        text = "true" if value is True else "false" if value is False else str(value)
        env[f"LONGPARSER_{name.upper()}"] = text
    env.update(overrides)
    env.update({"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"})
    return env


def start_worker(name: str, values: dict[str, Any], log_dir: Path, *, concurrency: int = 2,
                 cwd: Path = REPO_ROOT, ready: Callable[[Proc], bool] | None = None,
                 argv_prefix: list[str] | None = None, queues: str | None = None) -> Proc:
    """``celery -A worker worker`` (prefork, events on), waiting until its log says it is ready.

    ``queues`` (``-Q``): the structural queue unless given.

    ``argv_prefix`` runs it through another command that execs it (``ip netns exec NS``), so the
    process started is still the worker's parent.
    """
    node = f"{name}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
    argv = [*(argv_prefix or []), CELERY, "-A", "worker", "worker", "-P", "prefork", "-c", str(concurrency),
            "-n", node, "-Q", queues or str(values.get("structural_queue", "chunking")), "-E", "-l", "INFO",
            "--without-gossip", "--without-mingle", "--without-heartbeat"]
    env = settings_env(values)
    # That checkout's packages first, its producer client too (another one may be installed).
    env["PYTHONPATH"] = os.pathsep.join([str(cwd), str(cwd / "client")])
    proc = spawn(f"worker-{name}", argv, log_dir, env=env, cwd=cwd)
    proc.extra["node"] = node
    wait_until(lambda: (not proc.alive()) or " ready." in proc.log_text(), 60, 0.1, what=f"worker {name}")
    if not proc.alive():
        raise RuntimeError(f"worker {name} exited:\n{proc.log_text()[-3000:]}")
    return proc


# --------------------------------------------------------------------------- observation


class StoreWatcher:
    """Records when each document's result key first appears (MGET every 20 ms, in a thread).

    Reads through ``client_factory`` so it follows a Sentinel failover, and keeps polling across
    an outage (errors are counted, not raised).
    """

    def __init__(self, client_factory: Callable[[], Any], key_for: Callable[[str], str]) -> None:
        self.client_factory, self.key_for = client_factory, key_for
        self.wanted: list[str] = []
        self.seen: dict[str, float] = {}
        self.errors = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True, name="store-watcher")

    def want(self, document_id: str) -> None:
        with self._lock:
            self.wanted.append(document_id)

    def _run(self) -> None:
        client = self.client_factory()
        while not self._stop.is_set():
            with self._lock:
                pending = [d for d in self.wanted if d not in self.seen]
            if pending:
                try:
                    values = client.mget([self.key_for(d) for d in pending])
                except (redis.RedisError, OSError):
                    self.errors += 1
                    time.sleep(0.2)
                    continue
                now = time.monotonic()
                for document_id, value in zip(pending, values, strict=True):
                    if value is not None:
                        self.seen.setdefault(document_id, now)
            time.sleep(0.02)

    def start(self) -> StoreWatcher:
        self._thread.start()
        return self

    def wait_all(self, document_ids: list[str], timeout: float) -> bool:
        with contextlib.suppress(TimeoutError):
            wait_until(lambda: all(d in self.seen for d in document_ids), timeout, 0.1,
                       what="documents stored")
        return all(d in self.seen for d in document_ids)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def completion_events(client: Any, prefix: str) -> Counter[str]:
    """How many completion events each document has in ``P:events`` (the whole stream: a
    scenario stores far fewer records than its cap)."""
    from service.keys import events_key

    return Counter(fields[b"document_id"].decode() for _, fields in client.xrange(events_key(prefix)))


def events_missing(client: Any, prefix: str, document_ids: list[str]) -> list[str]:
    """Stored documents without a completion event (each record's SET and its XADD are one
    MULTI/EXEC, so this is empty unless an event was lost)."""
    counts = completion_events(client, prefix)
    return sorted(d for d in set(document_ids) if counts[d] == 0)


def diagnose(client: Any, prefix: str, watcher: StoreWatcher, accepted: list[str],
             workers: list[Proc]) -> str:
    """Where the missing documents are: held (unacked), queued, or nowhere; for failure messages."""
    missing = sorted(set(accepted) - set(watcher.seen))
    try:
        unacked = client.hlen(f"{prefix}-celery:unacked")
        queued = client.llen(f"{prefix}-celery:chunking")
    except (redis.RedisError, OSError) as exc:
        unacked = queued = f"unknown ({exc})"
    alive = {proc.name: proc.alive() for proc in workers}
    return (f"missing {len(missing)} {missing[:5]}; unacked messages {unacked}; queued {queued}; "
            f"workers alive {alive}; watcher errors {watcher.errors}")


def task_runs(workers: list[Proc]) -> Counter:
    """Task runs per document id, from the workers' INFO lines (stored or refused)."""
    runs: Counter = Counter()
    for proc in workers:
        for match in RUN_LINE.finditer(proc.log_text()):
            runs[match.group(1) or match.group(2)] += 1
    return runs


@dataclass
class Row:
    """One line of the fault table."""

    scenario: str
    submitted: int
    stored: int
    more_than_once: int
    back_to_last_stored_s: float | None
    notes: str = ""

    def line(self) -> str:
        back = "-" if self.back_to_last_stored_s is None else f"{self.back_to_last_stored_s:.1f}"
        return (f"| {self.scenario} | {self.submitted} | {self.stored} | {self.more_than_once} | {back} | "
                f"{self.notes} |")


RESULTS_FILE_ENV = "LONGPARSER_FAULTS_RESULTS"


# A scenario's reporter (the ``report`` fixture): prints, records and tables its row.
Report = Callable[[Row], None]


def record(row: Row) -> None:
    """Print the row and append it to ``$LONGPARSER_FAULTS_RESULTS`` (JSON lines) when set."""
    print(f"\nFAULT TABLE ROW {row.line()}", flush=True)
    target = os.environ.get(RESULTS_FILE_ENV)
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps(row.__dict__) + "\n")


# --------------------------------------------------------------------------- producer process


PRODUCER_SCRIPT = r"""
import json, sys, time
documents, accepted_path = json.load(open(sys.argv[1])), sys.argv[2]
delay = float(sys.argv[3])
from config.settings import Settings
import tasks.client as client
producer = client.Producer(Settings()) if hasattr(client, "Producer") else None
with open(accepted_path, "a") as out:
    for document in documents:
        try:
            if producer is not None:
                handle = producer.submit(document)
            else:
                handle = client.submit(document, settings=Settings())
        except BaseException as exc:
            out.write(json.dumps({"error": type(exc).__name__, "message": str(exc)[:300],
                                  "document_id": document["document_id"]}) + "\n")
            out.flush()
            raise
        out.write(json.dumps({"document_id": handle.document_id, "at": time.time()}) + "\n")
        out.flush()
        time.sleep(delay)
"""


def start_producer(documents: list[dict[str, Any]], values: dict[str, Any], work_dir: Path, log_dir: Path,
                   *, delay: float = 0.2, cwd: Path = REPO_ROOT) -> tuple[Proc, Path]:
    """A separate producer process submitting ``documents`` one by one (``delay`` apart)."""
    docs_path, accepted = work_dir / f"docs-{uuid.uuid4().hex[:6]}.json", work_dir / "accepted.jsonl"
    docs_path.write_text(json.dumps(documents))
    argv = [sys.executable, "-c", PRODUCER_SCRIPT, str(docs_path), str(accepted), str(delay)]
    env = settings_env(values)
    env["PYTHONPATH"] = str(cwd)
    return spawn("producer", argv, log_dir, env=env, cwd=cwd), accepted


def read_accepted(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """Document ids ``submit`` returned for, and the errors it raised."""
    accepted, errors = [], []
    if path.exists():
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if "error" in entry:
                errors.append(entry)
            else:
                accepted.append(entry["document_id"])
    return accepted, errors


# --------------------------------------------------------------------------- the restart scenario


@contextlib.contextmanager
def workspace() -> Iterator[tuple[Path, Path]]:
    with tempfile.TemporaryDirectory(prefix="lp-faults-") as tmp:
        base = Path(tmp)
        logs = base / "logs"
        logs.mkdir()
        yield base, logs


def base_values(url: str, prefix: str, **more: Any) -> dict[str, Any]:
    return {"broker_url": url, "result_url": url, "key_prefix": prefix,
            "celery_key_prefix": f"{prefix}-celery:", "word_list_path": "", "language_id": False, **more}


def restart_scenario(base: Path, logs: Path, *, code_root: Path = REPO_ROOT, documents: int = 40,
                     blocks: int = 2000, down_s: float = 3.0, after: int = 6, wait_s: float = 150.0,
                     producer_delay: float = 0.15) -> tuple[Row, dict[str, Any]]:
    """Redis SHUTDOWN mid-burst while the producer is still submitting, back ``down_s`` later."""
    server = RedisServer("main", base, logs).start()
    prefix = f"lpfault-{uuid.uuid4().hex[:6]}"
    values = base_values(server.url, prefix)
    workers: list[Proc] = []
    producer: Proc | None = None
    watcher = StoreWatcher(lambda: server.client(5), lambda d: f"{prefix}:result:{d}").start()
    try:
        workers.append(start_worker("restart", values, logs, cwd=code_root))
        docs = [make_document(f"{prefix}-d{i:03d}", blocks, seed=i) for i in range(documents)]
        producer, accepted_path = start_producer(docs, values, base, logs, delay=producer_delay,
                                                 cwd=code_root)
        wait_until(lambda: len(read_accepted(accepted_path)[0]) >= after or not producer.alive(), 60,
                   what=f"{after} submissions")
        server.shutdown()
        time.sleep(down_s)
        server.start()
        back = time.monotonic()
        with contextlib.suppress(subprocess.TimeoutExpired):
            producer.popen.wait(timeout=120)
        accepted, errors = read_accepted(accepted_path)
        for document_id in accepted:
            watcher.want(document_id)
        watcher.wait_all(accepted, wait_s)
        stored = [d for d in accepted if d in watcher.seen]
        keys = sorted(k.decode() for k in server.client().scan_iter(match=f"{prefix}:result:*", count=1000))
        runs = task_runs(workers)
        last = max((watcher.seen[d] for d in stored), default=None)
        row = Row("Redis restarted mid-burst (SHUTDOWN, back after 3 s), producer still submitting",
                  len(accepted), len(stored), sum(1 for d in accepted if runs[d] > 1),
                  None if last is None else max(0.0, last - back))
        details = {"accepted": accepted, "missing": sorted(set(accepted) - set(stored)),
                   "events_missing": events_missing(server.client(), prefix, stored),
                   "producer_errors": errors, "producer_exit": producer.popen.returncode,
                   "keys": keys, "runs": dict(runs), "producer_log_tail": producer.log_text()[-1500:]}
        return row, details
    finally:
        watcher.stop()
        if producer is not None:
            producer.stop(grace_s=2)
        for proc in workers:
            proc.stop()
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run one fault scenario against a checkout.")
    parser.add_argument("scenario", choices=["restart"])
    parser.add_argument("--code-root", type=Path, default=REPO_ROOT)
    parser.add_argument("--wait", type=float, default=180.0, help="seconds to wait for stored documents")
    parser.add_argument("--keep-logs", type=Path, help="copy the process logs here")
    args = parser.parse_args(argv)
    with workspace() as (base, logs):
        started = time.monotonic()
        row, details = restart_scenario(base, logs, code_root=args.code_root, wait_s=args.wait)
        print(row.line())
        print(json.dumps({k: v for k, v in details.items() if k not in ("runs", "keys")}, indent=2))
        print(f"scenario time {time.monotonic() - started:.0f} s")
        worker_log = (logs / "worker-restart.log").read_text(errors="replace")
        for pattern in ("reject requeue", "Restoring", "unacknowledged", "Traceback"):
            print(f"worker log lines with {pattern!r}: {worker_log.count(pattern)}")
        if args.keep_logs:
            shutil.copytree(logs, args.keep_logs, dirs_exist_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
