"""Leases on held messages: a worker host that vanishes gives its messages back within seconds.

kombu's Redis transport hands a delivered, unacknowledged message to another worker once its
entry in the ``unacked`` index is older than the visibility timeout, whether or not its holder
is alive. Without renewal that timeout must outlast the longest task (at least twice the hard
time limit), and it is also how long the messages of a host that died or was cut off the network
wait. Here the worker parent renews, every ``LONGPARSER_LEASE_INTERVAL`` seconds, the score of
every message it holds (:func:`worker.celery_compat.renew_leases`), from a thread of its own with
its own Redis connection and short timeouts, so a blocked event loop or a dead broker connection
never delays it; the transport's visibility timeout is then ``LONGPARSER_LEASE_TIMEOUT``, a few
intervals, whatever the hard time limit. Every worker sweeps once per interval
(:func:`service.celeryconfig._lease_options`).

A worker whose renewals failed (Redis away, this host cut off) does not sweep for one lease
timeout after they succeed again: after an outage longer than the lease timeout every score is
old, and a sweep before the other holders renewed would hand on messages whose tasks still run.

The bound, and what it costs: docs/operations.md, "Partitions and leases".
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from celery import bootsteps

from config.settings import Settings
from service.redis_client import redis_client
from worker import celery_compat as compat

logger = logging.getLogger(__name__)


class LeaseRenewer:
    """Renews the leases of the messages held by the QoS objects it was given (:meth:`hold`).

    One per worker parent; :meth:`start` starts its thread once. ``client_factory`` builds the
    Redis client the thread uses (default: the broker URL with timeouts of one interval).
    """

    def __init__(self, settings: Settings, client_factory: Callable[[], Any] | None = None) -> None:
        self.interval = settings.lease_interval
        self.timeout = settings.lease_timeout
        self._client_factory = client_factory or (
            lambda: redis_client(settings.broker_url, settings, timeout=max(0.5, self.interval)))
        self._holders: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # monotonic time since which renewals succeed without a failure; -inf: none failed yet
        self._contact_since: float | None = float("-inf")
        self._failing_since: float | None = None
        self.renewed = 0  # leases renewed (entries whose score changed)
        self.commands = 0  # ZADD commands sent
        self.failures = 0

    def hold(self, qos: Any) -> None:
        """Renew what ``qos`` holds from now on (weakly: a QoS dropped elsewhere is forgotten)."""
        with self._lock:
            self._holders.add(qos)
        qos.lease = self

    def may_sweep(self) -> bool:
        """True unless this worker's renewals failed within the last lease timeout."""
        with self._lock:
            since = self._contact_since
        return since is not None and time.monotonic() - since >= self.timeout

    def held(self) -> dict[str, list[Any]]:
        """The delivery tags to renew, by ``unacked_index`` key."""
        with self._lock:
            holders = list(self._holders)
        tags: dict[str, list[Any]] = {}
        for qos in holders:
            try:
                held = compat.held_tags(qos)
            except RuntimeError:  # changed by the event loop while read: renewed next time
                continue
            if held:
                tags.setdefault(compat.lease_key(qos), []).extend(held)
            elif compat.is_detached(qos):
                with self._lock:
                    self._holders.discard(qos)
        return tags

    def renew(self, client: Any) -> int:
        """Renew every held message once; returns how many leases were renewed."""
        now = time.time()
        renewed = 0
        for key, tags in self.held().items():
            renewed += compat.renew_leases(client, key, tags, now)
            self.commands += 1
        self.renewed += renewed
        return renewed

    def _succeeded(self) -> None:
        now = time.monotonic()
        with self._lock:
            resumed = self._contact_since is None
            failing = now - (self._failing_since or now)
            if resumed:
                self._contact_since = now
            self._failing_since = None
        if resumed:
            logger.warning("lease renewals resumed after %.1f s; this worker puts back messages others "
                           "stopped renewing again in %g s", failing, self.timeout)

    def _failed(self, exc: BaseException) -> None:
        self.failures += 1
        with self._lock:
            first = self._failing_since is None
            self._contact_since = None
            if first:
                self._failing_since = time.monotonic()
        if first:
            logger.warning("could not renew the leases of the messages this worker holds (%s: %s); "
                           "another worker takes them over if this lasts %g s", type(exc).__name__, exc,
                           self.timeout)

    def run(self) -> None:
        """The thread's loop: renew every interval until :meth:`stop`."""
        client = None
        while not self._stop.wait(self.interval):
            try:
                if client is None:
                    client = self._client_factory()
                self.renew(client)
            except Exception as exc:  # Redis away, this host cut off: keep trying
                self._failed(exc)
            else:
                self._succeeded()

    def start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self.run, name="lease-renewer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(1.0, 2 * self.interval))


class RenewLeases(bootsteps.StartStopStep):
    """Consumer step: renew the leases of what each new channel holds (worker parent only).

    Added by ``create_app`` when the lease is on and the broker uses :mod:`worker.transport`;
    the renewer is the app's (``app.lease_renewer``). QoS objects of channels used before a
    reconnect stay renewed while they hold messages of running tasks.
    """

    requires = (compat.CONSUMER_TASKS_STEP,)

    def start(self, parent: Any) -> None:
        renewer = getattr(parent.app, "lease_renewer", None)  # ours: None when the lease is off
        if renewer is None:
            return
        renewer.hold(compat.task_channel(parent).qos)
        renewer.start()

    def shutdown(self, parent: Any) -> None:
        renewer = getattr(parent.app, "lease_renewer", None)
        if renewer is not None:
            renewer.stop()
