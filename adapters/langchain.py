"""A chunking result as LangChain ``Document``s (extra ``[langchain]``: langchain-core).

    from adapters import chunk_markdown
    from adapters.langchain import to_documents

    documents = to_documents(chunk_markdown(markdown, config, document_id="notes"))
    store.add_documents(documents)          # ids are the chunk ids: re-adding replaces

Each chunk becomes one ``Document``: ``id`` is the chunk id; ``page_content`` is what the
engine meant to be embedded (``embed_text``: the heading breadcrumb and the text, when
``heading_context`` is on; else the text), so a strict maximum holds for what the vector store
embeds; ``metadata`` holds :func:`adapters.metadata.chunk_metadata`.

The parent-document pattern (search small chunks, hand the reader their parents):
:func:`to_parent_documents` makes one ``Document`` per parent (``ChunkResult.parents``: a
section with its subsections, a whole table, the document) whose text is the texts of the
chunks in its scope joined; every chunk's
``metadata["parent_id"]`` is its parent document's id::

    store.add_documents(to_documents(result))
    docstore = InMemoryStore()                      # langchain_core.stores, or any BaseStore
    docstore.mset([(d.id, d) for d in to_parent_documents(result)])
    found = store.similarity_search(question, k=8)
    parents = docstore.mget(list(dict.fromkeys(d.metadata["parent_id"] for d in found)))
A result with vectors (``embed``) goes to a vector store without embedding again
(:func:`to_embeddings`): the store's ``add_embeddings`` takes its texts, vectors, metadatas and ids
as they are (``store.add_embeddings(**to_embeddings(result).as_keywords())`` for the stores that
take texts and vectors apart, ``text_embeddings`` for those that take pairs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from adapters.metadata import Content, chunk_content, chunk_metadata, chunk_vectors, parent_metadata
from adapters.small_to_big import PARENT_SEPARATOR, scope_chunks
from schemas import ChunkResult

if TYPE_CHECKING:  # pragma: no cover - types only
    from langchain_core.documents import Document

__all__ = ["INSTALL_HINT", "EmbeddedTexts", "to_documents", "to_embeddings", "to_parent_documents"]

INSTALL_HINT = "pip install 'longparser-worker[langchain]'"


def _document_class() -> type[Document]:
    try:
        from langchain_core.documents import Document
    except ImportError as exc:
        raise ImportError(f"LangChain documents need langchain-core: {INSTALL_HINT}") from exc
    return Document


def to_documents(result: ChunkResult, *, content: Content = "embed_text") -> list[Document]:
    """The chunks of ``result`` as LangChain ``Document``s, in reading order.

    Args:
        result: a :class:`schemas.ChunkResult` (``chunk_blocks``, ``chunk_markdown``, a
            worker's stored result).
        content: ``embed_text`` (default: the breadcrumb and text when the engine made one) or
            ``text`` (the chunk's own text only).

    Raises:
        ImportError: langchain-core is not installed (the message says what to install).
    """
    document = _document_class()
    return [document(id=chunk.chunk_id, page_content=chunk_content(chunk, content),
                     metadata=chunk_metadata(result, index))
            for index, chunk in enumerate(result.chunks)]


def to_parent_documents(result: ChunkResult) -> list[Document]:
    """The parents of ``result``'s chunks as LangChain ``Document``s, in the order of
    ``result.parents``: ``id`` is the id the chunks' ``metadata["parent_id"]`` names,
    ``page_content`` the texts of the chunks in its scope joined
    (:func:`adapters.small_to_big.parent_text`), ``metadata``
    :func:`adapters.metadata.parent_metadata`.

    Raises:
        ImportError: langchain-core is not installed (the message says what to install).
    """
    document = _document_class()
    scopes = scope_chunks(result)
    documents = []
    for parent in result.parents:
        metadata = parent_metadata(result, parent)
        text = PARENT_SEPARATOR.join(chunk.text for chunk in scopes[parent.id])
        documents.append(document(id=metadata["parent_id"], page_content=text, metadata=metadata))
    return documents
@dataclass(frozen=True)
class EmbeddedTexts:
    """A result's chunks ready for a LangChain vector store's ``add_embeddings``: the texts that
    were embedded, their vectors (lists of floats), metadatas and ids, in reading order."""

    texts: list[str]
    embeddings: list[list[float]]
    metadatas: list[dict[str, Any]]
    ids: list[str]

    @property
    def text_embeddings(self) -> list[tuple[str, list[float]]]:
        """``(text, vector)`` pairs, for stores whose ``add_embeddings`` takes them (FAISS)."""
        return list(zip(self.texts, self.embeddings, strict=True))

    def as_keywords(self) -> dict[str, Any]:
        """``texts``, ``embeddings``, ``metadatas`` and ``ids`` as keyword arguments (PGVector)."""
        return {"texts": self.texts, "embeddings": self.embeddings, "metadatas": self.metadatas,
                "ids": self.ids}


def to_embeddings(result: ChunkResult) -> EmbeddedTexts:
    """The chunks of a result made with ``embed``, with their vectors, for ``add_embeddings``.

    The texts are what was embedded (``embed_text`` when the engine made one, else the text),
    so a store's own similarity search over them matches the vectors.

    Raises:
        ValueError: the result carries no vectors (it was made without ``embed``).
    """
    return EmbeddedTexts(texts=[chunk_content(chunk, "embed_text") for chunk in result.chunks],
                         embeddings=chunk_vectors(result),
                         metadatas=[chunk_metadata(result, index) for index in range(len(result.chunks))],
                         ids=[chunk.chunk_id for chunk in result.chunks])
