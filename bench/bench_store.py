"""The vector store's cost: one document chunked, embedded and written to pgvector, against
embedding it alone (goal: at most 1.3x).

The document is the longest (most characters) of the retrieval benchmark's dev split
(eval/retrieval_v1), chunked with the recommended config (``fit: model``), embedded by the
pinned model in one process with one thread. Measured, each the median of ``--repeat`` runs,
the first two interleaved (embed, then chunk + embed + store, ``--repeat`` times) so that a
shared machine's load changes both alike; the ratio is the median of each pair's ratio:

* ``embed``: the encoder on the chunks' embedded texts (one call; the encoder sorts by length
  and batches 64);
* ``chunk + embed + store``: ``chunk_blocks``, then ``VectorStore.embed_and_apply`` into an
  empty collection (every chunk embedded and inserted, one transaction, HNSW index kept);
* ``re-ingest``: the same document again (every vector reused, nothing written).

PostgreSQL with pgvector is the one ``pgserver`` bundles, started in a temporary directory
(tests/pg.py), unless ``--url`` names one. Figures: bench/README.md.

    make bench-store
    python bench/bench_store.py [--repeat 3] [--backend torch] [--url postgresql://...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lpeval.retrieval_set import split_documents  # noqa: E402


def longest_dev_document() -> tuple[str, list[dict]]:
    from loaders.docling import blocks_from_docling

    documents = [(doc.id, blocks_from_docling(doc.docling(), source_file=doc.path.name))
                 for doc in split_documents("dev")]
    return max(documents, key=lambda item: sum(len(block.get("text") or "") for block in item[1]))


@contextlib.contextmanager
def postgres_url(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    from tests.pg import running_postgres

    with running_postgres() as server:
        yield server.url


def seconds(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def median_seconds(run, repeat: int) -> float:
    return statistics.median(seconds(run) for _ in range(repeat))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--url", help="a PostgreSQL with pgvector (default: a pgserver one, started here)")
    args = parser.parse_args(argv)

    from loaders.encoder import force_offline, load_encoder
    from loaders.tokenizer import load_model_counter
    from longparser import chunk_blocks
    from longparser.resources import Resources
    from schemas.config import RECOMMENDED_CONFIG
    from worker.vector_store import EncoderIdentity, VectorStore, embedded_text

    force_offline()
    document_id, blocks = longest_dev_document()
    counter = load_model_counter()
    encoder = load_encoder(threads=1, backend=args.backend, counter=counter)
    resources = Resources(model_counter=counter)
    config = dict(RECOMMENDED_CONFIG)

    def chunks() -> list[dict]:
        result = chunk_blocks(blocks, config, resources, document_id=document_id)
        return [chunk.model_dump() for chunk in result.chunks]

    texts = [embedded_text(chunk) for chunk in chunks()]
    dimension = int(encoder.encode(texts[:1]).shape[1])
    identity = EncoderIdentity(encoder.name, encoder.weights_sha256, dimension, normalized=True)
    chunk_s = median_seconds(chunks, args.repeat)
    embedding_inside: list[float] = []

    def timed_encode(batch: list[str]):
        started = time.perf_counter()
        vectors = encoder.encode(batch)
        embedding_inside.append(time.perf_counter() - started)
        return vectors

    with postgres_url(args.url) as url:
        def store_fresh() -> None:
            with VectorStore.open(url, f"bench_{uuid.uuid4().hex[:10]}") as store:
                outcome = store.embed_and_apply(document_id, chunks(), identity, timed_encode)
                assert outcome.inserted == len(texts) and outcome.embedded == len(texts), outcome

        pairs = [(seconds(lambda: encoder.encode(texts)), seconds(store_fresh)) for _ in range(args.repeat)]
        embed_s = statistics.median(embed for embed, _ in pairs)
        store_s = statistics.median(store for _, store in pairs)
        overhead_s = statistics.median(store - inside for (_, store), inside in zip(pairs, embedding_inside,
                                                                                    strict=True))
        with VectorStore.open(url, f"bench_{uuid.uuid4().hex[:10]}") as store:
            store.embed_and_apply(document_id, chunks(), identity, encoder.encode)

            def again() -> None:
                outcome = store.embed_and_apply(document_id, chunks(), identity, encoder.encode)
                assert outcome.reused == len(texts) and outcome.unchanged == len(texts), outcome

            reingest_s = median_seconds(again, args.repeat)
    figures = {
        "document": document_id, "blocks": len(blocks), "chunks": len(texts),
        "characters_embedded": sum(map(len, texts)), "backend": args.backend, "repeat": args.repeat,
        "embed_s": round(embed_s, 3), "chunk_s": round(chunk_s, 3),
        "chunk_embed_store_s": round(store_s, 3), "reingest_s": round(reingest_s, 3),
        "store_path_without_its_embedding_s": round(overhead_s, 3),
        "ratio_chunk_embed_store_to_embed": round(statistics.median(s / e for e, s in pairs), 3),
        "ratio_reingest_to_embed": round(reingest_s / embed_s, 3),
    }
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
