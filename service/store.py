"""The result store: one JSON record per document id in Redis, written atomically with a TTL.

A record is the whole outcome of one task run (status, result or error) serialised into ONE
string and written with ONE ``SET key value EX ttl``: a reader sees either the previous record
or the new one, never a partial result. Chunk ids are deterministic, so a redelivered or
repeated task for the same content rewrites the same key with the same chunks instead of adding
a second copy (only ``task_id`` and the engine's timings may differ between runs).

Records keep the result's own key order (the schema's): ``longparser result`` prints them as
``chunk`` does. Importable without Celery or torch (the producer client reads records here).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from config.settings import Settings
from service.keys import job_key, result_key
from service.redis_client import redis_client

RECORD_VERSION = 1


def compact_json(value: Any) -> str:
    """Compact JSON in the value's own key order (UTF-8 kept as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def success_record_json(document_id: str, task_id: str | None, result_json: str | bytes,
                        request_sha256: str | None = None) -> str | bytes:
    """The record of a successful run, encoded, around ``result_json`` (``ChunkResult.model_dump_json()``):
    ``{"record_version", "status": "SUCCESS", "document_id", "task_id", "result", "error": null}``,
    plus ``request_sha256`` (the digest of the request's JSON) for a request sent by reference:
    a redelivered task whose referenced bytes are gone finds its own result by it.

    The result is encoded once, by pydantic's serializer, instead of dumped to Python objects and
    encoded again (:func:`compact_json` of the same record gives the same JSON); given as UTF-8
    bytes, the record is bytes too, which Redis takes without another encoding.
    """
    fields = {"record_version": RECORD_VERSION, "status": "SUCCESS", "document_id": document_id,
              "task_id": task_id}
    if request_sha256 is not None:
        fields["request_sha256"] = request_sha256
    head = compact_json(fields)
    if isinstance(result_json, bytes):  # UTF-8 already: the record is built once, as bytes
        return b"".join((head[:-1].encode(), b',"result":', result_json, b',"error":null}'))
    return f'{head[:-1]},"result":{result_json},"error":null}}'


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

    @classmethod
    def from_settings(cls, settings: Settings) -> ResultStore:
        """A store on ``LONGPARSER_RESULT_URL`` (plain, TLS or Sentinel) with its own pool."""
        return cls(redis_client(settings.result_url, settings), settings.key_prefix, settings.result_ttl)

    def save_record(self, record: dict) -> str:
        """Write a record in one ``SET ... EX`` (atomic); returns the key."""
        return self.save_encoded(record["document_id"], compact_json(record))

    def save_encoded(self, document_id: str, encoded: str | bytes) -> str:
        """Write an already encoded record of ``document_id`` (one ``SET ... EX``); returns the key."""
        key = result_key(self.prefix, document_id)
        self.client.set(key, encoded, ex=self.ttl)
        return key

    def load_record(self, document_id: str) -> dict | None:
        """The stored record of a document, or None."""
        raw = self.client.get(result_key(self.prefix, document_id))
        return None if raw is None else json.loads(raw)

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
