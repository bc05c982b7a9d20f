"""The ``longparser.chunk_document`` task in eager mode, with fakeredis standing in for the store.

Eager mode neither serialises results nor enforces ``accept_content``, so the tests JSON
round-trip what the task returns and stores, and check the JSON-only configuration separately
(test_settings.py).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis.exceptions
from celery.backends.base import BaseBackend

from longparser import chunk_request
from longparser.resources import Resources
from schemas import ChunkResult, parse_input
from service.keys import TASK_NAME, prefix_pattern, result_key
from service.store import ResultStore
from tasks.chunk import chunk_document
from tasks.errors import ChunkingFailed, InvalidPayload, PayloadTooLarge, SemanticUnavailable
from tests.unit.worker_fixtures import eager, isolated_settings, payload, store  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
EXPECTED_BLOCKS = [["h1", "p1"], ["p2"]]


def _without_timings(record: dict[str, Any]) -> dict[str, Any]:
    clean = json.loads(json.dumps(record))
    clean["result"]["stats"].pop("timings_ms")
    return clean


def test_task_has_the_stable_name_and_safe_options() -> None:
    assert chunk_document.name == TASK_NAME == "longparser.chunk_document"
    assert chunk_document.acks_late is True
    assert chunk_document.reject_on_worker_lost is True
    assert chunk_document.retry_jitter is True


def test_valid_payload_is_chunked_stored_and_json_round_trips(
    eager: list, store: ResultStore, fake_resources: Resources  # noqa: F811
) -> None:
    summary = chunk_document.apply_async(args=[payload()], task_id="t-1").get()
    assert json.loads(json.dumps(summary)) == summary
    assert summary["document_id"] == "doc-1"
    assert (summary["status"], summary["blocks"], summary["chunks"]) == ("SUCCESS", 3, 2)
    assert summary["result_key"] == result_key(store.prefix, "doc-1")
    record = store.load_record("doc-1")
    assert (record["status"], record["task_id"], record["error"]) == ("SUCCESS", "t-1", None)
    stored = ChunkResult.model_validate_json(json.dumps(record["result"]))
    direct = chunk_request(parse_input(payload()), fake_resources)
    assert stored.chunks == direct.chunks
    assert stored.document_id == "doc-1"
    assert [chunk.block_ids for chunk in stored.chunks] == EXPECTED_BLOCKS
    assert [chunk.page_numbers for chunk in stored.chunks] == [[1], [2]]
    assert stored.chunks[0].text == "Results\n\nThe turbine produced more power this year."
    assert store.client.ttl(summary["result_key"]) == 600


def test_progress_reports_stage_and_counts(eager: list) -> None:  # noqa: F811
    chunk_document.delay(payload()).get()
    assert eager == [
        ("PROGRESS", {"stage": "validating", "document_id": "doc-1", "blocks": 3, "chunks": 0}),
        ("PROGRESS", {"stage": "chunking", "document_id": "doc-1", "blocks": 3, "chunks": 0}),
        ("PROGRESS", {"stage": "storing", "document_id": "doc-1", "blocks": 3, "chunks": 2}),
    ]


def _bad_type() -> dict[str, Any]:
    request = payload()
    request["blocks"][1] = {**request["blocks"][1], "type": "banana"}
    return request


def _bad_config() -> dict[str, Any]:
    return payload(min_tokens=50, max_tokens=20)


@pytest.mark.parametrize(
    ("make_payload", "message"),
    [
        (_bad_type, "block 1 (id 'p1'): type: Input should be 'heading'"),
        (_bad_config, "config: Value error, min_tokens (50) must be smaller than max_tokens (20)"),
        (lambda: {**payload(), "blocks": [{"type": "paragraph"}]}, "block 0: block_id: Field required"),
        (lambda: {**payload(), "blocks": [{"block_id": "c1", "type": "table", "table": {"cells": [
            {"r0": 0, "c0": 0, "text": "North \udc80"}]}}]},
         "block 0 (id 'c1'): table.cells[0].text: not valid Unicode: lone surrogate U+DC80 at character 6"),
    ],
    ids=["block-type", "config", "block-id", "lone-surrogate"],
)
def test_invalid_payload_fails_once_with_a_readable_stored_error(
    eager: list, store: ResultStore, make_payload: Any, message: str  # noqa: F811
) -> None:
    with pytest.raises(InvalidPayload, match="^" + re.escape(message)):
        chunk_document.apply_async(args=[make_payload()], task_id="t-bad").get()
    assert [meta["stage"] for _, meta in eager] == ["validating"]  # ran once: not retried
    record = store.load_record("doc-1")
    assert record["status"] == "FAILURE"
    assert record["error"]["type"] == "InvalidPayload"
    assert record["error"]["message"].startswith(message)
    assert record["result"] is None


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([{"block_id": "b1", "type": "paragraph"}], "payload must be a JSON object (ChunkRequest), got list"),
        ({"blocks": []}, "document_id: missing"),
        ({"document_id": "../etc/passwd", "blocks": []}, "document_id: String should match pattern"),
    ],
    ids=["list", "no-id", "unsafe-id"],
)
def test_invalid_payload_without_a_usable_id_stores_nothing(
    eager: list, store: ResultStore, bad: Any, message: str  # noqa: F811
) -> None:
    with pytest.raises(InvalidPayload) as caught:
        chunk_document.delay(bad).get()
    assert str(caught.value).startswith(message)
    assert list(store.client.scan_iter(match=prefix_pattern(store.prefix))) == []


def test_oversized_payload_is_refused_before_block_parsing(
    eager: list, store: ResultStore, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    import tasks.chunk

    monkeypatch.setenv("LONGPARSER_MAX_PAYLOAD_BYTES", "2048")
    tasks.chunk.get_settings.cache_clear()
    monkeypatch.setattr(tasks.chunk, "validate_payload", lambda _: pytest.fail("blocks were parsed"))
    big = payload()
    big["blocks"][1] = {**big["blocks"][1], "text": "word " * 1000}
    with pytest.raises(PayloadTooLarge, match=r"over the 2048-byte limit \(LONGPARSER_MAX_PAYLOAD_BYTES\)"):
        chunk_document.delay(big).get()
    assert eager == []
    assert store.load_record("doc-1")["error"]["type"] == "PayloadTooLarge"


def test_semantic_request_on_a_structural_worker_fails_clearly(
    eager: list, store: ResultStore  # noqa: F811
) -> None:
    expected = "LONGPARSER_SEMANTIC_ENABLED=false; send it to queue 'semantic'"
    with pytest.raises(SemanticUnavailable, match=expected):
        chunk_document.delay(payload(use_semantic_chunking=True)).get()
    assert store.load_record("doc-1")["error"]["type"] == "SemanticUnavailable"


def test_engine_error_fails_as_a_json_safe_chunking_failed(
    eager: list, store: ResultStore, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    import tasks.chunk

    class OddError(Exception):
        def __init__(self, code: int, detail: str):
            super().__init__(code, detail)

    def explode(request: Any, resources: Any) -> None:
        raise OddError(7, "table grid is ragged")

    monkeypatch.setattr(tasks.chunk, "chunk_request", explode)
    with pytest.raises(ChunkingFailed, match=r"^OddError: \(7, 'table grid is ragged'\)$"):
        chunk_document.delay(payload()).get()
    assert store.load_record("doc-1")["error"] == {
        "type": "ChunkingFailed", "message": "OddError: (7, 'table grid is ragged')"}


@pytest.mark.parametrize("error", [InvalidPayload("block 2 (id 'x'): text: bad"), ChunkingFailed("E: boom")])
def test_task_errors_survive_the_json_result_backend(error: Exception) -> None:
    backend = BaseBackend(app=chunk_document.app, serializer="json")
    wire = json.loads(json.dumps(backend.prepare_exception(error, serializer="json")))
    rebuilt = backend.exception_to_python(wire)
    assert type(rebuilt) is type(error)
    assert str(rebuilt) == str(error)


def test_redelivery_and_repeats_converge_on_one_stored_value(
    eager: list, store: ResultStore  # noqa: F811
) -> None:
    chunk_document.apply_async(args=[payload()], task_id="t-1").get()
    first = store.load_record("doc-1")
    chunk_document.apply_async(args=[payload()], task_id="t-1").get()  # redelivery: same task id
    redelivered = store.load_record("doc-1")
    chunk_document.apply_async(args=[payload()], task_id="t-2").get()  # a repeated submission
    repeated = store.load_record("doc-1")
    assert _without_timings(redelivered) == _without_timings(first)
    assert {**_without_timings(repeated), "task_id": "t-1"} == _without_timings(first)
    ids = [chunk["chunk_id"] for chunk in first["result"]["chunks"]]
    assert [chunk["chunk_id"] for chunk in repeated["result"]["chunks"]] == ids
    assert sorted(store.client.scan_iter(match=prefix_pattern(store.prefix))) == [
        result_key(store.prefix, "doc-1").encode()
    ]


class FlakyClient:
    """A Redis client whose first ``failures`` SETs raise ConnectionError."""

    def __init__(self, inner: Any, failures: int):
        self.inner, self.failures, self.set_calls = inner, failures, 0

    def set(self, *args: Any, **kwargs: Any) -> Any:
        self.set_calls += 1
        if self.set_calls <= self.failures:
            raise redis.exceptions.ConnectionError("Connection refused (simulated)")
        return self.inner.set(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _flaky_store(real: ResultStore, failures: int, monkeypatch: pytest.MonkeyPatch) -> FlakyClient:
    """Swap in a store whose SETs fail first; eager retries re-run only when errors do not propagate
    (with ``task_eager_propagates`` the Retry itself would be raised to the caller)."""
    import tasks.chunk

    tasks.chunk.app.conf.task_eager_propagates = False  # the eager fixture restores it
    flaky = FlakyClient(real.client, failures)
    flaky_store = ResultStore(flaky, real.prefix, real.ttl)
    monkeypatch.setattr(tasks.chunk, "get_store", lambda settings=None: flaky_store)
    return flaky


def test_transient_store_error_is_retried(
    eager: list, store: ResultStore, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    flaky = _flaky_store(store, failures=2, monkeypatch=monkeypatch)
    outcome = chunk_document.apply(args=[payload()], throw=False)
    assert (outcome.state, outcome.result["chunks"]) == ("SUCCESS", 2)
    assert flaky.set_calls == 3
    assert store.load_record("doc-1")["status"] == "SUCCESS"


def test_transient_retries_are_bounded(
    eager: list, store: ResultStore, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    flaky = _flaky_store(store, failures=10**6, monkeypatch=monkeypatch)
    outcome = chunk_document.apply(args=[payload()], throw=False)
    assert outcome.state == "FAILURE"
    assert isinstance(outcome.result, redis.exceptions.ConnectionError)
    assert flaky.set_calls == chunk_document.max_retries + 1 == 6


def test_structural_worker_process_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "from config.settings import Settings\n"
        "import worker.celery_app, tasks.chunk, tasks.client\n"
        "from worker.process import init_process_resources, get_process_resources\n"
        "r = init_process_resources(Settings(semantic_enabled=False, word_list_path=None))\n"
        "assert get_process_resources() is r and r.encoder is None\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
