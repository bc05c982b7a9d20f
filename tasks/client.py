"""Producer client for upload services: submit a document, follow it, fetch its chunks.

Importable without the worker's heavy dependencies: it needs Celery (to send the task) and
redis (to read the store), never torch or sentence-transformers, and it does not build the
worker's app or import the engine's pipeline.

    handle = submit({"document_id": "doc-1", "blocks": blocks})
    status(handle)["state"]          # PENDING | STARTED | PROGRESS | RETRY | SUCCESS | FAILURE | UNKNOWN
    result = get_result("doc-1", timeout=60)   # schemas.ChunkResult

Routing: semantic requests go to ``LONGPARSER_SEMANTIC_QUEUE``, the rest to
``LONGPARSER_STRUCTURAL_QUEUE``. A semantic job waits there until a semantic worker takes it.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from celery import Celery

from config.settings import Settings, get_settings
from schemas import ChunkRequest, ChunkResult, InputError, parse_input
from service.celeryconfig import celery_config
from service.keys import TASK_NAME, is_valid_document_id, result_key
from service.store import get_store
from tasks.errors import JobFailed, JobNotFound, ResultTimeout
from tasks.payload import check_size

FINAL_STATES = frozenset({"SUCCESS", "FAILURE"})
_FIRST_POLL_S = 0.01


@dataclass(frozen=True)
class JobHandle:
    """What :func:`submit` returns: enough to follow the job and find its result."""

    document_id: str
    task_id: str
    queue: str

    def as_dict(self) -> dict[str, str]:
        """JSON-ready form (the CLI prints it)."""
        return {"document_id": self.document_id, "task_id": self.task_id, "queue": self.queue}


@lru_cache(maxsize=4)
def producer_app(settings: Settings) -> Celery:
    """A Celery app configured exactly like the workers' (same visibility timeout, JSON only)."""
    client_app = Celery("longparser", set_as_current=False)
    client_app.conf.update(celery_config(settings))
    return client_app


def _as_request(request: ChunkRequest | dict[str, Any], semantic: bool | None) -> ChunkRequest:
    if isinstance(request, ChunkRequest):
        request = request.model_dump(mode="json")
    overrides = None if semantic is None else {"use_semantic_chunking": semantic}
    return parse_input(request, config_overrides=overrides)


def submit(
    request: ChunkRequest | dict[str, Any], *, semantic: bool | None = None, settings: Settings | None = None
) -> JobHandle:
    """Validate, size-check and enqueue one document.

    Args:
        request: a ChunkRequest, or a dict in any shape ``longparser chunk`` accepts, carrying
            a document id.
        semantic: None -> the request's ``config.use_semantic_chunking`` decides; True/False
            overrides that flag (and so the queue).

    Raises:
        schemas.InputError: the request is invalid (message names block and field).
        tasks.errors.PayloadTooLarge: over ``LONGPARSER_MAX_PAYLOAD_BYTES``.
        kombu.exceptions.OperationalError, redis.exceptions.ConnectionError: broker/store down.
    """
    settings = settings or get_settings()
    validated = _as_request(request, semantic)
    payload = validated.model_dump(mode="json")
    check_size(payload, settings.max_payload_bytes)
    queue = settings.queue_for(validated.config.use_semantic_chunking)
    task_id = str(uuid.uuid4())
    # The job entry is written first, so status() never sees a task it cannot attribute.
    get_store(settings).save_job(validated.document_id, task_id, queue)
    producer_app(settings).send_task(TASK_NAME, args=[payload], task_id=task_id, queue=queue)
    return JobHandle(validated.document_id, task_id, queue)


def _identify(job: str | JobHandle) -> tuple[str, JobHandle | None]:
    document_id = job.document_id if isinstance(job, JobHandle) else job
    if not is_valid_document_id(document_id):
        raise InputError(f"invalid document id {document_id!r}")
    return document_id, job if isinstance(job, JobHandle) else None


def _from_record(record: dict[str, Any], queue: str | None) -> dict[str, Any]:
    return {"document_id": record["document_id"], "task_id": record.get("task_id"), "queue": queue,
            "state": record["status"], "progress": None, "error": record.get("error")}


def _task_view(settings: Settings, document_id: str, task_id: str, queue: str | None) -> dict[str, Any]:
    async_result = producer_app(settings).AsyncResult(task_id)
    state, info = async_result.state, async_result.info
    view = {"document_id": document_id, "task_id": task_id, "queue": queue, "state": state,
            "progress": None, "error": None}
    if state == "PROGRESS" and isinstance(info, dict):
        view["progress"] = info
    elif isinstance(info, BaseException):  # FAILURE / RETRY carry the exception
        view["error"] = {"type": type(info).__name__, "message": str(info)}
    return view


def status(job: str | JobHandle, *, settings: Settings | None = None) -> dict[str, Any]:
    """Where a document's latest job stands.

    Returns:
        ``{"document_id", "task_id", "queue", "state", "progress", "error"}``. A stored record
        of the latest job (or of any job, when no submission is known) decides SUCCESS/FAILURE;
        otherwise Celery's task state (with PROGRESS meta ``{"stage", "blocks", "chunks"}``).
        UNKNOWN: no submission and no stored result.
    """
    settings = settings or get_settings()
    document_id, handle = _identify(job)
    store = get_store(settings)
    entry = store.load_job(document_id) or {}
    task_id = handle.task_id if handle else entry.get("task_id")
    queue = handle.queue if handle else entry.get("queue")
    record = store.load_record(document_id)
    if record is not None and (task_id is None or record.get("task_id") == task_id):
        return _from_record(record, queue)
    if task_id is None:
        return {"document_id": document_id, "task_id": None, "queue": None, "state": "UNKNOWN",
                "progress": None, "error": None}
    view = _task_view(settings, document_id, task_id, queue)
    if view["state"] in FINAL_STATES and record is not None:
        return _from_record(record, queue)  # the task finished; a later run rewrote the record
    return view


def fetch_record(document_id: str, *, settings: Settings | None = None) -> dict[str, Any] | None:
    """The raw stored record of a document (see :mod:`service.store`), or None."""
    document_id, _ = _identify(document_id)
    return get_store(settings or get_settings()).load_record(document_id)


def _final_result(document_id: str, view: dict[str, Any], settings: Settings) -> ChunkResult:
    if view["state"] == "FAILURE":
        error = view["error"] or {"type": "Unknown", "message": "no error recorded"}
        raise JobFailed(document_id, error["type"], error["message"])
    store = get_store(settings)
    record = store.load_record(document_id)
    if record is None or record.get("result") is None:
        raise JobNotFound(
            f"document {document_id!r}: task {view['task_id']} succeeded but no result is stored under "
            f"{result_key(store.prefix, document_id)!r}: it expired, or the worker writes to another "
            "LONGPARSER_RESULT_URL / LONGPARSER_KEY_PREFIX than this client reads"
        )
    return ChunkResult.model_validate(record["result"])


def get_result(
    job: str | JobHandle,
    *,
    timeout: float = 300.0,
    poll_interval: float = 0.2,
    settings: Settings | None = None,
) -> ChunkResult:
    """Wait for a document's result (polling, interval growing from 10 ms to ``poll_interval``).

    Raises:
        JobFailed: the task failed (``error_type``, ``message``).
        ResultTimeout: not finished within ``timeout`` seconds.
        JobNotFound: no submission and no result for the id.
    """
    settings = settings or get_settings()
    document_id, _ = _identify(job)
    deadline = time.monotonic() + timeout
    delay = min(_FIRST_POLL_S, poll_interval)
    while True:
        view = status(job, settings=settings)
        if view["state"] in FINAL_STATES:
            return _final_result(document_id, view, settings)
        if view["state"] == "UNKNOWN":
            raise JobNotFound(f"no job and no result for document {document_id!r}")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ResultTimeout(
                f"no result for document {document_id!r} after {timeout:g} s (state {view['state']}, "
                f"queue {view['queue']!r}: is a worker consuming that queue?)"
            )
        time.sleep(min(delay, remaining))
        delay = min(delay * 1.5, poll_interval)
