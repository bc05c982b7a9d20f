"""``longparser search QUESTION [--document-id ID] [-k 5] [--result FILE.json] [--json]``.

Embeds the question with the worker's encoder (the settings' model and backend; the model's
query prefix, none for the pinned all-MiniLM-L6-v2) and prints the nearest chunks with their
pages and section, best first:

* from the vector store the workers write (``LONGPARSER_VECTOR_STORE_URL``, collection
  ``LONGPARSER_VECTOR_COLLECTION``; docs/vectors.md): with ``--document-id`` an exact cosine scan
  of that document's rows, without it the HNSW index's approximate search of the collection;
* with ``--result FILE.json``, from a chunk result that carries embeddings (``longparser chunk
  --embed`` / ``longparser result`` output: floats per chunk), by exact cosine with numpy; no
  store needed.

Without a store and without ``--result`` it says so in one line (exit 2) before loading a model.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

EXIT_OK, EXIT_NOT_FOUND, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
EXCERPT_CHARS = 240

Embedder = Callable[[list[str]], np.ndarray]


def _say(message: str) -> None:
    print(f"longparser search: {message}", file=sys.stderr)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", metavar="QUESTION", help="what to look for, in plain words")
    parser.add_argument("--document-id", metavar="ID",
                        help="search this document only (an exact scan of its chunks)")
    parser.add_argument("-k", type=int, default=5, metavar="N", help="how many chunks to print (default: 5)")
    parser.add_argument("--result", metavar="FILE.json",
                        help="search a chunk result with embeddings (JSON, floats per chunk) instead of "
                             "the vector store")
    parser.add_argument("--json", action="store_true", help="print the hits as one JSON list")


def query_text(question: str, encoder: Any) -> str:
    """The question as the encoder embeds a query: its query prefix (e5: ``query: ``), if any,
    then the question."""
    return f"{getattr(encoder, 'query_prefix', '') or ''}{question}"


def load_query_embedder(settings: Any) -> Embedder:
    """The encoder the worker embeds passages with (model, backend, threads from the settings),
    as a function of texts; the query prefix added. ``auto`` resolves as the worker resolves it
    (:func:`loaders.encoder_backends.resolve_backend`), so the query runs the passages' backend."""
    from loaders.encoder import load_encoder
    from loaders.encoder_backends import resolve_backend

    encoder = load_encoder(settings.model_path, threads=settings.torch_threads,
                           backend=resolve_backend(settings.encoder_backend))
    return lambda texts: encoder.encode([query_text(text, encoder) for text in texts])


def normalized(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def exact_search(chunks: Sequence[Mapping[str, Any]], query_vector: np.ndarray, k: int,
                 document_id: str | None = None) -> list[dict[str, Any]]:
    """The ``k`` chunks nearest ``query_vector`` by cosine, best first (ties: chunk order)."""
    matrix = normalized(np.asarray([chunk["embedding"] for chunk in chunks], dtype=np.float32))
    scores = matrix @ normalized(query_vector).ravel() if len(chunks) else np.zeros(0, np.float32)
    order = np.argsort(-scores, kind="stable")[:k]
    return [{"chunk_id": chunks[i]["chunk_id"], "document_id": document_id, "text": chunks[i]["text"],
             "score": float(scores[i]), "page_numbers": list(chunks[i].get("page_numbers") or []),
             "section_path": list(chunks[i].get("section_path") or []),
             "chunk_type": chunks[i].get("chunk_type")} for i in order]


def read_result_chunks(path: str) -> tuple[str | None, list[dict[str, Any]]]:
    """A chunk result file's document id and chunks; ValueError (one line) when a chunk has no
    embedding."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    result = data.get("result", data) if isinstance(data, dict) else None
    chunks = result.get("chunks") if isinstance(result, dict) else None
    if not isinstance(chunks, list):
        raise ValueError(f"{path}: not a chunk result (no \"chunks\" list)")
    for chunk in chunks:
        if not isinstance(chunk.get("embedding"), list):
            raise ValueError(f"{path}: chunk {chunk.get('chunk_id')!r} carries no embedding (floats): "
                             "chunk with --embed, or search the vector store")
    return result.get("document_id"), chunks


def render(hits: Sequence[Mapping[str, Any]]) -> str:
    """One block per hit: rank, score, document, pages, section; then the text's beginning."""
    lines = []
    for rank, hit in enumerate(hits, 1):
        pages = hit["page_numbers"]
        where = (f"pages {pages[0]}-{pages[-1]}" if len(pages) > 1
                 else f"page {pages[0]}" if pages else "no page")
        section = " > ".join(hit["section_path"]) or "(no section)"
        text = " ".join(hit["text"].split())
        excerpt = text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 3] + "..."
        lines.append(f"{rank}. {hit['score']:.4f}  {hit['document_id']}  {where}  {section}  "
                     f"[{hit['chunk_id']}]")
        lines.append(f"   {excerpt}")
    return "\n".join(lines) + ("\n" if lines else "")


def run_search(args: argparse.Namespace) -> int:
    """Run ``longparser search``; returns the exit status."""
    from config.settings import SettingsError, get_settings, masked_url

    if args.k < 1:
        _say(f"error: -k must be at least 1, got {args.k}")
        return EXIT_USAGE
    try:
        settings = get_settings()
    except SettingsError as exc:
        _say(f"error: settings (LONGPARSER_* environment / .env): {exc}")
        return EXIT_USAGE
    chunks: list[dict[str, Any]] | None = None
    if args.result is not None:
        try:
            document_id, chunks = read_result_chunks(args.result)
        except (OSError, ValueError) as exc:
            _say(f"error: {exc}")
            return EXIT_USAGE
    elif settings.vector_store_url is None:
        _say("error: no vector store configured: set LONGPARSER_VECTOR_STORE_URL (docs/vectors.md), "
             "or search a chunk result with --result FILE.json")
        return EXIT_USAGE
    from loaders.pinned_model import EncoderUnavailable

    try:
        query_vector = load_query_embedder(settings)([args.question])[0]
    except EncoderUnavailable as exc:
        _say(f"error: {exc}")
        return EXIT_USAGE
    if chunks is not None:
        if args.document_id is not None and args.document_id != document_id:
            _say(f"error: {args.result} holds document {document_id!r}, not {args.document_id!r}")
            return EXIT_USAGE
        hits = exact_search(chunks, query_vector, args.k, document_id)
    else:
        import psycopg

        from worker.vector_store import VectorStore, VectorStoreUnavailable

        try:
            with VectorStore.open(settings.vector_store_url, settings.vector_collection,
                                  retry_window=settings.submit_retry_window) as store:
                hits = store.search(query_vector, args.k, args.document_id)
        except VectorStoreUnavailable as exc:
            _say(f"error: {exc}")
            return EXIT_UNREACHABLE
        except psycopg.Error as exc:
            _say(f"error: vector collection {settings.vector_collection!r} at "
                 f"{masked_url(settings.vector_store_url)}: {' '.join(str(exc).split())}")
            return EXIT_USAGE
    sys.stdout.write(json.dumps(hits, ensure_ascii=False) + "\n" if args.json else render(hits))
    return EXIT_OK if hits else EXIT_NOT_FOUND
