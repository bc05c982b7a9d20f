"""Stage 10: deterministic chunk ids that survive edits elsewhere in the document.

A chunk's id is a hash of what the chunk itself holds, never of its position:

* ``document_id`` (``""`` when none), the chunk type, and the chunk's *primary* content: the
  texts of its own parts, in order. Text copied in as context (paragraph overlap, a repeated
  list lead-in, a table's repeated title and header line) and the heading breadcrumb are left
  out, so editing a neighbour or a heading does not change the id of a chunk whose own content
  stayed the same. Block ids are left out too: loaders number blocks by position (docling's
  ``p<page>-b<n>``, Markdown's ordinals), so one inserted paragraph would renumber every later
  block of its page or file.
* the occurrence number among the chunks (in reading order) whose content hash is the same, so
  two chunks with equal type and text still get distinct ids; the first occurrence's id is the
  content hash itself.

The same request always gives the same ids (a redelivered task rewrites the same chunks), and
an edit changes only the ids of the chunks whose primary content changed (plus a later
duplicate of an edited chunk's content, whose occurrence number moves).

Fields are joined with NUL / RS separators: unambiguous for text (a chunk's text never holds a
NUL: the schema's blocks are UTF-8 text, and the separators only delimit, they are not parsed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

ID_HEX_CHARS = 32
_FIELD = "\x00"
_PART = "\x1e"


def _heading(document_id: str | None, chunk_type: str) -> Any:
    """The hash of the fields before a chunk's primary content (copied for each chunk of one type)."""
    return hashlib.sha256(_FIELD.join((document_id or "", chunk_type, "")).encode("utf-8"))


def content_digest(document_id: str | None, chunk_type: str, primary: Sequence[str]) -> str:
    """SHA-256 hex of a chunk's identity without its occurrence number."""
    return _digest(_heading(document_id, chunk_type), primary)


def _digest(heading: Any, primary: Sequence[str]) -> str:
    digest = heading.copy()
    digest.update(_PART.join(primary).encode("utf-8"))
    return digest.hexdigest()


def chunk_ids(document_id: str | None, chunks: Iterable[tuple[str, Sequence[str]]]) -> list[str]:
    """The ids of a result's chunks, given each chunk's ``(chunk_type, primary texts)`` in
    reading order (the one place ids are built)."""
    seen: dict[str, int] = {}
    headings: dict[str, Any] = {}  # per chunk type: a document has a few types and many chunks
    ids = []
    for chunk_type, primary in chunks:
        heading = headings.get(chunk_type)
        if heading is None:
            heading = headings[chunk_type] = _heading(document_id, chunk_type)
        digest = _digest(heading, primary)
        occurrence = seen.get(digest, 0)
        seen[digest] = occurrence + 1
        if occurrence:
            digest = hashlib.sha256(f"{digest}{_FIELD}{occurrence}".encode("ascii")).hexdigest()
        ids.append(digest[:ID_HEX_CHARS])
    return ids
