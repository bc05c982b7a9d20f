"""The task with a vector store configured: the chunks reach PostgreSQL (a real pgserver server)
before the record, a collection of another dimension is a recorded FAILURE, and a store that
stays away leaves the message for redelivery with nothing stored.

The worker's call site is tasks.chunk.embed_chunks: a request with ``embed`` on a worker whose
settings name a store.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

import psycopg
import pytest

from loaders.embedding import Embedder
from schemas.encoders import PINNED_ENCODER
from tasks.chunk import run_chunk_job
from tasks.errors import ChunkingFailed, StoreUnavailable
from tests.unit.test_vector_store import StubEncoder
from tests.unit.worker_fixtures import context, isolated_settings, payload, settings, store  # noqa: F401
from worker.context import WorkerContext


def stub_embedder(dimension: int = 8) -> Embedder:
    """The pinned encoder's name with fixed vectors per text; its calls are recorded."""
    embedder = Embedder(name=PINNED_ENCODER, weights_sha256="d" * 64, backend="stub", normalized=True,
                        passages=StubEncoder(dimension), queries=StubEncoder(dimension), prefix_tokens=0)
    embedder.__dict__["dimension"] = dimension  # known: no probe call
    return embedder


@pytest.fixture
def vector_context(context: WorkerContext, postgres) -> WorkerContext:  # noqa: F811
    configured = context.settings.model_copy(update={
        "vector_store_url": postgres.url, "vector_collection": f"t_{uuid.uuid4().hex[:12]}",
        "semantic_enabled": True})
    return replace(context, settings=configured, embedders={PINNED_ENCODER: stub_embedder()})


def stored_chunk_ids(worker: WorkerContext, document_id: str) -> list[str]:
    with psycopg.connect(worker.settings.vector_store_url) as connection:
        return sorted(row[0] for row in connection.execute(
            f'SELECT chunk_id FROM "{worker.settings.vector_collection}" WHERE document_id = %s',
            [document_id]).fetchall())


def test_the_chunks_reach_the_store_and_the_record_follows(vector_context):
    summary = run_chunk_job(payload(embed=True), vector_context, task_id="t-1")
    record = vector_context.store.load_record("doc-1")
    assert summary["status"] == "SUCCESS" and record["status"] == "SUCCESS"
    chunk_ids = sorted(chunk["chunk_id"] for chunk in record["result"]["chunks"])
    assert stored_chunk_ids(vector_context, "doc-1") == chunk_ids
    encoder = vector_context.embedders[PINNED_ENCODER].passages
    again = run_chunk_job(payload(embed=True), vector_context, task_id="t-1")  # redelivered
    assert again["status"] == "SUCCESS"
    assert sum(len(call) for call in encoder.calls) == summary["chunks"]  # each text embedded once
    embedding = vector_context.store.load_record("doc-1")["result"]["stats"]["embedding"]
    assert (embedding["embedded"], embedding["reused"]) == (0, summary["chunks"])
    written = embedding["store"]
    assert (written["inserted"], written["updated"], written["deleted"], written["unchanged"]) == (
        0, 0, 0, summary["chunks"])


def test_a_collection_of_another_dimension_is_a_recorded_failure(vector_context):
    run_chunk_job(payload(embed=True), vector_context, task_id="t-1")
    wide = replace(vector_context, embedders={PINNED_ENCODER: stub_embedder(16)})
    with pytest.raises(ChunkingFailed):
        run_chunk_job(payload("doc-2", embed=True), wide, task_id="t-2")
    record = wide.store.load_record("doc-2")
    assert record["status"] == "FAILURE"
    collection = vector_context.settings.vector_collection
    assert f"vector collection {collection!r} stores vectors of 8 dimensions; the encoder gives 16" in \
        record["error"]["message"]
    assert stored_chunk_ids(vector_context, "doc-2") == []


def test_a_store_that_stays_away_leaves_the_message_with_nothing_stored(vector_context, tmp_path):
    away = vector_context.settings.model_copy(update={
        "vector_store_url": f"postgresql://postgres@/postgres?host={tmp_path}", "store_retry_window": 0.5})
    worker = replace(vector_context, settings=away)
    with pytest.raises(StoreUnavailable, match=r"PostgreSQL at .* unavailable"):
        run_chunk_job(payload(embed=True), worker, task_id="t-1")
    assert worker.store.load_record("doc-1") is None
