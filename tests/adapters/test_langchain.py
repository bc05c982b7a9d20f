"""LangChain ``Document``s from a chunking result, round-tripped through LangChain's own
``InMemoryVectorStore`` with its ``DeterministicFakeEmbedding`` (no model, no network)."""

from __future__ import annotations

import pytest
from pytest_socket import SocketBlockedError

from adapters import chunk_markdown
from adapters.langchain import to_documents, to_parent_documents
from adapters.small_to_big import parent_key, parent_text
from schemas import ChunkResult

pytestmark = pytest.mark.framework_adapters


@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_sockets_are_refused_here():
    import socket

    with pytest.raises(SocketBlockedError):
        socket.socket()


def test_documents_carry_the_chunks_and_their_metadata(result: ChunkResult):
    from langchain_core.documents import Document

    documents = to_documents(result)
    assert len(documents) == len(result.chunks) > 10
    for index, (document, chunk) in enumerate(zip(documents, result.chunks, strict=True)):
        assert isinstance(document, Document)
        assert document.id == chunk.chunk_id
        assert document.page_content == chunk.embed_text  # heading_context on: what the engine embeds
        assert document.metadata == {
            "chunk_id": chunk.chunk_id, "document_id": "docling-ocr", "chunk_index": index,
            "chunk_type": chunk.chunk_type, "page_numbers": [], "section_path": chunk.section_path,
            "quality_score": chunk.quality_score, "token_count": chunk.token_count,
            "previous_chunk_id": result.chunks[index - 1].chunk_id if index else None,
            "next_chunk_id": result.chunks[index + 1].chunk_id if index + 1 < len(result.chunks) else None,
            "parent_id": parent_key(result, chunk.parent_id),
        }
    assert {d.metadata["chunk_type"] for d in documents} >= {"section", "table", "table_schema"}
    assert [d.page_content for d in to_documents(result, content="text")] == [c.text for c in result.chunks]


def test_round_trip_through_the_in_memory_vector_store(result: ChunkResult):
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    documents = to_documents(result)
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    ids = store.add_documents(documents)
    assert ids == [c.chunk_id for c in result.chunks]  # the chunk ids, so re-adding replaces
    stored = store.get_by_ids(ids)
    assert [(d.id, d.page_content, d.metadata) for d in stored] == \
        [(d.id, d.page_content, d.metadata) for d in documents]
    # the fake embedding is a function of the text: a chunk's own text finds that chunk first
    for document in documents[::5]:
        [found] = store.similarity_search(document.page_content, k=1)
        assert found.id == document.id and found.metadata == document.metadata
    assert store.add_documents(documents) == ids and len(store.store) == len(documents)
    # previous/next links resolve to stored chunks, in reading order
    by_id = {d.id: d for d in stored}
    for document in stored:
        following = document.metadata["next_chunk_id"]
        if following is not None:
            assert by_id[following].metadata["previous_chunk_id"] == document.id
            assert by_id[following].metadata["chunk_index"] == document.metadata["chunk_index"] + 1


def test_parent_document_pattern_search_chunks_return_their_parents(result: ChunkResult):
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.stores import InMemoryStore
    from langchain_core.vectorstores import InMemoryVectorStore

    parents = to_parent_documents(result)
    assert [p.id for p in parents] == ["docling-ocr:doc", *(p.id for p in result.parents[1:])]
    for document, parent in zip(parents, result.parents, strict=True):
        assert document.page_content == parent_text(result, parent)
        assert document.metadata["parent_kind"] == parent.kind and document.metadata["title"] == parent.title
        assert document.metadata["chunk_ids"] == parent.chunk_ids
    assert {p.metadata["parent_kind"] for p in parents} == {"document", "section", "table"}
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents(to_documents(result, content="text"))
    docstore = InMemoryStore()
    docstore.mset([(p.id, p) for p in parents])
    table_chunk = next(c for c in result.chunks if c.chunk_type == "table")
    [found] = store.similarity_search(table_chunk.text, k=1)
    [parent] = docstore.mget([found.metadata["parent_id"]])
    assert parent.metadata["parent_kind"] == "table" and table_chunk.text in parent.page_content



def test_a_chunk_under_no_heading_names_the_documents_parent_by_document_id():
    preamble = chunk_markdown("A preamble paragraph.\n\n# Body\n\nThe body paragraph.", {"min_tokens": 0},
                              document_id="notes")
    first = to_documents(preamble)[0]
    assert preamble.chunks[0].parent_id == "doc" and first.metadata["parent_id"] == "notes:doc"
    assert to_parent_documents(preamble)[0].id == "notes:doc"
def test_embeddings_are_ready_for_add_embeddings(embedded_result: ChunkResult):
    from adapters.langchain import to_embeddings
    from tests.adapters.conftest import text_vector

    embedded = to_embeddings(embedded_result)
    chunks = embedded_result.chunks
    assert embedded.ids == [c.chunk_id for c in chunks]
    assert embedded.texts == [c.embed_text for c in chunks]  # what was embedded
    assert embedded.embeddings == [text_vector(c.embed_text) for c in chunks]  # exact: float32 round trip
    assert embedded.metadatas == [d.metadata for d in to_documents(embedded_result)]
    assert embedded.text_embeddings == list(zip(embedded.texts, embedded.embeddings, strict=True))
    assert set(embedded.as_keywords()) == {"texts", "embeddings", "metadatas", "ids"}


def test_a_store_takes_the_vectors_without_embedding_again(embedded_result: ChunkResult):
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    from adapters.langchain import to_embeddings

    class NoEmbedding(Embeddings):  # the store may embed queries, never the documents
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise AssertionError("documents embedded again")

        def embed_query(self, text: str) -> list[float]:
            from tests.adapters.conftest import text_vector
            return text_vector(text)

    class StoreWithAddEmbeddings(InMemoryVectorStore):  # PGVector's add_embeddings signature
        def add_embeddings(self, texts, embeddings, metadatas=None, ids=None):
            for text, vector, metadata, id_ in zip(texts, embeddings, metadatas, ids, strict=True):
                self.store[id_] = {"id": id_, "vector": vector, "text": text, "metadata": metadata}
            return ids

    embedded = to_embeddings(embedded_result)
    store = StoreWithAddEmbeddings(NoEmbedding())
    assert store.add_embeddings(**embedded.as_keywords()) == embedded.ids
    for text, chunk_id in list(zip(embedded.texts, embedded.ids, strict=True))[::7]:
        [found] = store.similarity_search(text, k=1)  # the query's vector equals the stored one
        assert found.id == chunk_id


def test_a_result_without_vectors_is_refused_in_one_line(result: ChunkResult):
    from adapters.langchain import to_embeddings

    with pytest.raises(ValueError, match="has no embedding: chunk with embed"):
        to_embeddings(result)
