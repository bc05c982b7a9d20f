"""Worker signal handlers: start-up checks and context in the parent, context in each child.

Celery swallows (logs) exceptions raised by signal receivers, so "refuse to start" is explicit:
the parent checks, before forking, that Celery, kombu and redis-py are the tested releases with
the internals the transport relies on (:mod:`worker.celery_compat`), that the Redis it will
trust does not evict and that the resources the operator asked for can be loaded (a semantic
worker's model, its digest and the package its encoder backend runs on, a word list or language
ID set explicitly), and exits with ONE line saying what to change. It then loads the declared
tokenizers (``LONGPARSER_TOKENIZERS``) once, before forking, so every child inherits them (one
that fails stops the worker the same way). A child whose resources still
fail to build logs the reason, asks the parent to shut down and exits, instead of serving tasks
without them; a child that built them says so to the parent, which starts consuming (and says
``ready``) only then (:mod:`worker.readiness`). A semantic worker's parent also checks the
declared encoders' weights (``LONGPARSER_ENCODERS``) before forking, and once ready announces
the encoders its children hold until it shuts down (:mod:`worker.announce`).

Handlers are connected per app (:func:`connect`, called by ``create_app``): each closes over
its app's settings and acts only for a worker of its own app, so a process that builds several
apps (tests, tools) never runs one app's start-up with another's settings.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

from celery.signals import after_setup_logger, worker_init, worker_process_init, worker_ready, worker_shutdown

from config.logging import set_levels
from config.settings import Settings, masked_url
from loaders.embedding import check_declared_encoder
from loaders.encoder_backends import missing_runtime
from loaders.errors import ResourceUnavailable
from loaders.pinned_model import PINNED_SHA256, EncoderUnavailable, checked_model_dir
from loaders.resources import ResourceSpec, build_resources, load_tokenizers
from longparser.tokens import TokenCounter
from schemas.encoders import PINNED_ENCODER
from service.celeryconfig import inline_body_limit
from service.redis_client import TRANSIENT_ERRORS, redis_client
from worker import celery_compat, serialization
from worker.announce import EncoderAnnouncer
from worker.context import child_context, parent_context
from worker.readiness import PoolReadiness
from worker.redis_checks import UnsafeRedis, inspect_redis

logger = logging.getLogger(__name__)


def preflight_semantic(model_path: str | None, backend: str = "torch") -> None:
    """Raise :class:`EncoderUnavailable` unless ``backend``'s runtime and the pinned model are
    installed (the message names the extra to install).

    Runs in the parent before forking, so it must not import torch, ONNX Runtime or OpenVINO:
    it only locates the backend's package and hashes the weights file.
    """
    message = missing_runtime(backend)
    if message:
        raise EncoderUnavailable(message)
    checked_model_dir(model_path, PINNED_SHA256)


def preflight_encoders(settings: Settings) -> None:
    """Check every declared encoder's weights (a file read, no SDK import) in the parent of a
    worker that holds encoders; raise :class:`EncoderUnavailable` naming the first that fails."""
    if settings.semantic_enabled:
        for name, spec in settings.encoders.items():
            check_declared_encoder(name, spec)


def preflight_quality(spec: ResourceSpec) -> None:
    """Load the quality resources ``spec`` requires (raises ResourceUnavailable).

    A word list or language ID that is only on by default is not checked here: its absence is
    one log line per process and an "off" in each result's stats.
    """
    required = spec.required_quality()
    if "required" in (required.word_list, required.language_id):
        build_resources(required)


def preflight_redis(settings: Settings) -> None:
    """Refuse an evicting Redis (broker and store); warn about missing persistence."""
    for name, url in (("broker", settings.broker_url), ("result store", settings.result_url)):
        client = redis_client(url, settings)
        try:
            inspect_redis(client, settings, f"the {name} Redis at {masked_url(url)}")
        except TRANSIENT_ERRORS as exc:
            # Not reachable yet: Celery waits for the broker; the check is skipped, said once.
            logger.warning("could not check the %s Redis at %s (%s); continuing", name, masked_url(url), exc)
        finally:
            client.close()


def check_worker_can_start(settings: Settings) -> None:
    """Every start-up refusal, as ``SystemExit`` with one line (the parent, before forking)."""
    spec = ResourceSpec.from_settings(settings)
    try:
        celery_compat.check_dependencies(settings.accept_untested_deps)
        preflight_redis(settings)
        if spec.encoder == "required":
            preflight_semantic(spec.model_path, spec.encoder_backend)
        preflight_quality(spec)
    except EncoderUnavailable as exc:
        raise SystemExit(f"longparser worker: semantic mode enabled but the model is unavailable: {exc}"
                         ) from None
    except (celery_compat.UntestedDependencies, ResourceUnavailable, UnsafeRedis) as exc:
        raise SystemExit(f"longparser worker: cannot start: {exc}") from None
    try:
        preflight_encoders(settings)
    except EncoderUnavailable as exc:
        raise SystemExit(f"longparser worker: cannot start: {exc}") from None


def encoder_announcer(settings: Settings, store: Any) -> EncoderAnnouncer | None:
    """The announcer of a worker that holds encoders (the pinned model and the declared ones,
    serving the semantic queue); None for a worker that holds none."""
    if not settings.semantic_enabled:
        return None
    return EncoderAnnouncer(store.client, store.prefix, settings.semantic_queue,
                            [PINNED_ENCODER, *settings.encoders])


def preload_tokenizers(settings: Settings) -> dict[str, TokenCounter]:
    """The declared tokenizers (``LONGPARSER_TOKENIZERS``), loaded in the parent before it
    forks its pool, so every child shares them (:func:`loaders.resources.load_tokenizers` of
    the worker's :class:`ResourceSpec`); one that fails to load stops the worker with one line
    (``SystemExit``)."""
    try:
        return load_tokenizers(ResourceSpec.from_settings(settings))
    except ResourceUnavailable as exc:
        raise SystemExit(f"longparser worker: cannot start: {exc} (LONGPARSER_TOKENIZERS)") from None


def stop_worker_from_child(exc: BaseException) -> None:
    """A child that cannot build its context: say why, stop the parent, exit (never serve)."""
    logger.critical("worker process %d cannot build its resources, shutting the worker down: %s",
                    os.getpid(), exc)
    os.kill(os.getppid(), signal.SIGTERM)
    os._exit(1)


def connect(app: Any, settings: Settings) -> None:
    """Connect this module's handlers for ``app`` (its context is set on it) and ``settings``.

    Celery's worker signals carry no app as sender (``worker_init``: the worker,
    ``worker_ready``: its consumer, the others none), so each handler checks that the worker
    belongs to ``app``: through the sender where it has one, else through the process's current
    app (a pool child sets it to its worker's app before ``worker_process_init``). ``app`` holds
    the handlers; they are connected weakly and go with it.
    """

    def ours(sender: Any = None) -> bool:
        owner = getattr(sender, "app", None) if sender is not None else None
        return (owner if owner is not None else celery_compat.current_app()) is app

    def set_log_levels(**_: Any) -> None:
        if ours():
            set_levels(settings.log_level)

    def quiet_connection_loss_notice(sender: Any = None, **_: Any) -> None:
        if ours(sender):
            celery_compat.quiet_connection_loss_notice()

    announcer: EncoderAnnouncer | None = None

    def start_announcing(sender: Any = None, **_: Any) -> None:
        nonlocal announcer
        if ours(sender) and app.context is not None and announcer is None:
            announcer = encoder_announcer(settings, app.context.store)
            if announcer is not None:
                announcer.start()

    def stop_announcing(**_: Any) -> None:
        nonlocal announcer
        if announcer is not None and ours():
            announcer.stop()
            announcer = None

    # The declared tokenizers once the parent loaded them (None: a child loads its own).
    preloaded: dict[str, TokenCounter] | None = None

    def on_worker_init(sender: Any = None, **_: Any) -> None:
        nonlocal preloaded
        if not ours(sender):
            return
        check_worker_can_start(settings)
        preloaded = preload_tokenizers(settings)  # before the pool forks: every child inherits them
        celery_compat.install_json_decoder(celery_compat.fast_json_loads)  # before the fork: inherited
        app.context = parent_context(settings)
        app.pool_readiness = PoolReadiness()  # before the pool forks: the children share it

    def on_process_init(**_: Any) -> None:
        if not ours():
            return
        try:
            app.context = child_context(settings, preloaded)
        except Exception as exc:
            stop_worker_from_child(exc)
        # The child's task bodies validated straight from their JSON (worker/serialization.py).
        serialization.install_task_decoder(inline_body_limit(settings))
        if app.pool_readiness is not None:
            app.pool_readiness.child_ready()

    app.signal_handlers = (set_log_levels, quiet_connection_loss_notice, on_worker_init, on_process_init,
                           start_announcing, stop_announcing)
    after_setup_logger.connect(set_log_levels)
    worker_ready.connect(quiet_connection_loss_notice)
    worker_ready.connect(start_announcing)
    worker_shutdown.connect(stop_announcing)
    worker_init.connect(on_worker_init)
    worker_process_init.connect(on_process_init)
