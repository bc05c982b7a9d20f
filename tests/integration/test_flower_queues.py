"""Flower shows the fleet's queues: started as docs/operations.md tells operators
(``python -m worker.flower``) against a real redis-server and a real worker process, its HTTP API
lists the worker, and its queue lengths and Broker page count exactly the messages waiting in
``chunking`` and ``semantic``: under the celery key prefix, on a database other than 0, a
priority sub-list included. The worker stops consuming before the messages are sent (a remote
control command), so they wait and the counts stay put.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from config.settings import Settings
from service.keys import TASK_NAME
from tasks.client import producer_celery
from tests.integration.conftest import (
    SESSION_PREFIX,
    Flower,
    TestRedis,
    WorkerFactory,
    http_get,
    start_flower,
)

# kombu's Redis transport keeps a message sent with priority 6 in the list "<queue>\x06\x166".
PRIORITY = 6
PRIORITY_SUFFIX = f"\x06\x16{PRIORITY}"


@pytest.fixture(scope="module")
def queue_settings(test_redis: TestRedis) -> Settings:
    """A celery key prefix of this module's own, so only the messages sent here are counted."""
    prefix = f"{SESSION_PREFIX}-flower"
    return Settings(broker_url=test_redis.url, result_url=test_redis.url, key_prefix=prefix,
                    celery_key_prefix=f"{prefix}-celery:", word_list_path=None)


class _QueueRows(HTMLParser):
    """The Broker page's queue table: ``{queue name: [its cells]}`` (rows with an ``id``)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[str]] = {}
        self._row: list[str] | None = None
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr" and dict(attrs).get("id"):
            self._row = []
        elif tag == "td" and self._row is not None:
            self._in_cell = True
            self._row.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._in_cell = False
        elif tag == "tr" and self._row:
            self.rows[self._row[0].strip()] = [cell.strip() for cell in self._row[1:]]
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._in_cell and self._row is not None:
            self._row[-1] += data


def broker_page_counts(html: str) -> dict[str, str]:
    """``{queue: messages}`` as the Broker page shows them."""
    parser = _QueueRows()
    parser.feed(html)
    return {name: cells[0] for name, cells in parser.rows.items()}


def flower_json(flower: Flower, path: str) -> Any:
    status, body = http_get(f"{flower.url}{path}", flower.auth)
    assert status == 200, f"GET {path}: HTTP {status}: {body[:300]!r}"
    return json.loads(body)


def test_flower_counts_the_messages_waiting_in_the_fleet_queues(
    queue_settings: Settings, test_redis: TestRedis, log_dir: Path
) -> None:
    settings = queue_settings
    structural, semantic = settings.structural_queue, settings.semantic_queue
    app = producer_celery(settings)
    workers = WorkerFactory(settings, app, log_dir)
    flower: Flower | None = None
    try:
        node = workers.start("flower-queues", queues=f"{structural},{semantic}", concurrency=1).extra["node"]
        flower = start_flower(settings, log_dir, name="flower-queues")

        listed = flower_json(flower, "/api/workers?refresh=1")
        assert node in listed, f"Flower lists {sorted(listed)}"
        assert {q["name"] for q in listed[node]["active_queues"]} == {structural, semantic}

        for queue in (structural, semantic):
            reply = app.control.cancel_consumer(queue, destination=[node], reply=True, timeout=5)
            assert reply == [{node: {"ok": f"no longer consuming from {queue}"}}]
        sends = [(structural, None)] * 4 + [(structural, PRIORITY)] * 2 + [(semantic, None)] * 3
        for index, (queue, priority) in enumerate(sends):
            app.send_task(TASK_NAME, args=[{"document_id": f"flower-waiting-{index}"}], queue=queue,
                          priority=priority)
        prefix = settings.celery_key_prefix
        client = test_redis.client()
        try:  # where they wait: under the prefix, the priority ones in their own list
            lists = [f"{prefix}{structural}", f"{prefix}{structural}{PRIORITY_SUFFIX}", f"{prefix}{semantic}"]
            assert [client.llen(name) for name in lists] == [4, 2, 3]
        finally:
            client.close()

        assert flower_json(flower, "/api/queues/length") == {
            "active_queues": [{"name": structural, "messages": 6}, {"name": semantic, "messages": 3}]}
        status, body = http_get(f"{flower.url}/broker", flower.auth)
        assert status == 200, body[:300]
        assert broker_page_counts(body.decode()) == {structural: "6", semantic: "3"}
    finally:
        if flower is not None:
            flower.process.stop()
        workers.stop_all()
