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
