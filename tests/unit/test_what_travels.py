"""What a producer sends is what its caller set: the engine alone expands a preset.

The client sends the config fields the caller set and no others (``tasks.payload.request_json``),
inline or by reference, and the worker's fast path keeps them as set; so ``{"fit": "model"}``
chunks the same through ``submit`` as through the library and ``longparser chunk``. Runs the real
task eagerly on what the client sends (a JSON round trip, like the broker), with the model's
token counter in its resources.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli.main import build_parser, main
from cli.submit import run_submit
from config.settings import Settings
from loaders.tokenizer import load_model_counter
from longparser import Resources, chunk_blocks
from schemas import ChunkingConfig, ChunkRequest, ChunkResult, parse_input
from schemas.config import DEFAULT_MIN_TOKENS
from service.keys import TASK_NAME
from service.payloads import RedisPayloads, parse_reference
from service.store import ResultStore
from tasks.client import Producer
from tasks.payload import request_json
from tests.unit.conftest import FakeLanguageId
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
from worker.serialization import decode_task_body

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_document.json"
MARKDOWN = ("# Results\n\nThe turbine produced more power this year.\n\n## Winter\n\n"
            "Output rose in every month.\n")


@pytest.fixture
def fake_resources(fake_word_list: frozenset[str]) -> Resources:
    """The worker's resources here: the model's token counter too (``fit: model`` needs it)."""
    return Resources(word_list=fake_word_list, language_id=FakeLanguageId(),
                     model_counter=load_model_counter())


def _blocks() -> list[dict[str, Any]]:
    return payload()["blocks"]


def _sent_config(app: FakeApp) -> dict[str, Any]:
    [sent] = app.sent
    return sent["args"][0]["config"]


def _markdown_blocks(text: str) -> list[dict[str, Any]]:
    from loaders.markdown import blocks_from_markdown

    return blocks_from_markdown(text, source_file="notes.md")


@pytest.mark.parametrize("submit", [
    lambda p: p.submit({"document_id": "d", "blocks": _blocks()}, config={"fit": "model"}),
    lambda p: p.submit({"document_id": "d", "blocks": _blocks(), "config": {"fit": "model"}}),
    lambda p: p.submit(_blocks(), document_id="d", config={"fit": "model"}),
    lambda p: p.submit(ChunkRequest(document_id="d", config=ChunkingConfig(fit="model"))),
    lambda p: p.submit(parse_input({"document_id": "d", "blocks": _blocks()}), config={"fit": "model"}),
    lambda p: p.submit(MARKDOWN, text_converter=_markdown_blocks, document_id="d", config={"fit": "model"}),
    lambda p: p.submit({"schema_name": "DoclingDocument", "name": "d"}, docling=lambda _: _blocks(),
                       config={"fit": "model"}),
], ids=["config-argument", "request-config", "block-list", "chunk-request", "validated-override", "markdown",
        "docling"])
def test_fit_model_travels_as_exactly_what_the_caller_set(
    producer: Producer, fake_app: FakeApp, submit: Any,  # noqa: F811
) -> None:
    submit(producer)
    assert _sent_config(fake_app) == {"fit": "model"}


def test_a_request_without_config_sends_an_empty_one(producer: Producer, fake_app: FakeApp) -> None:  # noqa: F811
    producer.submit({"document_id": "d", "blocks": _blocks()})
    assert _sent_config(fake_app) == {}


def test_cli_submit_sends_only_the_flags_and_the_config_given(
    producer: Producer, fake_app: FakeApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    import cli.submit

    monkeypatch.setattr(cli.submit, "_producer", lambda command: producer)
    source = tmp_path / "notes.md"
    source.write_text(MARKDOWN, encoding="utf-8")
    for argv in (["submit", str(SAMPLE), "--fit", "model"], ["submit", str(SAMPLE), "-c", '{"fit": "model"}'],
                 ["submit", str(source), "--fit", "model"]):
        assert run_submit(build_parser().parse_args(argv)) == 0
    assert [sent["args"][0]["config"] for sent in fake_app.sent] == [{"fit": "model"}] * 3
    argv = ["submit", str(SAMPLE), "--fit", "model", "--max-tokens", "200", "-c", '{"min_tokens": 100}']
    assert run_submit(build_parser().parse_args(argv)) == 0
    assert fake_app.sent[-1]["args"][0]["config"] == {"fit": "model", "max_tokens": 200, "min_tokens": 100}


def test_a_field_set_to_its_default_travels_and_wins_over_the_preset(
    running_producer: Producer, fake_resources: Resources,  # noqa: F811
) -> None:
    default_min = DEFAULT_MIN_TOKENS
    config = {"fit": "model", "min_tokens": default_min}
    running_producer.submit({"document_id": "d", "blocks": _sample_blocks(), "config": config})
    assert running_producer.app.sent[0]["args"][0]["config"] == {"fit": "model", "min_tokens": default_min}
    result = running_producer.get_result("d", timeout=5)
    assert result.stats.config["min_tokens"] == default_min  # the preset's 0 lost to the explicit field
    assert (result.stats.config["max_tokens"], result.stats.config["token_counter"]) == (256, "model")
    expected = chunk_blocks(_sample_blocks(), ChunkingConfig.model_validate(config), fake_resources,
                            document_id="d")
    assert _signature(result) == _signature(expected)


def test_the_worker_still_reads_an_older_clients_full_config_as_explicit_fields(
    running_producer: Producer, fake_resources: Resources,  # noqa: F811
) -> None:
    """An older client sent every field filled in: each is explicit, so ``fit`` finds nothing left
    to expand but its own counter's window check; the request is served, not refused."""
    full = ChunkingConfig(fit="model").model_dump(mode="json")
    request = {"document_id": "old", "blocks": _sample_blocks(), "config": full}
    running_producer.app.send_task(TASK_NAME, args=[request], task_id="t-old", queue="chunking")
    record = running_producer.fetch_record("old")
    assert record is not None and record["status"] == "SUCCESS", record
    result = ChunkResult.model_validate(record["result"])
    expected = chunk_blocks(_sample_blocks(), ChunkingConfig.model_validate(full), fake_resources,
                            document_id="old")
    assert _signature(result) == _signature(expected)
    assert result.stats.config == expected.stats.config and result.stats.token_counter == "estimate"


def test_a_referenced_request_stores_only_the_set_fields(
    settings: Settings, store: ResultStore, fake_app: FakeApp,  # noqa: F811
) -> None:
    small_threshold = settings.model_copy(update={"reference_threshold_bytes": 256})
    small = Producer(small_threshold, app=fake_app, store=store)
    small.submit({"document_id": "ref-1", "blocks": _sample_blocks()}, config={"fit": "model"})
    [sent] = fake_app.sent
    reference = parse_reference(sent["args"][0], settings.key_prefix)
    stored = json.loads(RedisPayloads(store.client, store.prefix, store.ttl).get(reference))
    assert stored["config"] == {"fit": "model"}


def test_the_workers_fast_path_keeps_the_fields_the_caller_set() -> None:
    config = ChunkingConfig(fit="model", min_tokens=100)
    request = ChunkRequest(document_id="d", blocks=_blocks(), config=config)
    body = b"[[" + request_json(request) + b"],{},{}]"
    [[decoded], _, _] = decode_task_body(body, limit=len(body))
    assert isinstance(decoded, ChunkRequest)
    assert decoded.config.model_fields_set == {"fit", "min_tokens"}
    assert decoded.config == request.config


def test_cli_submit_fit_model_gives_the_chunks_of_cli_chunk_fit_model(
    running_producer: Producer, tmp_path: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's measurement: ``submit --fit model --wait`` gave 8 chunks counted by the
    estimate (max_tokens 512) where ``chunk --fit model`` gave 21 within 256 model tokens."""
    import cli.submit

    monkeypatch.setattr(cli.submit, "_producer", lambda command: running_producer)
    assert main(["chunk", str(SAMPLE), "--fit", "model", "-o", str(tmp_path / "chunk.json")]) == 0
    chunked = ChunkResult.model_validate_json((tmp_path / "chunk.json").read_text(encoding="utf-8"))
    capsys.readouterr()
    assert main(["submit", str(SAMPLE), "--fit", "model", "--wait", "--timeout", "5"]) == 0
    submitted = ChunkResult.model_validate_json(capsys.readouterr().out)
    assert _signature(submitted) == _signature(chunked)
    assert submitted.stats.config == chunked.stats.config
    assert submitted.stats.config["token_counter"] == "model"
    assert len(submitted.chunks) > 8 and max(chunk.token_count for chunk in submitted.chunks) <= 256


def _sample_blocks() -> list[dict[str, Any]]:
    request = parse_input(json.loads(SAMPLE.read_text(encoding="utf-8")), default_document_id="sample")
    return request.model_dump(mode="json")["blocks"]


def _signature(result: ChunkResult) -> list[tuple[Any, ...]]:
    """What must be equal between two paths (quality scores aside: resources differ)."""
    return [(c.chunk_id, c.text, c.embed_text, c.token_count, tuple(c.block_ids), tuple(c.page_numbers))
            for c in result.chunks]
