"""The producer client for asyncio upload services: ``submit``, ``status``, ``wait``, ``get_result``
without blocking the event loop.

    async with AsyncProducer(get_settings()) as producer:     # one per process, reused
        handle = await producer.submit({"document_id": "doc-1", "blocks": blocks})
        result = await producer.get_result(handle, timeout=60)  # schemas.ChunkResult

* Publishing: Celery's ``send_task`` (and kombu under it) is synchronous, so :meth:`submit` runs
  :meth:`tasks.client.Producer.submit` (validation, size check, publish, job entry) in ONE thread
  pool of ``max_workers`` threads owned by the client: a burst of submissions queues there
  instead of starting a thread each, and the loop only awaits.
* Reads (status, records, the completion stream) go through ``redis.asyncio``: the job entry, the
  record and, while no record is stored, Celery's task state (its Redis result-backend key, read
  directly). The decisions (which record wins, which error to raise) are the blocking client's
  own functions, so the two clients cannot drift.
* Waiting: every :meth:`wait` in flight shares ONE reader task that blocks on the completion
  stream (``XREAD BLOCK``) and wakes the waiters of the documents it sees. A blocked read holds
  a connection, so one reader instead of one per wait keeps thousands of concurrent waits within
  the connection pool. A waiter registers before it checks the status, and the reader reads on
  from an id noted before that check, so an event stored in between is not missed.

Outages: every read is retried with the blocking client's policy
(``LONGPARSER_SUBMIT_RETRY_WINDOW``), pausing with ``asyncio.sleep``; then
:class:`~tasks.errors.BrokerUnavailable`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from longparser_client.celery_compat import decode_backend_result
from longparser_client.client import (
    EVENT_BATCH,
    FINAL_STATES,
    JobHandle,
    Producer,
    _identify,
    after_task_view,
    final_result,
    not_final,
    status_from_store,
    task_error,
    task_view,
)
from longparser_client.errors import BrokerUnavailable
from longparser_client.schemas import ChunkResult
from longparser_client.service.events import EMPTY_STREAM_ID, MAX_BLOCK_S, block_ms, entry_document_id
from longparser_client.service.keys import celery_task_meta_key, events_key, job_key, result_key
from longparser_client.service.redis_client import async_redis_client
from longparser_client.service.retry import Waits, async_call_with_retry, is_transient
from longparser_client.service.store import decode_record
from longparser_client.settings import Settings, masked_url

T = TypeVar("T")
DEFAULT_PUBLISH_THREADS = 8
# How long close() waits for the cancelled stream reader before cancelling it again.
CANCEL_AGAIN_S = 0.1


def task_view_from_meta(backend: Any, document_id: str, task_id: str, queue: str | None,
                        meta: bytes | None) -> dict[str, Any]:
    """:func:`tasks.client.task_view` from Celery's result-backend value (None: PENDING).

    Decoded by the producer app's result backend (``Backend.decode_result``: its serializer and
    compression, exceptions revived), the call ``AsyncResult`` makes on the same value once its
    backend has read it: both clients give one view of one task, whatever Celery stores.
    """
    if meta is None:
        return task_view(document_id, task_id, queue, "PENDING", None, None)
    decoded = decode_backend_result(backend, meta)
    info = decoded.get("result")
    return task_view(document_id, task_id, queue, decoded["status"], info, task_error(info))


class AsyncProducer:
    """The asyncio producer for one :class:`Settings` (see the module doc).

    Args:
        settings: the fleet's settings.
        producer: the blocking producer that publishes (default: one built here).
        client: a ``redis.asyncio`` client on the result store (default: from the settings).
        max_workers: threads of the publishing pool.
    """

    def __init__(self, settings: Settings, *, producer: Producer | None = None, client: Any = None,
                 max_workers: int = DEFAULT_PUBLISH_THREADS) -> None:
        self.settings = settings
        self.producer = producer if producer is not None else Producer(settings)
        self.client = client if client is not None else async_redis_client(settings.result_url, settings)
        self.prefix = self.producer.store.prefix
        self.events_key = events_key(self.prefix)
        self.waits = Waits()
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="longparser-publish")
        self._waiters: defaultdict[str, set[asyncio.Event]] = defaultdict(set)
        self._reader: asyncio.Task[None] | None = None
        self._reader_error: BaseException | None = None

    async def __aenter__(self) -> AsyncProducer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Wait for submissions in flight, then release the pool, the Redis client and the app."""
        await self._stop_reader()
        await asyncio.get_running_loop().run_in_executor(None, self._pool.shutdown)
        await self.client.aclose()
        self.producer.close()

    async def _stop_reader(self) -> None:
        """Cancel the stream reader and wait for it to end, cancelling again until it does: a
        cancellation that arrives while redis-py sends a command can be lost (its socket timeout
        goes through ``asyncio.wait_for``, which on Python 3.11 may swallow a cancellation), and
        the reader would then block for a whole read of the stream before it stopped."""
        reader = self._reader
        if reader is None:
            return
        while not reader.done():
            reader.cancel()
            await asyncio.wait({reader}, timeout=CANCEL_AGAIN_S)
        with contextlib.suppress(asyncio.CancelledError):
            await reader

    async def _call(self, what: str, function: Callable[[], Awaitable[T]]) -> T:
        try:
            return await async_call_with_retry(function, window=self.settings.submit_retry_window, what=what,
                                               waits=self.waits)
        except Exception as exc:
            if is_transient(exc):
                raise BrokerUnavailable(
                    f"store unreachable at {masked_url(self.settings.result_url)} for "
                    f"{self.settings.submit_retry_window:g} s while {what} ({type(exc).__name__}: "
                    f"{' '.join(str(exc).split())})") from None
            raise

    async def submit(self, request: Any, **options: Any) -> JobHandle:
        """:meth:`tasks.client.Producer.submit` (same arguments and errors), run in the client's
        publishing pool."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, partial(self.producer.submit, request, **options))

    async def fetch_record(self, document_id: str) -> dict[str, Any] | None:
        """The stored record of a document (compressed results decompressed), or None."""
        document_id, _ = _identify(document_id)
        raw = await self._call(f"reading the result of {document_id}",
                               lambda: self.client.get(result_key(self.prefix, document_id)))
        return None if raw is None else decode_record(raw)

    async def status(self, job: str | JobHandle) -> dict[str, Any]:
        """:meth:`tasks.client.Producer.status`, read with ``redis.asyncio``."""
        document_id, handle = _identify(job)
        raw_entry = await self._call(f"reading the job of {document_id}",
                                     lambda: self.client.get(job_key(self.prefix, document_id)))
        record = await self.fetch_record(document_id)
        view, task_id, queue = status_from_store(document_id, handle, None if raw_entry is None else
                                                 json.loads(raw_entry), record)
        if view is not None:
            return view
        assert task_id is not None
        meta_key = celery_task_meta_key(self.settings.celery_key_prefix, task_id)
        meta = await self._call(f"reading the state of {document_id}", lambda: self.client.get(meta_key))
        view = task_view_from_meta(self.producer.app.backend, document_id, task_id, queue, meta)
        return after_task_view(view, record, queue)

    async def wait(self, job: str | JobHandle, timeout: float = 300.0) -> dict[str, Any]:
        """:meth:`tasks.client.Producer.wait`: register with the shared stream reader, check the
        status, then sleep until the reader sees an event of this document (or the timeout)."""
        document_id, _ = _identify(job)
        deadline = time.monotonic() + timeout
        woken = asyncio.Event()
        await self._watch(document_id, woken)
        try:
            while True:
                woken.clear()
                view = await self.status(job)
                if view["state"] in FINAL_STATES or view["state"] == "UNKNOWN":
                    return view
                if self._reader_error is not None:  # checked once more above; no reader wakes it now
                    raise self._reader_error
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return view
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), remaining)
        finally:
            self._waiters[document_id].discard(woken)
            if not self._waiters[document_id]:
                del self._waiters[document_id]

    async def _watch(self, document_id: str, woken: asyncio.Event) -> None:
        """Register a waiter; start the reader (from the stream's newest id) if none runs."""
        if self._reader is None or self._reader.done():
            newest = await self._call("reading the completion stream",
                                      lambda: self.client.xrevrange(self.events_key, count=1))
            if self._reader is None or self._reader.done():  # another wait may have started one meanwhile
                self._reader_error = None
                start = newest[0][0] if newest else EMPTY_STREAM_ID
                self._reader = asyncio.create_task(self._read_stream(start))
        self._waiters[document_id].add(woken)

    async def _read_stream(self, last: Any) -> None:
        """The shared reader: blocks on the stream while anyone waits, wakes the waiters of each
        document it sees. A Redis outage past the retry window is handed to the waiters."""
        try:
            while self._waiters:
                reply = await self._call("waiting for completions", partial(self._read_events, last))
                for entry_id, fields in reply[0][1] if reply else []:
                    last = entry_id
                    for woken in self._waiters.get(entry_document_id(fields), ()):
                        woken.set()
        except BrokerUnavailable as exc:
            self._reader_error = exc
            for waiters in self._waiters.values():
                for woken in waiters:
                    woken.set()

    async def _read_events(self, after: Any) -> Any:
        return await self.client.xread({self.events_key: after}, count=EVENT_BATCH,
                                       block=block_ms(MAX_BLOCK_S))

    async def get_result(self, job: str | JobHandle, *, timeout: float = 300.0) -> ChunkResult:
        """:meth:`tasks.client.Producer.get_result`: the result, or JobFailed / ResultTimeout /
        JobNotFound / BrokerUnavailable."""
        document_id, _ = _identify(job)
        view = await self.wait(job, timeout)
        if view["state"] not in FINAL_STATES:
            raise not_final(document_id, view, timeout)
        return final_result(document_id, view, await self.fetch_record(document_id), self.prefix)
