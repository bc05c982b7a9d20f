"""The ``fit`` preset, ``reserve_tokens`` and the tokenizer's window in strict mode; the
workers' refusal of tokenizers named by path or not declared; ``--fit`` on the command line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from config.settings import Settings, SettingsError, load_settings
from loaders.resources import ResourceSpec, build_resources
from loaders.tokenizer import TOKENIZER_FILE, load_model_counter
from loaders.tokenizers import load_path
from longparser import chunk_blocks
from longparser.errors import RequestRefused
from longparser.resources import Resources
from schemas import ChunkingConfig, ChunkResult
from schemas.config import FIT_MAX_TOKENS, RECOMMENDED_CONFIG
from tasks.errors import RequestRefused as TaskRefused
from tests.tokenizer_builds import bpe_model_dir, real_count, tiktoken_declaration
from tests.unit.worker_fixtures import context, eager, isolated_settings, payload, settings, store  # noqa: F401
from worker.signals import preload_tokenizers

BLOCKS = [
    {"block_id": "h", "type": "heading", "text": "Results", "hierarchy_path": ["Results"]},
    *[{"block_id": f"p{i}", "type": "paragraph", "hierarchy_path": ["Results"],
       "text": f"Paragraph {i} says the turbine produced more power this year, in every month. " * 9}
      for i in range(12)],
]
MODEL = Resources(model_counter=load_model_counter())


def test_fit_model_is_the_recommended_recipe_in_one_key() -> None:
    fitted = chunk_blocks(BLOCKS, {"fit": "model"}, MODEL)
    recipe = chunk_blocks(BLOCKS, RECOMMENDED_CONFIG, MODEL)
    assert [c.text for c in fitted.chunks] == [c.text for c in recipe.chunks]
    recommended = ChunkingConfig(**RECOMMENDED_CONFIG).model_dump(mode="json", exclude={"fit"})
    assert fitted.stats.config == {"fit": "model", **recommended}
    assert "config" not in recipe.model_dump()["stats"]  # echoed only for the preset


def test_the_preset_says_the_title_twice_in_the_chunk_that_opens_its_section_within_the_window() -> None:
    chunks = chunk_blocks(BLOCKS, {"fit": "model"}, MODEL).chunks
    assert chunks[0].text.startswith("Results\n\n") and len(chunks) > 2
    # every chunk's breadcrumb is its title, the opening one's included (its heading follows)
    assert [c.embed_text for c in chunks] == [f"Results\n{c.text}" for c in chunks]
    tokenizer = load_model_counter().tokens.tokenizer
    assert max(len(tokenizer.encode(c.embed_text).ids) for c in chunks) <= 256


def test_explicit_fields_win_over_the_preset() -> None:
    result = chunk_blocks(BLOCKS, {"fit": "model", "max_tokens": 128, "heading_context": False}, MODEL)
    assert result.stats.config["max_tokens"] == 128 and result.stats.config["heading_context"] is False
    assert result.stats.config["strict_max_tokens"] is True  # from the preset
    assert max(chunk.token_count for chunk in result.chunks) <= 128


def test_fit_takes_the_tokenizers_window_up_to_256() -> None:
    counter = load_path(str(bpe_model_dir()))  # window 512
    resources = Resources(counters={"bpe": counter})
    result = chunk_blocks(BLOCKS, {"fit": "bpe"}, resources)
    assert result.stats.config["max_tokens"] == FIT_MAX_TOKENS == 256
    assert result.stats.token_counter == counter.name
    assert all(real_count(bpe_model_dir(), chunk.embed_text or chunk.text) <= 256 for chunk in result.chunks)
    big = Resources(counters={"tt": load_path(str(tiktoken_declaration()))})  # window 8191
    assert chunk_blocks(BLOCKS, {"fit": "tt"}, big).stats.config["max_tokens"] == 256
    # the whole window stays available when asked for
    whole = chunk_blocks(BLOCKS, {"fit": "bpe", "max_tokens": 512}, resources)
    assert whole.stats.config["max_tokens"] == 512


def test_reserve_tokens_leaves_room_in_every_chunk() -> None:
    result = chunk_blocks(BLOCKS, {"fit": "model", "reserve_tokens": 6}, MODEL)
    counter = MODEL.model_counter
    assert max(counter.count_joined("", counter.measure([c.embed_text])) for c in result.chunks) <= 256 - 6
    plain = chunk_blocks(BLOCKS, {"max_tokens": 100, "min_tokens": 0, "reserve_tokens": 30,
                                  "strict_max_tokens": True, "token_counter": "model"}, MODEL)
    assert max(chunk.token_count for chunk in plain.chunks) <= 70


def test_a_reserve_that_leaves_no_room_is_refused() -> None:
    with pytest.raises(ValueError, match=r"reserve_tokens \(512\) leaves no room in max_tokens \(512\)"):
        ChunkingConfig(reserve_tokens=512)
    refusal = r"fit 'model' \(window 256\): reserve_tokens \(300\) leaves no room"
    with pytest.raises(RequestRefused, match=refusal):
        chunk_blocks(BLOCKS, {"fit": "model", "reserve_tokens": 300}, MODEL)


def test_max_tokens_above_the_window_is_refused_in_strict_mode_in_one_line() -> None:
    resources = Resources(counters={"bpe": load_path(str(bpe_model_dir()))})
    with pytest.raises(RequestRefused) as info:
        chunk_blocks(BLOCKS, {"max_tokens": 600, "strict_max_tokens": True, "token_counter": "bpe"},
                     resources)
    assert str(info.value) == ("max_tokens 600 is above the window of token_counter 'bpe' (512 tokens): "
                               "strict mode could not keep chunks within what the model embeds; set "
                               "max_tokens to 512 or less")
    # a target, not a maximum: allowed
    assert chunk_blocks(BLOCKS, {"max_tokens": 600, "token_counter": "bpe"}, resources).chunks
    with pytest.raises(RequestRefused, match=r"min_tokens \(300\) must be smaller than max_tokens \(256\)"):
        chunk_blocks(BLOCKS, {"fit": "model", "min_tokens": 300}, MODEL)


def test_a_tokenizer_the_process_does_not_hold_is_refused() -> None:
    refusal = r"token_counter 'e5' is not a tokenizer this process holds \(it holds: none\)"
    with pytest.raises(RequestRefused, match=refusal):
        chunk_blocks(BLOCKS, {"token_counter": "e5"})
    with pytest.raises(ValueError, match="the estimate has no window to fit"):
        ChunkingConfig(fit="estimate")


def test_the_library_loads_what_a_config_names_by_path() -> None:
    path = str(bpe_model_dir())
    config = ChunkingConfig(fit=path)
    resources = build_resources(ResourceSpec().for_request(config))
    assert (resources.model_counter, list(resources.counters)) == (None, [path])
    result = chunk_blocks(BLOCKS, config, resources)
    assert result.stats.token_counter == path and result.stats.config["fit"] == path
    fit_model = ChunkingConfig(fit="model")
    assert build_resources(ResourceSpec().for_request(fit_model)).model_counter is not None


# --- workers: declared names only ---------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_settings_declare_tokenizers_by_name_with_their_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = {"path": str(TOKENIZER_FILE), "kind": "hf", "window": 256, "sha256": _digest(TOKENIZER_FILE)}
    monkeypatch.setenv("LONGPARSER_TOKENIZERS", json.dumps({"mini": entry}))
    assert load_settings().tokenizers["mini"].window == 256
    for bad, message in [({"mini": {**entry, "sha256": None}}, "tokenizer 'mini' needs its sha256"),
                         ({"a/b": entry}, "tokenizer name 'a/b' must match"),
                         ({"model": entry}, "tokenizer name 'model' must match")]:
        monkeypatch.setenv("LONGPARSER_TOKENIZERS", json.dumps(bad))
        with pytest.raises(SettingsError, match=message) as info:
            load_settings()
        assert "\n" not in str(info.value)
    monkeypatch.setenv("LONGPARSER_TOKENIZERS", '{"mini": ')
    with pytest.raises(SettingsError) as info:
        load_settings()
    assert str(info.value).startswith("tokenizers (LONGPARSER_TOKENIZERS): the value must be JSON (")
    assert "\n" not in str(info.value)


def test_a_declared_tokenizer_that_cannot_load_stops_the_worker_in_one_line() -> None:
    entry = {"path": str(TOKENIZER_FILE), "kind": "hf", "window": 256, "sha256": "0" * 64}
    with pytest.raises(SystemExit) as info:
        preload_tokenizers(Settings(tokenizers={"mini": entry}))
    message = str(info.value.code)
    assert message.startswith("longparser worker: cannot start: tokenizer 'mini': ") and "\n" not in message
    assert message.endswith(f"not the declared {'0' * 64} (LONGPARSER_TOKENIZERS)")
    good = Settings(tokenizers={"mini": {**entry, "sha256": _digest(TOKENIZER_FILE)}})
    assert preload_tokenizers(good)["mini"].window == 256


def test_a_worker_loads_its_declared_tokenizers_once_in_the_parent_and_its_children_share_them(
    isolated_settings: str, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    from kombu.serialization import registry
    from kombu.utils import json as kombu_json

    import loaders.resources
    import worker.signals
    from worker.celery_app import create_app

    entry = {"path": str(TOKENIZER_FILE), "kind": "hf", "window": 256, "sha256": _digest(TOKENIZER_FILE)}
    declaring = Settings(word_list_path=None, language_id=False, tokenizers={"mini": entry})
    loads: list[list[str]] = []
    load_named = loaders.resources.load_named
    monkeypatch.setattr(loaders.resources, "load_named",
                        lambda names, declared: loads.append(list(names)) or load_named(names, declared))
    monkeypatch.setattr(worker.signals, "check_worker_can_start", lambda _: None)
    monkeypatch.setattr(worker.signals, "parent_context", lambda _: "parent context")
    app = create_app(declaring, main="tokenizers-test")
    try:
        worker.signals.worker_init.send(sender=type("WorkController", (), {"app": app})())
        assert loads == [["mini"]]  # in the parent, before any child
        app.set_current()  # what a pool child does for its worker's app before worker_process_init
        children = []
        for _ in range(2):
            worker.signals.worker_process_init.send(sender="node@host")
            children.append(app.context.resources.counters["mini"])
        assert loads == [["mini"]] and children[0] is children[1]  # inherited, not loaded again
        assert children[0].window == 256
    finally:  # kombu's own codec back (worker_init installs the fast decoder), as kombu registers it
        registry.register("json", kombu_json.dumps, kombu_json.loads, content_type="application/json",
                          content_encoding="utf-8")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"token_counter": "/models/e5-base"},
         "token_counter '/models/e5-base' is a path: workers never open a path a request names; name a "
         "tokenizer LONGPARSER_TOKENIZERS declares (none)"),
        ({"fit": "tokenizer.json"}, "fit 'tokenizer.json' is a path: workers never open a path"),
        ({"token_counter": "e5"}, "token_counter 'e5' is not a tokenizer this worker declares "
                                  "(LONGPARSER_TOKENIZERS declares: none)"),
    ],
    ids=["path", "fit-path", "undeclared"],
)
def test_workers_refuse_paths_and_undeclared_names_once_with_a_failure_record(
    eager: list, store: Any, config: dict[str, Any], message: str  # noqa: F811
) -> None:
    with pytest.raises(TaskRefused) as info:
        from tasks.chunk import chunk_document

        chunk_document.delay(payload(**config)).get()
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    record = store.load_record("doc-1")
    assert record["status"] == "FAILURE" and record["error"]["type"] == "RequestRefused"


def test_a_worker_chunks_with_a_declared_tokenizer(
    monkeypatch: pytest.MonkeyPatch, eager: list, store: Any, context: Any  # noqa: F811
) -> None:
    from dataclasses import replace

    import tasks.chunk

    entry = {"path": str(bpe_model_dir()), "kind": "hf",
             "sha256": _digest(bpe_model_dir() / "tokenizer.json")}
    declaring = Settings(**{**context.settings.model_dump(), "tokenizers": {"bpe": entry}})
    counters = preload_tokenizers(declaring)
    tasks.chunk.app.context = replace(context, settings=declaring,
                                      resources=replace(context.resources, counters=counters))
    tasks.chunk.chunk_document.delay(payload(fit="bpe", min_tokens=0)).get()
    result = ChunkResult.model_validate(store.load_record("doc-1")["result"])
    assert result.stats.token_counter == "bpe" and result.stats.config["strict_max_tokens"] is True
    assert result.stats.config["max_tokens"] == 12  # the payload's own, which wins over the preset
    assert all(chunk.token_count == real_count(bpe_model_dir(), chunk.text) for chunk in result.chunks)
