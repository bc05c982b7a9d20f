"""``longparser search``: the vector store (a real pgserver PostgreSQL), a result file, no store.

The query encoder is the stub of tests/unit/test_vector_store.py (a text's vector from its
sha256), so the nearest chunk to a question that IS a chunk's embedded text is that chunk.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

import cli.search
from cli.main import main
from config.settings import get_settings
from tests.unit.test_vector_store import ENCODER, StubEncoder, chunked, stub_vector, twenty_pages
from worker.vector_store import VectorStore

LOAD_QUERY_EMBEDDER = cli.search.load_query_embedder  # before the autouse fixture stubs it


@pytest.fixture(autouse=True)
def stub_query_encoder(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every query the command embeds, recorded; no model loaded."""
    calls: list[list[str]] = []

    def load(settings: Any):
        def embed(texts: list[str]):
            calls.append(texts)
            return StubEncoder()(texts)
        return embed

    monkeypatch.setattr(cli.search, "load_query_embedder", load)
    for name in ("LONGPARSER_VECTOR_STORE_URL", "LONGPARSER_VECTOR_COLLECTION"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield calls
    get_settings.cache_clear()


def test_without_a_store_it_says_so_in_one_line_and_loads_no_model(stub_query_encoder, capsys):
    assert main(["search", "what is a ledger?"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("longparser search: error: no vector store configured: set "
                            "LONGPARSER_VECTOR_STORE_URL (docs/vectors.md), or search a chunk result with "
                            "--result FILE.json\n")
    assert stub_query_encoder == []


def test_the_store_gives_the_nearest_chunks_with_pages_and_section(postgres, monkeypatch, capsys):
    collection = f"t_{uuid.uuid4().hex[:12]}"
    chunks = chunked(twenty_pages())
    with VectorStore.open(postgres.url, collection) as store:
        store.embed_and_apply("doc-1", chunks, ENCODER, StubEncoder())
        store.embed_and_apply("doc-2", chunked(twenty_pages(seed=4), "doc-2"), ENCODER, StubEncoder())
    monkeypatch.setenv("LONGPARSER_VECTOR_STORE_URL", postgres.url)
    monkeypatch.setenv("LONGPARSER_VECTOR_COLLECTION", collection)
    target = chunks[7]
    assert main(["search", target["embed_text"], "--document-id", "doc-1", "-k", "3", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 3 and hits[0]["chunk_id"] == target["chunk_id"]
    assert hits[0]["score"] == pytest.approx(1.0, abs=1e-5)
    assert {hit["document_id"] for hit in hits} == {"doc-1"}
    assert main(["search", target["embed_text"], "-k", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    pages = target["page_numbers"]
    where = f"pages {pages[0]}-{pages[-1]}" if len(pages) > 1 else f"page {pages[0]}"
    assert lines[0] == (f"1. 1.0000  doc-1  {where}  {' > '.join(target['section_path'])}  "
                        f"[{target['chunk_id']}]")
    assert lines[1].startswith("   " + " ".join(target["text"].split())[:50])
    assert len(lines) == 4


def test_a_result_file_is_searched_by_exact_cosine(tmp_path, capsys):
    chunks = chunked(twenty_pages())
    for chunk in chunks:
        chunk["embedding"] = [float(x) for x in stub_vector(chunk["embed_text"])]
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"document_id": "doc-1", "chunks": chunks}))
    question = "a question nobody wrote"
    assert main(["search", question, "--result", str(path), "-k", "4", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    query = stub_vector(question)
    scores = sorted(((float(stub_vector(c["embed_text"]) @ query), c["chunk_id"]) for c in chunks),
                    reverse=True)
    assert [hit["chunk_id"] for hit in hits] == [chunk_id for _, chunk_id in scores[:4]]
    assert [hit["score"] for hit in hits] == pytest.approx([score for score, _ in scores[:4]], abs=1e-5)


def test_a_result_without_embeddings_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"document_id": "doc-1", "chunks": chunked(twenty_pages())[:2]}))
    assert main(["search", "q", "--result", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "carries no embedding" in err


def test_a_query_of_another_dimension_is_one_line_naming_the_collection(postgres, monkeypatch, capsys):
    collection = f"t_{uuid.uuid4().hex[:12]}"
    with VectorStore.open(postgres.url, collection) as store:
        store.embed_and_apply("doc-1", chunked(twenty_pages())[:3], ENCODER, StubEncoder())
    monkeypatch.setattr(cli.search, "load_query_embedder", lambda settings: StubEncoder(4))
    monkeypatch.setenv("LONGPARSER_VECTOR_STORE_URL", postgres.url)
    monkeypatch.setenv("LONGPARSER_VECTOR_COLLECTION", collection)
    assert main(["search", "q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and repr(collection) in err and "dimensions" in err


def test_the_query_encoder_runs_the_backend_the_worker_resolves(monkeypatch):
    """The default backend, ``auto``, is resolved as the worker resolves it (the passages' backend),
    not handed to the loader, which knows no ``auto``."""
    import loaders.encoder
    from config.settings import Settings
    from loaders.encoder_backends import BACKENDS, resolve_backend

    loaded: list[str] = []

    class Loaded:
        query_prefix = "query: "

        def encode(self, texts):
            return [len(text) for text in texts]

    def load_encoder(model_path, *, threads, backend):
        loaded.append(backend)
        return Loaded()

    monkeypatch.setattr(loaders.encoder, "load_encoder", load_encoder)
    embed = LOAD_QUERY_EMBEDDER(Settings(encoder_backend="auto"))
    assert loaded == [resolve_backend("auto")] and loaded[0] in BACKENDS
    assert embed(["q"]) == [len("query: q")]
