"""One meaning of a request on every path: the engine's chunks whichever way a document goes.

For generated block streams (``bench/gen_blocks.py``) and real fixtures (the sample document, a
Markdown file, a DoclingDocument) and each config below, these paths give identical chunks
(text, ``embed_text``, token counts, chunk ids, pages, block ids) and the same ``stats.config``:

* ``longparser.chunk_blocks`` with the caller's config dict (the reference);
* ``longparser chunk`` (the command line's code, run in this process);
* ``longparser submit --wait``;
* ``tasks.client.submit`` then ``get_result``;
* the asyncio client (``tasks.aio.AsyncProducer``);
* a raw ``send_task`` whose config carries only the caller's keys.

All but the first two go through ONE real worker process (started once for the module) on the
suite's redis-server; the worker declares a tokenizer (``mini``, a byte-level BPE with a 300-token
window) for the ``fit`` case of a declared name. The same configs through the real command line
processes (``python -m cli.main``) are checked once, on the sample document. The Node.js
producer has its own test (``test_node_producer.py``, ``make test-node``); the semantic config
runs with the real model in ``make test-real`` (:func:`test_semantic_config_on_every_path`).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from config.settings import Settings, get_settings
from loaders.docling import blocks_from_docling
from loaders.markdown import blocks_from_markdown
from loaders.resources import ResourceSpec, build_resources
from longparser import chunk_blocks
from schemas import ChunkingConfig, ChunkResult, parse_input
from schemas.tokenizers import TokenizerSpec
from service.keys import TASK_NAME
from tasks import client
from tasks.aio import AsyncProducer
from tasks.client import JobHandle, Producer
from tests.integration.conftest import REPO_ROOT, WorkerFactory, result_view, settings_env
from tests.tokenizer_builds import bpe_model_dir

pytestmark = pytest.mark.integration

QUEUE = "equivalence"
DECLARED = "mini"
DECLARED_WINDOW = 300
RESULT_TIMEOUT_S = 120
CONFIGS = {
    "default": {},
    "fit-model": {"fit": "model"},
    "fit-declared": {"fit": DECLARED},
    "strict-200": {"max_tokens": 200, "strict_max_tokens": True},
    # docs/strict.md's "256 / 50": max_tokens 256, min_tokens 50 (overlap counts paragraphs)
    "256-50": {"max_tokens": 256, "min_tokens": 50},
}
SEMANTIC_CONFIG = {"use_semantic_chunking": True, "min_tokens": 10}


@dataclass(frozen=True)
class Document:
    """One input as each path is given it."""

    name: str
    path: Path  # what the command lines read
    data: Any  # what the Python clients are given: decoded JSON, or Markdown text
    converters: dict[str, Callable[..., Any]] = field(default_factory=dict)  # docling= / text_converter=

    @property
    def document_id(self) -> str:
        return self.request().document_id

    def request(self, config: dict[str, Any] | None = None) -> Any:
        """The validated request, as the command lines and the clients build it."""
        return parse_input(self.data, default_document_id=self.path.stem.removesuffix(".docling"),
                           config_overrides=config, **self.converters)


def _gen_blocks() -> Any:
    spec = importlib.util.spec_from_file_location("gen_blocks", REPO_ROOT / "bench" / "gen_blocks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _markdown_converter(path: Path) -> Callable[[str], list[Any]]:
    return lambda text: blocks_from_markdown(text, source_file=path.name)  # as cli.chunk names it


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Document]:
    tmp = tmp_path_factory.mktemp("equivalence")
    generate = _gen_blocks().generate
    found: dict[str, Document] = {}
    for name, size, seed in (("stream-a", 200, 11), ("stream-b", 60, 29)):
        path = tmp / f"{name}.json"
        blocks = generate(size, seed)
        path.write_text(json.dumps(blocks), encoding="utf-8")
        found[name] = Document(name, path, blocks)
    sample = REPO_ROOT / "examples" / "sample_document.json"
    found["sample"] = Document("sample", sample, json.loads(sample.read_text(encoding="utf-8")))
    markdown = REPO_ROOT / "tests" / "fixtures" / "markdown" / "docling" / "docs_concepts_chunking.md"
    found["markdown"] = Document("markdown", markdown, markdown.read_text(encoding="utf-8"),
                                 {"text_converter": _markdown_converter(markdown)})
    docling = REPO_ROOT / "tests" / "fixtures" / "docling" / "ndbinfo-select-all.docling.json"
    found["docling"] = Document("docling", docling, json.loads(docling.read_text(encoding="utf-8")),
                                {"docling": blocks_from_docling})
    return found


@pytest.fixture(scope="module")
def declared_tokenizer() -> dict[str, Any]:
    tokenizer = bpe_model_dir(DECLARED_WINDOW) / "tokenizer.json"
    return {"path": str(tokenizer), "kind": "hf", "window": DECLARED_WINDOW,
            "sha256": hashlib.sha256(tokenizer.read_bytes()).hexdigest()}


@pytest.fixture(scope="module")
def fleet(lp_settings: Settings, workers: WorkerFactory, declared_tokenizer: dict[str, Any]) -> Settings:
    """The settings of the module's worker and of every producer here; the worker is started."""
    settings = lp_settings.model_copy(update={
        "structural_queue": QUEUE, "tokenizers": {DECLARED: TokenizerSpec(**declared_tokenizer)}})
    workers.start("equivalence", queues=QUEUE, concurrency=1, env=_overrides(declared_tokenizer))
    return settings


def _overrides(declared_tokenizer: dict[str, Any]) -> dict[str, str]:
    return {"LONGPARSER_STRUCTURAL_QUEUE": QUEUE,
            "LONGPARSER_TOKENIZERS": json.dumps({DECLARED: declared_tokenizer})}


@pytest.fixture
def fleet_env(fleet: Settings, declared_tokenizer: dict[str, Any],
              monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """This process's environment as the fleet's (the command lines read their settings from it)."""
    env = settings_env(fleet, **_overrides(declared_tokenizer))
    for name, value in env.items():
        if name.startswith("LONGPARSER_"):
            monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    yield env
    get_settings.cache_clear()


# --------------------------------------------------------------------------- the paths


def via_library(document: Document, config: dict[str, Any], settings: Settings) -> ChunkResult:
    request = document.request()
    spec = ResourceSpec.from_settings(settings).for_request(ChunkingConfig.model_validate(config))
    return chunk_blocks(request.blocks, config, build_resources(spec), document_id=request.document_id)


def _config_flags(config: dict[str, Any]) -> list[str]:
    return ["-c", json.dumps(config)] if config else []


def via_cli_chunk(document: Document, config: dict[str, Any], out: Path) -> ChunkResult:
    argv = ["chunk", str(document.path), "--document-id", document.document_id, *_config_flags(config),
            "-o", str(out)]
    assert main(argv) == 0
    return ChunkResult.model_validate_json(out.read_text(encoding="utf-8"))


def via_cli_submit(document: Document, config: dict[str, Any], capsys: pytest.CaptureFixture[str]
                   ) -> ChunkResult:
    capsys.readouterr()
    argv = ["submit", str(document.path), "--document-id", document.document_id, *_config_flags(config),
            "--wait", "--timeout", str(RESULT_TIMEOUT_S)]
    status = main(argv)
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return ChunkResult.model_validate_json(captured.out)


def via_client(document: Document, config: dict[str, Any], settings: Settings) -> ChunkResult:
    handle = client.submit(document.data, config=config or None, document_id=document.document_id,
                           settings=settings, **document.converters)
    return client.get_result(handle, timeout=RESULT_TIMEOUT_S, settings=settings)


def via_asyncio(document: Document, config: dict[str, Any], settings: Settings) -> ChunkResult:
    async def run() -> ChunkResult:
        async with AsyncProducer(settings) as producer:
            handle = await producer.submit(document.data, config=config or None,
                                           document_id=document.document_id, **document.converters)
            return await producer.get_result(handle, timeout=RESULT_TIMEOUT_S)

    return asyncio.run(run())


def via_send_task(document: Document, config: dict[str, Any], settings: Settings, celery_app: Any
                  ) -> ChunkResult:
    """A producer of its own: the blocks as JSON and a config of the caller's keys alone."""
    body: dict[str, Any] = {"document_id": document.document_id,
                            "blocks": document.request().model_dump(mode="json")["blocks"]}
    if config:
        body["config"] = config
    task_id, queue = str(uuid.uuid4()), settings.queue_for(config.get("use_semantic_chunking") is True)
    celery_app.send_task(TASK_NAME, args=[body], task_id=task_id, queue=queue)
    with Producer(settings) as producer:
        return producer.get_result(JobHandle(document.document_id, task_id, queue), timeout=RESULT_TIMEOUT_S)


def differences_from(expected: dict[str, Any], document: Document, config: dict[str, Any], settings: Settings,
                     celery_app: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """The first difference of each path's result from ``expected`` ("equal" when there is none)."""
    paths = {
        "longparser chunk": lambda: via_cli_chunk(document, config, tmp_path / "chunk.json"),
        "longparser submit --wait": lambda: via_cli_submit(document, config, capsys),
        "tasks.client": lambda: via_client(document, config, settings),
        "asyncio client": lambda: via_asyncio(document, config, settings),
        "raw send_task": lambda: via_send_task(document, config, settings, celery_app),
    }
    return {name: _first_difference(expected, result_view(run())) for name, run in paths.items()}


ALL_EQUAL = dict.fromkeys(["longparser chunk", "longparser submit --wait", "tasks.client", "asyncio client",
                           "raw send_task"], "equal")


def _first_difference(expected: dict[str, Any], got: dict[str, Any]) -> str:
    if expected["config"] != got["config"] or expected["token_counter"] != got["token_counter"]:
        return (f"stats: {expected['config']} / {expected['token_counter']} != "
                f"{got['config']} / {got['token_counter']}")
    if len(expected["chunks"]) != len(got["chunks"]):
        return f"{len(expected['chunks'])} chunks != {len(got['chunks'])}"
    for index, (want, have) in enumerate(zip(expected["chunks"], got["chunks"], strict=True)):
        if want != have:
            return f"chunk {index}: {want} != {have}"
    return "equal"


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("config_name", list(CONFIGS))
@pytest.mark.parametrize("document_name", ["stream-a", "stream-b", "sample", "markdown", "docling"])
def test_every_path_gives_the_engines_chunks(
    documents: dict[str, Document], document_name: str, config_name: str, fleet: Settings,
    fleet_env: dict[str, str], celery_app: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    document, config = documents[document_name], CONFIGS[config_name]
    expected = result_view(via_library(document, config, fleet))
    assert expected["chunks"], "the reference gave no chunks: nothing would be compared"
    if "fit" in config:  # the preset expanded: strict, the fitted counter, its window
        assert (expected["config"]["fit"], expected["config"]["strict_max_tokens"]) == (config["fit"], True)
        assert max(chunk[4] for chunk in expected["chunks"]) <= expected["config"]["max_tokens"]
    assert differences_from(expected, document, config, fleet, celery_app, tmp_path, capsys) == ALL_EQUAL


def test_the_command_line_processes_agree_on_fit_model(
    documents: dict[str, Document], fleet: Settings, fleet_env: dict[str, str], tmp_path: Path,
) -> None:
    """The issue's measurement, as a user runs it: ``python -m cli.main chunk|submit --fit model``."""
    document = documents["sample"]
    out = tmp_path / "chunk.json"
    wait = ["--wait", "--timeout", str(RESULT_TIMEOUT_S)]
    for argv in (["chunk", str(document.path), "--fit", "model", "-o", str(out)],
                 ["submit", str(document.path), "--fit", "model", *wait]):
        process = subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=REPO_ROOT, env=fleet_env,
                                 capture_output=True, text=True, timeout=RESULT_TIMEOUT_S + 30)
        assert process.returncode == 0, process.stderr
    chunked = result_view(ChunkResult.model_validate_json(out.read_text(encoding="utf-8")))
    submitted = result_view(ChunkResult.model_validate_json(process.stdout))
    assert _first_difference(chunked, submitted) == "equal"
    assert chunked == result_view(via_library(document, {"fit": "model"}, fleet))
    assert submitted["config"]["token_counter"] == "model"
    assert max(chunk[4] for chunk in submitted["chunks"]) <= 256


@pytest.mark.real_embeddings
def test_semantic_config_on_every_path(
    documents: dict[str, Document], lp_settings: Settings, workers: WorkerFactory, celery_app: Any,
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The semantic config with the pinned model (``make test-real``): a semantic worker of its own."""
    queue = "equivalence-semantic"
    settings = lp_settings.model_copy(update={"semantic_queue": queue, "semantic_enabled": True,
                                              "language_id": False})
    env = settings_env(settings, LONGPARSER_SEMANTIC_QUEUE=queue)
    workers.start("equivalence-semantic", queues=queue, concurrency=1, env=env)
    for name, value in env.items():
        if name.startswith("LONGPARSER_"):
            monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        for document in (documents["stream-b"], documents["sample"]):
            expected = result_view(via_library(document, SEMANTIC_CONFIG, settings))
            assert expected["chunks"]
            assert differences_from(expected, document, SEMANTIC_CONFIG, settings, celery_app, tmp_path,
                                    capsys) == ALL_EQUAL, document.name
    finally:
        get_settings.cache_clear()
