"""A producer in another language: tests/node/producer.js (celery-node, ioredis) against a real worker.

The Node.js program knows LongParser only through docs/producers.md: it publishes a protocol-2
task message with celery-node to the structural queue (under the suite's Celery key prefix,
through ioredis' ``keyPrefix``), writes the job entry, blocks on the completion event stream in
a consumer group (XREADGROUP, XACK) and reads the stored record. Here the Python side checks
what it printed against the engine, against the Python client's own view of the same document,
and against the event contract.

Opt-in (``--run-node``, ``make test-node``, which runs ``npm ci`` first): a missing ``node`` or
missing packages fail the test, they never skip it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from config.settings import Settings
from loaders.resources import ResourceSpec, build_resources
from longparser import chunk_request
from schemas import parse_input
from service.keys import job_key, result_key
from tasks.client import Producer
from tests.integration.conftest import REPO_ROOT, WorkerFactory, make_document, result_view, settings_env

pytestmark = [pytest.mark.integration, pytest.mark.node_producer]

NODE_DIR = REPO_ROOT / "tests" / "node"
PRODUCER_TIMEOUT_S = 30
EVENT_FIELDS = {"document_id", "status", "task_id", "result_key", "chunks", "added", "removed", "unchanged",
                "error_type", "stored_at"}


@dataclass(frozen=True)
class NodeRun:
    """One ``node producer.js`` run: the document it sent and what it printed."""

    document: dict[str, Any]
    returncode: int
    output: dict[str, Any]
    stderr: str


@pytest.fixture(scope="module")
def node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: the Node.js producer test needs Node.js 18+ (Debian: nodejs)")
    for package in ("celery-node", "ioredis"):
        if not (NODE_DIR / "node_modules" / package / "package.json").exists():
            pytest.fail(f"tests/node/node_modules/{package} is missing: run `npm ci` in tests/node "
                        "(`make test-node` does)")
    return node


@pytest.fixture(scope="module")
def node_worker(workers: WorkerFactory, lp_settings: Settings) -> None:
    workers.start("node", queues=lp_settings.structural_queue, concurrency=1)


def run_producer(node: str, document: dict[str, Any], settings: Settings, tmp: Path,
                 timeout: float = PRODUCER_TIMEOUT_S) -> NodeRun:
    path = tmp / f"{document['document_id']}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    process = subprocess.run(
        [node, "producer.js", str(path), "--timeout", str(timeout), "--group", "lptest-node"],
        cwd=NODE_DIR, env=settings_env(settings), capture_output=True, text=True, timeout=timeout + 30)
    lines = process.stdout.strip().splitlines()
    assert lines, f"producer.js printed nothing (exit {process.returncode}): {process.stderr}"
    return NodeRun(document, process.returncode, json.loads(lines[-1]), process.stderr)


@pytest.fixture(scope="module")
def success(node: str, node_worker: None, lp_settings: Settings,
            tmp_path_factory: pytest.TempPathFactory) -> NodeRun:
    document = make_document("node-doc", sections=3, paragraphs=4, seed=20)
    return run_producer(node, document, lp_settings, tmp_path_factory.mktemp("node"))


@pytest.fixture(scope="module")
def failure(node: str, node_worker: None, lp_settings: Settings,
            tmp_path_factory: pytest.TempPathFactory) -> NodeRun:
    document = make_document("node-bad", sections=1, paragraphs=2)
    document["blocks"][1]["type"] = "not-a-block-type"  # the worker refuses it: a FAILURE record
    return run_producer(node, document, lp_settings, tmp_path_factory.mktemp("node"))


def test_a_node_producer_submits_and_reads_the_stored_chunks(success: NodeRun, lp_settings: Settings) -> None:
    out, document_id = success.output, success.document["document_id"]
    record = out["record"]
    assert record is not None, f"no record stored: {out} {success.stderr}"
    assert record["status"] == "SUCCESS"
    assert (record["document_id"], record["task_id"]) == (document_id, out["task_id"])
    assert record["encoding"] is None and record["error"] is None  # a small result is stored plain
    expected = chunk_request(parse_input(success.document))
    assert record["chunk_ids"] == [c.chunk_id for c in expected.chunks]
    assert record["chunk_texts"] == [c.text for c in expected.chunks]
    assert out["queue_list"] == lp_settings.celery_key_prefix + lp_settings.structural_queue

    # The Python client sees the Node producer's submission as its own.
    with Producer(lp_settings) as producer:
        assert producer.store.load_job(document_id)["task_id"] == out["task_id"]
        view = producer.status(document_id)
        assert (view["state"], view["task_id"], view["queue"]) == ("SUCCESS", out["task_id"],
                                                                   lp_settings.structural_queue)
        assert [c.chunk_id for c in producer.get_result(document_id, timeout=5).chunks] == record["chunk_ids"]
        assert producer.store.client.ttl(job_key(lp_settings.key_prefix, document_id)) > 0


def test_a_node_producer_consumes_the_completion_event_in_a_consumer_group(
        success: NodeRun, lp_settings: Settings) -> None:
    out = success.output
    event = out["event"]
    assert event is not None, f"no completion event for task {out['task_id']} within {PRODUCER_TIMEOUT_S} s"
    assert set(event) >= EVENT_FIELDS
    assert event["document_id"] == success.document["document_id"] and event["task_id"] == out["task_id"]
    assert event["status"] == "SUCCESS" and event["error_type"] == ""
    assert event["result_key"] == result_key(lp_settings.key_prefix, success.document["document_id"])
    assert event["chunks"] == str(len(out["record"]["chunk_ids"]))
    assert (event["added"], event["removed"], event["unchanged"]) == ("", "", "")  # first result of the id
    assert float(event["stored_at"]) > 0
    assert out["pending_after_ack"] == 0  # acknowledged: nothing left pending in the group
    assert success.returncode == 0, success.stderr


def test_a_resubmitted_document_reports_its_changed_chunk_ids_to_node(
        success: NodeRun, node: str, lp_settings: Settings, tmp_path: Path) -> None:
    """Submitted again with one paragraph edited, the record's diff and the event's counts say
    which chunk ids changed: what an upload service re-embeds."""
    edited = json.loads(json.dumps(success.document))
    edited["blocks"][2]["text"] += " Edited by the second submission."
    again = run_producer(node, edited, lp_settings, tmp_path)
    before, after = success.output["record"]["chunk_ids"], again.output["record"]["chunk_ids"]
    assert again.returncode == 0, again.stderr
    diff = again.output["record"]["diff"]
    assert diff["previous_task_id"] == success.output["task_id"]
    assert (set(diff["added"]), set(diff["removed"])) == (set(after) - set(before), set(before) - set(after))
    assert set(diff["unchanged"]) == set(before) & set(after)
    assert diff["added"] and diff["unchanged"]  # one edit: some ids change, most stay
    event = again.output["event"]
    assert (event["added"], event["removed"], event["unchanged"]) == tuple(
        str(len(diff[name])) for name in ("added", "removed", "unchanged"))


def test_a_compressed_record_is_read_by_node(node: str, workers: WorkerFactory, lp_settings: Settings,
                                             tmp_path: Path) -> None:
    """A result above LONGPARSER_RESULT_COMPRESS_BYTES is stored zlib+base64; producer.js
    decodes it as docs/producers.md says."""
    queue = f"node-compressed-{tmp_path.name[-12:]}"
    settings = lp_settings.model_copy(update={"structural_queue": queue})
    workers.start("node-compressed", queues=queue, concurrency=1,
                  env={"LONGPARSER_RESULT_COMPRESS_BYTES": "1024"})
    document = make_document("node-big", sections=4, paragraphs=5, seed=7)
    run = run_producer(node, document, settings, tmp_path)
    assert run.returncode == 0, run.stderr
    record = run.output["record"]
    assert record["status"] == "SUCCESS" and record["encoding"] == "zlib+base64"
    expected = chunk_request(parse_input(document))
    assert record["chunk_ids"] == [c.chunk_id for c in expected.chunks]
    assert run.output["event"]["chunks"] == str(len(expected.chunks))


def test_a_node_producers_fit_model_gives_the_engines_chunks(
        node: str, node_worker: None, lp_settings: Settings, tmp_path: Path) -> None:
    """``{"fit": "model"}`` from Node.js travels as exactly that: the worker's engine expands the
    preset, and the stored result is the library's, chunk for chunk (tests/integration/
    test_path_equivalence.py compares the Python paths the same way)."""
    document = {**make_document("node-fit", sections=3, paragraphs=5, seed=3), "config": {"fit": "model"}}
    run = run_producer(node, document, lp_settings, tmp_path)
    assert run.returncode == 0, run.stderr
    request = parse_input(document)
    spec = ResourceSpec.from_settings(lp_settings).for_request(request.config)
    expected = chunk_request(request, build_resources(spec))
    assert (expected.stats.config["token_counter"], expected.stats.config["max_tokens"]) == ("model", 256)
    assert run.output["record"]["chunk_ids"] == [c.chunk_id for c in expected.chunks]
    assert run.output["record"]["chunk_texts"] == [c.text for c in expected.chunks]
    with Producer(lp_settings) as producer:
        stored = producer.get_result(document["document_id"], timeout=5)
    assert result_view(stored) == result_view(expected)


def test_a_refused_document_from_node_ends_in_a_failure_record(failure: NodeRun) -> None:
    out = failure.output
    record = out["record"]
    assert record is not None, f"no record stored: {out} {failure.stderr}"
    assert record["status"] == "FAILURE" and record["task_id"] == out["task_id"]
    assert record["error"]["type"] == "InvalidPayload"
    assert record["error"]["message"].startswith("block 1 (id 'node-bad-b1'): type: ")
    assert record["chunk_ids"] == []


def test_a_refused_document_from_node_ends_in_a_failure_event(failure: NodeRun) -> None:
    out = failure.output
    event = out["event"]
    assert event is not None, f"no completion event for task {out['task_id']} within {PRODUCER_TIMEOUT_S} s"
    assert (event["status"], event["chunks"], event["error_type"]) == ("FAILURE", "0", "InvalidPayload")
    assert (event["added"], event["removed"], event["unchanged"]) == ("", "", "")
    assert failure.returncode == 0, failure.stderr


def test_a_held_node_message_goes_back_to_its_own_list(node: str, lp_settings: Settings,
                                                       tmp_path: Path) -> None:
    """The routing key celery-node writes under ioredis' keyPrefix is the bare queue name, so a
    message a worker held and gave back (warm shutdown, lost connection) returns to the list
    it came from, ``C`` + queue, where workers and the autoscaler look."""
    from kombu import Queue

    from cli.metrics import read_gauges
    from service.keys import queue_list_keys

    queue = f"node-idle-{tmp_path.name[-12:]}"  # no worker consumes it
    settings = lp_settings.model_copy(update={"structural_queue": queue})
    run = run_producer(node, make_document("node-held", sections=1, paragraphs=1), settings, tmp_path,
                       timeout=1)
    assert run.returncode == 1 and run.output["record"] is None and run.output["event"] is None
    [own_list, *_] = queue_list_keys(settings.celery_key_prefix, queue)
    with Producer(settings) as producer:
        client = producer.store.client
        assert client.llen(own_list) == 1
        with producer.app.connection_for_read() as connection:
            message = Queue(queue, routing_key=queue)(connection.default_channel).get(no_ack=False)
            assert message is not None and client.llen(own_list) == 0
            assert message.headers["lang"] == "js" and message.headers["task"] == "longparser.chunk_document"
            assert message.headers["id"] == run.output["task_id"]
            assert message.delivery_info["routing_key"] == queue
            assert message.decode()[0][0]["document_id"] == "node-held"
            message.reject(requeue=True)
        assert client.llen(own_list) == 1
        assert read_gauges(client, settings.celery_key_prefix, [queue]).depths == {queue: 1}
        client.delete(own_list)
