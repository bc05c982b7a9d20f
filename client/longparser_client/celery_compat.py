"""The Celery and kombu internals the producer side relies on, checked at its first use.

A producer does not run our worker (nor ``worker/celery_compat.py``, which checks the worker's
internals when a worker starts), yet it relies on two things Celery's public API does not offer:

* the result backend's ``decode_result``, with which :mod:`longparser_client.aio` reads a task's
  state from the value Celery stores (the call ``AsyncResult`` makes on it);
* kombu's and Celery's Redis key layout, copied by :mod:`longparser_client.service.keys` (which
  must not import kombu's transport) for queue lengths and the task-state key.

:func:`check_producer` holds each against the installed Celery and kombu the first time a
:class:`~longparser_client.client.Producer` is built, and refuses, in one line naming each
problem, a release where one is missing, has another signature or another value. The worker's
start-up check (``worker/celery_compat.py``) runs the same entries with its own.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from celery.backends import base as celery_backends_base
from kombu.transport import redis as kombu_redis

from longparser_client.service import keys as service_keys


class ProducerIncompatible(RuntimeError):
    """An internal of Celery or kombu the producer relies on is gone or changed."""


@dataclass(frozen=True)
class Internal:
    """One internal: where it lives and what its users pass it.

    ``parameters``: the leading parameter names of a callable (``self`` included for methods);
    ``kind``: the type a non-callable must have; ``instance``: the attribute is set by
    ``owner.__init__``, on each instance or on the object it is made for (found on what the probe
    returns, not on the class); ``copy``: the value a module that must not import the internal
    (:mod:`longparser_client.service.keys`) copies, which the internal must still equal.
    """

    owner: Any
    attribute: str
    parameters: tuple[str, ...] = ()
    kind: type | tuple[type, ...] | None = None
    instance: Callable[[], Any] | None = None
    copy: Any = None

    @property
    def path(self) -> str:
        owner = self.owner
        name = owner.__name__ if inspect.ismodule(owner) else f"{owner.__module__}.{owner.__qualname__}"
        return f"{name}.{self.attribute}"

    def problem(self) -> str | None:
        """Why this internal cannot be used as its users use it, or None.

        A class or module must define the attribute itself: a method kombu's Redis classes stop
        overriding would silently fall back to the generic one.
        """
        if self.instance is not None:
            holder = self.instance()
            present = hasattr(holder, self.attribute)
        else:
            holder = self.owner
            present = self.attribute in vars(holder)
        if not present:
            return f"{self.path} is missing"
        value = getattr(holder, self.attribute)
        if self.kind is not None and not isinstance(value, self.kind):
            return f"{self.path} is a {type(value).__name__}, not {_kind_name(self.kind)}"
        if self.copy is not None and value != self.copy:
            return f"{self.path} is {value!r}, not {self.copy!r} as service/keys.py copies it"
        if self.parameters:
            try:
                names = tuple(inspect.signature(value).parameters)
            except (TypeError, ValueError):
                return f"{self.path} is not callable"
            if names[:len(self.parameters)] != self.parameters:
                return f"{self.path} takes ({', '.join(names)}), not ({', '.join(self.parameters)}, ...)"
        return None


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


PRODUCER_INTERNALS: tuple[Internal, ...] = (
    # kombu's and Celery's key layout, copied by service/keys.py for producers and `longparser
    # metrics` (which must not import kombu's transport)
    Internal(kombu_redis.Channel, "sep", copy=service_keys.KOMBU_PRIORITY_SEPARATOR),
    Internal(kombu_redis, "PRIORITY_STEPS", copy=list(service_keys.KOMBU_PRIORITY_STEPS)),
    Internal(kombu_redis.Channel, "unacked_key", copy=service_keys.KOMBU_UNACKED),
    Internal(kombu_redis.Channel, "keyprefix_queue", copy=service_keys.KOMBU_BINDING_KEY),
    Internal(kombu_redis.Channel, "keyprefix_binding_permanent",
             copy=service_keys.KOMBU_BINDING_PERMANENT_KEY),
    Internal(celery_backends_base.BaseKeyValueStoreBackend, "task_keyprefix",
             copy=service_keys.CELERY_TASK_META),
    # read by decode_backend_result (the asyncio client's task state)
    Internal(celery_backends_base.Backend, "decode_result", ("self", "payload")),
)


def internal_problems(internals: tuple[Internal, ...]) -> list[str]:
    """Each of ``internals`` that is missing, has another signature or another value."""
    problems = []
    for internal in internals:
        try:
            problem = internal.problem()
        except Exception as exc:  # a probe that cannot even be built
            problem = f"{internal.path} cannot be checked ({type(exc).__name__}: {exc})"
        if problem:
            problems.append(problem)
    return problems


@cache
def check_producer() -> None:
    """Refuse, once per process, a Celery or kombu whose internals the producer cannot use.

    Raises:
        ProducerIncompatible: one line naming each problem (install the releases of
            ``constraints.txt``, or the ranges of longparser-client's dependencies).
    """
    problems = internal_problems(PRODUCER_INTERNALS)
    if problems:
        raise ProducerIncompatible("the installed Celery/kombu cannot run the LongParser producer: "
                                   + "; ".join(problems))


def decode_backend_result(backend: Any, meta: bytes) -> dict[str, Any]:
    """A task's state as Celery's result ``backend`` stored it (its serializer and compression,
    exceptions revived): the call ``AsyncResult`` makes on the value once its backend read it."""
    return backend.decode_result(meta)
