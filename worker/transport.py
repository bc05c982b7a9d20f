"""kombu's Redis transports, made to survive the loss of their connection mid-burst.

kombu emulates acknowledgements on Redis: a delivered message waits in an ``unacked`` hash
until its consumer acknowledges it; when a consumer's channel closes, kombu puts the messages it
still holds back in their queue. Three things break when the channel closes *because Redis is
gone* (all seen in the fault suite's Redis-restart scenario; the first two stopped the whole
worker with "Unrecoverable error: AttributeError"):

* the restore at close fails (a connection error, or an ``AttributeError`` once the transport
  is detached from its connection);
* a task that was running when the connection dropped finishes afterwards, and its
  acknowledgement goes to the old, closed channel;
* a message taken off its queue (``BRPOP``) just before the connection dropped, whose entry in
  the ``unacked`` hash could not be written: only this process has it now (the fault suite lost
  one document this way in about one Redis stop out of five).

Two more, for a fleet of hosts (docs/operations.md, "Partitions and leases"): a message this
transport puts back in its queue gets a new delivery tag (``compat.FreshTagOnRestore``), so the
late acknowledgement of a holder that was cut off deletes nothing the next holder has; and the
periodic sweep that puts back messages nobody renewed (kombu's ``restore_visible``) waits while
this worker's own lease renewals fail (:mod:`worker.lease`).

:class:`HoldingQoS` keeps what it could not restore (for :class:`worker.restore.RestoreHeldMessages`
to put back on reconnect), keeps the raw message whose unacked entry could not be written
(``unwritten``: it is pushed back to its queue unless its task runs and is acknowledged), and
sends the acknowledgements and rejections of an old channel through the channel that replaced
it (``successor``). An acknowledgement that still cannot be
written is logged and the message stays held: it is delivered again (at-least-once), never lost.

What a producer pushes is checked here too, before kombu decodes it (:mod:`worker.inbound`): a
raw message too long to decode is dropped as Redis returns it (:class:`ScreenedPops`), and each
envelope is refused, or made safe and routed back only to the queue it came from, before kombu
builds its message (:class:`AdmittingTransport`).

The worker app selects these classes (``broker_transport``); producers use kombu's own. Every
kombu internal this needs is reached through :mod:`worker.celery_compat`.
"""

from __future__ import annotations

import logging
from functools import cached_property
from typing import Any

import redis.exceptions

from service.celeryconfig import BODY_LIMIT_OPTION
from worker import celery_compat as compat
from worker import inbound
from worker.celery_compat import RawMessage

logger = logging.getLogger(__name__)

class HoldingQoS(compat.RedisQoS):
    """Redis ack emulation that keeps what it could not restore and acks through a successor."""

    #: the QoS of the channel that replaced this one after a reconnect (set by RestoreHeldMessages)
    successor: HoldingQoS | None = None
    #: the worker's lease renewer (worker/lease.py) once it renews what this QoS holds: it says
    #: when this worker may put back messages that others stopped renewing
    lease: Any = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: delivery tag -> raw message of the messages with no unacked entry
        self.unwritten: dict[Any, RawMessage] = {}
        #: delivery tags whose acknowledgement Redis refused while the connection stayed up (OOM
        #: under noeviction, READONLY): tried again every restore cycle, since until then each
        #: one holds a prefetch slot and a worker holding as many as it may prefetch takes no more
        self.pending_acks: set[Any] = set()

    def append(self, message: Any, delivery_tag: Any) -> None:
        try:
            super().append(message, delivery_tag)
        except Exception as exc:
            # Off the queue, not in the unacked hash: keep it, so it can be put back.
            self.unwritten[delivery_tag] = compat.raw_message(message)
            compat.record_in_memory(self, message, delivery_tag)
            logger.warning("message %s taken off its queue as the connection dropped (%s: %s): kept in "
                           "memory and put back when Redis answers unless its task runs first",
                           delivery_tag, type(exc).__name__, exc)

    def requeue(self, tag: Any) -> None:
        """Put one held message back in its queue: from the unacked hash, or from memory."""
        self.requeue_through(self, tag)

    def live(self) -> HoldingQoS:
        """This QoS, or the newest successor whose channel is still connected."""
        qos = self
        while compat.is_detached(qos) and qos.successor is not None:
            qos = qos.successor
        return qos

    def restore_visible(self, *args: Any, **kwargs: Any) -> None:
        # Periodic (every few polls): a Redis refusing writes (OOM under noeviction, READONLY
        # during a failover) must not stop the worker; the next cycle tries again. A worker whose
        # own renewals failed lately does not sweep: the other holders may not have renewed yet.
        self.retry_pending_acks()
        if self.lease is not None and not self.lease.may_sweep():
            return
        try:
            super().restore_visible(*args, **kwargs)
        except redis.exceptions.ResponseError as exc:
            logger.warning("could not check for timed-out unacknowledged messages now (%s); next cycle",
                           exc)

    def restore_unacked(self, client: Any = None) -> None:
        try:
            for tag in [tag for tag in compat.held_tags(self) if tag in self.unwritten]:
                self.requeue(tag)
                compat.forget_delivery(self, tag)
            super().restore_unacked(client)
        except Exception as exc:
            logger.warning("connection lost: %d message(s) this worker holds will be put back in their "
                           "queue when it returns (%s: %s)", len(compat.held_tags(self)), type(exc).__name__,
                           exc)

    def ack(self, delivery_tag: Any) -> None:
        self.unwritten.pop(delivery_tag, None)
        self.retry_pending_acks()
        self.acknowledge(delivery_tag)

    def acknowledge(self, delivery_tag: Any) -> bool:
        """Remove the message's unacked entry and let its prefetch slot go; when Redis refuses,
        keep it pending (:meth:`retry_pending_acks`). Whether it was acknowledged."""
        try:
            compat.remove_unacked_entry(self.live(), delivery_tag)
        except Exception as exc:
            if delivery_tag not in self.pending_acks:
                logger.warning("could not acknowledge message %s (%s: %s): it stays held, and the "
                               "acknowledgement is tried again every restore cycle until Redis takes it",
                               delivery_tag, type(exc).__name__, exc)
            self.pending_acks.add(delivery_tag)
            return False
        self.pending_acks.discard(delivery_tag)
        compat.forget_acknowledged(self, delivery_tag)
        return True

    def retry_pending_acks(self) -> None:
        """Acknowledge again what Redis refused to acknowledge before; stop at the first refusal."""
        for tag in list(self.pending_acks):
            if tag not in compat.held_tags(self):  # put back or forgotten meanwhile (a reconnect)
                self.pending_acks.discard(tag)
            elif not self.acknowledge(tag):
                return

    def reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        live = self.live()
        try:
            if requeue and delivery_tag in self.unwritten:
                self.requeue_through(live, delivery_tag)
            elif requeue:
                compat.restore_from_unacked(live, delivery_tag, leftmost=True)
            else:
                compat.remove_unacked_entry(live, delivery_tag)
        except Exception as exc:
            action = "requeue" if requeue else "reject"
            logger.warning("could not %s message %s (%s: %s): it stays held and is put back once Redis "
                           "answers", action, delivery_tag, type(exc).__name__, exc)
            return
        compat.forget_acknowledged(self, delivery_tag)

    def requeue_through(self, live: Any, tag: Any) -> None:
        """Requeue a message of this QoS with the connection of ``live`` (this QoS or a successor)."""
        raw = self.unwritten.pop(tag, None)
        if raw is None:
            compat.restore_from_unacked(live, tag)  # a no-op when the message was acknowledged since
            return
        try:
            compat.push_raw_message(live.channel, raw)
        except Exception:
            self.unwritten[tag] = raw
            raise


def body_limit(transport: Any) -> int:
    """The inline limit the worker's app passes its transport (``broker_transport_options``)."""
    limit = compat.transport_option(transport, BODY_LIMIT_OPTION)
    if not isinstance(limit, int):
        raise RuntimeError(f"broker_transport_options has no {BODY_LIMIT_OPTION!r}: build the worker's "
                           "app with service.celeryconfig.celery_config")
    return limit


class ScreenedPops:
    """Channel mixin: a raw message longer than :func:`worker.inbound.envelope_limit` of the inline
    limit is replaced, as Redis returns it, by a short refusal; kombu never decodes it."""

    @cached_property
    def _envelope_limit(self) -> int:
        return inbound.envelope_limit(body_limit(self.connection))  # type: ignore[attr-defined]

    def _create_client(self, asynchronous: bool = False) -> Any:
        client = super()._create_client(asynchronous)  # type: ignore[misc]
        limit = self._envelope_limit
        compat.screen_pops(client, lambda item: inbound.screen_pop_reply(item, limit))
        return client


class AdmittingTransport:
    """Transport mixin: each envelope taken from a queue is checked, made safe (scheduling
    headers reset, put back only where it came from) or refused (:func:`worker.inbound.admit`)
    before kombu builds its message."""

    def _deliver(self, message: Any, queue: Any) -> None:
        if queue and not inbound.admit(message, str(queue), body_limit(self),
                                       task_queue=queue in compat.consumed_task_queues()):
            return  # refused and recorded: nothing of it is decoded further, nothing runs
        super()._deliver(message, queue)  # type: ignore[misc]


class Channel(compat.FreshTagOnRestore, compat.ReusedClient, ScreenedPops, compat.RedisChannel):
    QoS = HoldingQoS


class Transport(AdmittingTransport, compat.RedisTransport):
    Channel = Channel


class SentinelChannel(compat.FreshTagOnRestore, compat.ReusedClient, ScreenedPops,
                      compat.RedisSentinelChannel):
    QoS = HoldingQoS


class SentinelTransport(AdmittingTransport, compat.RedisSentinelTransport):
    Channel = SentinelChannel


def transport_for(url: str) -> str | None:
    """The ``broker_transport`` for a worker consuming from ``url`` (None: kombu's choice)."""
    scheme = url.split("://", 1)[0]
    if scheme in ("redis", "rediss", "unix"):
        return f"{__name__}:Transport"
    if scheme == "sentinel":
        return f"{__name__}:SentinelTransport"
    return None
