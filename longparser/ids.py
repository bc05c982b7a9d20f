"""Deterministic chunk ids.

``chunk_id`` = the first 32 hex characters of SHA-256 over ``document_id or ""``, ``index``,
``chunk_type``, ``block_ids`` and ``text``, joined with NUL/SOH separators. The same request
always gives the same ids (a redelivered task overwrites its stored result instead of duplicating it); the
index makes ids unique within a result even if two chunks had equal text and sources.
Rejected: JSON-encoding the fields (unambiguous even for ids containing control characters,
but it was the slowest step of id generation; the index already guarantees uniqueness).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

ID_HEX_CHARS = 32


def chunk_id(
    document_id: str | None, index: int, chunk_type: str, block_ids: Sequence[str], text: str
) -> str:
    """The id of the ``index``-th chunk of a result."""
    head = "\x00".join((document_id or "", str(index), chunk_type, "\x01".join(block_ids), ""))
    digest = hashlib.sha256(head.encode("utf-8"))
    digest.update(text.encode("utf-8"))  # same bytes as hashing the joined payload, without copying the text
    return digest.hexdigest()[:ID_HEX_CHARS]
