"""The hand-off of a task body from the worker parent to its pool child, made cheaper.

What a chunking task's body costs on its way through a prefork worker (Celery 5.x, kombu's JSON):

* the parent decodes the body in full (``Message.payload``: Celery's strategy reads it to tell
  task protocols apart) and keeps the decoded arguments in the request it sends to the pool
  child; billiard pickles that request *and* the raw body into the pipe, and the child unpickles
  both, though it decodes the body again and uses only that (``celery.app.trace.fast_trace_task``
  replaces the request's ``args``/``kwargs`` with the body's);
* the child then decodes the body to Python dicts and lists, the task encoded the request again
  to check its size, and validated the dicts into a ChunkRequest.

Two changes, both invisible on the wire (any producer's plain JSON request is served as before):

* :func:`worker.celery_compat.drop_decoded_arguments` (called by the task's request class,
  tasks/chunk.py): the request sent to the child no longer carries the decoded arguments (the
  parent keeps them on its own request object for its failure paths);
* :func:`install_task_decoder`: in a pool child, a chunking task's body is validated straight
  from its JSON text into a ChunkRequest in one pass (pydantic), and the body's length, an upper
  bound of the request's JSON size, stands for the size check. Any body that is not exactly a
  valid inline request of at most the inline limit (a reference message, an unknown member, an
  invalid or oversized request, another task's body) is decoded as before, so the task's own
  checks name the problem as they always did.

Every Celery and kombu behaviour relied on here is reached through :mod:`worker.celery_compat`
(checked at worker start); ``tests/unit/test_serialization.py`` holds what it does against the
installed versions.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from schemas import ChunkRequest
from worker import celery_compat


class InlineRequest(ChunkRequest):
    """A ChunkRequest as a message carries it inline, validated from the body's JSON.

    ``extra="forbid"``: a body with any other member (a reference message, a field this version
    does not know) leaves this fast path and is decoded and checked by the task as before, where
    unknown members are ignored or a reference is followed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


# Celery's task protocol 2 body: [args, kwargs, embed]; a chunking task has one positional
# argument and no keyword argument.
_TASK_BODY = TypeAdapter(tuple[tuple[InlineRequest], Annotated[dict[str, Any], Field(max_length=0)],
                               dict[str, Any]])


def decode_task_body(data: str | bytes | bytearray | memoryview, limit: int) -> Any:
    """A JSON body, decoded; an inline chunking request comes out validated (an InlineRequest).

    ``limit``: the inline request limit; a longer body is decoded as plain JSON, so the task
    checks its exact size and refuses it in the usual words.
    """
    if isinstance(data, memoryview | bytearray):
        data = bytes(data)
    if len(data) <= limit and data[:2] in ("[[", b"[["):
        try:
            args, kwargs, embed = _TASK_BODY.validate_json(data)
        except ValidationError:
            pass
        else:
            return [list(args), kwargs, embed]
    return celery_compat.fast_json_loads(data)


def install_task_decoder(limit: int) -> None:
    """Decode ``application/json`` with :func:`decode_task_body` in this process (a pool child).

    The child's only decode of a task body (``celery.app.trace.fast_trace_task``) goes through
    kombu's codec registry (:func:`worker.celery_compat.install_json_decoder`); the parent,
    which forked this child, keeps :func:`worker.celery_compat.fast_json_loads`.
    """
    celery_compat.install_json_decoder(partial(decode_task_body, limit=limit))
