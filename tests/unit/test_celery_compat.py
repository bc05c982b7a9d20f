"""The start-up self-check of worker/celery_compat.py: tested versions, present internals.

What the internals *do* is the contract test's (tests/integration/test_kombu_contract.py); here:
the installed releases pass, a newer kombu (a fake dist-info ahead of site-packages, as ``pip
install -U kombu`` would leave it) stops a real ``celery -A worker worker`` with one line, the
operator's explicit acceptance turns that into one warning, and each internal, removed or given
another signature, is named by the check.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kombu.transport import redis as kombu_redis

from worker import celery_compat as compat

ROOT = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))
NEWER_KOMBU = "5.99.0"


def test_the_installed_releases_and_internals_pass() -> None:
    assert compat.version_problems() == []
    assert compat.internal_problems() == []
    assert compat.check_dependencies(accept_untested=False) == []


def test_the_tested_ranges_are_compatible_releases_of_the_pinned_three() -> None:
    ranges = compat.tested_ranges()
    assert set(ranges) == set(compat.PINNED)
    for specifier in ranges.values():
        (only,) = list(specifier)
        assert only.operator == "~=" and only.version.count(".") == 2  # patch releases only


@pytest.mark.parametrize(("name", "installed", "refused"), [
    ("kombu", "5.7.3", False), ("kombu", "5.8.0", True), ("celery", "6.0.0", True),
    ("redis", "8.0.9", True), ("redis", "8.1.5", False),
])
def test_a_release_outside_its_range_is_named(monkeypatch: pytest.MonkeyPatch, name: str, installed: str,
                                              refused: bool) -> None:
    real = compat.metadata.version
    monkeypatch.setattr(compat.metadata, "version", lambda dist: installed if dist == name else real(dist))
    tested = compat.tested_ranges()[name]
    expected = [f"{name} {installed} is outside the tested range {name}{tested}"] if refused else []
    assert compat.version_problems() == expected


def _without(internal: compat.Internal, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``internal`` disappear the way an upstream rename would."""
    if internal.instance is None:
        monkeypatch.delattr(internal.owner, internal.attribute)
        return
    init = internal.owner.__init__

    def init_without(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        for made in (self, *args):  # the instance, or the object it is made for (Celery's Tasks step)
            getattr(made, "__dict__", {}).pop(internal.attribute, None)

    monkeypatch.setattr(internal.owner, "__init__", init_without)
    if internal.attribute in vars(internal.owner):  # kombu declares some at class level too
        monkeypatch.delattr(internal.owner, internal.attribute)


@pytest.mark.parametrize("internal", compat.INTERNALS, ids=lambda internal: internal.path)
def test_each_internal_removed_is_named_in_one_line(internal: compat.Internal,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _without(internal, monkeypatch)
    problems = compat.internal_problems()
    assert [p for p in problems if p.startswith(f"{internal.path} ")], problems
    with pytest.raises(compat.UntestedDependencies) as refused:
        compat.check_dependencies(accept_untested=False)
    message = str(refused.value)
    assert internal.path in message and "\n" not in message
    assert message.endswith("or set LONGPARSER_ACCEPT_UNTESTED_DEPS=true to run untested")


def test_a_reordered_signature_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def reordered(self: Any, exchange: str, routing_key: str, payload: Any, pipe: Any,
                  leftmost: bool = False) -> None:
        raise AssertionError("never called by the check")

    monkeypatch.setattr(kombu_redis.Channel, "_do_restore_message", reordered)
    assert compat.internal_problems() == [
        "kombu.transport.redis.Channel._do_restore_message takes (self, exchange, routing_key, payload, "
        "pipe, leftmost), not (self, payload, exchange, routing_key, pipe, leftmost, ...)"]


def test_accepting_untested_dependencies_is_one_warning(monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delattr(kombu_redis.QoS, "restore_by_tag")
    with caplog.at_level(logging.WARNING, logger=compat.__name__):
        accepted = compat.check_dependencies(accept_untested=True)
    assert accepted == ["kombu.transport.redis.QoS.restore_by_tag is missing"]
    assert [r.getMessage() for r in caplog.records] == [
        "running on untested dependencies (LONGPARSER_ACCEPT_UNTESTED_DEPS=true): "
        "kombu.transport.redis.QoS.restore_by_tag is missing"]


def test_a_missing_package_metadata_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(name: str) -> Any:
        raise compat.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(compat.metadata, "requires", not_installed)
    assert compat.version_problems() == [
        "longparser-worker is not installed (pip install -e .), so the tested ranges of celery, kombu, "
        "redis are unknown"]


# --------------------------------------------------------------------------- a newer kombu, for real


@pytest.fixture
def newer_kombu(tmp_path: Path) -> dict[str, str]:
    """The environment of a process whose ``importlib.metadata`` reports kombu 5.99.0 (a dist-info
    ahead of site-packages), with the settings of the test and no broker to reach."""
    site = tmp_path / "site"
    dist_info = site / f"kombu-{NEWER_KOMBU}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: kombu\nVersion: {NEWER_KOMBU}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LONGPARSER_")}
    env.update({"PYTHONPATH": str(site), "LONGPARSER_BROKER_URL": "redis://127.0.0.1:9/0",
                "LONGPARSER_RESULT_URL": "redis://127.0.0.1:9/0", "LONGPARSER_WORD_LIST_PATH": "",
                "LONGPARSER_LANGUAGE_ID": "false"})
    return env


def test_a_worker_on_a_newer_kombu_refuses_to_start_with_one_line(newer_kombu: dict[str, str],
                                                                    tmp_path: Path) -> None:
    done = subprocess.run([CELERY, "-A", "worker", "worker", "-P", "solo", "-l", "INFO"], cwd=tmp_path,
                          env=newer_kombu, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0
    output = (done.stdout + done.stderr).splitlines()
    ours = [line for line in output if line.startswith("longparser worker:")]
    assert ours == [
        f"longparser worker: cannot start: kombu {NEWER_KOMBU} is outside the tested range kombu~=5.7.0: the "
        "worker relies on Celery, kombu and redis-py internals checked only in the tested ranges "
        "(worker/celery_compat.py); install the versions of constraints.txt, or set "
        "LONGPARSER_ACCEPT_UNTESTED_DEPS=true to run untested"]
    assert "ready." not in done.stdout + done.stderr


ACCEPTED_START = """
import logging
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
from config.settings import get_settings
from worker.signals import check_worker_can_start
check_worker_can_start(get_settings())
print("start-up checks passed")
"""


def test_an_operator_may_accept_the_newer_kombu(newer_kombu: dict[str, str], tmp_path: Path) -> None:
    env = {**newer_kombu, "LONGPARSER_ACCEPT_UNTESTED_DEPS": "true"}
    done = subprocess.run([sys.executable, "-c", ACCEPTED_START], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "start-up checks passed"
    warnings = [line for line in done.stderr.splitlines() if "untested dependencies" in line]
    assert warnings == [f"WARNING running on untested dependencies (LONGPARSER_ACCEPT_UNTESTED_DEPS=true): "
                        f"kombu {NEWER_KOMBU} is outside the tested range kombu~=5.7.0"]


# --------------------------------------------------------------------------- accessors, never a quiet skip


def test_a_kombu_key_layout_other_than_the_producers_copy_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """service/keys.py copies kombu's key layout for producers and ``longparser metrics``; a kombu
    that lays its keys out otherwise stops the worker's start, naming the key."""
    from service import keys

    assert kombu_redis.Channel.sep == keys.KOMBU_PRIORITY_SEPARATOR
    assert tuple(kombu_redis.PRIORITY_STEPS) == keys.KOMBU_PRIORITY_STEPS
    monkeypatch.setattr(kombu_redis.Channel, "sep", "::")
    monkeypatch.setattr(kombu_redis, "PRIORITY_STEPS", [0, 5])
    assert compat.internal_problems() == [
        "kombu.transport.redis.Channel.sep is '::', not '\\x06\\x16' as service/keys.py copies it",
        "kombu.transport.redis.PRIORITY_STEPS is [0, 5], not [0, 3, 6, 9] as service/keys.py copies it"]


def test_the_kombu_queue_keys_are_the_ones_kombu_names() -> None:
    from service.keys import kombu_queue_keys

    channel = kombu_redis.Channel
    assert kombu_queue_keys("p:", "q") == ("p:q", "p:" + channel.keyprefix_queue % "q",
                                           "p:" + channel.keyprefix_binding_permanent % "q")


def test_a_consumer_step_without_a_task_consumer_fails_loudly() -> None:
    from types import SimpleNamespace

    channel = SimpleNamespace(qos="qos")
    assert compat.task_channel(SimpleNamespace(task_consumer=SimpleNamespace(channel=channel))) is channel
    with pytest.raises(RuntimeError, match=r"no task consumer .* restore on reconnect and leases cannot run"):
        compat.task_channel(SimpleNamespace(task_consumer=None))
    with pytest.raises(AttributeError):  # Celery renamed it: never a silent None
        compat.task_channel(SimpleNamespace())


def test_celerys_tasks_step_sets_the_task_consumer_the_accessor_reads() -> None:
    from types import SimpleNamespace

    from celery.worker.consumer.tasks import Tasks

    consumer = SimpleNamespace()
    Tasks(consumer)
    assert consumer.task_consumer is None  # set for real by Tasks.start, before the steps that require it
    assert f"{Tasks.__module__}:Tasks" == compat.CONSUMER_TASKS_STEP


@pytest.mark.parametrize(("should_stop", "should_terminate", "asked"), [
    (None, None, False), (False, False, False), (0, None, True), (None, 1, True), (True, None, True),
])
def test_shutdown_requested_reads_celerys_flags(monkeypatch: pytest.MonkeyPatch, should_stop: Any,
                                                 should_terminate: Any, asked: bool) -> None:
    from celery.worker import state

    monkeypatch.setattr(state, "should_stop", should_stop)
    monkeypatch.setattr(state, "should_terminate", should_terminate)
    assert compat.shutdown_requested() is asked


def test_forked_pool_size_is_the_prefork_pools_only() -> None:
    from types import SimpleNamespace

    from celery.concurrency.prefork import TaskPool
    from celery.concurrency.solo import TaskPool as SoloPool
    from celery.worker.components import Pool

    pool = TaskPool(limit=2)
    pool.start()  # forks its two processes (num_processes reads the running pool)
    try:
        assert compat.forked_pool_size(SimpleNamespace(pool=pool)) == 2
    finally:
        pool.terminate()
    assert compat.forked_pool_size(SimpleNamespace(pool=SoloPool())) is None
    assert f"{Pool.__module__}:Pool" == compat.WORKER_POOL_STEP


def test_drop_decoded_arguments_empties_the_dict_the_request_pickles() -> None:
    from celery import Celery
    from celery.worker.request import Request
    from kombu.message import Message

    app = Celery("drop-arguments-test", set_as_current=False)

    def chunk(request: Any, a: Any = None) -> None:
        raise AssertionError("never run")

    task = app.task(name="drop.arguments")(chunk)
    headers = {"id": "t", "task": task.name, "lang": "py"}
    message = Message(body=b'[[{"document_id": "d"}], {"a": 1}, {}]', headers=headers,
                      content_type="application/json", content_encoding="utf-8", delivery_info={},
                      properties={})
    request = Request(message, app=app, task=task)
    assert request.request_dict["args"] == [{"document_id": "d"}]
    compat.drop_decoded_arguments(request)
    assert (request.request_dict["args"], request.request_dict["kwargs"]) == ((), {})
    assert request.args == [{"document_id": "d"}] and request.kwargs == {"a": 1}  # the parent keeps its own
