"""A pair of real structural workers (prefork, concurrency 2) on the test Redis.

One batch of 20 documents goes through the producer client; several tests read that batch
(results, sharing between the two nodes, task events). Failures that must not be retried,
semantic routing and Flower use their own documents.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
from typing import Any

import pytest

from config.settings import Settings
from longparser import chunk_request
from schemas import InputError, parse_input
from service.keys import TASK_NAME
from tasks import client
from tasks.errors import ResultTimeout
from tests.integration.conftest import (
    CELERY,
    SESSION_PREFIX,
    WORKER_READY_TIMEOUT_S,
    EventLog,
    Flower,
    ManagedProcess,
    WorkerFactory,
    chunk_signature,
    http_get,
    make_document,
    node_name,
    settings_env,
    spawn,
    wait_until,
)

pytestmark = pytest.mark.integration

N_DOCUMENTS = 20
RESULT_TIMEOUT_S = 60


def doc_id(name: str) -> str:
    return f"{SESSION_PREFIX}-{name}"


@pytest.fixture(scope="module")
def pair(workers: WorkerFactory) -> tuple[ManagedProcess, ManagedProcess]:
    """Two structural workers with different node names on the same queue."""
    return workers.start("alpha"), workers.start("beta")


@pytest.fixture(scope="module")
def batch(pair: Any, lp_settings: Settings) -> list[tuple[dict[str, Any], client.JobHandle, Any]]:
    """20 documents submitted through the client, with their fetched results."""
    documents = [make_document(doc_id(f"doc-{i:02d}"), seed=i) for i in range(N_DOCUMENTS)]
    handles = [client.submit(document, settings=lp_settings) for document in documents]
    return [(document, handle, client.get_result(handle, timeout=RESULT_TIMEOUT_S, settings=lp_settings))
            for document, handle in zip(documents, handles, strict=True)]


def test_twenty_documents_all_results(batch: list[Any], lp_settings: Settings) -> None:
    assert len(batch) == N_DOCUMENTS
    for document, handle, result in batch:
        expected = chunk_request(parse_input(document))
        assert handle.queue == "chunking"
        assert result.document_id == document["document_id"]
        assert chunk_signature(result) == chunk_signature(expected)
        record = client.fetch_record(document["document_id"], settings=lp_settings)
        assert (record["status"], record["task_id"], record["error"]) == ("SUCCESS", handle.task_id, None)
        assert client.status(handle, settings=lp_settings)["state"] == "SUCCESS"


def test_two_workers_share_the_documents(batch: list[Any], pair: Any, event_log: EventLog) -> None:
    nodes = {proc.extra["node"] for proc in pair}
    by_node: dict[str, int] = {}
    for _, handle, _ in batch:
        succeeded = event_log.wait_for(handle.task_id, "task-succeeded")
        assert len(succeeded) == 1
        by_node[succeeded[0]["hostname"]] = by_node.get(succeeded[0]["hostname"], 0) + 1
    assert set(by_node) == nodes, by_node
    assert sum(by_node.values()) == N_DOCUMENTS


def test_task_events_are_emitted(batch: list[Any], event_log: EventLog, pair: Any) -> None:
    nodes = {proc.extra["node"] for proc in pair}
    for _, handle, result in batch:
        event_log.wait_for(handle.task_id, "task-succeeded")
        events = event_log.for_task(handle.task_id)
        kinds = [e["type"] for e in events]
        assert kinds.count("task-sent") == 1
        assert kinds.count("task-received") == 1
        worker_side = [k for k in kinds if k in {"task-received", "task-started", "task-succeeded"}]
        assert worker_side == ["task-received", "task-started", "task-succeeded"]
        received = event_log.for_task(handle.task_id, "task-received")[0]
        assert received["name"] == TASK_NAME
        assert received["hostname"] in nodes
        succeeded = event_log.for_task(handle.task_id, "task-succeeded")[0]
        assert f"'chunks': {len(result.chunks)}" in succeeded["result"]
        assert succeeded["runtime"] > 0


def _bad_block(document: dict[str, Any]) -> dict[str, Any]:
    blocks = [dict(b) for b in document["blocks"]]
    blocks[1] = {**blocks[1], "provenance": {"page_number": "page two"}}
    return {**document, "blocks": blocks}


def _semantic(document: dict[str, Any]) -> dict[str, Any]:
    return {**document, "config": {**document["config"], "use_semantic_chunking": True}}


FAILURES = {
    # name: (payload builder, error type, start of the message)
    "invalid-block": (_bad_block, "InvalidPayload", "block 1 (id '{id}-b1'): provenance.page_number: "),
    "semantic-on-structural-queue": (_semantic, "SemanticUnavailable",
                                     "document '{id}' asks for semantic chunking but this worker has "
                                     "LONGPARSER_SEMANTIC_ENABLED=false"),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_bad_request_fails_once_with_a_structured_error(
    case: str, pair: Any, celery_app: Any, lp_settings: Settings, event_log: EventLog
) -> None:
    build, error_type, message = FAILURES[case]
    document_id = doc_id(f"fail-{case}")
    payload = build(make_document(document_id, sections=1, paragraphs=2))
    # Sent as a raw task (the client would refuse the invalid one, or route the semantic one away).
    async_result = celery_app.send_task(TASK_NAME, args=[payload], queue="chunking")
    async_result.get(timeout=RESULT_TIMEOUT_S, propagate=False)
    expected = message.format(id=document_id)
    assert async_result.state == "FAILURE"
    assert type(async_result.result).__name__ == error_type
    assert str(async_result.result).startswith(expected)
    record = client.fetch_record(document_id, settings=lp_settings)
    assert record["status"] == "FAILURE"
    assert record["error"]["type"] == error_type
    assert record["error"]["message"].startswith(expected)
    # Not retried: one delivery, one failure, no retry event.
    event_log.wait_for(async_result.id, "task-failed")
    time.sleep(0.5)  # a retry would have been published by now
    kinds = [e["type"] for e in event_log.for_task(async_result.id)]
    assert kinds.count("task-received") == 1
    assert kinds.count("task-failed") == 1
    assert "task-retried" not in kinds


def test_client_refuses_an_invalid_document_before_sending(lp_settings: Settings) -> None:
    document_id = doc_id("refused")
    with pytest.raises(InputError, match=rf"^block 1 \(id '{document_id}-b1'\): provenance.page_number: "):
        client.submit(_bad_block(make_document(document_id, sections=1, paragraphs=2)), settings=lp_settings)
    assert client.status(document_id, settings=lp_settings)["state"] == "UNKNOWN"


def test_semantic_request_is_routed_and_waits(pair: Any, lp_settings: Settings, test_redis: Any,
                                               event_log: EventLog) -> None:
    document = make_document(doc_id("semantic-waits"), sections=1, paragraphs=2)
    handle = client.submit(document, semantic=True, settings=lp_settings)
    assert handle.queue == "semantic"
    with pytest.raises(ResultTimeout, match="queue 'semantic'"):
        client.get_result(handle, timeout=2, settings=lp_settings)
    assert client.status(handle, settings=lp_settings)["state"] == "PENDING"
    assert event_log.for_task(handle.task_id, "task-received") == []
    # The message waits in the (prefixed) semantic queue for a semantic worker.
    assert test_redis.client().llen(f"{lp_settings.celery_key_prefix}semantic") == 1


def _flower_tasks(flower: Flower) -> dict[str, Any]:
    status, body = http_get(f"{flower.url}/api/tasks", flower.auth)
    assert status == 200, body[:500]
    return json.loads(body)


def test_flower_lists_tasks_with_final_states(
    pair: Any, flower: Flower, celery_app: Any, lp_settings: Settings
) -> None:
    assert http_get(f"{flower.url}/api/tasks")[0] == 401  # basic auth is enforced
    # Flower only knows tasks whose events it saw, and its HTTP server answers before its event
    # receiver subscribes: send probes until one shows up.
    probes = itertools.count()

    def probe_seen() -> bool:
        probe = client.submit(make_document(doc_id(f"flower-probe-{next(probes)}"), sections=1, paragraphs=1),
                              settings=lp_settings)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            if _flower_tasks(flower).get(probe.task_id, {}).get("state") == "SUCCESS":
                return True
            time.sleep(0.2)
        return False

    wait_until(probe_seen, 30, interval=0, what="flower to see a probe task")
    good = [client.submit(make_document(doc_id(f"flower-{i}"), seed=i), settings=lp_settings)
            for i in range(2)]
    bad = celery_app.send_task(TASK_NAME, queue="chunking",
                               args=[_bad_block(make_document(doc_id("flower-bad"), sections=1))])
    expected = {h.task_id: "SUCCESS" for h in good} | {bad.id: "FAILURE"}

    def listed() -> bool:
        tasks = _flower_tasks(flower)
        return all(tasks.get(task_id, {}).get("state") == state for task_id, state in expected.items())

    wait_until(listed, 30, interval=0.3, what=f"flower to list {expected}")
    tasks = _flower_tasks(flower)
    nodes = {proc.extra["node"] for proc in pair}
    for task_id in expected:
        assert tasks[task_id]["name"] == TASK_NAME
        assert tasks[task_id]["worker"] in nodes
    assert "InvalidPayload" in tasks[bad.id]["exception"]


def test_ready_comes_after_the_pool_processes_built_their_resources(pair: Any) -> None:
    for proc in pair:
        log = proc.log_text()
        built = log.find("pool: 2 of 2 processes built their resources in ")
        ready = log.find(f"{proc.extra['node']} ready.")
        assert 0 <= built < ready, log[-3000:]
        children = [line for line in log[:ready].splitlines() if " resources ready in " in line]
        assert len(children) == 2  # both children's "process N resources ready" lines came first


def test_the_readme_producer_snippet_runs_as_written(
    pair: Any, lp_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from config.settings import get_settings
    from tests.integration.conftest import settings_env
    from tests.unit.test_readme import code_blocks, readme_section

    [snippet] = code_blocks(readme_section("Running the fleet"), "python")
    for name in [name for name in os.environ if name.startswith("LONGPARSER_")]:
        monkeypatch.delenv(name)
    for name, value in settings_env(lp_settings).items():
        if name.startswith("LONGPARSER_"):
            monkeypatch.setenv(name, value)  # the snippet reads the settings from the environment
    get_settings.cache_clear()
    try:
        namespace: dict[str, Any] = {}
        exec(compile(snippet, "README.md", "exec"), namespace)  # as a reader runs it, nothing given
    finally:
        get_settings.cache_clear()
    assert namespace["handle"].document_id == namespace["result"].document_id == "report-2024"
    assert namespace["result"].chunks


# --- declared tokenizers (LONGPARSER_TOKENIZERS): loaded by the parent before the pool forks ----


def _declaring(sha256: str) -> dict[str, str]:
    from loaders.tokenizer import TOKENIZER_FILE

    entry = {"path": str(TOKENIZER_FILE), "kind": "hf", "window": 256, "sha256": sha256}
    return {"LONGPARSER_TOKENIZERS": json.dumps({"mini": entry})}


def test_a_worker_counts_in_the_tokenizer_it_declares(
    workers: WorkerFactory, celery_app: Any, lp_settings: Settings
) -> None:
    from loaders.tokenizer import TOKENIZER_FILE, load_model_counter
    from longparser.tokens import count
    from schemas import ChunkResult

    digest = hashlib.sha256(TOKENIZER_FILE.read_bytes()).hexdigest()
    proc = workers.start("tokenizers", queues="tokenizers", concurrency=2, env=_declaring(digest))
    document = make_document(doc_id("declared-tokenizer"), sections=1, paragraphs=3)
    document["config"] = {**document["config"], "fit": "mini"}
    celery_app.send_task(TASK_NAME, args=[document], queue="tokenizers")  # no other worker declares it

    def stored() -> dict[str, Any] | None:
        record = client.fetch_record(document["document_id"], settings=lp_settings)
        return record if record and record["status"] in ("SUCCESS", "FAILURE") else None

    record = wait_until(stored, RESULT_TIMEOUT_S, interval=0.1, what="the declared tokenizer's result")
    assert record["status"] == "SUCCESS", record
    result = ChunkResult.model_validate(record["result"])
    assert result.stats.token_counter == "mini" and result.stats.config["fit"] == "mini"
    pinned = load_model_counter()  # the same file, so the same counts
    assert all(chunk.token_count == count(pinned, chunk.text) for chunk in result.chunks)
    log = proc.log_text()
    built = log.find("pool: 2 of 2 processes built their resources in ")
    assert 0 <= built < log.find(f"{proc.extra['node']} ready.")


def test_a_declared_tokenizer_that_cannot_load_stops_the_worker_in_one_line(
    lp_settings: Settings, log_dir: Any
) -> None:
    node = node_name("bad-tokenizer")
    argv = [CELERY, "-A", "worker", "worker", "-P", "prefork", "-c", "1", "-n", node, "-Q", "tokenizers-bad",
            "--without-gossip", "--without-mingle", "--without-heartbeat"]
    proc = spawn("worker-bad-tokenizer", argv, settings_env(lp_settings, **_declaring("0" * 64)), log_dir)
    try:
        wait_until(lambda: not proc.alive(), WORKER_READY_TIMEOUT_S, interval=0.2, what="the worker to stop")
    finally:
        proc.stop()
    assert proc.popen.returncode != 0
    refusals = [line for line in proc.log_text().splitlines() if "cannot start" in line]
    assert len(refusals) == 1, proc.log_text()[-3000:]
    assert refusals[0].startswith("longparser worker: cannot start: tokenizer 'mini': ")
    assert refusals[0].endswith(f"not the declared {'0' * 64} (LONGPARSER_TOKENIZERS)")
    assert "resources ready" not in proc.log_text()  # no pool process was started
