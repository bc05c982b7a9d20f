"""Every use of a Celery, kombu or redis-py internal, in one module, checked when a worker starts.

The fleet's guarantees (docs/operations.md: nothing lost when Redis restarts, goes away or a
worker is stopped) rest on behaviours of kombu's Redis transport and Celery's worker that their
public API does not offer. Each is reached here through one accessor whose comment names the
upstream issue, or the upstream behaviour, it works around; :mod:`worker.transport`,
:mod:`worker.restore`, :mod:`worker.lease`, :mod:`worker.inbound`, :mod:`worker.readiness`,
:mod:`worker.serialization`, :mod:`worker.signals` and :mod:`tasks.chunk` use only these; what a
module that must not import this one copies (service/keys.py's key layout, for producers) is held
equal to the upstream value by the same check. The producer side's own internals (that layout,
the result backend's ``decode_result``) are listed in ``longparser_client/celery_compat.py``,
which producers check at first use; the worker's check runs them with its own.

Two checks keep an upgrade from switching a guarantee off without an error:

* at worker start (``worker_init``, before forking) :func:`check_dependencies` refuses, in one
  line, a Celery, kombu or redis-py outside the ranges the fault suite proved (the ``worker``
  extra of pyproject.toml, read from the installed package's metadata) and any internal below
  that is missing or has another signature; ``LONGPARSER_ACCEPT_UNTESTED_DEPS=true`` turns the
  refusal into one warning line;
* what the internals *do* is held by the contract test (tests/integration/test_kombu_contract.py),
  against the real transport and a real redis-server, in ``make test``.

Upgrading Celery, kombu or redis-py is a deliberate change: ``make constraints``, widen the
ranges in pyproject.toml, run ``make test test-faults`` (docs/operations.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, MutableMapping
from contextlib import contextmanager
from functools import cached_property
from importlib import metadata
from types import SimpleNamespace
from typing import Any, NamedTuple

from celery import current_app as celery_current_app
from celery.app import trace as celery_trace
from celery.concurrency import prefork as celery_prefork
from celery.exceptions import CPendingDeprecationWarning
from celery.worker import components as celery_components
from celery.worker import request as celery_request
from celery.worker import state as celery_state
from celery.worker.consumer import consumer as celery_consumer
from celery.worker.consumer import tasks as celery_consumer_tasks
from kombu.serialization import registry
from kombu.transport import base as kombu_base
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual
from kombu.utils import json as kombu_json
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from longparser_client.celery_compat import PRODUCER_INTERNALS, Internal
from longparser_client.celery_compat import internal_problems as check_internals

logger = logging.getLogger(__name__)

DISTRIBUTION = "longparser-worker"
EXTRA = "worker"
# The distributions whose internals this module reaches into (redis-py: through kombu's transport).
PINNED = ("celery", "kombu", "redis")
ACCEPT_ENV = "LONGPARSER_ACCEPT_UNTESTED_DEPS"

# The classes the worker's transport extends (worker/transport.py). Only Transport and Channel
# are kombu's documented extension points (``broker_transport`` takes a class path); QoS is the
# transport's ack emulation, undocumented: every method of it we override is checked below.
RedisQoS = kombu_redis.QoS
RedisChannel = kombu_redis.Channel
RedisTransport = kombu_redis.Transport
RedisSentinelChannel = kombu_redis.SentinelChannel
RedisSentinelTransport = kombu_redis.SentinelTransport


class RawMessage(NamedTuple):
    """A message as the transport stores it: wire payload, exchange and routing key."""

    payload: dict[str, Any]
    exchange: str
    routing_key: str


# --------------------------------------------------------------------------- kombu: ack emulation
#
# kombu emulates acknowledgements on Redis (kombu.transport.redis.QoS): a delivered message waits
# in the ``unacked`` hash (indexed by delivery time in ``unacked_index``) until it is
# acknowledged; the channel's QoS remembers, in memory, what it delivered (``_delivered``) and
# what was acknowledged since (``_dirty``). When a channel closes because Redis is gone, kombu's
# restore of those messages fails, and nothing puts them back before the visibility timeout
# (an hour): restore on reconnect was asked for upstream and closed undone (celery/celery#1307).


def held_tags(qos: Any) -> list[Any]:
    """Delivery tags ``qos`` holds: delivered, neither acknowledged nor rejected.

    Reads kombu's ``virtual.QoS._delivered`` and ``._dirty`` (no public view of what a channel
    holds; celery/celery#1307). Raises AttributeError if either is gone: a silent ``[]`` would
    switch restore-on-reconnect off.
    """
    delivered, dirty = qos._delivered, qos._dirty
    return [tag for tag in list(delivered) if tag not in dirty]


def forget_delivery(qos: Any, tag: Any) -> None:
    """Drop ``tag`` from what ``qos`` holds, once this worker put the message back itself.

    kombu has no public call for one tag: its ``restore_unacked`` clears ``_delivered`` whole
    after restoring all (celery/celery#1307).
    """
    qos._delivered.pop(tag, None)


def record_in_memory(qos: Any, message: Any, tag: Any) -> None:
    """Remember a delivered message in ``qos`` without writing its ``unacked`` entry.

    kombu's Redis ``QoS.append`` writes the entry first and remembers the message only if the
    write succeeds; a message BRPOP took off its queue just before the connection dropped is
    then held nowhere (lost: celery/kombu#305, celery/celery#1392 ask for an atomic move). This
    calls the generic ``virtual.QoS.append`` past the Redis one.
    """
    virtual.QoS.append(qos, message, tag)


def forget_acknowledged(qos: Any, tag: Any) -> None:
    """Mark ``tag`` acknowledged in memory only (``virtual.QoS.ack`` past the Redis one).

    kombu's Redis ``QoS.ack`` deletes the ``unacked`` entry through the channel's own
    connection; after a reconnect that channel is closed and the task's acknowledgement fails,
    so the task runs twice (celery/celery#4671). The caller deletes the entry through the live
    channel (:func:`remove_unacked_entry`), then forgets the tag here.
    """
    virtual.QoS.ack(qos, tag)


def raw_message(message: Any) -> RawMessage:
    """The wire payload of a kombu message with its exchange and routing key.

    kombu keeps the payload only as ``Message._raw`` (its own ``QoS.append`` writes that into
    the ``unacked`` hash); a message whose entry could not be written is kept in memory the
    same way (celery/kombu#305).
    """
    delivery = message.delivery_info
    return RawMessage(message._raw, delivery["exchange"], delivery["routing_key"])


def remove_unacked_entry(qos: Any, tag: Any) -> None:
    """Delete ``tag``'s ``unacked`` entry and index through ``qos``'s channel (an ack's Redis part).

    ``QoS._remove_from_indices`` is the only call that does it for another channel's message
    (celery/celery#4671: acknowledgements after a reconnect).
    """
    qos._remove_from_indices(tag).execute()


def restore_from_unacked(qos: Any, tag: Any, *, leftmost: bool = False) -> None:
    """Move ``tag``'s message from the ``unacked`` hash back to its queue (a no-op once acked).

    ``QoS.restore_by_tag`` is kombu's own atomic move (WATCH on the hash), used by its
    ``restore_visible``; there is no public call for one tag (celery/celery#1307).
    """
    qos.restore_by_tag(tag, leftmost=leftmost)


def push_raw_message(channel: Any, message: RawMessage) -> None:
    """Put a raw message back in its queue through ``channel`` (one pipeline).

    ``Channel._do_restore_message`` is how kombu routes a stored payload (exchange and routing
    key to queue lists, priority, the ``redelivered`` flag); called by keyword, so a reordered
    signature fails loudly instead of pushing to the wrong key (celery/kombu#305).
    """
    with channel.conn_or_acquire() as client:
        pipe = client.pipeline()
        channel._do_restore_message(payload=message.payload, exchange=message.exchange,
                                    routing_key=message.routing_key, pipe=pipe)
        pipe.execute()


def is_detached(qos: Any) -> bool:
    """True when ``qos``'s channel was closed, or its connection was (after an error).

    kombu sets ``Channel.connection`` (the transport) to None when the channel closes
    (``virtual.Transport.close_channel``) and the transport's ``client`` to None when the
    connection closes; an old channel has no other "closed" flag that survives both.
    """
    transport = qos.channel.connection
    return transport is None or transport.client is None


# --------------------------------------------------------------------------- kombu: leases, fencing
#
# kombu's ``unacked_index`` scores each held message with the time it was delivered, and its
# ``QoS.restore_visible`` sweep (every worker, periodically) puts back the messages whose score
# is older than the visibility timeout, whoever holds them: a message is handed on after the
# visibility timeout even when its holder is alive and still running its task. Renewed scores
# turn that into a lease (worker/lease.py). A message kombu puts back keeps its delivery tag,
# so the old holder's late acknowledgement (an ``HDEL`` of that tag) deletes the entry of the
# worker that received it since: if that one then dies, its message is gone. Upstream, the
# hand-on of messages a live worker still runs is celery/celery#5935 and celery/kombu#337 (both
# open: the score is the delivery time and nothing renews it); kombu has no fencing.


def lease_key(qos: Any) -> str:
    """The Redis key of ``qos``'s ``unacked_index``, with kombu's global key prefix.

    ``unacked_index_key`` and ``global_keyprefix`` are transport options (documented); kombu's
    own clients add the prefix themselves, a plain redis-py client needs the whole key.
    """
    channel = qos.channel
    return f"{channel.global_keyprefix or ''}{channel.unacked_index_key}"


def renew_leases(client: Any, key: str, tags: Iterable[Any], now: float) -> int:
    """Renew the lease of every message in ``tags``: score = ``now`` in the ``unacked_index``.

    ``ZADD ... XX`` changes only entries that exist: a message already put back (by the sweep of
    another worker, or acknowledged meanwhile) gets no entry back. One command for all tags.
    Returns how many were renewed (``CH``: a score that changed).
    """
    scores = {tag: now for tag in tags}
    if not scores:
        return 0
    return int(client.zadd(key, scores, xx=True, ch=True))


def with_fresh_delivery_tag(channel: Any, payload: Any) -> Any:
    """``payload`` (a message as the transport stores it) with a new delivery tag.

    kombu makes a delivery tag when a message is published (``Channel._next_delivery_tag`` in
    ``_inplace_augment_message``, stored in ``properties``) and reuses it when the message is put
    back. A fresh one fences the old holder off: its late acknowledgement deletes a tag nobody
    holds any more. The payload's ``properties`` are copied, not changed in place.
    """
    if not isinstance(payload, dict) or not isinstance(payload.get("properties"), dict):
        return payload
    return {**payload, "properties": {**payload["properties"], "delivery_tag": channel._next_delivery_tag()}}


class FreshTagOnRestore:
    """Channel mixin: every message this channel puts back in its queue gets a new delivery tag.

    Every way kombu's Redis transport puts a message back (``QoS.restore_by_tag``: the periodic
    sweep, a reject with requeue, the restore at close; ``Channel._restore``; and
    :func:`push_raw_message`) goes through ``Channel._do_restore_message``, which kombu calls
    with positional arguments; the override keeps its signature.
    """

    def _do_restore_message(self, payload: Any, exchange: Any, routing_key: Any, pipe: Any,
                            leftmost: bool = False) -> Any:
        return super()._do_restore_message(  # type: ignore[misc]
            with_fresh_delivery_tag(self, payload), exchange, routing_key, pipe, leftmost)


class ReusedClient:
    """Channel mixin: one ``redis.Redis`` per channel instead of one per command.

    kombu's Redis ``Channel.conn_or_acquire()`` yields a new ``self._create_client()`` for every
    command outside a pipeline it is given (the unacked entry, the ack, each task event), and
    building a client copies redis-py's table of response callbacks: a real cost several times
    per task in the worker parent. No upstream issue asks for a shared client; this builds one
    per channel, on the channel's own pool, with kombu's own ``_create_client``.
    """

    @cached_property
    def _reused_client(self) -> Any:
        return self._create_client()  # type: ignore[attr-defined]

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        yield client if client else self._reused_client


# --------------------------------------------------------------------------- kombu: what a worker takes in
#
# kombu's Redis transport decodes each message's JSON envelope as soon as ``BRPOP`` returns it
# (``Channel._brpop_read``), hands it to ``Transport._deliver`` with the queue it came from, and
# builds a ``Message`` that inflates a body with a ``compression`` header; Celery then decodes the
# body in the worker parent. No public hook sees a message before any of that: the transport's
# redis-py clients get a response callback for ``BRPOP``, the only way a consuming worker takes
# a message (redis-py's public ``set_response_callback``), and the worker's Transport classes
# override ``_deliver`` (worker/inbound.py says what is refused there).


def screen_pops(client: Any, screen: Callable[[Any], Any]) -> None:
    """Have ``client`` pass the message of every ``BRPOP`` reply (``[queue key, message]``)
    through ``screen`` before kombu's ``_brpop_read`` decodes it; redis-py's own callback for
    ``BRPOP``, if any, then runs on the screened reply."""
    previous = client.response_callbacks.get("BRPOP")

    def callback(response: Any, **options: Any) -> Any:
        if response:
            response = [response[0], screen(response[1])]
        return previous(response, **options) if previous is not None else response

    client.set_response_callback("BRPOP", callback)


def transport_option(transport: Any, name: str) -> Any:
    """A ``broker_transport_options`` entry as the transport's connection holds it, or None.

    kombu keeps every transport option on its ``Connection`` (``transport_options``, public);
    the channels copy only the ones they know.
    """
    return transport.client.transport_options.get(name)


def consumed_task_queues() -> Collection[str]:
    """Names of the task queues this process's worker consumes (``-Q``, else ``task_queues``).

    ``app.amqp.queues.consume_from`` (public) is what Celery's worker builds its task consumer
    from; the worker's other deliveries (remote control, events) come from fanout queues.
    """
    return current_app().amqp.queues.consume_from.keys()


# The consumer class the documented ``worker_consumer`` setting names by default; the worker's
# own (worker/inbound.py) overrides ``on_decode_error``, which Celery calls for a message kombu
# could not build or whose body it could not decode, and wraps the handler ``create_task_handler``
# returns (Celery's event loop calls it with each task message) to check the body first.
CeleryConsumer = celery_consumer.Consumer


# --------------------------------------------------------------------------- Celery


# The consumer step that creates the task consumer: a step that reads the consumer's channel
# must run after it, and bootsteps name what they require by these internal paths.
CONSUMER_TASKS_STEP = f"{celery_consumer_tasks.__name__}:Tasks"


# The worker step that starts the pool: a worker step that needs the pool's processes (worker/
# readiness.py) must run after it, named by this internal path like the consumer's.
WORKER_POOL_STEP = f"{celery_components.__name__}:Pool"


def task_channel(consumer: Any) -> Any:
    """The channel the consumer's task consumer reads from (a consumer step that requires
    :data:`CONSUMER_TASKS_STEP`).

    Celery's ``Tasks`` step sets ``Consumer.task_consumer`` (a kombu ``Consumer``, whose
    ``channel`` is public) on every (re)start, before the steps that require it start. Raises
    RuntimeError when it is not set: restore on reconnect and the leases would otherwise be
    switched off without a word.
    """
    task_consumer = consumer.task_consumer
    if task_consumer is None:
        raise RuntimeError("Celery's consumer has no task consumer when a step that requires "
                           f"{CONSUMER_TASKS_STEP} starts: restore on reconnect and leases cannot run "
                           "(worker/celery_compat.py)")
    return task_consumer.channel


def shutdown_requested() -> bool:
    """True once a warm or cold shutdown was asked for in this worker.

    Celery's signal handlers set ``celery.worker.state.should_stop`` / ``should_terminate``
    (None or False: not asked; an exit code otherwise), and its own ``maybe_shutdown`` reads
    them; there is no public call for a step that blocks while the worker starts.
    """
    return any(flag is not None and flag is not False
               for flag in (celery_state.should_stop, celery_state.should_terminate))


def forked_pool_size(worker: Any) -> int | None:
    """How many processes ``worker``'s prefork pool forks, or None for a pool that forks none.

    ``celery.concurrency.prefork.TaskPool`` is the prefork pool's class (``-P prefork``) and
    ``num_processes`` its size (``BasePool`` property; solo and threads pools fork nothing).
    """
    pool = worker.pool
    if not isinstance(pool, celery_prefork.TaskPool):
        return None
    return int(pool.num_processes)


def drop_decoded_arguments(request: Any) -> None:
    """Leave the decoded arguments out of what the worker parent pickles to its pool child.

    Celery's ``Request.execute_using_pool`` sends ``(task name, id, request dict, body, content
    type, encoding)``, the dict being ``Request.request_dict`` (the object the request keeps, not
    a copy); with a content type the child decodes ``body`` and overwrites the dict's ``args``
    and ``kwargs`` with it (``celery.app.trace.fast_trace_task`` and ``trace_task_ret``), so the
    decoded copies in the dict only cost a pickle and an unpickle of the whole request. The
    parent's request keeps its own (``Request.args``: its failure paths, ``inspect``).
    """
    request_dict = request.request_dict
    request_dict["args"], request_dict["kwargs"] = (), {}


def current_app() -> Any:
    """The process's current Celery app (a pool child sets its worker's before it starts).

    ``celery.current_app`` is a proxy; the object behind it, as Celery's own docs get it.
    """
    return celery_current_app._get_current_object()


def running_delivery_tags() -> set[Any]:
    """Delivery tags of the tasks this worker's pool runs now.

    ``celery.worker.state.active_requests`` is the only list of running requests (``inspect
    active`` reads it through remote control, which a consumer step cannot use while it
    starts); each request's message is public (``Request.message``).
    """
    return {request.message.delivery_tag for request in list(celery_state.active_requests)}


# The request class a task names in its documented ``Request`` attribute (tasks/chunk.py extends
# it): Celery builds one per message in the worker parent and calls ``on_timeout`` (checked below)
# when a pool child passes the hard time limit.
CeleryRequest = celery_request.Request


def release_request(request: Any) -> None:
    """Take a request out of the worker's running and reserved sets.

    Celery's hard-time-limit handling (``Request.on_timeout``) calls
    ``celery.worker.state.task_ready`` before it acknowledges; a custom ``on_timeout`` that
    rejects instead must call it too, or the worker counts the task as running for ever.
    """
    celery_state.task_ready(request)


def quiet_connection_loss_notice() -> None:
    """Silence Celery's multi-line notice printed on every broker connection loss.

    ``Consumer.on_connection_error_after_connected`` warns ``CANCEL_TASKS_BY_DEFAULT`` whenever
    ``worker_cancel_long_running_tasks_on_connection_loss`` is False, even when the setting is
    explicit (it is here), burying the outage's own lines. Matched by Celery's own text, so the
    filter follows it; Celery's logging set-up resets warning filters, so call once ready.
    """
    warnings.filterwarnings("ignore", message=re.escape(celery_consumer.CANCEL_TASKS_BY_DEFAULT),
                            category=CPendingDeprecationWarning)


# --------------------------------------------------------------------------- kombu: JSON bodies

# kombu encodes the types it revives (datetime, UUID, Decimal, bytes) as
# {"__type__": ..., "__value__": ...}; its decoder (kombu.utils.json.loads) calls a Python
# ``object_hook`` on every JSON object to find them. A chunking request holds hundreds of objects
# and none of those types, and Celery decodes each body twice (worker parent and pool child).
TYPE_MARKER = '"__type__"'


def fast_json_loads(data: Any) -> Any:
    """kombu's JSON ``loads``, skipping its object hook when no value can need it."""
    if isinstance(data, memoryview | bytearray | bytes):
        data = bytes(data).decode("utf-8")
    if TYPE_MARKER in data:
        return kombu_json.loads(data)
    return json.loads(data)


def install_json_decoder(loads: Callable[[Any], Any]) -> None:
    """Decode ``application/json`` bodies with ``loads`` in this worker process.

    kombu looks decoders up by content type in one process-wide registry, and both decodes of a
    task body (``Message.payload`` in the parent, ``celery.app.trace`` in the child) go through
    it: plain ``application/json`` from any producer can only be sped up there. A content type
    of our own would leave the registry alone, but a worker that does not know it rejects such
    a message without requeue (Celery's ``on_invalid_task``): a producer upgraded first would
    lose documents. So the ``json`` codec is re-registered through kombu's public ``register``,
    with kombu's own encoder, only in worker processes: the parent installs
    :func:`fast_json_loads` (``worker_init``, before the pool forks), each pool child its task
    decoder (worker/serialization.py); producers, the command line and anything else that
    builds the app keep kombu's decoder.
    """
    registry.register("json", kombu_json.dumps, loads, content_type="application/json",
                      content_encoding="utf-8")


# --------------------------------------------------------------------------- the start-up check


class UntestedDependencies(RuntimeError):
    """Celery, kombu or redis-py is outside the tested ranges, or an internal is gone."""


def _probe_qos() -> Any:
    """A bare kombu QoS, to see the attributes its ``__init__`` sets."""
    qos = virtual.QoS(SimpleNamespace(do_restore=False))
    with contextlib.suppress(Exception):
        qos.restore_unacked_once()  # cancels its restore at interpreter exit (nothing to restore)
    return qos


def _probe_consumer() -> Any:
    """What Celery's ``Tasks`` consumer step sets on the consumer it is made for."""
    consumer = SimpleNamespace()
    celery_consumer_tasks.Tasks(consumer)
    return consumer


def _probe_message() -> Any:
    """A bare kombu virtual message, to see the attributes its ``__init__`` sets."""
    return virtual.Message({"properties": {"delivery_tag": "probe", "delivery_info": {}}, "headers": {}},
                           channel=SimpleNamespace())


INTERNALS: tuple[Internal, ...] = (
    # read and written by the accessors above
    Internal(virtual.QoS, "_delivered", kind=MutableMapping, instance=_probe_qos),
    Internal(virtual.QoS, "_dirty", kind=set, instance=_probe_qos),
    Internal(virtual.QoS, "append", ("self", "message", "delivery_tag")),
    Internal(virtual.QoS, "ack", ("self", "delivery_tag")),
    Internal(virtual.Message, "_raw", kind=dict, instance=_probe_message),
    Internal(kombu_redis.QoS, "_remove_from_indices", ("self", "delivery_tag")),
    Internal(kombu_redis.QoS, "restore_by_tag", ("self", "tag", "client", "leftmost")),
    Internal(kombu_redis.Channel, "_do_restore_message",
             ("self", "payload", "exchange", "routing_key", "pipe", "leftmost")),
    Internal(virtual.Channel, "_next_delivery_tag", ("self",)),
    Internal(kombu_redis.Channel, "_create_client", ("self",)),
    Internal(virtual.Channel, "__init__", ("self", "connection")),
    Internal(kombu_base.Transport, "client"),
    # what a worker takes in (worker/inbound.py): the envelope reaches _deliver decoded, before
    # kombu builds its message
    Internal(virtual.Transport, "_deliver", ("self", "message", "queue")),
    Internal(kombu_redis.Channel, "_brpop_read", ("self",)),
    Internal(celery_consumer.Consumer, "on_decode_error", ("self", "message", "exc")),
    Internal(celery_consumer.Consumer, "create_task_handler", ("self", "promise")),
    # overridden by worker/transport.py: kombu must still call them, with these arguments
    Internal(kombu_redis.Channel, "conn_or_acquire", ("self", "client")),
    Internal(kombu_redis.QoS, "append", ("self", "message", "delivery_tag")),
    Internal(kombu_redis.QoS, "ack", ("self", "delivery_tag")),
    Internal(kombu_redis.QoS, "reject", ("self", "delivery_tag", "requeue")),
    Internal(kombu_redis.QoS, "restore_unacked", ("self", "client")),
    Internal(kombu_redis.QoS, "restore_visible", ("self",)),
    # Celery
    Internal(celery_state, "active_requests", kind=Iterable),
    Internal(celery_state, "task_ready", ("request",)),
    Internal(celery_request.Request, "on_timeout", ("self", "soft", "timeout")),
    Internal(celery_consumer, "CANCEL_TASKS_BY_DEFAULT", kind=str),
    Internal(celery_consumer_tasks, "Tasks", kind=type),
    Internal(celery_consumer_tasks.Tasks, "task_consumer", instance=_probe_consumer),
    Internal(celery_components, "Pool", kind=type),
    Internal(celery_state, "should_stop"),
    Internal(celery_state, "should_terminate"),
    Internal(celery_prefork, "TaskPool", kind=type),
    Internal(celery_prefork.TaskPool, "num_processes", kind=property),
    # what drop_decoded_arguments relies on: the pool child's tracers decode the body and take
    # args and kwargs from it (tests/unit/test_serialization.py holds what they do)
    Internal(celery_request.Request, "request_dict", kind=property),
    Internal(celery_trace, "fast_trace_task",
             ("task", "uuid", "request", "body", "content_type", "content_encoding")),
    Internal(celery_trace, "trace_task_ret",
             ("name", "uuid", "request", "body", "content_type", "content_encoding")),
    # what the producer side relies on (the key layout it copies, the backend's decode_result)
    *PRODUCER_INTERNALS,
    # the JSON decoder whose per-object hook fast_json_loads skips
    Internal(kombu_json, "loads", ("s",)),
    Internal(kombu_json, "object_hook", ("o",)),
)


def tested_ranges() -> dict[str, SpecifierSet]:
    """The ranges of :data:`PINNED` in the installed package's ``worker`` extra."""
    ranges: dict[str, SpecifierSet] = {}
    for line in metadata.requires(DISTRIBUTION) or []:
        requirement = Requirement(line)
        if requirement.marker is not None and requirement.marker.evaluate({"extra": EXTRA}) \
                and requirement.name in PINNED:
            ranges[requirement.name] = requirement.specifier
    return ranges


def version_problems() -> list[str]:
    """Each pinned distribution installed outside its tested range (or missing)."""
    try:
        ranges = tested_ranges()
    except metadata.PackageNotFoundError:
        return [f"{DISTRIBUTION} is not installed (pip install -e .), so the tested ranges of "
                f"{', '.join(PINNED)} are unknown"]
    problems = []
    for name in PINNED:
        wanted = ranges.get(name)
        if wanted is None:
            problems.append(f"{DISTRIBUTION}'s [{EXTRA}] extra names no tested range for {name}")
            continue
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name} is not installed (tested: {name}{wanted})")
            continue
        if not wanted.contains(installed, prereleases=True):
            problems.append(f"{name} {installed} is outside the tested range {name}{wanted}")
    return problems


def internal_problems() -> list[str]:
    """Each internal of :data:`INTERNALS` that is missing or has another signature."""
    return check_internals(INTERNALS)


def check_dependencies(accept_untested: bool) -> list[str]:
    """Refuse untested Celery/kombu/redis-py versions and missing internals, in one line.

    Returns the problems accepted (logged as one warning) when ``accept_untested``.

    Raises:
        UntestedDependencies: a problem, not accepted; the message names each one.
    """
    problems = version_problems() + internal_problems()
    if not problems:
        return []
    text = "; ".join(problems)
    if accept_untested:
        logger.warning("running on untested dependencies (%s=true): %s", ACCEPT_ENV, text)
        return problems
    raise UntestedDependencies(
        f"{text}: the worker relies on Celery, kombu and redis-py internals checked only in the tested "
        f"ranges (worker/celery_compat.py); install the versions of constraints.txt, or set "
        f"{ACCEPT_ENV}=true to run untested")
