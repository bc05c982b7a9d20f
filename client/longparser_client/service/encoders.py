"""Which encoders the live workers hold: announced by workers, read by producers.

A worker that holds encoders (``LONGPARSER_SEMANTIC_ENABLED``: the pinned model and the ones
``LONGPARSER_ENCODERS`` declares) rewrites its entry of the hash ``P:encoders`` every
:data:`ANNOUNCE_INTERVAL_S` seconds: its node name -> ``{"queue", "encoders", "expires"}``, and
keeps a time-to-live of :data:`ANNOUNCE_TTL_S` on the key, so a fleet that is gone leaves
nothing behind. An entry whose ``expires`` has passed is a worker that stopped announcing
(killed, cut off): readers ignore it, writers delete it. A stopping worker deletes its own entry.

``submit`` reads the hash to refuse at once, in one line, a request whose ``embed`` no live
worker of the semantic queue can serve, instead of leaving it queued for nobody.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterable
from typing import Any

from longparser_client.schemas.config import ChunkingConfig
from longparser_client.schemas.encoders import embedding_encoder
from longparser_client.service.keys import encoders_key

ANNOUNCE_TTL_S = 30.0
ANNOUNCE_INTERVAL_S = ANNOUNCE_TTL_S / 3  # two announcements may be late or lost


def announce(client: Any, prefix: str, worker: str, queue: str, encoders: Iterable[str], *,
             now: float | None = None, ttl: float = ANNOUNCE_TTL_S) -> None:
    """Write ``worker``'s entry (the encoders it holds, serving ``queue``), valid for ``ttl`` s,
    and delete the entries that expired."""
    now = time.time() if now is None else now
    key = encoders_key(prefix)
    entry = json.dumps({"queue": queue, "encoders": sorted(encoders), "expires": now + ttl})
    stale = [field for field, value in client.hgetall(key).items() if _expires(value) <= now]
    pipe = client.pipeline(transaction=True)
    if stale:
        pipe.hdel(key, *stale)
    pipe.hset(key, worker, entry)
    pipe.expire(key, max(1, round(ttl)))
    pipe.execute()


def withdraw(client: Any, prefix: str, worker: str) -> None:
    """Delete ``worker``'s entry (it stops holding its encoders)."""
    client.hdel(encoders_key(prefix), worker)


def _entry(value: Any) -> dict[str, Any]:
    try:
        entry = json.loads(value)
    except (TypeError, ValueError):
        return {}
    return entry if isinstance(entry, dict) else {}


def _expires(value: Any) -> float:
    expires = _entry(value).get("expires")
    return float(expires) if isinstance(expires, int | float) else 0.0


def live_encoders(entries: dict[Any, Any], queue: str, *, now: float | None = None) -> set[str] | None:
    """The encoders held by live workers of ``queue`` in the hash's ``entries``; None when no
    live worker of the queue announced any."""
    now = time.time() if now is None else now
    held: set[str] | None = None
    for value in entries.values():
        entry = _entry(value)
        if entry.get("queue") != queue or _expires(value) <= now:
            continue
        held = (held or set()) | {name for name in entry.get("encoders", []) if isinstance(name, str)}
    return held


def embed_refusal(config: ChunkingConfig, held: Collection[str] | None, queue: str) -> str | None:
    """Why no live worker can serve ``config``'s ``embed`` (one line), or None when one can."""
    if config.embed is False:
        return None
    if not held:
        return (f"embed: no live worker holds an encoder (none announced on queue {queue!r} in the last "
                f"{ANNOUNCE_TTL_S:g} s); start workers with LONGPARSER_SEMANTIC_ENABLED=true, or leave "
                "embed out")
    name = embedding_encoder(config, held)
    if name not in held:
        return (f"embed {name!r}: no live worker of queue {queue!r} holds this encoder (held: "
                f"{', '.join(sorted(held))}); declare it in LONGPARSER_ENCODERS on the workers, or name "
                f"one of those")
    return None


__all__ = ["ANNOUNCE_INTERVAL_S", "ANNOUNCE_TTL_S", "announce", "embed_refusal",
           "live_encoders", "withdraw"]
