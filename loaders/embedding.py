"""Embedding a result's chunks: the encoders a process holds, by the names requests use.

A process that holds encoders (a semantic worker, ``longparser chunk --embed``) has the pinned
all-MiniLM-L6-v2, run by the configured backend (:mod:`loaders.encoder`), under its name
:data:`~schemas.encoders.PINNED_ENCODER`, and every encoder ``LONGPARSER_ENCODERS`` declares: a
sentence-transformers directory whose ``model.safetensors`` digest is checked
(:func:`check_declared_encoder`, in a worker's parent before it forks) and which is loaded with
sentence-transformers over torch in each process (:func:`load_declared_encoder`).

Each is an :class:`Embedder`: what a chunk's vector is made of (its embedded text, after the
declared passage prefix, in windows of the model's window when it is longer, as
:mod:`loaders.windows` does) and what the result says of it (``stats.embedding``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from loaders.offline import force_offline
from loaders.pinned_model import INSTALL_HINT, WEIGHTS_FILE, EncoderUnavailable, file_sha256
from loaders.windows import TextWindows, embed_in_windows
from longparser.resources import Encoder
from schemas import ChunkingConfig, ChunkResult
from schemas.chunks import EmbeddingStats, EmbeddingStoreStats, embedded_text
from schemas.encoders import PINNED_ENCODER, EncoderSpec
from schemas.errors import RequestRefused
from schemas.problems import describe_validation_error

logger = logging.getLogger(__name__)

Encode = Callable[[Sequence[str]], np.ndarray]
# sentence-transformers' module that scales every vector to unit length (the model card's
# normalisation is whether the model's pipeline ends with it)
NORMALIZE_MODULE = "sentence_transformers.models.Normalize"


@dataclass(frozen=True)
class Embedder:
    """One encoder as requests name it.

    Attributes:
        name: the name ``embed`` gives (the pinned model's, or the declared one).
        weights_sha256: the digest of the weights that made the vectors.
        backend: the runtime that runs them (``torch``, ``openvino``, ...).
        normalized: whether the model's own pipeline scales vectors to unit length.
        passages: float32 ``(n, dimension)`` of texts embedded as passages (prefix, windows).
        queries: the same for queries (their own prefix).
        prefix_tokens: the passage prefix's tokens in the model's tokenizer, kept free in chunks.
    """

    name: str
    weights_sha256: str | None
    backend: str
    normalized: bool
    passages: Encode
    queries: Encode
    prefix_tokens: int = 0

    @cached_property
    def dimension(self) -> int:
        """The vectors' length (one text embedded the first time it is asked)."""
        return int(np.asarray(self.passages(["dimension"])).shape[1])

    def stats(self, embedded: int, reused: int = 0, store: EmbeddingStoreStats | None = None, *,
              dimension: int | None = None) -> EmbeddingStats:
        """What the result says of vectors this encoder made (``stats.embedding``); ``dimension``:
        the vectors' length when they are at hand."""
        return EmbeddingStats(model=self.name, weights_sha256=self.weights_sha256, backend=self.backend,
                              dimension=dimension or self.dimension, normalized=self.normalized,
                              embedded=embedded, reused=reused, store=store)


def normalizes(model_dir: Path) -> bool:
    """Whether the sentence-transformers directory's pipeline ends by normalising its vectors."""
    try:
        modules = json.loads((model_dir / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(isinstance(m, dict) and m.get("type") == NORMALIZE_MODULE for m in modules)


def pinned_embedder(encoder: Encoder, model_dir: Path) -> Embedder:
    """The pinned model, as the process loaded it (:func:`loaders.encoder.load_encoder`: its
    windows are the model's own, without a prefix)."""
    return Embedder(name=PINNED_ENCODER, weights_sha256=encoder.weights_sha256,
                    backend=getattr(encoder, "backend", "torch"),
                    normalized=normalizes(model_dir), passages=encoder.encode, queries=encoder.encode)


def check_declared_encoder(name: str, spec: EncoderSpec) -> Path:
    """The declared encoder's directory once its weights are the declared ones (a file read, no
    SDK import: the worker's parent checks every declaration before it forks).

    Raises:
        EncoderUnavailable: no directory, no weights file, another digest (one line naming it).
    """
    path = Path(spec.path)
    weights = path / WEIGHTS_FILE
    if not weights.is_file():
        raise EncoderUnavailable(f"encoder {name!r}: {path} has no {WEIGHTS_FILE} (LONGPARSER_ENCODERS)")
    digest = file_sha256(weights)
    if digest != spec.sha256:
        raise EncoderUnavailable(f"encoder {name!r}: {weights} has sha256 {digest}, not the declared "
                                 f"{spec.sha256} (LONGPARSER_ENCODERS)")
    return path


def _prefixed(encode: Encode, prefix: str) -> Encode:
    if not prefix:
        return encode
    return lambda texts: encode([prefix + text for text in texts])


def _count(tokenizer: Any, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False).ids) if text else 0


def load_declared_encoder(name: str, spec: EncoderSpec, *, threads: int = 1) -> Embedder:
    """Load a declared encoder with sentence-transformers over torch, offline.

    A text longer than the window (declared, else the directory's ``max_seq_length``) less its
    prefix is embedded in windows, each window after the prefix, and their vectors averaged as
    :func:`loaders.windows.embed_in_windows` does.

    Raises:
        EncoderUnavailable: a missing SDK or file, another digest, a load failure.
    """
    force_offline()
    path = check_declared_encoder(name, spec)
    try:
        import torch
        from sentence_transformers import SentenceTransformer
        from tokenizers import Tokenizer
    except Exception as exc:  # ImportError, or a broken torch install raising OSError etc.
        raise EncoderUnavailable(f"encoder {name!r}: sentence-transformers cannot be imported ({exc}); "
                                 f"{INSTALL_HINT}") from exc
    torch.set_num_threads(threads)
    try:
        model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    except Exception as exc:
        raise EncoderUnavailable(f"encoder {name!r}: could not load {path}: {exc}") from exc
    tokenizer.no_truncation()
    tokenizer.no_padding()
    window = spec.window or getattr(model, "max_seq_length", None)
    if not window:
        raise EncoderUnavailable(f"encoder {name!r}: {path} does not say its window; declare it (window)")

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts), convert_to_numpy=True, batch_size=64,
                                       show_progress_bar=False), dtype=np.float32)

    def windowed(prefix: str) -> Encode:
        windows = TextWindows(tokenizer, window=window - _count(tokenizer, prefix))
        return lambda texts: embed_in_windows(texts, _prefixed(encode, prefix), windows)

    logger.info("loaded encoder %s from %s (sha256 %s, window %d, %d thread(s))", name, path, spec.sha256,
                window, threads)
    return Embedder(name=name, weights_sha256=spec.sha256, backend="torch", normalized=normalizes(path),
                    passages=windowed(spec.passage_prefix), queries=windowed(spec.query_prefix),
                    prefix_tokens=_count(tokenizer, spec.passage_prefix))


def build_embedders(pinned: Encoder | None, model_dir: Path | None, declared: Mapping[str, EncoderSpec], *,
                    threads: int = 1) -> dict[str, Embedder]:
    """The embedders of a process: the pinned model when it holds one, and each declared one."""
    embedders = {}
    if pinned is not None and model_dir is not None:
        embedders[PINNED_ENCODER] = pinned_embedder(pinned, model_dir)
    for name, spec in declared.items():
        embedders[name] = load_declared_encoder(name, spec, threads=threads)
    return embedders


def reserve_for_prefix(config: ChunkingConfig, embedder: Embedder) -> ChunkingConfig:
    """``config`` with ``reserve_tokens`` raised to the passage prefix's tokens when below them,
    so that the prefix and the chunk fit the budget together.

    Raises:
        RequestRefused: the reserve leaves no room in ``max_tokens`` (one line).
    """
    if embedder.prefix_tokens <= config.reserve_tokens:
        return config
    fields = config.model_dump(exclude_unset=True)
    try:
        return ChunkingConfig.model_validate({**fields, "reserve_tokens": embedder.prefix_tokens})
    except ValidationError as exc:
        raise RequestRefused(f"embed {embedder.name!r} puts a prefix of {embedder.prefix_tokens} token(s) "
                             f"before every chunk: {describe_validation_error(exc)}") from None


def declared_refusal(name: str, declared: Collection[str]) -> str:
    """Why a process cannot embed with ``name``: nothing declares it (one line)."""
    names = ", ".join(sorted({PINNED_ENCODER, *declared}))
    return (f"embed {name!r} is not an encoder this process holds (it holds {names}; others are declared in "
            "LONGPARSER_ENCODERS)")


def attach_vectors(result: ChunkResult, vectors: Any, stats: EmbeddingStats) -> None:
    """Set each chunk's ``embedding`` (float32, in chunk order) and ``stats.embedding``."""
    for chunk, vector in zip(result.chunks, vectors, strict=True):
        chunk.embedding = np.asarray(vector, dtype=np.float32)
    result.stats.embedding = stats


def embed_result(result: ChunkResult, embedder: Embedder) -> None:
    """Embed every chunk's embedded text (``embed_text`` when present) as a passage."""
    texts = [embedded_text(chunk) for chunk in result.chunks]
    if not texts:
        attach_vectors(result, [], embedder.stats(embedded=0))
        return
    vectors = embedder.passages(texts)
    attach_vectors(result, vectors, embedder.stats(embedded=len(texts), dimension=int(vectors.shape[1])))
