"""service.events and the asyncio client builder without a server: the consumer's edge cases
(fakeredis), the Redis client builder's URL forms for redis.asyncio. The blocking behaviour and
the consumer group's at-least-once path run on a real redis-server (tests/integration/test_events.py)."""

from __future__ import annotations

import json
import logging
from typing import Any

import fakeredis
import pytest
import redis.asyncio
import redis.exceptions

import service.store
from config.settings import Settings
from service.events import EventConsumer, block_ms
from service.keys import events_key
from service.redis_client import async_redis_client
from service.store import ResultStore

PREFIX = "lp-events-unit"


def _store_docs(store: ResultStore, n: int) -> None:
    for i in range(n):
        store.save_success(f"doc-{i}", f"t-{i}", json.dumps({"chunks": []}), [])


def test_create_group_raises_other_errors() -> None:
    client = fakeredis.FakeRedis()
    client.set(events_key(PREFIX), "not a stream")
    with pytest.raises(redis.exceptions.ResponseError, match="WRONGTYPE"):
        EventConsumer(client, PREFIX, "g", "c").create_group()


def test_trimmed_pending_entries_are_acknowledged_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    client = fakeredis.FakeRedis()
    store = ResultStore(client, PREFIX, 60)
    consumer = EventConsumer(client, PREFIX, "g", "c1", block_s=0.01)
    consumer.create_group()
    _store_docs(store, 3)
    assert len(consumer.read()) == 3  # delivered, never acknowledged
    client.xtrim(events_key(PREFIX), maxlen=0)  # the cap overtook the consumer
    restarted = EventConsumer(client, PREFIX, "g", "c1", block_s=0.01)
    with caplog.at_level(logging.WARNING, logger="longparser_client.service.events"):
        assert restarted.read() == []
    assert "trimmed" in caplog.text and "reconcile through status" in caplog.text
    assert client.xpending(events_key(PREFIX), "g")["pending"] == 0


def test_the_claim_pass_is_rate_limited() -> None:
    client = fakeredis.FakeRedis()
    consumer = EventConsumer(client, PREFIX, "g", "c1", claim_idle_s=60, block_s=0.01)
    consumer.create_group()
    assert consumer.read() == []  # one claim pass, nothing pending
    calls = []
    client.xautoclaim = lambda *a, **k: calls.append(a)  # type: ignore[method-assign]
    assert consumer.read() == []  # within half the claim period: no second pass
    assert calls == []


def test_block_is_never_zero_nor_past_the_socket_timeout() -> None:
    assert block_ms(0.0) == 1 and block_ms(0.0004) == 1
    assert block_ms(3600) == 20_000


def test_the_store_gives_up_after_conflicting_runs_in_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    server = fakeredis.FakeServer()
    store = ResultStore(fakeredis.FakeRedis(server=server), PREFIX, 60)
    other = ResultStore(fakeredis.FakeRedis(server=server), PREFIX, 60)
    monkeypatch.setattr(service.store, "STORE_CONFLICTS", 2)
    real_get = store.client.get

    def get(name: str) -> Any:  # another run stores after every read of ours
        value = real_get(name)
        other.save_success("doc-1", "t-other", json.dumps({"chunks": []}), [])
        return value

    store.client.get = get  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="changed under 2 tries in a row"):
        store.save_success("doc-1", "t-1", json.dumps({"chunks": []}), [])


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6399/3", "rediss://127.0.0.1:6399/0",
                                 "sentinel://127.0.0.1:26399/0;sentinel://127.0.0.1:26400/0"])
def test_async_clients_for_every_url_form(url: str) -> None:
    settings = Settings(broker_url=url, result_url=url, sentinel_master="lpmaster", sentinel_tls=True,
                        word_list_path=None)
    client = async_redis_client(url, settings)  # nothing connects until a command runs
    assert isinstance(client, redis.asyncio.Redis)
