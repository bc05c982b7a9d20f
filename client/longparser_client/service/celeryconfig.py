"""The Celery configuration, built from settings and shared by workers and producers.

The visibility timeout is set here and nowhere else: the producer's app and the worker's app
are both configured by :func:`celery_config`, so they can never disagree about when an
unacknowledged message is handed to another worker. Importable without torch.
"""

from __future__ import annotations

import ssl
from typing import Any

from kombu import Queue

from longparser_client.service.keys import TASK_NAME
from longparser_client.service.redis_client import (
    CONNECT_TIMEOUT_S,
    REPLY_TIMEOUT_S,
    SENTINEL_OPTIONS,
    SENTINEL_SCHEME,
)
from longparser_client.settings import Settings

JSON_ONLY = ["json"]
_CERT_REQS = {"required": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
# Celery's own result-backend writes (PROGRESS, failure states) wait out an outage too: about
# 120 s of capped exponential backoff before giving up on one write.
BACKEND_RETRIES = 40
BACKEND_MAX_SLEEP_MS = 3000


def _lease_options(settings: Settings) -> dict[str, Any]:
    """kombu's sweep of unacknowledged messages, paced by the lease (docs/operations.md).

    kombu puts back the entries of the ``unacked`` index older than the visibility timeout in a
    sweep every ``unacked_restore_interval`` x ``unacked_restore_throttle`` seconds (100 s by
    default) under a Redis lock that expires after ``unacked_mutex_expire`` (300 s). With the
    lease, every worker sweeps once per renewal interval, and a lock left by a worker cut off
    mid-sweep blocks the others for one interval at most.
    """
    if not settings.lease_enabled:
        return {}
    return {"unacked_restore_interval": settings.lease_interval, "unacked_restore_throttle": 1,
            "unacked_mutex_expire": max(1.0, settings.lease_interval)}


# kombu's broker connections have no socket timeout by default: a reply that never comes (a
# connection to a master mid-failover, a peer gone without a FIN) blocks the worker's consumer
# for ever, with no log line (seen once in the fault suite's Sentinel failover: the restore at
# channel close never returned). With a timeout the read fails, the consumer reconnects and the
# messages it held are put back. kombu's BRPOP waits 1 s (``brpop_timeout``), far below it.
BROKER_SOCKET_OPTIONS: dict[str, Any] = {"socket_timeout": REPLY_TIMEOUT_S,
                                         "socket_connect_timeout": CONNECT_TIMEOUT_S,
                                         "socket_keepalive": True}


# The broker transport option carrying the inline limit to the worker's transport
# (worker/transport.py): the longest body the worker parent decodes (worker/inbound.py).
BODY_LIMIT_OPTION = "longparser_max_body_bytes"


def inline_body_limit(settings: Settings) -> int:
    """The longest request a message may carry inline: the lower of the inline and payload limits."""
    return min(settings.max_inline_bytes, settings.max_payload_bytes)


def _transport_options(settings: Settings, url: str) -> dict[str, Any]:
    options: dict[str, Any] = {"visibility_timeout": settings.effective_visibility_timeout}
    if settings.celery_key_prefix:
        options["global_keyprefix"] = settings.celery_key_prefix
    if url.startswith(SENTINEL_SCHEME):
        options["master_name"] = settings.sentinel_master
        options["sentinel_kwargs"] = dict(SENTINEL_OPTIONS)
    return options


def _ssl_options(settings: Settings, url: str) -> dict[str, Any] | None:
    # Passwords and db numbers travel in the URL untouched; TLS only needs cert checking.
    if url.startswith("rediss://") or (url.startswith(SENTINEL_SCHEME) and settings.sentinel_tls):
        return {"ssl_cert_reqs": _CERT_REQS[settings.redis_ssl_cert_reqs]}
    return None


def _queues(settings: Settings) -> list[Queue]:
    return [Queue(name, routing_key=name) for name in settings.consumed_queues()]


def semantic_router(settings: Settings) -> Any:
    """A Celery router sending ``chunk_document`` calls to the queue their request asks for (the
    semantic queue for semantic boundaries or ``embed``).

    The client passes the queue explicitly (an explicit queue wins over routers); this makes a
    producer that calls ``apply_async``/``send_task`` on the task name route the same way.
    """

    def route(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **_: Any) -> Any:
        if name != TASK_NAME:
            return None
        request = args[0] if args else (kwargs or {}).get("payload")
        config = request.get("config") if isinstance(request, dict) else None
        needs_encoder = isinstance(config, dict) and (
            config.get("use_semantic_chunking") is True or config.get("embed", False) is not False)
        return {"queue": settings.queue_for(needs_encoder)}

    return route


def celery_config(settings: Settings) -> dict[str, Any]:
    """Celery settings (lower-case names) for ``settings``.

    Invariants: JSON is the only serializer anywhere (no pickle: a payload can never execute
    code); a running task is not delivered twice: its worker renews the lease of its message
    (worker/lease.py) well within the lease timeout, the transport's visibility timeout, or,
    with the lease off, hard time limit <= visibility_timeout / 2 (validated by
    :class:`Settings`); ``acks_late`` + ``reject_on_worker_lost`` so a task whose child process
    dies is redelivered (acks_late alone acks it on child loss). A worker
    never gives up reconnecting to its broker, and Celery's own backend writes wait out an
    outage like the store's. The document store is the source of truth for outcomes, so Celery
    keeps no return value and no STARTED state (two Redis writes per task that nobody read):
    only failures (``store_errors_even_if_ignored``: a message without a usable document id has
    no other record) and PROGRESS of large documents reach the result backend.
    """
    config: dict[str, Any] = {
        "broker_url": settings.broker_url,
        "result_backend": settings.result_url,
        # body_encoding None: the JSON body travels as JSON text inside kombu's JSON envelope
        # instead of base64 (a third smaller, and no encode/decode per message); every message
        # says how its body is encoded, so a queue may hold both kinds.
        "broker_transport_options": {**_transport_options(settings, settings.broker_url),
                                     **_lease_options(settings), "body_encoding": None,
                                     **BROKER_SOCKET_OPTIONS, BODY_LIMIT_OPTION: inline_body_limit(settings)},
        "result_backend_transport_options": _transport_options(settings, settings.result_url),
        "broker_connection_retry_on_startup": True,
        "broker_connection_retry": True,
        "broker_connection_max_retries": None,
        "result_backend_always_retry": True,
        "result_backend_max_retries": BACKEND_RETRIES,
        "result_backend_max_sleep_between_retries_ms": BACKEND_MAX_SLEEP_MS,
        "accept_content": JSON_ONLY,
        "result_accept_content": JSON_ONLY,
        "task_serializer": "json",
        "result_serializer": "json",
        "event_serializer": "json",
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_acks_on_failure_or_timeout": True,
        "task_ignore_result": True,
        "task_store_errors_even_if_ignored": True,
        "worker_prefetch_multiplier": 1,
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        "task_soft_time_limit": settings.soft_time_limit,
        "task_time_limit": settings.hard_time_limit,
        "task_track_started": False,
        "worker_send_task_events": True,
        "task_send_sent_event": True,
        "result_expires": settings.result_ttl,
        "worker_concurrency": settings.concurrency,
        "worker_max_memory_per_child": settings.max_memory_per_child_kb,
        "worker_proc_alive_timeout": 60,
        "worker_hijack_root_logger": True,
        "task_default_queue": settings.structural_queue,
        "task_queues": _queues(settings),
        "task_create_missing_queues": True,
        "task_routes": (semantic_router(settings),),
        "enable_utc": True,
        "timezone": "UTC",
    }
    broker_ssl = _ssl_options(settings, settings.broker_url)
    if broker_ssl:
        config["broker_use_ssl"] = broker_ssl
    backend_ssl = _ssl_options(settings, settings.result_url)
    if backend_ssl:
        config["redis_backend_use_ssl"] = backend_ssl
    return config
