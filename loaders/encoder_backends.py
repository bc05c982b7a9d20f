"""Encoder backends other than torch: the exported model run by ONNX Runtime or OpenVINO.

``LONGPARSER_ENCODER_BACKEND`` picks one of :data:`BACKENDS` (docs/encoders.md compares them).
``torch`` is the seed's reference path (sentence-transformers, in
:func:`loaders.encoder.load_encoder`); the others load the artefact :mod:`loaders.export` built
from the same pinned weights, verified against its manifest, with their runtime capped to the
process's thread count. They tokenize with the pinned tokenizer file (no torch, no transformers
at run time) the way sentence-transformers does for this model: ``[CLS]`` text ``[SEP]``, at
most the model's window, padded to the longest text of a batch rounded up to a few fixed widths
(:data:`PAD_TO_MULTIPLE`), batches sorted by length (smaller batches than torch's, see
:data:`ENCODE_BATCH`).

A backend whose package is missing, or whose export fails, raises
:class:`~loaders.pinned_model.EncoderUnavailable` naming what to install: a worker configured
for it refuses to start; nothing falls back to torch.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from loaders.export import EXPORTED_BACKENDS, EXTRA_HINT, INPUT_NAMES, MANIFEST, artefact_dir, ensure_exported
from loaders.pinned_model import INSTALL_HINT, MODEL_NAME, PINNED_SHA256, EncoderUnavailable
from loaders.windows import TextWindows, embed_in_windows
from schemas.config import MODEL_WINDOW

logger = logging.getLogger(__name__)

BACKENDS = ("torch", *EXPORTED_BACKENDS)
# The settings' default: the fastest backend that is installed and proven, else torch (resolve_backend).
AUTO = "auto"
# What ``auto`` takes, fastest first: only backends whose every vector is within cosine 0.999 of
# torch's on the real fixtures (the real-model suite holds it; docs/encoders.md has the figures).
PREFERRED_BACKENDS = ("openvino",)
# The package each backend runs on (the torch path through sentence-transformers) and what
# installs it: the loaders import it, the worker's start-up check only looks for it.
RUNTIME_MODULE = {
    "torch": "sentence_transformers",
    "onnx": "onnxruntime",
    "onnx-int8": "onnxruntime",
    "openvino": "openvino",
}
RUNTIME_HINT = {"torch": INSTALL_HINT, **EXTRA_HINT}
# Texts per forward pass. Smaller than the torch path's 64: a batch of 8 keeps a layer's
# activations in the CPU caches, which all three runtimes measured faster (docs/encoders.md);
# the torch path keeps its batch, so its vectors stay the seed's to the bit.
ENCODE_BATCH = 8
# Each forward pass is padded to a multiple of this many tokens (at most the window). OpenVINO's
# CPU plugin keeps memory for every input shape it has run, and texts of every length from 3 to
# 256 tokens would give it hundreds of widths and a resident size that grows with each new one;
# eight widths bound it. Padding sits under the attention mask, so a vector changes only within
# the runtime's rounding (docs/encoders.md has the memory and agreement figures).
PAD_TO_MULTIPLE = 32
Runner = Callable[[dict[str, np.ndarray]], np.ndarray]


def missing_runtime(backend: str) -> str | None:
    """What to install when ``backend``'s runtime package is absent, else None.

    Looks the package up without importing it, so a process that has not loaded a model yet
    (the worker's parent, before it forks) pays for no SDK import.

    Raises:
        KeyError: ``backend`` is not one of :data:`BACKENDS`.
    """
    module = RUNTIME_MODULE[backend]
    if importlib.util.find_spec(module) is not None:
        return None
    if backend == "torch":
        return f"sentence-transformers is not installed; {RUNTIME_HINT[backend]}"
    return f"encoder backend {backend!r} needs {module}, which is not installed; {RUNTIME_HINT[backend]}"


def resolve_backend(backend: str, cache_dir: str | Path | None = None,
                    source_sha256: str = PINNED_SHA256) -> str:
    """``backend``, or for ``auto`` the first of :data:`PREFERRED_BACKENDS` that is installed: its
    runtime importable and its export of the pinned weights built ahead of time (``make
    embeddings``, the Docker build argument) under ``cache_dir``; else ``torch``. A process never
    spends its start exporting a backend nobody asked for, and looks only for files (no import)."""
    if backend != AUTO:
        return backend
    for candidate in PREFERRED_BACKENDS:
        built = (artefact_dir(cache_dir, candidate, source_sha256) / MANIFEST).is_file()
        if built and missing_runtime(candidate) is None:
            return candidate
    return "torch"


def backend_model_name(backend: str, detail: str | None = None) -> str:
    """The ``model`` recorded in results: the torch path keeps the bare model name."""
    if backend == "torch":
        return MODEL_NAME
    return f"{MODEL_NAME} ({backend}{', ' + detail if detail else ''})"


def token_batches(
    tokenizer: Any, texts: Sequence[str], batch: int = ENCODE_BATCH
) -> list[tuple[list[int], dict[str, np.ndarray]]]:
    """Rows of ``texts`` in forward passes: longest first, each padded to its longest text rounded
    up to :data:`PAD_TO_MULTIPLE` tokens (at most the window).

    ``tokenizer`` is the pinned ``tokenizers.Tokenizer`` without truncation or padding; a text
    over the window keeps its first tokens and ``[SEP]``, as sentence-transformers truncates
    (callers send windows, so this only guards the shape).
    """
    encodings = tokenizer.encode_batch(list(texts), add_special_tokens=True)
    ids = [
        e.ids if len(e.ids) <= MODEL_WINDOW else [*e.ids[: MODEL_WINDOW - 1], e.ids[-1]] for e in encodings
    ]
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    batches = []
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        width = min(MODEL_WINDOW, -(-len(ids[rows[0]]) // PAD_TO_MULTIPLE) * PAD_TO_MULTIPLE)
        input_ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for r, i in enumerate(rows):
            input_ids[r, : len(ids[i])] = ids[i]
            mask[r, : len(ids[i])] = 1
        inputs = dict(zip(INPUT_NAMES, (input_ids, mask, np.zeros_like(input_ids)), strict=True))
        batches.append((rows, inputs))
    return batches


class ExportedEncoder:
    """The engine's ``Encoder`` over an exported graph (token ids in, unit sentence vectors out)."""

    def __init__(
        self,
        run: Runner,
        tokenizer: Any,
        *,
        backend: str,
        name: str,
        weights_sha256: str | None,
        artefact_sha256: str | None = None,
        windows: TextWindows | None = None,
    ) -> None:
        self.run = run
        self.tokenizer = tokenizer
        self.backend = backend
        self.name = name
        self.weights_sha256 = weights_sha256
        self.artefact_sha256 = artefact_sha256
        self.windows = windows or TextWindows(tokenizer)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 ``(len(texts), dim)``; long texts by windows; an empty input gives ``(0, 0)``."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return embed_in_windows(texts, self._encode, self.windows)

    def _encode(self, texts: list[str]) -> np.ndarray:
        out: np.ndarray | None = None
        for rows, inputs in token_batches(self.tokenizer, texts):
            vectors = np.asarray(self.run(inputs), dtype=np.float32)
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
        assert out is not None
        return out


def _runtime(backend: str, module: str) -> Any:
    try:
        return __import__(module)
    except Exception as exc:  # ImportError, or a broken native library raising OSError
        raise EncoderUnavailable(
            f"encoder backend {backend!r} needs {module}, which cannot be imported "
            f"({exc}); {RUNTIME_HINT[backend]}"
        ) from exc


def onnxruntime_runner(backend: str, path: Path, threads: int) -> tuple[Runner, str | None]:
    """An ONNX Runtime session on the CPU with ``threads`` intra-op threads and no inter-op pool."""
    ort = _runtime(backend, "onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # warnings about unused initialisers are not the operator's business
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return (lambda inputs: session.run(None, inputs)[0]), None


def openvino_runner(backend: str, path: Path, threads: int) -> tuple[Runner, str | None]:
    """An OpenVINO CPU model with ``threads`` inference threads, one stream, latency hint.

    The precision is the CPU plugin's default (bf16 on CPUs with bf16 instructions, else fp32):
    returned so that results and logs say which one ran.
    """
    ov = _runtime(backend, "openvino")
    core = ov.Core()
    compiled = core.compile_model(
        core.read_model(str(path)),
        "CPU",
        {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"},
    )
    request = compiled.create_infer_request()
    output = compiled.output(0)
    hint = compiled.get_property("INFERENCE_PRECISION_HINT")
    precision = hint.to_string() if hasattr(hint, "to_string") else str(hint)
    return (lambda inputs: request.infer(inputs)[output]), precision


RUNNERS: dict[str, Callable[[str, Path, int], tuple[Runner, str | None]]] = {
    "onnx": onnxruntime_runner,
    "onnx-int8": onnxruntime_runner,
    "openvino": openvino_runner,
}


def load_exported_encoder(
    backend: str,
    model_dir: Path,
    source_sha256: str,
    *,
    threads: int,
    cache_dir: str | Path | None,
    windows: TextWindows,
) -> ExportedEncoder:
    """Verify (exporting first if needed) and load ``backend``'s artefact; see the module docstring.

    Raises:
        EncoderUnavailable: a missing package, a failed export or load, or a changed artefact.
    """
    if backend not in RUNNERS:
        raise EncoderUnavailable(f"unknown encoder backend {backend!r}; one of {', '.join(BACKENDS)}")
    _runtime(backend, RUNTIME_MODULE[backend])  # before any export
    directory, manifest = ensure_exported(
        backend, model_dir, source_sha256, cache_dir=cache_dir, threads=threads
    )
    main_file = manifest["main_file"]
    try:
        run, detail = RUNNERS[backend](backend, directory / main_file, threads)
    except EncoderUnavailable:
        raise
    except Exception as exc:
        raise EncoderUnavailable(
            f"encoder backend {backend!r}: could not load {directory / main_file}: {exc}"
        ) from exc
    logger.info(
        "loaded %s encoder from %s (sha256 %s; weights sha256 %s; %d thread(s)%s)",
        backend,
        directory / main_file,
        manifest["files"][main_file],
        source_sha256,
        threads,
        f"; precision {detail}" if detail else "",
    )
    return ExportedEncoder(
        run,
        windows.tokenizer,
        windows=windows,
        backend=backend,
        name=backend_model_name(backend, detail),
        weights_sha256=source_sha256,
        artefact_sha256=manifest["files"][main_file],
    )
