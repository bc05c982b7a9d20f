"""Embedding as part of the job, with a fake encoder: the request option, its queue, the
encoders workers announce and submit's refusal, the task's vectors and their packing in the
stored record, the declared encoders' checks. The real model's vectors are the opt-in suite's
(tests/integration/test_real_embeddings.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pydantic
import pytest

from config.settings import Settings, SettingsError, load_settings
from loaders.embedding import (
    NORMALIZE_MODULE,
    Embedder,
    check_declared_encoder,
    embed_result,
    load_declared_encoder,
    reserve_for_prefix,
)
from loaders.pinned_model import EncoderUnavailable
from loaders.tokenizer import TOKENIZER_FILE
from longparser.resources import Resources
from schemas import ChunkingConfig, ChunkResult, parse_input
from schemas.chunks import PACKED_EMBEDDINGS, embedded_text, pack_vector, unpack_vector
from schemas.encoders import PINNED_ENCODER, EncoderSpec, embedding_encoder
from schemas.errors import RequestRefused
from service.encoders import ANNOUNCE_TTL_S, announce, embed_refusal, live_encoders, withdraw
from service.keys import encoders_key
from service.store import ResultStore
from tasks.chunk import run_chunk_job
from tasks.errors import SemanticUnavailable
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
from worker.announce import EncoderAnnouncer
from worker.context import WorkerContext

DIMENSION = 4


def fake_vector(text: str) -> np.ndarray:
    """A fixed unit float32 vector per text."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


class FakeEncode:
    """An encoder's passages/queries: records each call, one fixed vector per text."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: Any) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([fake_vector(text) for text in texts])


def fake_embedder(name: str = PINNED_ENCODER, prefix_tokens: int = 0) -> Embedder:
    return Embedder(name=name, weights_sha256="ab" * 32, backend="stub", normalized=True,
                    passages=FakeEncode(), queries=FakeEncode(), prefix_tokens=prefix_tokens)


@pytest.fixture
def embedders() -> dict[str, Embedder]:
    return {PINNED_ENCODER: fake_embedder(), "e5": fake_embedder("e5", prefix_tokens=3)}


@pytest.fixture
def semantic_context(context: WorkerContext, embedders: dict[str, Embedder]) -> WorkerContext:  # noqa: F811
    """A semantic worker's child: it holds the pinned model and a declared encoder 'e5'."""
    semantic = context.settings.model_copy(update={"semantic_enabled": True})
    return WorkerContext(settings=semantic, store=context.store, resources=context.resources,
                         embedders=embedders)


# --- the request option and its queue ---------------------------------------------------------

def test_embed_takes_true_false_or_a_name_and_never_a_path() -> None:
    assert ChunkingConfig().embed is False and not ChunkingConfig().needs_encoder
    assert ChunkingConfig(embed=True).needs_encoder and ChunkingConfig(embed="e5").embed == "e5"
    for bad in ("/models/e5", "./e5", "e5.json", "model", "estimate", ""):
        with pytest.raises(pydantic.ValidationError, match="never names a path"):
            ChunkingConfig(embed=bad)
    with pytest.raises(pydantic.ValidationError):
        ChunkingConfig.model_validate({"embed": 1})  # strict: a number is no answer


def test_embed_true_uses_the_encoder_fit_names_when_declared_else_the_pinned_model() -> None:
    assert embedding_encoder(ChunkingConfig(), {"e5"}) is None
    assert embedding_encoder(ChunkingConfig(embed=True), {"e5"}) == PINNED_ENCODER
    assert embedding_encoder(ChunkingConfig(embed=True, fit="e5"), {"e5"}) == "e5"
    assert embedding_encoder(ChunkingConfig(embed=True, fit="bge"), {"e5"}) == PINNED_ENCODER
    assert embedding_encoder(ChunkingConfig(embed="bge", fit="e5"), {"e5"}) == "bge"
    assert embedding_encoder(ChunkingConfig(fit="e5"), {"e5"}) is None  # fit alone never embeds


def test_requests_with_embed_go_to_the_semantic_queue(producer: Any, store: ResultStore,  # noqa: F811
                                                        fake_app: FakeApp, settings: Settings) -> None:  # noqa: F811
    announce(store.client, store.prefix, "w1", settings.semantic_queue, [PINNED_ENCODER])
    producer.submit(payload("plain"))
    producer.submit(payload("vectors"), embed=True)
    producer.submit(payload("in-config", embed=True))
    assert [sent["queue"] for sent in fake_app.sent] == ["chunking", "semantic", "semantic"]
    assert fake_app.sent[1]["args"][0]["config"]["embed"] is True


def test_the_router_sends_embed_to_the_semantic_queue(settings: Settings) -> None:  # noqa: F811
    from service.celeryconfig import semantic_router

    route = semantic_router(settings)
    assert route("longparser.chunk_document", [{"config": {"embed": "e5"}}], {}, {}) == {"queue": "semantic"}
    assert route("longparser.chunk_document", [{"config": {"embed": False}}], {}, {}) == {"queue": "chunking"}


# --- announcements and submit's refusal -------------------------------------------------------

def test_live_workers_announce_what_they_hold_and_lapse(store: ResultStore) -> None:  # noqa: F811
    client, prefix = store.client, store.prefix
    announce(client, prefix, "w1", "semantic", [PINNED_ENCODER, "e5"], now=1000.0)
    announce(client, prefix, "w2", "chunking", ["bge"], now=1000.0)
    entries = client.hgetall(encoders_key(prefix))
    assert live_encoders(entries, "semantic", now=1001.0) == {PINNED_ENCODER, "e5"}
    assert live_encoders(entries, "semantic", now=1000.0 + ANNOUNCE_TTL_S + 1) is None  # stopped announcing
    assert 0 < client.ttl(encoders_key(prefix)) <= ANNOUNCE_TTL_S
    announce(client, prefix, "w3", "semantic", ["bge"], now=1000.0 + ANNOUNCE_TTL_S + 1)  # prunes w1, w2
    assert set(client.hgetall(encoders_key(prefix))) == {b"w3"}
    withdraw(client, prefix, "w3")
    assert live_encoders(client.hgetall(encoders_key(prefix)), "semantic") is None


def test_embed_refusals_are_one_line() -> None:
    assert embed_refusal(ChunkingConfig(), None, "semantic") is None
    assert embed_refusal(ChunkingConfig(embed=True), {PINNED_ENCODER}, "semantic") is None
    none = embed_refusal(ChunkingConfig(embed=True), None, "semantic")
    assert none is not None and "no live worker holds an encoder" in none and "\n" not in none
    named = embed_refusal(ChunkingConfig(embed="bge"), {PINNED_ENCODER, "e5"}, "semantic")
    assert named == ("embed 'bge': no live worker of queue 'semantic' holds this encoder (held: "
                     "all-MiniLM-L6-v2, e5); declare it in LONGPARSER_ENCODERS on the workers, or name one "
                     "of those")


def test_submit_refuses_embed_at_once_when_no_live_worker_serves_it(
    producer: Any, store: ResultStore, fake_app: FakeApp, settings: Settings  # noqa: F811
) -> None:
    with pytest.raises(RequestRefused, match="no live worker holds an encoder"):
        producer.submit(payload(), embed=True)
    announce(store.client, store.prefix, "w1", settings.semantic_queue, [PINNED_ENCODER])
    with pytest.raises(RequestRefused, match="embed 'e5': no live worker"):
        producer.submit(payload(), embed="e5")
    assert fake_app.sent == []  # nothing published, no job entry
    assert producer.submit(payload(), embed=True).queue == "semantic"


def test_the_announcer_announces_until_it_stops(store: ResultStore) -> None:  # noqa: F811
    announcer = EncoderAnnouncer(store.client, store.prefix, "semantic", ["e5", PINNED_ENCODER], node="n1",
                                 interval=0.05)
    announcer.start()
    try:
        assert live_encoders(store.client.hgetall(encoders_key(store.prefix)), "semantic") == {
            PINNED_ENCODER, "e5"}
    finally:
        announcer.stop()
    assert store.client.hgetall(encoders_key(store.prefix)) == {}


# --- the task -------------------------------------------------------------------------------

def test_a_record_packs_vectors_and_get_result_gives_the_floats(
    semantic_context: WorkerContext, eager: list, store: ResultStore, settings: Settings,  # noqa: F811
    fake_resources: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tasks.chunk

    monkeypatch.setattr(tasks.chunk.app, "context", semantic_context)
    announce(store.client, store.prefix, "w1", settings.semantic_queue, [PINNED_ENCODER])
    from tasks.client import Producer

    running = Producer(settings, app=FakeApp(run=True), store=store)
    running.submit(payload(heading_context=True), embed=True)
    record = store.load_record("doc-1")
    stored_chunks = record["result"]["chunks"]
    result = running.get_result("doc-1", timeout=1)
    assert [c.text for c in result.chunks] == [c.text for c in chunk_request_result(fake_resources).chunks]
    for raw, chunk in zip(stored_chunks, result.chunks, strict=True):
        expected = fake_vector(embedded_text(chunk))
        assert raw["embedding"] == base64.b64encode(struct.pack(f"<{DIMENSION}f", *expected)).decode()
        assert chunk.embedding == expected.tolist()  # exact: the float32 values themselves
        assert embedded_text(chunk) == chunk.embed_text  # heading_context: the breadcrumb is embedded
    assert record["result"]["stats"]["embedding"] == {
        "model": PINNED_ENCODER, "weights_sha256": "ab" * 32, "backend": "stub", "dimension": DIMENSION,
        "normalized": True, "embedded": len(result.chunks), "reused": 0, "store": None}
    assert json.loads(result.model_dump_json())["chunks"][0]["embedding"] == result.chunks[0].embedding


def chunk_request_result(resources: Resources) -> ChunkResult:
    from longparser import chunk_request

    return chunk_request(parse_input(payload(heading_context=True)), resources)


def test_without_embed_a_result_is_as_it_was(context: WorkerContext) -> None:  # noqa: F811
    run_chunk_job(payload(), context, task_id="t-1")
    result = context.store.load_record("doc-1")["result"]
    assert "embedding" not in result["stats"] and all("embedding" not in c for c in result["chunks"])


def test_embed_on_a_worker_without_an_encoder_is_refused(context: WorkerContext) -> None:  # noqa: F811
    with pytest.raises(SemanticUnavailable, match="asks for embed but this worker holds no encoder"):
        run_chunk_job(payload(embed=True), context, task_id="t-1")
    assert context.store.load_record("doc-1")["error"]["type"] == "SemanticUnavailable"


def test_an_encoder_the_worker_does_not_hold_is_refused(semantic_context: WorkerContext) -> None:
    with pytest.raises(RequestRefused, match="embed 'bge' is not an encoder this process holds"):
        run_chunk_job(payload(embed="bge"), semantic_context, task_id="t-1")
    record = semantic_context.store.load_record("doc-1")
    assert record["status"] == "FAILURE" and "LONGPARSER_ENCODERS" in record["error"]["message"]


def test_a_declared_encoder_embeds_and_its_prefix_is_reserved(
    semantic_context: WorkerContext, embedders: dict[str, Embedder], fake_resources: Resources
) -> None:
    from longparser import chunk_request

    run_chunk_job(payload(embed="e5", strict_max_tokens=True), semantic_context, task_id="t-1")
    result = ChunkResult.model_validate(semantic_context.store.load_record("doc-1")["result"])
    assert result.stats.embedding is not None and result.stats.embedding.model == "e5"
    assert embedders["e5"].passages.calls == [[embedded_text(c) for c in result.chunks]]  # one call, in order
    assert embedders[PINNED_ENCODER].passages.calls == []
    # chunked as with reserve_tokens 3: the prefix's 3 tokens kept free in the 12-token budget
    reserved = chunk_request(parse_input(payload(strict_max_tokens=True, reserve_tokens=3)), fake_resources)
    plain = chunk_request(parse_input(payload(strict_max_tokens=True)), fake_resources)
    texts = [c.text for c in result.chunks]
    assert texts == [c.text for c in reserved.chunks] != [c.text for c in plain.chunks]


def test_the_reserve_is_raised_to_the_prefix_and_refused_when_nothing_is_left() -> None:
    kept = reserve_for_prefix(ChunkingConfig(reserve_tokens=5), fake_embedder(prefix_tokens=3))
    assert kept.reserve_tokens == 5
    raised = reserve_for_prefix(ChunkingConfig(max_tokens=64, min_tokens=0), fake_embedder(prefix_tokens=3))
    assert raised.reserve_tokens == 3 and raised.max_tokens == 64
    with pytest.raises(RequestRefused, match="prefix of 3 token"):
        reserve_for_prefix(ChunkingConfig(max_tokens=3, min_tokens=0), fake_embedder(prefix_tokens=3))


def test_embed_result_embeds_each_embedded_text_once_in_order(fake_resources: Resources) -> None:
    result = chunk_request_result(fake_resources)
    embedder = fake_embedder()
    embed_result(result, embedder)
    assert embedder.passages.calls == [[c.embed_text for c in result.chunks]]
    assert result.stats.embedding is not None and result.stats.embedding.embedded == len(result.chunks)


# --- packing ------------------------------------------------------------------------------------

def test_vectors_pack_as_little_endian_float32_base64_exactly() -> None:
    values = [0.1, -2.5, 3.0e-8, 1.0]
    packed = pack_vector(values)
    assert base64.b64decode(packed) == struct.pack("<4f", *values)
    assert unpack_vector(packed) == list(struct.unpack("<4f", struct.pack("<4f", *values)))
    assert unpack_vector(pack_vector(unpack_vector(packed))) == unpack_vector(packed)
    result = ChunkResult.model_validate({"chunks": [{"chunk_id": "c", "text": "t", "token_count": 1,
                                                     "chunk_type": "section", "embedding": packed}]})
    assert result.chunks[0].embedding == unpack_vector(packed)
    record = json.loads(result.model_dump_json(context={PACKED_EMBEDDINGS: True}))
    assert record["chunks"][0]["embedding"] == packed
    with pytest.raises(pydantic.ValidationError):
        ChunkResult.model_validate({"chunks": [{"chunk_id": "c", "text": "t", "token_count": 1,
                                                "chunk_type": "section", "embedding": "not base64!"}]})


# --- declarations -----------------------------------------------------------------------------

def _declared_dir(tmp_path: Path, weights: bytes = b"weights") -> tuple[Path, str]:
    model = tmp_path / "encoder"
    model.mkdir()
    (model / "model.safetensors").write_bytes(weights)
    (model / "tokenizer.json").write_bytes(TOKENIZER_FILE.read_bytes())
    (model / "modules.json").write_text(json.dumps([{"type": "sentence_transformers.models.Transformer"},
                                                    {"type": "sentence_transformers.models.Normalize"}]))
    return model, hashlib.sha256(weights).hexdigest()


def test_settings_declare_encoders_by_name_never_the_pinned_name(isolated_settings: str,  # noqa: F811
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    spec = {"path": "/models/e5", "sha256": "a" * 64, "passage_prefix": "passage: "}
    monkeypatch.setenv("LONGPARSER_ENCODERS", json.dumps({"e5": spec}))
    assert load_settings().encoders == {"e5": EncoderSpec(**spec)}
    for name in (PINNED_ENCODER, "model", "e5.base", "a/b"):
        monkeypatch.setenv("LONGPARSER_ENCODERS", json.dumps({name: spec}))
        with pytest.raises(SettingsError, match="encoders"):
            load_settings()
    monkeypatch.setenv("LONGPARSER_ENCODERS", json.dumps({"e5": {"path": "/models/e5"}}))
    with pytest.raises(SettingsError, match="LONGPARSER_ENCODERS"):
        load_settings()


def test_the_parent_checks_a_declared_encoders_weights(tmp_path: Path) -> None:
    model, digest = _declared_dir(tmp_path)
    assert check_declared_encoder("e5", EncoderSpec(path=str(model), sha256=digest)) == model
    with pytest.raises(EncoderUnavailable, match=r"encoder 'e5': .* has sha256 .*not the declared"):
        check_declared_encoder("e5", EncoderSpec(path=str(model), sha256="0" * 64))
    with pytest.raises(EncoderUnavailable, match=r"has no model\.safetensors"):
        check_declared_encoder("e5", EncoderSpec(path=str(tmp_path / "absent"), sha256=digest))


def test_a_worker_with_a_bad_declaration_refuses_to_start(tmp_path: Path) -> None:
    from worker.signals import preflight_encoders

    model, _ = _declared_dir(tmp_path)
    declared = {"e5": {"path": str(model), "sha256": "0" * 64}}
    semantic = Settings(semantic_enabled=True, encoders=declared)
    with pytest.raises(EncoderUnavailable, match="encoder 'e5'"):
        preflight_encoders(semantic)
    preflight_encoders(Settings(semantic_enabled=False, encoders=declared))  # holds no encoder: none loaded


def test_a_declared_encoder_embeds_long_texts_in_prefixed_windows(
    tmp_path: Path, stub_sentence_transformers: Any
) -> None:
    model, digest = _declared_dir(tmp_path)
    spec = EncoderSpec(path=str(model), sha256=digest, passage_prefix="passage: ", query_prefix="query: ",
                       window=128)
    embedder = load_declared_encoder("e5", spec)
    described = (embedder.name, embedder.backend, embedder.normalized, embedder.prefix_tokens)
    assert described == ("e5", "torch", True, 2)
    [st] = stub_sentence_transformers.instances
    long_text = " ".join(f"word{i}" for i in range(300))
    vectors = embedder.passages(["short text", long_text])
    assert vectors.shape == (2, 2)
    sent = [text for call in st.encode_calls for text in call]
    assert "passage: short text" in sent
    windows = [text for text in sent if text.startswith("passage: word")]
    assert len(windows) > 2 and all(text.startswith("passage: ") for text in sent)
    embedder.queries(["what"])
    assert st.encode_calls[-1] == ["query: what"]


@pytest.mark.parametrize("command", ["chunk", "submit"])
def test_the_embed_flag_takes_an_optional_name(command: str) -> None:
    from cli.chunk import config_overrides
    from cli.main import build_parser

    parser = build_parser()
    assert config_overrides(parser.parse_args([command, "doc.json", "--embed"])) == {"embed": True}
    assert config_overrides(parser.parse_args([command, "doc.json", "--embed", "e5"])) == {"embed": "e5"}
    assert config_overrides(parser.parse_args([command, "doc.json"])) == {}


class FakePinnedEncoder:
    """The process's pinned encoder as the loaders return it (fixed vectors per text)."""

    name = "sentence-transformers/all-MiniLM-L6-v2"
    weights_sha256 = "cd" * 32
    backend = "stub"

    def encode(self, texts: Any) -> np.ndarray:
        return np.stack([fake_vector(text) for text in texts])


def test_longparser_chunk_embed_prints_floats_and_refuses_an_undeclared_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import cli.chunk as cli_chunk
    from cli.main import main

    monkeypatch.setattr(cli_chunk, "load_resources", lambda config: Resources(encoder=FakePinnedEncoder()))
    # the pinned model's directory as the settings name it (the package need not be installed)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "modules.json").write_text(json.dumps([{"type": NORMALIZE_MODULE}]))
    monkeypatch.setattr(cli_chunk, "_settings", lambda: Settings(word_list_path=None, language_id=False,
                                                                 model_path=str(model_dir), _env_file=None))
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(payload(heading_context=True)))
    assert main(["chunk", str(path), "--embed"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert [c["embedding"] for c in output["chunks"]] == [fake_vector(c["embed_text"]).tolist()
                                                          for c in output["chunks"]]
    embedding = output["stats"]["embedding"]
    assert embedding["model"] == PINNED_ENCODER and embedding["normalized"] is True
    assert main(["chunk", str(path), "--embed", "bge"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("longparser chunk: error: embed 'bge' is not an encoder this process holds")
    assert err.count("\n") == 1
