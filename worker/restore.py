"""Prompt redelivery of the messages a worker held when its broker connection dropped.

Redis has no broker-side redelivery: kombu keeps every delivered, unacknowledged message in an
``unacked`` hash and puts a consumer's messages back in their queue when its channel closes.
When the channel closes *because Redis is gone*, that restore fails and the messages stay in
the hash until the visibility timeout (an hour by default, and it must stay at least twice the
hard time limit) hands them to someone else. This consumer step remembers each channel this
worker consumed from; when the consumer starts again on a new connection, it puts back every
message the old channel still held (reserved, or running when the connection dropped and not
acknowledged since) before fetching new work. A message whose task finished and was
acknowledged in the meantime is no longer in the hash and is left alone; one whose task is still
running is delivered again (at-least-once: the result is the same record, written once more).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import bootsteps

logger = logging.getLogger(__name__)


def held_tags(qos: Any) -> list[Any]:
    """Delivery tags a channel's QoS still holds (delivered, not acknowledged or rejected)."""
    delivered = getattr(qos, "_delivered", None) or {}
    dirty = getattr(qos, "_dirty", None) or set()
    return [tag for tag in list(delivered) if tag not in dirty]


class RestoreHeldMessages(bootsteps.StartStopStep):
    """Consumer step: on every (re)start, requeue what previous channels left unacknowledged."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.previous: list[Any] = []  # QoS objects of channels used before this start
        self.restored_total = 0

    def start(self, parent: Any) -> None:
        consumer = getattr(parent, "task_consumer", None)
        channel = getattr(consumer, "channel", None)
        if channel is None:
            return
        current = channel.qos
        pending = [qos for qos in self.previous if qos is not current]
        self.previous = [current, *self.restore(current, pending)]

    def restore(self, current: Any, pending: list[Any]) -> list[Any]:
        """Requeue the held messages of ``pending`` QoS objects; returns those that still hold some."""
        left: list[Any] = []
        for qos in pending:
            tags = held_tags(qos)
            if not tags:
                continue
            restored = 0
            try:
                for tag in tags:
                    current.restore_by_tag(tag)  # no-op when the message was acknowledged since
                    qos._delivered.pop(tag, None)
                    restored += 1
            except Exception as exc:  # the connection dropped again: try at the next start
                logger.warning("could not yet put back %d held message(s): %s", len(tags) - restored, exc)
                left.append(qos)
            self.restored_total += restored
            if restored:
                logger.warning("connection restored: put %d message(s) this worker held back in their "
                               "queue (redeliveries after reconnect in this worker: %d)",
                               restored, self.restored_total)
        return left
