"""Logging set-up for the CLI, the ``make run`` demo and worker processes.

Celery configures the root logger of a worker itself (``-l LEVEL``); the worker then only
raises or lowers our own loggers to ``LONGPARSER_LOG_LEVEL`` (see ``worker.signals``).
"""

from __future__ import annotations

import logging

OUR_LOGGERS = ("longparser", "longparser_client", "tasks", "worker", "config")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def set_levels(level: str) -> None:
    """Set our own loggers to ``level`` without touching third-party ones."""
    for name in OUR_LOGGERS:
        logging.getLogger(name).setLevel(level)


def configure_logging(level: str = "INFO") -> None:
    """Root handler on stderr (idempotent: ``basicConfig`` is a no-op once configured)."""
    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
    set_levels(level)
