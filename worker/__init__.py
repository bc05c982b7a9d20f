"""The LongParser Celery worker: ``celery -A worker worker`` finds :data:`app` here.

``app`` is resolved lazily (PEP 562 module ``__getattr__``) so that the light modules of this
package - :mod:`service.keys` (every Redis key format) and :mod:`service.store` (the result
store) - can be imported by producers and tests without building the Celery app.
"""

from __future__ import annotations

from typing import Any

__all__ = ["app"]


def __getattr__(name: str) -> Any:
    if name == "app":
        from worker.celery_app import app

        return app
    raise AttributeError(f"module 'worker' has no attribute {name!r}")
