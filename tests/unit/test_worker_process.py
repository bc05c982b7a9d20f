"""The worker context and the start-up signals (no model, no Celery worker process).

What ``worker_init`` / ``worker_process_init`` do is called directly: the checks that refuse
to start (one line each), the context each process builds, and the consumer step that puts
back what a worker held when its broker connection dropped.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import fakeredis
import pytest
import redis.exceptions

import worker.context
import worker.signals
from config.settings import Settings, get_settings
from loaders.errors import ResourceUnavailable
from loaders.resources import ResourceSpec
from longparser.resources import Resources
from tests.unit.worker_fixtures import isolated_settings  # noqa: F401
from worker.celery_app import create_app
from worker.celery_compat import held_tags
from worker.redis_checks import UnsafeRedis, inspect_redis
from worker.restore import RestoreHeldMessages


class FakeEncoder:
    name, weights_sha256 = "fake-encoder", "0" * 64

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[1.0, 0.0] for _ in texts]


@pytest.fixture
def builds(isolated_settings: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:  # noqa: F811
    """Record build_resources calls; each returns fresh Resources with a fake encoder when semantic."""
    calls: list[dict[str, Any]] = []

    def fake_build(spec: ResourceSpec, tokenizers: Any = None) -> Resources:
        calls.append(dataclasses.asdict(spec))
        return Resources(encoder=FakeEncoder() if spec.encoder != "off" else None)

    monkeypatch.setattr(worker.context, "build_resources", fake_build)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    yield calls


def test_semantic_worker_loads_strictly_with_capped_threads_and_warms_up(builds: list) -> None:
    settings = Settings(semantic_enabled=True, torch_threads=3, model_path="/models/minilm",
                        language_id=False, word_list_path="/data/words")
    context = worker.context.child_context(settings)
    expected = {"word_list_path": "/data/words", "word_list": "required", "language_id": "off",
                "encoder": "required", "model_path": "/models/minilm", "threads": 3}
    assert [{name: call.get(name) for name in expected} for call in builds] == [expected]
    assert context.resources.encoder.calls == [list(worker.context.WARM_UP_TEXTS)]
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
    assert context.store.prefix == settings.key_prefix


@pytest.mark.parametrize(("env", "word_list", "language_id"), [
    ({}, "optional", "optional"),  # defaults: optional, one log line when absent
    ({"LONGPARSER_LANGUAGE_ID": "true"}, "optional", "required"),
    ({"LONGPARSER_WORD_LIST_PATH": "/srv/words"}, "required", "optional"),
    ({"LONGPARSER_WORD_LIST_PATH": "", "LONGPARSER_LANGUAGE_ID": "false"}, "off", "off"),
], ids=["defaults", "language-id-set", "word-list-set", "both-off"])
def test_explicit_resources_are_required_defaults_optional(
    builds: list, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], word_list: str, language_id: str,
) -> None:
    monkeypatch.delenv("LONGPARSER_WORD_LIST_PATH")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    worker.context.child_context(get_settings())
    [call] = builds
    assert call["encoder"] == "off"  # structural default: the encoder loader is never asked
    assert (call["word_list"], call["language_id"]) == (word_list, language_id)


def test_an_explicit_word_list_that_cannot_be_read_refuses_to_start(
    isolated_settings: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path  # noqa: F811
) -> None:
    missing = tmp_path / "no-words"
    settings = Settings(word_list_path=str(missing), language_id=False)
    monkeypatch.setattr(worker.signals, "preflight_redis", lambda settings: None)
    with pytest.raises(SystemExit) as caught:
        worker.signals.check_worker_can_start(settings)
    message = str(caught.value)
    assert message.startswith(f"longparser worker: cannot start: word list {missing} cannot be read")
    assert "set explicitly: fix it or unset it" in message
    assert "check off" not in message  # a refusal never claims the check was merely turned off
    assert "\n" not in message
    with pytest.raises(ResourceUnavailable):  # the child refuses the same way
        worker.context.child_context(settings)


def test_structural_worker_skips_the_semantic_preflight(
    isolated_settings: str, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    monkeypatch.setattr(worker.signals, "preflight_semantic", lambda *_: pytest.fail("preflight ran"))
    monkeypatch.setattr(worker.signals, "preflight_redis", lambda settings: None)
    worker.signals.check_worker_can_start(Settings(word_list_path=None))


def test_semantic_worker_refuses_to_start_without_its_model_saying_so_once(
    isolated_settings: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings(semantic_enabled=True, model_path=str(tmp_path), word_list_path=None,
                        language_id=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(worker.signals, "preflight_redis", lambda settings: None)
    with pytest.raises(SystemExit) as caught:
        worker.signals.check_worker_can_start(settings)
    message = str(caught.value)
    assert message.startswith("longparser worker: semantic mode enabled but the model is unavailable: ")
    assert f"model directory {tmp_path} has no model.safetensors" in message
    assert message.count("pip install -e '.[embeddings-cpu]'") == 1
    assert "embeddings-cpu" not in caplog.text  # the install hint is printed once, by the exit


@pytest.mark.parametrize(
    ("backend", "module", "message"),
    [
        ("torch", "sentence_transformers",
         "sentence-transformers is not installed; install the CPU embedding stack: "),
        ("onnx", "onnxruntime",
         "encoder backend 'onnx' needs onnxruntime, which is not installed; pip install -e '.[onnx]'"),
        ("onnx-int8", "onnxruntime",
         "encoder backend 'onnx-int8' needs onnxruntime, which is not installed; pip install -e '.[onnx]'"),
        ("openvino", "openvino",
         "encoder backend 'openvino' needs openvino, which is not installed; pip install -e '.[openvino]'"),
    ],
)  # fmt: skip
def test_semantic_worker_refuses_to_start_without_its_backend_s_package(
    isolated_settings: str, monkeypatch: pytest.MonkeyPatch, backend: str, module: str,  # noqa: F811
    message: str,
) -> None:
    looked_up: list[str] = []

    def find_spec(name: str) -> Any:
        looked_up.append(name)
        return None if name == module else object()

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(worker.signals, "preflight_redis", lambda settings: None)
    monkeypatch.setattr(worker.signals, "checked_model_dir", lambda *_: pytest.fail("weights hashed first"))
    with pytest.raises(SystemExit) as caught:
        worker.signals.check_worker_can_start(Settings(semantic_enabled=True, encoder_backend=backend))
    text = str(caught.value)
    prefix = "longparser worker: semantic mode enabled but the model is unavailable: "
    assert text.startswith(prefix + message)
    assert "\n" not in text
    assert looked_up == [module]  # the configured backend's package only, located, not imported


@pytest.mark.parametrize("backend", ["torch", "onnx", "onnx-int8", "openvino"])
def test_semantic_preflight_passes_when_the_backend_s_package_is_there(
    isolated_settings: str, monkeypatch: pytest.MonkeyPatch, backend: str  # noqa: F811
) -> None:
    from loaders.encoder_backends import RUNTIME_MODULE

    present = {RUNTIME_MODULE[backend]}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if name in present else None)
    checked: list[Any] = []
    monkeypatch.setattr(worker.signals, "checked_model_dir", lambda *args: checked.append(args))
    worker.signals.preflight_semantic("/models/minilm", backend)
    assert checked == [("/models/minilm", worker.signals.PINNED_SHA256)]


def test_child_that_cannot_build_its_context_stops_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[tuple[Any, ...]] = []
    monkeypatch.setattr(worker.signals.os, "kill", lambda pid, sig: events.append(("kill", pid, sig)))
    monkeypatch.setattr(worker.signals.os, "_exit", lambda code: events.append(("exit", code)))
    worker.signals.stop_worker_from_child(RuntimeError("model file vanished"))
    assert events == [("kill", os.getppid(), signal.SIGTERM), ("exit", 1)]


def test_app_carries_no_context_until_a_process_builds_one(isolated_settings: str) -> None:  # noqa: F811
    app = create_app(Settings(word_list_path=None), main="context-test")
    assert app.context is None
    assert any(step is RestoreHeldMessages for step in app.steps["consumer"])


# --------------------------------------------------------------------------- Redis checks


def _redis_with(**config: str) -> Any:
    client = fakeredis.FakeRedis()
    client.config_get = lambda name: {name: config.get(name, "")}  # type: ignore[method-assign]
    return client


@pytest.mark.parametrize("policy", ["allkeys-lru", "volatile-ttl", "allkeys-random"])
def test_an_evicting_redis_is_refused_unless_accepted(policy: str) -> None:
    client = _redis_with(**{"maxmemory-policy": policy, "appendonly": "yes"})
    with pytest.raises(UnsafeRedis, match=f"maxmemory-policy {policy}: .*LONGPARSER_ALLOW_EVICTING_REDIS"):
        inspect_redis(client, Settings(), "the broker")
    accepted = inspect_redis(client, Settings(allow_evicting_redis=True), "the broker")
    assert accepted.policy == policy and "accepted" in accepted.warnings[0]


def test_redis_without_persistence_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    verdict = inspect_redis(_redis_with(**{"maxmemory-policy": "noeviction", "appendonly": "no", "save": ""}),
                            Settings(), "the broker")
    assert (verdict.aof, verdict.rdb) == (False, False)
    assert "neither AOF (appendonly) nor RDB" in caplog.text
    safe = inspect_redis(_redis_with(**{"maxmemory-policy": "noeviction", "appendonly": "yes"}),
                         Settings(), "x")
    assert safe.warnings == ()


def test_config_get_refused_warns_and_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    client = fakeredis.FakeRedis()

    def forbidden(name: str) -> Any:
        raise redis.exceptions.NoPermissionError("NOPERM this user has no permissions to run 'config|get'")

    client.config_get = forbidden  # type: ignore[method-assign]
    verdict = inspect_redis(client, Settings(), "the broker")
    assert verdict.policy is None
    assert "cannot read the configuration of the broker" in caplog.text


# --------------------------------------------------------------------------- restore step


class FakeQoS:
    def __init__(self, delivered: list[str], dirty: set[str] | None = None, fail_after: int | None = None):
        self._delivered = dict.fromkeys(delivered, object())
        self._dirty = dirty or set()
        self.restored: list[str] = []
        self.fail_after = fail_after

    def restore_by_tag(self, tag: str, client: Any = None, leftmost: bool = False) -> None:
        if self.fail_after is not None and len(self.restored) >= self.fail_after:
            raise redis.exceptions.ConnectionError("gone again")
        self.restored.append(tag)

    def requeue_through(self, live: FakeQoS, tag: str) -> None:
        live.restore_by_tag(tag)  # HoldingQoS's path for a message in the unacked hash


def _consumer(qos: FakeQoS) -> Any:
    channel = type("Channel", (), {"qos": qos})()
    return type("Consumer", (), {"task_consumer": type("TC", (), {"channel": channel})()})()


def test_restore_step_requeues_what_the_old_channel_held_on_reconnect() -> None:
    step = RestoreHeldMessages(_consumer(FakeQoS([])))
    old = FakeQoS(["t1", "t2", "t3"], dirty={"t2"})  # t2 was acknowledged
    step.start(_consumer(old))
    assert old.restored == []  # first start: nothing to restore
    assert held_tags(old) == ["t1", "t3"]
    new = FakeQoS([])
    step.start(_consumer(new))  # reconnected: the old channel's failed restore is redone here
    assert new.restored == ["t1", "t3"]
    assert step.restored_total == 2
    newer = FakeQoS([])
    step.start(_consumer(newer))
    assert newer.restored == []  # each message once


def test_restore_step_without_a_task_consumer_stops_the_start_instead_of_skipping() -> None:
    step = RestoreHeldMessages(_consumer(FakeQoS([])))
    with pytest.raises(RuntimeError, match="restore on reconnect and leases cannot run"):
        step.start(type("Consumer", (), {"task_consumer": None})())


def test_restore_step_keeps_what_it_could_not_restore_for_the_next_start() -> None:
    step = RestoreHeldMessages(_consumer(FakeQoS([])))
    old = FakeQoS(["t1", "t2"])
    step.start(_consumer(old))
    flaky = FakeQoS([], fail_after=1)
    step.start(_consumer(flaky))
    assert flaky.restored == ["t1"]
    again = FakeQoS([])
    step.start(_consumer(again))
    assert again.restored == ["t2"]


# --------------------------------------------------------------------------- transport


class StubChannel:
    """Just what kombu's Redis QoS reads from its channel, on a fakeredis (or a dead) client."""

    unacked_key, unacked_index_key = "unacked", "unacked_index"
    unacked_mutex_key, unacked_mutex_expire, visibility_timeout, do_restore = "mutex", 300, 3600, True

    def __init__(self, client: Any, attached: bool = True) -> None:
        self.client = client
        self.connection = SimpleNamespace(client=object()) if attached else None

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        yield self.client

    def _do_restore_message(self, payload: Any, exchange: str, routing_key: str, pipe: Any,
                            leftmost: bool = False) -> None:
        pipe.rpush(routing_key, json.dumps(payload))


class DeadRedis:
    """Every command fails as if Redis had just gone away."""

    def pipeline(self, *args: Any, **kwargs: Any) -> Any:
        return self

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise redis.exceptions.ConnectionError("Connection closed by server.")
        return fail


def _message(tag: str) -> Any:
    raw = {"body": tag, "headers": {}, "properties": {"delivery_tag": tag, "delivery_info": {}}}
    return SimpleNamespace(delivery_info={"exchange": "", "routing_key": "chunking"}, _raw=raw)


def test_a_message_taken_off_its_queue_as_redis_drops_is_put_back_on_reconnect() -> None:
    from worker.transport import HoldingQoS

    old = HoldingQoS(StubChannel(DeadRedis()))
    old.restore_at_shutdown = False  # no restore attempt at interpreter exit
    old.append(_message("t1"), "t1")  # BRPOP returned it, the unacked entry could not be written
    assert held_tags(old) == ["t1"] and "t1" in old.unwritten
    old.channel.connection = None  # the consumer closed the channel
    live = fakeredis.FakeRedis()
    current = HoldingQoS(StubChannel(live))
    step = RestoreHeldMessages(_consumer(FakeQoS([])))
    step.previous = [old]
    step.start(_consumer(current))
    assert [json.loads(item)["body"] for item in live.lrange("chunking", 0, -1)] == ["t1"]
    assert held_tags(old) == [] and old.unwritten == {}


def test_acks_of_an_old_channel_go_through_its_successor() -> None:
    from worker.transport import HoldingQoS

    live = fakeredis.FakeRedis()
    old = HoldingQoS(StubChannel(live))
    old.append(_message("t1"), "t1")  # written: the unacked hash holds it
    assert live.hexists("unacked", "t1")
    old.channel.connection = None  # closed by the connection loss; the task still runs
    old.successor = HoldingQoS(StubChannel(live))
    old.ack("t1")
    assert not live.hexists("unacked", "t1")
    assert held_tags(old) == []


def test_a_failed_ack_keeps_the_message_held_instead_of_crashing() -> None:
    from worker.transport import HoldingQoS

    live = fakeredis.FakeRedis()
    qos = HoldingQoS(StubChannel(live))
    qos.restore_at_shutdown = False
    qos.append(_message("t1"), "t1")
    qos.channel.client = DeadRedis()
    qos.ack("t1")  # logged, not raised: the worker keeps running
    assert held_tags(qos) == ["t1"]


# --------------------------------------------------------------------------- serialization


@pytest.mark.parametrize("body", [
    '[[{"document_id": "d", "blocks": [{"block_id": "b", "type": "paragraph"}]}], {}, {}]',
    '{"eta": {"__type__": "datetime", "__value__": "2026-01-02T03:04:05"}, "n": 1}',
    b'{"a": [1, 2.5, null, true, "\\u00e9"]}',
])
def test_fast_json_decodes_exactly_like_kombu(body: Any) -> None:
    from kombu.utils import json as kombu_json

    from worker.celery_compat import fast_json_loads

    assert fast_json_loads(body) == kombu_json.loads(body)


def test_only_a_starting_worker_decodes_json_bodies_with_the_fast_decoder(
    isolated_settings: str, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    from kombu.serialization import loads, registry
    from kombu.utils import json as kombu_json

    import worker.celery_compat as compat

    seen: list[Any] = []
    fast = compat.fast_json_loads
    monkeypatch.setattr(compat, "fast_json_loads", lambda data: seen.append(data) or fast(data))
    monkeypatch.setattr(worker.signals, "check_worker_can_start", lambda settings: None)
    monkeypatch.setattr(worker.signals, "parent_context", lambda settings: "parent context")
    body = '{"a": 1}'
    app = create_app(Settings(word_list_path=None), main="serialization-test")
    assert loads(body, "application/json", "utf-8") == {"a": 1} and seen == []  # the app alone: kombu's
    try:
        worker.signals.worker_init.send(sender=type("WorkController", (), {"app": app})())  # celery worker's
        assert app.context == "parent context"
        assert loads(body, "application/json", "utf-8") == {"a": 1} and seen == [body]
    finally:  # kombu's own codec back, as kombu registers it
        registry.register("json", kombu_json.dumps, kombu_json.loads, content_type="application/json",
                          content_encoding="utf-8")


# --------------------------------------------------------------------------- signals, per app


def test_signal_handlers_act_only_for_a_worker_of_their_own_app(
    isolated_settings: str, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    built: list[str] = []
    monkeypatch.setattr(worker.signals, "child_context",
                        lambda settings, _: built.append(settings.key_prefix) or settings.key_prefix)
    first = create_app(Settings(word_list_path=None, key_prefix="first"), main="first")
    second = create_app(Settings(word_list_path=None, key_prefix="second"), main="second")
    second.set_current()  # what a pool child does for its worker's app before worker_process_init
    worker.signals.worker_process_init.send(sender="node@host")
    assert built == ["second"] and (first.context, second.context) == (None, "second")
    first.set_current()
    worker.signals.worker_process_init.send(sender="node@host")
    assert built == ["second", "first"] and first.context == "first"
    assert len(first.signal_handlers) == len(second.signal_handlers) == 6


# --- ready means ready: the parent waits for its pool processes (worker.readiness) ---------------


def test_pool_readiness_counts_the_children_that_built_their_context() -> None:
    import multiprocessing

    from worker.readiness import PoolReadiness

    readiness = PoolReadiness()  # made before the fork, as on worker_init
    children = [multiprocessing.get_context("fork").Process(target=readiness.child_ready) for _ in range(2)]
    for child in children:
        child.start()
    assert readiness.wait(2, limit_s=30) == 2
    for child in children:
        child.join(10)
    assert readiness.wait(1, limit_s=0.3) == 0  # nobody else is loading: the limit ends the wait


def test_pool_readiness_stops_waiting_when_a_shutdown_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from celery.worker import state

    from worker.readiness import PoolReadiness

    monkeypatch.setattr(state, "should_stop", 0)  # a warm shutdown, exit code 0 (falsy, still a request)
    started = time.monotonic()
    assert PoolReadiness().wait(2, limit_s=60) == 0
    assert time.monotonic() - started < 5


def test_the_worker_waits_for_its_pool_before_the_consumer_starts(isolated_settings: str) -> None:  # noqa: F811
    from worker.readiness import WaitForPoolProcesses

    app = create_app(Settings(word_list_path=None, language_id=False))
    assert WaitForPoolProcesses in app.steps["worker"]
    assert "celery.worker.components:Pool" in WaitForPoolProcesses.requires
