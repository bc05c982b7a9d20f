"""The result store: one JSON record per document id in Redis, written atomically with a TTL.

A record is the whole outcome of one task run (status, result or error) serialised into ONE
string and written with ONE ``SET key value EX ttl``: a reader sees either the previous record
or the new one, never a partial result. Chunk ids are deterministic, so a redelivered or
repeated task for the same content rewrites the same key with the same chunks instead of adding
a second copy (only ``task_id`` and the engine's timings may differ between runs).

Importable without Celery or torch (the producer client reads records through it).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import redis

from config.settings import Settings, get_settings
from service.keys import job_key, result_key

RECORD_VERSION = 1
RecordStatus = Literal["SUCCESS", "FAILURE"]


def canonical_json(value: Any) -> str:
    """Compact, key-sorted JSON: the same value always gives the same string."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def payload_sha256(payload: Any) -> str:
    """Digest of a request payload (tells whether a stored record answers the same content).

    ``surrogatepass``: the digest is taken before validation, which refuses a lone surrogate
    with a clear message; it must not crash first (valid text gives the same bytes either way).
    """
    return hashlib.sha256(canonical_json(payload).encode("utf-8", "surrogatepass")).hexdigest()


def success_record(document_id: str, task_id: str | None, request_sha256: str | None, result: dict) -> dict:
    """The record of a successful run; ``result`` is ``ChunkResult.model_dump(mode="json")``."""
    return {
        "record_version": RECORD_VERSION,
        "status": "SUCCESS",
        "document_id": document_id,
        "task_id": task_id,
        "request_sha256": request_sha256,
        "result": result,
        "error": None,
    }


def failure_record(
    document_id: str, task_id: str | None, request_sha256: str | None, error_type: str, message: str
) -> dict:
    """The record of a failed run, so ``longparser result`` can show the error."""
    return {
        "record_version": RECORD_VERSION,
        "status": "FAILURE",
        "document_id": document_id,
        "task_id": task_id,
        "request_sha256": request_sha256,
        "result": None,
        "error": {"type": error_type, "message": message},
    }


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

    def save_record(self, record: dict) -> str:
        """Write a record in one ``SET ... EX`` (atomic); returns the key."""
        key = result_key(self.prefix, record["document_id"])
        self.client.set(key, canonical_json(record), ex=self.ttl)
        return key

    def load_record(self, document_id: str) -> dict | None:
        """The stored record of a document, or None."""
        raw = self.client.get(result_key(self.prefix, document_id))
        return None if raw is None else json.loads(raw)

    def save_job(self, document_id: str, task_id: str, queue: str) -> None:
        """Remember the latest submission of a document (written before the task is sent)."""
        entry = {"task_id": task_id, "queue": queue, "submitted_at": round(time.time(), 3)}
        self.client.set(job_key(self.prefix, document_id), canonical_json(entry), ex=self.ttl)

    def load_job(self, document_id: str) -> dict | None:
        """The latest submission of a document, or None."""
        raw = self.client.get(job_key(self.prefix, document_id))
        return None if raw is None else json.loads(raw)


def redis_client(url: str, settings: Settings) -> redis.Redis:
    """A Redis client for ``url``; ``rediss://`` gets certificate checking from settings."""
    kwargs: dict[str, Any] = {"socket_connect_timeout": 5, "socket_timeout": 30, "health_check_interval": 30}
    if url.startswith("rediss://"):
        kwargs["ssl_cert_reqs"] = settings.redis_ssl_cert_reqs
    return redis.Redis.from_url(url, **kwargs)


@lru_cache(maxsize=4)
def _cached_store(settings: Settings) -> ResultStore:
    return ResultStore(redis_client(settings.result_url, settings), settings.key_prefix, settings.result_ttl)


def get_store(settings: Settings | None = None) -> ResultStore:
    """The process's store for ``settings`` (default: ``get_settings()``), one pool per process."""
    return _cached_store(settings or get_settings())
