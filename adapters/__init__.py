"""Chunks where users want them: a string in, a ChunkResult out, and the frameworks' own types.

* :func:`chunk_text` and :func:`chunk_markdown`: plain text or Markdown in (converted by
  :mod:`loaders.markdown`), a :class:`schemas.ChunkResult` out, like
  :func:`longparser.chunk_blocks` (same config, resources and document id).
* :mod:`adapters.langchain`: a result as LangChain ``Document``s (extra ``[langchain]``).
* :mod:`adapters.llamaindex`: a result as LlamaIndex ``TextNode``s linked previous/next, to
  their parent and to their document, and the parents as nodes (extra ``[llamaindex]``).
* :mod:`adapters.small_to_big`: retrieved chunks in, their parents (section, table, document)
  out, in rank order within a token budget.

This package sits above the engine and the loaders and below the command line; the engine,
the loaders and the service never import it (``lint-imports`` checks it), so the worker never
needs a framework.
"""

from __future__ import annotations

from typing import Any

from loaders.markdown import blocks_from_markdown, blocks_from_text
from longparser import Resources, chunk_blocks
from schemas import ChunkingConfig, ChunkResult

__all__ = ["chunk_markdown", "chunk_text"]


def chunk_markdown(
    markdown: str,
    config: ChunkingConfig | dict[str, Any] | None = None,
    resources: Resources | None = None,
    *,
    document_id: str | None = None,
    source_file: str | None = None,
) -> ChunkResult:
    """Chunk a Markdown document (see docs/inputs.md for what becomes what).

    ``config``, ``resources`` and ``document_id`` are :func:`longparser.chunk_blocks`'s;
    ``source_file`` goes into every block's provenance.
    """
    return chunk_blocks(blocks_from_markdown(markdown, source_file=source_file), config, resources,
                        document_id=document_id)


def chunk_text(
    text: str,
    config: ChunkingConfig | dict[str, Any] | None = None,
    resources: Resources | None = None,
    *,
    document_id: str | None = None,
    source_file: str | None = None,
) -> ChunkResult:
    """Chunk plain text: one paragraph per run of lines between blank lines, then the engine."""
    return chunk_blocks(blocks_from_text(text, source_file=source_file), config, resources,
                        document_id=document_id)
