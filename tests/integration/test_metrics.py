"""``longparser metrics`` against a real Redis holding real kombu messages.

The messages are published by the real producer client (and one by Celery with a priority,
which kombu keeps in a sub-list); one is taken by a kombu consumer without being acknowledged,
as a worker holds the document it runs. The printed and the served gauges must say how many
wait in each queue and how many are held.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kombu import Queue

from cli.main import main
from config.settings import Settings, get_settings
from service.keys import TASK_NAME, queue_list_keys
from tasks.client import Producer
from tests.integration.conftest import TestRedis, http_get, make_document, settings_env, spawn

pytestmark = pytest.mark.integration


@pytest.fixture
def settings(lp_settings: Settings) -> Settings:
    """The suite's Redis and prefixes, with queues of this test's own (no worker consumes them)."""
    tag = uuid.uuid4().hex[:8]
    return lp_settings.model_copy(update={"structural_queue": f"metrics-{tag}-chunking",
                                          "semantic_queue": f"metrics-{tag}-semantic"})


@pytest.fixture
def environment(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The process's LONGPARSER_* environment set to ``settings`` (for in-process ``main``)."""
    env = settings_env(settings)
    for name, value in env.items():
        if name.startswith("LONGPARSER_"):
            monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    yield env
    get_settings.cache_clear()


def _gauges(text: str) -> dict[str, int]:
    return {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line and not line.startswith("#")}


def _printed(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, int]:
    """The printed queue gauges (the count of unreadable messages checked present, and left out:
    it is the suite's, raised by other modules' hostile messages)."""
    assert main(["metrics", *argv]) == 0
    gauges = _gauges(capsys.readouterr().out)
    assert gauges.pop("longparser_unreadable_messages_total") >= 0
    return gauges


def test_metrics_count_waiting_and_held_messages(
        settings: Settings, environment: dict[str, str], test_redis: TestRedis,
        capsys: pytest.CaptureFixture[str]) -> None:
    structural, semantic = settings.structural_queue, settings.semantic_queue
    depth = 'longparser_queue_depth{queue="%s"}'
    with Producer(settings) as producer:
        for n in range(3):
            producer.submit(make_document(f"metrics-{n}", sections=1, paragraphs=1))
        producer.submit(make_document("metrics-sem", sections=1, paragraphs=1), semantic=True)
        # priority 5: kombu keeps it in the queue's priority-3 sub-list, still part of the depth
        producer.app.send_task(TASK_NAME, args=[make_document("metrics-pri", sections=1, paragraphs=1)],
                               queue=structural, priority=5, ignore_result=True)
        client = test_redis.client()
        assert client.llen(queue_list_keys(settings.celery_key_prefix, structural)[1]) == 1
        held_before = _printed(capsys)["longparser_messages_held"]  # other modules' workers may hold some
        assert _printed(capsys) == {depth % structural: 4, depth % semantic: 1,
                                    "longparser_messages_held": held_before}

        with producer.app.connection_for_read() as connection:
            message = Queue(structural, routing_key=structural)(connection.default_channel).get(no_ack=False)
            assert message is not None
            taken = _printed(capsys, "--queue", structural)
            assert taken == {depth % structural: 3, "longparser_messages_held": held_before + 1}
            message.reject(requeue=True)
        assert _printed(capsys, "--queue", structural) == {depth % structural: 4,
                                                          "longparser_messages_held": held_before}


def test_metrics_served_over_http(settings: Settings, environment: dict[str, str], log_dir: Path) -> None:
    with Producer(settings) as producer:
        producer.submit(make_document("served-0", sections=1, paragraphs=1))
    argv = [sys.executable, "-m", "cli", "metrics", "--port", "0", "--queue", settings.structural_queue]
    proc = spawn(f"metrics-{uuid.uuid4().hex[:6]}", argv, environment, log_dir)
    try:
        deadline = time.monotonic() + 30
        while "serving http://" not in proc.log_text():
            assert proc.alive(), proc.log_text()
            assert time.monotonic() < deadline, "metrics server did not start"
            time.sleep(0.1)
        url = proc.log_text().split("serving ", 1)[1].split()[0]
        status, body = http_get(url)
        assert status == 200
        assert _gauges(body.decode())[f'longparser_queue_depth{{queue="{settings.structural_queue}"}}'] == 1
        assert http_get(url.replace("/metrics", "/other"))[0] == 404
    finally:
        proc.stop()
    assert proc.popen.returncode == 0  # SIGTERM ends it like Ctrl-C


def test_metrics_say_when_the_broker_is_unreachable(capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.integration.conftest import free_port

    monkeypatch.setenv("LONGPARSER_BROKER_URL", f"redis://127.0.0.1:{free_port()}/0")
    get_settings.cache_clear()
    try:
        assert main(["metrics"]) == 3
    finally:
        get_settings.cache_clear()
    err = capsys.readouterr().err
    assert err.startswith("longparser metrics: error: broker unreachable at redis://127.0.0.1:")
    assert err.count("\n") == 1


def test_metrics_refuse_invalid_settings(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGPARSER_BROKER_URL", "localhost:6379")
    get_settings.cache_clear()
    try:
        assert main(["metrics"]) == 2
    finally:
        get_settings.cache_clear()
    assert "LONGPARSER_BROKER_URL" in capsys.readouterr().err


def test_a_scrape_answers_503_while_redis_is_away(settings: Settings) -> None:
    import threading

    from cli.metrics import _Reader, metrics_server
    from tests.integration.conftest import free_port

    away = settings.model_copy(update={"broker_url": f"redis://127.0.0.1:{free_port()}/0"})
    reader = _Reader(away, [away.structural_queue])
    with metrics_server(reader, "127.0.0.1", 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            status, body = http_get(f"http://127.0.0.1:{server.server_address[1]}/metrics")
        finally:
            server.shutdown()
            thread.join(5)
    reader.client.close()
    assert status == 503 and body.decode().startswith("error: broker unreachable at")
