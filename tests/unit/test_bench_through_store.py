"""The retrieval benchmark's through-store row (lpeval.through_store) on one small dev document:
the worker's task, a real PostgreSQL with pgvector (the suite's pgserver) and the store's search
give the offline recommended row's chunks and ranks. A bag-of-words stub stands in for the model.
"""

import re

import numpy as np

from loaders.embedding import Embedder
from loaders.tokenizer import load_model_counter
from longparser import Resources
from lpeval import bench_retrieval as bench
from lpeval.retrieval_set import split_documents
from lpeval.through_store import beyond_ties, run_through_store, worker_settings
from schemas.config import RECOMMENDED_CONFIG, ChunkingConfig
from schemas.encoders import PINNED_ENCODER

SMALL_DEV = "dl-docx-word-sample"


def bag_of_words(texts: list[str]) -> np.ndarray:
    """float32 unit vectors of hashed lower-case words."""
    rows = np.zeros((len(texts), 64), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            rows[i, sum(word.encode()) % 64] += 1.0
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


class BagOfWords:
    name = "stub"
    weights_sha256 = "0" * 64

    def encode(self, texts):
        return bag_of_words(list(texts))


def test_through_the_worker_store_and_search_the_ranks_are_the_offline_ranks(postgres):
    import fakeredis

    from service.store import ResultStore
    from worker.context import WorkerContext

    documents = [d for d in split_documents("dev") if d.id == SMALL_DEV]
    counter = load_model_counter()
    tokens = bench.ModelTokens(counter.tokens.tokenizer)
    resources = Resources(model_counter=counter)
    offline = bench.Row(bench.RECOMMENDED_ROW, "", "blocks")
    config = ChunkingConfig(**RECOMMENDED_CONFIG)
    offline.chunks = {d.id: bench.chunk_with_engine(d.blocks(), config, resources, d.id) for d in documents}
    texts = [c.embed for c in offline.chunks[SMALL_DEV]]
    questions = [q.question for q in documents[0].questions]
    vectors = bench.embed_all(BagOfWords(), [*texts, *questions])
    offline_scores = bench.score_rows([offline], documents, {}, tokens, vectors)[bench.RECOMMENDED_ROW]

    settings = worker_settings(postgres.url, None, 1)
    embedder = Embedder(name=PINNED_ENCODER, weights_sha256="d" * 64, backend="stub", normalized=True,
                        passages=bag_of_words, queries=bag_of_words, prefix_tokens=0)
    embedder.__dict__["dimension"] = 64
    records = ResultStore(fakeredis.FakeRedis(), settings.key_prefix, 600)
    context = WorkerContext(settings=settings, store=records, resources=resources,
                            embedders={PINNED_ENCODER: embedder})
    stored_texts, orders = run_through_store(documents, RECOMMENDED_CONFIG, context, bag_of_words)

    assert len(texts) > 3 and len(questions) > 3
    assert stored_texts[SMALL_DEV] == texts
    assert all(sorted(order) == list(range(len(texts))) for order in orders[SMALL_DEV])  # every chunk ranked
    row, through_scores, compared = bench.through_store_row(documents, stored_texts, orders, offline, vectors,
                                                            tokens)
    assert [s.rank for s in through_scores] == [s.rank for s in offline_scores]
    assert any(s.rank is not None for s in offline_scores)
    assert bench.rank_differences(documents, offline_scores, through_scores) == []
    assert compared == {"documents_with_other_chunks": [], "questions_beyond_ties": []}
    assert row.name == bench.THROUGH_STORE_ROW


def test_a_store_ranking_differs_beyond_ties_only_past_the_tolerance():
    cosines = np.array([0.9, 0.5, 0.5, 0.1])
    assert not beyond_ties([0, 1, 2, 3], cosines)
    assert not beyond_ties([0, 2, 1, 3], cosines)  # a tie swapped
    assert not beyond_ties([0, 1, 2, 3], np.array([0.5, 0.5 + 1e-7, 0.2, 0.1]))  # within the tolerance
    assert beyond_ties([1, 0, 2, 3], cosines)
    assert beyond_ties([0, 1, 3, 2], cosines)
    assert not beyond_ties([], cosines[:0])


def test_the_command_s_through_store_row_equals_the_offline_row(postgres, tmp_path, monkeypatch):
    """``bench-retrieval --through-store --store-url URL``: the row beside the offline one, no rank
    differing (the stub model of the harness's own tests stands in for the pinned one)."""
    import json

    import fakeredis

    from lpeval import through_store
    from service.store import ResultStore
    from tests.unit.test_bench_retrieval import BagOfWords as HarnessStub
    from tests.unit.test_bench_retrieval import StubLoaders
    from worker.context import WorkerContext

    StubLoaders(monkeypatch)
    stub = HarnessStub()

    def stub_worker(settings):
        embedder = Embedder(name=PINNED_ENCODER, weights_sha256="d" * 64, backend="stub", normalized=False,
                            passages=stub.encode, queries=stub.encode, prefix_tokens=0)
        embedder.__dict__["dimension"] = 512
        return WorkerContext(settings=settings, store=ResultStore(fakeredis.FakeRedis(), "lp-bench", 600),
                             resources=Resources(model_counter=load_model_counter()),
                             embedders={PINNED_ENCODER: embedder})

    monkeypatch.setattr(through_store, "worker_context", stub_worker)
    prefix = tmp_path / "through"
    status = bench.main(["--split", "dev", "--document", SMALL_DEV, "--only-ours", "--no-ablations",
                         "--through-store", "--store-url", postgres.url, "-o", str(prefix)])
    assert status == 0
    result = json.loads(prefix.with_suffix(".json").read_text(encoding="utf-8"))
    names = [r["name"] for r in result["rows"]]
    assert names[names.index(bench.RECOMMENDED_ROW) + 1] == bench.THROUGH_STORE_ROW
    assert result["through_store"]["rank_differs_beyond_ties"] == []
    offline, through = (next(r for r in result["rows"] if r["name"] == name)
                        for name in (bench.RECOMMENDED_ROW, bench.THROUGH_STORE_ROW))
    assert through["mrr@10"] == offline["mrr@10"] and through["chunks"] == offline["chunks"]


def test_without_a_url_the_bench_starts_and_removes_a_postgresql_of_its_own():
    import psycopg

    from lpeval.through_store import postgres_url

    with postgres_url(None) as url, psycopg.connect(url) as connection:
        assert connection.execute("SELECT 1").fetchone() == (1,)
    with postgres_url("postgresql://given/db") as given:
        assert given == "postgresql://given/db"
