"""Completion events: the ``P:events`` stream and a consumer-group reader for upload services.

Every record the store writes (SUCCESS or FAILURE) appends one entry to ``P:events`` in the same
atomic write (:mod:`service.store`), so an entry is never seen for a record that is not stored.
Entry fields (all strings): ``document_id``, ``status``, ``task_id``, ``result_key``, ``chunks``,
``added``, ``removed``, ``unchanged`` (``""`` when there was no previous SUCCESS), ``error_type``
(``""`` on success), ``stored_at`` (unix seconds).

:class:`EventConsumer` reads the stream through a Redis consumer group, at least once:

* an entry stays pending in the group until :meth:`EventConsumer.ack` (XACK); a consumer that
  restarts under the same name first re-reads its own pending entries;
* entries pending on *another* consumer for longer than ``claim_idle_s`` (it died, or hangs) are
  claimed (XAUTOCLAIM) and handed to this one;
* so a handler must be idempotent (an entry can be handled twice: once by a consumer that died
  before acknowledging, once by the one that claimed it).

The stream is capped (``LONGPARSER_EVENTS_MAXLEN``, about 100k entries, trimmed with MAXLEN ~): a
consumer down for longer than the cap covers loses the oldest entries. It notices (the
group's ``lag`` in ``XINFO GROUPS``, or ids it expected and never saw) and reconciles through
``status`` / ``fetch_record`` of the documents it is waiting for: the stored record is the truth,
events are the notification.

Importable without Celery or torch.
"""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import dataclass
from typing import Any

import redis.exceptions

from longparser_client.service.keys import events_key
from longparser_client.service.redis_client import MAX_BLOCK_S, redis_client
from longparser_client.settings import Settings

logger = logging.getLogger(__name__)

EMPTY_STREAM_ID = "0-0"


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def entry_document_id(fields: dict[Any, Any]) -> str | None:
    """The ``document_id`` of a stream entry's fields as redis-py returns them (bytes or str)."""
    value = fields.get(b"document_id", fields.get("document_id"))
    return None if value is None else _text(value)


def _count(value: str) -> int | None:
    return int(value) if value else None


@dataclass(frozen=True)
class Event:
    """One completion event (see the module doc for the fields)."""

    id: str
    document_id: str
    status: str
    task_id: str
    result_key: str
    chunks: int
    added: int | None
    removed: int | None
    unchanged: int | None
    error_type: str
    stored_at: float

    @classmethod
    def parse(cls, entry_id: Any, fields: dict[Any, Any]) -> Event:
        """An event from a stream entry as redis-py returns it (bytes or str)."""
        f = {_text(k): _text(v) for k, v in fields.items()}
        return cls(id=_text(entry_id), document_id=f["document_id"], status=f["status"], task_id=f["task_id"],
                   result_key=f["result_key"], chunks=int(f["chunks"]), added=_count(f["added"]),
                   removed=_count(f["removed"]), unchanged=_count(f["unchanged"]), error_type=f["error_type"],
                   stored_at=float(f["stored_at"]))


def last_event_id(client: Any, key: str) -> str:
    """The id of the stream's newest entry (``0-0`` when it is empty or missing): what a waiter
    notes before it checks a record, so that no event after the check can be missed."""
    newest = client.xrevrange(key, count=1)
    return _text(newest[0][0]) if newest else EMPTY_STREAM_ID


def block_ms(remaining_s: float) -> int:
    """Milliseconds of one blocking read for ``remaining_s`` seconds left (at least 1: 0 means
    forever to Redis)."""
    return max(1, int(min(remaining_s, MAX_BLOCK_S) * 1000))


class EventConsumer:
    """One named consumer of a consumer group on the completion stream.

    Args:
        client: a ``redis.Redis`` on the store's Redis (``ResultStore.from_settings(s).client``).
        prefix: ``LONGPARSER_KEY_PREFIX``.
        group: the consumer group (one per upload service: each group sees every event once).
        name: this consumer's name, stable across restarts of the same process slot (so it
            re-reads its own pending entries), unique among the group's live consumers.
        claim_idle_s: entries pending on another consumer this long are taken over.
        block_s: how long one :meth:`read` waits for new entries.
        count: most entries one :meth:`read` returns.

    :meth:`from_settings` connects to ``LONGPARSER_EVENTS_URL``: consumers have a Redis user of
    their own, with the consumer-group commands the producer user lacks (docs/operations.md)::

        consumer = EventConsumer.from_settings(get_settings(), "indexer", socket.gethostname())
        consumer.create_group()
        while True:
            for event in consumer.read():
                handle(event)             # idempotent: an event may come twice
                consumer.ack(event.id)
    """

    def __init__(self, client: Any, prefix: str, group: str, name: str | None = None, *,
                 claim_idle_s: float = 60.0, block_s: float = 5.0, count: int = 100) -> None:
        self.client, self.key, self.group = client, events_key(prefix), group
        self.name = name or f"{socket.gethostname()}-{id(self):x}"
        self.claim_idle_ms = int(claim_idle_s * 1000)
        self.block_ms, self.count = block_ms(block_s), count
        self._own_pending: str | None = EMPTY_STREAM_ID  # re-read own pending entries first
        self._claim_cursor = EMPTY_STREAM_ID
        self._next_claim = 0.0

    @classmethod
    def from_settings(cls, settings: Settings, group: str, name: str | None = None, **options: Any
                      ) -> EventConsumer:
        """A consumer on ``LONGPARSER_EVENTS_URL`` (unset: ``LONGPARSER_RESULT_URL``) under
        ``LONGPARSER_KEY_PREFIX``; ``options``: the keyword arguments of the constructor."""
        return cls(redis_client(settings.events_consumer_url, settings), settings.key_prefix, group, name,
                   **options)

    def close(self) -> None:
        """Release the client's connections."""
        self.client.close()

    def create_group(self, start: str = "$") -> bool:
        """Create the group (and the stream, if missing) reading from ``start`` (``$``: only
        events after now; ``0``: everything the stream still holds). False when it exists."""
        try:
            self.client.xgroup_create(self.key, self.group, id=start, mkstream=True)
        except redis.exceptions.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
            return False
        return True

    def read(self) -> list[Event]:
        """The next events for this consumer: its own pending ones after a restart, then entries
        claimed from consumers idle longer than ``claim_idle_s``, then new ones (blocking up to
        ``block_s``). Each stays pending until acknowledged."""
        if self._own_pending is not None:
            entries = self._read_group(self._own_pending, block=None)
            if entries:
                self._own_pending = entries[-1][0]
                return self._events(entries)
            self._own_pending = None
        claimed = self._claim()
        if claimed:
            return claimed
        return self._events(self._read_group(">", block=self.block_ms))

    def ack(self, *event_ids: str) -> int:
        """Acknowledge handled events (XACK); returns how many were pending."""
        return int(self.client.xack(self.key, self.group, *event_ids)) if event_ids else 0

    def _read_group(self, start: str, block: int | None) -> list[tuple[Any, Any]]:
        reply = self.client.xreadgroup(self.group, self.name, {self.key: start}, count=self.count,
                                       block=block)
        return list(reply[0][1]) if reply else []

    def _claim(self) -> list[Event]:
        # XAUTOCLAIM walks the group's pending list: once per half claim period is enough.
        now = time.monotonic()
        if now < self._next_claim:
            return []
        reply = self.client.xautoclaim(self.key, self.group, self.name, self.claim_idle_ms,
                                       start_id=self._claim_cursor, count=self.count)
        self._claim_cursor = _text(reply[0])
        if self._claim_cursor == EMPTY_STREAM_ID:  # walked the whole list: wait before the next walk
            self._next_claim = now + self.claim_idle_ms / 2000.0
        if len(reply) > 2 and reply[2]:
            logger.warning("%d pending completion events were trimmed from %s before being handled: "
                           "reconcile through status", len(reply[2]), self.key)
        return self._events(reply[1])

    def _events(self, entries: list[tuple[Any, Any]]) -> list[Event]:
        events, gone = [], []
        for entry_id, fields in entries:
            if fields:
                events.append(Event.parse(entry_id, fields))
            else:  # pending, but trimmed from the stream since: nothing left to hand over
                gone.append(_text(entry_id))
        if gone:
            self.ack(*gone)
            logger.warning("%d pending completion events were trimmed from %s before being handled: "
                           "reconcile through status", len(gone), self.key)
        return events
