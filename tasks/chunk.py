"""The ``longparser.chunk_document`` task: validate, chunk, store, return a small summary.

The task is thin: :func:`run_chunk_job` holds the logic and takes its process's
:class:`~worker.context.WorkerContext` explicitly (settings, store, resources, counters), so the
same code runs in a worker, in eager mode and in tests that build a context.

Failure policy:

* a bad payload (too large, not a ChunkRequest, a semantic or ``embed`` request on a worker
  without the model, a tokenizer or encoder named by path or not declared, a request the engine
  refuses for lack of a resource) fails at once with a readable :class:`~tasks.errors.ChunkTaskError` (or the
  engine's :class:`~schemas.errors.RequestRefused`) and is never retried; a FAILURE record is
  stored under the document id so the producer sees why;
* Redis errors worth waiting out (connection, timeout, LOADING, READONLY, TRYAGAIN, OOM) are
  retried in this process for up to ``LONGPARSER_STORE_RETRY_WINDOW`` seconds; past it the
  message is rejected *with* requeue (and, while Redis is still away, stays unacknowledged for
  :mod:`worker.restore` to put back): never dropped, never acknowledged without a record;
* a message whose runs keep killing their worker process (a pool child killed by the OOM killer
  or a signal is requeued, ``reject_on_worker_lost``) is counted at each start in Redis
  (``P:starts:<task_id>``, deleted with the record): the start that reaches
  ``LONGPARSER_MAX_STARTS`` stores a FAILURE :class:`~tasks.errors.PoisonMessage` instead of
  running it, and the message is acknowledged;
* anything else (an engine bug, the soft time limit) stores a FAILURE record and fails as a
  :class:`~tasks.errors.ChunkingFailed` whose message names the original error (an arbitrary
  exception class may not survive the JSON result backend); the hard time limit stores its
  FAILURE record from the worker parent before the message is acknowledged
  (:class:`TimeLimitAwareRequest`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from celery.exceptions import Reject
from pydantic import TypeAdapter

from config.settings import Settings
from loaders.embedding import Embedder, attach_vectors, declared_refusal, embed_result, reserve_for_prefix
from longparser import chunk_blocks, chunk_request
from schemas import Chunk, ChunkRequest, ChunkResult, InputError
from schemas.chunks import PACKED_EMBEDDINGS, EmbeddingStoreStats
from schemas.config import BUILTIN_COUNTERS, is_tokenizer_name
from schemas.encoders import embedding_encoder
from service.keys import TASK_NAME, is_valid_document_id
from service.payloads import (
    CorruptPayload,
    MalformedReference,
    MissingPayload,
    RedisPayloads,
    Reference,
    is_reference_message,
    parse_reference,
)
from service.retry import call_with_retry, is_transient
from service.store import failure_record
from tasks.errors import (
    ChunkingFailed,
    ChunkTaskError,
    InvalidPayload,
    PoisonMessage,
    ReferenceCorrupt,
    ReferenceMissing,
    RequestRefused,
    SemanticUnavailable,
    StoreUnavailable,
)
from tasks.payload import (
    check_encoded_size,
    check_size,
    inline_limit,
    split_request,
    validate_payload,
)
from worker import celery_compat, inbound
from worker.celery_app import app
from worker.context import WorkerContext

logger = logging.getLogger(__name__)

Report = Callable[[str, dict[str, Any]], None]
T = TypeVar("T")
# The parent blocks its event loop while it stores a hard-time-limit FAILURE record: keep it short.
PARENT_STORE_WINDOW_S = 10.0


def _no_report(stage: str, counts: dict[str, Any]) -> None:
    return None


def check_semantic(request: ChunkRequest, settings: Settings) -> None:
    """Refuse a semantic request on a worker without the model (never degrade silently)."""
    if request.config.use_semantic_chunking and not settings.semantic_enabled:
        raise SemanticUnavailable(
            f"document {request.document_id!r} asks for semantic chunking but this worker has "
            f"LONGPARSER_SEMANTIC_ENABLED=false; send it to queue {settings.semantic_queue!r}, "
            "served by workers started with LONGPARSER_SEMANTIC_ENABLED=true"
        )


def check_tokenizers(request: ChunkRequest, settings: Settings) -> None:
    """Refuse a request naming a tokenizer by path, or by a name this worker does not declare:
    workers never open a path a request names; they load what LONGPARSER_TOKENIZERS declares."""
    declared = ", ".join(sorted(settings.tokenizers)) or "none"
    config = request.config
    for field, reference in (("token_counter", config.token_counter), ("fit", config.fit)):
        if reference is None or reference in BUILTIN_COUNTERS or reference in settings.tokenizers:
            continue
        if not is_tokenizer_name(reference):  # anything not name-shaped is a path
            raise RequestRefused(f"{field} {reference!r} is a path: workers never open a path a request "
                                 f"names; name a tokenizer LONGPARSER_TOKENIZERS declares ({declared})")
        raise RequestRefused(f"{field} {reference!r} is not a tokenizer this worker declares "
                             f"(LONGPARSER_TOKENIZERS declares: {declared})")


def check_embedding(request: ChunkRequest, context: WorkerContext) -> Embedder | None:
    """The encoder a request's ``embed`` names on this worker (None without ``embed``); refuse
    it on a worker that holds no encoder, or one that does not hold the encoder named."""
    if request.config.embed is False:
        return None
    settings = context.settings
    if not context.embedders:
        raise SemanticUnavailable(
            f"document {request.document_id!r} asks for embed but this worker holds no encoder "
            f"(LONGPARSER_SEMANTIC_ENABLED=false); send it to queue {settings.semantic_queue!r}, served by "
            "workers started with LONGPARSER_SEMANTIC_ENABLED=true")
    name = embedding_encoder(request.config, context.embedders) or ""
    if name not in context.embedders:
        raise RequestRefused(declared_refusal(name, context.embedders))
    return context.embedders[name]


def with_prefix_reserve(request: ChunkRequest, embedder: Embedder) -> ChunkRequest:
    """The request with room kept for the encoder's passage prefix (``reserve_tokens``)."""
    config = reserve_for_prefix(request.config, embedder)
    return request if config is request.config else request.model_copy(update={"config": config})


def embed_chunks(result: ChunkResult, document_id: str, embedder: Embedder, context: WorkerContext) -> None:
    """Give every chunk its vector: through the vector store when the worker has one (it reuses
    the vectors of unchanged embedded texts and writes the document's diff in one transaction,
    before the record, so the completion event follows the commit), else computed here.

    Raises:
        StoreUnavailable: PostgreSQL stayed away for the store retry window (nothing written;
            the message is left for redelivery, like a Redis outage).
    """
    settings = context.settings
    if not settings.vector_store_url:
        embed_result(result, embedder)
        return
    from worker.vector_store import EncoderIdentity, VectorStoreUnavailable

    identity = EncoderIdentity(name=embedder.name, weights_sha256=embedder.weights_sha256 or "",
                               dimension=embedder.dimension, normalized=embedder.normalized)
    chunks = [chunk.model_dump() for chunk in result.chunks]
    try:
        outcome = _vector_store(context).embed_and_apply(document_id, chunks, identity, embedder.passages)
    except VectorStoreUnavailable as exc:
        raise StoreUnavailable(f"{exc}; message left for redelivery") from exc
    written = EmbeddingStoreStats(collection=settings.vector_collection, inserted=outcome.inserted,
                                  updated=outcome.updated, deleted=outcome.deleted,
                                  unchanged=outcome.unchanged)
    attach_vectors(result, [chunk["embedding"] for chunk in chunks],
                   embedder.stats(embedded=outcome.embedded, reused=outcome.reused, store=written))


# (url, collection) -> the process's VectorStore: opened once per pool child, like its Redis client
_VECTOR_STORES: dict[tuple[str, str], Any] = {}


def _vector_store(context: WorkerContext) -> Any:
    from worker.vector_store import VectorStore

    settings = context.settings
    key = (settings.vector_store_url, settings.vector_collection)
    if key not in _VECTOR_STORES:
        _VECTOR_STORES[key] = VectorStore.open(*key, retry_window=settings.store_retry_window,
                                               waits=context.waits)
    return _VECTOR_STORES[key]


def raw_document_id(payload: Any) -> str | None:
    """The payload's document id when it is usable as a key, else None (before validation)."""
    if isinstance(payload, ChunkRequest):  # validated from the body (worker.serialization)
        return payload.document_id
    document_id = payload.get("document_id") if isinstance(payload, dict) else None
    return document_id if is_valid_document_id(document_id) else None


def _raw_block_count(payload: Any) -> int:
    if isinstance(payload, ChunkRequest):
        return len(payload.blocks)
    blocks = payload.get("blocks") if isinstance(payload, dict) else None
    return len(blocks) if isinstance(blocks, list) else 0


def _store_call(context: WorkerContext, what: str, call: Callable[[], T]) -> T:
    """One store call (a write, or a read: a referenced request, a record, the start count),
    waiting out transient errors for the store retry window."""
    try:
        return call_with_retry(call, window=context.settings.store_retry_window, what=what,
                               waits=context.waits)
    except Exception as exc:
        if is_transient(exc):
            raise StoreUnavailable(f"{what}: Redis unavailable for {context.settings.store_retry_window:g} s "
                                   f"({type(exc).__name__}: {exc}); message left for redelivery") from exc
        raise


def _store_failure(context: WorkerContext, document_id: str | None, task_id: str | None,
                   error: Exception) -> None:
    if document_id is None:
        # No trustworthy id, so no record: counted (`longparser metrics`) and logged once, with
        # the Celery FAILURE state of the task id as the message's only trace.
        logger.warning("document None refused (task %s): its document id cannot be read: %s: %s (counted in "
                       "longparser_unreadable_messages_total)", task_id, type(error).__name__, error)
        inbound.count_unreadable(context.store)
        return
    logger.info("document %s refused (task %s): %s: %s", document_id, task_id, type(error).__name__, error)
    record = failure_record(document_id, task_id, type(error).__name__, str(error))
    _store_call(context, f"storing the failure of {document_id}", lambda: context.store.save_record(record))


def _forget_starts(context: WorkerContext, task_id: str | None) -> None:
    """The start count of a run that ends without storing a record (no readable document id, or
    its request's result already stored), deleted best effort (left behind, it expires with
    LONGPARSER_RESULT_TTL); a stored record deletes it in the same write."""
    if task_id is None:
        return
    try:
        context.store.forget_starts(task_id)
    except Exception as exc:
        logger.warning("task %s: its start count was not deleted (%s); it expires with LONGPARSER_RESULT_TTL",
                       task_id, exc)


def _refuse(context: WorkerContext, document_id: str | None, task_id: str | None, error: Exception) -> None:
    """Store a refused run's FAILURE record (under a readable document id), or end without one."""
    _store_failure(context, document_id, task_id, error)
    if document_id is None:
        _forget_starts(context, task_id)


def _count_start(context: WorkerContext, task_id: str | None) -> None:
    """Count this start of the task; at ``LONGPARSER_MAX_STARTS`` starts without a stored record
    (the earlier runs died with their process, or could not store for a whole retry window),
    raise :class:`PoisonMessage` instead of running it again."""
    limit = context.settings.max_starts
    if not limit or task_id is None:
        return
    starts = _store_call(context, f"counting the start of task {task_id}",
                    lambda: context.store.count_start(task_id))
    if starts >= limit:
        raise PoisonMessage(f"task {task_id} was started {starts} times without storing a record (the "
                            f"earlier runs died with their worker process); refused instead of run again "
                            f"(LONGPARSER_MAX_STARTS={limit})")


def _payloads(context: WorkerContext) -> RedisPayloads:
    """The referenced requests' store: the result store's Redis, prefix and TTL."""
    return RedisPayloads(context.store.client, context.store.prefix, context.store.ttl)


def _check_size(payload: Any, reference: Reference | None, settings: Settings) -> None:
    """The one size check of a task's payload, before a block is parsed: a referenced request by
    the size its message declares (before a byte is read; the read checks the bytes against it),
    an inline one by its JSON under the inline limit. A ChunkRequest arrives validated from a
    body :mod:`worker.serialization` held to the inline limit: not re-encoded for its size."""
    if reference is not None:
        check_encoded_size(reference.bytes, settings.max_payload_bytes)
    elif not isinstance(payload, ChunkRequest):
        check_size(payload, *inline_limit(settings.max_payload_bytes, settings.max_inline_bytes))


def _reference_of(payload: dict[str, Any], settings: Settings) -> Reference:
    try:
        return parse_reference(payload, settings.key_prefix)
    except MalformedReference as exc:
        raise ReferenceCorrupt(str(exc)) from None


def _read_referenced(document_id: str, reference: Reference, context: WorkerContext) -> bytes:
    """A request sent by reference: its JSON, read and checked (size, digest)."""
    try:
        return _store_call(context, f"reading the request of {document_id}",
                      lambda: _payloads(context).get(reference))
    except MissingPayload as exc:
        raise ReferenceMissing(str(exc)) from None
    except CorruptPayload as exc:
        raise ReferenceCorrupt(str(exc)) from None


def _split_referenced(document_id: str, data: bytes) -> tuple[ChunkRequest, list[Any]]:
    """A referenced request's JSON as its envelope, validated here, and its blocks (decoded
    dicts) left to the engine, which validates each as it reads them."""
    request, blocks = split_request(data)
    if request.document_id != document_id:
        raise ReferenceCorrupt(f"referenced request is document {request.document_id!r}, "
                               f"not the message's {document_id!r}")
    return request, blocks


def _handed_over(blocks: list[Any]) -> Iterator[Any]:
    """``blocks`` first to last, each taken out of the list as it is read: the engine reads a
    block once and keeps what it needs of it, so the decoded dict is freed then and its memory
    goes to the chunks being built instead of adding to it (a large document's peak memory)."""
    blocks.reverse()
    while blocks:
        yield blocks.pop()


def _chunk_referenced(request: ChunkRequest, blocks: list[Any], context: WorkerContext) -> ChunkResult:
    """The engine on a referenced request's blocks (dicts, validated as it reads them), which
    it consumes: ``blocks`` is empty afterwards."""
    try:
        return chunk_blocks(_handed_over(blocks), request.config, context.resources,
                            document_id=request.document_id)
    except InputError as exc:  # a block the engine refused: the payload is invalid, as inline
        raise InvalidPayload(str(exc)) from None


_CHUNKS_PER_PIECE = 500
_encode_chunks = TypeAdapter(list[Chunk]).serializer.to_json


def result_json_pieces(result: ChunkResult) -> Iterator[bytes]:
    """The result's JSON, exactly as pydantic's serializer writes it whole, in pieces of a few
    hundred chunks; each piece's chunks are taken out of ``result.chunks`` as it is encoded, so
    a large result is never held as models and JSON at once, nor as one JSON buffer.

    The frame (every field but the chunks) is the serializer's own output for the result with
    no chunks, cut where its empty chunk list stands: its first ``"chunks":[]`` (a key: quotes
    inside strings are escaped).
    """
    head, tail = ChunkResult.__pydantic_serializer__.to_json(
        result.model_copy(update={"chunks": []})).split(b'"chunks":[]', 1)
    yield head + b'"chunks":['
    chunks = result.chunks
    chunks.reverse()
    separator = b""
    while chunks:
        piece = [chunks.pop() for _ in range(min(_CHUNKS_PER_PIECE, len(chunks)))]
        # the list's items, without its brackets; vectors packed (schemas.chunks.pack_vector)
        yield separator + _encode_chunks(piece, context={PACKED_EMBEDDINGS: True})[1:-1]
        separator = b","
    yield b"]" + tail


def _stored_same_request(context: WorkerContext, document_id: str, reference: Reference) -> dict | None:
    """The SUCCESS record of this very request (same digest), when one is stored."""
    record = _store_call(context, f"reading the record of {document_id}",
                    lambda: context.store.load_record(document_id))
    if record and record.get("status") == "SUCCESS" and record.get("request_sha256") == reference.sha256:
        return record
    return None


def _forget_reference(context: WorkerContext, reference: Reference | None, document_id: str | None) -> None:
    """Delete a referenced request's bytes once its document's record is stored (best effort:
    left behind, they expire with the result's TTL).

    ``reference``: only the reference of the run that owns the bytes - it read them and they
    matched everything its message declares (key, size, digest). A message that names another
    document's bytes with a wrong size or digest is refused without deleting them, so their own
    message still finds them.
    """
    if reference is None:
        return
    try:
        _payloads(context).delete(reference)
    except Exception as exc:
        logger.warning("document %s: the referenced request %s was not deleted (%s); it expires with "
                       "LONGPARSER_RESULT_TTL", document_id, reference.key, exc)


def run_chunk_job(
    payload: Any,
    context: WorkerContext,
    *,
    task_id: str | None = None,
    report: Report = _no_report,
    redelivered: bool = False,
) -> dict[str, Any]:
    """Validate ``payload``, chunk it, store the record; returns the task's summary.

    Raises:
        ChunkTaskError: bad payload / semantic mismatch / engine failure / a poison message
            (:class:`PoisonMessage`: the start that reached ``LONGPARSER_MAX_STARTS``) (record stored).
        RequestRefused: the request asks for what this worker cannot serve (record stored).
        StoreUnavailable: Redis stayed away for the whole store retry window (nothing stored).
    """
    started = time.perf_counter()
    document_id = raw_document_id(payload)
    referenced = is_reference_message(payload)
    if not referenced and _raw_block_count(payload) < context.settings.progress_min_blocks:
        report = _no_report  # done before a progress state would be read: not worth 3 Redis writes
    if redelivered:
        context.counters.redelivered += 1
        logger.warning("document %s: redelivered task %s (redeliveries in this process: %d)",
                       document_id, task_id, context.counters.redelivered)
    reference: Reference | None = None
    owned: Reference | None = None  # set once the referenced bytes matched the message: ours to delete
    raw_blocks: list[Any] | None = None  # a referenced request's blocks, validated by the engine
    try:
        _count_start(context, task_id)
        if referenced:
            reference = _reference_of(payload, context.settings)
        _check_size(payload, reference, context.settings)
        if reference is not None:
            data = _read_referenced(payload["document_id"], reference, context)
            owned = reference  # they inflated to the declared size with the declared digest
            request, raw_blocks = _split_referenced(payload["document_id"], data)
            del data  # the request's bytes are not needed while it is chunked
            if len(raw_blocks) < context.settings.progress_min_blocks:
                report = _no_report
        elif isinstance(payload, ChunkRequest):
            report("validating", {"document_id": document_id, "blocks": len(payload.blocks), "chunks": 0})
            request = payload
        else:
            report("validating", {"document_id": document_id, "blocks": _raw_block_count(payload),
                                  "chunks": 0})
            request = validate_payload(payload)
        check_semantic(request, context.settings)
        check_tokenizers(request, context.settings)
        embedder = check_embedding(request, context)
        if embedder is not None:
            request = with_prefix_reserve(request, embedder)
        blocks = len(request.blocks) if raw_blocks is None else len(raw_blocks)
        report("chunking", {"document_id": request.document_id, "blocks": blocks, "chunks": 0})
        if raw_blocks is None:
            result = chunk_request(request, context.resources)
        else:
            result = _chunk_referenced(request, raw_blocks, context)  # empties raw_blocks
        if embedder is not None:
            report("embedding", {"document_id": request.document_id, "blocks": blocks,
                                 "chunks": len(result.chunks)})
            embed_chunks(result, request.document_id, embedder, context)
    except ReferenceMissing as exc:
        done = _stored_same_request(context, document_id, reference) if reference and document_id else None
        if done is not None:  # a run of this very request stored its result, then consumed the bytes
            logger.warning("document %s: task %s found its referenced request gone and the same "
                           "request's result stored (task %s); nothing to do",
                           document_id, task_id, done.get("task_id"))
            _forget_starts(context, task_id)
            return {"document_id": document_id, "status": "SUCCESS", "blocks": None, "chunks": None,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                    "result_key": None, "already_stored": True}
        _refuse(context, document_id, task_id, exc)
        raise
    except (ChunkTaskError, RequestRefused) as exc:
        _refuse(context, document_id, task_id, exc)
        _forget_reference(context, owned, document_id)
        raise
    except StoreUnavailable:
        raise  # counting the start, reading a referenced request: left for redelivery, like a store write
    except Exception as exc:  # engine bug or SoftTimeLimitExceeded: fail visibly, JSON-safe
        failed = ChunkingFailed(f"{type(exc).__name__}: {exc}")
        logger.exception("document %s: chunking failed (task %s)", document_id, task_id)
        _refuse(context, document_id, task_id, failed)
        _forget_reference(context, owned, document_id)
        raise failed from exc
    chunks = len(result.chunks)
    report("storing", {"document_id": request.document_id, "blocks": blocks, "chunks": chunks})
    # UTF-8 bytes straight from pydantic's serializer, the result's models freed before the
    # record is built around them (a large document's peak memory).
    chunk_ids = [chunk.chunk_id for chunk in result.chunks]
    result_json = context.store.stored(result_json_pieces(result))  # empties result.chunks
    del result
    key = _store_call(context, f"storing {request.document_id}",
                 lambda: context.store.save_success(request.document_id, task_id, result_json, chunk_ids,
                                                    request_sha256=reference.sha256 if reference else None))
    _forget_reference(context, owned, request.document_id)
    duration_ms = round((time.perf_counter() - started) * 1000, 1)
    logger.info("chunked document %s: %d blocks -> %d chunks in %.1f ms (task %s)",
                request.document_id, blocks, chunks, duration_ms, task_id)
    return {"document_id": request.document_id, "status": "SUCCESS", "blocks": blocks, "chunks": chunks,
            "duration_ms": duration_ms, "result_key": key}


def store_time_limit_failure(context: WorkerContext, payload: Any, task_id: str, timeout: float) -> None:
    """The FAILURE record of a task the hard time limit killed (worker parent, short window).

    A referenced request's bytes are left to expire with LONGPARSER_RESULT_TTL: the parent cannot
    tell whether the killed run read them and found them to be what its message declared (only
    the run that owns them deletes them), and a resubmission of the same request rewrites them.
    """
    document_id = raw_document_id(payload)
    if document_id is None:
        _forget_starts(context, task_id)  # no record to delete its start count with
        return
    error = ChunkingFailed(f"TimeLimitExceeded: the hard time limit ({timeout:g} s) stopped the task; "
                           "split the document or raise LONGPARSER_HARD_TIME_LIMIT")
    record = failure_record(document_id, task_id, type(error).__name__, str(error))
    call_with_retry(lambda: context.store.save_record(record), window=PARENT_STORE_WINDOW_S,
                    what=f"storing the time-limit failure of {document_id}", waits=context.waits)


class TimeLimitAwareRequest(celery_compat.CeleryRequest):
    """Celery's request, storing a FAILURE record before a hard-time-limit kill is acknowledged.

    Runs in the worker parent (the child is gone). When the record cannot be stored, the
    message is rejected with requeue instead of acknowledged: it runs again later, and stops
    with a stored record then.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        celery_compat.drop_decoded_arguments(self)

    def on_timeout(self, soft: bool, timeout: float) -> None:
        context = getattr(self.task.app, "context", None)
        if soft or context is None:
            super().on_timeout(soft, timeout)
            return
        try:
            store_time_limit_failure(context, (self.args or [None])[0], self.id, timeout)
        except Exception as exc:
            logger.error("task %s: hard time limit, and its FAILURE record could not be stored (%s); "
                         "requeued instead of acknowledged", self.id, exc)
            celery_compat.release_request(self)
            self.reject(requeue=True)
            return
        super().on_timeout(soft, timeout)


def _context(task: Any) -> WorkerContext:
    context = task.app.context
    if context is None:
        raise RuntimeError("no worker context: the task runs in a worker process, whose "
                           "worker_process_init builds it (worker.signals); tests set app.context")
    return context


@app.task(
    name=TASK_NAME,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    throws=(ChunkTaskError, RequestRefused),
    Request=TimeLimitAwareRequest,
)
def chunk_document(self: Any, payload: dict[str, Any] | ChunkRequest) -> dict[str, Any]:
    """Chunk one ChunkRequest (a JSON dict, a reference to one, or in a worker child the request
    already validated from the body) and store the result under its document id."""

    def report(stage: str, counts: dict[str, Any]) -> None:
        try:
            self.update_state(state="PROGRESS", meta={"stage": stage, **counts})
        except Exception as exc:  # progress is advisory: an outage must not fail the document
            logger.warning("progress of task %s not recorded: %s", self.request.id, exc)

    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    try:
        return run_chunk_job(payload, _context(self), task_id=self.request.id, report=report,
                             redelivered=redelivered)
    except StoreUnavailable as exc:
        logger.error("%s", exc)
        raise Reject(str(exc), requeue=True) from exc
