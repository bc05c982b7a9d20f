"""Every Redis key format of the service, in one module (Celery's own keys aside).

Importable without Celery, redis or torch: the producer client, the tasks and the tests all
build keys here, so a key format can never drift between writer and reader.

Keys (``P`` = ``LONGPARSER_KEY_PREFIX``):

* ``P:result:<document_id>`` - the stored outcome of a document (JSON record, see
  :mod:`service.store`), written once per task run with one ``SET ... EX``;
* ``P:job:<document_id>`` - the latest submission of a document (task id, queue), written by
  the client before it sends the task;
* ``P:payload:<document_id>:<sha256>`` - the bytes of a request sent by reference (zlib of its
  JSON; ``sha256`` is the hex digest of the uncompressed JSON), written by the producer before
  it publishes, deleted by the worker once the document's record is stored
  (:mod:`service.payloads`).
* ``P:chunkids:<document_id>`` - the task id and chunk ids of the document's latest SUCCESS
  record, written with it (the next run's diff is computed against it, see :mod:`service.store`);
* ``P:starts:<task_id>`` - how many times a pool child started the task without storing a
  record (a message whose run kills its process), raised at each start and deleted in the write
  that stores the record (:mod:`service.store`), with the results' TTL;
* ``P:events`` - the completion stream: one entry per stored record (see :mod:`service.events`).
* ``P:encoders`` - the encoders live workers hold, a hash (field: the worker's node name, value:
  JSON ``{"queue", "encoders", "expires"}``) each worker parent rewrites every few seconds, with
  a time-to-live on the key (:mod:`service.encoders`); ``submit`` reads it to refuse ``embed``
  that no live worker can serve.
* ``P:unreadable`` - how many messages workers refused before their document id could be read
  (no record can name them; ``longparser metrics``), an integer raised by ``INCR``.

Celery's own keys (queue lists named after the queues, ``unacked``, ``unacked_index``,
``_kombu.binding.*``, ``celery-task-meta-<task_id>``) carry ``LONGPARSER_CELERY_KEY_PREFIX``
when it is set (kombu/celery ``global_keyprefix``). A queue's waiting messages are the Redis
lists of :func:`queue_list_keys`, the messages workers hold (delivered, not yet acknowledged)
the hash :func:`unacked_key`: what an autoscaler or the ``longparser metrics`` gauge reads.
"""

from __future__ import annotations

import hashlib
import re

from longparser_client.schemas.requests import DOCUMENT_ID_PATTERN

TASK_NAME = "longparser.chunk_document"
RESULT_KIND = "result"
JOB_KIND = "job"
PAYLOAD_KIND = "payload"
CHUNK_IDS_KIND = "chunkids"
STARTS_KIND = "starts"
EVENTS_SUFFIX = "events"
# Celery's result-backend key prefix (KeyValueStoreBackend.task_keyprefix, held equal as below).
CELERY_TASK_META = "celery-task-meta-"

# fullmatch, never match: in Python's re "$" also matches before a final newline, and an id or
# digest ending in one would make a key (and a log line) with a newline in it
_DOCUMENT_ID = re.compile(DOCUMENT_ID_PATTERN)
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
# Task ids as Celery makes them (UUIDs) and any other id in this alphabet name their key as they are.
_PLAIN_TASK_ID = re.compile(r"[A-Za-z0-9._@-]{1,200}")


def _is_whole_match(pattern: re.Pattern[str], value: object) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def is_valid_document_id(document_id: object) -> bool:
    """True when ``document_id`` may become part of a key (the schema's safe alphabet)."""
    return _is_whole_match(_DOCUMENT_ID, document_id)


def is_sha256_hex(digest: object) -> bool:
    """True when ``digest`` is a lower-case hex SHA-256 (the only digest a payload key carries)."""
    return _is_whole_match(_SHA256_HEX, digest)


def _key_part(pattern: re.Pattern[str], what: str, value: str) -> str:
    """``value``, which must match ``pattern`` whole to become part of a key (ValueError naming
    ``what`` otherwise): ids and digests outside their alphabet never reach a key (no ':' games,
    no spaces)."""
    if not _is_whole_match(pattern, value):
        raise ValueError(f"invalid {what} for a key: {value!r}")
    return value


def _key(prefix: str, kind: str, document_id: str) -> str:
    return f"{prefix}:{kind}:{_key_part(_DOCUMENT_ID, 'document id', document_id)}"


def result_key(prefix: str, document_id: str) -> str:
    """Key of a document's stored outcome."""
    return _key(prefix, RESULT_KIND, document_id)


def job_key(prefix: str, document_id: str) -> str:
    """Key of a document's latest submission record."""
    return _key(prefix, JOB_KIND, document_id)


def chunk_ids_key(prefix: str, document_id: str) -> str:
    """Key of the task id and chunk ids of a document's latest SUCCESS record."""
    return _key(prefix, CHUNK_IDS_KIND, document_id)


def payload_key(prefix: str, document_id: str, digest: str) -> str:
    """Key of a request's bytes sent by reference (``digest``: hex SHA-256 of its JSON)."""
    digest = _key_part(_SHA256_HEX, "request digest", digest)
    return f"{_key(prefix, PAYLOAD_KIND, document_id)}:{digest}"


def start_count_key(prefix: str, task_id: str) -> str:
    """Key of the count of a task's starts without a stored record (poison messages).

    The task id comes from the message's headers, which a producer writes: one outside the plain
    alphabet (a ``:``, a newline, 10 KB of text) is keyed by its SHA-256 instead, so it can
    neither reach another key nor make a large one.
    """
    if _PLAIN_TASK_ID.fullmatch(task_id):
        return f"{prefix}:{STARTS_KIND}:{task_id}"
    digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{prefix}:{STARTS_KIND}:sha256-{digest}"


def events_key(prefix: str) -> str:
    """Key of the completion-event stream."""
    return f"{prefix}:{EVENTS_SUFFIX}"


ENCODERS_SUFFIX = "encoders"


def encoders_key(prefix: str) -> str:
    """Key of the hash of encoders that live workers announce (:mod:`service.encoders`)."""
    return f"{prefix}:{ENCODERS_SUFFIX}"


UNREADABLE_SUFFIX = "unreadable"


def unreadable_messages_key(prefix: str) -> str:
    """Key of the count of messages refused before their document id could be read."""
    return f"{prefix}:{UNREADABLE_SUFFIX}"


def celery_task_meta_key(celery_key_prefix: str, task_id: str) -> str:
    """Key of Celery's Redis result backend state of a task (what ``AsyncResult`` reads)."""
    return f"{celery_key_prefix}{CELERY_TASK_META}{task_id}"


def kombu_queue_keys(celery_key_prefix: str, queue: str) -> tuple[str, ...]:
    """Keys kombu's Redis transport creates for one queue (the demo deletes its private queue's).

    The list holding the messages, and the exchange-binding sets (Celery declares a direct
    exchange named like the queue).
    """
    return tuple(
        celery_key_prefix + key
        for key in (queue, KOMBU_BINDING_KEY % queue, KOMBU_BINDING_PERMANENT_KEY % queue)
    )


# kombu's Redis key layout, copied so that producers and `longparser metrics` need neither
# kombu's transport nor the worker: a worker refuses to start when kombu's differs (the start-up
# check of worker/celery_compat.py, which names each; tests/unit/test_celery_compat.py too).
# A message sent with a priority above 0 waits in a list of its own, named
# ``<queue>\x06\x16<step>`` (Channel.sep, PRIORITY_STEPS); LongParser's producer sends
# priority 0: everything waits in the queue's own list.
KOMBU_PRIORITY_SEPARATOR = "\x06\x16"
KOMBU_PRIORITY_STEPS = (0, 3, 6, 9)
KOMBU_UNACKED = "unacked"
# The exchange-binding sets (Channel.keyprefix_queue, keyprefix_binding_permanent).
KOMBU_BINDING_KEY = "_kombu.binding.%s"
KOMBU_BINDING_PERMANENT_KEY = "_kombu.binding_permanent.%s"


def queue_list_keys(celery_key_prefix: str, queue: str) -> tuple[str, ...]:
    """The Redis lists holding a queue's waiting messages: the queue's own list first (the one
    that holds everything sent without a priority), then kombu's priority sub-lists."""
    own = celery_key_prefix + queue
    return (own, *(f"{own}{KOMBU_PRIORITY_SEPARATOR}{step}" for step in KOMBU_PRIORITY_STEPS if step))


def unacked_key(celery_key_prefix: str) -> str:
    """The hash of messages delivered to workers and not yet acknowledged (every queue's)."""
    return celery_key_prefix + KOMBU_UNACKED
