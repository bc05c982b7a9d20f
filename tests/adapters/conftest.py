"""The framework adapters' suite: the real LangChain and LlamaIndex packages, sockets refused.

Selected only with ``--run-adapters`` (``make test-adapters``, which installs the extras);
then a missing package fails the run with what to install - it is never skipped.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from adapters import chunk_markdown
from loaders.tokenizer import load_model_counter
from longparser import Resources
from schemas import ChunkResult

pytestmark = pytest.mark.framework_adapters

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "markdown" / "docling" / "docs_concepts_OCR.md"
RECOMMENDED_256 = {"max_tokens": 256, "min_tokens": 50, "strict_max_tokens": True, "token_counter": "model",
                   "overlap_max_share": 0.05, "table_chunk_format": "pipe", "heading_context": True}


@cache
def _result() -> ChunkResult:
    return chunk_markdown(FIXTURE.read_text(encoding="utf-8"), RECOMMENDED_256,
                          Resources(model_counter=load_model_counter()), document_id="docling-ocr")


@pytest.fixture
def result() -> ChunkResult:
    """A real Markdown page (tables, lists, code) chunked with the recommended settings."""
    return _result()


def text_vector(text: str, dimension: int = 8) -> list[float]:
    """A fixed unit vector per text, standing in for a model's (float32-exact values)."""
    import hashlib

    import numpy as np

    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)
    return (vector / np.linalg.norm(vector)).astype(np.float32).tolist()


@pytest.fixture
def embedded_result() -> ChunkResult:
    """The same result as a worker's record gives it back with ``embed``: every chunk's vector of
    its embedded text, packed as the record stores it, then decoded."""
    from schemas.chunks import PACKED_EMBEDDINGS, embedded_text

    result = _result().model_copy(deep=True)
    for chunk in result.chunks:
        chunk.embedding = text_vector(embedded_text(chunk))
    return ChunkResult.model_validate_json(result.model_dump_json(context={PACKED_EMBEDDINGS: True}))
