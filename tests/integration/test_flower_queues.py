"""Flower shows the fleet's queues: started as docs/operations.md tells operators
(``python -m worker.flower``) against a real redis-server and a real worker process, its HTTP API
lists the worker, and its queue lengths and Broker page count exactly the messages waiting in
``chunking`` and ``semantic``: under the celery key prefix, on a database other than 0, a
priority sub-list included. The worker stops consuming before the messages are sent (a remote
control command), so they wait and the counts stay put.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import redis

from config.settings import Settings
from service.keys import TASK_NAME
from tasks.client import producer_celery
from tests.integration.conftest import (
    SESSION_PREFIX,
    Flower,
    TestRedis,
    WorkerFactory,
    free_port,
    http_get,
    spawn,
    start_flower,
    wait_until,
)

# kombu's Redis transport keeps a message sent with priority 6 in the list "<queue>\x06\x166".
PRIORITY = 6
PRIORITY_SUFFIX = f"\x06\x16{PRIORITY}"
SENTINEL_MASTER = "lpmaster"


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


def check_flower_counts_waiting_messages(settings: Settings, redis_client: redis.Redis, log_dir: Path,
                                        name: str) -> Flower:
    """A worker on both queues, Flower started by its launcher, then 6 messages waiting in the
    structural queue (2 of them in its priority list) and 3 in the semantic one: Flower's API and
    Broker page count exactly those. Returns the (stopped) Flower, for its log."""
    structural, semantic = settings.structural_queue, settings.semantic_queue
    app = producer_celery(settings)
    workers = WorkerFactory(settings, app, log_dir)
    flower: Flower | None = None
    try:
        node = workers.start(name, queues=f"{structural},{semantic}", concurrency=1).extra["node"]
        flower = start_flower(settings, log_dir, name=f"flower-{name}")

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
        # where they wait: under the prefix, the priority ones in their own list
        lists = [f"{prefix}{structural}", f"{prefix}{structural}{PRIORITY_SUFFIX}", f"{prefix}{semantic}"]
        assert [redis_client.llen(key) for key in lists] == [4, 2, 3]

        assert flower_json(flower, "/api/queues/length") == {
            "active_queues": [{"name": structural, "messages": 6}, {"name": semantic, "messages": 3}]}
        status, body = http_get(f"{flower.url}/broker", flower.auth)
        assert status == 200, body[:300]
        assert broker_page_counts(body.decode()) == {structural: "6", semantic: "3"}
        return flower
    finally:
        if flower is not None:
            flower.process.stop()
        workers.stop_all()


def test_flower_counts_the_messages_waiting_in_the_fleet_queues(
    queue_settings: Settings, test_redis: TestRedis, log_dir: Path
) -> None:
    client = test_redis.client()
    try:
        check_flower_counts_waiting_messages(queue_settings, client, log_dir, "queues")
    finally:
        client.close()


@pytest.fixture(scope="module")
def sentinel_redis(log_dir: Path) -> Iterator[tuple[int, int]]:
    """``(master port, Sentinel port)``: a redis-server of this module's own and one Sentinel
    watching it as ``lpmaster`` (database 0 is this server's alone)."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("Sentinel needs redis-server on PATH (the embedded Redis has no Sentinel)")
    work = log_dir / f"sentinel-{uuid.uuid4().hex[:6]}"
    work.mkdir()
    master_port, sentinel_port = free_port(), free_port()
    master = spawn("flower-sentinel-master", [server, "--port", str(master_port), "--bind", "127.0.0.1",
                                              "--save", "", "--appendonly", "no", "--dir", str(work)],
                   dict(os.environ), log_dir)
    conf = work / "sentinel.conf"
    conf.write_text(f"port {sentinel_port}\nbind 127.0.0.1\ndir {work}\n"
                    f"sentinel monitor {SENTINEL_MASTER} 127.0.0.1 {master_port} 1\n")
    sentinel = spawn("flower-sentinel", [server, str(conf), "--sentinel"], dict(os.environ), log_dir)
    try:
        def master_known() -> bool:
            try:
                client = redis.Redis(port=sentinel_port, socket_timeout=1, decode_responses=True)
                try:
                    host, port = client.sentinel_get_master_addr_by_name(SENTINEL_MASTER) or ("", 0)
                    return (host, int(port)) == ("127.0.0.1", master_port)
                finally:
                    client.close()
            except (redis.RedisError, OSError):
                return False

        wait_until(master_known, 10, interval=0.1, what="the Sentinel to name its master")
        yield master_port, sentinel_port
    finally:
        sentinel.stop()
        master.stop()


def test_flower_counts_the_queues_behind_sentinel(sentinel_redis: tuple[int, int], log_dir: Path) -> None:
    master_port, sentinel_port = sentinel_redis
    prefix = f"{SESSION_PREFIX}-flower"
    # A second Sentinel that does not answer: the worker goes on to it only when the first fails.
    broker_url = f"sentinel://127.0.0.1:{sentinel_port}/0;sentinel://127.0.0.1:{free_port()}/0"
    settings = Settings(broker_url=broker_url,
                        result_url=f"redis://127.0.0.1:{master_port}/0", sentinel_master=SENTINEL_MASTER,
                        key_prefix=prefix, celery_key_prefix=f"{prefix}-celery:", word_list_path=None)
    client = redis.Redis(port=master_port, socket_timeout=5)
    try:
        flower = check_flower_counts_waiting_messages(settings, client, log_dir, "sentinel")
    finally:
        client.close()
    caveat = f"Flower asks only the first Sentinel listed (127.0.0.1:{sentinel_port})"
    assert caveat in flower.process.log_text()
