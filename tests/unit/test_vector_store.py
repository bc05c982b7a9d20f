"""worker.vector_store against a real PostgreSQL with pgvector (tests/pg.py, one server per session).

Each test has its own collection (table). The encoder is a deterministic stub: a text's vector is
made from its sha256, so a vector shows which text it came from.
"""

from __future__ import annotations

import hashlib
import random
import threading
import uuid
from typing import Any

import numpy as np
import psycopg
import pytest

from longparser import chunk_blocks
from worker.vector_store import (
    DimensionMismatch,
    EncoderIdentity,
    StoreOutcome,
    VectorStore,
    embedded_text,
)

DIMENSION = 8
ENCODER = EncoderIdentity(name="stub", weights_sha256="a" * 64, dimension=DIMENSION, normalized=True)
WORDS = ("ledger", "harbour", "signal", "orchard", "quarry", "lantern", "meadow", "circuit", "glacier",
         "compass", "timber", "voltage", "canyon", "parcel", "furnace", "violet", "beacon", "gravel")


def stub_vector(text: str, dimension: int = DIMENSION) -> np.ndarray:
    raw = np.frombuffer(hashlib.shake_256(text.encode()).digest(dimension * 4), dtype=np.uint32)
    vector = raw.astype(np.float32) - 2**31
    return vector / np.linalg.norm(vector)


class StubEncoder:
    """Records every call, so a test sees which texts were embedded."""

    def __init__(self, dimension: int = DIMENSION):
        self.dimension = dimension
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([stub_vector(text, self.dimension) for text in texts])

    @property
    def texts(self) -> list[str]:
        return [text for call in self.calls for text in call]


def twenty_pages(edit: int | None = None, seed: int = 7) -> list[dict[str, Any]]:
    """About 20 pages: a heading every 8 blocks, 10 blocks a page; ``edit`` rewrites one paragraph."""
    rng = random.Random(seed)
    blocks, title = [], "Intro"
    for index in range(200):
        if index % 8 == 0:
            title = f"Section {index // 8 + 1} {rng.choice(WORDS).title()}"
            kind, text, level = "heading", title, 1
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 70))).capitalize() + "."
            kind, level = "paragraph", None
            if index == edit:
                text = "An edited paragraph about " + text
        blocks.append({"block_id": f"b{index}", "type": kind, "text": text, "heading_level": level,
                       "hierarchy_path": [title], "provenance": {"page_number": index // 10 + 1}})
    return blocks


def chunked(blocks: list[dict[str, Any]], document_id: str = "doc-1") -> list[dict[str, Any]]:
    config = {"max_tokens": 200, "min_tokens": 40, "overlap_blocks": 0, "heading_context": True}
    return [chunk.model_dump() for chunk in chunk_blocks(blocks, config, document_id=document_id).chunks]


@pytest.fixture
def store(postgres) -> VectorStore:
    with VectorStore.open(postgres.url, f"t_{uuid.uuid4().hex[:12]}", retry_window=30) as vector_store:
        yield vector_store


def rows(store: VectorStore, document_id: str = "doc-1") -> dict[str, tuple]:
    """chunk_id -> (text, text_sha256, weights, metadata, embedding, xmin) as stored now."""
    with psycopg.connect(store.url) as connection:
        found = connection.execute(
            f'SELECT chunk_id, text, text_sha256, weights_sha256, metadata, embedding::text, xmin::text '
            f'FROM "{store.collection}" WHERE document_id = %s', [document_id]).fetchall()
    return {row[0]: row[1:] for row in found}


def test_first_apply_inserts_every_chunk_and_sets_float32_embeddings(store):
    chunks = chunked(twenty_pages())
    encoder = StubEncoder()
    outcome = store.embed_and_apply("doc-1", chunks, ENCODER, encoder)
    assert outcome == StoreOutcome(embedded=len(chunks), reused=0, inserted=len(chunks), updated=0,
                                   deleted=0, unchanged=0)
    assert encoder.calls == [[embedded_text(chunk) for chunk in chunks]]  # once, in chunk order
    assert all(chunk["embed_text"] for chunk in chunks)  # heading context: embed_text, not text
    for chunk in chunks:
        assert chunk["embedding"].dtype == np.float32
        np.testing.assert_array_equal(chunk["embedding"], stub_vector(chunk["embed_text"]))
    stored = rows(store)
    assert set(stored) == {chunk["chunk_id"] for chunk in chunks}
    first = chunks[0]
    text, digest, weights, metadata, _, _ = stored[first["chunk_id"]]
    assert (text, weights) == (first["text"], ENCODER.weights_sha256)
    assert digest == hashlib.sha256(first["embed_text"].encode()).hexdigest()
    assert metadata["pages"] == first["page_numbers"] and metadata["section_path"] == first["section_path"]
    assert metadata["chunk_type"] == first["chunk_type"]


def test_redelivery_reuses_every_vector_and_writes_nothing(store):
    store.embed_and_apply("doc-1", chunked(twenty_pages()), ENCODER, StubEncoder())
    before = rows(store)
    again, encoder = chunked(twenty_pages()), StubEncoder()
    outcome = store.embed_and_apply("doc-1", again, ENCODER, encoder)
    assert outcome == StoreOutcome(embedded=0, reused=len(again), inserted=0, updated=0, deleted=0,
                                   unchanged=len(again))
    assert encoder.calls == []
    assert rows(store) == before  # the same row versions (xmin): nothing rewritten
    for chunk in again:
        np.testing.assert_array_equal(chunk["embedding"], stub_vector(chunk["embed_text"]))


def test_one_edited_paragraph_re_embeds_only_the_chunks_it_touches(store):
    old = chunked(twenty_pages())
    store.embed_and_apply("doc-1", old, ENCODER, StubEncoder())
    new, encoder = chunked(twenty_pages(edit=41)), StubEncoder()
    outcome = store.embed_and_apply("doc-1", new, ENCODER, encoder)
    old_texts = {embedded_text(chunk) for chunk in old}
    touched = [embedded_text(chunk) for chunk in new if embedded_text(chunk) not in old_texts]
    assert 1 <= len(touched) <= 3
    assert encoder.texts == touched
    assert (outcome.embedded, outcome.reused) == (len(touched), len(new) - len(touched))
    old_ids, new_ids = {c["chunk_id"] for c in old}, {c["chunk_id"] for c in new}
    assert outcome.deleted == len(old_ids - new_ids) and outcome.inserted == len(new_ids - old_ids)
    assert outcome.inserted + outcome.updated + outcome.unchanged == len(new)
    stored = rows(store)
    assert set(stored) == new_ids  # exactly the new document: removed rows gone, none twice
    for chunk in new:
        assert stored[chunk["chunk_id"]][0] == chunk["text"]


def test_changed_metadata_is_updated_in_place_with_its_vector_kept(store):
    chunks = chunked(twenty_pages())
    store.embed_and_apply("doc-1", chunks, ENCODER, StubEncoder())
    before = rows(store)
    moved = chunked(twenty_pages())
    moved[3]["page_numbers"] = [99]
    moved[3]["boxes"] = [{"page": 99, "bbox": [1.5, 2.0, 3.25, 4.0]}]
    encoder = StubEncoder()
    outcome = store.embed_and_apply("doc-1", moved, ENCODER, encoder)
    assert outcome == StoreOutcome(embedded=0, reused=len(moved), inserted=0, updated=1, deleted=0,
                                   unchanged=len(moved) - 1)
    after = rows(store)
    chunk_id = moved[3]["chunk_id"]
    assert after[chunk_id][3]["pages"] == [99] and after[chunk_id][3]["boxes"] == moved[3]["boxes"]
    assert after[chunk_id][4] == before[chunk_id][4]  # the same vector
    assert {key: value for key, value in after.items() if key != chunk_id} == \
        {key: value for key, value in before.items() if key != chunk_id}
    assert store.embed_and_apply("doc-1", moved, ENCODER, StubEncoder()).unchanged == len(moved)


def test_a_chunk_id_alone_does_not_reuse_a_vector(store):
    chunks = chunked(twenty_pages())
    store.embed_and_apply("doc-1", chunks, ENCODER, StubEncoder())
    renamed = chunked(twenty_pages())
    renamed[5]["embed_text"] = "Renamed section > " + renamed[5]["text"]  # the breadcrumb changed
    encoder = StubEncoder()
    outcome = store.embed_and_apply("doc-1", renamed, ENCODER, encoder)
    assert encoder.texts == [renamed[5]["embed_text"]]
    assert (outcome.embedded, outcome.updated, outcome.inserted) == (1, 1, 0)
    np.testing.assert_array_equal(renamed[5]["embedding"], stub_vector(renamed[5]["embed_text"]))


def test_other_weights_re_embed_everything(store):
    chunks = chunked(twenty_pages())
    store.embed_and_apply("doc-1", chunks, ENCODER, StubEncoder())
    other = EncoderIdentity(name="stub", weights_sha256="b" * 64, dimension=DIMENSION, normalized=True)
    outcome = store.embed_and_apply("doc-1", chunked(twenty_pages()), other, StubEncoder())
    assert (outcome.embedded, outcome.reused, outcome.updated) == (len(chunks), 0, len(chunks))
    assert {row[2] for row in rows(store).values()} == {"b" * 64}


def test_documents_are_kept_apart_and_an_empty_result_deletes_the_document(store):
    first, second = chunked(twenty_pages(), "doc-1"), chunked(twenty_pages(seed=8), "doc-2")
    store.embed_and_apply("doc-1", first, ENCODER, StubEncoder())
    store.embed_and_apply("doc-2", second, ENCODER, StubEncoder())
    outcome = store.embed_and_apply("doc-1", [], ENCODER, StubEncoder())
    assert outcome == StoreOutcome(embedded=0, reused=0, inserted=0, updated=0, deleted=len(first),
                                   unchanged=0)
    assert rows(store, "doc-1") == {} and len(rows(store, "doc-2")) == len(second)


def test_another_dimension_is_refused_naming_the_collection_and_both_dimensions(store):
    store.embed_and_apply("doc-1", chunked(twenty_pages()), ENCODER, StubEncoder())
    wide = EncoderIdentity(name="wide", weights_sha256="c" * 64, dimension=768, normalized=True)
    encoder = StubEncoder(768)
    # a fresh store reads the table's dimension
    with VectorStore.open(store.url, store.collection) as fresh, pytest.raises(DimensionMismatch) as refused:
        fresh.embed_and_apply("doc-2", chunked(twenty_pages(seed=3), "doc-2"), wide, encoder)
    message = str(refused.value)
    assert store.collection in message and "768" in message and f" {DIMENSION} " in message
    assert encoder.calls == [] and rows(store, "doc-2") == {}


def test_a_reader_never_sees_half_a_document(store):
    old, new = chunked(twenty_pages(), "doc-1"), chunked(twenty_pages(seed=11), "doc-1")
    old = [dict(chunk, chunk_id=f"old-{copy}-{n}") for copy in range(15) for n, chunk in enumerate(old)]
    new = [dict(chunk, chunk_id=f"new-{copy}-{n}") for copy in range(15) for n, chunk in enumerate(new)]
    store.embed_and_apply("doc-1", old, ENCODER, StubEncoder())
    states = {frozenset(c["chunk_id"] for c in old), frozenset(c["chunk_id"] for c in new)}
    seen: list[frozenset] = []
    done = threading.Event()

    def read() -> None:
        with psycopg.connect(store.url, autocommit=True) as connection:
            query = f'SELECT chunk_id FROM "{store.collection}" WHERE document_id = %s'
            while not done.is_set():
                seen.append(frozenset(row[0] for row in connection.execute(query, ["doc-1"]).fetchall()))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        outcome = store.embed_and_apply("doc-1", new, ENCODER, StubEncoder())
    finally:
        done.set()
        reader.join()
    assert outcome.deleted == len(old) and outcome.inserted == len(new)
    assert seen and set(seen) <= states
    assert frozenset(c["chunk_id"] for c in new) == frozenset(rows(store))


def test_two_workers_on_one_document_apply_one_after_the_other(postgres, store):
    versions = [chunked(twenty_pages(seed=seed)) for seed in (1, 2)]
    errors: list[BaseException] = []

    def apply(chunks: list[dict[str, Any]]) -> None:
        try:
            with VectorStore.open(postgres.url, store.collection) as other:
                other.embed_and_apply("doc-1", chunks, ENCODER, StubEncoder())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=apply, args=(chunks,)) for chunks in versions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert frozenset(rows(store)) in {frozenset(c["chunk_id"] for c in chunks) for chunks in versions}


def test_search_filtered_by_document_is_an_exact_cosine_ranking(store):
    chunks = chunked(twenty_pages())
    store.embed_and_apply("doc-1", chunks, ENCODER, StubEncoder())
    store.embed_and_apply("doc-2", chunked(twenty_pages(seed=9), "doc-2"), ENCODER, StubEncoder())
    query = stub_vector("a question")
    matrix = np.stack([chunk["embedding"] for chunk in chunks])
    expected = [chunks[index]["chunk_id"] for index in np.argsort(-(matrix @ query), kind="stable")[:5]]
    found = store.search(query, k=5, document_id="doc-1")
    assert [hit["chunk_id"] for hit in found] == expected
    assert all(hit["document_id"] == "doc-1" for hit in found)
    assert found[0]["score"] == pytest.approx(float(np.max(matrix @ query)), abs=1e-5)
    assert found[0]["page_numbers"] and found[0]["section_path"]
    assert len(store.search(query, k=7)) == 7


def test_search_of_a_collection_never_written_is_empty(postgres):
    with VectorStore.open(postgres.url, f"t_{uuid.uuid4().hex[:12]}") as empty:
        assert empty.search(stub_vector("q"), k=3) == []


def test_a_restart_between_embedding_and_writing_is_waited_out(postgres, store):
    store.embed_and_apply("doc-1", chunked(twenty_pages()), ENCODER, StubEncoder())
    new, encoder = chunked(twenty_pages(edit=41)), StubEncoder()

    def embed_while_postgres_restarts(texts: list[str]) -> np.ndarray:
        postgres.restart(outage_s=1.0)
        return encoder(texts)

    outcome = store.embed_and_apply("doc-1", new, ENCODER, embed_while_postgres_restarts)
    assert store.waits.count >= 1  # the write found the connection gone and waited
    assert len(encoder.calls) == 1
    assert set(rows(store)) == {chunk["chunk_id"] for chunk in new}
    assert outcome.inserted + outcome.updated + outcome.unchanged == len(new)


def test_search_of_one_document_is_exact_where_the_hnsw_index_would_miss_its_chunks(store):
    for seed in range(12):  # the document is a small part of the collection
        store.embed_and_apply(f"doc-{seed}", chunked(twenty_pages(seed=seed), f"doc-{seed}"), ENCODER,
                              StubEncoder())
    with psycopg.connect(store.url, autocommit=True) as connection:
        connection.execute(f'ANALYZE "{store.collection}"')  # the statistics that make HNSW the cheapest plan
    chunks = chunked(twenty_pages(seed=3), "doc-3")
    query = stub_vector("a question")
    matrix = np.stack([stub_vector(chunk["embed_text"]) for chunk in chunks])
    scores = matrix @ query
    # the exact top 5 (the HNSW index, filtered afterwards, would return only those of its 40
    # ef_search candidates that belong to the document: about 3)
    found = store.search(query, k=5, document_id="doc-3")
    expected = [chunks[i]["chunk_id"] for i in np.argsort(-scores, kind="stable")[:5]]
    assert [hit["chunk_id"] for hit in found] == expected
