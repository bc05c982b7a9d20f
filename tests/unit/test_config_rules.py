"""One preset concept: what ``fit`` lets explicit fields change and what it refuses, the one
window rule, an unset ``min_tokens`` under a small ``max_tokens``, and the warning for a field
that does nothing in the request's mode (docs/config.md)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from cli.main import build_parser, main
from cli.submit import run_submit
from loaders.tokenizer import load_model_counter
from loaders.tokenizers import load_path
from longparser import Resources, chunk_blocks
from longparser.errors import RequestRefused
from longparser.preset import counter_window
from schemas import ChunkingConfig, InputError, parse_config
from schemas.config import (
    DEFAULT_MIN_TOKENS,
    FIT_SETTINGS,
    MODEL_WINDOW,
    RECOMMENDED_CONFIG,
    above_window,
    config_warnings,
    fit_config,
    fit_preset,
)
from tasks.client import Producer
from tasks.errors import RequestRefused as TaskRefused
from tasks.payload import request_json
from tests.tokenizer_builds import bpe_model_dir
from tests.unit.worker_fixtures import (  # noqa: F401
    FakeApp,
    context,
    eager,
    fake_app,
    isolated_settings,
    payload,
    producer,
    settings,
    store,
)

MODEL = Resources(model_counter=load_model_counter())
BLOCKS = [
    {"block_id": "h", "type": "heading", "text": "Results", "hierarchy_path": ["Results"]},
    *[{"block_id": f"p{i}", "type": "paragraph", "hierarchy_path": ["Results"],
       "text": f"Paragraph {i} says the turbine produced more power this year, in every month. " * 4}
      for i in range(8)],
]
UNDO_COUNTER = ("fit 'model' counts in that tokenizer; token_counter 'estimate' would undo it: leave "
                "token_counter out (or fit out, to count with 'estimate')")
UNDO_STRICT = ("fit 'model' keeps every chunk within the tokenizer's window; strict_max_tokens false would "
               "undo it: leave strict_max_tokens out (or fit out, for a packing target)")
UNDO_WINDOW = ("max_tokens 300 is above the window of fit 'model' (256 tokens): strict mode could not keep "
               "chunks within what the model embeds; set max_tokens to 256 or less")
UNDOING = [
    pytest.param({"token_counter": "estimate"}, UNDO_COUNTER, id="token_counter"),
    pytest.param({"strict_max_tokens": False}, UNDO_STRICT, id="strict-false"),
    pytest.param({"max_tokens": 300}, UNDO_WINDOW, id="above-window"),
]


@pytest.fixture
def fake_resources(fake_word_list: frozenset[str]) -> Resources:
    """The eager worker's resources: the model's token counter too (``fit: model`` needs it)."""
    return Resources(word_list=fake_word_list, model_counter=load_model_counter())


def _submitting(client: Producer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """``longparser submit`` on ``client`` (a recording fake app); the request file to submit."""
    import cli.submit

    monkeypatch.setattr(cli.submit, "_producer", lambda command: client)
    source = tmp_path / "doc.json"
    source.write_text(json.dumps({"document_id": "d", "blocks": BLOCKS}), encoding="utf-8")
    return source


# --- fit: explicit fields win, except those that would undo it ----------------------------------


@pytest.mark.parametrize(("fields", "refusal"), UNDOING)
def test_the_engine_refuses_a_field_that_would_undo_the_fit_in_one_line(
    fields: dict[str, Any], refusal: str
) -> None:
    with pytest.raises(RequestRefused) as info:
        chunk_blocks(BLOCKS, {"fit": "model", **fields}, MODEL)
    assert str(info.value) == refusal


def test_a_declared_tokenizers_window_is_the_fits_window() -> None:
    resources = Resources(counters={"bpe": load_path(str(bpe_model_dir()))})  # window 512
    with pytest.raises(RequestRefused) as info:
        chunk_blocks(BLOCKS, {"fit": "bpe", "max_tokens": 600}, resources)
    assert str(info.value) == above_window(600, 512, "fit 'bpe'")
    at_window = chunk_blocks(BLOCKS, {"fit": "bpe", "max_tokens": 512}, resources)
    assert at_window.stats.config["max_tokens"] == 512


def test_explicit_fields_that_keep_the_fit_still_win() -> None:
    config = {"fit": "model", "token_counter": "model", "strict_max_tokens": True, "max_tokens": 200,
              "overlap_blocks": 1}
    result = chunk_blocks(BLOCKS, config, MODEL)
    assert {key: result.stats.config[key] for key in config} == config
    assert max(chunk.token_count for chunk in result.chunks) <= 200


@pytest.mark.parametrize(("fields", "refusal"), UNDOING)
def test_a_worker_refuses_it_with_a_failure_record(
    eager: list, store: Any, fields: dict[str, Any], refusal: str,  # noqa: F811
) -> None:
    from tasks.chunk import chunk_document

    with pytest.raises(TaskRefused) as info:
        chunk_document.delay(payload(fit="model", **fields)).get()
    assert str(info.value) == refusal
    record = store.load_record("doc-1")
    assert (record["status"], record["error"]["type"]) == ("FAILURE", "RequestRefused")


@pytest.mark.parametrize(("fields", "refusal"), UNDOING)
def test_the_producer_refuses_it_before_sending(
    producer: Producer, fake_app: FakeApp, fields: dict[str, Any], refusal: str,  # noqa: F811
) -> None:
    with pytest.raises(RequestRefused) as info:
        producer.submit({"document_id": "d", "blocks": BLOCKS, "config": {"fit": "model", **fields}})
    assert (str(info.value), fake_app.sent) == (refusal, [])


def test_the_producer_leaves_a_declared_tokenizers_window_to_the_workers(
    producer: Producer, fake_app: FakeApp,  # noqa: F811
) -> None:
    producer.submit({"document_id": "d", "blocks": BLOCKS, "config": {"fit": "e5", "max_tokens": 600}})
    assert fake_app.sent[0]["args"][0]["config"] == {"fit": "e5", "max_tokens": 600}


def test_submit_on_the_command_line_exits_2_with_the_reason(
    producer: Producer, fake_app: FakeApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = _submitting(producer, monkeypatch, tmp_path)
    argv = ["submit", str(source), "--fit", "model", "--token-counter", "estimate"]
    assert run_submit(build_parser().parse_args(argv)) == 2
    assert capsys.readouterr().err == f"longparser submit: error: {UNDO_COUNTER}\n"
    assert fake_app.sent == []


def test_an_older_clients_whole_dump_is_served_as_before_and_warned() -> None:
    full = ChunkingConfig(fit="model").model_dump(mode="json")  # every field: what clients sent before
    result = chunk_blocks(BLOCKS, full, MODEL)
    plain = chunk_blocks(BLOCKS, {key: value for key, value in full.items() if key != "fit"}, MODEL)
    assert [c.text for c in result.chunks] == [c.text for c in plain.chunks]
    assert result.stats.token_counter == "estimate"
    assert result.stats.warnings == [
        "fit 'model' sets nothing: the config carries every field, as a client before this release sent it, "
        "and each wins over the preset; an upgraded client sends only the fields its caller set"]


# --- one window rule ----------------------------------------------------------------------------


def test_the_window_rule_says_the_same_wherever_it_is_checked() -> None:
    """Validation (the model's window, known without the model), the engine (a loaded tokenizer's
    window) and the fit preset give the one rule's words."""
    with pytest.raises(InputError) as info:
        parse_config({"max_tokens": 300, "strict_max_tokens": True, "token_counter": "model"})
    assert str(info.value) == "config: " + above_window(300, MODEL_WINDOW, "token_counter 'model'")
    resources = Resources(counters={"bpe": load_path(str(bpe_model_dir()))})
    with pytest.raises(RequestRefused) as refused:
        chunk_blocks(BLOCKS, {"max_tokens": 600, "strict_max_tokens": True, "token_counter": "bpe"},
                     resources)
    assert str(refused.value) == above_window(600, 512, "token_counter 'bpe'")
    assert counter_window("model", object()) == MODEL_WINDOW  # a model counter without its own window
    assert above_window(256, 256, "fit 'model'") is None


# --- an unset min_tokens follows a small max_tokens ---------------------------------------------


def test_max_tokens_alone_works_whatever_its_value() -> None:
    result = chunk_blocks(BLOCKS, {"max_tokens": 64})
    assert result.chunks and ChunkingConfig(max_tokens=64).min_tokens == 32
    for max_tokens in range(1, 300):
        config = ChunkingConfig(max_tokens=max_tokens)
        assert 0 <= config.min_tokens < max_tokens
        expected = DEFAULT_MIN_TOKENS if max_tokens > DEFAULT_MIN_TOKENS else max_tokens // 2
        assert config.min_tokens == expected


def test_a_followed_min_tokens_is_not_set_and_does_not_travel() -> None:
    config = ChunkingConfig(max_tokens=64)
    assert config.model_fields_set == {"max_tokens"}
    from schemas import ChunkRequest

    sent = json.loads(request_json(ChunkRequest(document_id="d", config=config)))
    assert sent["config"] == {"max_tokens": 64}
    fitted = fit_config(ChunkingConfig(fit="model", max_tokens=64), MODEL_WINDOW)
    assert fitted.min_tokens == 0  # the preset's


def test_an_explicit_min_tokens_is_still_held_below_max_tokens() -> None:
    with pytest.raises(InputError) as info:
        parse_config({"max_tokens": 64, "min_tokens": 64})
    assert str(info.value) == ("config: min_tokens (64) must be smaller than max_tokens (64): set min_tokens "
                               "below 64")
    with pytest.raises(InputError) as bad:  # the default's own error never hides the cause
        parse_config({"max_tokens": "64"})
    assert "min_tokens" not in str(bad.value)


# --- "recommended" is the fit preset ------------------------------------------------------------


def test_the_recommended_config_is_fit_model_spelled_out() -> None:
    assert dict(RECOMMENDED_CONFIG) == fit_preset("model", MODEL_WINDOW)
    expanded = fit_config(ChunkingConfig(fit="model"), MODEL_WINDOW)
    defaults = ChunkingConfig()
    changed = {name for name in ChunkingConfig.model_fields
               if getattr(expanded, name) != getattr(defaults, name)}
    assert changed == set(RECOMMENDED_CONFIG) and FIT_SETTINGS.keys() < RECOMMENDED_CONFIG.keys()


def test_semantic_method_recommended_still_works_and_is_warned() -> None:
    config = ChunkingConfig(use_semantic_chunking=True, semantic_method="recommended")
    assert config_warnings(config) == ["semantic_method 'recommended' is an older name of 'cohesion': use "
                                       "that name"]
    assert config_warnings(config.model_copy(update={"semantic_method": "cohesion"})) == []


# --- a field that does nothing in the request's mode is warned once -----------------------------


@pytest.mark.parametrize(
    ("fields", "warnings"),
    [
        ({"semantic_threshold": 0.5}, ["semantic_threshold 0.5 does nothing: use_semantic_chunking is off"]),
        ({"semantic_method": "cohesion", "semantic_boundary_cost": 0.3},
         ["semantic_method \"cohesion\" does nothing: use_semantic_chunking is off",
          "semantic_boundary_cost 0.3 does nothing: use_semantic_chunking is off"]),
        ({"use_semantic_chunking": True, "semantic_threshold": 0.5, "semantic_method": "cohesion"},
         ["semantic_threshold 0.5 does nothing: it applies to semantic_method 'adjacent' only, and this "
          "request uses 'cohesion'"]),
        ({"use_semantic_chunking": True, "semantic_pair_threshold": 0.3},
         ["semantic_pair_threshold 0.3 does nothing: it applies to semantic_method 'cohesion' only, and this "
          "request uses 'adjacent'"]),
        ({"overlap_blocks": 0, "overlap_unit": "sentence", "overlap_max_share": 0.2},
         ["overlap_max_share 0.2 does nothing: overlap_blocks is 0",
          "overlap_unit \"sentence\" does nothing: overlap_blocks is 0"]),
        ({"breadcrumb_titles": 2}, ["breadcrumb_titles 2 does nothing: heading_context is off"]),
        ({"breadcrumb_repeats_heading": True},
         ["breadcrumb_repeats_heading true does nothing: heading_context is off"]),
        ({"fit": "model", "overlap_unit": "sentence"},  # the preset's overlap_blocks is 0
         ["overlap_unit \"sentence\" does nothing: overlap_blocks is 0"]),
        ({"fit": "model", "heading_context": False, "breadcrumb_titles": 2},
         ["breadcrumb_titles 2 does nothing: heading_context is off"]),
    ],
    ids=["semantic-off", "semantic-off-method", "adjacent-only", "cohesion-only", "no-overlap",
         "no-heading-context", "no-heading-context-repeat", "preset-mode", "preset-mode-overridden"],
)
def test_a_field_that_does_nothing_in_the_mode_is_warned(fields: dict[str, Any], warnings: list[str]) -> None:
    assert config_warnings(ChunkingConfig(**fields)) == warnings


@pytest.mark.parametrize(
    "fields",
    [
        {},
        ChunkingConfig().model_dump(mode="json"),  # every field at its default: nothing to say
        {"semantic_threshold": 0.3, "breadcrumb_titles": None},  # defaults, set explicitly
        {"use_semantic_chunking": True, "semantic_method": "cohesion", "semantic_pair_threshold": 0.3},
        {"fit": "model"},  # the preset's own values are not the caller's
        {"fit": "model", "breadcrumb_titles": 2},
        dict(RECOMMENDED_CONFIG),
    ],
    ids=["empty", "full-defaults", "explicit-defaults", "cohesion", "fit", "fit-breadcrumb", "recommended"],
)
def test_fields_that_act_or_sit_at_their_default_are_not_warned(fields: dict[str, Any]) -> None:
    assert config_warnings(ChunkingConfig(**fields)) == []


def test_warnings_go_to_the_results_stats_and_the_log_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="longparser.pipeline"):
        result = chunk_blocks(BLOCKS, {"semantic_threshold": 0.5, "breadcrumb_titles": 2})
    expected = ["breadcrumb_titles 2 does nothing: heading_context is off",
                "semantic_threshold 0.5 does nothing: use_semantic_chunking is off"]
    assert result.stats.warnings == expected
    assert [record.getMessage() for record in caplog.records] == [f"config: {w}" for w in expected]
    before = chunk_blocks(BLOCKS, {})
    assert [c.text for c in result.chunks] == [c.text for c in before.chunks]  # chunked as asked


def test_the_command_line_prints_each_warning_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import cli.chunk

    monkeypatch.setattr(cli.chunk, "load_resources", lambda config: Resources())
    source = tmp_path / "doc.json"
    source.write_text(json.dumps(BLOCKS), encoding="utf-8")
    out = tmp_path / "out.json"
    assert main(["chunk", str(source), "-c", '{"semantic_threshold": 0.5}', "-o", str(out)]) == 0
    warning = "semantic_threshold 0.5 does nothing: use_semantic_chunking is off"
    assert capsys.readouterr().err == f"longparser chunk: warning: config: {warning}\n"
    assert json.loads(out.read_text(encoding="utf-8"))["stats"]["warnings"] == [warning]


def test_the_producer_logs_them_at_submit(
    producer: Producer, fake_app: FakeApp, caplog: pytest.LogCaptureFixture,  # noqa: F811
) -> None:
    with caplog.at_level(logging.WARNING, logger="longparser_client.client"):
        producer.submit({"document_id": "d", "blocks": BLOCKS, "config": {"breadcrumb_titles": 2}})
    assert [record.getMessage() for record in caplog.records] == [
        "config: breadcrumb_titles 2 does nothing: heading_context is off"]
    assert fake_app.sent[0]["args"][0]["config"] == {"breadcrumb_titles": 2}  # sent all the same


def test_submit_on_the_command_line_prints_them(
    producer: Producer, fake_app: FakeApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = _submitting(producer, monkeypatch, tmp_path)
    assert main(["submit", str(source), "-c", '{"overlap_blocks": 0, "overlap_unit": "sentence"}']) == 0
    assert capsys.readouterr().err == ("longparser submit: warning: config: overlap_unit \"sentence\" does "
                                       "nothing: overlap_blocks is 0\n")
