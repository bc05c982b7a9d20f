"""The worker context: everything a task needs from its process, built once and passed in.

As in arq, a worker process builds one :class:`WorkerContext` when it starts and hands it to
every task it runs: the settings (read once, at the edge), the document store (one connection
pool per process), the engine's resources and the counters of waits and redeliveries. The
Celery app carries it (:attr:`worker.celery_app.LongParserCelery.context`); the parent builds a
light one at ``worker_init`` (no resources: it never runs a task, but stores a FAILURE record
when a child is killed by the hard time limit), each pool child its own full one at
``worker_process_init``. Tests build a context and hand it over the same way.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from config.settings import Settings
from loaders.embedding import Embedder, build_embedders
from loaders.pinned_model import default_model_path
from loaders.resources import ResourceSpec, build_resources
from longparser.resources import Resources
from longparser.tokens import TokenCounter
from service.retry import Waits
from service.store import ResultStore

logger = logging.getLogger(__name__)

WARM_UP_TEXTS = ("LongParser warm-up sentence.", "A second, different sentence.")


@dataclass
class Counters:
    """What an operator wants counted per process: redelivered tasks (logged with each one)."""

    redelivered: int = 0


@dataclass(frozen=True)
class WorkerContext:
    """Per-process state handed to every task.

    Attributes:
        settings: the process's settings.
        store: the document store (``LONGPARSER_RESULT_URL``).
        resources: what the engine may use; None in the parent, which runs no task.
        waits: how often this process waited for Redis (:func:`service.retry.call_with_retry`).
        counters: redeliveries seen.
        embedders: the encoders this process holds, by the name ``embed`` gives (a semantic
            worker's pinned model and declared encoders; empty elsewhere).
    """

    settings: Settings
    store: ResultStore
    resources: Resources | None = None
    waits: Waits = field(default_factory=Waits)
    counters: Counters = field(default_factory=Counters)
    embedders: Mapping[str, Embedder] = field(default_factory=dict)


def _cap_threads(threads: int) -> None:
    # Set before any model code runs in this process: torch reads these when its pools start.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    os.environ.setdefault("MKL_NUM_THREADS", str(threads))


def build_process_resources(settings: Settings, tokenizers: Mapping[str, TokenCounter] | None = None
                            ) -> Resources:
    """Load the resources ``settings`` ask for (:meth:`ResourceSpec.from_settings`), and warm the
    encoder up.

    Required (a failure raises instead of turning the check off): the encoder of a semantic
    worker, a word list or language ID the operator set explicitly, every declared tokenizer.
    A default that is absent (the system word list on a machine without one) logs one line and
    is recorded as off in each result's stats. ``tokenizers``: the declared tokenizers'
    counters, loaded once by the parent before it forks (:mod:`worker.signals`); None: loaded
    here.
    """
    started = time.perf_counter()
    spec = ResourceSpec.from_settings(settings)
    if spec.encoder != "off":
        _cap_threads(spec.threads)
    resources = build_resources(spec, tokenizers)
    if resources.encoder is not None:
        # One warm-up encode: the first call pays for lazy initialisation, not the first task.
        resources.encoder.encode(list(WARM_UP_TEXTS))
    logger.info("process %d resources ready in %.0f ms: %s", os.getpid(),
                (time.perf_counter() - started) * 1000, resources.availability())
    return resources


def build_process_embedders(settings: Settings, resources: Resources) -> dict[str, Embedder]:
    """The encoders a worker process holds: none unless it is a semantic worker; then the pinned
    model it loaded for semantic boundaries and every encoder LONGPARSER_ENCODERS declares."""
    if not settings.semantic_enabled:
        return {}
    model_dir = Path(settings.model_path) if settings.model_path else default_model_path()
    return build_embedders(resources.encoder, model_dir, settings.encoders, threads=settings.torch_threads)


def parent_context(settings: Settings) -> WorkerContext:
    """The worker parent's context: settings and store, no resources."""
    return WorkerContext(settings=settings, store=ResultStore.from_settings(settings))


def child_context(settings: Settings, tokenizers: Mapping[str, TokenCounter] | None = None) -> WorkerContext:
    """A pool child's context: its own store connections and its own resources (the declared
    tokenizers' counters come from the parent, loaded before it forked)."""
    resources = build_process_resources(settings, tokenizers)
    return WorkerContext(settings=settings, store=ResultStore.from_settings(settings), resources=resources,
                         embedders=build_process_embedders(settings, resources))
