"""Worker and producer settings: one typed source, read from ``LONGPARSER_*`` variables.

Sources, highest first: the process environment, then a ``.env`` file in the working directory
(pydantic-settings ``env_file``; ``config/.env.example`` documents every variable), then the
defaults below. The engine never sees this object: the edges (worker process set-up, the
producer client, the command lines) turn it into plain values. ``get_settings()`` is the
process's one reading of it, cached; tests that change the environment call
``get_settings.cache_clear()`` before and after.

An invalid variable raises :class:`SettingsError`, a ``ValueError`` whose message is one line
naming the variable, so every command line and the worker print it the same way.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings import SettingsError as SourceError

from longparser_client.schemas.config import BUILTIN_COUNTERS, TOKENIZER_NAME_PATTERN, is_tokenizer_name
from longparser_client.schemas.encoders import PINNED_ENCODER, EncoderSpec
from longparser_client.schemas.problems import (
    ErrorDetails,
    describe_validation_error,
    error_message,
    located,
    quoted,
)
from longparser_client.schemas.tokenizers import TokenizerSpec

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
ENV_PREFIX = "LONGPARSER_"
ENV_FILE = ".env"
# The largest request (JSON bytes) producers send and workers accept; above
# reference_threshold_bytes a request travels by reference, so only Redis memory bounds it.
MAX_REQUEST_BYTES = 256 * 1024 * 1024

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
SslCertReqs = Literal["required", "optional", "none"]
# The URL forms service.redis_client and the Celery transports read; anything else would fail
# deep inside kombu or redis-py (a traceback, or a 30 s wait for "localhost" as a scheme).
REDIS_SCHEMES = ("redis", "rediss", "unix", "sentinel")
URL_FORMS = "redis://host:6379/0, rediss:// (TLS), unix:///path/to/redis.sock or sentinel://host:26379"
# A lease outlives this many renewal intervals (two renewals may be late or lost).
LEASE_RENEWALS_PER_TIMEOUT = 3
# A collection is a table name: lower-case, unquoted, within PostgreSQL's 63-byte identifiers.
VECTOR_COLLECTION_PATTERN = r"^[a-z_][a-z0-9_]{0,62}$"
VECTOR_STORE_SCHEMES = ("postgresql://", "postgres://")
_URL_PASSWORD = re.compile(r"(://[^:@/;]*:)[^@/;]+@")
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&;]+")


class SettingsError(ValueError):
    """The ``LONGPARSER_*`` environment (or ``.env``) holds an invalid value; one-line message."""


def masked_url(url: str) -> str:
    """``url`` with any password (``:password@``, ``?password=``) replaced by ``**``, each part
    of a ``;`` list; the one masker of every message and log line that names a URL. Written
    here rather than kombu's ``maybe_sanitize_url``, which rewrites the URL (and raises on one
    that does not parse: a bad setting must still be named)."""
    return _QUERY_PASSWORD.sub(r"\1**", _URL_PASSWORD.sub(r"\1**@", url))


def _setting_problem(error: ErrorDetails) -> str:
    """``field (LONGPARSER_FIELD='value'): reason``; values quoted short, a URL's password masked."""
    location = [str(part) for part in error.get("loc", ()) if part != "__root__"]
    if not location:
        return error_message(error)
    name = f"{ENV_PREFIX}{location[0].upper()}"
    value = error.get("input")
    if isinstance(value, str) and location[0].endswith("_url"):
        value = masked_url(value)
    shown = f"={quoted(value)}" if isinstance(value, str | int | float | bool) else ""
    return located(f"{location[0]} ({name}{shown})", error_message(error))


def check_redis_url(url: str) -> str:
    """``url`` when it is a URL the service can connect with; else a ValueError saying why.

    Each part of a ``;``-separated Sentinel list is checked; a scheme, a host (a socket path for
    ``unix://``) and a numeric port are required.
    """
    parts = [part.strip() for part in url.split(";")] if url.startswith("sentinel://") else [url.strip()]
    for part in parts:
        scheme = part.split("://", 1)[0] if "://" in part else ""
        if not scheme:
            example = part if part and "@" not in part else "host:6379"  # never echo a password
            raise ValueError(f"not a URL (no scheme): write it as redis://{example}"
                             f"{'' if '/' in example else '/0'}; forms: {URL_FORMS}")
        if scheme not in REDIS_SCHEMES:
            raise ValueError(f"scheme {scheme}:// is not supported; forms: {URL_FORMS}")
        if len(parts) > 1 and scheme != "sentinel":
            raise ValueError("a ;-separated list must be sentinel:// URLs only")
        parsed = urlsplit(part)
        if scheme == "unix":
            if not parsed.path:
                raise ValueError("unix:// URL without a socket path: unix:///path/to/redis.sock")
            continue
        if not parsed.hostname:
            raise ValueError(f"{scheme}:// URL without a host; forms: {URL_FORMS}")
        try:
            parsed.port  # noqa: B018 - urlsplit parses the port lazily, on access
        except ValueError:
            raise ValueError(f"{scheme}:// URL with a port that is not a number") from None
        database = parsed.path.strip("/")
        if database and not database.isdigit():
            raise ValueError(f"{scheme}:// URL whose database ({quoted(database)}) is not a number")
    return url


class Settings(BaseSettings):
    """All knobs of the worker fleet and its producer client.

    With the lease off (``lease_interval=0``), time limits are validated against the visibility
    timeout: a task that may run longer than half the Redis visibility timeout risks being
    delivered to a second worker while the first is still on it (acks_late keeps the message
    unacknowledged for the whole run). With the lease on, the holder renews the message while
    its task runs, so the lease timeout is bounded by the renewal interval instead.
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_file=ENV_FILE, env_file_encoding="utf-8", extra="ignore", frozen=True
    )

    broker_url: str = DEFAULT_REDIS_URL
    result_url: str = DEFAULT_REDIS_URL
    sentinel_master: str | None = None
    sentinel_tls: bool = False
    key_prefix: str = Field(default="longparser", pattern=r"^[A-Za-z0-9._:@-]+$")
    celery_key_prefix: str = Field(default="", pattern=r"^[A-Za-z0-9._:@-]*$")
    structural_queue: str = Field(default="chunking", min_length=1)
    semantic_queue: str = Field(default="semantic", min_length=1)
    worker_queues: str = ""
    concurrency: int = Field(default=2, ge=1, le=256)
    soft_time_limit: int = Field(default=300, ge=1)
    hard_time_limit: int = Field(default=360, ge=1)
    visibility_timeout: int = Field(default=3600, ge=2)
    result_ttl: int = Field(default=86_400, ge=1)
    max_payload_bytes: int = Field(default=MAX_REQUEST_BYTES, ge=1024)
    progress_min_blocks: int = Field(default=1000, ge=0)
    semantic_enabled: bool = False
    model_path: str | None = None
    torch_threads: int = Field(default=1, ge=1, le=256)
    # "auto" and loaders.encoder_backends.BACKENDS (a unit test keeps them equal); docs/encoders.md.
    # auto: openvino where it is installed and exported, else torch (loaders.encoder_backends.resolve_backend)
    encoder_backend: Literal["auto", "torch", "onnx", "onnx-int8", "openvino"] = "auto"
    word_list_path: str | None = "/usr/share/dict/words"
    language_id: bool = True
    max_memory_per_child_kb: int = Field(default=1_500_000, ge=50_000)
    store_retry_window: float = Field(default=120.0, ge=0, le=3600)
    submit_retry_window: float = Field(default=30.0, ge=0, le=3600)
    allow_evicting_redis: bool = False
    # Run on a Celery, kombu or redis-py outside the tested ranges (worker/celery_compat.py)
    accept_untested_deps: bool = False
    redis_ssl_cert_reqs: SslCertReqs = "required"
    log_level: LogLevel = "INFO"
    # The tokenizers requests may name as token_counter / fit: JSON, name -> declaration
    # (schemas.tokenizers.TokenizerSpec, sha256 required); loaded before the pool forks.
    tokenizers: dict[str, TokenizerSpec] = Field(default_factory=dict)
    # The encoders requests may name in embed, besides the pinned model: JSON, name -> declaration
    # (schemas.encoders.EncoderSpec); checked by the parent, loaded in each pool child of a worker
    # that holds an encoder (LONGPARSER_SEMANTIC_ENABLED).
    encoders: dict[str, EncoderSpec] = Field(default_factory=dict)
    # --- result store: completion events, re-ingestion diffs, compressed results ---------------
    # The completion stream P:events keeps about this many entries (XADD MAXLEN ~); a consumer
    # that falls further behind reconciles through status (docs/operations.md).
    events_maxlen: int = Field(default=100_000, ge=100)
    # A result whose JSON is larger than this is stored zlib-compressed (the record's "encoding");
    # the client's load_record / get_result decompress it. Producers upgrade before workers.
    result_compress_bytes: int = Field(default=1024 * 1024, ge=1024)

    # --- Partitions and leases (worker/lease.py; docs/operations.md "Partitions and leases") ---
    # The worker parent renews, every lease_interval seconds, the messages it holds; one whose
    # holder stopped renewing for lease_timeout seconds (host gone, cut off the network) is put back
    # in its queue by another worker. With the lease on, lease_timeout is the transport's visibility
    # timeout and the hard time limit no longer bounds it; lease_interval = 0 turns the lease off
    # (then visibility_timeout applies, at least twice the hard time limit).
    lease_interval: float = Field(default=10.0, ge=0, le=600)
    lease_timeout: float = Field(default=60.0, ge=1, le=86_400)
    # --- Documents by reference (claim check; service/payloads.py, docs/operations.md
    # "References"). A request whose JSON is above the threshold travels as a reference to its
    # zlib-compressed bytes in the result store's Redis (TTL: result_ttl); max_payload_bytes
    # bounds any request, max_inline_bytes a request carried inside the message itself.
    reference_threshold_bytes: int = Field(default=1024 * 1024, ge=1)
    max_inline_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    # --- Poison messages (tasks/chunk.py; docs/operations.md "Guarantees"). The start of a task
    # that reaches this count without a record stored since the message was sent (each earlier
    # run killed its worker process) stores a FAILURE PoisonMessage instead of running; 0: off.
    max_starts: int = Field(default=3, ge=0, le=1000)
    # --- Consumers of completion events (service.events.EventConsumer.from_settings) connect
    # here, as a Redis user of their own with the consumer-group commands the producer user
    # lacks (docs/operations.md "TLS and least privilege"); unset: LONGPARSER_RESULT_URL.
    events_url: str | None = None
    # --- Vector store (worker/vector_store.py, docs/vectors.md): PostgreSQL with pgvector that
    # receives every embedded chunk, one table per collection. A worker setting only: a request
    # cannot name another database. Unset: no store (embedded vectors travel in the record only).
    vector_store_url: str | None = None
    vector_collection: str = Field(default="longparser_chunks", pattern=VECTOR_COLLECTION_PATTERN)

    @field_validator("vector_store_url", mode="before")
    @classmethod
    def _vector_store_url(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        if not value.strip():
            return None
        if not value.startswith(VECTOR_STORE_SCHEMES):
            raise ValueError(f"not a PostgreSQL URL: write it as postgresql://user:password@host:5432/dbname "
                             f"(schemes: {', '.join(VECTOR_STORE_SCHEMES)})")
        return value

    @field_validator("max_starts")
    @classmethod
    def _starts_limit(cls, value: int) -> int:
        if value == 1:
            raise ValueError("must be 0 (off) or at least 2: 1 would refuse every message at its first start")
        return value

    @field_validator("events_url", mode="before")
    @classmethod
    def _events_url(cls, value: object) -> object:
        if isinstance(value, str):
            return check_redis_url(value) if value.strip() else None
        return value

    @field_validator("tokenizers")
    @classmethod
    def _declared_tokenizers(cls, value: dict[str, TokenizerSpec]) -> dict[str, TokenizerSpec]:
        for name, spec in value.items():
            if name in BUILTIN_COUNTERS or not is_tokenizer_name(name):
                raise ValueError(f"tokenizer name {name!r} must match {TOKENIZER_NAME_PATTERN} and not be "
                                 f"{' or '.join(BUILTIN_COUNTERS)}")
            if spec.sha256 is None:
                raise ValueError(f"tokenizer {name!r} needs its sha256 (the digest of {spec.path}): "
                                 "workers load only files they can check")
        return value

    @field_validator("encoders")
    @classmethod
    def _declared_encoders(cls, value: dict[str, EncoderSpec]) -> dict[str, EncoderSpec]:
        for name in value:
            if name == PINNED_ENCODER or name in BUILTIN_COUNTERS or not is_tokenizer_name(name):
                raise ValueError(f"encoder name {name!r} must match {TOKENIZER_NAME_PATTERN} and not be "
                                 f"{PINNED_ENCODER!r} (always held) or {' or '.join(BUILTIN_COUNTERS)}")
        return value

    @field_validator("broker_url", "result_url")
    @classmethod
    def _redis_url(cls, value: str) -> str:
        return check_redis_url(value)

    @field_validator("model_path", "word_list_path", "sentinel_master", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        # An empty variable means "none": LONGPARSER_WORD_LIST_PATH= disables the word list.
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if self.soft_time_limit >= self.hard_time_limit:
            raise ValueError(
                f"soft_time_limit ({self.soft_time_limit}) must be below hard_time_limit "
                f"({self.hard_time_limit})"
            )
        if self.lease_interval and self.lease_timeout < LEASE_RENEWALS_PER_TIMEOUT * self.lease_interval:
            raise ValueError(
                f"lease_timeout ({self.lease_timeout:g}) must be at least {LEASE_RENEWALS_PER_TIMEOUT} "
                f"lease_interval ({self.lease_interval:g}), or a late renewal hands a held message to "
                "another worker"
            )
        if not self.lease_interval and self.hard_time_limit * 2 > self.visibility_timeout:
            raise ValueError(
                f"hard_time_limit ({self.hard_time_limit}) must be at most half the Redis "
                f"visibility_timeout ({self.visibility_timeout}), or long tasks are delivered twice"
            )
        if self.reference_threshold_bytes > self.max_inline_bytes:
            raise ValueError(
                f"reference_threshold_bytes ({self.reference_threshold_bytes}) must be at most "
                f"max_inline_bytes ({self.max_inline_bytes}): a request between them could travel neither way"
            )
        if self.structural_queue == self.semantic_queue:
            raise ValueError("structural_queue and semantic_queue must differ")
        sentinel = [url for url in (self.broker_url, self.result_url) if url.startswith("sentinel://")]
        if sentinel and not self.sentinel_master:
            raise ValueError("sentinel:// URLs need LONGPARSER_SENTINEL_MASTER (the monitored master's name)")
        return self

    @property
    def lease_enabled(self) -> bool:
        """True when workers renew what they hold (``lease_interval`` > 0)."""
        return self.lease_interval > 0

    @property
    def effective_visibility_timeout(self) -> float:
        """Seconds after which an unacknowledged message nobody renewed goes back to its queue."""
        return self.lease_timeout if self.lease_enabled else self.visibility_timeout

    def explicitly_set(self, name: str) -> bool:
        """True when ``name`` came from the environment, ``.env`` or a keyword, not a default.

        A resource the operator asked for by name is required (a failure to load it stops the
        worker); one that is only on by default is optional.
        """
        return name in self.model_fields_set

    def consumed_queues(self) -> tuple[str, ...]:
        """Queues a worker consumes by default (``celery worker -Q`` overrides).

        Explicit ``worker_queues`` (comma list) wins; otherwise the structural queue, plus the
        semantic queue when this worker loads the model.
        """
        explicit = tuple(q.strip() for q in self.worker_queues.split(",") if q.strip())
        if explicit:
            return explicit
        if self.semantic_enabled:
            return (self.structural_queue, self.semantic_queue)
        return (self.structural_queue,)

    def queue_for(self, semantic: bool) -> str:
        """The queue a request goes to (routing is the producer's job)."""
        return self.semantic_queue if semantic else self.structural_queue

    @property
    def events_consumer_url(self) -> str:
        """The Redis URL of completion-event consumers (``events_url``, else ``result_url``)."""
        return self.events_url or self.result_url


def load_settings() -> Settings:
    """Read the settings now; raises :class:`SettingsError` (one line) when a value is invalid."""
    try:
        return Settings()
    except ValidationError as exc:
        raise SettingsError(describe_validation_error(exc, _setting_problem)) from None
    except SourceError as exc:  # a JSON-valued variable (LONGPARSER_TOKENIZERS) that is not JSON
        found = re.search(r'field "(\w+)"', str(exc))
        where = f"{found.group(1)} ({ENV_PREFIX}{found.group(1).upper()})" if found else str(exc)
        cause = f" ({exc.__cause__})" if exc.__cause__ else ""
        raise SettingsError(" ".join(f"{where}: the value must be JSON{cause}".split())) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read once (``cache_clear()`` to re-read).

    Raises:
        SettingsError: an invalid ``LONGPARSER_*`` value (one line naming the variable).
    """
    return load_settings()
