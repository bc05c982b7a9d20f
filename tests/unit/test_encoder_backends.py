"""Encoder backends and windows, controlled: stub runtimes, fake exports, the real tokenizer file.

No test here needs torch, sentence-transformers, ONNX Runtime or OpenVINO: the runtimes are
stub modules put in ``sys.modules``, the export steps are replaced by functions writing known
bytes, so the cache, the manifest digests, the lock and the refusals are exercised for real. The
pinned tokenizer (``tokenizers``, a core dependency) plans the windows. The real backends run in
the opt-in real-model suite (tests/integration/test_real_embeddings.py).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import sys
import threading
import types
from pathlib import Path
from typing import Any, ClassVar, get_args

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import loaders.export as export
from config.settings import Settings
from loaders.encoder import OFFLINE_ENV, SentenceTransformerEncoder, load_encoder
from loaders.encoder_backends import (
    AUTO,
    BACKENDS,
    PAD_TO_MULTIPLE,
    ExportedEncoder,
    backend_model_name,
    token_batches,
)
from loaders.pinned_model import MODEL_NAME, EncoderUnavailable
from loaders.resources import ResourceSpec, build_resources
from loaders.tokenizer import load_model_counter
from loaders.windows import WINDOW_OVERLAP, TextWindows, cut_points, embed_in_windows
from schemas.config import MODEL_WINDOW

ROOM = MODEL_WINDOW - 2  # [CLS] and [SEP]
TOKENIZER = load_model_counter().tokens.tokenizer


def _count(text: str) -> int:
    return len(TOKENIZER.encode(text, add_special_tokens=False).ids)


def _long_text(sentences: int = 60) -> str:
    return " ".join(
        f"Sentence {i} tells how the pump number {i} was serviced in spring." for i in range(sentences)
    )


@pytest.fixture(autouse=True)
def _restore_offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OFFLINE_ENV:
        monkeypatch.setenv(name, "0")


# --- windows --------------------------------------------------------------------------------------


@given(
    words=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=400),
    room=st.integers(min_value=4, max_value=60),
    overlap=st.integers(min_value=0, max_value=20),
)
def test_cut_points_cover_every_token_within_the_room(words: list[int], room: int, overlap: int) -> None:
    word_ids = [w for w, pieces in enumerate(words) for _ in range(pieces)]
    overlap = min(overlap, room // 2 - 1) if room >= 4 else 0
    ranges = cut_points(word_ids, room, max(overlap, 0))
    assert ranges[0][0] == 0 and ranges[-1][1] == len(word_ids)
    for (first, last), (next_first, _) in itertools.pairwise(ranges):
        assert first < next_first <= last  # progress, and nothing skipped
    for first, last in ranges:
        assert 0 < last - first <= room
        cut_inside_a_word = last < len(word_ids) and word_ids[last] == word_ids[last - 1]
        assert not cut_inside_a_word or last - first == room  # only a word longer than the room


def test_long_text_windows_fit_cover_the_text_and_overlap() -> None:
    text = _long_text()
    assert _count(text) > 3 * ROOM
    (plan,) = TextWindows(TOKENIZER).plan([text])
    assert plan is not None and len(plan) >= 4
    assert plan[0].start == 0 and plan[-1].end == len(text)
    for window, following in itertools.pairwise(plan):
        assert following.start < window.end  # overlapping: a sentence at an edge is read whole once
        shared = _count(text[following.start : window.end])
        assert WINDOW_OVERLAP <= shared <= WINDOW_OVERLAP + 12  # rounded to a word start
    for window in plan:
        assert window.tokens == _count(text[window.start : window.end]) <= ROOM
        assert text[window.start] != " " and text[window.end - 1] != " "


def test_words_of_many_pieces_are_kept_whole() -> None:
    # WordPiece turns a word over 100 characters into one [UNK], so with this tokenizer no word
    # outgrows the window; the cut between pieces exists for other tokenizers (cut_points above).
    text = " ".join(["9z" * 45] * 12)  # 12 words of many pieces each
    (plan,) = TextWindows(TOKENIZER).plan([text])
    assert plan is not None and len(plan) >= 2
    assert all(window.tokens <= ROOM for window in plan)
    assert all(set(text[w.start : w.end].split(" ")) == {"9z" * 45} for w in plan)
    assert plan[0].start == 0 and plan[-1].end == len(text)


def test_texts_that_fit_have_no_windows() -> None:
    fits = " ".join(["word"] * ROOM)
    assert _count(fits) == ROOM
    assert TextWindows(TOKENIZER).plan([fits, "", "short"]) == [None, None, None]
    assert TextWindows(TOKENIZER).plan([fits + " word"])[0] is not None


def test_overlap_is_bounded() -> None:
    with pytest.raises(ValueError, match="overlap must be in"):
        TextWindows(TOKENIZER, overlap=ROOM)


class _Recorder:
    """encode(): each text's vector is [its token count, 1 if it starts with 'Sentence 0' else 0]."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([[_count(t), float(t.startswith("Sentence 0"))] for t in texts], dtype=np.float32)


def test_short_texts_only_make_exactly_the_call_they_made_before() -> None:
    recorder = _Recorder()
    texts = ["alpha beta", "gamma", "alpha beta"]
    out = embed_in_windows(texts, recorder, TextWindows(TOKENIZER))
    assert recorder.calls == [texts]  # same list, same order, one call: bit-identical vectors
    assert out.tolist() == [[2.0, 0.0], [1.0, 0.0], [2.0, 0.0]]


def test_long_text_vector_is_the_token_weighted_mean_of_its_windows_at_unit_length() -> None:
    recorder = _Recorder()
    long_text = _long_text()
    windows = TextWindows(TOKENIZER)
    (plan,) = windows.plan([long_text])
    assert plan is not None
    out = embed_in_windows(["short one", long_text, "short two"], recorder, windows)
    windows_call, short_call = recorder.calls
    assert short_call == ["short one", "short two"]
    assert windows_call == [long_text[w.start : w.end] for w in plan]
    tokens = np.array([w.tokens for w in plan], dtype=np.float64)
    expected = np.array([(tokens * tokens).sum(), tokens[0]]) / tokens.sum()  # [count, 1st window?]
    assert out[1] == pytest.approx(expected / np.linalg.norm(expected), rel=1e-6)
    assert out.dtype == np.float32
    assert out[0].tolist() == [2.0, 0.0] and out[2].tolist() == [2.0, 0.0]


def test_torch_path_windows_long_texts(tmp_path: Path, stub_sentence_transformers: Any) -> None:
    model, digest = _model_dir(tmp_path)
    encoder = load_encoder(model, expected_sha256=digest)
    assert isinstance(encoder, SentenceTransformerEncoder) and encoder.windows is not None
    long_text = _long_text()
    vectors = encoder.encode(["a", long_text])
    (instance,) = stub_sentence_transformers.instances
    windows_call, short_call = instance.encode_calls
    assert short_call == ["a"] and len(windows_call) >= 4 and long_text not in windows_call
    assert vectors.shape == (2, 2)
    assert np.linalg.norm(vectors[1]) == pytest.approx(1.0)


# --- the exported backends: cache, manifest, refusals ---------------------------------------------


def _model_dir(tmp_path: Path, content: bytes = b"fake weights") -> tuple[Path, str]:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "model.safetensors").write_bytes(content)
    return model, hashlib.sha256(content).hexdigest()


class _Exports:
    """Replaces the three export steps with writers of known bytes, and counts them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        self.offline_during_export: list[bool] = []
        monkeypatch.setattr(export, "export_onnx", self.onnx)
        monkeypatch.setattr(export, "quantize_int8", self.int8)
        monkeypatch.setattr(export, "convert_openvino", self.openvino)

    def onnx(self, model_dir: Path, out_file: Path, threads: int) -> dict[str, Any]:
        self.calls.append("onnx")
        self.offline_during_export.append(
            all(__import__("os").environ[n] == v for n, v in OFFLINE_ENV.items())
        )
        out_file.write_bytes(b"graph of " + (model_dir / "model.safetensors").read_bytes())
        return {"exporter": "fake"}

    def int8(self, source: Path, out_file: Path) -> dict[str, Any]:
        self.calls.append("onnx-int8")
        out_file.write_bytes(b"int8 " + source.read_bytes())
        return {"quantiser": "fake"}

    def openvino(self, source: Path, out_file: Path) -> dict[str, Any]:
        self.calls.append("openvino")
        out_file.write_bytes(b"<xml/>")
        out_file.with_suffix(".bin").write_bytes(b"weights")
        return {"converter": "fake"}


class _StubSession:
    """ONNX Runtime's InferenceSession: vector = [tokens in the row, first token id]."""

    instances: ClassVar[list[_StubSession]] = []

    def __init__(self, path: str, options: Any, providers: list[str]) -> None:
        self.path, self.options, self.providers = path, options, providers
        self.batches: list[dict[str, np.ndarray]] = []
        _StubSession.instances.append(self)

    def run(self, outputs: Any, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.batches.append(inputs)
        mask = inputs["attention_mask"]
        return [np.stack([mask.sum(1), inputs["input_ids"][:, 1]], axis=1).astype(np.float32)]


@pytest.fixture
def stub_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> type[_StubSession]:
    module = types.ModuleType("onnxruntime")
    module.SessionOptions = types.SimpleNamespace  # type: ignore[attr-defined]
    module.InferenceSession = _StubSession  # type: ignore[attr-defined]
    module.ExecutionMode = types.SimpleNamespace(ORT_SEQUENTIAL="sequential")  # type: ignore[attr-defined]
    module.GraphOptimizationLevel = types.SimpleNamespace(ORT_ENABLE_ALL="all")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "onnxruntime", module)
    _StubSession.instances = []
    return _StubSession


@pytest.fixture
def stub_openvino(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    class Compiled:
        def get_property(self, name: str) -> Any:
            return types.SimpleNamespace(to_string=lambda: "bf16")

        def output(self, index: int) -> str:
            return "out"

        def create_infer_request(self) -> Any:
            return types.SimpleNamespace(infer=lambda inputs: {"out": np.ones((len(inputs["input_ids"]), 3))})

    class Core:
        def read_model(self, path: str) -> str:
            seen["path"] = path
            return path

        def compile_model(self, model: str, device: str, config: dict[str, Any]) -> Compiled:
            seen["device"], seen["config"] = device, config
            return Compiled()

    module = types.ModuleType("openvino")
    module.Core = Core  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "openvino", module)
    return seen


def test_first_load_exports_and_records_digests_later_loads_verify_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub_onnxruntime: type[_StubSession]
) -> None:
    exports = _Exports(monkeypatch)
    model, digest = _model_dir(tmp_path)
    cache = tmp_path / "cache"
    encoder = load_encoder(model, expected_sha256=digest, backend="onnx", cache_dir=cache, threads=3)
    assert isinstance(encoder, ExportedEncoder)
    assert exports.calls == ["onnx"] and exports.offline_during_export == [True]
    directory = export.artefact_dir(cache, "onnx", digest)
    manifest = json.loads((directory / "manifest.json").read_text())
    graph = hashlib.sha256(b"graph of fake weights").hexdigest()
    assert manifest["files"] == {"model.onnx": graph}
    assert (manifest["source_sha256"], manifest["backend"], manifest["main_file"]) == (
        digest,
        "onnx",
        "model.onnx",
    )
    assert (encoder.name, encoder.weights_sha256, encoder.artefact_sha256) == (
        f"{MODEL_NAME} (onnx)",
        digest,
        graph,
    )
    (session,) = stub_onnxruntime.instances
    assert session.path == str(directory / "model.onnx") and session.providers == ["CPUExecutionProvider"]
    assert (session.options.intra_op_num_threads, session.options.inter_op_num_threads) == (3, 1)
    load_encoder(model, expected_sha256=digest, backend="onnx", cache_dir=cache)
    assert exports.calls == ["onnx"]  # verified, not exported again


def test_int8_and_openvino_derive_from_the_onnx_export(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stub_onnxruntime: type[_StubSession],
    stub_openvino: dict[str, Any],
) -> None:
    exports = _Exports(monkeypatch)
    model, digest = _model_dir(tmp_path)
    load_encoder(model, expected_sha256=digest, backend="onnx-int8", cache_dir=tmp_path)
    openvino = load_encoder(model, expected_sha256=digest, backend="openvino", cache_dir=tmp_path, threads=2)
    assert exports.calls == ["onnx", "onnx-int8", "openvino"]
    manifest = json.loads((export.artefact_dir(tmp_path, "openvino", digest) / "manifest.json").read_text())
    assert sorted(manifest["files"]) == ["openvino_model.bin", "openvino_model.xml"]
    assert stub_openvino["config"] == {
        "INFERENCE_NUM_THREADS": 2,
        "NUM_STREAMS": 1,
        "PERFORMANCE_HINT": "LATENCY",
    }
    assert stub_openvino["device"] == "CPU"
    assert openvino.name == f"{MODEL_NAME} (openvino, bf16)"
    assert openvino.encode(["a b", "c"]).shape == (2, 3)


@pytest.mark.parametrize("damage", ["changed", "missing", "manifest"])
def test_a_changed_export_is_refused_not_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub_onnxruntime: type[_StubSession], damage: str
) -> None:
    exports = _Exports(monkeypatch)
    model, digest = _model_dir(tmp_path)
    load_encoder(model, expected_sha256=digest, backend="onnx", cache_dir=tmp_path)
    directory = export.artefact_dir(tmp_path, "onnx", digest)
    if damage == "changed":
        (directory / "model.onnx").write_bytes(b"tampered")
    elif damage == "missing":
        (directory / "model.onnx").unlink()
    else:
        (directory / "manifest.json").write_text("{not json")
    with pytest.raises(EncoderUnavailable) as info:
        load_encoder(model, expected_sha256=digest, backend="onnx", cache_dir=tmp_path)
    assert f"delete {directory}" in str(info.value)
    if damage != "manifest":
        assert "refusing to load a changed export" in str(info.value)
    assert exports.calls == ["onnx"]


def test_manifest_for_other_weights_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub_onnxruntime: type[_StubSession]
) -> None:
    _Exports(monkeypatch)
    model, digest = _model_dir(tmp_path)
    load_encoder(model, expected_sha256=digest, backend="onnx", cache_dir=tmp_path)
    directory = export.artefact_dir(tmp_path, "onnx", digest)
    manifest = json.loads((directory / "manifest.json").read_text())
    (directory / "manifest.json").write_text(json.dumps({**manifest, "source_sha256": "0" * 64}))
    with pytest.raises(EncoderUnavailable, match=f"not 'onnx' of {digest}"):
        load_encoder(model, expected_sha256=digest, backend="onnx", cache_dir=tmp_path)


@pytest.mark.parametrize(
    ("backend", "module", "extra"),
    [
        ("onnx", "onnxruntime", "[onnx]"),
        ("onnx-int8", "onnxruntime", "[onnx]"),
        ("openvino", "openvino", "[openvino]"),
    ],
)
def test_missing_runtime_refuses_with_what_to_install_before_any_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, module: str, extra: str
) -> None:
    exports = _Exports(monkeypatch)
    monkeypatch.setitem(sys.modules, module, None)
    model, digest = _model_dir(tmp_path)
    with pytest.raises(EncoderUnavailable) as info:
        build_resources(ResourceSpec(encoder="required", model_path=model, expected_sha256=digest,
                                     encoder_backend=backend, encoder_cache_dir=tmp_path))
    assert f"encoder backend {backend!r} needs {module}" in str(info.value)
    assert f"pip install -e '.{extra}'" in str(info.value)
    assert exports.calls == []


def test_missing_export_toolchain_names_the_torch_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub_onnxruntime: type[_StubSession]
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    model, digest = _model_dir(tmp_path)
    with pytest.raises(EncoderUnavailable) as info:
        load_encoder(model, expected_sha256=digest, backend="onnx", cache_dir=tmp_path)
    assert "encoder backend 'onnx': torch cannot be imported" in str(info.value)
    assert "pip install -e '.[embeddings-cpu]'" in str(info.value)
    assert not export.artefact_dir(tmp_path, "onnx", digest).exists()


def test_a_cache_that_cannot_be_written_asks_for_an_export_ahead_of_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub_onnxruntime: type[_StubSession]
) -> None:
    exports = _Exports(monkeypatch)
    model, digest = _model_dir(tmp_path)
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")  # a file where the cache directory would go: unwritable even for root
    with pytest.raises(EncoderUnavailable) as info:
        load_encoder(model, expected_sha256=digest, backend="onnx", cache_dir=blocked / "cache")
    message = str(info.value)
    assert message.startswith(f"encoder backend 'onnx': no export in {blocked / 'cache' / digest[:16]} yet")
    assert "`python -m loaders.export --backend onnx`" in message and "XDG_CACHE_HOME" in message
    assert exports.calls == []


def test_failed_export_leaves_nothing_behind_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub_onnxruntime: type[_StubSession]
) -> None:
    def broken(model_dir: Path, out_file: Path, threads: int) -> dict[str, Any]:
        out_file.write_bytes(b"half a graph")
        raise RuntimeError("exporter crashed")

    monkeypatch.setattr(export, "export_onnx", broken)
    model, digest = _model_dir(tmp_path)
    with pytest.raises(EncoderUnavailable, match=r"'onnx': export from .* failed \(exporter crashed\)"):
        load_encoder(model, expected_sha256=digest, backend="onnx", cache_dir=tmp_path)
    parent = export.artefact_dir(tmp_path, "onnx", digest).parent
    assert [p.name for p in parent.iterdir()] == [".onnx.lock"]


def test_wrong_source_weights_are_refused_before_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exports = _Exports(monkeypatch)
    model, _ = _model_dir(tmp_path)
    with pytest.raises(EncoderUnavailable, match="weights digest mismatch"):
        load_encoder(model, expected_sha256="0" * 64, backend="onnx", cache_dir=tmp_path)
    assert exports.calls == []


def test_unknown_backend_and_gpu_are_refused(tmp_path: Path) -> None:
    with pytest.raises(EncoderUnavailable, match="unknown encoder backend 'tensorrt'"):
        load_encoder(tmp_path, backend="tensorrt")
    model, digest = _model_dir(tmp_path)
    with pytest.raises(EncoderUnavailable, match="runs on the CPU only"):
        load_encoder(model, expected_sha256=digest, backend="onnx", device="cuda")


def test_concurrent_first_starts_export_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub_onnxruntime: type[_StubSession]
) -> None:
    exports = _Exports(monkeypatch)
    model, digest = _model_dir(tmp_path)
    errors: list[BaseException] = []

    def start() -> None:
        try:
            export.ensure_exported("onnx-int8", model, digest, cache_dir=tmp_path)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=start) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    assert exports.calls == ["onnx", "onnx-int8"]


def test_export_command_prints_each_artefact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _Exports(monkeypatch)
    model, digest = _model_dir(tmp_path)
    monkeypatch.setattr(export, "PINNED_SHA256", digest)
    status = export.main(["--backend", "onnx", "--backend", "onnx-int8", "--model-path", str(model),
                          "--cache-dir", str(tmp_path)])  # fmt: skip
    assert status == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["onnx", "onnx-int8"]
    assert export.main(["--backend", "onnx", "--model-path", str(tmp_path / "absent")]) == 1


def test_default_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert export.default_cache_dir() == tmp_path / "longparser" / "encoders"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert export.default_cache_dir() == Path.home() / ".cache" / "longparser" / "encoders"


# --- runtime details ------------------------------------------------------------------------------


def test_token_batches_sort_by_length_pad_and_keep_the_window() -> None:
    texts = ["one", "three words here", _long_text(), "two words"]
    batches = token_batches(TOKENIZER, texts, batch=2)
    assert [rows for rows, _ in batches] == [[2, 1], [3, 0]]
    _, first = batches[0]
    assert first["input_ids"].shape == (2, MODEL_WINDOW)  # the long text is cut to the window
    assert first["input_ids"][0, -1] == 102 and first["input_ids"][0, 0] == 101  # [SEP] kept last
    assert first["attention_mask"][1].sum() == 5  # [CLS] three words here [SEP], rest padding
    assert first["token_type_ids"].sum() == 0


def test_token_batches_pad_to_a_few_fixed_widths() -> None:
    # Texts of 3, 4 and 5 tokens share one width (the runtime sees one shape, not three); a
    # longer text goes to the next multiple, never past the window.
    texts = ["one", "two words", "three words here", " ".join(["word"] * 40), _long_text()]
    widths = [inputs["input_ids"].shape[1] for _, inputs in token_batches(TOKENIZER, texts, batch=1)]
    assert widths == [MODEL_WINDOW, 2 * PAD_TO_MULTIPLE, PAD_TO_MULTIPLE, PAD_TO_MULTIPLE, PAD_TO_MULTIPLE]
    assert all(width % PAD_TO_MULTIPLE == 0 for width in widths) and MODEL_WINDOW % PAD_TO_MULTIPLE == 0
    [(_, inputs)] = token_batches(TOKENIZER, ["three words here"], batch=1)
    assert inputs["attention_mask"].sum() == 5 and inputs["input_ids"][0, 5:].sum() == 0  # padding masked


def test_exported_encoder_returns_rows_in_input_order() -> None:
    encoder = ExportedEncoder(lambda inputs: inputs["attention_mask"].sum(1, keepdims=True).astype(float),
                              TOKENIZER, backend="onnx", name="n", weights_sha256=None)  # fmt: skip
    assert encoder.encode(["a b c", "a", "a b"]).tolist() == [[5.0], [3.0], [4.0]]
    assert encoder.encode([]).shape == (0, 0)


def test_settings_name_exactly_the_loader_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    field = Settings.model_fields["encoder_backend"]
    assert get_args(field.annotation) == (AUTO, *BACKENDS)
    assert field.default == AUTO
    monkeypatch.setenv("LONGPARSER_ENCODER_BACKEND", "openvino")
    assert Settings().encoder_backend == "openvino"


def test_every_backend_names_its_package_and_an_extra_that_installs_it() -> None:
    import tomllib

    from loaders.encoder_backends import RUNTIME_HINT, RUNTIME_MODULE

    assert tuple(RUNTIME_MODULE) == tuple(RUNTIME_HINT) == BACKENDS
    extras = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())[
        "project"]["optional-dependencies"]
    for backend, hint in RUNTIME_HINT.items():
        [extra] = re.findall(r"pip install -e '\.\[([a-z-]+)\]'", hint)
        packages = {re.split(r"[<>=\[ ]", requirement)[0].replace("-", "_") for requirement in extras[extra]}
        assert RUNTIME_MODULE[backend] in packages, (backend, extra)


def test_worker_builds_its_resources_with_the_configured_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    import worker.context as context

    seen: dict[str, Any] = {}

    def fake_build_resources(spec: ResourceSpec, tokenizers: Any = None) -> Any:
        seen.update(encoder_backend=spec.encoder_backend)
        return build_resources(ResourceSpec())

    monkeypatch.setattr(context, "build_resources", fake_build_resources)
    context.build_process_resources(
        Settings(encoder_backend="onnx-int8", language_id=False, word_list_path=None)
    )
    assert seen["encoder_backend"] == "onnx-int8"


def test_results_name_the_backend() -> None:
    assert backend_model_name("torch", "ignored") == MODEL_NAME
    assert backend_model_name("onnx") == f"{MODEL_NAME} (onnx)"
    assert backend_model_name("openvino", "f32") == f"{MODEL_NAME} (openvino, f32)"


def test_auto_takes_openvino_only_where_it_is_installed_and_exported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import loaders.encoder_backends as encoder_backends
    from loaders.export import MANIFEST, artefact_dir
    from loaders.pinned_model import PINNED_SHA256

    assert encoder_backends.resolve_backend("onnx", tmp_path) == "onnx"  # named: taken as it is
    monkeypatch.setattr(encoder_backends, "missing_runtime", lambda backend: None)
    assert encoder_backends.resolve_backend(AUTO, tmp_path) == "torch"  # not exported: never exported here
    exported = artefact_dir(tmp_path, "openvino", PINNED_SHA256)
    exported.mkdir(parents=True)
    (exported / MANIFEST).write_text("{}")
    assert encoder_backends.resolve_backend(AUTO, tmp_path) == "openvino"
    monkeypatch.setattr(encoder_backends, "missing_runtime", lambda backend: "openvino is not installed")
    assert encoder_backends.resolve_backend(AUTO, tmp_path) == "torch"
