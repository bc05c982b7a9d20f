"""The LongParser Celery worker: ``celery -A worker worker`` finds :data:`app` here.

``app`` is resolved lazily (PEP 562 module ``__getattr__``): importing one of this package's
modules (:mod:`worker.context` in tests, :mod:`worker.flower` before it execs Flower) does not
build the Celery app, which reads the settings and connects the worker's signals.
"""

from __future__ import annotations

from typing import Any

__all__ = ["app"]


def __getattr__(name: str) -> Any:
    if name == "app":
        from worker.celery_app import app

        return app
    raise AttributeError(f"module 'worker' has no attribute {name!r}")
