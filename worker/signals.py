"""Worker signal handlers: start-up checks in the parent, resources in each child.

Celery swallows (logs) exceptions raised by signal receivers, so "refuse to start" is
implemented explicitly: the parent checks, before forking, that a semantic worker's model is
installed and matches its pinned digest (a file read, no torch operation), and exits with the
message if not; a child whose resources still fail to build logs the reason, asks the parent to
shut down and exits, instead of serving tasks without its model.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
from typing import Any

from celery.signals import after_setup_logger, worker_init, worker_process_init

from config.logging import set_levels
from config.settings import get_settings
from loaders.pinned_model import INSTALL_HINT, PINNED_SHA256, EncoderUnavailable, checked_model_dir

logger = logging.getLogger(__name__)


def preflight_semantic(model_path: str | None) -> None:
    """Raise :class:`EncoderUnavailable` unless the SDK and the pinned model are installed.

    Runs in the parent before forking, so it must not import torch: it only locates the SDK
    and hashes the weights file.
    """
    if importlib.util.find_spec("sentence_transformers") is None:
        raise EncoderUnavailable(f"sentence-transformers is not installed; {INSTALL_HINT}")
    checked_model_dir(model_path, PINNED_SHA256)


@after_setup_logger.connect
def _set_log_levels(**_: Any) -> None:
    set_levels(get_settings().log_level)


@worker_init.connect
def _check_worker_can_start(**_: Any) -> None:
    settings = get_settings()
    if not settings.semantic_enabled:
        return
    try:
        preflight_semantic(settings.model_path)
    except EncoderUnavailable as exc:
        logger.critical("semantic worker cannot start: %s", exc)
        # SystemExit is not swallowed by Celery's signal dispatch: the worker exits non-zero.
        raise SystemExit(
            f"longparser worker: semantic mode enabled but the model is unavailable: {exc}"
        ) from None


@worker_process_init.connect
def _init_child_resources(**_: Any) -> None:
    from worker.process import init_process_resources

    try:
        init_process_resources()
    except Exception as exc:
        logger.critical("worker process %d cannot build its resources, shutting the worker down: %s",
                        os.getpid(), exc)
        os.kill(os.getppid(), signal.SIGTERM)
        os._exit(1)
