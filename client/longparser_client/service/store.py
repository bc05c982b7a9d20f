"""The result store: one JSON record per document id in Redis, written atomically with a TTL.

A record is the whole outcome of one task run (status, result or error) serialised into ONE
string and written with ONE ``SET key value EX ttl``: a reader sees either the previous record
or the new one, never a partial result. Chunk ids are deterministic, so a redelivered or
repeated task for the same content rewrites the same key with the same chunks instead of adding
a second copy (only ``task_id``, ``diff`` and the engine's timings may differ between runs).

Every record is written atomically with its completion event (``XADD P:events MAXLEN ~ N``,
fields in :func:`event_fields`): a FAILURE record in one MULTI/EXEC with its XADD, a SUCCESS
record in one Lua script (see below). A consumer of the stream never hears of a record that is
not stored, and a stored record always has its event (the stream is capped, so an old event may
be trimmed away; ``status`` is the reconciliation path). The same write deletes the task's start
count (``P:starts:<task_id>``, :meth:`ResultStore.count_start`): a message whose runs kill their
worker process is counted until a record is stored, and refused as ``PoisonMessage`` at the limit.

Re-ingestion diff: a SUCCESS record carries ``diff``, its chunk ids against the previous SUCCESS
record of the same document id (``previous_task_id``, ``added``, ``removed``, ``unchanged``), or
null when there was none. The previous ids come from a compact side key
(``P:chunkids:<id>``: a random token, then the task id and chunk ids as JSON, written atomically
with the record) rather than from the previous record: it is 32 characters per chunk instead of
the whole result, and a FAILURE record in between does not hide the last SUCCESS. The diff is
computed here (a set difference of up to 100k ids stays out of the Redis event loop); the
script then writes the record, the side key and the event only if the side key still carries
the token that was read, else the store reads again and recomputes. So two runs of one document
storing at once cannot both diff against the same previous ids: a diff always describes the
step from the record it replaced (optimistic concurrency, as WATCH would give, in one command).

Results whose JSON is larger than ``compress_bytes`` are stored with ``"encoding": "zlib+base64"``
and ``"result"`` the base64 text of the zlib-compressed JSON; :meth:`ResultStore.load_record`
hides it, so readers see the plain record.

Records keep the result's own key order (the schema's): ``longparser result`` prints them as
``chunk`` does. Importable without Celery or torch (the producer client reads records here).
"""

from __future__ import annotations

import base64
import json
import time
import uuid
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, NamedTuple

from longparser_client.service.keys import chunk_ids_key, events_key, job_key, result_key, start_count_key
from longparser_client.service.redis_client import redis_client
from longparser_client.settings import Settings

RECORD_VERSION = 1
COMPRESSED = "zlib+base64"
DEFAULT_COMPRESS_BYTES = 1024 * 1024
DEFAULT_EVENTS_MAXLEN = 100_000
STORE_CONFLICTS = 100  # concurrent stores of one document in a row before giving up (never seen)
TOKEN_CHARS = 32  # the chunk-id side key's value: a fresh random token, then its JSON

# The SUCCESS write, atomic: the record, the new chunk-id side key and the completion event, only
# if the side key still starts with the token the diff was computed against ("" = no key), and the
# task's start count (KEYS[4], when the run has a task id) removed with them. A
# script rather than WATCH + MULTI/EXEC: one command, so an outage or a Sentinel failover is the
# plain transient error of one write (redis-py reports a connection lost under WATCH as a
# conflict), and GETRANGE compares 32 bytes instead of the whole previous value.
STORE_SUCCESS_LUA = """
if redis.call('GETRANGE', KEYS[2], 0, 31) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[4])
redis.call('SET', KEYS[2], ARGV[3], 'EX', ARGV[4])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*', unpack(ARGV, 6))
if KEYS[4] then redis.call('DEL', KEYS[4]) end
return 1
"""


def _flat(fields: dict[str, str]) -> list[str]:
    return [item for pair in fields.items() for item in pair]


def compact_json(value: Any) -> str:
    """Compact JSON in the value's own key order (UTF-8 kept as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def success_record_json(document_id: str, task_id: str | None, result_json: str | bytes,
                        diff: dict[str, Any] | None = None, encoding: str | None = None,
                        request_sha256: str | None = None) -> str | bytes:
    """The record of a successful run, encoded, around ``result_json`` (``ChunkResult``'s JSON,
    or the JSON string of its compressed form when ``encoding`` is given):
    ``{"record_version", "status": "SUCCESS", "document_id", "task_id"[, "request_sha256"][,
    "encoding"], "result", "error": null, "diff"}``. ``request_sha256`` (the digest of the
    request's JSON) is there for a request sent by reference: a redelivered task whose referenced
    bytes are gone finds its own result by it.

    The result is encoded once, by pydantic's serializer, instead of dumped to Python objects and
    encoded again (:func:`compact_json` of the same record gives the same JSON); given as UTF-8
    bytes, the record is bytes too, which Redis takes without another encoding.
    """
    fields: dict[str, Any] = {"record_version": RECORD_VERSION, "status": "SUCCESS",
                              "document_id": document_id, "task_id": task_id}
    if request_sha256 is not None:
        fields["request_sha256"] = request_sha256
    if encoding is not None:
        fields["encoding"] = encoding
    head = compact_json(fields)
    tail = f',"error":null,"diff":{compact_json(diff)}}}'
    if isinstance(result_json, bytes):  # UTF-8 already: the record is built once, as bytes
        return b"".join((head[:-1].encode(), b',"result":', result_json, tail.encode()))
    return f'{head[:-1]},"result":{result_json}{tail}'


def chunk_diff(previous: dict[str, Any] | None, chunk_ids: Sequence[str]) -> dict[str, Any] | None:
    """The diff of ``chunk_ids`` against ``previous`` (a side-key value ``{"task_id", "chunk_ids"}``),
    each list in its own result's order; None without a previous SUCCESS."""
    if previous is None:
        return None
    old, new = previous["chunk_ids"], set(chunk_ids)
    before = set(old)
    return {"previous_task_id": previous.get("task_id"),
            "added": [i for i in chunk_ids if i not in before],
            "removed": [i for i in old if i not in new],
            "unchanged": [i for i in chunk_ids if i in before]}


def event_fields(record_key: str, document_id: str, status: str, task_id: str | None, chunks: int,
                 diff: dict[str, Any] | None, error_type: str | None) -> dict[str, str]:
    """The completion event of a stored record (every value a string; see docs/operations.md)."""
    def count(name: str) -> str:
        return "" if diff is None else str(len(diff[name]))

    return {"document_id": document_id, "status": status, "task_id": task_id or "", "result_key": record_key,
            "chunks": str(chunks), "added": count("added"), "removed": count("removed"),
            "unchanged": count("unchanged"), "error_type": error_type or "",
            "stored_at": f"{time.time():.3f}"}


def compress_result(result_json: str | bytes | Iterable[bytes]) -> bytes:
    """The ``zlib+base64`` form of a result's JSON, as a JSON string literal (ASCII bytes).

    The JSON may come in pieces (UTF-8 bytes, read once): each is compressed as it comes and
    let go, so a large result's JSON is never whole in memory (the same bytes as compressing
    it whole: zlib's output does not depend on how its input is cut). Bytes, not text: the
    record is then built as bytes, which Redis takes as they are (text would be copied twice
    more, decoded and then encoded again for the write).
    """
    if isinstance(result_json, str):
        result_json = result_json.encode("utf-8", "surrogatepass")
    packer = zlib.compressobj(6)
    pieces = (result_json,) if isinstance(result_json, bytes) else result_json
    packed = base64.b64encode(b"".join([*map(packer.compress, pieces), packer.flush()]))
    return b"".join((b'"', packed, b'"'))


class StoredResult(NamedTuple):
    """A result's JSON as a record holds it: ``value`` the JSON (UTF-8 bytes or text) or its
    compressed form, ``encoding`` None or ``zlib+base64``."""

    value: str | bytes
    encoding: str | None


def stored_result(result_json: str | bytes | Iterable[bytes], compress_bytes: int) -> StoredResult:
    """A result's JSON as a record holds it: itself up to ``compress_bytes`` (UTF-8), compressed
    above (:func:`compress_result`).

    Given in pieces (read once), the JSON is held only until its size passes
    ``compress_bytes``; the rest is compressed as it comes.
    """
    if isinstance(result_json, str | bytes):
        size = len(result_json) if isinstance(result_json, bytes) else \
            len(result_json.encode("utf-8", "surrogatepass"))
        if size > compress_bytes:
            return StoredResult(compress_result(result_json), COMPRESSED)
        return StoredResult(result_json, None)
    pieces = iter(result_json)
    held: list[bytes] = []
    size = 0
    for piece in pieces:
        held.append(piece)
        size += len(piece)
        if size > compress_bytes:
            return StoredResult(compress_result(chain(held, pieces)), COMPRESSED)
    return StoredResult(b"".join(held), None)


def decode_record(raw: bytes | str) -> dict[str, Any]:
    """A stored record as its plain form (a compressed result decompressed, ``encoding`` dropped).

    Raises:
        ValueError: the record names an encoding this client does not know (a newer worker:
            upgrade the producer first).
    """
    record = json.loads(raw)
    encoding = record.pop("encoding", None)
    if encoding is not None:
        if encoding != COMPRESSED:
            raise ValueError(f"record of {record.get('document_id')!r} has encoding {encoding!r}, unknown to "
                             "this client: upgrade longparser-worker on the producer side")
        record["result"] = json.loads(zlib.decompress(base64.b64decode(record["result"])))
    return record


def failure_record(document_id: str, task_id: str | None, error_type: str, message: str) -> dict:
    """The record of a failed run, so ``longparser result`` can show the error."""
    return {"record_version": RECORD_VERSION, "status": "FAILURE", "document_id": document_id,
            "task_id": task_id, "result": None, "error": {"type": error_type, "message": message}}


@dataclass(frozen=True)
class ResultStore:
    """Reads and writes records and job entries under one key prefix.

    Attributes:
        client: a ``redis.Redis`` (or fakeredis) client; its connection pool is fork-safe.
        prefix: ``LONGPARSER_KEY_PREFIX``.
        ttl: seconds records and job entries live.
    """

    client: Any
    prefix: str
    ttl: int
    compress_bytes: int = DEFAULT_COMPRESS_BYTES
    events_maxlen: int = DEFAULT_EVENTS_MAXLEN

    @classmethod
    def from_settings(cls, settings: Settings) -> ResultStore:
        """A store on ``LONGPARSER_RESULT_URL`` (plain, TLS or Sentinel) with its own pool."""
        return cls(redis_client(settings.result_url, settings), settings.key_prefix, settings.result_ttl,
                   settings.result_compress_bytes, settings.events_maxlen)

    @property
    def events_key(self) -> str:
        return events_key(self.prefix)

    def _add_event(self, pipe: Any, fields: dict[str, str]) -> None:
        pipe.xadd(self.events_key, fields, maxlen=self.events_maxlen, approximate=True)

    def _starts_key(self, task_id: str) -> str:
        return start_count_key(self.prefix, task_id)

    def count_start(self, task_id: str) -> int:
        """Count one more start of a task (INCRBY 1, with the results' TTL, in one MULTI/EXEC);
        returns the starts counted since the task last stored a record (this one included)."""
        with self.client.pipeline(transaction=True) as pipe:
            pipe.incr(self._starts_key(task_id))
            pipe.expire(self._starts_key(task_id), self.ttl)
            starts, _ = pipe.execute()
        return int(starts)

    def forget_starts(self, task_id: str) -> None:
        """Delete a task's start count when it ends without a record to store it with."""
        self.client.delete(self._starts_key(task_id))

    def save_record(self, record: dict) -> str:
        """Write a record (a FAILURE record, as the worker uses it) and its completion event in
        one MULTI/EXEC, deleting the task's start count; returns the key. It does not touch the
        chunk-id side key: the next SUCCESS diffs against the last SUCCESS."""
        document_id = record["document_id"]
        key = result_key(self.prefix, document_id)
        result, error = record.get("result"), record.get("error")
        fields = event_fields(key, document_id, record["status"], record.get("task_id"),
                              len(result["chunks"]) if result else 0, record.get("diff"),
                              error["type"] if error else None)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.set(key, compact_json(record), ex=self.ttl)
            self._add_event(pipe, fields)
            if record.get("task_id") is not None:
                pipe.delete(self._starts_key(record["task_id"]))
            pipe.execute()
        return key

    def stored(self, result_json: str | bytes | Iterable[bytes]) -> StoredResult:
        """``result_json`` as this store's records hold it (:func:`stored_result`); pieces are
        read once, so a caller that may retry the write stores what this returns."""
        return stored_result(result_json, self.compress_bytes)

    def save_success(self, document_id: str, task_id: str | None, result_json: str | bytes | StoredResult,
                     chunk_ids: Sequence[str], request_sha256: str | None = None) -> str:
        """Write a SUCCESS record around ``result_json`` (the JSON, or what :meth:`stored` made of
        it) with its diff, the chunk-id side key and the completion event, atomically, deleting
        the task's start count (see the module doc); returns the record's key."""
        key, ids_key = result_key(self.prefix, document_id), chunk_ids_key(self.prefix, document_id)
        if not isinstance(result_json, StoredResult):
            result_json = self.stored(result_json)
        result_json, encoding = result_json
        ids_value = compact_json({"task_id": task_id, "chunk_ids": list(chunk_ids)})
        keys = [key, ids_key, self.events_key, *([] if task_id is None else [self._starts_key(task_id)])]

        for _ in range(STORE_CONFLICTS):
            raw = self.client.get(ids_key)
            token, previous = (b"", None) if raw is None else \
                (raw[:TOKEN_CHARS], json.loads(raw[TOKEN_CHARS:]))
            diff = chunk_diff(previous, chunk_ids)
            record = success_record_json(document_id, task_id, result_json, diff, encoding, request_sha256)
            event = event_fields(key, document_id, "SUCCESS", task_id, len(chunk_ids), diff, None)
            stored = self._store_success(keys=keys,
                                         args=[token, record, uuid.uuid4().hex + ids_value, self.ttl,
                                               self.events_maxlen, *_flat(event)], client=self.client)
            if stored:
                return key
            # another run of this document stored between our read and our write: diff against it
        raise RuntimeError(f"{document_id}: its chunk-id key changed under {STORE_CONFLICTS} tries in a row")

    @property
    def _store_success(self) -> Any:
        script = self.__dict__.get("_script")
        if script is None:
            script = self.client.register_script(STORE_SUCCESS_LUA)
            object.__setattr__(self, "_script", script)  # frozen dataclass: cache the Script once
        return script

    def load_record(self, document_id: str) -> dict | None:
        """The stored record of a document in its plain form (see :func:`decode_record`), or None."""
        raw = self.client.get(result_key(self.prefix, document_id))
        return None if raw is None else decode_record(raw)

    def save_job(self, document_id: str, task_id: str, queue: str) -> None:
        """Remember the latest submission of a document (written once its message is published)."""
        entry = {"task_id": task_id, "queue": queue, "submitted_at": round(time.time(), 3)}
        self.client.set(job_key(self.prefix, document_id), compact_json(entry), ex=self.ttl)

    def load_job(self, document_id: str) -> dict | None:
        """The latest submission of a document, or None."""
        raw = self.client.get(job_key(self.prefix, document_id))
        return None if raw is None else json.loads(raw)

    def close(self) -> None:
        """Release the client's connections."""
        self.client.close()
