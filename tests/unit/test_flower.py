"""worker.flower's Celery app for Flower: the workers' configuration on kombu's own Redis
transport, so Flower picks its Redis queue reader (tests/integration/test_flower_queues.py runs
it against a real Flower, worker and redis-server)."""

from __future__ import annotations

import pytest
from celery.app.utils import find_app

from config.settings import Settings
from service.celeryconfig import celery_config
from worker.celery_app import create_app
from worker.flower import flower_command, monitor_app, monitored_queues, sentinel_caveat


def _settings(**values: object) -> Settings:
    defaults = {"broker_url": "redis://:s3cret@redis.internal:6380/3", "result_url": "redis://redis.internal:6380/4",
                "celery_key_prefix": "lpcelery:"}
    return Settings(**{**defaults, **values})


def test_the_launcher_runs_flower_with_this_app() -> None:
    argv, _, _ = flower_command({"FLOWER_BASIC_AUTH": "a:b"}, ["--port=5555"])
    assert argv[1:] == ["-m", "celery", "-A", "worker.flower", "flower", "--port=5555"]


def test_celery_finds_the_monitor_app_in_the_module_flower_is_pointed_at() -> None:
    import worker.flower

    found = find_app("worker.flower")
    assert found is worker.flower.app
    assert found.conf.broker_transport is None


def test_flower_gets_the_workers_options_on_kombus_redis_transport() -> None:
    settings = _settings()
    flower_app, worker_app = monitor_app(settings), create_app(settings)
    with flower_app.connection() as flower_conn, worker_app.connection() as worker_conn:
        # Flower picks its queue reader from this URI's scheme: the worker app's names our transport.
        assert flower_conn.as_uri(include_password=True) == "redis://:s3cret@redis.internal:6380/3"
        assert worker_conn.as_uri().startswith("worker.transport:Transport://")
        assert flower_conn.transport.driver_type == worker_conn.transport.driver_type == "redis"
    expected = celery_config(settings)
    options = flower_app.conf.broker_transport_options
    assert options == expected["broker_transport_options"]
    assert options["global_keyprefix"] == "lpcelery:"  # Flower prefixes the queue names with it
    for name in ("broker_url", "result_backend", "task_default_queue", "accept_content", "event_serializer"):
        assert flower_app.conf[name] == expected[name], name


@pytest.mark.parametrize(("values", "queues"), [
    ({}, ["chunking", "semantic"]),
    ({"semantic_enabled": True}, ["chunking", "semantic"]),
    ({"structural_queue": "docs", "semantic_queue": "docs-semantic"}, ["docs", "docs-semantic"]),
    ({"worker_queues": "semantic,urgent"}, ["chunking", "semantic", "urgent"]),
], ids=["default", "semantic-worker", "renamed", "worker-queues"])
def test_flower_lists_every_queue_producers_route_to(values: dict[str, object], queues: list[str]) -> None:
    settings = _settings(**values)
    assert monitored_queues(settings) == queues
    assert [queue.name for queue in monitor_app(settings).conf.task_queues] == queues


@pytest.mark.parametrize(("url", "caveat"), [
    ("redis://localhost:6379/3", None),
    ("rediss://localhost:6380/0", None),
    ("sentinel://s1:26379/0;sentinel://s2:26379/0",
     "Flower asks only the first Sentinel listed (s1:26379) for the queue lengths"),
    ("sentinel://s1/2",
     "Flower asks only the first Sentinel listed (s1:26379) for the queue lengths, and reads them from "
     "database 0, not the broker's database 2: they will show 0 (keep the broker on database 0 to see them)"),
])
def test_what_flower_misses_behind_sentinel_is_said(url: str, caveat: str | None) -> None:
    assert sentinel_caveat(url) == caveat


def test_a_sentinel_broker_gives_flower_the_master_name() -> None:
    settings = _settings(broker_url="sentinel://s1:26379/0;sentinel://s2:26379/0", sentinel_master="lpmaster")
    flower_app = monitor_app(settings)
    assert flower_app.conf.broker_transport_options["master_name"] == "lpmaster"
    with flower_app.connection() as conn:
        assert conn.as_uri().startswith("sentinel://")
