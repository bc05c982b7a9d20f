"""Exceptions shared by the task and the producer client.

Task exceptions carry ONE string argument: Celery's JSON result backend stores
``{"exc_type", "exc_module", "exc_message"}`` and rebuilds the exception from its args on the
producer side, which only works cleanly for exceptions constructed from a message.
"""

from __future__ import annotations

from longparser_client.schemas.errors import RequestRefused

__all__ = [
    "BrokerUnavailable", "ChunkTaskError", "ChunkingFailed", "InvalidPayload", "JobFailed", "JobNotFound",
    "PayloadTooLarge", "PoisonMessage", "ReferenceCorrupt", "ReferenceMissing", "RequestRefused",
    "ResultTimeout", "SemanticUnavailable", "StoreFull", "StoreUnavailable",
]

class ChunkTaskError(Exception):
    """Base of errors a chunking task fails with (never retried); the engine's
    :class:`~schemas.errors.RequestRefused`, raised as it is, is the other one."""


class InvalidPayload(ChunkTaskError):
    """The payload is not a valid ChunkRequest; the message names the block and field."""


class PayloadTooLarge(InvalidPayload):
    """The JSON-encoded payload exceeds ``LONGPARSER_MAX_PAYLOAD_BYTES``."""


class ReferenceMissing(ChunkTaskError):
    """A request sent by reference whose bytes are gone (expired, or consumed by an earlier run
    that stored another record since)."""


class ReferenceCorrupt(InvalidPayload):
    """A request sent by reference whose message or bytes are unusable: a malformed reference, bytes
    that do not decompress, or of another size or digest than the message announced."""


class SemanticUnavailable(ChunkTaskError):
    """A semantic request reached a worker that does not load the model."""


class ChunkingFailed(ChunkTaskError):
    """The engine (or the time limit) stopped a valid request; the message names the cause."""


class PoisonMessage(ChunkTaskError):
    """A message a worker process started ``LONGPARSER_MAX_STARTS`` times without storing a
    record (its runs killed their process): refused instead of run again."""


class StoreUnavailable(RuntimeError):
    """Worker side: Redis stayed unreachable for the whole ``LONGPARSER_STORE_RETRY_WINDOW``; the
    message is left for redelivery (never acknowledged without a stored record)."""


class BrokerUnavailable(ConnectionError):
    """Producer side: the broker or store stayed unreachable for ``LONGPARSER_SUBMIT_RETRY_WINDOW``
    seconds; the message names the URL (password masked)."""


class StoreFull(RuntimeError):
    """Producer side: Redis refused a write because it is full (OOM under ``noeviction``); workers
    draining the queue free memory, or raise ``maxmemory``."""


class JobFailed(RuntimeError):
    """Producer side: the document's task failed; ``error_type`` and ``message`` say why."""

    def __init__(self, document_id: str, error_type: str, message: str):
        super().__init__(f"document {document_id!r} failed: {error_type}: {message}")
        self.document_id, self.error_type, self.message = document_id, error_type, message


class ResultTimeout(TimeoutError):
    """Producer side: no result within the timeout (the job may still be queued or running)."""


class JobNotFound(LookupError):
    """Producer side: neither a submission nor a stored result exists for the document id."""
