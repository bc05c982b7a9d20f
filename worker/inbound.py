"""What the worker parent takes from a queue, and what it refuses before anything is decoded.

Any producer that may ``LPUSH`` on a queue (the documented producer ACL user) writes the whole
message: kombu's envelope, its headers and its body. kombu and Celery honour parts of it in the
worker *parent*, which ``max_memory_per_child`` does not bound and which runs no task: kombu's
``Message`` inflates a body whose ``compression`` header asks for it, Celery decodes every body
in full (its strategy reads it to tell task protocols apart) and schedules by the producer's
``eta``, ``expires``, ``timelimit`` and ``retries`` headers. The rules here (docs/producers.md,
"What a producer may set, and what is refused") run on each message, in this order:

1. the raw message (its bytes as ``BRPOP`` returned them) is at most :func:`envelope_limit` of
   the inline limit, checked before kombu decodes its JSON envelope (:func:`screen_pop_reply`);
2. the envelope is a JSON object with object headers and properties, a task message of Celery's
   protocol 2 (a ``task`` header: protocol 1 carries its schedule in the body), a JSON body
   (``application/json``), no ``compression`` header, and a body no longer than the inline limit
   (:func:`refusal`), checked before kombu builds its message (the worker's remote-control and
   event messages, which come from fanout queues, for their size and encoding only);
3. the scheduling headers a producer may not set are reset to what Celery's own ``send_task``
   sends (:func:`strip_scheduling_headers`), logged once per worker process;
4. the message is routed back, should the worker put it back, to the queue it was taken from
   (:func:`route_back_to`), whatever exchange and routing key its producer wrote;
5. a body Celery then cannot decode (too deeply nested, not JSON, not UTF-8) or unpack (not
   ``[args, kwargs, embed]``) is refused by the worker's consumer before Celery reads it
   (:class:`RefusingConsumer`: the decoded body is kept for Celery, not decoded twice).

A refused message is dropped (nothing of it is decoded further, nothing runs). A body over the
inline limit that names its document id first, as the clients write it, gets that document's
FAILURE record (``PayloadTooLarge``, with its completion event); any other refused message, whose
document id cannot be read, is counted (:func:`count_unreadable`, ``longparser metrics``) and
logged once with its task id. Its task id, when the envelope names one, gets Celery's FAILURE
state (``AsyncResult`` says why). The worker's transport (:mod:`worker.transport`) and consumer
call these; every Celery and kombu internal is reached through :mod:`worker.celery_compat`.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from typing import Any, NamedTuple

from service.keys import is_valid_document_id, unreadable_messages_key
from service.store import failure_record
from worker import celery_compat as compat

logger = logging.getLogger(__name__)

JSON_CONTENT_TYPE = "application/json"
# Room in a raw message for its envelope around the body: headers, properties and JSON escapes.
ENVELOPE_HEADROOM = 256 * 1024
# Celery's send_task sends these empty; a producer's values would override the operator's
# time limits and queues (an eta holds the message in the parent, unbounded).
SCHEDULING_HEADERS: dict[str, Any] = {"eta": None, "expires": None, "timelimit": [None, None], "retries": 0}
# Set by :func:`screen_pop_reply` in place of a raw message too long to decode.
REFUSED_MARKER = "longparser-refused"
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
# The task id of a raw message too long to decode, looked for in its tail, where kombu writes
# the properties (a JSON string's own quotes are escaped, so only the envelope matches).
_TAIL_BYTES = 8192
_TAIL_ID = re.compile(rb'"correlation_id":\s*"([^"\\]{1,128})"')
# The error type of a body over the inline limit: the child refuses one the same way, as
# tasks.errors.PayloadTooLarge (a unit test holds the two names equal).
PAYLOAD_TOO_LARGE = "PayloadTooLarge"
# A body too long to decode still names its document id first when a client of ours wrote it
# (``[[{"document_id": ...``): read from its first characters only.
_HEAD_CHARS = 1024
_LEADING_ID = re.compile(r'\A\s*\[\s*\[\s*\{\s*"document_id"\s*:\s*"([^"\\]{1,256})"')


_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number",
               bool: "boolean", type(None): "null"}


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type (``object``, ``array``, ...)."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


class MessageRefused(Exception):
    """A message the worker parent refused (Celery's FAILURE state of its task id carries it)."""


class Refusal(NamedTuple):
    """Why a message is refused; ``error_type``: the type of the FAILURE record stored when its
    document id can still be read without decoding the body (None: it cannot)."""

    reason: str
    error_type: str | None = None


def envelope_limit(body_limit: int) -> int:
    """The longest raw message decoded at all: twice the body limit (a JSON body inside a JSON
    envelope at most doubles: each quote and backslash is escaped) plus :data:`ENVELOPE_HEADROOM`."""
    return 2 * body_limit + ENVELOPE_HEADROOM


def readable_task_id(value: Any) -> str | None:
    """``value`` when it is a task id fit for a log line and a result key, else None."""
    return value if isinstance(value, str) and _TASK_ID.fullmatch(value) else None


def task_id_of(message: Any) -> str | None:
    """The task id an envelope names (its ``id`` header, else its ``correlation_id``), or None."""
    if not isinstance(message, dict):
        return None
    headers, properties = message.get("headers"), message.get("properties")
    found = readable_task_id(headers.get("id")) if isinstance(headers, dict) else None
    if found is None and isinstance(properties, dict):
        found = readable_task_id(properties.get("correlation_id"))
    return found


def screen_pop_reply(item: Any, limit: int) -> Any:
    """``item`` (a raw message as ``BRPOP`` read it), or, when it is longer than
    ``limit``, a small envelope saying why it is refused (recognised by :func:`refusal`).

    The long message's bytes are dropped here: kombu never decodes its envelope."""
    if not isinstance(item, bytes | str) or len(item) <= limit:
        return item
    tail = item[-_TAIL_BYTES:]
    found = _TAIL_ID.search(tail.encode("utf-8", "replace") if isinstance(tail, str) else tail)
    task_id = readable_task_id(found.group(1).decode("ascii", "replace")) if found else None
    reason = (f"message of {len(item)} bytes, over the {limit}-byte limit of a raw message (twice "
              f"LONGPARSER_MAX_INLINE_BYTES plus {ENVELOPE_HEADROOM} bytes); not decoded")
    return json.dumps({REFUSED_MARKER: reason, "task_id": task_id})


def body_length(body: Any, body_encoding: Any) -> int:
    """The length of the body kombu would build: base64 text decodes to 3/4 of its length; a text
    body is counted in characters (its UTF-8 bytes, which the child checks exactly, are at least
    as many)."""
    if body is None:
        return 0
    if body_encoding == "base64":
        padding = 2 if body.endswith("==") else 1 if body.endswith("=") else 0
        return len(body) // 4 * 3 - padding
    return len(body)


def leading_document_id(body: Any, body_encoding: Any) -> str | None:
    """The document id a task body names first (``[[{"document_id": "..."``, as the clients write
    it), read from the body's first characters without decoding the rest; None otherwise."""
    if not isinstance(body, str):
        return None
    head = body[:_HEAD_CHARS]
    if body_encoding == "base64":
        try:
            head = base64.b64decode(head[:len(head) // 4 * 4]).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            return None
    found = _LEADING_ID.match(head)
    return found.group(1) if found and is_valid_document_id(found.group(1)) else None


def refusal(message: Any, body_limit: int, task_queue: bool = True) -> Refusal | None:
    """Why the worker refuses this envelope (kombu's decoded JSON) before kombu builds a message
    from it, or None. ``task_queue``: it comes from a task queue (not the worker's remote control
    or events), so it must be a Celery protocol 2 task message."""
    if not isinstance(message, dict):
        return Refusal(f"the message is a JSON {json_type(message)}, not kombu's envelope (an object)")
    if REFUSED_MARKER in message:
        return Refusal(str(message[REFUSED_MARKER]))
    headers, properties = message.get("headers"), message.get("properties")
    if not isinstance(headers, dict) or not isinstance(properties, dict) \
            or not isinstance(properties.get("delivery_info", {}), dict) or "delivery_tag" not in properties:
        return Refusal("the envelope's headers or properties are not what kombu writes (objects, with a "
                       "delivery tag)")
    if task_queue and not isinstance(headers.get("task"), str):
        # Celery's protocol 1 carries eta, expires and time limits in the body, out of reach of
        # the checks below; every Celery release since 4.0 and celery-node send protocol 2.
        return Refusal("no task header: workers take Celery task messages of protocol 2 only "
                       "(headers.task and headers.id)")
    if headers.get("compression"):
        return Refusal(f"compressed body (header compression: {str(headers['compression'])[:60]!r}): "
                       "workers never inflate a body; send the request as plain JSON, or by reference")
    content_type = message.get("content-type")
    if content_type != JSON_CONTENT_TYPE:
        return Refusal(f"content type {str(content_type)[:60]!r}: workers accept {JSON_CONTENT_TYPE} only")
    body = message.get("body")
    if body is not None and not isinstance(body, str):
        return Refusal(f"the body is a JSON {json_type(body)}, not the encoded text kombu writes")
    size = body_length(body, properties.get("body_encoding"))
    if size > body_limit:
        return Refusal(f"payload is a body of {size} bytes, over the {body_limit}-byte inline limit "
                       "(LONGPARSER_MAX_INLINE_BYTES), refused before it was decoded; send it by reference",
                       PAYLOAD_TOO_LARGE)
    return None


def strip_scheduling_headers(headers: dict[str, Any]) -> list[str]:
    """Set the scheduling headers to what Celery's ``send_task`` sends; the names of those a
    producer had set to something else.

    Set even when absent: Celery reads a body that is a JSON object with ``args`` as a "hybrid"
    message and takes its schedule from the body, unless the headers name one.
    """
    changed = [name for name, empty in SCHEDULING_HEADERS.items()
               if headers.get(name) not in (empty, None, [])]
    for name, empty in SCHEDULING_HEADERS.items():
        headers[name] = list(empty) if isinstance(empty, list) else empty
    return changed


def route_back_to(message: dict[str, Any], queue: str) -> None:
    """Make a put-back of ``message`` go to ``queue`` (the queue it was taken from).

    kombu puts a held message back on the queues its exchange and routing key lead to, and both
    are the producer's (``delivery_info``): a routing key naming any other key would have the
    worker write there. With the default exchange, the routing key is the queue itself.
    """
    info = message["properties"].setdefault("delivery_info", {})
    info["exchange"], info["routing_key"] = "", queue


class _Once:
    """One warning per worker process for the producer's scheduling headers."""

    warned = False


def admit(message: Any, queue: str, body_limit: int, task_queue: bool = True) -> bool:
    """The transport's check of one envelope taken from ``queue`` (see the module doc): False
    when it is refused (recorded here; the caller drops it), else True, the envelope made safe.
    ``task_queue``: ``queue`` is one of the worker's task queues (the worker's remote-control
    and event messages are checked for their size and encoding only)."""
    refused = refusal(message, body_limit, task_queue)
    if refused is not None:
        task_id = message.get("task_id") if isinstance(message, dict) and REFUSED_MARKER in message \
            else task_id_of(message)
        document_id = None
        if refused.error_type is not None:  # the envelope is kombu's: its body may name its document
            document_id = leading_document_id(message.get("body"), message["properties"].get("body_encoding"))
        refuse(readable_task_id(task_id), queue, refused, document_id)
        return False
    if not task_queue:
        return True
    changed = strip_scheduling_headers(message["headers"])
    if changed and not _Once.warned:
        _Once.warned = True
        logger.warning("task %s: the producer set %s; workers ignore a producer's %s (the operator's time "
                       "limits and queues hold): logged once per worker process", task_id_of(message),
                       ", ".join(changed), ", ".join(SCHEDULING_HEADERS))
    route_back_to(message, queue)
    return True


# --------------------------------------------------------------------------- recording a refusal


def count_unreadable(store: Any) -> None:
    """Count one message whose document id could not be read (``longparser metrics``), best
    effort: a count that cannot be written is said in the log, never raised."""
    try:
        store.client.incr(unreadable_messages_key(store.prefix))
    except Exception as exc:
        logger.warning("could not count an unreadable message (%s: %s)", type(exc).__name__, exc)


def store_refusal(store: Any, document_id: str, task_id: str | None, refused: Refusal) -> bool:
    """The FAILURE record (and its completion event) of a refused message whose document id
    could be read; False when it could not be stored (said in the log)."""
    error_type = refused.error_type or MessageRefused.__name__
    record = failure_record(document_id, task_id, error_type, refused.reason)
    try:
        store.save_record(record)
    except Exception as exc:
        logger.warning("document %s: the FAILURE record of refused task %s was not stored (%s: %s)",
                       document_id, task_id, type(exc).__name__, exc)
        return False
    return True


def refuse(task_id: str | None, queue: str, refused: Refusal, document_id: str | None = None) -> None:
    """Record a message refused in the worker parent: its FAILURE record when its document id
    could be read, else one log line and the count; and Celery's FAILURE state of its task id
    (when it names one)."""
    app = compat.current_app()
    context = getattr(app, "context", None)  # the worker app's own attribute (None before worker_init)
    if document_id is not None and context is not None \
            and store_refusal(context.store, document_id, task_id, refused):
        logger.info("document %s refused (task %s): %s: %s", document_id, task_id, refused.error_type,
                    refused.reason)
    else:
        logger.warning("task %s from queue %s refused before its document id could be read: %s (counted in "
                       "longparser_unreadable_messages_total)", task_id or "(no readable task id)", queue,
                       refused.reason)
        if context is not None:
            count_unreadable(context.store)
    if task_id is not None:
        try:
            app.backend.mark_as_failure(task_id, MessageRefused(refused.reason))
        except Exception as exc:
            logger.warning("task %s: its FAILURE state was not stored (%s: %s)", task_id, type(exc).__name__,
                           exc)


def task_body_problem(message: Any) -> str | None:
    """Why the body of a task message (kombu's, decoded here once: Celery reads the same decoded
    value after) is not Celery's protocol 2 ``[args, kwargs, embed]``, or None.

    Celery unpacks it in the parent without a check of its own: a body like ``[1]`` raised out
    of its consumer and stopped the worker ("Unrecoverable error"); a JSON object with ``args``
    is read as a "hybrid" message whose schedule comes from the body.
    """
    try:
        body = message.payload
    except Exception as exc:
        return f"the body cannot be decoded ({type(exc).__name__}: {str(exc)[:200]})"
    if not (isinstance(body, list) and len(body) == 3 and isinstance(body[0], list)
            and isinstance(body[1], dict) and isinstance(body[2], dict)):
        shape = f"{json_type(body)} of {len(body)}" if isinstance(body, list) else json_type(body)
        return (f"the body is a JSON {shape}, not Celery's [args, kwargs, embed] (an array, an object, "
                "an object)")
    return None


def refuse_message(message: Any, reason: str) -> None:
    """Refuse a message kombu built (:func:`refuse`) and acknowledge it: nothing of it runs."""
    headers = message.headers if isinstance(message.headers, dict) else {}
    queue = (message.delivery_info or {}).get("routing_key") or "?"
    refuse(readable_task_id(headers.get("id")), str(queue), Refusal(reason))
    message.ack()


class RefusingConsumer(compat.CeleryConsumer):
    """Celery's worker consumer, refusing a task body it cannot decode or unpack as any other
    refusal (selected by the documented ``worker_consumer`` setting).

    Celery's own ``on_decode_error`` logs the whole message at CRITICAL and acknowledges it: no
    count, no state for its task id; a body it can decode but not unpack stops the worker.
    """

    def create_task_handler(self, *args: Any, **kwargs: Any) -> Any:
        handle = super().create_task_handler(*args, **kwargs)

        def on_task_received(message: Any) -> Any:
            problem = task_body_problem(message)
            if problem is not None:
                return refuse_message(message, problem)
            return handle(message)

        return on_task_received

    def on_decode_error(self, message: Any, exc: BaseException) -> None:
        refuse_message(message, f"the body cannot be decoded ({type(exc).__name__}: {str(exc)[:200]})")
