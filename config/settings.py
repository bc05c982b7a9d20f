"""Worker and producer settings: one typed source, read from ``LONGPARSER_*`` environment variables.

Every variable is documented in ``config/.env.example``. The engine never sees this object: the
task turns it into plain values (a ``Resources`` instance, a ``ChunkingConfig``) at the edge.
``get_settings()`` is cached per process; tests that change the environment call
``get_settings.cache_clear()`` before and after.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
SslCertReqs = Literal["required", "optional", "none"]


class Settings(BaseSettings):
    """All knobs of the worker fleet and its producer client.

    Time limits are validated against the visibility timeout: a task that may run longer than
    half the Redis visibility timeout risks being delivered to a second worker while the first
    is still on it (acks_late keeps the message unacked for the whole run).
    """

    model_config = SettingsConfigDict(env_prefix="LONGPARSER_", extra="ignore", frozen=True)

    broker_url: str = DEFAULT_REDIS_URL
    result_url: str = DEFAULT_REDIS_URL
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
    max_payload_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    semantic_enabled: bool = False
    model_path: str | None = None
    torch_threads: int = Field(default=1, ge=1, le=256)
    word_list_path: str | None = "/usr/share/dict/words"
    language_id: bool = True
    max_memory_per_child_kb: int = Field(default=1_500_000, ge=50_000)
    task_max_retries: int = Field(default=5, ge=0, le=50)
    redis_ssl_cert_reqs: SslCertReqs = "required"
    log_level: LogLevel = "INFO"

    @field_validator("model_path", "word_list_path", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        # An empty env var means "none": LONGPARSER_WORD_LIST_PATH= disables the word list.
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _limits_under_visibility(self) -> Settings:
        if self.soft_time_limit >= self.hard_time_limit:
            raise ValueError(
                f"soft_time_limit ({self.soft_time_limit}) must be below hard_time_limit "
                f"({self.hard_time_limit})"
            )
        if self.hard_time_limit * 2 > self.visibility_timeout:
            raise ValueError(
                f"hard_time_limit ({self.hard_time_limit}) must be at most half the Redis "
                f"visibility_timeout ({self.visibility_timeout}), or long tasks are delivered twice"
            )
        if self.structural_queue == self.semantic_queue:
            raise ValueError("structural_queue and semantic_queue must differ")
        return self

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


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read once from the environment (``cache_clear()`` to re-read)."""
    return Settings()
