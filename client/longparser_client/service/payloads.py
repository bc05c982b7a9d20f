"""Requests sent by reference (claim check): their bytes live beside the results, not in the queue.

A request whose JSON is larger than ``LONGPARSER_REFERENCE_THRESHOLD_BYTES`` would make every hop
of the broker pay for its size several times over (the queue list, the ``unacked`` copy, the
worker parent's decode, the pipe to the pool child). Instead the producer writes the request's
JSON, zlib-compressed, under ``P:payload:<document_id>:<sha256>`` in the result store's Redis,
with the results' TTL, and publishes a small message naming it::

    {"document_id": "...", "reference": {"key": "P:payload:...", "sha256": "<hex of the JSON>",
                                          "bytes": <JSON size>, "encoding": "zlib"}}

The worker reads the bytes, checks size and digest, validates them straight from bytes and
deletes them once the document's record is stored. :class:`PayloadStore` is the whole interface
the producer and the worker use; :class:`RedisPayloads` implements it on Redis (an object store
could implement it later). Importable without Celery or torch.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from longparser_client.service.keys import is_sha256_hex, is_valid_document_id, payload_key
from longparser_client.service.redis_client import redis_client
from longparser_client.settings import Settings

ENCODING = "zlib"
# Level 1: several times faster than zlib's default for a few percent more bytes; the bytes
# live only until the worker has stored the result.
COMPRESS_LEVEL = 1
# Compressed bytes fed to the inflater per step, and the most one step may inflate them to
# (zlib's max_length; the rest waits in the inflater's unconsumed tail).
_FEED_BYTES = 16 * 1024
_PIECE_BYTES = 1024 * 1024


class ReferenceProblem(ValueError):
    """Base of the reference problems a worker turns into a FAILURE record."""


class MalformedReference(ReferenceProblem):
    """A message whose ``reference`` is not the shape the producer writes."""


class MissingPayload(ReferenceProblem):
    """The referenced bytes are gone (expired, deleted after a stored result, or never written)."""


class CorruptPayload(ReferenceProblem):
    """The referenced bytes do not decompress, or their size or digest is not the message's."""


@dataclass(frozen=True)
class Reference:
    """Where a request's bytes are and what they must be: the message's ``reference`` object."""

    key: str
    sha256: str
    bytes: int
    encoding: str = ENCODING

    def as_message(self, document_id: str) -> dict[str, Any]:
        """The task's positional argument for this reference."""
        return {"document_id": document_id,
                "reference": {"key": self.key, "sha256": self.sha256, "bytes": self.bytes,
                              "encoding": self.encoding}}


def is_reference_message(payload: Any) -> bool:
    """True when a task argument is a reference (it has a ``reference`` member), valid or not."""
    return isinstance(payload, dict) and "reference" in payload


def parse_reference(payload: dict[str, Any], prefix: str) -> Reference:
    """The reference of a message, checked against the key this fleet would have written.

    The key must be ``payload_key(prefix, document_id, sha256)``: a message cannot make a worker
    read (and later delete) any other key.

    Raises:
        MalformedReference: a missing or mistyped member, an unknown encoding, another key.
    """
    reference = payload.get("reference")
    document_id = payload.get("document_id")
    if not isinstance(reference, dict) or not is_valid_document_id(document_id):
        raise MalformedReference("a reference message needs a valid document_id and a reference object")
    key, digest, size, encoding = (reference.get(name) for name in ("key", "sha256", "bytes", "encoding"))
    if encoding != ENCODING:
        raise MalformedReference(f"reference encoding {encoding!r} is not supported (only {ENCODING!r})")
    if not is_sha256_hex(digest) or not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise MalformedReference("reference needs sha256 (64 lower-case hex digits) and bytes (a size)")
    expected = payload_key(prefix, document_id, digest)
    if key != expected:
        raise MalformedReference(f"reference key {key!r} is not {expected!r} (LONGPARSER_KEY_PREFIX)")
    return Reference(key, digest, size, encoding)


def digest_of(data: bytes | Sequence[bytes]) -> str:
    """Hex SHA-256 of a request's JSON, whole or in pieces (what its reference and its SUCCESS
    record carry)."""
    if isinstance(data, bytes):
        return hashlib.sha256(data).hexdigest()
    digest = hashlib.sha256()
    for piece in data:
        digest.update(piece)
    return digest.hexdigest()


def decompress_checked(compressed: bytes, reference: Reference) -> bytes:
    """The request's JSON from its stored bytes, checked against the reference.

    Inflated piece by piece, each piece at most 1 MiB and at most what is left of the announced
    size plus one byte (zlib's ``max_length``): stored bytes that would inflate past the
    announced size stop one byte over it, so a small compressed payload cannot inflate beyond
    what its message declares (itself bounded by ``LONGPARSER_MAX_PAYLOAD_BYTES``). The pieces
    are joined once (bytes, which the JSON parser reads without another copy).

    Raises:
        CorruptPayload: not zlib data, truncated, or of another size or digest.
    """
    pieces: list[bytes] = []
    filled = 0
    inflater = zlib.decompressobj()
    with memoryview(compressed) as source:
        try:
            for start in range(0, len(source), _FEED_BYTES):
                feed: bytes | memoryview = source[start:start + _FEED_BYTES]
                while feed and not inflater.eof:
                    # max_length >= 1 here (filled <= reference.bytes); 0 would mean "no limit"
                    piece = inflater.decompress(feed, min(_PIECE_BYTES, reference.bytes + 1 - filled))
                    filled += len(piece)
                    if filled > reference.bytes:
                        raise CorruptPayload(f"referenced bytes at {reference.key} inflate to more than "
                                             f"the {reference.bytes} announced")
                    pieces.append(piece)
                    feed = inflater.unconsumed_tail
        except zlib.error as exc:
            raise CorruptPayload(f"referenced bytes at {reference.key} are not zlib data ({exc})") from None
    if filled != reference.bytes or not inflater.eof:
        raise CorruptPayload(f"referenced bytes at {reference.key} inflate to {filled} bytes"
                             f"{'' if inflater.eof else ' (truncated)'}, not the {reference.bytes} announced")
    data = b"".join(pieces)
    del pieces
    if digest_of(data) != reference.sha256:
        raise CorruptPayload(f"referenced bytes at {reference.key} do not match their sha256")
    return data


class PayloadStore(Protocol):
    """Where referenced request bytes live: put by the producer, get and delete by the worker."""

    def put(self, document_id: str, data: bytes | Sequence[bytes]) -> Reference:
        """Store a request's JSON (whole, or pieces read in order); returns its reference."""

    def get(self, reference: Reference) -> bytes:
        """The request's JSON, checked (raises MissingPayload / CorruptPayload)."""

    def delete(self, reference: Reference) -> None:
        """Forget the bytes (after the document's record is stored)."""


@dataclass(frozen=True)
class RedisPayloads:
    """:class:`PayloadStore` on Redis: one ``SET key zlib(json) EX ttl`` per request.

    Attributes:
        client: a ``redis.Redis`` (or fakeredis) client on the result store's Redis.
        prefix: ``LONGPARSER_KEY_PREFIX``.
        ttl: seconds the bytes live (``LONGPARSER_RESULT_TTL``: a document waiting longer than its
            result would live is not worth chunking).
    """

    client: Any
    prefix: str
    ttl: int

    @classmethod
    def from_settings(cls, settings: Settings, client: Any = None) -> RedisPayloads:
        """Payloads on ``LONGPARSER_RESULT_URL`` (``client``: one already open on it)."""
        return cls(client if client is not None else redis_client(settings.result_url, settings),
                   settings.key_prefix, settings.result_ttl)

    def put(self, document_id: str, data: bytes | Sequence[bytes]) -> Reference:
        """Store a request's JSON, given whole or as pieces to be read in order (never joined:
        each is hashed and compressed as it comes, to the same digest and bytes)."""
        pieces = (data,) if isinstance(data, bytes) else data
        digest = digest_of(pieces)
        reference = Reference(payload_key(self.prefix, document_id, digest), digest, sum(map(len, pieces)))
        packer = zlib.compressobj(COMPRESS_LEVEL)
        self.client.set(reference.key, b"".join([*map(packer.compress, pieces), packer.flush()]), ex=self.ttl)
        return reference

    def get(self, reference: Reference) -> bytes:
        compressed = self.client.get(reference.key)
        if compressed is None:
            raise MissingPayload(f"referenced request {reference.key} is gone (expired after "
                                 f"LONGPARSER_RESULT_TTL, or already consumed)")
        return decompress_checked(compressed, reference)

    def delete(self, reference: Reference) -> None:
        self.client.delete(reference.key)

    def close(self) -> None:
        """Release the client's connections."""
        self.client.close()
