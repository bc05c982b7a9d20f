"""The Celery application of workers and producers (configuration: :mod:`service.celeryconfig`).

Tasks are listed by module name in ``include`` and imported when a worker boots (or when a
caller imports :mod:`tasks.chunk`), so building the app stays light: no engine, no torch.
Importing this module also connects the worker signals (:mod:`worker.signals`).
"""

from __future__ import annotations

from celery import Celery

from config.settings import Settings, get_settings
from service.celeryconfig import celery_config
from worker import signals  # noqa: F401 - connects worker_init / worker_process_init handlers

TASK_MODULES = ["tasks.chunk"]


def create_app(settings: Settings | None = None, *, main: str = "longparser") -> Celery:
    """A Celery app configured from ``settings`` (default: the process's settings)."""
    celery_app = Celery(main, include=TASK_MODULES, set_as_current=True)
    celery_app.conf.update(celery_config(settings or get_settings()))
    return celery_app


app = create_app()
