"""Producer client for upload services: submit a document, follow it, fetch its chunks.

Importable without the worker's heavy dependencies: it needs Celery (to send the task) and
redis (to read the store), never torch, the engine or the worker's app.

    with Producer(get_settings()) as producer:          # one per process or service, reused
        handle = producer.submit({"document_id": "doc-1", "blocks": blocks})
        producer.status(handle)["state"]                 # PENDING | PROGRESS | SUCCESS | FAILURE | UNKNOWN
        producer.wait(handle, timeout=60)["state"]       # blocks on the completion stream
        result = producer.get_result("doc-1", timeout=60)   # schemas.ChunkResult

``wait`` (and ``get_result``, which uses it) does not poll: it notes the completion stream's
newest id, checks the record, then blocks on the stream (``XREAD BLOCK``) for the rest of the
timeout, waking only when records are stored (see :mod:`service.events`).

The module functions :func:`submit`, :func:`status`, :func:`wait`, :func:`get_result` and
:func:`fetch_record` do the same with a producer built for the call (or the one passed in).

DoclingDocument input (docling's JSON object or the model) is converted to blocks here, on the
producer side, so the wire contract stays ``ChunkRequest``. The converter is passed in (this
module imports no converter, nor docling-core)::

    # pip install 'longparser-client[docling]'
    from longparser_client.converters.docling import blocks_from_docling
    handle = producer.submit(docling_doc, docling=blocks_from_docling, config={"max_tokens": 256})

The document id is the DoclingDocument's ``name`` (sanitised to the id pattern).

Markdown and plain text (a ``str``) are converted the same way, by a converter passed in; a
string carries no id, so ``document_id`` names it::

    # pip install 'longparser-client[markdown]'; blocks_from_text (plain text) needs no extra
    from longparser_client.converters.markdown import blocks_from_markdown
    handle = producer.submit(markdown, text_converter=blocks_from_markdown, document_id="notes")

Outages: every Redis call (the publish, the job entry, reads) is retried with backoff for up to
``LONGPARSER_SUBMIT_RETRY_WINDOW`` seconds, then :class:`~tasks.errors.BrokerUnavailable`
(naming the URL, password masked) is raised. A Redis that refuses writes because it is full
raises :class:`~tasks.errors.StoreFull` at once. The message is published before the job entry
is written, so a submission that failed to publish leaves no job entry behind.

What travels: the request's blocks (without the fields whose value is the default, which
validation fills in again) and the config fields its caller set, no others (a config field set
to its default value is set all the same); the worker's engine expands a ``fit`` preset
exactly as the library's does, so ``config={"fit": "model"}`` chunks as ``longparser chunk --fit
model`` does (:func:`tasks.payload.request_json_pieces`).

Routing: semantic requests and requests with ``embed`` go to ``LONGPARSER_SEMANTIC_QUEUE`` (the
workers that hold an encoder), the rest to ``LONGPARSER_STRUCTURAL_QUEUE``. A semantic job waits
there until a semantic worker takes it; a request with ``embed`` that no live worker can serve
(none announced an encoder, or not the one it names: :mod:`service.encoders`) is refused at once.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from celery import Celery

from longparser_client.celery_compat import check_producer
from longparser_client.errors import BrokerUnavailable, JobFailed, JobNotFound, ResultTimeout, StoreFull
from longparser_client.payload import (
    check_encoded_size,
    refuse_tokenizer_paths,
    refuse_undoing_fit,
    request_json_pieces,
)
from longparser_client.schemas import ChunkRequest, ChunkResult, InputError
from longparser_client.schemas.config import config_warnings
from longparser_client.schemas.errors import RequestRefused
from longparser_client.schemas.inputs import DoclingConverter, TextConverter, parse_config, parse_input
from longparser_client.service.celeryconfig import celery_config
from longparser_client.service.encoders import embed_refusal, live_encoders
from longparser_client.service.events import block_ms, entry_document_id, last_event_id
from longparser_client.service.keys import TASK_NAME, encoders_key, is_valid_document_id, result_key
from longparser_client.service.payloads import RedisPayloads
from longparser_client.service.redis_client import is_out_of_memory
from longparser_client.service.retry import Waits, call_with_retry, is_transient
from longparser_client.service.store import ResultStore
from longparser_client.settings import Settings, get_settings, masked_url

FINAL_STATES = frozenset({"SUCCESS", "FAILURE"})
EVENT_BATCH = 500  # entries one blocking read takes (other documents' events are skipped)
T = TypeVar("T")
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobHandle:
    """What :func:`submit` returns: enough to follow the job and find its result."""

    document_id: str
    task_id: str
    queue: str

    def as_dict(self) -> dict[str, str]:
        """JSON-ready form (the CLI prints it)."""
        return {"document_id": self.document_id, "task_id": self.task_id, "queue": self.queue}


def producer_celery(settings: Settings) -> Celery:
    """A Celery app configured exactly like the workers' (same visibility timeout, JSON only).

    Its own backend retries are off: the producer's calls are bounded by the submit window.
    """
    app = Celery("longparser", set_as_current=False)
    app.conf.update(celery_config(settings))
    app.conf.result_backend_always_retry = False
    return app


def _as_request(request: Any, semantic: bool | None, config: Mapping[str, Any] | None,
                docling: DoclingConverter | None, text_converter: TextConverter | None = None,
                document_id: str | None = None, embed: bool | str | None = None) -> ChunkRequest:
    """The request validated once: a ChunkRequest is taken as it is (only a config override is
    validated, never its blocks again); anything else goes through :func:`parse_input`."""
    overrides = dict(config or {})
    if semantic is not None:
        overrides["use_semantic_chunking"] = semantic
    if embed is not None:
        overrides["embed"] = embed
    if not isinstance(request, ChunkRequest):
        return parse_input(request, config_overrides=overrides, docling=docling,
                           text_converter=text_converter, default_document_id=document_id)
    if not overrides:
        return request
    fields = {**request.config.model_dump(exclude_unset=True), **overrides}
    return request.model_copy(update={"config": parse_config(fields)})


def _identify(job: str | JobHandle) -> tuple[str, JobHandle | None]:
    document_id = job.document_id if isinstance(job, JobHandle) else job
    if not is_valid_document_id(document_id):
        raise InputError(f"invalid document id {document_id!r}")
    return document_id, job if isinstance(job, JobHandle) else None


def job_view(document_id: str, task_id: str | None, queue: str | None, state: str, *,
             progress: dict[str, Any] | None = None, error: dict[str, Any] | None = None) -> dict[str, Any]:
    """The one shape of a job's status (``status`` of both clients)."""
    return {"document_id": document_id, "task_id": task_id, "queue": queue, "state": state,
            "progress": progress, "error": error}


def task_view(document_id: str, task_id: str, queue: str | None, state: str, info: Any,
              error: dict[str, Any] | None) -> dict[str, Any]:
    """Celery's view of a task: its state, the PROGRESS meta (``{"stage", "blocks", "chunks"}``)
    as progress, and ``error`` (``{"type", "message"}`` of a FAILURE or RETRY) otherwise. The
    blocking client reads them from ``AsyncResult``, the asyncio one decodes the backend's value the
    same way (``tasks.aio.task_view_from_meta``)."""
    if state == "PROGRESS" and isinstance(info, dict):
        return job_view(document_id, task_id, queue, state, progress=info)
    return job_view(document_id, task_id, queue, state, error=error)


def task_error(info: Any) -> dict[str, str] | None:
    """``{"type", "message"}`` of a FAILURE or RETRY, whose info Celery's backend revives as the
    exception (``Backend.decode_result``, what ``AsyncResult`` reads through); None otherwise."""
    if isinstance(info, BaseException):
        return {"type": type(info).__name__, "message": str(info)}
    return None


def _from_record(record: dict[str, Any], queue: str | None) -> dict[str, Any]:
    return job_view(record["document_id"], record.get("task_id"), queue, record["status"],
                    error=record.get("error"))


def unknown_view(document_id: str) -> dict[str, Any]:
    """The status of a document with no submission and no stored result."""
    return job_view(document_id, None, None, "UNKNOWN")


def status_from_store(document_id: str, handle: JobHandle | None, entry: dict[str, Any] | None,
                      record: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """What the store alone says of a job: ``(view, task_id, queue)``; view None when Celery's task
    state must decide (a submission whose record is not stored yet). Shared by both clients."""
    entry = entry or {}
    task_id = handle.task_id if handle else entry.get("task_id")
    queue = handle.queue if handle else entry.get("queue")
    if record is not None and (task_id is None or record.get("task_id") == task_id):
        return _from_record(record, queue), task_id, queue
    if task_id is None:
        return unknown_view(document_id), None, None
    return None, task_id, queue


def after_task_view(view: dict[str, Any], record: dict[str, Any] | None, queue: str | None) -> dict[str, Any]:
    """Celery's view of the task, unless it finished and a later run rewrote the record."""
    if view["state"] in FINAL_STATES and record is not None:
        return _from_record(record, queue)
    return view


def final_result(document_id: str, view: dict[str, Any], record: dict[str, Any] | None,
                 prefix: str) -> ChunkResult:
    """The result of a finished job, or the typed error (JobFailed, JobNotFound)."""
    if view["state"] == "FAILURE":
        error = view["error"] or {"type": "Unknown", "message": "no error recorded"}
        raise JobFailed(document_id, error["type"], error["message"])
    if record is None or record.get("result") is None:
        raise JobNotFound(
            f"document {document_id!r}: task {view['task_id']} succeeded but no result is stored under "
            f"{result_key(prefix, document_id)!r}: it expired, or the worker writes to "
            "another LONGPARSER_RESULT_URL / LONGPARSER_KEY_PREFIX than this client reads"
        )
    return ChunkResult.model_validate(record["result"])


def not_final(document_id: str, view: dict[str, Any], timeout: float) -> Exception:
    """The error of a job that did not finish within ``timeout``."""
    if view["state"] == "UNKNOWN":
        return JobNotFound(f"no job and no result for document {document_id!r}")
    return ResultTimeout(
        f"no result for document {document_id!r} after {timeout:g} s (state {view['state']}, "
        f"queue {view['queue']!r}: is a worker consuming that queue?)"
    )


def events_of(reply: Any, document_id: str) -> tuple[str | None, bool]:
    """``(newest entry id, whether an entry is about document_id)`` of an XREAD reply."""
    entries = reply[0][1] if reply else []
    if not entries:
        return None, False
    newest = entries[-1][0]
    found = any(entry_document_id(fields) == document_id for _, fields in entries)
    return newest.decode() if isinstance(newest, bytes) else newest, found


def _retry_on(exc: BaseException) -> bool:
    return is_transient(exc) and not is_out_of_memory(exc)


class Producer:
    """The producer side of the fleet for one :class:`Settings`: a Celery app and a store.

    Build one and reuse it (it holds connection pools); ``close()`` or ``with`` releases them.
    Tests build one on a fake app and a fakeredis store.
    """

    def __init__(self, settings: Settings, *, app: Any = None, store: ResultStore | None = None) -> None:
        check_producer()
        self.settings = settings
        self.app = app if app is not None else producer_celery(settings)
        self.store = store if store is not None else ResultStore.from_settings(settings)
        # Referenced requests live in the result store's Redis, on the store's connections.
        self.payloads = RedisPayloads(self.store.client, self.store.prefix, self.store.ttl)
        self.waits = Waits()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the store's and the app's connections."""
        self.store.close()
        close = getattr(self.app, "close", None)
        if close is not None:
            close()

    def _call(self, what: str, function: Callable[[], T]) -> T:
        """``function()`` with the submit window; typed errors for an outage or a full Redis."""
        try:
            return call_with_retry(function, window=self.settings.submit_retry_window, what=what,
                                   waits=self.waits, retry_on=_retry_on)
        except Exception as exc:
            if is_out_of_memory(exc):
                raise StoreFull(f"Redis at {masked_url(self.settings.broker_url)} is full (OOM under "
                                f"noeviction) while {what}; wait for workers to drain the queue or raise "
                                "maxmemory") from None
            if is_transient(exc):
                urls = {masked_url(self.settings.broker_url), masked_url(self.settings.result_url)}
                raise BrokerUnavailable(
                    f"broker/store unreachable at {', '.join(sorted(urls))} for "
                    f"{self.settings.submit_retry_window:g} s while {what} ({type(exc).__name__}: "
                    f"{' '.join(str(exc).split())})") from None
            raise

    def submit(self, request: ChunkRequest | dict[str, Any] | Any, *, semantic: bool | None = None,
               config: Mapping[str, Any] | None = None, docling: DoclingConverter | None = None,
               text_converter: TextConverter | None = None, document_id: str | None = None,
               embed: bool | str | None = None) -> JobHandle:
        """Validate, size-check and enqueue one document.

        Args:
            request: a ChunkRequest (already validated: used as it is), a dict in any shape
                ``longparser chunk`` accepts carrying a document id, a DoclingDocument (its JSON
                dict or the model; needs ``docling``), or a Markdown or plain-text document (a
                ``str``; needs ``text_converter`` and ``document_id``).
            semantic: None -> the request's ``config.use_semantic_chunking`` decides; True/False
                overrides that flag (and so the queue).
            config: ChunkingConfig fields that win over the request's own (a DoclingDocument
                carries none). Only the fields set here or in the request travel: the worker
                fills in the defaults and expands ``fit`` itself.
            docling: the DoclingDocument converter,
                ``longparser_client.converters.docling.blocks_from_docling``.
            text_converter: the converter of a string,
                ``longparser_client.converters.markdown.blocks_from_markdown`` or
                ``blocks_from_text``.
            document_id: the id of a document that carries none (a string, a block list, a
                DoclingDocument without a name of its own).
            embed: None -> the request's ``config.embed`` decides; True (the pinned model, or
                the encoder ``fit`` names when workers declare one by that name), an encoder's
                declared name, or False overrides it. Each chunk of the result then carries
                ``embedding`` (floats; packed in the stored record, decoded by ``get_result``).

        Raises:
            schemas.InputError: the request is invalid (message names block and field), a
                DoclingDocument docling-core cannot read, or one given without ``docling``, or
                it names a tokenizer by path (workers load only the ones they declare).
            schemas.errors.RequestRefused: a ``fit`` request's explicit fields would undo the fit
                (another ``token_counter``, ``strict_max_tokens`` false, ``max_tokens`` above the
                model's window), as every worker would refuse it; or ``embed`` that no live worker
                can serve (no worker announced an encoder, or not the one named). A config field that does
                nothing in the request's mode is logged as a warning (and listed in the result's
                ``stats.warnings``).
            longparser_client.converters.docling.DoclingNotInstalledError: (an ImportError)
                docling-core is missing.
            tasks.errors.PayloadTooLarge: over ``LONGPARSER_MAX_PAYLOAD_BYTES`` (256 MiB of JSON by
                default). Above ``LONGPARSER_REFERENCE_THRESHOLD_BYTES`` (1 MiB) the request's
                JSON is stored compressed in the result store's Redis (TTL: the result's) and the
                message carries a reference to it (docs/operations.md, "References").
            tasks.errors.BrokerUnavailable: Redis unreachable for the whole submit window.
            tasks.errors.StoreFull: Redis refused the write (full).
        """
        validated = _as_request(request, semantic, config, docling, text_converter, document_id, embed)
        refuse_tokenizer_paths(validated)
        refuse_undoing_fit(validated)
        self._refuse_unserved_embed(validated)
        for warning in config_warnings(validated.config):  # the result's stats.warnings will say it too
            logger.warning("config: %s", warning)
        # Encoded once, to UTF-8 bytes, with only the config fields the caller set (the worker's
        # engine expands a preset, as the library's does) and the blocks without their default
        # values: their length is the size check; small requests travel decoded inside the
        # message, large ones as a reference to these bytes (service.payloads), which are hashed
        # and compressed piece by piece. The request is then held twice at most: the model and
        # its JSON (plus the JSON compressed, for a reference).
        encoded = request_json_pieces(validated)
        size = check_encoded_size(sum(map(len, encoded)), self.settings.max_payload_bytes)
        queue = self.settings.queue_for(validated.config.needs_encoder)
        task_id = str(uuid.uuid4())
        document_id = validated.document_id
        if size > self.settings.reference_threshold_bytes:
            reference = self._call(f"storing the request of {document_id}",
                                   lambda: self.payloads.put(document_id, encoded))
            del encoded
            payload = reference.as_message(document_id)
            argsrepr = (f"[<ChunkRequest {document_id!r}: {len(validated.blocks)} blocks, by reference, "
                        f"{reference.bytes} bytes>]")
        else:
            payload = json.loads(b"".join(encoded))
            argsrepr = f"[<ChunkRequest {document_id!r}: {len(validated.blocks)} blocks>]"
        # Publish first: a message that never left leaves no job entry behind. Publishing twice
        # (a retry after a lost reply) is harmless: the task is idempotent. ignore_result: the
        # document store is the source of truth; it also spares a result-backend subscription
        # per submission (and that subscription's own reconnect errors during an outage).
        # argsrepr: what Flower and the task events show, given instead of Celery's saferepr of the
        # whole payload (costly on every submission, and a cut-off string anyway).
        self._call(f"publishing {document_id}", lambda: self.app.send_task(
            TASK_NAME, args=[payload], task_id=task_id, queue=queue, retry=False, ignore_result=True,
            argsrepr=argsrepr, kwargsrepr="{}"))
        self._call(f"recording the job of {document_id}",
                   lambda: self.store.save_job(document_id, task_id, queue))
        return JobHandle(document_id, task_id, queue)

    def _refuse_unserved_embed(self, request: ChunkRequest) -> None:
        """Raise RequestRefused when no live worker can serve the request's ``embed``."""
        if request.config.embed is False:
            return
        entries = self._call("reading the encoders workers hold",
                             lambda: self.store.client.hgetall(encoders_key(self.store.prefix)))
        queue = self.settings.semantic_queue
        refusal = embed_refusal(request.config, live_encoders(entries, queue), queue)
        if refusal:
            raise RequestRefused(refusal)

    def _task_view(self, document_id: str, task_id: str, queue: str | None) -> dict[str, Any]:
        async_result = self.app.AsyncResult(task_id)
        state, info = self._call(f"reading the state of {document_id}",
                                 lambda: (async_result.state, async_result.info))
        return task_view(document_id, task_id, queue, state, info, task_error(info))

    def status(self, job: str | JobHandle) -> dict[str, Any]:
        """Where a document's latest job stands.

        Returns:
            ``{"document_id", "task_id", "queue", "state", "progress", "error"}``. A stored
            record of the latest job (or of any job, when no submission is known) decides
            SUCCESS/FAILURE; otherwise Celery's task state (PROGRESS meta ``{"stage", "blocks",
            "chunks"}``). UNKNOWN: no submission and no stored result.
        """
        document_id, handle = _identify(job)
        entry = self._call(f"reading the job of {document_id}", lambda: self.store.load_job(document_id))
        record = self.fetch_record(document_id)
        view, task_id, queue = status_from_store(document_id, handle, entry, record)
        if view is not None:
            return view
        assert task_id is not None
        return after_task_view(self._task_view(document_id, task_id, queue), record, queue)

    def fetch_record(self, document_id: str) -> dict[str, Any] | None:
        """The stored record of a document (see :mod:`service.store`; a compressed result is
        returned decompressed), or None."""
        document_id, _ = _identify(document_id)
        return self._call(f"reading the result of {document_id}", lambda: self.store.load_record(document_id))

    def wait(self, job: str | JobHandle, timeout: float = 300.0) -> dict[str, Any]:
        """Block until a document's latest job is final, or ``timeout`` seconds have passed.

        Notes the completion stream's newest id, checks the status, then blocks on the stream
        (``XREAD BLOCK``) from that id for the rest of the timeout; the status is checked again
        only when an event of this document arrives. No polling: an idle wait is one blocking
        read per 20 s. (Noting the id before the check means an event stored between the check
        and the read is still seen.)

        Returns:
            the :meth:`status` view: final (SUCCESS/FAILURE), UNKNOWN at once (nothing submitted,
            nothing stored), or the last non-final view when the timeout passed.
        """
        document_id, _ = _identify(job)
        deadline = time.monotonic() + timeout
        last = self._call("reading the completion stream",
                          lambda: last_event_id(self.store.client, self.store.events_key))
        while True:
            view = self.status(job)
            if view["state"] in FINAL_STATES or view["state"] == "UNKNOWN":
                return view
            found = False
            while not found:
                if deadline - time.monotonic() <= 0:
                    return view
                reply = self._call(f"waiting for {document_id}", partial(self._read_events, last, deadline))
                newest, found = events_of(reply, document_id)
                last = newest or last

    def _read_events(self, after: str, deadline: float) -> Any:
        """One blocking read of the completion stream after ``after``, up to ``deadline`` (a
        retry after an outage blocks only for what is left)."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return []
        return self.store.client.xread({self.store.events_key: after}, count=EVENT_BATCH,
                                       block=block_ms(remaining))

    def get_result(self, job: str | JobHandle, *, timeout: float = 300.0) -> ChunkResult:
        """Wait for a document's result (:meth:`wait`: blocking on the completion stream).

        Raises:
            JobFailed: the task failed (``error_type``, ``message``).
            ResultTimeout: not finished within ``timeout`` seconds.
            JobNotFound: no submission and no result for the id.
            BrokerUnavailable: Redis unreachable for the whole submit window.
        """
        document_id, _ = _identify(job)
        view = self.wait(job, timeout)
        if view["state"] not in FINAL_STATES:
            raise not_final(document_id, view, timeout)
        return final_result(document_id, view, self.fetch_record(document_id), self.store.prefix)


def _run(settings: Settings | None, producer: Producer | None, use: Callable[[Producer], T]) -> T:
    if producer is not None:
        return use(producer)
    with Producer(settings or get_settings()) as owned:
        return use(owned)


def submit(request: ChunkRequest | dict[str, Any] | Any, *, semantic: bool | None = None,
           config: Mapping[str, Any] | None = None, docling: DoclingConverter | None = None,
           text_converter: TextConverter | None = None, document_id: str | None = None,
           embed: bool | str | None = None, settings: Settings | None = None,
           producer: Producer | None = None) -> JobHandle:
    """:meth:`Producer.submit` with ``producer`` (default: one built for this call)."""
    return _run(settings, producer,
                lambda p: p.submit(request, semantic=semantic, config=config, docling=docling,
                                   text_converter=text_converter, document_id=document_id, embed=embed))


def status(job: str | JobHandle, *, settings: Settings | None = None,
           producer: Producer | None = None) -> dict[str, Any]:
    """:meth:`Producer.status` with ``producer`` (default: one built for this call)."""
    return _run(settings, producer, lambda p: p.status(job))


def fetch_record(document_id: str, *, settings: Settings | None = None,
                 producer: Producer | None = None) -> dict[str, Any] | None:
    """:meth:`Producer.fetch_record` with ``producer`` (default: one built for this call)."""
    return _run(settings, producer, lambda p: p.fetch_record(document_id))


def wait(job: str | JobHandle, timeout: float = 300.0, *, settings: Settings | None = None,
         producer: Producer | None = None) -> dict[str, Any]:
    """:meth:`Producer.wait` with ``producer`` (default: one built for this call)."""
    return _run(settings, producer, lambda p: p.wait(job, timeout))


def get_result(job: str | JobHandle, *, timeout: float = 300.0, settings: Settings | None = None,
               producer: Producer | None = None) -> ChunkResult:
    """:meth:`Producer.get_result` with ``producer`` (default: one built for this call)."""
    return _run(settings, producer, lambda p: p.get_result(job, timeout=timeout))
