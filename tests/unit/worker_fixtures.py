"""Fixtures shared by the task, client and CLI tests (imported by those modules).

Isolation: every test gets its own ``LONGPARSER_KEY_PREFIX`` and a fakeredis store, so no test
can read or write a real Redis key. The task runs with a :class:`WorkerContext` the test builds
(what ``worker_process_init`` builds in a worker) and eagerly; progress updates are captured
instead of being written to a result backend; the producer runs on a recording fake app.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest
import redis.exceptions

from config.settings import Settings, get_settings
from longparser.resources import Resources
from service.store import ResultStore
from tasks.client import Producer
from worker.context import WorkerContext

STORE_TTL = 600


def payload(document_id: str = "doc-1", **config: Any) -> dict[str, Any]:
    """A three-block request: heading + paragraph on page 1, paragraph on page 2."""
    return {
        "document_id": document_id,
        "blocks": [
            {"block_id": "h1", "type": "heading", "text": "Results", "hierarchy_path": ["Results"],
             "provenance": {"page_number": 1}},
            {"block_id": "p1", "type": "paragraph", "text": "The turbine produced more power this year.",
             "hierarchy_path": ["Results"], "provenance": {"page_number": 1}},
            {"block_id": "p2", "type": "paragraph", "text": "Output rose in every month of the winter.",
             "hierarchy_path": ["Results"], "provenance": {"page_number": 2}},
        ],
        "config": {"min_tokens": 0, "max_tokens": 12, "overlap_blocks": 0, **config},
    }


@pytest.fixture
def isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[str]:
    """No LONGPARSER_* from the shell (nor a .env), a unique key prefix, a fresh settings cache;
    yields the prefix."""
    for name in list(os.environ):
        if name.startswith("LONGPARSER_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no .env of the checkout is read
    prefix = f"lptest-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("LONGPARSER_KEY_PREFIX", prefix)
    monkeypatch.setenv("LONGPARSER_WORD_LIST_PATH", "")
    monkeypatch.setenv("LONGPARSER_STORE_RETRY_WINDOW", "1")
    monkeypatch.setenv("LONGPARSER_SUBMIT_RETRY_WINDOW", "1")
    monkeypatch.setenv("LONGPARSER_PROGRESS_MIN_BLOCKS", "0")  # every document reports progress here
    get_settings.cache_clear()
    yield prefix
    get_settings.cache_clear()


@pytest.fixture
def settings(isolated_settings: str) -> Settings:
    """The test's settings (the process's, read from the isolated environment)."""
    return get_settings()


@pytest.fixture
def store(settings: Settings) -> ResultStore:
    """A fakeredis-backed store under the test's prefix, shared by the task and the client."""
    return ResultStore(fakeredis.FakeRedis(), settings.key_prefix, STORE_TTL)


@pytest.fixture
def context(settings: Settings, store: ResultStore, fake_resources: Resources) -> WorkerContext:
    """What ``worker_process_init`` builds in a worker child, with fakes inside."""
    return WorkerContext(settings=settings, store=store, resources=fake_resources)


@pytest.fixture
def eager(context: WorkerContext, monkeypatch: pytest.MonkeyPatch) -> Iterator[list]:
    """Eager Celery with the test's context and captured PROGRESS updates; yields the list of
    ``(state, meta)`` calls."""
    import tasks.chunk

    calls: list[tuple[str, dict[str, Any]]] = []
    app = tasks.chunk.app
    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates, app.context)
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    app.context = context
    monkeypatch.setattr(tasks.chunk.chunk_document, "update_state",
                        lambda state=None, meta=None, **_: calls.append((state, meta)))
    # No result backend in unit tests (eager Celery would store failure states there).
    monkeypatch.setattr(tasks.chunk.chunk_document, "store_errors_even_if_ignored", False)
    yield calls
    app.conf.task_always_eager, app.conf.task_eager_propagates, app.context = saved


class FailingDeletes:
    """A Redis client whose DELs fail (Redis away for that one command); the rest goes through."""

    def __init__(self, inner: Any):
        self.inner = inner

    def delete(self, *keys: Any) -> Any:
        raise redis.exceptions.ConnectionError("Connection refused (simulated)")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class FakeAsyncResult:
    def __init__(self, state: str, info: Any):
        self.state, self.info = state, info


class FakeApp:
    """Stands in for the producer's Celery app: records sends, JSON round-trips the payload like
    the broker would, and (``run=True``) executes the task eagerly."""

    def __init__(self, run: bool = False):
        self.run = run
        self.sent: list[dict[str, Any]] = []
        self.states: dict[str, tuple[str, Any]] = {}
        self.failures: list[BaseException] = []  # raised by the next sends, in order

    def send_task(self, name: str, args: list[Any], task_id: str, queue: str, **options: Any) -> None:
        if self.failures:
            raise self.failures.pop(0)
        wire_args = json.loads(json.dumps(args))  # the broker carries JSON, nothing else
        self.sent.append({"name": name, "args": wire_args, "task_id": task_id, "queue": queue})
        if self.run:
            from tasks.chunk import chunk_document

            outcome = chunk_document.apply(args=wire_args, task_id=task_id, throw=False)
            self.states[task_id] = (outcome.state, outcome.result)

    def AsyncResult(self, task_id: str) -> FakeAsyncResult:  # Celery's method name
        return FakeAsyncResult(*self.states.get(task_id, ("PENDING", None)))


@pytest.fixture
def fake_app() -> FakeApp:
    return FakeApp()


@pytest.fixture
def producer(settings: Settings, store: ResultStore, fake_app: FakeApp) -> Producer:
    """A producer on the recording fake app (tasks are not run) and the test's store."""
    return Producer(settings, app=fake_app, store=store)


@pytest.fixture
def running_producer(settings: Settings, store: ResultStore, eager: list) -> Producer:
    """A producer whose sends run the real task eagerly against the test's store."""
    return Producer(settings, app=FakeApp(run=True), store=store)
