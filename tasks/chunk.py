"""The ``longparser.chunk_document`` task: validate, chunk, store, return a small summary.

The task is thin: :func:`run_chunk_job` holds the logic with its collaborators passed in (the
settings, the store, the resources, a progress callback), so the same code runs in a worker,
in eager mode and in tests.

Failure policy:

* a bad payload (too large, not a ChunkRequest, a semantic request on a worker without the
  model) fails at once with a readable :class:`~tasks.errors.ChunkTaskError` and is never
  retried; a FAILURE record is stored under the document id so the producer sees why;
* transient broker/store errors (Redis connection/timeout/loading, kombu operational) are
  retried with exponential backoff and jitter, ``LONGPARSER_TASK_MAX_RETRIES`` times;
* anything else (an engine bug, the soft time limit) stores a FAILURE record and fails as a
  :class:`~tasks.errors.ChunkingFailed` whose message names the original error (an arbitrary
  exception class may not survive the JSON result backend).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import redis.exceptions
from kombu.exceptions import OperationalError

from config.settings import Settings, get_settings
from longparser import chunk_request
from longparser.resources import Resources
from schemas import ChunkRequest
from service.keys import TASK_NAME, is_valid_document_id
from service.store import ResultStore, failure_record, get_store, payload_sha256, success_record
from tasks.errors import ChunkingFailed, ChunkTaskError, SemanticUnavailable
from tasks.payload import check_size, validate_payload
from worker.celery_app import app
from worker.process import get_process_resources

logger = logging.getLogger(__name__)

TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    redis.exceptions.ConnectionError,  # includes BusyLoadingError
    redis.exceptions.TimeoutError,
    OperationalError,
)
Report = Callable[[str, dict[str, Any]], None]


def check_semantic(request: ChunkRequest, settings: Settings) -> None:
    """Refuse a semantic request on a worker without the model (never degrade silently)."""
    if request.config.use_semantic_chunking and not settings.semantic_enabled:
        raise SemanticUnavailable(
            f"document {request.document_id!r} asks for semantic chunking but this worker has "
            f"LONGPARSER_SEMANTIC_ENABLED=false; send it to queue {settings.semantic_queue!r}, "
            "served by workers started with LONGPARSER_SEMANTIC_ENABLED=true"
        )


def _raw_document_id(payload: Any) -> str | None:
    document_id = payload.get("document_id") if isinstance(payload, dict) else None
    return document_id if is_valid_document_id(document_id) else None


def _raw_block_count(payload: Any) -> int:
    blocks = payload.get("blocks") if isinstance(payload, dict) else None
    return len(blocks) if isinstance(blocks, list) else 0


def _store_failure(store: ResultStore, document_id: str | None, task_id: str | None,
                   digest: str | None, error: Exception) -> None:
    logger.info("document %s refused (task %s): %s: %s", document_id, task_id, type(error).__name__, error)
    if document_id is None:
        return  # no trustworthy id: the Celery FAILURE state is the only record
    store.save_record(failure_record(document_id, task_id, digest, type(error).__name__, str(error)))


def _prepare(payload: Any, settings: Settings, report: Report) -> tuple[ChunkRequest, str]:
    check_size(payload, settings.max_payload_bytes)
    digest = payload_sha256(payload)
    report("validating", {"document_id": _raw_document_id(payload), "blocks": _raw_block_count(payload),
                          "chunks": 0})
    request = validate_payload(payload)
    check_semantic(request, settings)
    return request, digest


def run_chunk_job(
    payload: Any,
    *,
    settings: Settings,
    store: ResultStore,
    resources: Callable[[], Resources],
    report: Report,
    task_id: str | None = None,
) -> dict[str, Any]:
    """Validate ``payload``, chunk it, store the record; returns the task's summary.

    Raises:
        ChunkTaskError: bad payload / semantic mismatch / engine failure (record stored).
        TRANSIENT_ERRORS: the store or backend is unreachable (the task retries).
    """
    started = time.perf_counter()
    document_id = _raw_document_id(payload)
    digest: str | None = None
    try:
        request, digest = _prepare(payload, settings, report)
        blocks = len(request.blocks)
        report("chunking", {"document_id": request.document_id, "blocks": blocks, "chunks": 0})
        result = chunk_request(request, resources())
    except TRANSIENT_ERRORS:
        raise
    except ChunkTaskError as exc:
        _store_failure(store, document_id, task_id, digest, exc)
        raise
    except Exception as exc:  # engine bug or SoftTimeLimitExceeded: fail visibly, JSON-safe
        failed = ChunkingFailed(f"{type(exc).__name__}: {exc}")
        logger.exception("document %s: chunking failed (task %s)", document_id, task_id)
        _store_failure(store, document_id, task_id, digest, failed)
        raise failed from exc
    chunks = len(result.chunks)
    report("storing", {"document_id": request.document_id, "blocks": blocks, "chunks": chunks})
    key = store.save_record(
        success_record(request.document_id, task_id, digest, result.model_dump(mode="json"))
    )
    duration_ms = round((time.perf_counter() - started) * 1000, 1)
    logger.info("chunked document %s: %d blocks -> %d chunks in %.1f ms (task %s)",
                request.document_id, blocks, chunks, duration_ms, task_id)
    return {"document_id": request.document_id, "status": "SUCCESS", "blocks": blocks, "chunks": chunks,
            "duration_ms": duration_ms, "result_key": key}


@app.task(
    name=TASK_NAME,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=2,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=get_settings().task_max_retries,
    throws=(ChunkTaskError,),
)
def chunk_document(self: Any, payload: dict[str, Any]) -> dict[str, Any]:
    """Chunk one ChunkRequest (a JSON dict) and store the result under its document id."""

    def report(stage: str, counts: dict[str, Any]) -> None:
        self.update_state(state="PROGRESS", meta={"stage": stage, **counts})

    return run_chunk_job(
        payload,
        settings=get_settings(),
        store=get_store(),
        resources=get_process_resources,
        report=report,
        task_id=self.request.id,
    )
