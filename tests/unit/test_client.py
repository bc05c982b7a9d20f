"""Producer client and the ``submit`` / ``result`` commands, against fakeredis and a fake app.

``running_producer`` runs the real task eagerly on what the client sends (after a JSON round
trip, like the broker), so these tests also cover submit -> task -> store -> get_result.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from schemas import ChunkResult, InputError
from service.keys import TASK_NAME, job_key, prefix_pattern
from service.store import ResultStore, failure_record
from tasks.client import JobHandle, get_result, status, submit
from tasks.errors import JobFailed, JobNotFound, PayloadTooLarge, ResultTimeout
from tests.unit.worker_fixtures import (  # noqa: F401
    FakeProducer,
    eager,
    isolated_settings,
    payload,
    producer,
    running_producer,
    store,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("config", "semantic", "queue", "flag"),
    [({}, None, "chunking", False), ({"use_semantic_chunking": True}, None, "semantic", True),
     ({}, True, "semantic", True), ({"use_semantic_chunking": True}, False, "chunking", False)],
    ids=["structural", "semantic-config", "semantic-forced", "semantic-off"],
)
def test_submit_routes_by_semantic_mode(
    producer: FakeProducer, store: ResultStore, config: dict, semantic: bool | None, queue: str, flag: bool  # noqa: F811
) -> None:
    handle = submit(payload(**config), semantic=semantic)
    [sent] = producer.sent
    assert handle == JobHandle("doc-1", sent["task_id"], queue)
    assert (sent["name"], sent["queue"]) == (TASK_NAME, queue)
    assert sent["args"][0]["config"]["use_semantic_chunking"] is flag
    assert [block["block_id"] for block in sent["args"][0]["blocks"]] == ["h1", "p1", "p2"]
    assert store.load_job("doc-1") == {"task_id": handle.task_id, "queue": queue,
                                       "submitted_at": store.load_job("doc-1")["submitted_at"]}


def test_submit_refuses_invalid_and_oversized_requests_without_sending(
    producer: FakeProducer, store: ResultStore, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    bad = payload()
    bad["blocks"][2] = {**bad["blocks"][2], "provenance": {"page_number": -1}}
    with pytest.raises(InputError, match=r"^block 2 \(id 'p2'\): provenance.page_number: Input should be"):
        submit(bad)
    monkeypatch.setenv("LONGPARSER_MAX_PAYLOAD_BYTES", "1024")
    from config.settings import get_settings

    get_settings.cache_clear()
    big = payload()
    big["blocks"][1] = {**big["blocks"][1], "text": "word " * 500}
    with pytest.raises(PayloadTooLarge, match="over the 1024-byte limit"):
        submit(big)
    assert producer.sent == []
    assert list(store.client.scan_iter(match=prefix_pattern(store.prefix))) == []


def test_submit_then_get_result_end_to_end(running_producer: FakeProducer, eager: list) -> None:  # noqa: F811
    handle = submit(payload())
    result = get_result(handle, timeout=5)
    assert isinstance(result, ChunkResult)
    assert [chunk.block_ids for chunk in result.chunks] == [["h1", "p1"], ["p2"]]
    assert status("doc-1") == {"document_id": "doc-1", "task_id": handle.task_id, "queue": "chunking",
                               "state": "SUCCESS", "progress": None, "error": None}


def test_failed_job_raises_with_type_and_message(producer: FakeProducer, eager: list) -> None:  # noqa: F811
    from tasks.chunk import chunk_document

    handle = submit(payload())
    # The worker receives a semantic request (sent around the client's routing) and fails it.
    chunk_document.apply(args=[payload(use_semantic_chunking=True)], task_id=handle.task_id, throw=False)
    with pytest.raises(JobFailed) as caught:
        get_result("doc-1", timeout=5)
    assert caught.value.error_type == "SemanticUnavailable"
    assert "LONGPARSER_SEMANTIC_ENABLED=false" in caught.value.message
    assert status(handle)["state"] == "FAILURE"


def test_status_shows_progress_and_pending(producer: FakeProducer, store: ResultStore) -> None:  # noqa: F811
    handle = submit(payload())
    assert status(handle)["state"] == "PENDING"
    progress = {"stage": "chunking", "document_id": "doc-1", "blocks": 3, "chunks": 0}
    producer.states[handle.task_id] = ("PROGRESS", progress)
    assert status("doc-1") == {"document_id": "doc-1", "task_id": handle.task_id, "queue": "chunking",
                               "state": "PROGRESS", "progress": progress, "error": None}


def test_stale_record_of_an_older_job_is_not_the_new_result(
    producer: FakeProducer, store: ResultStore  # noqa: F811
) -> None:
    store.save_record(failure_record("doc-1", "old-task", None, "InvalidPayload", "block 0: bad"))
    handle = submit(payload())
    assert status("doc-1")["state"] == "PENDING"
    expected = "state PENDING, queue 'chunking': is a worker consuming that queue"
    with pytest.raises(ResultTimeout, match=expected):
        get_result(handle, timeout=0.05)


def test_unknown_document(producer: FakeProducer, store: ResultStore) -> None:  # noqa: F811
    assert status("never-seen")["state"] == "UNKNOWN"
    with pytest.raises(JobNotFound, match="no job and no result for document 'never-seen'"):
        get_result("never-seen", timeout=1)
    with pytest.raises(InputError, match="invalid document id"):
        status("no spaces allowed")


# --- CLI ------------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, data: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_cli_submit_wait_and_result(
    running_producer: FakeProducer, tmp_path: Path, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    blocks = payload()["blocks"]
    path = _write(tmp_path, "Q3 report (final).json", blocks)  # id from the file name
    assert main(["submit", path, "--wait", "--timeout", "5"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["document_id"] == "Q3-report-final-"
    assert main(["result", "Q3-report-final-"]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert stored == printed
    assert [chunk["block_ids"] for chunk in stored["chunks"]] == [["h1", "p1", "p2"]]


def test_cli_submit_prints_the_handle(
    producer: FakeProducer, tmp_path: Path, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    assert main(["submit", _write(tmp_path, "doc.json", payload("doc-7")), "--semantic"]) == 0
    handle = json.loads(capsys.readouterr().out)
    assert handle == {"document_id": "doc-7", "task_id": producer.sent[0]["task_id"], "queue": "semantic"}


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("pending", "document doc-1 is not finished: state PROGRESS, stage storing"),
        ("failed", "document doc-1 failed: InvalidPayload: block 0 (id 'b0'): text: bad"),
        ("unknown", "no job and no stored result for document doc-1"),
    ],
)
def test_cli_result_not_ready_exits_1(
    producer: FakeProducer, store: ResultStore, capsys: pytest.CaptureFixture[str], setup: str, message: str  # noqa: F811
) -> None:
    if setup == "pending":
        handle = submit(payload())
        producer.states[handle.task_id] = ("PROGRESS", {"stage": "storing", "blocks": 3, "chunks": 2})
    elif setup == "failed":
        error = "block 0 (id 'b0'): text: bad"
        store.save_record(failure_record("doc-1", "t-9", None, "InvalidPayload", error))
    assert main(["result", "doc-1"]) == 1
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
    producer: FakeProducer, capsys: pytest.CaptureFixture[str], argv: list[str], message: str  # noqa: F811
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == message
    assert producer.sent == []


def test_client_import_is_light() -> None:
    heavy = "('torch', 'sentence_transformers', 'longparser.pipeline', 'worker.celery_app')"
    code = f"import sys, tasks.client\nprint(sorted(m for m in {heavy} if m in sys.modules))\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_job_key_format() -> None:
    assert job_key("lp", "doc-1") == "lp:job:doc-1"
    with pytest.raises(ValueError, match="invalid document id"):
        job_key("lp", "a b")
