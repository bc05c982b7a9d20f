"""The environment every model library in this process runs under: offline, quiet, one tokenizer thread.

Shared by the torch loader (:mod:`loaders.encoder`) and the exported backends
(:mod:`loaders.encoder_backends`, :mod:`loaders.export`): whichever loads first sets the same
flags, before any Hugging Face library is imported.
"""

from __future__ import annotations

import os

# Forced (not setdefault): a user environment saying HF_HUB_OFFLINE=0 must not enable downloads.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
# Default only (setdefault): progress bars on a worker's stderr are log noise, not information.
QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def force_offline() -> None:
    """Set the offline flags (forced) and the quiet defaults for every Hugging Face library."""
    os.environ.update(OFFLINE_ENV)
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)
