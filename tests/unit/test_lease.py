"""The lease renewer of worker/lease.py on fakeredis: what it renews, when the worker may sweep,
its thread, and the consumer step that starts it. The same behaviours against real kombu and a
real redis-server: tests/integration/test_kombu_contract.py; a host cut off the network:
tests/faults/test_partition.py."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

import fakeredis
import pytest
import redis.exceptions

import worker.lease as lease
from config.settings import Settings
from worker.celery_app import create_app
from worker.lease import LeaseRenewer, RenewLeases

SETTINGS = Settings(lease_interval=0.05, lease_timeout=1)


class StubQoS:
    """What the renewer reads from a kombu QoS: held tags, its channel's keys, attachment."""

    lease: Any = None

    def __init__(self, tags: list[str], prefix: str = "", attached: bool = True) -> None:
        self._delivered = OrderedDict((tag, object()) for tag in tags)
        self._dirty: set[str] = set()
        transport = SimpleNamespace(client=object()) if attached else None
        self.channel = SimpleNamespace(global_keyprefix=prefix, unacked_index_key="unacked_index",
                                       connection=transport)


def _renewer(client: Any = None) -> LeaseRenewer:
    return LeaseRenewer(SETTINGS, client_factory=lambda: client)


def test_renews_only_the_entries_that_exist_one_command_per_key() -> None:
    client = fakeredis.FakeRedis()
    client.zadd("unacked_index", {"a": 1.0, "b": 1.0, "gone-elsewhere": 1.0})
    client.zadd("p:unacked_index", {"c": 1.0})
    renewer = _renewer(client)
    held = StubQoS(["a", "b", "put-back"])
    held._dirty.add("b")  # acknowledged: no longer held
    prefixed = StubQoS(["c"], prefix="p:")
    renewer.hold(held)
    renewer.hold(prefixed)
    assert held.lease is renewer
    before = time.time()
    assert renewer.renew(client) == 2
    scores = dict(client.zrange("unacked_index", 0, -1, withscores=True))
    assert scores[b"a"] >= before and scores[b"b"] == scores[b"gone-elsewhere"] == 1.0
    assert b"put-back" not in scores, "a renewal never writes an entry back"
    assert client.zscore("p:unacked_index", "c") >= before
    assert (renewer.commands, renewer.renewed) == (2, 2)


def test_a_detached_qos_holding_nothing_is_forgotten_one_still_holding_is_kept() -> None:
    renewer = _renewer()
    empty, running = StubQoS([], attached=False), StubQoS(["t"], attached=False)
    idle = StubQoS([])
    for qos in (empty, running, idle):
        renewer.hold(qos)
    assert renewer.held() == {"unacked_index": ["t"]}
    assert set(renewer._holders) == {running, idle}


def test_a_qos_changed_while_read_is_renewed_next_time() -> None:
    class Changing(StubQoS):
        @property
        def _delivered(self) -> Any:  # type: ignore[override]
            raise RuntimeError("OrderedDict mutated during iteration")

        @_delivered.setter
        def _delivered(self, value: Any) -> None:
            pass

    renewer = _renewer()
    changing = Changing(["t"])
    renewer.hold(changing)
    assert renewer.held() == {}


def test_the_worker_sweeps_only_after_a_lease_timeout_of_renewals_without_failure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(lease.time, "monotonic", lambda: now[0])
    renewer = _renewer()
    assert renewer.may_sweep(), "nothing failed yet: a worker that just started sweeps"
    renewer._failed(redis.exceptions.ConnectionError("gone"))
    renewer._failed(redis.exceptions.ConnectionError("still gone"))
    assert not renewer.may_sweep() and renewer.failures == 2
    now[0] += 30
    renewer._succeeded()
    assert not renewer.may_sweep(), "back, but the other holders may not have renewed yet"
    now[0] += SETTINGS.lease_timeout
    renewer._succeeded()
    assert renewer.may_sweep()


def test_the_thread_keeps_renewing_through_failures_and_stops(caplog: pytest.LogCaptureFixture) -> None:
    client = fakeredis.FakeRedis()
    client.zadd("unacked_index", {"t": 1.0})
    calls: list[int] = []
    renewed = threading.Event()

    def factory() -> Any:
        calls.append(1)
        if len(calls) < 3:
            raise redis.exceptions.ConnectionError("cut off")
        return client

    renewer = LeaseRenewer(SETTINGS, client_factory=factory)
    held = StubQoS(["t"])  # held weakly: kept alive here
    renewer.hold(held)
    original = renewer.renew

    def renew(c: Any) -> int:
        count = original(c)
        renewed.set()
        return count

    renewer.renew = renew  # type: ignore[method-assign]
    with caplog.at_level("WARNING", logger=lease.__name__):
        renewer.start()
        renewer.start()  # once
        assert renewed.wait(5)
        renewer.stop()
    assert renewer._thread is not None and not renewer._thread.is_alive()
    assert client.zscore("unacked_index", "t") > 1.0 and renewer.failures == 2
    messages = [record.getMessage() for record in caplog.records]
    assert sum("could not renew the leases" in m for m in messages) == 1, "said once per outage"
    assert sum("lease renewals resumed" in m for m in messages) == 1


def test_a_worker_whose_renewals_fail_does_not_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    from worker import celery_compat as compat
    from worker.transport import HoldingQoS

    swept: list[Any] = []
    monkeypatch.setattr(compat.RedisQoS, "restore_visible", lambda self, *a, **k: swept.append(1))
    qos = HoldingQoS.__new__(HoldingQoS)  # no channel needed: kombu's sweep is replaced
    qos.pending_acks = set()  # no acknowledgement refused
    renewer = _renewer()
    qos.lease = renewer
    qos.restore_visible()
    renewer._failed(OSError("cut off"))
    qos.restore_visible()
    assert swept == [1]


def test_the_consumer_step_renews_each_new_channel_and_stops_at_shutdown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app(Settings(broker_url="redis://127.0.0.1:1/0", lease_interval=5, lease_timeout=15),
                     main="lease-step-test")
    assert app.lease_renewer is not None and RenewLeases in app.steps["consumer"]
    started: list[str] = []
    monkeypatch.setattr(app.lease_renewer, "start", lambda: started.append("start"))
    monkeypatch.setattr(app.lease_renewer, "stop", lambda: started.append("stop"))
    step = RenewLeases(SimpleNamespace())
    qos = StubQoS(["t"])
    step.start(SimpleNamespace(app=app, task_consumer=SimpleNamespace(channel=SimpleNamespace(qos=qos))))
    with pytest.raises(RuntimeError, match="no task consumer"):  # never a silent skip of the leases
        step.start(SimpleNamespace(app=app, task_consumer=None))
    step.shutdown(SimpleNamespace(app=app))
    assert started == ["start", "stop"] and qos.lease is app.lease_renewer
    assert create_app(Settings(lease_interval=0), main="no-lease-test").lease_renewer is None
