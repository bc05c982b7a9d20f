"""Least privilege on Redis: the fleet over TLS only, workers, producers and consumers of completion
events as the ACL users of docs/operations.md (the three ``user`` lines are read from that page, so
the page is what is tested).

One scenario, with production flags (events, heartbeats, mingle, gossip): a TLS-only
redis-server (certificates made here with ``openssl``), two workers, a burst submitted by a
producer process, a bad payload (a FAILURE record and Celery's failure state), a warm shutdown
of one worker mid-burst (kombu puts back what it held), ``longparser submit --wait`` and
``celery inspect ping`` (the compose healthcheck) with the users' URLs, and the completion events
consumed through a consumer group by the events user (``LONGPARSER_EVENTS_URL``). Every document
ends stored; ``ACL LOG`` shows no refusal but the worker's ``CONFIG GET`` (its start-up check
warns); then the producer's reads and deletes outside its keys, its consumer-group commands
(it may neither read through another service's group nor acknowledge its entries: Redis ACLs
cannot restrict a user to one group), and every user's FLUSHALL, KEYS and CONFIG SET, are refused
with NOPERM.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from config.settings import Settings
from service.events import EventConsumer
from service.keys import TASK_NAME
from tasks.client import Producer, producer_celery
from tests.faults.harness import (
    CELERY,
    REDIS_SERVER,
    REPO_ROOT,
    Proc,
    RedisServer,
    Report,
    Row,
    StoreWatcher,
    events_missing,
    make_document,
    settings_env,
    spawn,
    task_runs,
    wait_until,
)

OPERATIONS = REPO_ROOT / "docs" / "operations.md"
KEY_PREFIX, CELERY_PREFIX = "longparser", "lpcelery:"  # the names the documented rules are written for
USERS = ("longparser-worker", "longparser-producer", "longparser-events", "default")
DOCUMENTED_PASSWORDS = {"longparser-worker": ">WORKER_PASSWORD", "longparser-producer": ">PRODUCER_PASSWORD",
                        "longparser-events": ">EVENTS_PASSWORD"}
PASSWORDS = {user: f"{user}-{uuid.uuid4().hex}" for user in USERS}
BURST, BLOCKS = 24, 2000
LONGPARSER = str(Path(sys.executable).with_name("longparser"))


def documented_users() -> dict[str, str]:
    """The ``user ...`` lines of the ```acl block of docs/operations.md, by user name."""
    block = re.search(r"```acl\n(.*?)```", OPERATIONS.read_text(), re.DOTALL)
    assert block, "docs/operations.md has no ```acl block"
    users = {line.split()[1]: line for line in block[1].splitlines() if line.startswith("user ")}
    assert set(users) == set(DOCUMENTED_PASSWORDS)
    return users


def acl_lines(passwords: dict[str, str]) -> list[str]:
    """The documented ``user`` lines with ``passwords`` (by user name) in place of the placeholders."""
    return [line.replace(DOCUMENTED_PASSWORDS[user], ">" + passwords[user])
            for user, line in documented_users().items()]


@dataclass(frozen=True)
class Certificates:
    ca: Path
    cert: Path
    key: Path


def make_certificates(directory: Path) -> Certificates:
    """A CA and a server certificate for 127.0.0.1 signed by it (openssl)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("the TLS scenario needs openssl on PATH (Debian: apt-get install openssl)")
    ca, ca_key = directory / "ca.pem", directory / "ca.key"
    cert, key, csr = directory / "server.pem", directory / "server.key", directory / "server.csr"
    extensions = directory / "server.ext"
    extensions.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for argv in (
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
         "-days", "2", "-subj", "/CN=longparser-test-ca"],
        [openssl, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
         "-subj", "/CN=localhost"],
        [openssl, "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
         "-days", "2", "-extfile", extensions],
    ):
        subprocess.run([str(a) for a in argv], check=True, capture_output=True, timeout=60)
    return Certificates(ca, cert, key)


class TLSRedis(RedisServer):
    """A TLS-only redis-server (``--port 0``) with the documented ACL users, without persistence."""

    def __init__(self, base: Path, logs: Path, certificates: Certificates, acl_file: Path) -> None:
        super().__init__("tls", base, logs)
        self.certificates, self.acl_file = certificates, acl_file

    def url(self, user: str) -> str:  # type: ignore[override]
        return (f"rediss://{user}:{PASSWORDS[user]}@127.0.0.1:{self.port}/0?ssl_cert_reqs=required"
                f"&ssl_ca_certs={self.certificates.ca}")

    def client(self, timeout: float = 2.0, user: str = "default") -> redis.Redis:
        return redis.Redis(port=self.port, username=user, password=PASSWORDS[user], ssl=True,
                           ssl_ca_certs=str(self.certificates.ca), ssl_cert_reqs="required",
                           socket_connect_timeout=timeout, socket_timeout=timeout)

    def start(self) -> TLSRedis:
        tls = self.certificates
        argv = [REDIS_SERVER, "--port", "0", "--tls-port", str(self.port), "--bind", "127.0.0.1",
                "--tls-cert-file", str(tls.cert), "--tls-key-file", str(tls.key),
                "--tls-ca-cert-file", str(tls.ca),
                "--tls-auth-clients", "no", "--dir", str(self.dir), "--save", "", "--appendonly", "no",
                "--maxmemory-policy", "noeviction", "--aclfile", str(self.acl_file)]
        self.proc = spawn("redis-tls", argv, self.log_dir)
        wait_until(lambda: self.answers() or not self.proc.alive(), 20, what="redis over TLS")
        if not self.proc.alive():
            raise RuntimeError(f"redis-server exited:\n{self.proc.log_text()[-2000:]}")
        return self


def settings_for(server: TLSRedis, user: str) -> dict[str, Any]:
    url = server.url(user)
    return {"broker_url": url, "result_url": url, "key_prefix": KEY_PREFIX,
            "celery_key_prefix": CELERY_PREFIX, "word_list_path": "", "language_id": False}


def start_production_worker(name: str, values: dict[str, Any], logs: Path, *options: str) -> Proc:
    """A worker as compose runs it: events, heartbeats, mingle and gossip on."""
    node = f"{name}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
    argv = [CELERY, "-A", "worker", "worker", "-P", "prefork", "-n", node, "-Q", "chunking", "-E",
            "-l", "INFO", *options]
    env = settings_env(values)
    env["PYTHONPATH"] = str(REPO_ROOT)
    proc = spawn(f"worker-{name}", argv, logs, env=env)
    proc.extra["node"] = node
    wait_until(lambda: (not proc.alive()) or " ready." in proc.log_text(), 90, 0.1, what=f"worker {name}")
    if not proc.alive():
        raise RuntimeError(f"worker {name} exited:\n{proc.log_text()[-3000:]}")
    return proc


def acl_refusals(admin: redis.Redis) -> set[tuple[str, str, str]]:
    """``(user, reason, object)`` of every entry of ``ACL LOG``."""
    return {(_text(e["username"]), _text(e["reason"]), _text(e["object"])) for e in admin.acl_log(count=1000)}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _refused(call: Any) -> bool:
    try:
        call()
    except redis.exceptions.NoPermissionError:
        return True
    return False


def test_the_fleet_runs_over_tls_with_least_privilege_users(space: Any, report: Report) -> None:
    base, logs = space
    acl_file = base / "users.acl"
    lines = [f"user default on >{PASSWORDS['default']} ~* &* +@all", *acl_lines(PASSWORDS)]
    acl_file.write_text("\n".join(lines) + "\n")
    server = TLSRedis(base, logs, make_certificates(base), acl_file).start()
    admin = server.client()
    worker_values = settings_for(server, "longparser-worker")
    producer_values = settings_for(server, "longparser-producer")
    watcher = StoreWatcher(lambda: server.client(5), lambda d: f"{KEY_PREFIX}:result:{d}").start()
    workers: list[Proc] = []
    try:
        prefix = f"lp-acl-{uuid.uuid4().hex[:6]}"
        with Producer(Settings(**producer_values)) as producer:  # the backlog first
            accepted = [producer.submit(make_document(f"{prefix}-d{i:02d}", BLOCKS, seed=i)).document_id
                        for i in range(BURST)]
            # and one over the reference threshold: the producer writes its bytes, a worker reads
            # and deletes them (service/payloads.py), each under its documented rule
            accepted.append(producer.submit(make_document(f"{prefix}-ref", 4000, seed=99)).document_id)
        bad = f"{prefix}-bad"  # a FAILURE record and Celery's failure state (SETEX + PUBLISH)
        app = producer_celery(Settings(**producer_values))
        bad_payload = {"document_id": bad, "blocks": [{"block_id": "b", "type": "banana"}]}
        app.send_task(TASK_NAME, args=[bad_payload], queue="chunking", retry=False, ignore_result=True)
        app.close()
        for document_id in [*accepted, bad]:
            watcher.want(document_id)
        # One process holding four messages: at its warm shutdown three wait unstarted, and kombu
        # puts them back (its restore path, under the worker's rule).
        first = start_production_worker("first", worker_values, logs, "-c", "1", "--prefetch-multiplier", "4")
        workers.append(first)
        assert "cannot read the configuration" in first.log_text()  # CONFIG GET refused: one warning
        wait_until(lambda: len(watcher.seen) >= 4, 120, 0.02, what="the burst to start")
        first.signal(15)  # warm shutdown
        first.popen.wait(timeout=90)
        assert first.popen.returncode == 0, first.log_text()[-2000:]
        # The second starts once the first is stopping: a fast worker would otherwise have drained
        # the whole backlog alone while the second started, and held nothing unstarted.
        second = start_production_worker("second", worker_values, logs, "-c", "2")
        workers.append(second)
        assert watcher.wait_all([*accepted, bad], 180), f"stored {len(watcher.seen)} of {len(accepted) + 1}"
        failure = admin.get(f"{KEY_PREFIX}:result:{bad}")
        assert failure is not None and b'"FAILURE"' in failure

        document = base / "one.json"
        document.write_text(json.dumps({"document_id": f"{prefix}-one", "blocks": [
            {"block_id": "b1", "type": "paragraph", "text": "Round trip over TLS."}]}))
        cli_env = settings_env(producer_values)
        done = subprocess.run([LONGPARSER, "submit", str(document), "--wait", "--timeout", "60"],
                              env=cli_env, cwd=base, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        assert '"Round trip over TLS."' in done.stdout
        ping = subprocess.run(
            [CELERY, "-A", "worker", "inspect", "ping", "--destination", second.extra["node"],
             "--timeout", "10"],
            env={**settings_env(worker_values), "PYTHONPATH": str(REPO_ROOT)}, cwd=REPO_ROOT,
            capture_output=True, text=True, timeout=120, check=False)
        assert ping.returncode == 0 and "pong" in ping.stdout, ping.stdout + ping.stderr

        assert events_missing(admin, KEY_PREFIX, [*accepted, bad]) == []  # each record has its event
        # An upload service consumes the completion stream as the events user (LONGPARSER_EVENTS_URL):
        # a consumer group from the start of the stream, every stored document's event; pending
        # until acknowledged.
        events_settings = Settings(**producer_values, events_url=server.url("longparser-events"))
        consumer = EventConsumer.from_settings(events_settings, "acl-test", "c1", block_s=0.5, count=1000)
        consumer.create_group(start="0")
        consumed = consumer.read()
        assert {e.document_id for e in consumed} >= {*accepted, bad}
        events = f"{KEY_PREFIX}:events"
        pending = admin.xpending(events, "acl-test")["pending"]
        assert pending == len(consumed)

        refusals = acl_refusals(admin)
        assert refusals == {("longparser-worker", "command", "config|get")}, refusals

        # The producer user waits on the stream (submit --wait above: XREVRANGE, XREAD) but can
        # neither read through the service's group nor acknowledge its pending entries.
        producer_client = server.client(user="longparser-producer")
        assert producer_client.xrevrange(events, count=1) and producer_client.xread({events: "0-0"}, count=1)
        assert _refused(lambda: producer_client.xreadgroup("acl-test", "thief", {events: ">"}, count=10))
        assert _refused(lambda: producer_client.xreadgroup("acl-test", "c1", {events: "0"}, count=10))
        assert _refused(lambda: producer_client.xack(events, "acl-test", consumed[0].id))
        assert _refused(lambda: producer_client.xgroup_create(events, "thieves", id="0"))
        assert _refused(lambda: producer_client.xautoclaim(events, "acl-test", "thief", 0))
        assert admin.xpending(events, "acl-test")["pending"] == pending  # nothing taken, nothing acked
        consumer.ack(*[e.id for e in consumed])
        assert admin.xpending(events, "acl-test")["pending"] == 0
        events_client = server.client(user="longparser-events")  # groups, not the stream's contents
        assert _refused(lambda: events_client.xadd(events, {"document_id": "forged"}))
        assert _refused(lambda: events_client.delete(events))
        assert _refused(lambda: events_client.xgroup_destroy(events, "acl-test"))
        consumer.close()

        other = f"otherapp:{uuid.uuid4().hex}"
        admin.set(other, "secret")
        result = f"{KEY_PREFIX}:result:{accepted[0]}"
        assert producer_client.get(result) is not None  # results: readable
        assert _refused(lambda: producer_client.get(other))
        assert _refused(lambda: producer_client.delete(other))
        assert _refused(lambda: producer_client.delete(result))
        assert _refused(lambda: producer_client.set(result, "forged"))
        # the producer reads events, never writes them
        assert _refused(lambda: producer_client.xadd(events, {"document_id": "forged"}))
        assert _refused(lambda: producer_client.set(events, "forged"))
        assert _refused(lambda: producer_client.delete(events))
        worker_client = server.client(user="longparser-worker")
        for client in (producer_client, worker_client, events_client):
            assert _refused(client.flushall)
            assert _refused(lambda c=client: c.keys("*"))
            assert _refused(lambda c=client: c.config_set("maxmemory", "1"))
        assert admin.get(other) == b"secret" and admin.get(result) != b"forged"

        runs = task_runs(workers)
        put_back = sum(map(int, re.findall(r"Restoring (\d+) unacknowledged message", first.log_text())))
        assert put_back > 0, "the stopped worker held messages it had not started"
        report(Row("TLS only, the documented ACL users, warm shutdown of one of two workers mid-burst",
                   len(accepted) + 1, len([d for d in [*accepted, bad] if d in watcher.seen]),
                   sum(1 for d in accepted if runs[d] > 1), None,
                   "ACL LOG: only the worker's CONFIG GET; the producer's GET/DEL of another prefix, DEL/SET "
                   "of a result, XADD/SET/DEL of the event stream, XREADGROUP/XACK/XGROUP CREATE/XAUTOCLAIM, "
                   "FLUSHALL/KEYS/CONFIG SET refused; every record's event consumed and acked as the events "
                   "user; submit --wait, inspect ping ok; "
                   f"the stopped worker put back {put_back} message(s)"))
    finally:
        watcher.stop()
        for proc in workers:
            proc.stop()
        server.stop()
