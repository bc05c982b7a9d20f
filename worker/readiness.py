"""``ready`` means ready: the worker starts consuming once its pool processes hold their resources.

Celery forks the pool, then starts the consumer at once: the worker logs ``ready``, answers
``ping`` and takes a message while every child is still in ``worker_process_init`` building its
:class:`~worker.context.WorkerContext` (a semantic child loads the model: seconds to tens of
seconds). A task taken then waits, unseen, for a child to finish loading. Here the parent waits
instead, between starting the pool and starting the consumer (:class:`WaitForPoolProcesses`, a
worker bootstep), until each child has said its context is built (:class:`PoolReadiness`, a
semaphore made before the fork). A child that cannot build its context stops the worker
(:func:`worker.signals.stop_worker_from_child`); a warm or cold shutdown during the wait ends it;
past :data:`WAIT_LIMIT_S` the worker starts consuming anyway, saying how many are still loading
(as it did before this wait existed).

Loading the model in the parent before the fork would share it between the children, but torch
is not fork-safe once its thread pools have started (a warm-up encode starts them), so each
child loads its own after the fork.
"""

from __future__ import annotations

import logging
import multiprocessing
import time
from typing import Any

from celery import bootsteps

from worker import celery_compat

logger = logging.getLogger(__name__)

# How long the parent waits for its children, at most: then it consumes anyway.
WAIT_LIMIT_S = 300.0
POLL_S = 0.2


class PoolReadiness:
    """Counts the pool processes that built their context. Made in the parent before the pool
    forks (``worker_init``), so every child shares the one semaphore."""

    def __init__(self) -> None:
        self._built = multiprocessing.get_context("fork").Semaphore(0)

    def child_ready(self) -> None:
        """In a pool child, once its context is built (children replaced later count too: unread)."""
        self._built.release()

    def wait(self, count: int, limit_s: float = WAIT_LIMIT_S, poll_s: float = POLL_S) -> int:
        """Block until ``count`` children are ready, a shutdown is asked for, or ``limit_s``
        passed; returns how many were ready."""
        deadline = time.monotonic() + limit_s
        ready = 0
        while ready < count and not celery_compat.shutdown_requested():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if self._built.acquire(timeout=min(poll_s, remaining)):
                ready += 1
        return ready


class WaitForPoolProcesses(bootsteps.StartStopStep):
    """Worker bootstep between the pool and the consumer: wait for :class:`PoolReadiness`."""

    requires = (celery_compat.WORKER_POOL_STEP,)

    def start(self, worker: Any) -> None:
        readiness = getattr(worker.app, "pool_readiness", None)  # ours: None outside create_app's apps
        count = celery_compat.forked_pool_size(worker)
        if readiness is None or count is None:
            return  # no forked children (solo, threads): nothing to wait for
        started = time.monotonic()
        ready = readiness.wait(count)
        elapsed = time.monotonic() - started
        if ready == count:
            logger.info("pool: %d of %d processes built their resources in %.1f s", ready, count, elapsed)
        elif not celery_compat.shutdown_requested():
            logger.warning("pool: %d of %d processes built their resources in %.0f s; consuming anyway "
                           "(the others' first tasks wait for them)", ready, count, elapsed)
