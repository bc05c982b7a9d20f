"""A fleet of worker hosts, one cut off the network mid-burst while its worker keeps running.

Topology (made by the test, removed when it ends, also on failure): a bridge in the root network
namespace holding Redis's address (``10.X.Y.1``), and three worker hosts, each a network namespace
of its own (``ip netns``) joined to the bridge by a veth pair, running a real prefork worker
(``ip netns exec NS celery -A worker worker``, concurrency 2). Producer, store watcher and a
``MONITOR`` of Redis stay in the root namespace, on loopback; each host talks to Redis from its
own address, so ``MONITOR`` says which host wrote or deleted each ``unacked`` entry.

First the same burst runs on 1, 2 and 3 hosts (throughput, a report: the machine has 2 cores).
Then, mid-burst, the switch port of a host that holds messages goes down (its veth peer on the
bridge): its worker keeps running with no carrier. Once the other hosts took over what it held,
the port comes back. Asserted: the cut worker was alive with its link down; every message it held
was delivered to another host within the bound docs/operations.md states (lease timeout + one
sweep interval + a task's run for a slot to free: 9 s with this test's lease of 1 s / 5 s), under
a new delivery tag; its late acknowledgements after the link returned deleted no entry another
host held (replayed from ``MONITOR``: each ``HDEL`` of the cut host found no entry, or one it
wrote itself) and, whatever the timing, named no tag another host received; every document ends
stored once as SUCCESS, and nothing is left in the ``unacked`` hash or the queue.

Root and ``ip`` (iproute2) are required: the test fails, saying so, without them.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from config.settings import Settings
from tasks.client import Producer
from tests.faults.harness import (
    Proc,
    RedisServer,
    Report,
    Row,
    StoreWatcher,
    base_values,
    diagnose,
    make_document,
    start_worker,
    task_runs,
    wait_until,
)

LEASE_INTERVAL = 1.0
LEASE_TIMEOUT = 5.0
# docs/operations.md: lease timeout + one sweep interval + a task's run (here under 3 s) for a slot
TAKEOVER_BOUND_S = LEASE_TIMEOUT + LEASE_INTERVAL + 3.0
BLOCKS = 600
THROUGHPUT_DOCS = 30
PARTITION_DOCS = 90
HOSTS = 3
WINDOW_S = 150


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


def _free_subnet() -> str:
    """A ``10.a.b`` /24 no interface of this machine uses."""
    used = set(re.findall(r"inet (10\.\d+\.\d+)\.\d+/", _ip("-o", "-4", "addr").stdout))
    rng = random.Random()
    for _ in range(100):
        subnet = f"10.{rng.randint(200, 250)}.{rng.randint(0, 255)}"
        if subnet not in used:
            return subnet
    raise RuntimeError("no free 10.x.y.0/24 subnet")


@dataclass
class Host:
    """A worker host: a network namespace, its end of a veth pair, and the bridge's end (its port)."""

    ns: str
    inner: str
    port: str
    address: str

    def exec_prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.ns]

    def link_state(self) -> str:
        return _ip("-n", self.ns, "-o", "link", "show", self.inner).stdout


@dataclass
class Network:
    """A bridge (Redis's side) and hosts joined to it; every name starts with :attr:`tag`."""

    tag: str = field(default_factory=lambda: f"lp{uuid.uuid4().hex[:5]}")
    subnet: str = field(default_factory=_free_subnet)
    hosts: list[Host] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    @property
    def gateway(self) -> str:
        return f"{self.subnet}.1"

    def up(self) -> Network:
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        return self

    def add_host(self, index: int) -> Host:
        host = Host(f"{self.tag}-h{index}", f"{self.tag}n{index}", f"{self.tag}p{index}",
                    f"{self.subnet}.{10 + index}")
        self.hosts.append(host)
        _ip("netns", "add", host.ns)
        _ip("link", "add", host.port, "type", "veth", "peer", "name", host.inner)
        _ip("link", "set", host.inner, "netns", host.ns)
        _ip("link", "set", host.port, "master", self.bridge)
        _ip("link", "set", host.port, "up")
        _ip("-n", host.ns, "addr", "add", f"{host.address}/24", "dev", host.inner)
        _ip("-n", host.ns, "link", "set", host.inner, "up")
        _ip("-n", host.ns, "link", "set", "lo", "up")
        return host

    def cut(self, host: Host) -> None:
        """The host's switch port goes down: no carrier, its packets go nowhere."""
        _ip("link", "set", host.port, "down")

    def restore(self, host: Host) -> None:
        _ip("link", "set", host.port, "up")

    def down(self) -> None:
        for host in self.hosts:
            _ip("netns", "del", host.ns, check=False)  # takes its end of the pair, and so the pair
            _ip("link", "del", host.port, check=False)
        _ip("link", "del", self.bridge, check=False)

    def leftovers(self) -> list[str]:
        names = _ip("netns", "list").stdout + _ip("-o", "link").stdout
        return sorted(set(re.findall(rf"{self.tag}[\w-]*", names)))


@contextlib.contextmanager
def network() -> Iterator[Network]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.fail("the partition scenario needs root and iproute2's `ip` (netns, veth, bridge)")
    net = Network()
    try:
        yield net.up()
    finally:
        net.down()
        assert net.leftovers() == [], f"network namespaces or links left behind: {net.leftovers()}"


# --------------------------------------------------------------------------- MONITOR of the unacked hash


@dataclass(frozen=True)
class Change:
    """One write of the ``unacked`` hash: Redis's time, the client's address, HSET or HDEL."""

    at: float
    client: str
    command: str
    tag: str
    document: str | None


class UnackedMonitor:
    """Redis ``MONITOR``, kept to the HSET and HDEL of one ``unacked`` hash (a thread)."""

    LINE = re.compile(rb'^\+(\d+\.\d+) \[\d+ ([^\]\s]+)\] "(HSET|HDEL)" "([^"]*)" "([^"]*)"')

    def __init__(self, port: int, key: str, documents: str) -> None:
        self.port, self.key = port, key.encode()
        self.document = re.compile(documents.encode())
        self.changes: list[Change] = []
        self._lock = threading.Lock()
        self._sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self._sock.settimeout(None)
        self._sock.sendall(b"MONITOR\r\n")
        self._thread = threading.Thread(target=self._run, daemon=True, name="unacked-monitor")
        self._thread.start()

    def _run(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            for line in self._sock.makefile("rb"):
                match = self.LINE.match(line)
                if match is None or match[4] != self.key:
                    continue
                found = self.document.search(line) if match[3] == b"HSET" else None
                change = Change(float(match[1]), match[2].decode().rsplit(":", 1)[0], match[3].decode(),
                                match[5].decode(), found[0].decode() if found else None)
                with self._lock:
                    self.changes.append(change)

    def snapshot(self) -> list[Change]:
        with self._lock:
            return list(self.changes)

    def held(self, client: str, at: float | None = None) -> dict[str, str | None]:
        """Tag -> document of the entries ``client`` wrote that are still there (at ``at``)."""
        live: dict[str, Change] = {}
        for change in self.snapshot():
            if at is not None and change.at > at:
                break
            if change.command == "HSET":
                live[change.tag] = change
            else:
                live.pop(change.tag, None)
        return {tag: change.document for tag, change in live.items() if change.client == client}

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._thread.join(timeout=10)


def deletes_of_others(changes: list[Change]) -> list[Change]:
    """Each HDEL that removed an entry a different client wrote, replayed in Redis's order (a
    sweep's restore, which puts the message back in its queue, is one of them)."""
    live: dict[str, Change] = {}
    found = []
    for change in changes:
        if change.command == "HSET":
            live[change.tag] = change
            continue
        entry = live.pop(change.tag, None)
        if entry is not None and entry.client != change.client:
            found.append(change)
    return found


# --------------------------------------------------------------------------- the scenario


def _burst(producer: Producer, watcher: StoreWatcher, prefix: str, name: str, n: int) -> list[str]:
    ids = [producer.submit(make_document(f"{prefix}-{name}{i:03d}", BLOCKS, seed=i)).document_id
           for i in range(n)]
    for document_id in ids:
        watcher.want(document_id)
    return ids


@contextlib.contextmanager
def consumption_paused(producer: Producer, workers: list[Proc]) -> Iterator[None]:
    """The workers stop taking messages (remote control) until the block ends: a burst queued
    meanwhile is a backlog, so neither the producer's pace nor start-up skews what follows."""
    nodes = [proc.extra["node"] for proc in workers]
    replies = producer.app.control.cancel_consumer("chunking", destination=nodes, reply=True, timeout=5)
    assert len(replies) == len(nodes), replies
    yield
    replies = producer.app.control.add_consumer("chunking", destination=nodes, reply=True, timeout=5)
    assert len(replies) == len(nodes), replies


def test_a_worker_host_cut_off_the_network_mid_burst(space: Any, report: Report) -> None:
    base, logs = space
    with network() as net:
        hosts = [net.add_host(index) for index in range(1, HOSTS + 1)]
        server = RedisServer("fleet", base, logs, extra=["--bind", "127.0.0.1", net.gateway,
                                                         "--protected-mode", "no"]).start()
        prefix = f"lpnet-{uuid.uuid4().hex[:6]}"
        lease = {"lease_interval": LEASE_INTERVAL, "lease_timeout": LEASE_TIMEOUT}
        local = base_values(server.url, prefix, **lease)
        remote = base_values(f"redis://{net.gateway}:{server.port}/0", prefix, **lease)
        watcher = StoreWatcher(lambda: server.client(5), lambda d: f"{prefix}:result:{d}").start()
        workers: list[Proc] = []
        monitor: UnackedMonitor | None = None
        try:
            rates: list[float] = []
            with Producer(Settings(**local)) as producer:
                for count, host in enumerate(hosts, start=1):  # throughput on 1, 2, 3 hosts
                    workers.append(start_worker(f"host{count}", remote, logs, argv_prefix=host.exec_prefix()))
                    with consumption_paused(producer, workers):
                        ids = _burst(producer, watcher, prefix, f"t{count}-", THROUGHPUT_DOCS)
                    started = time.monotonic()
                    assert watcher.wait_all(ids, WINDOW_S), diagnose(server.client(), prefix, watcher, ids,
                                                                     workers)
                    rates.append(len(ids) / (max(watcher.seen[d] for d in ids) - started))
                    runs = task_runs(workers)
                    report(Row(f"fleet burst on {count} host(s) ({THROUGHPUT_DOCS} documents of {BLOCKS} "
                               "blocks, 2 processes per host)", len(ids), len(ids),
                               sum(1 for d in ids if runs[d] > 1), None,
                               f"{rates[-1]:.1f} documents/s (a queued backlog, first taken to last stored)"))

                monitor = UnackedMonitor(server.port, f"{prefix}-celery:unacked", rf"{prefix}-p\d{{3}}")
                with consumption_paused(producer, workers):
                    accepted = _burst(producer, watcher, prefix, "p", PARTITION_DOCS)
                wait_until(lambda: len(watcher.seen) >= HOSTS * THROUGHPUT_DOCS + 6, 60,
                           what="the burst to start")
                cut_host, cut_worker = hosts[0], workers[0]
                wait_until(lambda: len(monitor.held(cut_host.address)) >= 2, 30, 0.01,
                           what="the host to hold two messages")
                net.cut(cut_host)
                cut_at, cut_mono = time.time(), time.monotonic()
                time.sleep(0.5)  # what was in flight lands; the cut host writes nothing from now on
                held = monitor.held(cut_host.address, at=cut_at + 0.5)
                assert held and all(held.values()), held

                def taken_over() -> dict[str, float]:
                    taken: dict[str, float] = {}
                    for change in monitor.snapshot():
                        if (change.command == "HSET" and change.client != cut_host.address
                                and change.at > cut_at and change.document in held.values()):
                            taken.setdefault(change.document, change.at - cut_at)
                    return taken

                wait_until(lambda: len(taken_over()) == len(held), TAKEOVER_BOUND_S + 30, 0.05,
                           what="the other hosts to take over what the cut host held")
                assert cut_worker.alive(), "the cut host's worker must keep running"
                state = cut_host.link_state()
                assert "NO-CARRIER" in state or "LOWERLAYERDOWN" in state, state
                net.restore(cut_host)
                back = time.monotonic()
                takeover = taken_over()
                assert watcher.wait_all(accepted, WINDOW_S), diagnose(server.client(), prefix, watcher,
                                                                      accepted, workers)
                stored_after_cut = [watcher.seen[d] - cut_mono for d in held.values()]

                def late_acks() -> list[Change]:
                    return [c for c in monitor.snapshot() if c.client == cut_host.address
                            and c.command == "HDEL" and c.tag in held and c.at > cut_at]

                wait_until(lambda: {c.tag for c in late_acks()} == set(held), WINDOW_S, 0.2,
                           what="the cut host's late acknowledgements")
                client = server.client()
                wait_until(lambda: client.hlen(f"{prefix}-celery:unacked") == 0, 60, what="nothing held")
                changes = monitor.snapshot()
                records = {d: producer.fetch_record(d) for d in accepted}

            # fencing: the cut host's late acks found no entry (its old tags were put back under new
            # ones); and no host ever deleted an entry another host wrote, but the sweep's moves
            foreign = [c for c in deletes_of_others(changes) if c.client == cut_host.address]
            assert foreign == [], f"the cut host deleted entries other hosts held: {foreign}"
            # the new holder may have acknowledged before a late ack arrives, so the replay alone can
            # miss a fault: whatever the timing, a late ack must name no tag another host received
            received_by_others = {c.tag for c in changes
                                  if c.command == "HSET" and c.client != cut_host.address}
            named = [c for c in late_acks() if c.tag in received_by_others]
            assert named == [], f"late acks of the cut host name tags other hosts received: {named}"
            new_tags = {c.tag for c in changes if c.command == "HSET" and c.client != cut_host.address
                        and c.document in held.values() and c.at > cut_at}
            assert not new_tags & set(held), "a message put back kept its delivery tag"
            assert len(late_acks()) >= len(held)
            assert max(takeover.values()) <= TAKEOVER_BOUND_S, takeover
            assert cut_worker.alive()
            keys = sorted(k.decode() for k in client.scan_iter(match=f"{prefix}:result:*", count=1000))
            every = [d for burst in range(1, HOSTS + 1) for d in (f"{prefix}-t{burst}-{i:03d}"
                                                                  for i in range(THROUGHPUT_DOCS))] + accepted
            assert keys == sorted(f"{prefix}:result:{d}" for d in every), "each document under one key"
            assert {r["status"] for r in records.values()} == {"SUCCESS"}
            assert client.llen(f"{prefix}-celery:chunking") == 0
            runs = task_runs(workers)
            twice = sum(1 for d in accepted if runs[d] > 1)
            by_host = Counter({proc.name: sum(task_runs([proc]).values()) for proc in workers})
            last = max(watcher.seen[d] for d in accepted)
            report(Row(
                f"worker host cut off the network mid-burst ({HOSTS} hosts in network namespaces, "
                f"port down {back - cut_mono:.1f} s, lease {LEASE_INTERVAL:g} s / {LEASE_TIMEOUT:g} s)",
                len(accepted), sum(1 for d in accepted if d in watcher.seen), twice, max(0.0, last - back),
                f"cut worker alive throughout; it held {len(held)}: delivered to other hosts after "
                f"{', '.join(f'{s:.1f}' for s in sorted(takeover.values()))} s (bound "
                f"{TAKEOVER_BOUND_S:g} s), first stored (by any host) after "
                f"{', '.join(f'{max(0.0, s):.1f}' for s in sorted(stored_after_cut))} s; "
                f"its {len(late_acks())} late acks removed nothing others held; "
                f"runs per host {dict(by_host)}; throughput 1/2/3 hosts "
                f"{'/'.join(f'{r:.1f}' for r in rates)} documents/s"))
        finally:
            if monitor is not None:
                monitor.stop()
            watcher.stop()
            for proc in workers:
                proc.stop()
            server.stop()
