"""Bounded, in-process waiting for Redis (tenacity): workers and producers ride out outages.

A call that fails with a transient error (:data:`service.redis_client.TRANSIENT_ERRORS`) is
retried with exponential backoff and full jitter (0.1 s doubling, at most 5 s apart) until it
succeeds or the next pause would end past ``window`` seconds from the first try; then the last
error is raised (so a call never takes much longer than its window).
Every wait is logged (WARNING, with the running count) and counted in a :class:`Waits`, so an
operator sees a process riding out an outage rather than a silent stall.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_before_delay,
    wait_random_exponential,
)

from longparser_client.service.redis_client import TRANSIENT_ERRORS

logger = logging.getLogger(__name__)
T = TypeVar("T")

FIRST_WAIT_S = 0.1
MAX_WAIT_S = 5.0


def is_transient(exc: BaseException) -> bool:
    """Worth waiting out: connection, timeout, LOADING, READONLY, TRYAGAIN, OOM."""
    return isinstance(exc, TRANSIENT_ERRORS)


@dataclass
class Waits:
    """How often and how long this process waited for Redis (thread-safe counters)."""

    count: int = 0
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, seconds: float) -> int:
        with self._lock:
            self.count += 1
            self.seconds += seconds
            return self.count


def _policy(window: float, what: str, waits: Waits | None,
            retry_on: Callable[[BaseException], bool], service: str = "Redis") -> dict[str, Any]:
    """The retry policy (what is retried, how long, how far apart, logged how), for both the
    blocking and the asyncio callers; ``service`` names what is waited for in the log line."""
    counter = waits if waits is not None else Waits()

    def log_wait(state: RetryCallState) -> None:
        pause = state.next_action.sleep if state.next_action else 0.0
        total = counter.add(pause)
        error = state.outcome.exception() if state.outcome else None
        logger.warning("%s: %s unavailable (%s: %s); retry %d in %.1f s, %.1f s of %.1f s window used "
                       "(waits in this process: %d)", what, service, type(error).__name__, error,
                       state.attempt_number, pause, state.seconds_since_start, window, total)

    return {"retry": retry_if_exception(retry_on), "stop": stop_before_delay(window),
            "wait": wait_random_exponential(multiplier=FIRST_WAIT_S, max=MAX_WAIT_S),
            "before_sleep": log_wait, "reraise": True}


def call_with_retry(
    function: Callable[[], T], *, window: float, what: str, waits: Waits | None = None,
    retry_on: Callable[[BaseException], bool] = is_transient, service: str = "Redis",
) -> T:
    """``function()``, retried on transient errors for up to ``window`` seconds (``retry_on``
    says which; ``service`` names what is waited for in the log, e.g. PostgreSQL).

    Raises:
        the last transient error once the window has passed; any other error at once.
    """
    return Retrying(sleep=time.sleep, **_policy(window, what, waits, retry_on, service))(function)


async def async_call_with_retry(
    function: Callable[[], Awaitable[T]], *, window: float, what: str, waits: Waits | None = None,
    retry_on: Callable[[BaseException], bool] = is_transient,
) -> T:
    """``await function()`` with :func:`call_with_retry`'s policy; pauses with ``asyncio.sleep``."""
    async def attempt() -> T:
        return await function()

    return await AsyncRetrying(**_policy(window, what, waits, retry_on))(attempt)
