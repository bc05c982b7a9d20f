"""A chunking result as LangChain ``Document``s (extra ``[langchain]``: langchain-core).

    from adapters import chunk_markdown
    from adapters.langchain import to_documents

    documents = to_documents(chunk_markdown(markdown, config, document_id="notes"))
    store.add_documents(documents)          # ids are the chunk ids: re-adding replaces

Each chunk becomes one ``Document``: ``id`` is the chunk id; ``page_content`` is what the
engine meant to be embedded (``embed_text``: the heading breadcrumb and the text, when
``heading_context`` is on; else the text), so a strict maximum holds for what the vector store
embeds; ``metadata`` holds :func:`adapters.metadata.chunk_metadata`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.metadata import Content, chunk_content, chunk_metadata
from schemas import ChunkResult

if TYPE_CHECKING:  # pragma: no cover - types only
    from langchain_core.documents import Document

__all__ = ["INSTALL_HINT", "to_documents"]

INSTALL_HINT = "pip install 'longparser-worker[langchain]'"
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
    try:
        from langchain_core.documents import Document
    except ImportError as exc:
        raise ImportError(f"LangChain documents need langchain-core: {INSTALL_HINT}") from exc
    return [Document(id=chunk.chunk_id, page_content=chunk_content(chunk, content),
                     metadata=chunk_metadata(result, index))
            for index, chunk in enumerate(result.chunks)]
