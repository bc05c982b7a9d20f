"""The asyncio client on a real Redis: 200 concurrent submits from one loop, every document
stored, the event loop kept responsive (its lag is measured and printed), and ``wait`` woken by
the completion stream."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid
from typing import Any

import pytest
import redis.exceptions

from config.settings import Settings
from longparser.resources import Resources
from service.store import ResultStore
from tasks.aio import AsyncProducer, task_view_from_meta
from tasks.chunk import run_chunk_job
from tasks.client import JobHandle, Producer, producer_celery
from tasks.errors import BrokerUnavailable, ChunkingFailed, InvalidPayload, JobFailed, ResultTimeout
from worker.context import WorkerContext

DOCUMENTS = 200


class EagerStoreApp:
    """Stands in for the producer's Celery app: each sent task runs the real task body
    (:func:`tasks.chunk.run_chunk_job`) against the real store, in the sending thread."""

    def __init__(self, context: WorkerContext, delay: float = 0.0) -> None:
        self.context, self.delay = context, delay
        self.threads: list[threading.Thread] = []
        self.backend = producer_celery(context.settings).backend  # the real one: status decodes with it

    def send_task(self, name: str, args: list[Any], task_id: str, **options: Any) -> None:
        payload = json.loads(json.dumps(args[0]))

        def run() -> None:
            time.sleep(self.delay)
            with contextlib.suppress(Exception):  # a FAILURE record is stored; the test reads it
                run_chunk_job(payload, self.context, task_id=task_id)

        if self.delay:
            thread = threading.Thread(target=run)
            self.threads.append(thread)
            thread.start()
        else:
            run()

    def close(self) -> None:
        for thread in self.threads:
            thread.join(30)


def _request(document_id: str, paragraphs: int = 6) -> dict[str, Any]:
    return {"document_id": document_id, "config": {"max_tokens": 40, "min_tokens": 0},
            "blocks": [{"block_id": f"b{i}", "type": "paragraph", "hierarchy_path": ["Body"],
                        "text": f"Paragraph {i} of {document_id}: " + "words to chunk " * 8,
                        "provenance": {"page_number": 1}} for i in range(paragraphs)]}


def _producer(settings: Settings, delay: float = 0.0) -> Producer:
    store = ResultStore.from_settings(settings)
    context = WorkerContext(settings=settings, store=store, resources=Resources())
    return Producer(settings, app=EagerStoreApp(context, delay), store=store)


async def _ticker(stop: asyncio.Event, lags: list[float], interval: float = 0.005) -> None:
    """How late the loop runs a 5 ms timer: a blocked loop shows as a large lag."""
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(interval)
        lags.append(time.perf_counter() - started - interval)


def test_200_concurrent_submits_from_one_loop_all_stored(lp_settings: Settings,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    run = uuid.uuid4().hex[:8]
    ids = [f"aio-{run}-{n}" for n in range(DOCUMENTS)]

    async def main() -> tuple[list[Any], list[Any], list[float], float]:
        lags: list[float] = []
        stop = asyncio.Event()
        ticker = asyncio.create_task(_ticker(stop, lags))
        async with AsyncProducer(lp_settings, producer=_producer(lp_settings), max_workers=8) as producer:
            started = time.perf_counter()
            handles = await asyncio.gather(*(producer.submit(_request(doc)) for doc in ids))
            results = await asyncio.gather(*(producer.get_result(h, timeout=60) for h in handles))
            took = time.perf_counter() - started
        stop.set()
        await ticker
        return handles, results, lags, took

    handles, results, lags, took = asyncio.run(main())
    assert [h.document_id for h in handles] == ids
    assert [r.document_id for r in results] == ids
    # the asyncio client reads each chunk's parent as the blocking one does
    assert all(r.parents and {c.parent_id for c in r.chunks} <= {p.id for p in r.parents} for r in results)
    assert all(r.chunks for r in results)
    lags.sort()
    with capsys.disabled():
        print(f"\n[aio] {DOCUMENTS} concurrent submits + get_result in {took:.2f} s; event-loop lag "
              f"(5 ms ticker, {len(lags)} ticks): max {lags[-1] * 1000:.1f} ms, "
              f"p95 {lags[int(len(lags) * 0.95)] * 1000:.1f} ms")
    # a sanity bound only (a shared, loaded machine): a loop blocked by publishing or chunking would
    # lag by the whole burst, seconds
    assert lags[-1] < 2.0


def test_async_wait_is_woken_by_the_stream_and_failures_raise(lp_settings: Settings) -> None:
    run = uuid.uuid4().hex[:8]

    async def main() -> None:
        async with AsyncProducer(lp_settings, producer=_producer(lp_settings, delay=0.5)) as producer:
            handle = await producer.submit(_request(f"later-{run}"))
            assert (await producer.status(handle))["state"] == "PENDING"
            started = time.monotonic()
            view = await producer.wait(handle, timeout=30)
            assert view["state"] == "SUCCESS" and 0.3 < time.monotonic() - started < 10
            # a structural worker stores a FAILURE record for a semantic request
            failing = await producer.submit(_request(f"semantic-{run}"), semantic=True)
            with pytest.raises(JobFailed, match="SemanticUnavailable"):
                await producer.get_result(failing, timeout=30)
            pending = await producer.submit(_request(f"slow-{run}"))
            with pytest.raises(ResultTimeout):
                await producer.get_result(pending, timeout=0.2)

    asyncio.run(main())


def test_many_concurrent_waits_share_one_blocking_read(lp_settings: Settings) -> None:
    """400 waits in flight on a client whose pool holds 10 connections: one reader blocks on the
    stream for all of them, so they neither exhaust the pool nor miss their events."""
    import redis.asyncio

    run = uuid.uuid4().hex[:8]
    docs = [f"many-{run}-{n}" for n in range(400)]
    store = ResultStore.from_settings(lp_settings)
    for doc in docs:
        store.save_job(doc, f"t-{doc}", "chunking")

    def store_all() -> None:
        time.sleep(1.0)
        for doc in docs:
            store.save_success(doc, f"t-{doc}", json.dumps({"document_id": doc, "chunks": []}), [])

    async def main() -> list[dict[str, Any]]:
        client = redis.asyncio.Redis.from_url(lp_settings.result_url, max_connections=10)
        async with AsyncProducer(lp_settings, producer=_producer(lp_settings), client=client) as producer:
            writer = threading.Thread(target=store_all)
            writer.start()
            views = await asyncio.gather(*(producer.wait(doc, timeout=60) for doc in docs))
            writer.join(30)
            assert producer._waiters == {}  # every waiter unregistered
            return views

    views = asyncio.run(main())
    assert [v["state"] for v in views] == ["SUCCESS"] * len(docs)


def test_both_clients_read_one_view_of_celerys_backend_value(lp_settings: Settings) -> None:
    """The asyncio client decodes the backend's value as ``AsyncResult`` does (the blocking
    client's path): the same view of each state Celery stores, a producer's failure included."""
    app = producer_celery(lp_settings)
    backend = app.backend
    blocking = Producer(lp_settings, app=app, store=ResultStore.from_settings(lp_settings))
    assert task_view_from_meta(backend, "d", "t", "q", None)["state"] == "PENDING"
    stored = {"PROGRESS": {"stage": "chunking", "blocks": 5, "chunks": 0},
              "FAILURE": InvalidPayload("bad"), "RETRY": ChunkingFailed("again"), "STARTED": None}
    keys = []
    try:
        for state, result in stored.items():
            task_id = f"view-{uuid.uuid4().hex}"
            backend.store_result(task_id, result, state)
            keys.append(backend.get_key_for_task(task_id))
            view = task_view_from_meta(backend, "d", task_id, "q", backend.client.get(keys[-1]))
            assert view == blocking._task_view("d", task_id, "q") and view["state"] == state
        assert task_view_from_meta(backend, "d", "t", "q", backend.client.get(keys[0]))["progress"]["stage"] \
            == "chunking"
        assert task_view_from_meta(backend, "d", "t", "q", backend.client.get(keys[1]))["error"] == {
            "type": "InvalidPayload", "message": "bad"}
    finally:
        if keys:
            backend.client.delete(*keys)
    # a value written by another producer's Celery (no exc_module): same words
    failed = json.dumps({"status": "FAILURE",
                         "result": {"exc_type": "InvalidPayload", "exc_message": ["bad"]}})
    assert task_view_from_meta(backend, "d", "t", "q", failed.encode())["error"] == {"type": "InvalidPayload",
                                                                                   "message": "bad"}


def test_close_after_a_wait_that_found_its_record_returns_at_once(lp_settings: Settings) -> None:
    """The wait starts the stream reader and returns before the reader's first read is answered;
    ``close`` cancels the reader there. A cancellation lost inside redis-py (while it sends the
    read) must not leave ``close`` waiting for a whole blocking read of the stream (20 s)."""
    store = ResultStore.from_settings(lp_settings)
    closes: list[float] = []

    async def main() -> None:
        for attempt in range(5):
            document_id = f"close-{uuid.uuid4().hex[:8]}"
            store.save_success(document_id, f"t-{attempt}", json.dumps({"document_id": document_id,
                                                                        "chunks": []}), [])
            producer = AsyncProducer(lp_settings, producer=_producer(lp_settings))
            handle = JobHandle(document_id, f"t-{attempt}", "chunking")
            assert (await producer.wait(handle, timeout=5))["state"] == "SUCCESS"
            started = time.monotonic()
            await producer.close()
            closes.append(time.monotonic() - started)

    asyncio.run(main())
    assert max(closes) < 2.0, closes


def test_close_before_any_wait_returns_and_refuses_later_submits(lp_settings: Settings) -> None:
    async def main() -> None:
        producer = AsyncProducer(lp_settings, producer=_producer(lp_settings))
        started = time.monotonic()
        await producer.close()  # no stream reader was started: nothing to cancel
        assert time.monotonic() - started < 2.0
        with pytest.raises(RuntimeError, match="after shutdown"):  # its publishing pool is gone
            await producer.submit(_request(f"closed-{uuid.uuid4().hex[:8]}"))

    asyncio.run(main())


class FailingAsyncClient:
    """A ``redis.asyncio`` client whose commands named in ``failing`` raise ``error``; the rest go
    to the real client."""

    def __init__(self, inner: Any, error: Exception, *failing: str) -> None:
        self.inner, self.error, self.failing = inner, error, set(failing)
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        command = getattr(self.inner, name)
        if name not in self.failing:
            return command

        async def fail(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            raise self.error
        return fail


def _failing(settings: Settings, error: Exception, *failing: str) -> tuple[AsyncProducer, FailingAsyncClient]:
    import redis.asyncio

    client = FailingAsyncClient(redis.asyncio.Redis.from_url(settings.result_url), error, *failing)
    return AsyncProducer(settings, producer=_producer(settings), client=client), client


def test_an_async_read_past_the_window_is_broker_unavailable_and_a_bug_is_raised_at_once(
    lp_settings: Settings,
) -> None:
    short = lp_settings.model_copy(update={"submit_retry_window": 0.3})
    document_id = f"away-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        refused = redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6399.\nRefused.")
        producer, client = _failing(short, refused, "get")
        async with producer:
            started = time.monotonic()
            with pytest.raises(BrokerUnavailable) as caught:
                await producer.status(document_id)
            assert time.monotonic() - started < 2.0  # the window bounds the wait
            assert str(caught.value) == (
                f"store unreachable at {short.result_url} for 0.3 s while reading the job of {document_id} "
                "(ConnectionError: Error 111 connecting to 127.0.0.1:6399. Refused.)")
            assert len(client.calls) > 1 and producer.waits.count == len(client.calls) - 1
        wrong = redis.exceptions.ResponseError("WRONGTYPE Operation against a key holding the wrong kind")
        producer, client = _failing(short, wrong, "get")
        async with producer:
            with pytest.raises(redis.exceptions.ResponseError, match=r"^WRONGTYPE"):
                await producer.fetch_record(document_id)
            assert (client.calls, producer.waits.count) == (["get"], 0)  # not waited out

    asyncio.run(main())


def test_an_outage_of_the_stream_reader_is_raised_by_every_wait(lp_settings: Settings) -> None:
    short = lp_settings.model_copy(update={"submit_retry_window": 0.3})
    store = ResultStore.from_settings(short)
    docs = [f"unread-{uuid.uuid4().hex[:8]}-{n}" for n in range(3)]
    for doc in docs:
        store.save_job(doc, f"t-{doc}", "chunking")  # submitted, never finished: PENDING

    async def main() -> list[Any]:
        refused = redis.exceptions.ConnectionError("Connection refused (simulated)")
        producer, _ = _failing(short, refused, "xread")
        async with producer:
            started = time.monotonic()
            outcomes = await asyncio.gather(*(producer.wait(doc, timeout=30) for doc in docs),
                                            return_exceptions=True)
            assert time.monotonic() - started < 10  # woken by the reader's error, not the 30 s timeout
            assert producer._waiters == {}  # every waiter unregistered
            return outcomes

    outcomes = asyncio.run(main())
    assert [type(outcome) for outcome in outcomes] == [BrokerUnavailable] * len(docs)
    assert all("for 0.3 s while waiting for completions (ConnectionError: Connection refused (simulated))"
               in str(outcome) for outcome in outcomes)
