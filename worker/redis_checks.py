"""Start-up checks of the Redis a worker is about to trust with queued work.

An evicting ``maxmemory-policy`` deletes queued task messages and stored results when memory
runs short, without an error anywhere: the worker refuses such a server unless the operator
accepts it explicitly (``LONGPARSER_ALLOW_EVICTING_REDIS=true``). With neither AOF nor RDB on,
a restart of Redis loses every queued and unacknowledged message: that is a warning, since a
disposable development Redis is a legitimate choice. Servers (or ACLs) that refuse ``CONFIG GET``
are warned about and trusted.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import redis.exceptions

from config.settings import Settings

logger = logging.getLogger(__name__)

SAFE_POLICIES = frozenset({"noeviction"})


class UnsafeRedis(RuntimeError):
    """The Redis would silently drop work; the message says what to change."""


@dataclass(frozen=True)
class RedisVerdict:
    """What the check found: the policy and persistence, or why it could not tell."""

    policy: str | None
    aof: bool | None
    rdb: bool | None
    warnings: tuple[str, ...]


def _config_get(client: Any, name: str) -> str | None:
    value = client.config_get(name).get(name)
    if isinstance(value, bytes):
        value = value.decode()
    return value


def inspect_redis(client: Any, settings: Settings, where: str) -> RedisVerdict:
    """Read policy and persistence of the server behind ``client``.

    Raises:
        UnsafeRedis: an evicting policy without ``LONGPARSER_ALLOW_EVICTING_REDIS=true``.
    """
    try:
        policy = _config_get(client, "maxmemory-policy")
        aof = _config_get(client, "appendonly") == "yes"
        rdb = bool((_config_get(client, "save") or "").strip())
    except redis.exceptions.ResponseError as exc:  # NOPERM, unknown command (managed services)
        message = (f"cannot read the configuration of {where} ({exc}): maxmemory-policy and persistence "
                   "unchecked; make sure it is noeviction with AOF or RDB on")
        logger.warning("%s", message)
        return RedisVerdict(None, None, None, (message,))
    warnings: list[str] = []
    if policy not in SAFE_POLICIES:
        message = (f"{where} has maxmemory-policy {policy}: when memory runs short it silently deletes "
                   "queued tasks and stored results")
        if not settings.allow_evicting_redis:
            raise UnsafeRedis(f"{message}; set maxmemory-policy noeviction (and a maxmemory), or accept "
                              "the risk with LONGPARSER_ALLOW_EVICTING_REDIS=true")
        warnings.append(f"{message} (accepted: LONGPARSER_ALLOW_EVICTING_REDIS=true)")
    if not aof and not rdb:
        warnings.append(f"{where} has neither AOF (appendonly) nor RDB snapshots on: a restart of Redis "
                        "loses every queued and unacknowledged task")
    for message in warnings:
        logger.warning("%s", message)
    return RedisVerdict(policy, aof, rdb, tuple(warnings))
