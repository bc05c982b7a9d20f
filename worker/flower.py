"""``python -m worker.flower [FLOWER OPTIONS]``: Flower for this fleet, with authentication an
explicit, logged choice and the fleet's queues readable.

Flower reads ``FLOWER_BASIC_AUTH`` (``user:password``, comma-separated for several users)
itself. Passed empty (``--basic-auth="$FLOWER_BASIC_AUTH"`` with the variable unset, or compose
interpolating an unset variable) it rejects every request with 401 and logs nothing. This
launcher removes an empty value and says which mode Flower runs in, then ``exec``s
``python -m celery -A worker.flower flower`` with the same interpreter:

* ``FLOWER_BASIC_AUTH`` set: every page and the API need that login;
* unset or empty: the UI is open to whoever reaches the port, and Flower's HTTP API stays
  refused (it needs auth, or ``FLOWER_UNAUTHENTICATED_API=true``); compose publishes the port
  on the host's loopback only.

``celery -A worker.flower`` finds :data:`app` here: :func:`monitor_app`, the fleet's Celery
configuration on kombu's own Redis transport (see there why not the worker's app).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from celery import Celery
from kombu import Queue

from config.settings import Settings, SettingsError, get_settings
from service.celeryconfig import celery_config
from service.redis_client import SENTINEL_SCHEME, sentinel_hosts

logger = logging.getLogger("worker.flower")

AUTH_VARIABLE = "FLOWER_BASIC_AUTH"
APP_MODULE = __spec__.name if __spec__ else __name__  # "worker.flower", also when run as __main__


def flower_command(environ: Mapping[str, str], args: Sequence[str]) -> tuple[list[str], dict[str, str], str]:
    """``(argv, environment, message)`` for running Flower with ``args``."""
    env = dict(environ)
    argv = [sys.executable, "-m", "celery", "-A", APP_MODULE, "flower", *args]  # this interpreter's Celery
    passed = any(arg.startswith("--basic-auth=") and arg.split("=", 1)[1] for arg in args)
    if passed or env.get(AUTH_VARIABLE, "").strip():
        return argv, env, "Flower requires a login (basic auth): every page and the API"
    env.pop(AUTH_VARIABLE, None)
    argv = [arg for arg in argv if not arg.startswith("--basic-auth")]
    return argv, env, (f"{AUTH_VARIABLE} is not set: Flower runs WITHOUT authentication (its UI is open "
                       "to whoever reaches its port; its HTTP API stays refused); set "
                       f"{AUTH_VARIABLE}=user:password to require a login")


def monitored_queues(settings: Settings) -> list[str]:
    """The queues Flower lists when no worker answers: every queue producers route to, and the
    ones ``LONGPARSER_WORKER_QUEUES`` names (the workers' own ``-Q`` come from the workers)."""
    names = [settings.structural_queue, settings.semantic_queue, *settings.consumed_queues()]
    return list(dict.fromkeys(names))


def monitor_app(settings: Settings) -> Celery:
    """The Celery app Flower runs with: the workers' configuration (broker URL, key prefix,
    transport options, TLS, queues, serializers), with kombu's own Redis transport.

    Flower reads queue lengths itself, with a reader it chooses from the scheme of its app's
    broker URI; the worker app names this project's transport classes (``broker_transport``,
    :mod:`worker.transport`), so its URI is ``worker.transport:Transport://...`` and Flower answers
    404 "'redis' broker is not supported". Those classes change only how a consuming worker
    acknowledges and puts back task messages, and Flower takes none: it receives events and
    control replies and counts list lengths, which kombu's transport does alike. Flower takes
    ``global_keyprefix`` (the celery key prefix), ``master_name`` and the socket timeouts from
    ``broker_transport_options``, and counts each queue's priority lists.
    """
    celery_app = Celery("longparser", set_as_current=True)
    celery_app.conf.update(celery_config(settings))
    celery_app.conf.task_queues = [Queue(name, routing_key=name) for name in monitored_queues(settings)]
    return celery_app


def sentinel_caveat(broker_url: str) -> str | None:
    """What Flower's queue lengths miss behind Sentinel (None for another broker).

    Flower asks the first Sentinel of the broker URL (only that one) for the master and reads
    database 0 whatever the URL says: its Sentinel reader passes no database to redis-py.
    """
    if not broker_url.startswith(SENTINEL_SCHEME):
        return None
    hosts, _, db = sentinel_hosts(broker_url)
    host, port = hosts[0]
    line = f"Flower asks only the first Sentinel listed ({host}:{port}) for the queue lengths"
    if db:
        line += (f", and reads them from database 0, not the broker's database {db}: they will show 0 "
                 "(keep the broker on database 0 to see them)")
    return line


@functools.cache
def _process_app() -> Celery:
    try:
        settings = get_settings()
    except SettingsError as exc:
        raise SystemExit(f"longparser flower: settings (LONGPARSER_* environment / .env): {exc}") from None
    caveat = sentinel_caveat(settings.broker_url)
    if caveat:
        logger.warning("%s", caveat)
    return monitor_app(settings)


def __getattr__(name: str) -> Any:
    # Built on first use (``celery -A worker.flower``), not when the launcher imports this module.
    if name == "app":
        return _process_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(args: Sequence[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    argv, env, message = flower_command(os.environ, sys.argv[1:] if args is None else args)
    (logger.info if env.get(AUTH_VARIABLE) else logger.warning)("%s", message)
    os.execvpe(argv[0], argv, env)


if __name__ == "__main__":
    main()
