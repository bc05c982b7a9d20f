"""The Celery application of the workers (configuration: :mod:`service.celeryconfig`).

Tasks are listed by module name in ``include`` and imported when a worker boots (or when a
caller imports :mod:`tasks.chunk`), so building the app stays light: no engine, no torch.
Building the app connects its worker signals (the start-up checks, and each process's
:class:`~worker.context.WorkerContext`), adds the worker step that waits for the pool processes to
build it before consuming (:mod:`worker.readiness`) and, on a Redis broker, the consumer step that
requeues what the worker held when its broker connection dropped (:mod:`worker.restore`,
:mod:`worker.transport`) and the one that renews the leases of what it holds (:mod:`worker.lease`),
and the consumer that refuses, counts and logs a message whose body cannot be decoded
(:mod:`worker.inbound`, which the transport applies to every message it takes in).
"""

from __future__ import annotations

from collections.abc import Callable

from celery import Celery

from config.settings import Settings, SettingsError, get_settings
from service.celeryconfig import celery_config
from worker import signals
from worker.context import WorkerContext
from worker.lease import LeaseRenewer, RenewLeases
from worker.readiness import PoolReadiness, WaitForPoolProcesses
from worker.restore import RestoreHeldMessages
from worker.transport import transport_for

TASK_MODULES = ["tasks.chunk"]
# Celery's worker consumer, refusing undecodable bodies as the transport refuses the rest.
CONSUMER = "worker.inbound:RefusingConsumer"


class LongParserCelery(Celery):
    """A Celery app that carries its process's :class:`WorkerContext` (None until built), in a
    worker the pool's :class:`PoolReadiness`, its :class:`LeaseRenewer` (lease on, Redis broker;
    its thread runs only in a consuming worker parent), and the worker signal handlers connected
    for it (:func:`worker.signals.connect`)."""

    context: WorkerContext | None = None
    pool_readiness: PoolReadiness | None = None
    lease_renewer: LeaseRenewer | None = None
    signal_handlers: tuple[Callable[..., None], ...] = ()


def create_app(settings: Settings, *, main: str = "longparser") -> LongParserCelery:
    """A Celery app configured from ``settings``, with the worker's signals and steps."""
    celery_app = LongParserCelery(main, include=TASK_MODULES, set_as_current=True)
    celery_app.conf.update(celery_config(settings))
    transport = transport_for(settings.broker_url)
    if transport is not None:  # the Redis transports that hold what they could not restore
        celery_app.conf.broker_transport = transport
        # a body the parent cannot decode is refused and counted (worker/inbound.py)
        celery_app.conf.worker_consumer = CONSUMER
        celery_app.steps["consumer"].add(RestoreHeldMessages)
        if settings.lease_enabled:  # renewed by the worker parent once it consumes
            celery_app.lease_renewer = LeaseRenewer(settings)
            celery_app.steps["consumer"].add(RenewLeases)
    celery_app.steps["worker"].add(WaitForPoolProcesses)
    signals.connect(celery_app, settings)
    return celery_app


def _process_settings() -> Settings:
    try:
        return get_settings()
    except SettingsError as exc:
        # One line, no traceback, for `celery -A worker ...` (worker, inspect, flower).
        raise SystemExit(f"longparser worker: settings (LONGPARSER_* environment / .env): {exc}") from None


app = create_app(_process_settings())
