"""The worker parent's announcement of the encoders its processes hold (:mod:`service.encoders`).

A semantic worker's pool children each hold the pinned model and every declared encoder
(:func:`worker.context.child_context`); the parent, which checked the declarations before it
forked, announces their names every few seconds from a daemon thread, so that ``submit`` can
refuse at once an ``embed`` no live worker serves. It withdraws the announcement when it stops; a
worker killed outright stops announcing and its entry lapses within the time-to-live.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Iterable
from typing import Any

from service.encoders import ANNOUNCE_INTERVAL_S, announce, withdraw

logger = logging.getLogger(__name__)


def worker_node() -> str:
    """This worker's name in the announcements: host and parent process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


class EncoderAnnouncer:
    """Announces ``encoders`` (serving ``queue``) every ``interval`` seconds until :meth:`stop`."""

    def __init__(self, client: Any, prefix: str, queue: str, encoders: Iterable[str], *,
                 node: str | None = None, interval: float = ANNOUNCE_INTERVAL_S) -> None:
        self.client, self.prefix, self.queue = client, prefix, queue
        self.encoders = sorted(encoders)
        self.node = node or worker_node()
        self.interval = interval
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="longparser-encoders", daemon=True)
        self._failing = False

    def start(self) -> None:
        self.announce_once()  # before the first task can arrive, not an interval later
        self._thread.start()

    def announce_once(self) -> None:
        try:
            announce(self.client, self.prefix, self.node, self.queue, self.encoders)
        except Exception as exc:  # Redis away: said once, retried next interval; tasks run regardless
            if not self._failing:
                logger.warning("could not announce the encoders this worker holds (%s); retrying every %g s",
                               exc, self.interval)
            self._failing = True
            return
        if self._failing:
            logger.info("encoders announced again: %s", ", ".join(self.encoders))
        self._failing = False

    def _run(self) -> None:
        while not self._stopped.wait(self.interval):
            self.announce_once()

    def stop(self) -> None:
        """Stop announcing and withdraw the entry (best effort: it lapses anyway)."""
        self._stopped.set()
        try:
            withdraw(self.client, self.prefix, self.node)
        except Exception as exc:
            logger.warning("could not withdraw the encoders announcement (%s); it lapses by itself", exc)
