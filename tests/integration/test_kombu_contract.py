"""Contract test: the real kombu Redis transport, as the worker extends it, on a real redis-server.

The fault suite (``make test-faults``, minutes) proves the guarantees of docs/operations.md end to
end; they rest on a handful of behaviours of kombu's ack emulation and of Celery's request
bookkeeping that worker/celery_compat.py reaches through private accessors. This module holds
those behaviours in seconds, in ``make test``, so a kombu or Celery upgrade that changes one of
them fails here before it reaches the fault suite:

* hold: a delivered, unacknowledged message leaves its queue for the ``unacked`` hash and index,
  and the channel's QoS reports it held;
* ack and reject remove it for good; reject with requeue puts it back, flagged redelivered;
* a warm close (SIGTERM) puts back what the channel held;
* restore on reconnect: Redis gone while messages are held (the restore at close fails and
  nothing is lost), back again, then the next channel puts back what nobody runs, leaves the
  running one held, and that one's acknowledgement goes through the new channel;
* a message taken off its queue whose ``unacked`` entry cannot be written (Redis refusing
  writes) is kept in memory and put back once Redis accepts writes;
* a message put back (by another worker's sweep) gets a new delivery tag, so the late
  acknowledgement of a holder that was cut off removes nothing its next holder has (kombu's own
  transport keeps the tag); a renewed lease keeps a held message from the sweep, a lapsed one is
  put back, and a renewal never brings back an entry that is gone;
* Celery's running-request set and ``Request.message`` as the restore step reads them; kombu's
  JSON marker as the worker's decoder relies on it.

Each scenario is a function that asserts; the last test breaks one accessor at a time and shows
that the scenario relying on it fails. redis-server is started by this module on a free port
(``--save "" --appendonly no``, a temporary directory), stopped by PID.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import redis
from celery import Celery
from kombu import Connection, Exchange, Producer, Queue
from kombu import Consumer as Consumer_
from kombu.utils import json as kombu_json

from config.settings import Settings
from service.celeryconfig import celery_config
from tests.processes import ManagedProcess, start_process
from worker import celery_compat as compat
from worker.restore import RestoreHeldMessages
from worker.transport import HoldingQoS, transport_for

REDIS_SERVER = shutil.which("redis-server")
QUEUE = "contract"


# --------------------------------------------------------------------------- redis-server


class Server:
    """One redis-server without persistence on a free port; :meth:`shutdown_saving` keeps the data
    for the next :meth:`start` through an explicit RDB save. Every connection a scenario opens is
    closed before the server stops, even when the scenario fails."""

    def __init__(self, base: Path) -> None:
        if REDIS_SERVER is None:
            pytest.fail("the contract test needs redis-server on PATH (Debian: apt-get install redis-server)")
        self.dir = base
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.proc: ManagedProcess | None = None
        self.connections: list[Connection] = []

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_connect_timeout=2, socket_timeout=2)

    def start(self) -> Server:
        argv = [str(REDIS_SERVER), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(self.dir), "--dbfilename", "contract.rdb"]
        self.proc = start_process(f"redis-contract-{self.port}", argv, self.dir)
        deadline = time.monotonic() + 20
        while True:
            try:
                if self.client().ping():
                    return self
            except redis.RedisError:
                pass
            if not self.proc.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start:\n{self.proc.log_text()[-2000:]}")
            time.sleep(0.02)

    def shutdown_saving(self) -> None:
        """Redis goes away, its data saved first (an RDB, as a Redis with persistence keeps it):
        connections are refused until ``start``."""
        assert self.proc is not None
        self.client().save()
        self.proc.stop(grace_s=10)  # SIGTERM: without save points, it exits without writing again

    def stop(self) -> None:
        for connection in self.connections:
            with contextlib.suppress(Exception):
                connection.close()
        if self.proc is not None:
            self.proc.stop(grace_s=5)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    server = Server(tmp_path).start()
    try:
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------------------- the worker's transport


@dataclass
class Consumer:
    """A connection and channel of the worker's transport, configured as the fleet's."""

    connection: Connection
    channel: Any
    queue: Any

    @property
    def qos(self) -> HoldingQoS:
        return self.channel.qos

    def get(self) -> Any:
        message = self.queue.get(no_ack=False)  # basic_get: delivered and held like a consumed one
        assert message is not None, "the queue is empty"
        return message


def connect(server: Server, key_prefix: str = "", **values: Any) -> Consumer:
    settings = Settings(broker_url=server.url, result_url=server.url, celery_key_prefix=key_prefix, **values)
    config = celery_config(settings)
    connection = Connection(server.url, transport=transport_for(server.url),
                            transport_options={**config["broker_transport_options"], "socket_timeout": 2,
                                               "socket_connect_timeout": 2})
    server.connections.append(connection)
    channel = connection.channel()
    assert isinstance(channel.qos, HoldingQoS)
    queue = Queue(QUEUE, Exchange(QUEUE, type="direct"), routing_key=QUEUE)(channel)
    queue.declare()
    return Consumer(connection, channel, queue)


def publish(consumer: Consumer, *bodies: dict[str, Any]) -> None:
    producer = Producer(consumer.channel, exchange=consumer.queue.exchange, routing_key=QUEUE)
    for body in bodies:
        producer.publish(body, serializer="json")


@dataclass
class Keys:
    """What Redis holds, read with a plain client."""

    queued: list[dict[str, Any]]  # payloads, next one to deliver first
    unacked: set[str]  # delivery tags with an entry in the hash
    indexed: set[str]  # delivery tags in the index


def read(server: Server, key_prefix: str = "") -> Keys:
    client = server.client()
    queued = [kombu_json.loads(item) for item in reversed(client.lrange(key_prefix + QUEUE, 0, -1))]
    unacked = {tag.decode() for tag in client.hkeys(key_prefix + "unacked")}
    indexed = {tag.decode() for tag in client.zrange(key_prefix + "unacked_index", 0, -1)}
    return Keys(queued, unacked, indexed)


def bodies(keys: Keys) -> list[Any]:
    return [kombu_json.loads(payload["body"]) for payload in keys.queued]


def redelivered(keys: Keys) -> list[bool]:
    return [payload["properties"]["delivery_info"].get("redelivered", False) for payload in keys.queued]


# --------------------------------------------------------------------------- scenarios


def check_hold_and_ack(server: Server, key_prefix: str = "") -> None:
    consumer = connect(server, key_prefix)
    publish(consumer, {"n": 1})
    message = consumer.get()
    tag = message.delivery_tag
    held = read(server, key_prefix)
    assert held.queued == [] and held.unacked == held.indexed == {tag}, "a delivered message is held"
    assert compat.held_tags(consumer.qos) == [tag]
    message.ack()
    acked = read(server, key_prefix)
    assert acked.queued == [] and acked.unacked == acked.indexed == set(), "an ack removes it for good"
    assert compat.held_tags(consumer.qos) == []
    consumer.connection.close()


def check_reject(server: Server) -> None:
    consumer = connect(server)
    publish(consumer, {"n": "dropped"}, {"n": "again"})
    dropped, again = consumer.get(), consumer.get()
    dropped.reject(requeue=False)
    keys = read(server)
    assert keys.queued == [] and keys.unacked == keys.indexed == {again.delivery_tag}
    again.reject(requeue=True)
    keys = read(server)
    assert bodies(keys) == [{"n": "again"}] and redelivered(keys) == [True], "requeued, flagged redelivered"
    assert keys.unacked == keys.indexed == set()
    assert compat.held_tags(consumer.qos) == []
    assert consumer.get().payload == {"n": "again"}
    consumer.connection.close()


def check_warm_close(server: Server) -> None:
    consumer = connect(server)
    publish(consumer, {"n": 1}, {"n": 2})
    consumer.get(), consumer.get()
    consumer.connection.close()  # a warm shutdown closes the channel with Redis there
    keys = read(server)
    assert sorted(b["n"] for b in bodies(keys)) == [1, 2] and all(redelivered(keys))
    assert keys.unacked == keys.indexed == set()


def check_restore_on_reconnect(server: Server) -> None:
    old = connect(server)
    publish(old, {"n": 1}, {"n": 2}, {"n": 3})
    first, second, running = old.get(), old.get(), old.get()
    server.shutdown_saving()
    old.connection.collect()  # what Celery's consumer does with a connection that failed
    assert compat.is_detached(old.qos)
    assert sorted(compat.held_tags(old.qos)) == sorted(m.delivery_tag for m in (first, second, running))
    server.start()
    assert read(server).unacked == {first.delivery_tag, second.delivery_tag, running.delivery_tag}

    new = connect(server)
    step = RestoreHeldMessages(SimpleNamespace())
    left = step.restore(new.qos, [old.qos], running={running.delivery_tag})
    keys = read(server)
    assert sorted(b["n"] for b in bodies(keys)) == [1, 2] and all(redelivered(keys)), "put back on reconnect"
    assert keys.unacked == {running.delivery_tag} and left == [old.qos], "the running one stays held"
    assert compat.held_tags(old.qos) == [running.delivery_tag]
    running.ack()  # its task ends: acknowledged through the channel that replaced the closed one
    keys = read(server)
    assert keys.unacked == keys.indexed == set() and compat.held_tags(old.qos) == []
    assert step.restore(new.qos, left, running=set()) == []
    assert sorted(b["n"] for b in bodies(read(server))) == [1, 2]  # nothing put back twice
    new.connection.close()


def check_unwritten_entry(server: Server) -> None:
    consumer = connect(server)
    publish(consumer, {"n": "taken"})
    admin = server.client()
    admin.config_set("maxmemory", 1)  # noeviction: writes refused, reads and pops allowed
    try:
        message = consumer.get()  # off its queue; its unacked entry cannot be written
        keys = read(server)
        assert keys.queued == [] and keys.unacked == set()
        assert message.delivery_tag in consumer.qos.unwritten, "kept in memory"
        assert compat.held_tags(consumer.qos) == [message.delivery_tag]
        consumer.qos.restore_unacked()  # a restore while Redis still refuses: still kept
        assert message.delivery_tag in consumer.qos.unwritten
    finally:
        admin.config_set("maxmemory", 0)
    consumer.qos.restore_unacked()  # the next restore, Redis writable again
    keys = read(server)
    assert bodies(keys) == [{"n": "taken"}] and keys.unacked == set(), "put back from memory"
    assert consumer.qos.unwritten == {} and compat.held_tags(consumer.qos) == []
    consumer.connection.close()


# A lease short enough to run out within a test: renewals every 0.2 s, put back after 1 s.
SHORT_LEASE = {"lease_interval": 0.2, "lease_timeout": 1}


def sweep(consumer: Consumer) -> None:
    """One run of kombu's periodic sweep of the unacked index (every call, no throttle)."""
    consumer.qos.restore_visible(interval=1)


def tags_of(keys: Keys) -> list[str]:
    return [payload["properties"]["delivery_tag"] for payload in keys.queued]


def check_fenced_redelivery(server: Server) -> None:
    """A holder cut off past its lease: another worker's sweep puts its message back with a new
    delivery tag, so the old holder's late acknowledgement deletes nothing the new holder has."""
    cut = connect(server, **SHORT_LEASE)
    publish(cut, {"n": 1})
    late = cut.get()
    time.sleep(SHORT_LEASE["lease_timeout"] + 0.3)  # no renewal: the lease runs out
    other = connect(server, **SHORT_LEASE)
    sweep(other)
    keys = read(server)
    assert bodies(keys) == [{"n": 1}] and redelivered(keys) == [True], "put back by the other's sweep"
    assert tags_of(keys) != [late.delivery_tag], "put back with a new delivery tag"
    taken = other.get()
    assert read(server).unacked == {taken.delivery_tag}
    late.ack()  # the cut holder comes back and acknowledges its old delivery
    keys = read(server)
    assert keys.unacked == keys.indexed == {taken.delivery_tag}, "the late ack removed the new holder's entry"
    taken.ack()
    keys = read(server)
    assert keys.queued == [] and keys.unacked == keys.indexed == set()
    for consumer in (cut, other):
        consumer.connection.close()


def check_stock_kombu_keeps_the_tag(server: Server) -> None:
    """Why the fence: kombu's own transport puts a message back under the tag it had."""
    connection = Connection(server.url, transport_options={"visibility_timeout": 1})
    server.connections.append(connection)
    channel = connection.channel()
    queue = Queue(QUEUE, Exchange(QUEUE, type="direct"), routing_key=QUEUE)(channel)
    queue.declare()
    Producer(channel, exchange=queue.exchange, routing_key=QUEUE).publish({"n": 1}, serializer="json")
    held = queue.get(no_ack=False)
    time.sleep(1.3)
    channel.qos.restore_visible(interval=1)
    assert tags_of(read(server)) == [held.delivery_tag]
    connection.close()


def check_lease_renewal(server: Server, key_prefix: str = "") -> None:
    """Renewed leases keep a held message from the sweep; once renewals stop it is put back, and
    a renewal after that does not bring its entry back."""
    from worker.lease import LeaseRenewer

    holder = connect(server, key_prefix, **SHORT_LEASE)
    renewer = LeaseRenewer(Settings(broker_url=server.url, result_url=server.url, **SHORT_LEASE))
    renewer.hold(holder.qos)
    client = server.client()
    publish(holder, {"n": 1})
    running = holder.get()
    other = connect(server, key_prefix, **SHORT_LEASE)
    deadline = time.monotonic() + 2.5 * SHORT_LEASE["lease_timeout"]
    while time.monotonic() < deadline:  # renewed past two lease timeouts, swept all along
        assert renewer.renew(client) == 1
        sweep(other)
        time.sleep(SHORT_LEASE["lease_interval"])
    keys = read(server, key_prefix)
    assert keys.queued == [] and keys.unacked == keys.indexed == {running.delivery_tag}, "renewed: kept"
    time.sleep(SHORT_LEASE["lease_timeout"] + 0.3)  # renewals stop
    sweep(other)
    keys = read(server, key_prefix)
    assert bodies(keys) == [{"n": 1}] and keys.unacked == keys.indexed == set(), "not renewed: put back"
    assert renewer.renew(client) == 0 and read(server, key_prefix).indexed == set(), "no entry renewed back"
    for consumer in (holder, other):
        consumer.connection.close()


def check_celery_request_bookkeeping(server: Server) -> None:
    from celery import Celery
    from celery.worker.request import Request
    from celery.worker.state import active_requests

    app = Celery("contract", set_as_current=False)
    app.conf.update(celery_config(Settings(broker_url=server.url, result_url=server.url)))
    task = app.task(name="contract.noop")(_noop)
    consumer = connect(server)
    headers, properties, body, _ = app.amqp.as_task_v2(str(uuid.uuid4()), task.name, args=[])
    Producer(consumer.channel, exchange=consumer.queue.exchange, routing_key=QUEUE).publish(
        body, headers=headers, serializer="json", **properties)
    request = Request(consumer.get(), app=app, task=task)
    active_requests.add(request)  # what the worker does as the pool takes the task
    try:
        assert compat.running_delivery_tags() == {request.message.delivery_tag}
        compat.release_request(request)
        assert compat.running_delivery_tags() == set()
    finally:
        active_requests.discard(request)
    consumer.connection.close()


def check_json_marker() -> None:
    values = {"when": datetime.datetime(2026, 1, 2, 3, 4, 5), "id": uuid.UUID(int=7),
              "amount": decimal.Decimal("1.5"), "raw": b"\x00\x01"}
    for name, value in values.items():
        text = kombu_json.dumps({name: value})
        assert compat.TYPE_MARKER in text, f"kombu encodes {name} without the marker the decoder skips on"
        assert compat.fast_json_loads(text) == kombu_json.loads(text) == {name: value}


def raw_envelope(body: str, *, task_id: str, headers: dict[str, Any] | None = None,
                 routing_key: str = QUEUE) -> str:
    """An envelope as any producer may LPUSH it: the exchange, routing key and headers its own."""
    return kombu_json.dumps({
        "body": body, "content-encoding": "utf-8", "content-type": "application/json",
        "headers": {"id": task_id, "task": "t", **(headers or {})},
        "properties": {"delivery_tag": str(uuid.uuid4()), "body_encoding": None, "correlation_id": task_id,
                       "delivery_info": {"exchange": "", "routing_key": routing_key}, "priority": 0}})


@contextlib.contextmanager
def consuming_task_queue(queue: str) -> Iterator[None]:
    """The process's current Celery app consuming ``queue`` as a task queue, as a worker's does
    (the transport checks task queues' messages as tasks)."""
    previous = compat.current_app()
    app = Celery("contract", set_as_current=True)
    app.conf.task_queues = [Queue(queue, routing_key=queue)]
    try:
        yield
    finally:
        previous.set_current()


def check_admission(server: Server, key_prefix: str = "") -> None:
    """What the worker's transport takes from a task queue: a compressed body, a body over the
    inline limit, a raw message over the envelope limit and a message of Celery's protocol 1
    never reach the consumer; the producer's scheduling headers are reset; a message put back
    goes to the queue it came from, not where its routing key points."""
    with consuming_task_queue(QUEUE):
        _check_admission(server, key_prefix)


def _check_admission(server: Server, key_prefix: str) -> None:
    consumer = connect(server, key_prefix, max_inline_bytes=1024, reference_threshold_bytes=1024)
    client = server.client()
    good = '[[{"document_id": "d"}], {}, {}]'
    pushed = [
        raw_envelope(good, task_id="kept", routing_key="celery-task-meta-victim",
                     headers={"eta": "2027-01-01T00:00:00+00:00", "timelimit": [600, 700], "retries": 3}),
        raw_envelope("H4sIAAAAAAAA", task_id="gzip", headers={"compression": "application/x-gzip"}),
        raw_envelope("[" * 1025, task_id="too-long"),
        raw_envelope(good, task_id="raw-too-long", headers={"pad": "p" * (2 * 1024 + 300_000)}),
        raw_envelope('{"task": "t", "id": "protocol-1", "args": [], "eta": "2027-01-01T00:00:00"}',
                     task_id="protocol-1", headers={"task": None}),
    ]
    for item in pushed:
        client.lpush(key_prefix + QUEUE, item)
    received: list[Any] = []
    with Consumer_(consumer.channel, [consumer.queue], accept=["json"],
                   on_message=received.append), contextlib.suppress(socket.timeout, TimeoutError):
        for _ in range(len(pushed)):
            consumer.connection.drain_events(timeout=1.5)
    assert [m.headers["id"] for m in received] == ["kept"], "refused messages reach no consumer"
    [message] = received
    assert {name: message.headers[name] for name in ("eta", "timelimit", "retries")} == \
        {"eta": None, "timelimit": [None, None], "retries": 0}
    assert client.llen(key_prefix + QUEUE) == 0
    assert client.hlen(key_prefix + "unacked") == 1, "only the admitted message is held"
    consumer.connection.close()  # a warm close puts back what the channel held
    assert client.llen(key_prefix + QUEUE) == 1, "put back on the queue it came from"
    assert client.exists(key_prefix + "celery-task-meta-victim") == 0, "nothing written where the key pointed"
    client.close()


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("key_prefix", ["", "lp-contract:"], ids=["no-prefix", "global-keyprefix"])
def test_a_delivered_message_is_held_until_acknowledged(server: Server, key_prefix: str) -> None:
    check_hold_and_ack(server, key_prefix)


def test_reject_drops_or_requeues(server: Server) -> None:
    check_reject(server)


def test_a_warm_close_puts_back_what_the_channel_held(server: Server) -> None:
    check_warm_close(server)


def test_held_messages_survive_redis_going_away_and_are_put_back_on_reconnect(server: Server) -> None:
    check_restore_on_reconnect(server)


def test_a_message_whose_unacked_entry_cannot_be_written_is_kept_and_put_back(server: Server) -> None:
    check_unwritten_entry(server)


def test_a_late_ack_of_a_holder_cut_off_removes_nothing_the_next_holder_has(server: Server) -> None:
    check_fenced_redelivery(server)


def test_kombu_itself_puts_a_message_back_under_its_old_tag(server: Server) -> None:
    check_stock_kombu_keeps_the_tag(server)


@pytest.mark.parametrize("key_prefix", ["", "lp-contract:"], ids=["no-prefix", "global-keyprefix"])
def test_a_renewed_lease_keeps_a_message_held_and_a_lapsed_one_is_put_back(server: Server,
                                                                           key_prefix: str) -> None:
    check_lease_renewal(server, key_prefix)


def test_celery_tracks_running_requests_by_their_message(server: Server) -> None:
    check_celery_request_bookkeeping(server)


def test_kombu_marks_every_type_it_revives() -> None:
    check_json_marker()


@pytest.mark.parametrize("key_prefix", ["", "lp-contract:"], ids=["no-prefix", "global-keyprefix"])
def test_the_transport_refuses_admits_and_routes_back_what_it_takes_in(server: Server,
                                                                       key_prefix: str) -> None:
    check_admission(server, key_prefix)


def _noop(*args: Any, **kwargs: Any) -> None:
    return None


# An accessor replaced by a plausible wrong version, and the scenario that must then fail.
BROKEN: list[tuple[str, Callable[..., Any], Callable[[Server], None]]] = [
    ("held_tags", lambda qos: [], check_hold_and_ack),
    ("remove_unacked_entry", _noop, check_hold_and_ack),
    ("forget_acknowledged", _noop, check_hold_and_ack),
    ("restore_from_unacked", _noop, check_reject),
    ("restore_from_unacked", _noop, check_restore_on_reconnect),
    ("is_detached", lambda qos: False, check_restore_on_reconnect),
    ("forget_delivery", _noop, check_restore_on_reconnect),
    ("push_raw_message", _noop, check_unwritten_entry),
    ("record_in_memory", _noop, check_unwritten_entry),
    ("with_fresh_delivery_tag", lambda channel, payload: payload, check_fenced_redelivery),
    ("renew_leases", lambda client, key, tags, now: len(list(tags)), check_lease_renewal),
    ("lease_key", lambda qos: "elsewhere", check_lease_renewal),
    ("running_delivery_tags", lambda: set(), check_celery_request_bookkeeping),
    ("release_request", _noop, check_celery_request_bookkeeping),
    ("screen_pops", _noop, check_admission),
    ("consumed_task_queues", lambda: (), check_admission),
]


@pytest.mark.parametrize(("accessor", "broken", "scenario"), BROKEN,
                         ids=[f"{name}-{scenario.__name__}" for name, _, scenario in BROKEN])
def test_a_broken_accessor_fails_its_scenario(server: Server, monkeypatch: pytest.MonkeyPatch, accessor: str,
                                              broken: Callable[..., Any],
                                              scenario: Callable[[Server], None]) -> None:
    monkeypatch.setattr(compat, accessor, broken)
    with pytest.raises(AssertionError):
        scenario(server)


def test_a_decoder_without_the_marker_check_fails_the_json_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    monkeypatch.setattr(compat, "fast_json_loads", json.loads)  # the hook skipped for every body
    with pytest.raises(AssertionError):
        check_json_marker()


def test_an_acknowledgement_redis_refuses_is_retried_every_restore_cycle(server: Server) -> None:
    """Redis full (noeviction): the ack's ZREM is refused while the connection stays up. The
    message stays held (its prefetch slot too) until a restore cycle acknowledges it, once Redis
    takes writes again; without the retry a worker holding as many as it may prefetch stalls."""
    consumer = connect(server)
    publish(consumer, {"n": 1})
    message = consumer.get()
    tag = message.delivery_tag
    admin = server.client()
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", "1")
    try:
        message.ack()
        assert tag in consumer.qos.pending_acks and tag in compat.held_tags(consumer.qos)
        assert read(server).unacked == {tag}
        consumer.qos.restore_visible()  # still full: still pending, nothing lost
        assert tag in consumer.qos.pending_acks and read(server).unacked == {tag}
    finally:
        admin.config_set("maxmemory", "0")
    consumer.qos.restore_visible()
    assert consumer.qos.pending_acks == set() and tag not in compat.held_tags(consumer.qos)
    assert read(server).unacked == set() and read(server).queued == []
