#!/usr/bin/env python3
"""Embedding benchmark: the default encoder backend against torch fp32, and a worker's memory.

On the real fixtures (the DoclingDocuments of tests/fixtures/docling and the Markdown pages of
tests/fixtures/markdown, reserved documents left out), chunked with ``fit: model`` and
``heading_context`` (the texts a job embeds: ``embedded_text`` of every chunk):

1. **Throughput**, one process, one thread: texts/s of the default backend
   (``LONGPARSER_ENCODER_BACKEND=auto``, :func:`loaders.encoder_backends.resolve_backend`) and of
   torch fp32, each given the texts in calls of 64 (the worker's batch; each runtime then makes
   its own forward passes), best of ``--repeat``, alternated so noise hits both alike. Goal:
   >= 2.5x torch.
2. **Agreement**: every text's cosine to torch's vector of the same text; goal: min >= 0.999.
3. **A worker process** (a fresh subprocess per backend, as a pool child builds its context):
   the model's load time (``build_process_resources``: load and warm-up; goal < 2 s for the
   default backend), resident memory before loading (the benchmark's own documents read) and
   after, then over 200 documents run through the job (``run_chunk_job`` with ``embed``, records
   written to a Redis under a throw-away prefix), RSS after 50, 100, 150 and 200 (goal <= 450 MB,
   no growth from 50 to 200). torch's process runs ``--torch-documents`` (default 50): it is
   there for its load time and memory.

An exported backend that ``auto`` would pick must be built ahead of time (``python -m
loaders.export --backend openvino``, or ``make embeddings``); ``--cache-dir`` names where
(default: the user's cache, as a worker reads it). Figures: bench/README.md and docs/encoders.md.

Usage:
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 .venv/bin/python bench/bench_embed.py [--repeat 3] \\
        [--cache-dir DIR] [--redis-url redis://127.0.0.1:6379/0] [--documents 200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIXTURES = ROOT / "tests" / "fixtures"
# Documents kept out of every benchmark (evaluation reserves them), matched in file names.
RESERVED = ("2408.09869", "1706.03762", "2203.01017", "2305.03393", "redp5110", "amt_handbook", "2311.18481",
            "cross_page_lists", "wiki_duck", "normal_4pages")
CALL = 64  # texts per encode call: the worker's batch


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def fixture_requests() -> list[dict[str, Any]]:
    """Every usable fixture as a request's blocks (DoclingDocuments and Markdown pages)."""
    from loaders.docling import blocks_from_docling
    from loaders.markdown import blocks_from_markdown

    requests = []
    for path in sorted((FIXTURES / "docling").glob("*.docling.json")):
        if not any(name in path.name for name in RESERVED):
            blocks = blocks_from_docling(json.loads(path.read_text(encoding="utf-8")))
            requests.append({"document_id": path.name.split(".docling")[0], "blocks": blocks})
    for path in sorted((FIXTURES / "markdown").rglob("*.md")):
        if path.name not in ("README.md", "SOURCES.md") and not any(name in path.name for name in RESERVED):
            blocks = blocks_from_markdown(path.read_text(encoding="utf-8"))
            if blocks:
                requests.append({"document_id": path.stem[:60], "blocks": blocks})
    return [json.loads(json.dumps({**r, "blocks": [b.model_dump(mode="json", exclude_none=True)
                                                   if hasattr(b, "model_dump") else b for b in r["blocks"]]}))
            for r in requests]


CONFIG = {"fit": "model", "heading_context": True}


def fixture_texts() -> list[str]:
    from loaders.tokenizer import load_model_counter
    from longparser import Resources, chunk_request
    from schemas import parse_input
    from schemas.chunks import embedded_text

    resources = Resources(model_counter=load_model_counter())
    texts = []
    for request in fixture_requests():
        result = chunk_request(parse_input({**request, "config": CONFIG}), resources)
        texts += [embedded_text(chunk) for chunk in result.chunks]
    return texts


def encode_all(encoder: Any, texts: list[str]) -> Any:
    import numpy as np

    return np.concatenate([encoder.encode(texts[i:i + CALL]) for i in range(0, len(texts), CALL)])


def throughput(default: str, repeat: int, cache_dir: str | None) -> dict[str, Any]:
    import numpy as np

    from loaders.encoder import load_encoder

    texts = fixture_texts()
    encoders = {"torch": load_encoder(backend="torch", threads=1)}
    if default != "torch":
        encoders[default] = load_encoder(backend=default, threads=1, cache_dir=cache_dir)
    best = {name: float("inf") for name in encoders}
    vectors = {}
    for _ in range(repeat):
        for name, encoder in encoders.items():
            started = time.perf_counter()
            vectors[name] = encode_all(encoder, texts)
            best[name] = min(best[name], time.perf_counter() - started)
    rates = {name: len(texts) / seconds for name, seconds in best.items()}
    a, b = vectors["torch"], vectors[default]
    cosines = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return {"texts": len(texts), "texts_per_s": rates, "ratio": rates[default] / rates["torch"],
            "min_cosine": float(cosines.min()), "mean_cosine": float(cosines.mean()),
            "tokens_max": max(len(t.split()) for t in texts)}


def worker_process(backend: str, documents: int, redis_url: str) -> dict[str, Any]:
    """One worker process's figures (runs in a fresh subprocess: --child)."""
    from config.settings import Settings
    from service.redis_client import redis_client
    from service.store import ResultStore
    from tasks.chunk import run_chunk_job
    from worker.context import WorkerContext, build_process_embedders, build_process_resources

    settings = Settings(semantic_enabled=True, encoder_backend=backend, word_list_path=None,
                        language_id=False, key_prefix=f"bench-embed-{uuid.uuid4().hex[:8]}", result_ttl=120,
                        broker_url=redis_url, result_url=redis_url, max_starts=0)
    requests = fixture_requests()  # the benchmark's own data, read before the model
    rss_start = _rss_mb()
    started = time.perf_counter()
    resources = build_process_resources(settings)
    embedders = build_process_embedders(settings, resources)
    load_s = time.perf_counter() - started
    client = redis_client(redis_url, settings)
    store = ResultStore(client, settings.key_prefix, settings.result_ttl)
    context = WorkerContext(settings=settings, store=store, resources=resources, embedders=embedders)
    rss = {"loaded": _rss_mb()}
    chunks = 0
    started = time.perf_counter()
    try:
        for n in range(1, documents + 1):
            request = requests[(n - 1) % len(requests)]
            summary = run_chunk_job({**request, "document_id": f"d{n}", "config": {**CONFIG, "embed": True}},
                                    context, task_id=f"t{n}")
            chunks += summary["chunks"]
            if n % 50 == 0 or n == documents:
                rss[str(n)] = _rss_mb()
    finally:
        keys = list(client.scan_iter(f"{settings.key_prefix}:*"))
        if keys:
            client.delete(*keys)
    return {"backend": resources.encoder.backend, "load_s": load_s, "rss_start_mb": rss_start, "rss_mb": rss,
            "documents": documents, "chunks": chunks, "jobs_s": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--torch-documents", type=int, default=50)
    parser.add_argument("--cache-dir", default=None, help="where exported backends are (default: the user's)")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cache_dir:
        os.environ["XDG_CACHE_HOME"] = str(Path(args.cache_dir).resolve())
    if args.child:
        print(json.dumps(worker_process(args.child, args.documents, args.redis_url)))
        return 0

    from loaders.encoder_backends import AUTO, resolve_backend

    default = resolve_backend(AUTO)
    print(f"default backend (auto): {default}")
    figures = throughput(default, args.repeat, None)
    rates = figures["texts_per_s"]
    print(f"{figures['texts']} texts of the real fixtures, calls of {CALL}, 1 thread, best of {args.repeat}")
    for name, rate in rates.items():
        print(f"  {name:9s} {rate:8.1f} texts/s")
    print(f"  ratio {default}/torch: {figures['ratio']:.2f}x (goal >= 2.5x)")
    print(f"  cosine to torch: min {figures['min_cosine']:.6f}, mean {figures['mean_cosine']:.6f} "
          "(goal: min >= 0.999)")
    ok = figures["ratio"] >= 2.5 and figures["min_cosine"] >= 0.999
    for backend in dict.fromkeys((default, "torch")):
        documents = args.documents if backend == default else min(args.documents, args.torch_documents)
        command = [sys.executable, __file__, "--child", backend, "--documents", str(documents),
                   "--redis-url", args.redis_url]
        done = subprocess.run(command, capture_output=True, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
        if done.returncode:
            print(done.stderr[-2000:], file=sys.stderr)
            return 1
        worker = json.loads(done.stdout.strip().splitlines()[-1])
        rss = worker["rss_mb"]
        growth = rss[str(documents)] - rss["50"] if "50" in rss else float("nan")
        print(f"worker process, {worker['backend']}: model loaded in {worker['load_s']:.2f} s; RSS "
              f"{worker['rss_start_mb']:.0f} MB before loading, {rss['loaded']:.0f} MB loaded, "
              + ", ".join(f"{rss[k]:.0f} MB after {k}" for k in rss if k != "loaded")
              + f" ({worker['documents']} documents, {worker['chunks']} chunks embedded in "
                f"{worker['jobs_s']:.1f} s; growth 50 -> {documents}: {growth:+.0f} MB)")
        if backend == default:
            ok = ok and worker["load_s"] < 2 and max(rss.values()) <= 450
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
