"""Integration harness: a test Redis, real ``celery -A worker worker`` processes, an event log.

Redis (the choice is printed in the pytest header and again at the end of the run):

1. ``LONGPARSER_TEST_REDIS_URL`` set: that server, on the tests' own database (the URL's db,
   else 15); it must answer (asked for by name, it is required);
2. else ``redis-server`` from PATH, started on a free loopback port in a temp dir without
   persistence: by default the suite never touches a Redis it did not start;
3. else the embedded default of ``make run`` (fakeredis's TCP server, in this process).

Isolation: every key the suite writes (our store keys and Celery's queues, unacked sets and
task metas) carries a per-session prefix ``lptest-<uid>``; teardown deletes exactly those keys,
never FLUSHDB/FLUSHALL. Worker, Flower and redis-server processes run in their own process
groups and are always stopped (fixture finalizers: SIGTERM, wait, SIGKILL to the group); their
logs live in a temp dir and are attached to the report of any failing integration test.
"""

from __future__ import annotations

import base64
import functools
import os
import random
import shutil
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
import redis

from cli.demo import embedded_redis, redis_answers
from config.settings import Settings
from tests.processes import ManagedProcess, start_process

REPO_ROOT = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))
TEST_REDIS_ENV = "LONGPARSER_TEST_REDIS_URL"
DEFAULT_TEST_DB = 15
SESSION_PREFIX = f"lptest-{uuid.uuid4().hex[:10]}"
WORKER_READY_TIMEOUT_S = 60.0
_STARTED: list[ManagedProcess] = []  # every process this session started, for failure reports


# --------------------------------------------------------------------------- Redis choice


def with_test_db(url: str) -> str:
    """``url`` with the suite's own database when it names none: never db 0 by accident."""
    url = url.rstrip("/")
    tail = url.rsplit("/", 1)[-1]
    return url if "/" in url.split("//", 1)[-1] and tail.isdigit() else f"{url}/{DEFAULT_TEST_DB}"


RedisKind = Literal["configured", "redis-server", "embedded"]


def choose_redis(configured_url: str | None, redis_server: str | None) -> RedisKind:
    """The server named by ``LONGPARSER_TEST_REDIS_URL``, else one the suite starts."""
    if configured_url:
        return "configured"
    return "redis-server" if redis_server else "embedded"


@functools.cache
def redis_choice() -> RedisKind:
    """Which Redis the suite uses; decided once per session, so header and fixtures agree."""
    return choose_redis(os.environ.get(TEST_REDIS_ENV), shutil.which("redis-server"))


def describe_redis_choice() -> str:
    """One line for the pytest header and the end of the run: which Redis the tests write to."""
    choice = redis_choice()
    if choice == "configured":
        return (f"integration redis: {with_test_db(os.environ[TEST_REDIS_ENV])} from {TEST_REDIS_ENV} "
                f"(keys under {SESSION_PREFIX}*, deleted at the end)")
    if choice == "redis-server":
        server = shutil.which("redis-server")
        return (f"integration redis: a redis-server the tests start on a free port ({server}); no other "
                f"Redis is touched ({TEST_REDIS_ENV} names one to use instead)")
    return ("integration redis: no redis-server on PATH: the embedded default (cli.demo.embedded_redis, "
            f"fakeredis TCP); no other Redis is touched ({TEST_REDIS_ENV} names one to use instead)")


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --------------------------------------------------------------------------- processes


def spawn(name: str, argv: list[str], env: dict[str, str], log_dir: Path) -> ManagedProcess:
    """Start ``argv`` in a new session (its own process group), output to ``log_dir/name.log``."""
    proc = start_process(name, argv, log_dir, env=env)
    _STARTED.append(proc)
    return proc


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.1, what: str = "") -> Any:
    """Poll ``predicate`` until it returns a truthy value; fail the test on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what or predicate}")
        time.sleep(interval)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Attach the tail of every process log to a failing test's report."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for proc in _STARTED:
            tail = "\n".join(proc.log_text().splitlines()[-80:])
            report.sections.append((f"log of {proc.name} ({proc.log_path})", tail))


# --------------------------------------------------------------------------- Redis fixtures


@dataclass(frozen=True)
class TestRedis:
    """The Redis the suite talks to: ``url`` includes the db number."""

    __test__ = False  # not a test class
    kind: RedisKind
    url: str

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_connect_timeout=2, socket_timeout=10)


def _start_redis_server(tmp: Path) -> tuple[ManagedProcess, str]:
    port = free_port()
    argv = [shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(tmp)]
    proc = spawn("redis-server", argv, dict(os.environ), tmp)
    url = f"redis://127.0.0.1:{port}/{DEFAULT_TEST_DB}"
    wait_until(lambda: redis_answers(url) or not proc.alive(), 10, what="redis-server to answer")
    if not proc.alive():
        pytest.fail(f"redis-server exited: {proc.log_text()}")
    return proc, url


def _start_embedded() -> tuple[Callable[[], None], str]:
    """The embedded default of ``make run`` (:func:`cli.demo.embedded_redis`), in this process."""
    context = embedded_redis()
    url = context.__enter__()
    return (lambda: context.__exit__(None, None, None)), f"{url.rsplit('/', 1)[0]}/{DEFAULT_TEST_DB}"


@pytest.fixture(scope="package")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("integration-logs")


@pytest.fixture(scope="package")
def test_redis(log_dir: Path) -> Iterator[TestRedis]:
    """The suite's Redis (see module docstring); only this session's keys are deleted after."""
    choice = redis_choice()
    stop: Callable[[], None] = lambda: None  # noqa: E731
    if choice == "configured":
        url = with_test_db(os.environ[TEST_REDIS_ENV])
        if not redis_answers(url):
            pytest.fail(f"{TEST_REDIS_ENV}={url} does not answer PING (unset it: the suite starts its own)")
    elif choice == "redis-server":
        proc, url = _start_redis_server(log_dir)
        stop = proc.stop
    else:
        stop, url = _start_embedded()
    target = TestRedis(choice, url)
    try:
        yield target
    finally:
        delete_prefixed(target.client(), SESSION_PREFIX)
        stop()


def delete_prefixed(client: redis.Redis, prefix: str) -> int:
    """Delete every key starting with ``prefix`` (SCAN, never FLUSH); returns how many."""
    keys = list(client.scan_iter(match=f"{prefix}*", count=500))
    for start in range(0, len(keys), 500):
        client.delete(*keys[start:start + 500])
    return len(keys)


# --------------------------------------------------------------------------- settings / apps


@pytest.fixture(scope="package")
def lp_settings(test_redis: TestRedis) -> Settings:
    """Settings shared by the test process (client, control, events) and every worker."""
    return Settings(
        broker_url=test_redis.url,
        result_url=test_redis.url,
        key_prefix=SESSION_PREFIX,
        celery_key_prefix=f"{SESSION_PREFIX}-celery:",
        word_list_path=None,  # host-independent scoring; results are compared without scores anyway
    )


def settings_env(settings: Settings, **overrides: str) -> dict[str, str]:
    """The environment that makes a subprocess build exactly ``settings`` (plus ``overrides``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LONGPARSER_", "FLOWER_"))}
    for name, value in settings.model_dump().items():
        if value is None:
            text = ""  # the settings read an empty variable as None
        elif isinstance(value, bool):
            text = "true" if value else "false"
        else:
            text = str(value)
        env[f"LONGPARSER_{name.upper()}"] = text
    env.update(overrides)
    env.update({"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"})
    return env


@pytest.fixture(scope="package")
def celery_app(lp_settings: Settings) -> Any:
    """A producer-side Celery app configured like the workers (control commands, events)."""
    from tasks.client import producer_celery

    return producer_celery(lp_settings)


# --------------------------------------------------------------------------- events


class EventLog:
    """Collects every Celery event of the session in a background receiver thread."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._receiver: Any = None
        self._thread = threading.Thread(target=self._run, name="celery-events", daemon=True)

    def _on_event(self, event: dict[str, Any]) -> None:
        with self._lock:
            self.events.append(dict(event))

    def _run(self) -> None:
        # ONE long capture: each new capture would re-subscribe, and fanout events published
        # between two subscriptions are lost. should_stop is checked once per second.
        with self.app.connection_for_read() as conn:
            self._receiver = self.app.events.Receiver(conn, handlers={"*": self._on_event})
            self._receiver.capture(limit=None, timeout=None, wakeup=False)

    def start(self) -> None:
        """Start the thread and block until it provably receives (a probe event round trip)."""
        self._thread.start()
        probe = f"probe-{uuid.uuid4().hex}"
        with self.app.events.default_dispatcher() as dispatcher:
            def seen() -> bool:
                dispatcher.send("worker-probe", probe=probe)
                return any(e.get("probe") == probe for e in self.snapshot())
            wait_until(seen, 10, interval=0.2, what="the event receiver to subscribe")

    def stop(self) -> None:
        if self._receiver is not None:
            self._receiver.should_stop = True
        self._thread.join(timeout=5)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)

    def for_task(self, task_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        """Events of one task, optionally of one type (``task-received``, ...), in arrival order."""
        return [e for e in self.snapshot()
                if e.get("uuid") == task_id and (kind is None or e.get("type") == kind)]

    def wait_for(self, task_id: str, kind: str, count: int = 1, timeout: float = 30) -> list[dict[str, Any]]:
        """Block until ``count`` events of ``kind`` arrived for ``task_id``; return them."""
        return wait_until(lambda: len(self.for_task(task_id, kind)) >= count and self.for_task(task_id, kind),
                          timeout, interval=0.05, what=f"{count} {kind} event(s) of {task_id}")


@pytest.fixture(scope="package")
def event_log(celery_app: Any) -> Iterator[EventLog]:
    log = EventLog(celery_app)
    log.start()
    try:
        yield log
    finally:
        log.stop()


# --------------------------------------------------------------------------- workers / Flower


def node_name(name: str) -> str:
    return f"{name}.{SESSION_PREFIX}@{socket.gethostname()}"


class WorkerFactory:
    """Starts ``celery -A worker worker`` processes and stops all of them at teardown."""

    def __init__(self, settings: Settings, app: Any, log_dir: Path) -> None:
        self.settings, self.app, self.log_dir = settings, app, log_dir
        self.started: list[ManagedProcess] = []

    def start(self, name: str, *, queues: str = "chunking", concurrency: int = 2,
              env: dict[str, str] | None = None) -> ManagedProcess:
        node = node_name(name)
        argv = [CELERY, "-A", "worker", "worker", "-P", "prefork", "-c", str(concurrency), "-n", node,
                "-Q", queues, "-E", "-l", "INFO", "--without-gossip", "--without-mingle",
                "--without-heartbeat"]
        proc = spawn(f"worker-{name}", argv, settings_env(self.settings, **(env or {})), self.log_dir)
        proc.extra["node"] = node
        self.started.append(proc)
        self.wait_ready(proc)
        return proc

    def wait_ready(self, proc: ManagedProcess) -> None:
        node = proc.extra["node"]

        def ready() -> bool:
            if not proc.alive():
                pytest.fail(f"worker {node} exited with {proc.popen.returncode}:\n{proc.log_text()[-4000:]}")
            return bool(self.app.control.ping(destination=[node], timeout=0.5))

        wait_until(ready, WORKER_READY_TIMEOUT_S, interval=0.2, what=f"worker {node} to answer ping")

    def pool_pids(self, proc: ManagedProcess) -> list[int]:
        """PIDs of the worker's pool children (``inspect().stats()``), [] when it does not answer."""
        node = proc.extra["node"]
        stats = self.app.control.inspect(destination=[node], timeout=1.0, limit=1).stats() or {}
        return list(stats.get(node, {}).get("pool", {}).get("processes", []))

    def active_pid(self, proc: ManagedProcess, task_id: str) -> int | None:
        """PID of the pool child running ``task_id`` (``inspect().active()``), else None."""
        node = proc.extra["node"]
        # safe=True: the reply carries the args' short repr, not the (possibly MB-sized) payload.
        active = self.app.control.inspect(destination=[node], timeout=1.0, limit=1).active(safe=True) or {}
        pids = [t.get("worker_pid") for t in active.get(node, []) if t.get("id") == task_id]
        return pids[0] if pids and pids[0] else None

    def stop_all(self) -> None:
        for proc in self.started:
            proc.stop()


@pytest.fixture(scope="module")
def workers(
    lp_settings: Settings, celery_app: Any, log_dir: Path, event_log: EventLog
) -> Iterator[WorkerFactory]:
    """Start workers with ``workers.start(name, ...)``; all are stopped when the module ends.

    Depends on ``event_log`` so that the receiver is subscribed before any task runs.
    """
    factory = WorkerFactory(lp_settings, celery_app, log_dir)
    try:
        yield factory
    finally:
        factory.stop_all()


def http_get(url: str, auth: tuple[str, str] | None = None, timeout: float = 5) -> tuple[int, bytes]:
    """GET ``url`` (loopback only) with optional basic auth; returns (status, body)."""
    request = urllib.request.Request(url)
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@dataclass(frozen=True)
class Flower:
    """A running Flower: ``url`` of its HTTP server and the basic-auth pair."""

    url: str
    auth: tuple[str, str]
    process: ManagedProcess


def start_flower(settings: Settings, log_dir: Path, name: str = "flower") -> Flower:
    """Flower as docs/operations.md starts it (``python -m worker.flower``), on a free port against
    ``settings``' Redis, with basic auth; the caller stops ``flower.process``."""
    port, auth = free_port(), ("lptest", uuid.uuid4().hex)
    env = settings_env(settings, FLOWER_BASIC_AUTH=f"{auth[0]}:{auth[1]}")
    argv = [sys.executable, "-m", "worker.flower", f"--port={port}", "--address=127.0.0.1"]
    proc = spawn(name, argv, env, log_dir)
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if not proc.alive():
            pytest.fail(f"flower exited: {proc.log_text()[-4000:]}")
        try:
            return http_get(f"{url}/healthcheck", auth, timeout=1)[0] == 200
        except OSError:
            return False

    try:
        wait_until(up, 30, interval=0.2, what="flower to serve /healthcheck")
    except BaseException:
        proc.stop()
        raise
    return Flower(url, auth, proc)


@pytest.fixture(scope="module")
def flower(lp_settings: Settings, log_dir: Path) -> Iterator[Flower]:
    """Flower (:func:`start_flower`) against the test Redis."""
    running = start_flower(lp_settings, log_dir)
    try:
        yield running
    finally:
        running.process.stop()


# --------------------------------------------------------------------------- documents

_WORDS = ("ledger", "harbour", "signal", "orchard", "quarry", "lantern", "meadow", "circuit", "glacier",
          "compass", "timber", "voltage", "canyon", "parcel", "furnace", "violet", "beacon", "gravel")


def _sentence(rng: Any, n_words: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(n_words)]
    return " ".join(words).capitalize() + "."


def make_document(
    document_id: str, *, sections: int = 3, paragraphs: int = 4, seed: int = 0
) -> dict[str, Any]:
    """A deterministic structural ChunkRequest dict: per section a heading and ``paragraphs``.

    Block ids are ``<document_id>-b<i>``; four blocks per page. Paragraph lengths vary (20-90
    words) so that packing produces several chunks per section.
    """
    rng = random.Random(seed)
    blocks: list[dict[str, Any]] = []

    def add(kind: str, text: str, path: list[str], level: int | None = None) -> None:
        index = len(blocks)
        blocks.append({
            "block_id": f"{document_id}-b{index}", "type": kind, "text": text, "order_index": index,
            "heading_level": level, "hierarchy_path": path,
            "provenance": {"source_file": f"{document_id}.pdf", "page_number": index // 4 + 1},
            "confidence": {"overall": 0.9},
        })

    for s in range(sections):
        title = f"Section {s + 1} {rng.choice(_WORDS).title()}"
        add("heading", title, [title], 1)
        for _ in range(paragraphs):
            add("paragraph", " ".join(_sentence(rng, 10) for _ in range(rng.randint(2, 9))), [title])
    return {"document_id": document_id, "blocks": blocks,
            "config": {"max_tokens": 120, "min_tokens": 20, "overlap_blocks": 0}}


def chunk_signature(result: Any) -> list[tuple[Any, ...]]:
    """What must be identical between a worker's stored result and the direct engine call.

    Quality scores are left out on purpose: the worker scores with its own resources
    (language ID), the direct call in the test runs without them.
    """
    return [(c.chunk_id, c.chunk_type, c.text, tuple(c.block_ids), tuple(c.page_numbers),
             tuple(c.section_path)) for c in result.chunks]


def result_view(result: Any) -> dict[str, Any]:
    """What every path of one request must agree on (``test_path_equivalence.py``, the Node.js
    producer): each chunk's id, type, text, ``embed_text``, token count, block ids, pages and
    section path, and the config the result says it applied. Quality scores are left out: they
    are no part of the request's meaning, and the processes score with their own resources."""
    return {
        "document_id": result.document_id,
        "chunks": [(c.chunk_id, c.chunk_type, c.text, c.embed_text, c.token_count, tuple(c.block_ids),
                    tuple(c.page_numbers), tuple(c.section_path)) for c in result.chunks],
        "config": result.stats.config,
        "token_counter": result.stats.token_counter,
    }
