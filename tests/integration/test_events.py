"""Completion events on a real Redis: ``wait`` blocks on the stream (counted commands, no polling),
and the consumer-group helper is at-least-once (ack, restart, reclaim from a dead consumer)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import pytest
import redis

from config.settings import Settings
from service.events import EventConsumer
from service.keys import events_key
from service.store import ResultStore, failure_record
from tasks.client import Producer
from tests.integration.conftest import SESSION_PREFIX, TestRedis


def _commands(client: redis.Redis) -> dict[str, int]:
    """Calls per command since the server started (INFO commandstats)."""
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): entry["calls"] for name, entry in stats.items()}


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: n - before.get(name, 0) for name, n in after.items() if n != before.get(name, 0)}


def _result(document_id: str, ids: list[str]) -> str:
    return json.dumps({"document_id": document_id, "chunks": [{"chunk_id": i} for i in ids]})


@pytest.fixture
def producer(lp_settings: Settings) -> Any:
    with Producer(lp_settings) as p:
        yield p


def _wait_in_thread(producer: Producer, document_id: str, timeout: float) -> tuple[threading.Thread, dict]:
    out: dict[str, Any] = {}

    def run() -> None:
        out["view"] = producer.wait(document_id, timeout)
        out["woke"] = time.perf_counter()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_wait_blocks_on_the_stream_instead_of_polling(producer: Producer, test_redis: TestRedis) -> None:
    store, doc = producer.store, f"wait-{uuid.uuid4().hex[:8]}"
    store.save_job(doc, "t-1", "chunking")
    counter = test_redis.client()
    before = _commands(counter)
    thread, out = _wait_in_thread(producer, doc, timeout=20)
    time.sleep(1.0)
    for n in range(3):  # other documents' events wake the waiter, which reads on without a status check
        store.save_record(failure_record(f"{doc}-other-{n}", "t-x", "InvalidPayload", "bad"))
    time.sleep(0.5)
    stored = time.perf_counter()
    store.save_success(doc, "t-1", _result(doc, ["a"]), ["a"])
    thread.join(10)
    after = _commands(counter)
    assert out["view"]["state"] == "SUCCESS" and out["view"]["task_id"] == "t-1"
    assert out["woke"] - stored < 1.0  # woken by the event, not by a timer
    calls = _delta(before, after)
    calls.pop("info", None)
    # One XREVRANGE (the stream's last id), one status check before and one after the event
    # (GET job, GET record, GET of Celery's task state once), and one XREAD per event batch:
    # 1.5 s of waiting is a handful of blocking reads, not a loop of short ones.
    assert calls.get("xrevrange") == 1
    assert 1 <= calls.get("xread", 0) <= 4
    assert calls.get("get", 0) <= 8, calls  # 3 status reads (+1 Celery), twice; the store's WATCHed read



def test_an_idle_wait_is_one_blocking_read_and_returns_at_its_timeout(
    producer: Producer, test_redis: TestRedis
) -> None:
    doc = f"idle-{uuid.uuid4().hex[:8]}"
    producer.store.save_job(doc, "t-1", "chunking")
    counter = test_redis.client()
    before = _commands(counter)
    started = time.monotonic()
    view = producer.wait(doc, timeout=2.0)
    took = time.monotonic() - started
    calls = _delta(before, _commands(counter))
    assert view["state"] == "PENDING"
    assert 1.9 <= took < 5.0
    assert calls.get("xread") == 1, calls


def test_an_event_stored_between_the_check_and_the_read_is_not_missed(producer: Producer) -> None:
    """The waiter reads from the id it noted before checking, so a record stored after the
    check but before XREAD is still seen (its event is after the noted id)."""
    doc, store = f"race-{uuid.uuid4().hex[:8]}", producer.store
    store.save_job(doc, "t-1", "chunking")
    real_status = producer.status
    calls = 0

    def status_then_store(job: Any) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        view = real_status(job)
        if calls == 1:
            store.save_success(doc, "t-1", _result(doc, ["a"]), ["a"])
        return view

    producer.status = status_then_store  # type: ignore[method-assign]
    started = time.monotonic()
    assert producer.wait(doc, timeout=10)["state"] == "SUCCESS"
    assert time.monotonic() - started < 5


def test_get_result_uses_wait_and_hides_compression(lp_settings: Settings) -> None:
    from longparser import chunk_blocks

    doc = f"big-{uuid.uuid4().hex[:8]}"
    blocks = [{"block_id": f"b{i}", "type": "paragraph", "text": f"paragraph {i} " + "word " * 60,
               "provenance": {"page_number": 1, "source_file": "x"}, "confidence": {"overall": 1.0},
               "hierarchy_path": ["Intro"], "order_index": i} for i in range(200)]
    result = chunk_blocks(blocks, {"max_tokens": 64, "min_tokens": 0}, document_id=doc)
    with Producer(lp_settings) as producer:
        small = ResultStore(producer.store.client, lp_settings.key_prefix, 60, compress_bytes=1024)
        small.save_job(doc, "t-1", "chunking")
        threading.Timer(0.3, lambda: small.save_success(
            doc, "t-1", result.model_dump_json(), [c.chunk_id for c in result.chunks])).start()
        fetched = producer.get_result(doc, timeout=10)
        raw = json.loads(producer.store.client.get(f"{lp_settings.key_prefix}:result:{doc}"))
    assert raw["encoding"] == "zlib+base64"
    assert fetched.model_dump(exclude={"stats"}) == result.model_dump(exclude={"stats"})


# --------------------------------------------------------------------------- consumer groups


@pytest.fixture
def events_store(test_redis: TestRedis) -> ResultStore:
    prefix = f"{SESSION_PREFIX}-ev-{uuid.uuid4().hex[:6]}"  # its own stream (deleted with the session's keys)
    return ResultStore(test_redis.client(), prefix, 60)


def _store_docs(store: ResultStore, n: int) -> list[str]:
    docs = [f"doc-{i}" for i in range(n)]
    for doc in docs:
        store.save_success(doc, f"t-{doc}", _result(doc, ["a", "b"]), ["a", "b"])
    return docs


def _pending(store: ResultStore, group: str) -> int:
    return int(store.client.xpending(events_key(store.prefix), group)["pending"])


def test_consumer_group_is_at_least_once_with_acks(events_store: ResultStore) -> None:
    consumer = EventConsumer(events_store.client, events_store.prefix, "indexer", "c1", block_s=0.2)
    assert consumer.create_group() is True
    assert consumer.create_group() is False  # idempotent
    docs = _store_docs(events_store, 3)
    first = consumer.read()
    assert [e.document_id for e in first] == docs
    assert {(e.status, e.chunks, e.added, e.error_type) for e in first} == {("SUCCESS", 2, None, "")}
    consumer.ack(first[0].id, first[1].id)  # handled two, then the process dies
    assert _pending(events_store, "indexer") == 1
    restarted = EventConsumer(events_store.client, events_store.prefix, "indexer", "c1", block_s=0.2)
    again = restarted.read()
    assert [e.id for e in again] == [first[2].id]  # its own unacknowledged entry comes back first
    restarted.ack(again[0].id)
    assert restarted.read() == []  # nothing new (blocked 0.2 s)
    assert _pending(events_store, "indexer") == 0


def test_a_dead_consumers_pending_entries_are_claimed_by_another(events_store: ResultStore) -> None:
    dead = EventConsumer(events_store.client, events_store.prefix, "indexer", "dead", block_s=0.2)
    dead.create_group()
    _store_docs(events_store, 4)
    taken = dead.read()
    assert len(taken) == 4  # delivered to "dead", never acknowledged
    survivor = EventConsumer(events_store.client, events_store.prefix, "indexer", "alive",
                             claim_idle_s=0.3, block_s=0.2)
    assert survivor.read() == []  # not idle long enough yet: nothing claimed, nothing new
    time.sleep(0.5)
    survivor._next_claim = 0.0  # the claim pass is rate-limited; the test does not wait for it
    claimed = survivor.read()
    assert sorted(e.id for e in claimed) == sorted(e.id for e in taken)
    survivor.ack(*[e.id for e in claimed])
    assert _pending(events_store, "indexer") == 0
    # another group sees every event too (one group per upload service)
    other = EventConsumer(events_store.client, events_store.prefix, "audit", "a1", block_s=0.2)
    other.create_group(start="0")
    assert len(other.read()) == 4
