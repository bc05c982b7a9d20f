"""Exported encoder backends, built locally from the pinned weights into a cache directory.

``python -m loaders.export --backend onnx [--backend openvino ...]`` builds ahead of time
(``make embeddings ENCODER_BACKENDS=...``); a worker whose backend has no export yet builds it at
its first start (:func:`ensure_exported`, under a file lock, so the processes of one machine
export once). Nothing is downloaded: the source is the local model directory whose
``model.safetensors`` digest is checked first, and the Hugging Face offline flags are forced.

How each artefact is made (docs/encoders.md says why, and what is bit-identical):

* ``onnx``: ``torch.onnx.export`` (the TorchScript exporter, opset 17) of the loaded
  sentence-transformers model: BERT, mean pooling over the attention mask and L2 normalisation
  in ONE graph, so a runtime feeds token ids and reads sentence vectors. ONNX Runtime fuses the
  graph when it loads it.
* ``onnx-int8``: the ``onnx`` graph with ONNX Runtime's dynamic quantisation: int8 weights per
  output channel on every MatMul, activations quantised per batch at run time.
* ``openvino``: the ``onnx`` graph converted by OpenVINO (``convert_model``) and saved as IR in
  fp32 (no fp16 compression); the precision it RUNS at is the CPU plugin's default hint.

sentence-transformers' own helpers (``export_optimized_onnx_model``,
``export_dynamic_quantized_onnx_model``, ``backend="openvino"``) go through optimum-onnx and
optimum-intel, which cap transformers below the versions the pinned sentence-transformers needs,
so they cannot be installed beside the reference path; the steps above are what those helpers
do, with the same libraries (torch's exporter, ONNX Runtime's quantiser, OpenVINO's converter).

Each artefact directory holds ``manifest.json``: the source weights' SHA-256, every file's
SHA-256, the recipe and the library versions. :func:`verified_artefact` checks the files against
it at every load; a mismatch refuses to load (nothing rebuilds silently over a changed file).
"""

from __future__ import annotations

import argparse
import fcntl
import importlib.metadata
import json
import logging
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from loaders.offline import force_offline
from loaders.pinned_model import (
    INSTALL_HINT,
    MODEL_NAME,
    PINNED_SHA256,
    EncoderUnavailable,
    checked_model_dir,
    file_sha256,
)

logger = logging.getLogger(__name__)

EXPORTED_BACKENDS = ("onnx", "onnx-int8", "openvino")
MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
# The file a runtime opens, per backend (OpenVINO's weights sit beside it as openvino_model.bin).
MAIN_FILE = {"onnx": "model.onnx", "onnx-int8": "model_int8.onnx", "openvino": "openvino_model.xml"}
ONNX_OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "sentence_embedding"
# The extras that install each backend's runtime (pyproject.toml); export also needs the torch stack.
EXTRA_HINT = {
    "onnx": "pip install -e '.[onnx]' (onnxruntime, onnx)",
    "onnx-int8": "pip install -e '.[onnx]' (onnxruntime, onnx)",
    "openvino": "pip install -e '.[openvino]' (openvino, onnx)",
}
# The distributions whose versions decide the exported bytes, recorded in the manifest.
TOOLCHAIN = ("torch", "transformers", "sentence-transformers", "onnx", "onnxruntime", "openvino")


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/longparser/encoders`` (``~/.cache/longparser/encoders`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "longparser" / "encoders"


def artefact_dir(cache_dir: str | os.PathLike[str] | None, backend: str, source_sha256: str) -> Path:
    """Where ``backend``'s export of the weights with digest ``source_sha256`` lives."""
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return root / source_sha256[:16] / backend


def _versions() -> dict[str, str]:
    found = {}
    for name in TOOLCHAIN:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def _unavailable(backend: str, what: str, exc: BaseException | None = None) -> EncoderUnavailable:
    detail = f" ({exc})" if exc is not None else ""
    return EncoderUnavailable(f"encoder backend {backend!r}: {what}{detail}")


def verified_artefact(directory: Path, backend: str, source_sha256: str) -> dict[str, Any]:
    """The manifest of ``directory`` after checking every recorded file's digest.

    Raises:
        EncoderUnavailable: the manifest is unreadable, for other weights or another backend,
            or a file is missing or differs from its recorded digest.
    """
    rebuild = f"delete {directory} to export it again (or run `python -m loaders.export --backend {backend}`)"
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        files: dict[str, str] = manifest["files"]
        recorded = (manifest["backend"], manifest["source_sha256"])
        if manifest["main_file"] not in files:  # the file a runtime opens must be covered
            raise KeyError(manifest["main_file"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise _unavailable(backend, f"unreadable manifest in {directory}; {rebuild}", exc) from exc
    if recorded != (backend, source_sha256):
        raise _unavailable(
            backend,
            f"{directory} holds {recorded[0]!r} of weights {recorded[1]}, not "
            f"{backend!r} of {source_sha256}; {rebuild}",
        )
    for name, expected in files.items():
        path = directory / name
        actual = file_sha256(path) if path.is_file() else "missing"
        if actual != expected:
            raise _unavailable(
                backend,
                f"{path} has sha256 {actual}, its manifest records {expected}; "
                f"refusing to load a changed export; {rebuild}",
            )
    return manifest


@contextmanager
def _locked(root: Path, backend: str) -> Iterator[None]:
    """One exporter per backend per machine: the other processes wait, then load its result.

    Raises:
        EncoderUnavailable: ``root`` cannot be written (a read-only cache, such as a Docker
            image's built for another backend): the export must be built ahead of time.
    """
    try:
        root.mkdir(parents=True, exist_ok=True)
        handle = open(root / f".{backend}.lock", "w")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise _unavailable(
            backend,
            f"no export in {root} yet and this process cannot write one there; export it ahead of "
            f"time (`python -m loaders.export --backend {backend}` as a user who can write there) "
            "or point XDG_CACHE_HOME at a writable directory",
            exc,
        ) from exc
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_exported(
    backend: str,
    model_dir: Path,
    source_sha256: str,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    threads: int = 1,
) -> tuple[Path, dict[str, Any]]:
    """The verified artefact directory of ``backend``, exporting it first when absent.

    ``model_dir`` must already have passed :func:`~loaders.pinned_model.checked_model_dir`
    with ``source_sha256``. An export is written to a temporary directory and renamed into
    place, so a reader never sees half an artefact.

    Raises:
        EncoderUnavailable: unknown backend, a missing package (the message names the extra to
            install), an export that fails, or an artefact that fails verification.
    """
    if backend not in EXPORTED_BACKENDS:
        raise _unavailable(backend, f"not one of {', '.join(EXPORTED_BACKENDS)}")
    target = artefact_dir(cache_dir, backend, source_sha256)
    if not (target / MANIFEST).is_file():
        with _locked(target.parent, backend):
            if not (target / MANIFEST).is_file():  # another process may have finished meanwhile
                if target.exists():
                    raise _unavailable(
                        backend, f"{target} exists without its {MANIFEST}; delete it to export again"
                    )
                source = None
                if backend != "onnx":
                    source, _ = ensure_exported(
                        "onnx", model_dir, source_sha256, cache_dir=cache_dir, threads=threads
                    )
                _build(backend, target, model_dir, source, source_sha256, threads)
    return target, verified_artefact(target, backend, source_sha256)


def _build(
    backend: str, target: Path, model_dir: Path, onnx_dir: Path | None, source_sha256: str, threads: int
) -> None:
    """Export into a temporary sibling of ``target``, write the manifest, rename into place."""
    work = Path(tempfile.mkdtemp(prefix=f".{backend}-", dir=target.parent))
    try:
        if backend == "onnx":
            recipe = export_onnx(model_dir, work / MAIN_FILE["onnx"], threads)
        elif backend == "onnx-int8":
            assert onnx_dir is not None
            recipe = quantize_int8(onnx_dir / MAIN_FILE["onnx"], work / MAIN_FILE["onnx-int8"])
        else:
            assert onnx_dir is not None
            recipe = convert_openvino(onnx_dir / MAIN_FILE["onnx"], work / MAIN_FILE["openvino"])
        files = {path.name: file_sha256(path) for path in sorted(work.iterdir()) if path.is_file()}
        if MAIN_FILE[backend] not in files:
            raise _unavailable(backend, f"export from {model_dir} wrote no {MAIN_FILE[backend]}")
        manifest = {
            "manifest_version": MANIFEST_VERSION,
            "backend": backend,
            "model": MODEL_NAME,
            "source_sha256": source_sha256,
            "main_file": MAIN_FILE[backend],
            "files": files,
            "recipe": recipe,
            "versions": _versions(),
        }
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        work.chmod(0o755)  # mkdtemp's 0700 would hide the export from workers running as another user
        os.replace(work, target)
    except EncoderUnavailable:
        raise
    except Exception as exc:
        raise _unavailable(backend, f"export from {model_dir} failed", exc) from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    logger.info("exported %s encoder to %s", backend, target)


def _import(backend: str, module: str, hint: str) -> Any:
    try:
        return __import__(module, fromlist=["_"])
    except Exception as exc:  # ImportError, or a broken native library raising OSError
        raise _unavailable(backend, f"{module} cannot be imported; {hint}", exc) from exc


def export_onnx(model_dir: Path, out_file: Path, threads: int) -> dict[str, Any]:
    """The pinned model (encoder, mean pooling, normalisation) as one ONNX graph."""
    force_offline()
    torch = _import("onnx", "torch", INSTALL_HINT)
    sentence_transformers = _import("onnx", "sentence_transformers", INSTALL_HINT)
    torch.set_num_threads(threads)
    # eager attention: plain MatMul/Softmax nodes that both runtimes fuse (sdpa traces shape checks)
    model = sentence_transformers.SentenceTransformer(
        str(model_dir), device="cpu", local_files_only=True, model_kwargs={"attn_implementation": "eager"}
    )
    graph = sentence_graph(torch, model[0].auto_model).eval()
    ids = torch.tensor([[101, 7592, 2088, 102, 0], [101, 7592, 2088, 2003, 102]])
    dynamic = {name: {0: "batch", 1: "sequence"} for name in INPUT_NAMES}
    # The tracer warns that shape checks become constants; the traced graph is checked against
    # torch on every batch shape of the labelled set by the real-model suite instead.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            graph,
            (ids, (ids != 0).long(), torch.zeros_like(ids)),
            str(out_file),
            dynamo=False,
            opset_version=ONNX_OPSET,
            input_names=list(INPUT_NAMES),
            output_names=[OUTPUT_NAME],
            dynamic_axes={**dynamic, OUTPUT_NAME: {0: "batch"}},
            do_constant_folding=True,
        )
    return {
        "exporter": "torch.onnx.export (TorchScript)",
        "opset": ONNX_OPSET,
        "graph": "bert+mean+l2",
        "attention": "eager",
    }


def sentence_graph(torch: Any, bert: Any) -> Any:
    """BERT, then sentence-transformers' Pooling (mean over the mask) and Normalize, as a module."""

    class SentenceGraph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    return SentenceGraph()


def quantize_int8(source: Path, out_file: Path) -> dict[str, Any]:
    """ONNX Runtime dynamic quantisation: int8 weights per output channel on every MatMul."""
    _import("onnx-int8", "onnx", EXTRA_HINT["onnx-int8"])
    quantization = _import("onnx-int8", "onnxruntime.quantization", EXTRA_HINT["onnx-int8"])
    # per-channel: per-tensor scales put the sentence vectors visibly further from torch's
    # The quantiser logs one root INFO line per tensor, and a WARNING advising a shape-inference
    # pre-pass that fails on this graph (symbolic shapes); neither is the operator's business.
    logging.disable(logging.WARNING)
    try:
        quantization.quantize_dynamic(
            str(source),
            str(out_file),
            per_channel=True,
            weight_type=quantization.QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
        )
    finally:
        logging.disable(logging.NOTSET)
    return {
        "quantiser": "onnxruntime.quantization.quantize_dynamic",
        "weights": "int8 per channel",
        "ops": ["MatMul"],
        "from": file_sha256(source),
    }


def convert_openvino(source: Path, out_file: Path) -> dict[str, Any]:
    """OpenVINO IR of the ONNX graph, weights kept fp32."""
    openvino = _import("openvino", "openvino", EXTRA_HINT["openvino"])
    model = openvino.convert_model(str(source))
    openvino.save_model(model, str(out_file), compress_to_fp16=False)
    return {"converter": "openvino.convert_model", "weights": "fp32", "from": file_sha256(source)}


def main(argv: Sequence[str] | None = None) -> int:
    """Export backends ahead of time; prints each artefact directory. Exit 1 when one fails."""
    parser = argparse.ArgumentParser(description="Export the pinned encoder for a backend (offline).")
    parser.add_argument("--backend", action="append", choices=EXPORTED_BACKENDS, required=True)
    parser.add_argument("--model-path", default=None, help="model directory (default: the model package's)")
    parser.add_argument("--cache-dir", default=None, help=f"default {default_cache_dir()}")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        model_dir, digest = checked_model_dir(args.model_path, PINNED_SHA256)
        for backend in args.backend:
            directory, manifest = ensure_exported(
                backend, model_dir, digest, cache_dir=args.cache_dir, threads=args.threads
            )
            main_file = manifest["main_file"]
            print(f"{backend}: {directory / main_file} sha256 {manifest['files'][main_file]}")
    except EncoderUnavailable as exc:
        print(f"loaders.export: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
