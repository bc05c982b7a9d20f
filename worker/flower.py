"""``python -m worker.flower [FLOWER OPTIONS]``: Flower for this fleet, with authentication an
explicit, logged choice.

Flower reads ``FLOWER_BASIC_AUTH`` (``user:password``, comma-separated for several users)
itself. Passed empty (``--basic-auth="$FLOWER_BASIC_AUTH"`` with the variable unset, or compose
interpolating an unset variable) it rejects every request with 401 and logs nothing. This
launcher removes an empty value and says which mode Flower runs in, then ``exec``s
``python -m celery -A worker flower`` with the same interpreter:

* ``FLOWER_BASIC_AUTH`` set: every page and the API need that login;
* unset or empty: the UI is open to whoever reaches the port, and Flower's HTTP API stays
  refused (it needs auth, or ``FLOWER_UNAUTHENTICATED_API=true``); compose publishes the port
  on the host's loopback only.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence

logger = logging.getLogger("worker.flower")

AUTH_VARIABLE = "FLOWER_BASIC_AUTH"


def flower_command(environ: Mapping[str, str], args: Sequence[str]) -> tuple[list[str], dict[str, str], str]:
    """``(argv, environment, message)`` for running Flower with ``args``."""
    env = dict(environ)
    argv = [sys.executable, "-m", "celery", "-A", "worker", "flower", *args]  # this interpreter's Celery
    passed = any(arg.startswith("--basic-auth=") and arg.split("=", 1)[1] for arg in args)
    if passed or env.get(AUTH_VARIABLE, "").strip():
        return argv, env, "Flower requires a login (basic auth): every page and the API"
    env.pop(AUTH_VARIABLE, None)
    argv = [arg for arg in argv if not arg.startswith("--basic-auth")]
    return argv, env, (f"{AUTH_VARIABLE} is not set: Flower runs WITHOUT authentication (its UI is open "
                       "to whoever reaches its port; its HTTP API stays refused); set "
                       f"{AUTH_VARIABLE}=user:password to require a login")


def main(args: Sequence[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    argv, env, message = flower_command(os.environ, sys.argv[1:] if args is None else args)
    (logger.info if env.get(AUTH_VARIABLE) else logger.warning)("%s", message)
    os.execvpe(argv[0], argv, env)


if __name__ == "__main__":
    main()
