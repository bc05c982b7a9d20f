"""The retrieval benchmark's through-store row (``bench-retrieval --through-store``): the split's
documents run through the worker's code, the vector store and ``longparser search``.

Each document goes through :func:`tasks.chunk.run_chunk_job`, the function a worker's task runs,
as a request with the recommended config and ``embed`` on a worker context whose settings name
the vector store (PostgreSQL with pgvector: a URL given, or a ``pgserver`` one started in a
temporary directory): the worker chunks the document, embeds the chunks with its pinned model
and writes them to the store. Each question is then embedded as ``longparser search`` embeds a
query and ranked by :meth:`worker.vector_store.VectorStore.search` filtered by its document (an
exact scan), asking for every chunk of the document so that the whole ranking is scored. The
record store is an in-process fakeredis: the records are read back for the chunks' embedded
texts, in chunk order, which the row scores exactly like the offline row.

The row must equal the offline recommended row: the same chunks, the same windowing of long
texts, float32 vectors; a question's rank may differ only where chunks tie (:func:`beyond_ties`).
"""

from __future__ import annotations

import contextlib
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

THROUGH_STORE_ROW = "ours: recommended, through worker, store and search"
# Two cosines closer than this are a tie: float32 vectors computed in other batches differ by less.
TIE_TOLERANCE = 1e-5

QueryEmbedder = Callable[[list[str]], np.ndarray]


@contextlib.contextmanager
def postgres_url(url: str | None) -> Iterator[str]:
    """``url``, or a fresh ``pgserver`` PostgreSQL with pgvector in a temporary directory (stopped
    and deleted on exit)."""
    if url is not None:
        yield url
        return
    import pgserver

    root = Path(tempfile.mkdtemp(prefix="lp-bench-pg-"))
    server = pgserver.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        with contextlib.suppress(OSError):
            root.rmdir()


def worker_settings(store_url: str, model_path: str | None, threads: int) -> Any:
    """A semantic worker's settings with the vector store configured, in a collection of its own;
    the torch backend, the offline rows' (``auto`` may pick an exported one)."""
    from config.settings import Settings

    return Settings(semantic_enabled=True, model_path=model_path, torch_threads=threads,
                    encoder_backend="torch", vector_store_url=store_url,
                    vector_collection=f"bench_{uuid.uuid4().hex[:12]}",
                    max_payload_bytes=2**31, word_list_path="", progress_min_blocks=10**9)


def worker_context(settings: Any) -> Any:
    """What a worker pool child builds (its resources and encoders, loaded from ``settings``),
    with an in-process fakeredis as the record store."""
    import fakeredis

    from service.store import ResultStore
    from worker.context import WorkerContext, build_process_embedders, build_process_resources

    resources = build_process_resources(settings)
    return WorkerContext(settings=settings, store=ResultStore(fakeredis.FakeRedis(), settings.key_prefix,
                                                              settings.result_ttl),
                         resources=resources, embedders=build_process_embedders(settings, resources))


def run_through_store(documents: Sequence[Any], config: Mapping[str, Any], context: Any,
                      embed_query: QueryEmbedder) -> tuple[dict[str, list[str]], dict[str, list[list[int]]]]:
    """Per document: the embedded texts of the worker's chunks (chunk order) and, per question,
    the store's ranking of them (indices, best first)."""
    from tasks.chunk import run_chunk_job
    from worker.vector_store import VectorStore, embedded_text

    texts: dict[str, list[str]] = {}
    orders: dict[str, list[list[int]]] = {}
    settings = context.settings
    with VectorStore.open(settings.vector_store_url, settings.vector_collection) as store:
        for doc in documents:
            payload = {"document_id": doc.id, "blocks": doc.blocks(), "config": {**config, "embed": True}}
            run_chunk_job(payload, context, task_id=f"bench-{doc.id}")
            chunks = context.store.load_record(doc.id)["result"]["chunks"]
            texts[doc.id] = [embedded_text(chunk) for chunk in chunks]
            index = {chunk["chunk_id"]: i for i, chunk in enumerate(chunks)}
            queries = embed_query([q.question for q in doc.questions]) if doc.questions else []
            orders[doc.id] = [[index[hit["chunk_id"]] for hit in store.search(vector, len(chunks), doc.id)]
                              for vector in queries]
    return texts, orders


def beyond_ties(order: Sequence[int], offline_scores: np.ndarray, tolerance: float = TIE_TOLERANCE) -> bool:
    """Whether ``order`` (the store's ranking) is not a ranking by ``offline_scores`` (the offline
    cosines of the same chunks) but for ties: some chunk ranked above one the offline scores put
    higher by more than ``tolerance``."""
    ranked = np.asarray(offline_scores, dtype=np.float64)[list(order)]
    return bool(np.any(np.minimum.accumulate(ranked)[:-1] < ranked[1:] - tolerance)) if len(ranked) else False
