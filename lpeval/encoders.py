"""The encoders the retrieval benchmark knows, by the sha256 of their ``model.safetensors``.

The pinned model (all-MiniLM-L6-v2, 256-token window) is the service's; the second encoder
(all-mpnet-base-v2, 384-token window, 768 dimensions) is for benchmarks and opt-in tests only,
installed by ``bench/retrieval/install_second_encoder.py`` into a cache directory (never a
dependency, never in the default suite). ``python -m lpeval bench-retrieval --model-path DIR``
recognises either by its weights and runs every row at that model's window.
"""

from __future__ import annotations

from dataclasses import dataclass

from loaders.pinned_model import MODEL_NAME, PINNED_SHA256
from schemas.config import MODEL_WINDOW


@dataclass(frozen=True)
class BenchEncoder:
    name: str
    window: int  # tokens the model reads, special tokens included (max_seq_length)
    weights_sha256: str
    # The name our rows count its tokens by: "model" for the pinned model; another model's
    # counter is a declared tokenizer of the run's Resources (the engine knows the window of
    # "model" as the pinned model's, so another window is fitted under its own name).
    counter_name: str


PINNED_ENCODER = BenchEncoder(MODEL_NAME, MODEL_WINDOW, PINNED_SHA256, "model")
SECOND_ENCODER = BenchEncoder("sentence-transformers/all-mpnet-base-v2", 384,
                              "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
                              "all-mpnet-base-v2")
KNOWN_ENCODERS = {e.weights_sha256: e for e in (PINNED_ENCODER, SECOND_ENCODER)}
