"""A chunking result as LlamaIndex ``TextNode``s (extra ``[llamaindex]``: llama-index-core).

    from adapters import chunk_markdown
    from adapters.llamaindex import to_nodes

    nodes = to_nodes(chunk_markdown(markdown, config, document_id="notes"))
    index = VectorStoreIndex(nodes, embed_model=embed_model)

Each chunk becomes one ``TextNode``: ``id_`` is the chunk id, ``text`` what the engine meant
to be embedded (``embed_text`` when ``heading_context`` is on, else the text), ``metadata``
the same keys as :func:`adapters.metadata.chunk_metadata`. The metadata is excluded from the
embedded and the LLM's text (LlamaIndex would otherwise prepend it), so what is embedded is
exactly the chunk's text and a strict maximum still holds. Relationships: ``PREVIOUS`` and
``NEXT`` link the chunks in reading order, ``SOURCE`` names the document (its id), so
LlamaIndex's node postprocessors that follow neighbours (``PrevNextNodePostprocessor``) work;
``PARENT`` names the chunk's parent node (``metadata["parent_id"]``).

Parents (``ChunkResult.parents``: a section with its subsections, a whole table, the document)
are nodes too (:func:`to_parent_nodes`): their text is the texts of the chunks in their scope
joined, ``CHILD`` lists their own chunks and the parents nested in them, ``PARENT`` names the
enclosing one. Index the chunks and keep every node in the docstore, and LlamaIndex's
``AutoMergingRetriever`` merges retrieved chunks up into their section or table::

    nodes, parents = to_nodes(result), to_parent_nodes(result)
    storage = StorageContext.from_defaults()
    storage.docstore.add_documents([*nodes, *parents])
    index = VectorStoreIndex(nodes, storage_context=storage, embed_model=embed_model)
    retriever = AutoMergingRetriever(index.as_retriever(similarity_top_k=12), storage)
LlamaIndex's node postprocessors that follow neighbours (``PrevNextNodePostprocessor``) work.
A result made with ``embed`` sets each node's ``embedding`` (the vector of exactly that text), so
an index built from the nodes does not embed them again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapters.metadata import Content, chunk_content, chunk_metadata, chunk_vectors, parent_metadata
from adapters.small_to_big import PARENT_SEPARATOR, parent_key, scope_chunks
from schemas import ChunkResult

if TYPE_CHECKING:  # pragma: no cover - types only
    from llama_index.core.schema import TextNode

__all__ = ["INSTALL_HINT", "to_nodes", "to_parent_nodes"]

INSTALL_HINT = "pip install 'longparser-worker[llamaindex]'"


def to_nodes(result: ChunkResult, *, content: Content = "embed_text") -> list[TextNode]:
    """The chunks of ``result`` as LlamaIndex ``TextNode``s, in reading order, linked.

    Args:
        result: a :class:`schemas.ChunkResult`.
        content: ``embed_text`` (default) or ``text``, as for LangChain documents. A node's
            ``embedding`` is the vector of the embedded text: with ``text``, none is set.

    Raises:
        ImportError: llama-index-core is not installed (the message says what to install).
    """
    try:
        from llama_index.core.schema import NodeRelationship, TextNode
    except ImportError as exc:
        raise ImportError(f"LlamaIndex nodes need llama-index-core: {INSTALL_HINT}") from exc
    nodes = []
    embedded = content == "embed_text" and all(chunk.embedding is not None for chunk in result.chunks)
    vectors = chunk_vectors(result) if embedded and result.chunks else [None] * len(result.chunks)
    for index, chunk in enumerate(result.chunks):
        metadata = chunk_metadata(result, index)
        relationships = _relationships(result, [
            (NodeRelationship.PREVIOUS, metadata["previous_chunk_id"]),
            (NodeRelationship.NEXT, metadata["next_chunk_id"]),
            (NodeRelationship.PARENT, metadata["parent_id"]),
        ])
        nodes.append(TextNode(
            id_=chunk.chunk_id, text=chunk_content(chunk, content), metadata=metadata,
            excluded_embed_metadata_keys=list(metadata), excluded_llm_metadata_keys=list(metadata),
            relationships=relationships, embedding=vectors[index],
        ))
    return nodes


def to_parent_nodes(result: ChunkResult) -> list[TextNode]:
    """The parents of ``result``'s chunks as LlamaIndex ``TextNode``s, in the order of
    ``result.parents``: ``id_`` is the id the chunks' ``PARENT`` names, ``text`` the texts of the
    chunks in its scope joined (:func:`adapters.small_to_big.parent_text`), ``metadata``
    :func:`adapters.metadata.parent_metadata` (kept out of the embedded and LLM text);
    ``CHILD``: its own chunks then the parents nested in it, ``PARENT``: the enclosing parent,
    ``SOURCE``: the document.

    Raises:
        ImportError: llama-index-core is not installed (the message says what to install).
    """
    try:
        from llama_index.core.schema import NodeRelationship, ObjectType, RelatedNodeInfo, TextNode
    except ImportError as exc:
        raise ImportError(f"LlamaIndex nodes need llama-index-core: {INSTALL_HINT}") from exc
    scopes = scope_chunks(result)
    nested: dict[str, list[str]] = {}
    for parent in result.parents:
        if parent.parent_id is not None:
            nested.setdefault(parent.parent_id, []).append(parent_key(result, parent.id))
    nodes = []
    for parent in result.parents:
        metadata = parent_metadata(result, parent)
        relationships = _relationships(result, [(NodeRelationship.PARENT, metadata["enclosing_parent_id"])])
        children = [*parent.chunk_ids, *nested.get(parent.id, [])]
        if children:
            relationships[NodeRelationship.CHILD] = [
                RelatedNodeInfo(node_id=child, node_type=ObjectType.TEXT) for child in children]
        nodes.append(TextNode(
            id_=metadata["parent_id"], text=PARENT_SEPARATOR.join(c.text for c in scopes[parent.id]),
            metadata=metadata, excluded_embed_metadata_keys=list(metadata),
            excluded_llm_metadata_keys=list(metadata), relationships=relationships,
        ))
    return nodes


def _relationships(result: ChunkResult, links: list[tuple[Any, str | None]]) -> dict[Any, Any]:
    """``SOURCE`` (the document, when the result names it) and each ``(relation, node id)`` link
    whose id is not None, to a text node."""
    from llama_index.core.schema import NodeRelationship, ObjectType, RelatedNodeInfo

    relationships: dict[Any, Any] = {}
    if result.document_id is not None:
        relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(
            node_id=result.document_id, node_type=ObjectType.DOCUMENT)
    for relation, node_id in links:
        if node_id is not None:
            relationships[relation] = RelatedNodeInfo(node_id=node_id, node_type=ObjectType.TEXT)
    return relationships
