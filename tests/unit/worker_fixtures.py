"""Fixtures shared by the task, client and CLI tests (imported by those modules).

Isolation: every test gets its own ``LONGPARSER_KEY_PREFIX`` and a fakeredis store, so no test
can read or write a real Redis key; the Celery app runs eagerly; progress updates are captured
instead of being written to a result backend.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest

from config.settings import get_settings
from longparser.resources import Resources
from service.store import ResultStore

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
def isolated_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """No LONGPARSER_* from the shell, a unique key prefix, a fresh settings cache; yields the prefix."""
    for name in list(os.environ):
        if name.startswith("LONGPARSER_"):
            monkeypatch.delenv(name)
    prefix = f"lptest-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("LONGPARSER_KEY_PREFIX", prefix)
    monkeypatch.setenv("LONGPARSER_WORD_LIST_PATH", "")
    get_settings.cache_clear()
    yield prefix
    get_settings.cache_clear()


@pytest.fixture
def store(isolated_settings: str, monkeypatch: pytest.MonkeyPatch) -> ResultStore:
    """A fakeredis-backed store under the test's prefix, used by the task and the client."""
    fake = ResultStore(fakeredis.FakeRedis(), isolated_settings, STORE_TTL)
    import tasks.chunk
    import tasks.client

    monkeypatch.setattr(tasks.chunk, "get_store", lambda settings=None: fake)
    monkeypatch.setattr(tasks.client, "get_store", lambda settings=None: fake)
    return fake


@pytest.fixture
def eager(store: ResultStore, fake_resources: Resources, monkeypatch: pytest.MonkeyPatch) -> Iterator[list]:
    """Eager Celery with captured PROGRESS updates; yields the list of ``(state, meta)`` calls."""
    import tasks.chunk

    calls: list[tuple[str, dict[str, Any]]] = []
    app = tasks.chunk.app
    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    monkeypatch.setattr(tasks.chunk, "get_process_resources", lambda: fake_resources)
    monkeypatch.setattr(tasks.chunk.chunk_document, "update_state",
                        lambda state=None, meta=None, **_: calls.append((state, meta)))
    yield calls
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


class FakeAsyncResult:
    def __init__(self, state: str, info: Any):
        self.state, self.info = state, info


class FakeProducer:
    """Stands in for the client's Celery app: records sends, JSON round-trips the payload like
    the broker would, and (``run=True``) executes the task eagerly."""

    def __init__(self, run: bool = False):
        self.run = run
        self.sent: list[dict[str, Any]] = []
        self.states: dict[str, tuple[str, Any]] = {}

    def send_task(self, name: str, args: list[Any], task_id: str, queue: str) -> None:
        wire_args = json.loads(json.dumps(args))  # the broker carries JSON, nothing else
        self.sent.append({"name": name, "args": wire_args, "task_id": task_id, "queue": queue})
        if self.run:
            from tasks.chunk import chunk_document

            outcome = chunk_document.apply(args=wire_args, task_id=task_id, throw=False)
            self.states[task_id] = (outcome.state, outcome.result)

    def AsyncResult(self, task_id: str) -> FakeAsyncResult:  # Celery's method name
        return FakeAsyncResult(*self.states.get(task_id, ("PENDING", None)))


@pytest.fixture
def producer(store: ResultStore, monkeypatch: pytest.MonkeyPatch) -> FakeProducer:
    """A recording producer app (tasks are not run)."""
    import tasks.client

    fake = FakeProducer()
    monkeypatch.setattr(tasks.client, "producer_app", lambda settings: fake)
    return fake


@pytest.fixture
def running_producer(eager: list, monkeypatch: pytest.MonkeyPatch) -> FakeProducer:
    """A producer whose sends run the real task eagerly against the fake store."""
    import tasks.client

    fake = FakeProducer(run=True)
    monkeypatch.setattr(tasks.client, "producer_app", lambda settings: fake)
    return fake
