"""Prompt redelivery of the messages a worker held when its broker connection dropped.

Redis has no broker-side redelivery: kombu keeps every delivered, unacknowledged message in an
``unacked`` hash and puts a consumer's messages back in their queue when its channel closes.
When the channel closes *because Redis is gone*, that restore fails and the messages would stay
in the hash until the visibility timeout (an hour by default; it must stay at least twice the
hard time limit) hands them to someone else. This consumer step remembers the channels this
worker consumed from; each time the consumer starts on a new connection it puts back every
message an old channel still holds and that no task of this worker is running (reserved, or
whose run ended while Redis was away), before fetching new work. Messages of tasks still
running are left held: their acknowledgement goes through the new channel
(:class:`worker.transport.HoldingQoS`), or, should it fail, they are put back at the next
reconnect. A message acknowledged meanwhile is gone from the hash and is left alone.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import bootsteps

from worker import celery_compat as compat

logger = logging.getLogger(__name__)


class RestoreHeldMessages(bootsteps.StartStopStep):
    """Consumer step: on every (re)start, requeue what previous channels hold and nobody runs.

    Added to apps whose broker uses :mod:`worker.transport` (every channel's QoS is a
    :class:`~worker.transport.HoldingQoS`).
    """

    requires = (compat.CONSUMER_TASKS_STEP,)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.previous: list[Any] = []  # QoS objects of channels used before this start
        self.restored_total = 0

    def start(self, parent: Any) -> None:
        current = compat.task_channel(parent).qos
        pending = [qos for qos in self.previous if qos is not current]
        self.previous = [current, *self.restore(current, pending, compat.running_delivery_tags())]

    def restore(self, current: Any, pending: list[Any], running: set[Any]) -> list[Any]:
        """Requeue the held, not running messages of ``pending``; returns those still holding some."""
        left: list[Any] = []
        for qos in pending:
            qos.successor = current
            tags = [tag for tag in compat.held_tags(qos) if tag not in running]
            restored = 0
            try:
                for tag in tags:
                    qos.requeue_through(current, tag)  # from the unacked hash, or from memory
                    compat.forget_delivery(qos, tag)
                    restored += 1
            except Exception as exc:  # the connection dropped again: the next start retries
                logger.warning("could not yet put back %d held message(s): %s", len(tags) - restored, exc)
            self.restored_total += restored
            if restored:
                logger.warning("connection restored: %d message(s) this worker held put back in their queue "
                               "(redeliveries after reconnects in this worker: %d)", restored,
                               self.restored_total)
            if compat.held_tags(qos):
                left.append(qos)
        return left
