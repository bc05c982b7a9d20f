"""The LongParser Celery worker: ``celery -A worker worker`` finds :data:`app` here.

``app`` is resolved lazily (PEP 562 module ``__getattr__``): importing a module of this package
(:mod:`worker.celery_compat`, :mod:`worker.transport`, :mod:`worker.context`, ...) does not build
the Celery app, which reads the process's settings and connects the worker signals.
"""

from __future__ import annotations

from typing import Any

__all__ = ["app"]


def __getattr__(name: str) -> Any:
    if name == "app":
        from worker.celery_app import app

        return app
    raise AttributeError(f"module 'worker' has no attribute {name!r}")
