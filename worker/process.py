"""Per-process resources: built once in each worker child, reused by every task it runs.

Why per process and not in the parent: torch's thread pools and OpenMP state do not survive
``fork``; a parent that ran a torch operation before forking leaves children that hang on
their first encode. So the parent imports nothing heavy and runs no model code; each child
builds its own :class:`~longparser.resources.Resources` on ``worker_process_init``. A
structural-only worker never imports torch at all (the encoder loader is only called when
``semantic_enabled``).
"""

from __future__ import annotations

import logging
import os
import threading
import time

from config.settings import Settings, get_settings
from loaders.resources import build_resources
from longparser.resources import Resources

logger = logging.getLogger(__name__)

WARM_UP_TEXTS = ("LongParser warm-up sentence.", "A second, different sentence.")

_lock = threading.Lock()
# (pid, resources) of the process that built them; a forked child sees a foreign pid.
_current: list[tuple[int, Resources]] = []


def _cap_threads(threads: int) -> None:
    # Set before any model code runs in this process: torch reads these when its pools start.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    os.environ.setdefault("MKL_NUM_THREADS", str(threads))


def build_process_resources(settings: Settings) -> Resources:
    """Load the resources ``settings`` ask for, and warm the encoder up.

    A semantic-enabled worker loads strictly: a missing model or a wrong digest raises
    :class:`~longparser.resources.EncoderUnavailable` (its message says what to install), which
    makes the worker child, and so the worker, refuse to start.
    """
    started = time.perf_counter()
    if settings.semantic_enabled:
        _cap_threads(settings.torch_threads)
    resources = build_resources(
        word_list_path=settings.word_list_path,
        language_id=settings.language_id,
        semantic=settings.semantic_enabled,
        model_path=settings.model_path,
        threads=settings.torch_threads,
        strict=True,
    )
    if resources.encoder is not None:
        # One warm-up encode: the first call pays for lazy initialisation, not the first task.
        resources.encoder.encode(list(WARM_UP_TEXTS))
    logger.info(
        "process %d resources ready in %.0f ms: %s",
        os.getpid(),
        (time.perf_counter() - started) * 1000,
        resources.availability(),
    )
    return resources


def init_process_resources(settings: Settings | None = None) -> Resources:
    """Build (or rebuild) this process's resources; called from ``worker_process_init``."""
    resources = build_process_resources(settings or get_settings())
    with _lock:
        _current[:] = [(os.getpid(), resources)]
    return resources


def get_process_resources() -> Resources:
    """This process's resources, built lazily when the init signal did not run (eager mode).

    A child forked from a parent that had resources rebuilds its own (the pid check), so a
    model loaded before a fork is never shared across processes.
    """
    with _lock:
        if _current and _current[0][0] == os.getpid():
            return _current[0][1]
    return init_process_resources()


def reset_process_resources() -> None:
    """Forget this process's resources (tests)."""
    with _lock:
        _current.clear()
