"""LlamaIndex ``TextNode``s from a chunking result, indexed by LlamaIndex's own
``VectorStoreIndex`` with its ``MockEmbedding``; sockets refused throughout (LlamaIndex must
not reach out for tokenizers or NLTK data on this path)."""

from __future__ import annotations

import pytest
from pytest_socket import SocketBlockedError

from adapters.llamaindex import to_nodes, to_parent_nodes
from adapters.small_to_big import parent_key, parent_text
from schemas import ChunkResult

pytestmark = pytest.mark.framework_adapters


@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_sockets_are_refused_here():
    import socket

    with pytest.raises(SocketBlockedError):
        socket.socket()


def test_nodes_carry_the_chunks_linked_previous_next_and_to_their_document(result: ChunkResult):
    from llama_index.core.schema import MetadataMode, NodeRelationship, ObjectType, TextNode

    nodes = to_nodes(result)
    assert len(nodes) == len(result.chunks) > 10
    for index, (node, chunk) in enumerate(zip(nodes, result.chunks, strict=True)):
        assert isinstance(node, TextNode)
        assert node.node_id == chunk.chunk_id
        assert node.text == chunk.embed_text
        # metadata is kept beside the text, never embedded with it: the strict maximum holds
        assert node.get_content(MetadataMode.EMBED) == chunk.embed_text
        assert node.get_content(MetadataMode.LLM) == chunk.embed_text
        assert node.metadata["chunk_id"] == chunk.chunk_id
        assert node.metadata["section_path"] == chunk.section_path
        assert node.metadata["page_numbers"] == [] and node.metadata["document_id"] == "docling-ocr"
        assert node.source_node.node_id == "docling-ocr"
        assert node.relationships[NodeRelationship.SOURCE].node_type == ObjectType.DOCUMENT
        assert (node.prev_node.node_id if node.prev_node else None) == \
            (result.chunks[index - 1].chunk_id if index else None)
        assert (node.next_node.node_id if node.next_node else None) == \
            (result.chunks[index + 1].chunk_id if index + 1 < len(result.chunks) else None)


def test_vector_store_index_round_trip_and_links_resolve(result: ChunkResult):
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.postprocessor import PrevNextNodePostprocessor

    nodes = to_nodes(result)
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    docstore = index.docstore
    stored = [docstore.get_node(node.node_id) for node in nodes]
    assert [(n.node_id, n.text, n.metadata) for n in stored] == \
        [(n.node_id, n.text, n.metadata) for n in nodes]
    for node in stored:  # every previous/next link names a node the index holds
        for link in (node.prev_node, node.next_node):
            if link is not None:
                assert docstore.document_exists(link.node_id)
        if node.next_node is not None:
            assert docstore.get_node(node.next_node.node_id).prev_node.node_id == node.node_id
    retrieved = index.as_retriever(similarity_top_k=3).retrieve("Which OCR engines are supported?")
    assert len(retrieved) == 3 and all(hit.node.node_id in {n.node_id for n in nodes} for hit in retrieved)
    # LlamaIndex's own neighbour expansion follows our links
    middle = retrieved[0]
    neighbours = PrevNextNodePostprocessor(docstore=docstore, num_nodes=1, mode="both")
    expanded = neighbours.postprocess_nodes([middle])
    links = (middle.node.prev_node, middle.node.next_node)
    expected = {middle.node.node_id} | {link.node_id for link in links if link is not None}
    assert {hit.node.node_id for hit in expanded} == expected


def test_chunks_and_parents_are_linked_parent_and_child(result: ChunkResult):
    from llama_index.core.schema import NodeRelationship

    nodes, parents = to_nodes(result), to_parent_nodes(result)
    by_id = {n.node_id: n for n in [*nodes, *parents]}
    assert len(by_id) == len(nodes) + len(parents)
    for node, chunk in zip(nodes, result.chunks, strict=True):
        parent = by_id[node.parent_node.node_id]
        assert node.parent_node.node_id == parent_key(result, chunk.parent_id) == node.metadata["parent_id"]
        assert node.node_id in [child.node_id for child in parent.child_nodes]
    for node, parent in zip(parents, result.parents, strict=True):
        assert node.text == parent_text(result, parent)
        assert node.metadata["parent_kind"] == parent.kind
        for child in node.child_nodes or []:
            assert by_id[child.node_id].parent_node.node_id == node.node_id
        if parent.parent_id is None:
            assert NodeRelationship.PARENT not in node.relationships
    assert parents[0].node_id == "docling-ocr:doc"


def test_auto_merging_retriever_merges_chunks_up_into_their_parent(result: ChunkResult):
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.retrievers import AutoMergingRetriever

    nodes, parents = to_nodes(result, content="text"), to_parent_nodes(result)
    storage = StorageContext.from_defaults()
    storage.docstore.add_documents([*nodes, *parents])
    index = VectorStoreIndex(nodes, storage_context=storage, embed_model=MockEmbedding(embed_dim=8))
    # MockEmbedding gives every text the same vector: every chunk is retrieved, so every parent
    # whose children are all retrieved replaces them
    retriever = AutoMergingRetriever(index.as_retriever(similarity_top_k=len(nodes)), storage,
                                     simple_ratio_thresh=0.5)
    merged = retriever.retrieve("Which OCR engines are supported?")
    kept = {hit.node.node_id for hit in merged}
    parent_ids = {p.node_id for p in parents}
    assert kept & parent_ids, "no chunk was merged into its parent"
    texts = "\n\n".join(hit.node.text for hit in merged)
    assert all(chunk.text in texts for chunk in result.chunks)  # nothing lost by merging
def test_nodes_carry_the_vectors_of_their_text(embedded_result: ChunkResult):
    from schemas.chunks import embedded_text
    from tests.adapters.conftest import text_vector

    nodes = to_nodes(embedded_result)
    assert [n.embedding for n in nodes] == [text_vector(embedded_text(c)) for c in embedded_result.chunks]
    assert all(n.get_content(metadata_mode="embed") == embedded_text(c)
               for n, c in zip(nodes, embedded_result.chunks, strict=True))
    assert all(n.embedding is None for n in to_nodes(embedded_result, content="text"))


def test_nodes_without_embed_have_no_vector(result: ChunkResult):
    assert all(n.embedding is None for n in to_nodes(result))
