"""LongParser's producer client: what an upload service imports to send documents to the fleet.

    from longparser_client import ChunkRequest, Producer, get_settings

One package, so nothing here collides with a service's own ``config``, ``tasks`` or ``schemas``.
Its modules: :mod:`~longparser_client.client` (the blocking producer), :mod:`~.aio` (asyncio),
:mod:`~.errors`, :mod:`~.schemas` (the wire models), :mod:`~.settings`, :mod:`~.service` (key
formats, result store, completion events, payload store). The names below are loaded on first
use, so ``import longparser_client.schemas`` (the engine's wire models) never imports Celery.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Producer": "client", "JobHandle": "client", "submit": "client", "status": "client",
    "wait": "client", "get_result": "client", "fetch_record": "client",
    "AsyncProducer": "aio",
    "BrokerUnavailable": "errors", "JobFailed": "errors", "JobNotFound": "errors",
    "ResultTimeout": "errors", "StoreFull": "errors",
    "ChunkRequest": "schemas", "ChunkResult": "schemas", "ChunkingConfig": "schemas", "Chunk": "schemas",
    "InputError": "schemas", "parse_input": "schemas",
    "Settings": "settings", "get_settings": "settings",
    "EventConsumer": "service.events", "ResultStore": "service.store",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'longparser_client' has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
