"""Redis clients for every URL form the service accepts, and the errors worth waiting out.

URLs: ``redis://[:password@]host:port/db``, ``rediss://`` (TLS, certificate checking from
``LONGPARSER_REDIS_SSL_CERT_REQS``), ``unix://``, and Sentinel:
``sentinel://[:password@]host:port[/db];sentinel://host2:port2...`` with
``LONGPARSER_SENTINEL_MASTER`` naming the monitored master (kombu's own URL form, so the broker,
the result backend and the document store read the same string). The password in a sentinel URL
is the master's, as for a plain URL; ``LONGPARSER_SENTINEL_TLS=true`` turns TLS on for the
master connections, with the same certificate setting.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

import redis
import redis.asyncio
import redis.asyncio.sentinel
import redis.exceptions
from kombu.exceptions import OperationalError
from redis.sentinel import Sentinel

from longparser_client.settings import Settings, masked_url

SENTINEL_SCHEME = "sentinel://"
DEFAULT_SENTINEL_PORT = 26379

# Every Redis connection's timeouts, the broker's included (service.celeryconfig): seconds to
# connect and to wait for each reply. A reply that never comes (a master mid-failover, a peer
# gone without a FIN) then fails the read instead of blocking for ever.
CONNECT_TIMEOUT_S = 5
REPLY_TIMEOUT_S = 30
# What a Sentinel is given to answer which host is the master: it answers at once or is away.
SENTINEL_TIMEOUT_S = 2
SENTINEL_OPTIONS: dict[str, Any] = {"socket_connect_timeout": SENTINEL_TIMEOUT_S,
                                    "socket_timeout": SENTINEL_TIMEOUT_S}
# The longest a blocking read (XREAD BLOCK on the completion stream) asks the server to wait:
# under the reply timeout by construction, so a long wait is a few blocking reads, never
# mistaken for a dead server.
MAX_BLOCK_S = REPLY_TIMEOUT_S * 2 / 3
HEALTH_CHECK_INTERVAL_S = 30

# Waited out, then retried: the server is away, starting (LOADING), demoted after a failover
# (READONLY), resharding (TRYAGAIN) or full under noeviction (OOM). ConnectionError covers
# BusyLoadingError and TimeoutError-like socket failures; kombu wraps broker errors in
# OperationalError.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.TryAgainError,
    redis.exceptions.OutOfMemoryError,
    redis.exceptions.MasterDownError,
    OperationalError,
    ConnectionError,  # the builtin: OSError family from sockets
)


def is_out_of_memory(exc: BaseException) -> bool:
    """True when ``exc`` (or what it wraps) is Redis refusing a write under ``noeviction``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, redis.exceptions.OutOfMemoryError) or "OOM command not allowed" in str(
                current):
            return True
        current = current.__cause__ or current.__context__
    return False



def _client_options(timeout: float | None = None) -> dict[str, Any]:
    return {"socket_connect_timeout": CONNECT_TIMEOUT_S if timeout is None else timeout,
            "socket_timeout": REPLY_TIMEOUT_S if timeout is None else timeout,
            "health_check_interval": HEALTH_CHECK_INTERVAL_S}


def sentinel_hosts(url: str) -> tuple[list[tuple[str, int]], str | None, int]:
    """``(hosts, password, db)`` of a ``sentinel://`` URL list (the last db/password found wins)."""
    hosts: list[tuple[str, int]] = []
    password, db = None, 0
    for part in url.split(";"):
        parsed = urlsplit(part.strip())
        if not parsed.hostname:
            raise ValueError(f"sentinel URL without a host: {masked_url(part)}")
        hosts.append((parsed.hostname, parsed.port or DEFAULT_SENTINEL_PORT))
        password = unquote(parsed.password) if parsed.password else password
        db = int(parsed.path.strip("/") or db)
    return hosts, password, db


def _client(url: str, settings: Settings, client_class: Any, sentinel_class: Any,
            timeout: float | None = None) -> Any:
    options = _client_options(timeout)
    if url.startswith(SENTINEL_SCHEME):
        hosts, password, db = sentinel_hosts(url)
        master_options = dict(options)
        if settings.sentinel_tls:
            master_options.update(ssl=True, ssl_cert_reqs=settings.redis_ssl_cert_reqs)
        sentinel = sentinel_class(hosts, sentinel_kwargs=SENTINEL_OPTIONS,
                                  password=password, db=db, **master_options)
        return sentinel.master_for(settings.sentinel_master)
    if url.startswith("rediss://"):
        options["ssl_cert_reqs"] = settings.redis_ssl_cert_reqs
    return client_class.from_url(url, **options)


def redis_client(url: str, settings: Settings, *, timeout: float | None = None) -> redis.Redis:
    """A client for ``url``: plain, TLS, unix socket, or the current master behind Sentinel.

    ``timeout``: seconds for connecting and for each reply (default :data:`CONNECT_TIMEOUT_S` and
    :data:`REPLY_TIMEOUT_S`), for callers that
    must give up sooner (the lease renewal of worker/lease.py).
    """
    return _client(url, settings, redis.Redis, Sentinel, timeout)


def async_redis_client(url: str, settings: Settings) -> redis.asyncio.Redis:
    """:func:`redis_client` for asyncio (same URL forms and options), for :mod:`tasks.aio`."""
    return _client(url, settings, redis.asyncio.Redis, redis.asyncio.sentinel.Sentinel)
