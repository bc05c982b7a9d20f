"""Producer client and the ``submit`` / ``result`` commands, against fakeredis and a fake app.

``running_producer`` runs the real task eagerly on what the client sends (after a JSON round
trip, like the broker), so these tests also cover submit -> task -> store -> get_result.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis.exceptions
from kombu.exceptions import OperationalError

from cli.main import build_parser
from cli.submit import EXIT_FULL, EXIT_UNREACHABLE, run_result, run_submit
from config.settings import Settings
from schemas import ChunkRequest, ChunkResult, InputError
from service.keys import TASK_NAME, job_key
from service.store import ResultStore, failure_record
from tasks.client import JobHandle, Producer
from tasks.errors import BrokerUnavailable, JobFailed, JobNotFound, PayloadTooLarge, ResultTimeout, StoreFull
from tests.unit.worker_fixtures import (  # noqa: F401
    FakeApp,
    context,
    eager,
    fake_app,
    isolated_settings,
    payload,
    producer,
    running_producer,
    settings,
    store,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("config", "semantic", "queue", "flag"),
    [({}, None, "chunking", None), ({"use_semantic_chunking": True}, None, "semantic", True),
     ({}, True, "semantic", True), ({"use_semantic_chunking": True}, False, "chunking", False)],
    ids=["structural", "semantic-config", "semantic-forced", "semantic-off"],
)
def test_submit_routes_by_semantic_mode(
    producer: Producer, fake_app: FakeApp, store: ResultStore, config: dict, semantic: bool | None,  # noqa: F811
    queue: str, flag: bool | None,
) -> None:
    handle = producer.submit(payload(**config), semantic=semantic)
    [sent] = fake_app.sent
    assert handle == JobHandle("doc-1", sent["task_id"], queue)
    assert (sent["name"], sent["queue"]) == (TASK_NAME, queue)
    # the flag travels when the caller or the request set it; unset, the worker's default applies
    assert sent["args"][0]["config"].get("use_semantic_chunking") is flag
    assert [block["block_id"] for block in sent["args"][0]["blocks"]] == ["h1", "p1", "p2"]
    assert store.load_job("doc-1") == {"task_id": handle.task_id, "queue": queue,
                                       "submitted_at": store.load_job("doc-1")["submitted_at"]}


def test_submit_refuses_invalid_and_oversized_requests_without_sending(
    producer: Producer, fake_app: FakeApp, store: ResultStore, settings: Settings  # noqa: F811
) -> None:
    bad = payload()
    bad["blocks"][2] = {**bad["blocks"][2], "provenance": {"page_number": -1}}
    with pytest.raises(InputError, match=r"^block 2 \(id 'p2'\): provenance.page_number: Input should be"):
        producer.submit(bad)
    small = Producer(settings.model_copy(update={"max_payload_bytes": 1024}), app=fake_app, store=store)
    big = payload()
    big["blocks"][1] = {**big["blocks"][1], "text": "word " * 500}
    with pytest.raises(PayloadTooLarge, match="over the 1024-byte limit"):
        small.submit(big)
    # a tokenizer named by path: every worker would refuse it, so it is not queued
    with pytest.raises(InputError, match=r"^config.fit: '/models/e5' is a path: workers never open a path"):
        producer.submit(payload(), config={"fit": "/models/e5"})
    # a table whose spans would expand to 4 x 10**20 positions on a worker (the hostile table)
    spans = payload()
    spans["blocks"].append({"block_id": "t1", "type": "table", "table": {"cells": [
        {"r0": i, "c0": i, "rspan": 10**9, "cspan": 10**9, "text": "x"} for i in range(400)]}})
    with pytest.raises(InputError, match=r"^block 3 \(id 't1'\): table: table area 40{20} is over the cap of "
                                         r"250000 positions: 400 cells on a grid of 400 rows x 400 columns"):
        producer.submit(spans)
    # a paragraph whose text is under another name: refused, not chunked as blank
    misnamed = payload()
    misnamed["blocks"][1] = {"block_id": "p1", "type": "paragraph", "content": "The text."}
    with pytest.raises(InputError, match=r"^block 1 \(id 'p1'\): text: field required \(it has 'content'\)$"):
        producer.submit(misnamed)
    assert fake_app.sent == []
    assert list(store.client.scan_iter(match=f"{store.prefix}:*")) == []


def test_submit_then_get_result_end_to_end(running_producer: Producer) -> None:  # noqa: F811
    handle = running_producer.submit(payload())
    result = running_producer.get_result(handle, timeout=5)
    assert isinstance(result, ChunkResult)
    assert [chunk.block_ids for chunk in result.chunks] == [["h1", "p1"], ["p2"]]
    # parents travel through the stored record: each chunk's parent lists it
    parents = {parent.id: parent for parent in result.parents}
    assert [parents[c.parent_id].kind for c in result.chunks] == ["section", "section"]
    assert all(c.chunk_id in parents[c.parent_id].chunk_ids for c in result.chunks)
    assert running_producer.status("doc-1") == {
        "document_id": "doc-1", "task_id": handle.task_id, "queue": "chunking", "state": "SUCCESS",
        "progress": None, "error": None}


def test_failed_job_raises_with_type_and_message(producer: Producer, eager: list) -> None:  # noqa: F811
    from tasks.chunk import chunk_document

    handle = producer.submit(payload())
    # The worker receives a semantic request (sent around the client's routing) and fails it.
    chunk_document.apply(args=[payload(use_semantic_chunking=True)], task_id=handle.task_id, throw=False)
    with pytest.raises(JobFailed) as caught:
        producer.get_result("doc-1", timeout=5)
    assert caught.value.error_type == "SemanticUnavailable"
    assert "LONGPARSER_SEMANTIC_ENABLED=false" in caught.value.message
    assert producer.status(handle)["state"] == "FAILURE"


def test_status_shows_progress_and_pending(producer: Producer, fake_app: FakeApp) -> None:  # noqa: F811
    handle = producer.submit(payload())
    assert producer.status(handle)["state"] == "PENDING"
    progress = {"stage": "chunking", "document_id": "doc-1", "blocks": 3, "chunks": 0}
    fake_app.states[handle.task_id] = ("PROGRESS", progress)
    assert producer.status("doc-1") == {"document_id": "doc-1", "task_id": handle.task_id,
                                        "queue": "chunking", "state": "PROGRESS", "progress": progress,
                                        "error": None}


def test_stale_record_of_an_older_job_is_not_the_new_result(
    producer: Producer, store: ResultStore  # noqa: F811
) -> None:
    store.save_record(failure_record("doc-1", "old-task", "InvalidPayload", "block 0: bad"))
    handle = producer.submit(payload())
    assert producer.status("doc-1")["state"] == "PENDING"
    expected = "state PENDING, queue 'chunking': is a worker consuming that queue"
    with pytest.raises(ResultTimeout, match=expected):
        producer.get_result(handle, timeout=0.05)


def test_unknown_document(producer: Producer) -> None:  # noqa: F811
    assert producer.status("never-seen")["state"] == "UNKNOWN"
    with pytest.raises(JobNotFound, match="no job and no result for document 'never-seen'"):
        producer.get_result("never-seen", timeout=1)
    with pytest.raises(InputError, match="invalid document id"):
        producer.status("no spaces allowed")
    with pytest.raises(InputError, match=r"invalid document id 'tenantA-report\\n'"):
        producer.status("tenantA-report\n")


# --- outages ---------------------------------------------------------------------------------


def test_submit_rides_out_a_short_broker_outage(
    producer: Producer, fake_app: FakeApp, store: ResultStore  # noqa: F811
) -> None:
    fake_app.failures = [OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")] * 3
    handle = producer.submit(payload())
    assert [sent["task_id"] for sent in fake_app.sent] == [handle.task_id]
    assert producer.waits.count == 3
    assert store.load_job("doc-1")["task_id"] == handle.task_id


def test_submit_past_the_window_raises_broker_unavailable_and_leaves_no_job_entry(
    settings: Settings, fake_app: FakeApp, store: ResultStore  # noqa: F811
) -> None:
    url = "redis://:s3cret@127.0.0.1:6399/0"
    down = settings.model_copy(update={"broker_url": url, "result_url": url, "submit_retry_window": 0.5})
    fake_app.failures = [OperationalError("Error 111 connecting. Connection refused.")] * 1000
    started = time.monotonic()
    with pytest.raises(BrokerUnavailable) as caught:
        Producer(down, app=fake_app, store=store).submit(payload())
    assert time.monotonic() - started < 1.5  # the window bounds the wait
    message = str(caught.value)
    assert "redis://:**@127.0.0.1:6399/0" in message and "s3cret" not in message
    assert "\n" not in message
    assert fake_app.sent == []
    assert list(store.client.scan_iter(match=f"{store.prefix}:*")) == []  # no job entry


def test_a_full_redis_is_a_typed_error_at_once(producer: Producer, fake_app: FakeApp) -> None:  # noqa: F811
    full = redis.exceptions.OutOfMemoryError("OOM command not allowed when used memory > 'maxmemory'.")
    fake_app.failures = [full]
    with pytest.raises(StoreFull, match="is full"):
        producer.submit(payload())
    assert producer.waits.count == 0


class DownClient:
    """A Redis client whose every call fails as if the server were gone."""

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6399. Refused.")
        return fail


def test_reads_past_the_window_raise_broker_unavailable(settings: Settings, fake_app: FakeApp) -> None:  # noqa: F811
    down = Producer(settings.model_copy(update={"submit_retry_window": 0.2}), app=fake_app,
                    store=ResultStore(DownClient(), settings.key_prefix, 60))
    with pytest.raises(BrokerUnavailable, match="while reading the job of doc-1"):
        down.status("doc-1")


def test_a_finished_task_whose_record_a_later_run_rewrote_shows_the_record(
    producer: Producer, fake_app: FakeApp, store: ResultStore  # noqa: F811
) -> None:
    handle = producer.submit(payload())
    fake_app.states[handle.task_id] = ("SUCCESS", {"document_id": "doc-1", "status": "SUCCESS"})
    store.save_record(failure_record("doc-1", "later-task", "InvalidPayload", "block 0: bad"))
    assert producer.status(handle) == {
        "document_id": "doc-1", "task_id": "later-task", "queue": "chunking", "state": "FAILURE",
        "progress": None, "error": {"type": "InvalidPayload", "message": "block 0: bad"}}
    fake_app.states[handle.task_id] = ("STARTED", None)  # not finished: Celery's view stands
    assert producer.status(handle)["state"] == "STARTED"


def test_a_failure_without_a_record_is_read_from_celerys_exception(
    producer: Producer, fake_app: FakeApp  # noqa: F811
) -> None:
    from tasks.errors import ChunkingFailed

    handle = producer.submit(payload())
    fake_app.states[handle.task_id] = ("FAILURE", ChunkingFailed("MemoryError: out of memory"))
    error = {"type": "ChunkingFailed", "message": "MemoryError: out of memory"}
    assert producer.status("doc-1")["error"] == error
    with pytest.raises(JobFailed) as caught:
        producer.get_result(handle, timeout=1)
    assert (caught.value.error_type, caught.value.message) == ("ChunkingFailed", "MemoryError: out of memory")


def test_a_success_without_a_stored_result_is_not_found_and_says_where_it_looked(
    producer: Producer, fake_app: FakeApp, store: ResultStore  # noqa: F811
) -> None:
    handle = producer.submit(payload())
    fake_app.states[handle.task_id] = ("SUCCESS", {"document_id": "doc-1", "status": "SUCCESS"})
    expected = (f"task {handle.task_id} succeeded but no result is stored under "
                f"'{store.prefix}:result:doc-1': it expired, or the worker writes to another "
                "LONGPARSER_RESULT_URL")
    with pytest.raises(JobNotFound, match=re.escape(expected)):
        producer.get_result(handle, timeout=1)


def test_a_programming_error_is_raised_as_it_is_without_waiting(
    producer: Producer, fake_app: FakeApp, store: ResultStore  # noqa: F811
) -> None:
    fake_app.failures = [TypeError("send_task() got an unexpected keyword argument 'argsrepr'")]
    with pytest.raises(TypeError, match="unexpected keyword argument 'argsrepr'"):
        producer.submit(payload())
    assert producer.waits.count == 0
    assert list(store.client.scan_iter(match=f"{store.prefix}:*")) == []  # no job entry


class ReadFailsAtItsEnd:
    """A Redis client whose first XREAD blocks for its whole time, then fails (the connection
    dropped under it); the rest goes through."""

    def __init__(self, inner: Any):
        self.inner, self.reads = inner, 0

    def xread(self, streams: Any, count: Any = None, block: int | None = None) -> Any:
        self.reads += 1
        if self.reads == 1:
            time.sleep((block or 0) / 1000 + 0.05)
            raise redis.exceptions.ConnectionError("Connection reset by peer (simulated)")
        return self.inner.xread(streams, count=count, block=block)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_retried_read_after_the_deadline_returns_without_blocking_again(
    settings: Settings, store: ResultStore, fake_app: FakeApp  # noqa: F811
) -> None:
    client = ReadFailsAtItsEnd(store.client)
    reading = Producer(settings, app=fake_app, store=ResultStore(client, store.prefix, store.ttl))
    handle = reading.submit(payload())
    started = time.monotonic()
    assert reading.wait(handle, timeout=0.2)["state"] == "PENDING"
    assert time.monotonic() - started < 1.0
    assert (client.reads, reading.waits.count) == (1, 1)  # the retry found no time left: no second read


def test_the_module_functions_use_the_given_producer(
    running_producer: Producer, store: ResultStore  # noqa: F811
) -> None:
    from tasks import client

    handle = client.submit(payload(), producer=running_producer)
    assert client.wait(handle, timeout=5, producer=running_producer)["state"] == "SUCCESS"
    assert client.status("doc-1", producer=running_producer)["task_id"] == handle.task_id
    assert client.fetch_record("doc-1", producer=running_producer) == store.load_record("doc-1")
    result = client.get_result(handle, timeout=5, producer=running_producer)
    assert [chunk.block_ids for chunk in result.chunks] == [["h1", "p1"], ["p2"]]
    assert [sent["task_id"] for sent in running_producer.app.sent] == [handle.task_id]  # its app sent it


# --- CLI ------------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, data: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def _cli(argv: list[str], producer: Producer, monkeypatch: pytest.MonkeyPatch) -> int:  # noqa: F811
    """Run a producer command with ``producer`` (what ``longparser`` builds from the settings)."""
    import cli.submit

    monkeypatch.setattr(cli.submit, "_producer", lambda command: producer)
    args = build_parser().parse_args(argv)
    return (run_submit if args.command == "submit" else run_result)(args)


def test_cli_submit_wait_and_result_print_in_schema_order(
    running_producer: Producer, tmp_path: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    blocks = payload()["blocks"]
    path = _write(tmp_path, "Q3 report (final).json", blocks)  # id from the file name
    assert _cli(["submit", path, "--wait", "--timeout", "5"], running_producer, monkeypatch) == 0
    waited = capsys.readouterr().out
    printed = json.loads(waited)
    assert printed["document_id"] == "Q3-report-final-"
    assert _cli(["result", "Q3-report-final-"], running_producer, monkeypatch) == 0
    fetched = capsys.readouterr().out
    assert json.loads(fetched) == printed
    assert list(json.loads(fetched)) == list(ChunkResult.model_fields)  # schema order, not sorted
    assert list(json.loads(fetched)["chunks"][0]) == list(json.loads(waited)["chunks"][0])
    assert [chunk["block_ids"] for chunk in printed["chunks"]] == [["h1", "p1", "p2"]]


def test_cli_result_diff_prints_the_chunk_ids_that_changed(
    running_producer: Producer, tmp_path: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def section(title: str, text: str) -> list[dict[str, Any]]:
        return [{"block_id": f"{title}-h", "type": "heading", "text": title, "heading_level": 1,
                 "hierarchy_path": [title]},
                {"block_id": f"{title}-p", "type": "paragraph", "text": text, "hierarchy_path": [title]}]

    def submit_then_diff(second_word: str) -> tuple[list[str], Any, str]:
        """Store a version whose second section repeats ``second_word``: its chunk ids, then
        what ``result --diff`` prints (decoded) and says on stderr."""
        document = {"document_id": "doc-d",
                    "blocks": section("One", "alpha " * 200) + section("Two", f"{second_word} " * 200)}
        path = _write(tmp_path, f"{second_word}.json", document)
        assert _cli(["submit", path, "--wait"], running_producer, monkeypatch) == 0
        ids = [chunk["chunk_id"] for chunk in json.loads(capsys.readouterr().out)["chunks"]]
        assert _cli(["result", "doc-d", "--diff"], running_producer, monkeypatch) == 0
        captured = capsys.readouterr()
        return ids, json.loads(captured.out), captured.err

    old_ids, diff, err = submit_then_diff("beta")
    assert diff is None  # the first result: nothing to compare with
    assert err == ("longparser result: document doc-d has no earlier result to compare with (first stored, "
                   "or the earlier one expired): diff null\n")
    new_ids, diff, err = submit_then_diff("gamma")
    assert err == "" and len(old_ids) == len(new_ids) == 2
    assert (diff["unchanged"], diff["removed"], diff["added"]) == ([old_ids[0]], [old_ids[1]], [new_ids[1]])
    assert set(diff) == {"previous_task_id", "added", "removed", "unchanged"}


def test_cli_result_hides_a_compressed_record(
    settings: Settings, store: ResultStore, eager: list, tmp_path: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    import tasks.chunk

    compressing = ResultStore(store.client, store.prefix, 60, compress_bytes=1024)  # the worker's side
    monkeypatch.setattr(tasks.chunk.app, "context",
                        dataclasses.replace(tasks.chunk.app.context, store=compressing))
    client = Producer(settings, app=FakeApp(run=True), store=store)
    big = payload("doc-big")
    big["blocks"] = [{**block, "block_id": f"{block['block_id']}-{n}"} for n in range(40)
                     for block in big["blocks"]]
    assert _cli(["submit", _write(tmp_path, "big.json", big), "--wait"], client, monkeypatch) == 0
    waited = json.loads(capsys.readouterr().out)
    assert json.loads(store.client.get(f"{store.prefix}:result:doc-big"))["encoding"] == "zlib+base64"
    assert _cli(["result", "doc-big"], client, monkeypatch) == 0
    assert json.loads(capsys.readouterr().out) == waited
    assert "encoding" not in client.fetch_record("doc-big")


def test_cli_submit_prints_the_handle(
    producer: Producer, fake_app: FakeApp, tmp_path: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _cli(["submit", _write(tmp_path, "doc.json", payload("doc-7")), "--semantic"], producer,
                monkeypatch) == 0
    handle = json.loads(capsys.readouterr().out)
    assert handle == {"document_id": "doc-7", "task_id": fake_app.sent[0]["task_id"], "queue": "semantic"}


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("pending", "document doc-1 is not finished: state PROGRESS, stage storing"),
        ("failed", "document doc-1 failed: InvalidPayload: block 0 (id 'b0'): text: bad"),
        ("unknown", "no job and no stored result for document doc-1"),
    ],
)
def test_cli_result_not_ready_exits_1(
    producer: Producer, fake_app: FakeApp, store: ResultStore, capsys: pytest.CaptureFixture[str],  # noqa: F811
    setup: str, message: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    if setup == "pending":
        handle = producer.submit(payload())
        fake_app.states[handle.task_id] = ("PROGRESS", {"stage": "storing", "blocks": 3, "chunks": 2})
    elif setup == "failed":
        error = "block 0 (id 'b0'): text: bad"
        store.save_record(failure_record("doc-1", "t-9", "InvalidPayload", error))
    assert _cli(["result", "doc-1"], producer, monkeypatch) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["result", "../../etc"], "longparser result: error: invalid document id '../../etc'"),
        (["submit", "/nonexistent/in.json"],
         "longparser submit: error: input /nonexistent/in.json: no such file"),
    ],
)
def test_cli_bad_input_exits_2_without_traceback(
    producer: Producer, fake_app: FakeApp, capsys: pytest.CaptureFixture[str], argv: list[str],  # noqa: F811
    message: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _cli(argv, producer, monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.strip() == message
    assert fake_app.sent == []


@pytest.mark.parametrize(("failure", "status", "fragment"), [
    (OperationalError("Error 111 connecting to 127.0.0.1:6399. Connection refused."), EXIT_UNREACHABLE,
     "longparser submit: error: broker/store unreachable at redis://:**@127.0.0.1:6399/0 for 0.2 s"),
    (redis.exceptions.OutOfMemoryError("OOM command not allowed"), EXIT_FULL,
     "longparser submit: error: Redis at redis://:**@127.0.0.1:6399/0 is full"),
], ids=["unreachable", "full"])
def test_cli_outage_and_full_redis_have_their_own_exit_status_and_one_line(
    settings: Settings, fake_app: FakeApp, store: ResultStore, tmp_path: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, failure: Exception, status: int,
    fragment: str,
) -> None:
    url = "redis://:pw@127.0.0.1:6399/0"
    producer = Producer(settings.model_copy(update={"broker_url": url, "result_url": url,  # noqa: F811
                                                    "submit_retry_window": 0.2}), app=fake_app, store=store)
    fake_app.failures = [failure] * 1000
    assert _cli(["submit", _write(tmp_path, "doc.json", payload())], producer, monkeypatch) == status
    captured = capsys.readouterr()
    *first, line = captured.err.splitlines()
    if status == EXIT_UNREACHABLE:  # said at the first wait, once, however many retries follow
        assert first == ["longparser submit: Redis at redis://:**@127.0.0.1:6399/0 does not answer; retrying "
                         "for up to 0.2 s (LONGPARSER_SUBMIT_RETRY_WINDOW)"]
    else:
        assert first == []  # a full Redis is not retried
    assert line.startswith(fragment), line
    assert "pw@" not in captured.err and captured.out == ""


def test_cli_result_says_at_once_that_an_unreachable_store_is_retried(
    settings: Settings, fake_app: FakeApp, capsys: pytest.CaptureFixture[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The store's PING, before the first call, says it: with a window too short for any retry
    (so no retry warning could say it) the line still comes, before the last one."""
    url = "redis://:pw@127.0.0.1:6399/0"
    import fakeredis

    server = fakeredis.FakeServer()
    server.connected = False  # every command raises ConnectionError, as a Redis that is down
    down = ResultStore(fakeredis.FakeRedis(server=server), "lp-test", 60)
    producer = Producer(settings.model_copy(update={"broker_url": url, "result_url": url,  # noqa: F811
                                                    "submit_retry_window": 1e-9}), app=fake_app, store=down)
    assert _cli(["result", "doc-1"], producer, monkeypatch) == EXIT_UNREACHABLE
    assert producer.waits.count == 0  # no retry, so no retry warning
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == ("longparser result: Redis at redis://:**@127.0.0.1:6399/0 does not answer; retrying "
                        "for up to 1e-09 s (LONGPARSER_SUBMIT_RETRY_WINDOW)")
    assert len(lines) == 2 and lines[1].startswith("longparser result: error: broker/store unreachable at ")


def _run_cli(argv: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in __import__("os").environ.items() if not k.startswith("LONGPARSER_")}
    return subprocess.run([sys.executable, "-m", "cli", *argv], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={**clean, "PYTHONPATH": str(ROOT), **env})


def test_cli_bad_setting_is_one_clean_line(tmp_path: Path) -> None:
    done = _run_cli(["result", "doc-1"], {"LONGPARSER_CONCURRENCY": "lots"}, tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "longparser result: error: settings (LONGPARSER_* environment / .env): "
        "concurrency (LONGPARSER_CONCURRENCY='lots'): Input should be a valid integer, unable to parse "
        "string as an integer"]


def test_dot_env_file_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("LONGPARSER_HARD_TIME_LIMIT=10\nLONGPARSER_SOFT_TIME_LIMIT=20\n")
    done = _run_cli(["result", "doc-1"], {}, tmp_path)
    assert done.returncode == 2
    assert "soft_time_limit (20) must be below hard_time_limit (10)" in done.stderr


def test_client_import_is_light() -> None:
    heavy = ("('torch', 'sentence_transformers', 'longparser.pipeline', 'worker.celery_app', 'loaders', "
             "'docling_core')")
    code = f"import sys, tasks.client\nprint(sorted(m for m in {heavy} if m in sys.modules))\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_job_key_format() -> None:
    assert job_key("lp", "doc-1") == "lp:job:doc-1"
    with pytest.raises(ValueError, match="invalid document id"):
        job_key("lp", "a b")


# --- DoclingDocument input ------------------------------------------------------------------

DOCLING_PAPER = ROOT / "tests" / "fixtures" / "docling" / "2206.01062.docling.json"


def _docling() -> dict[str, Any]:
    return json.loads(DOCLING_PAPER.read_text(encoding="utf-8"))


@pytest.mark.parametrize("as_model", [False, True], ids=["dict", "model"])
def test_submit_converts_a_docling_document_on_the_producer_side(
    producer: Producer, fake_app: FakeApp, as_model: bool  # noqa: F811
) -> None:
    from docling_core.types.doc import DoclingDocument

    from loaders.docling import blocks_from_docling

    document = DoclingDocument.model_validate(_docling()) if as_model else _docling()
    handle = producer.submit(document, docling=blocks_from_docling,
                             config={"max_tokens": 256, "min_tokens": 50})
    [sent] = fake_app.sent
    request = sent["args"][0]
    assert handle.document_id == request["document_id"] == "2206.01062"  # the DoclingDocument's name
    assert set(request) == {"schema_version", "document_id", "blocks", "config"}  # a ChunkRequest
    expected = ChunkRequest.model_validate({"document_id": "x", "blocks": blocks_from_docling(_docling())})
    # the blocks travel without their default values: they validate to the converted blocks
    assert ChunkRequest.model_validate(request).blocks == expected.blocks
    assert (request["config"]["max_tokens"], request["config"]["min_tokens"]) == (256, 50)


def test_submit_refuses_a_docling_document_it_cannot_convert(
    producer: Producer, fake_app: FakeApp, store: ResultStore  # noqa: F811
) -> None:
    from loaders.docling import blocks_from_docling

    with pytest.raises(InputError, match=r"^a DoclingDocument must be converted to blocks on the producer"):
        producer.submit(_docling())  # no converter passed
    broken = _docling()
    broken["texts"][0]["prov"][0]["page_no"] = "x"
    with pytest.raises(InputError, match=r"^invalid DoclingDocument: texts\[0\]\.prov\[0\]\.page_no: "):
        producer.submit(broken, docling=blocks_from_docling)
    assert fake_app.sent == []
    assert list(store.client.scan_iter(match=f"{store.prefix}:*")) == []


def test_cli_submit_sends_a_converted_docling_document_with_the_config_flags(
    producer: Producer, fake_app: FakeApp, tmp_path: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from loaders.docling import blocks_from_docling

    path = _write(tmp_path, "paper.docling.json", _docling())
    argv = ["submit", path, "--max-tokens", "128", "--min-tokens", "10", "--strict",
            "--token-counter", "model", "--heading-context"]
    assert _cli(argv, producer, monkeypatch) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["document_id"] == "2206.01062"
    assert captured.err == ""
    [sent] = fake_app.sent
    config = sent["args"][0]["config"]
    assert (config["max_tokens"], config["min_tokens"], config["strict_max_tokens"], config["token_counter"],
            config["heading_context"]) == (128, 10, True, "model", True)
    assert len(sent["args"][0]["blocks"]) == len(blocks_from_docling(_docling()))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "longparser submit: error: input {path}: is empty (expected JSON)"),
        ({"schema_name": "DoclingDocument", "name": "x", "version": "1.0.0", "texts": 5},
         "longparser submit: error: input {path}: invalid DoclingDocument: "),
        ({"document_id": "d", "blocks": [], "config": {"max_token": 5}},
         "longparser submit: error: config.max_token: unknown field, did you mean 'max_tokens'?"),
    ],
    ids=["empty", "bad-docling", "config-typo"],
)
def test_cli_submit_bad_input_exits_2_with_one_line(
    producer: Producer, fake_app: FakeApp, tmp_path: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch, content: Any, message: str,
) -> None:
    path = tmp_path / "in.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    assert _cli(["submit", str(path)], producer, monkeypatch) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(message.format(path=path)), line
    assert fake_app.sent == []


def test_cli_submit_of_an_empty_block_list_warns(
    producer: Producer, fake_app: FakeApp, tmp_path: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _cli(["submit", _write(tmp_path, "doc.json", [])], producer, monkeypatch) == 0
    err = capsys.readouterr().err
    assert err == "longparser submit: warning: input has no blocks: the result has 0 chunks\n"
    assert len(fake_app.sent) == 1


def test_cli_submit_validates_the_request_once_on_the_producer_side(
    producer: Producer, fake_app: FakeApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    import schemas.inputs

    validations: list[Any] = []
    validate = ChunkRequest.model_validate

    def counted(data: Any, *args: Any, **kwargs: Any) -> ChunkRequest:
        validations.append(data)
        return validate(data, *args, **kwargs)

    monkeypatch.setattr(schemas.inputs.ChunkRequest, "model_validate", counted)
    assert _cli(["submit", _write(tmp_path, "doc.json", payload("doc-7")), "--max-tokens", "300"], producer,
                monkeypatch) == 0
    assert len(validations) == 1  # the command's; the client sends the validated request as it is
    assert fake_app.sent[0]["args"][0]["config"]["max_tokens"] == 300


def test_a_validated_request_with_a_config_override_keeps_its_blocks_and_checks_the_config(
    producer: Producer, fake_app: FakeApp,  # noqa: F811
) -> None:
    request = ChunkRequest.model_validate(payload(min_tokens=10))
    producer.submit(request, config={"max_tokens": 64}, semantic=True)
    sent = fake_app.sent[0]["args"][0]
    assert (sent["config"]["max_tokens"], sent["config"]["min_tokens"]) == (64, 10)
    assert sent["config"]["use_semantic_chunking"] is True
    assert [block["block_id"] for block in sent["blocks"]] == ["h1", "p1", "p2"]
    with pytest.raises(InputError, match=r"^config\.max_tokens: must be an integer, got \"64\""):
        producer.submit(request, config={"max_tokens": "64"})


def test_cli_submit_from_stdin_needs_an_id(
    producer: Producer, fake_app: FakeApp, capsys: pytest.CaptureFixture[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    blocks = json.dumps(payload()["blocks"])
    monkeypatch.setattr(sys, "stdin", io.StringIO(blocks))
    assert _cli(["submit", "-"], producer, monkeypatch) == 2
    assert capsys.readouterr().err == (
        "longparser submit: error: document_id: missing (give one in the request; on the command line, "
        "--document-id or the input file's name)\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO(blocks))
    assert _cli(["submit", "-", "--document-id", "from-stdin"], producer, monkeypatch) == 0
    assert json.loads(capsys.readouterr().out)["document_id"] == "from-stdin"
    assert fake_app.sent[0]["args"][0]["document_id"] == "from-stdin"
