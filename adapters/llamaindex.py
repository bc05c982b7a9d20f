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
LlamaIndex's node postprocessors that follow neighbours (``PrevNextNodePostprocessor``) work.
A result made with ``embed`` sets each node's ``embedding`` (the vector of exactly that text), so
an index built from the nodes does not embed them again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.metadata import Content, chunk_content, chunk_metadata, chunk_vectors
from schemas import ChunkResult

if TYPE_CHECKING:  # pragma: no cover - types only
    from llama_index.core.schema import TextNode

__all__ = ["INSTALL_HINT", "to_nodes"]

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
        from llama_index.core.schema import NodeRelationship, ObjectType, RelatedNodeInfo, TextNode
    except ImportError as exc:
        raise ImportError(f"LlamaIndex nodes need llama-index-core: {INSTALL_HINT}") from exc
    nodes = []
    embedded = content == "embed_text" and all(chunk.embedding is not None for chunk in result.chunks)
    vectors = chunk_vectors(result) if embedded and result.chunks else [None] * len(result.chunks)
    for index, chunk in enumerate(result.chunks):
        metadata = chunk_metadata(result, index)
        relationships = {}
        if result.document_id is not None:
            relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(
                node_id=result.document_id, node_type=ObjectType.DOCUMENT)
        if metadata["previous_chunk_id"] is not None:
            relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(
                node_id=metadata["previous_chunk_id"], node_type=ObjectType.TEXT)
        if metadata["next_chunk_id"] is not None:
            relationships[NodeRelationship.NEXT] = RelatedNodeInfo(
                node_id=metadata["next_chunk_id"], node_type=ObjectType.TEXT)
        nodes.append(TextNode(
            id_=chunk.chunk_id, text=chunk_content(chunk, content), metadata=metadata,
            excluded_embed_metadata_keys=list(metadata), excluded_llm_metadata_keys=list(metadata),
            relationships=relationships, embedding=vectors[index],
        ))
    return nodes
