"""``longparser search`` with the pinned model, end to end: chunks embedded by the encoder the
worker uses, applied to a real PostgreSQL with pgvector, found again by a question (opt-in:
``--run-real-embeddings``)."""

from __future__ import annotations

import json
import uuid

import pytest

from cli.main import main
from config.settings import get_settings
from loaders.encoder import load_encoder
from longparser import chunk_blocks
from worker.vector_store import EncoderIdentity, VectorStore

pytestmark = pytest.mark.real_embeddings

SECTIONS = {
    "Warranty": "The warranty covers defects in materials and workmanship for two years from the date "
                "of purchase, excluding damage from misuse.",
    "Shipping": "Orders leave the warehouse within three working days and travel by insured courier; "
                "tracking numbers are sent by email.",
    "Returns": "Unused items may be returned within thirty days for a full refund once inspected.",
}


def test_search_finds_the_chunk_that_answers(postgres, monkeypatch, capsys) -> None:
    blocks, index = [], 0
    for page, (title, text) in enumerate(SECTIONS.items(), 1):
        for kind, body, level in (("heading", title, 1), ("paragraph", text, None)):
            blocks.append({"block_id": f"b{index}", "type": kind, "text": body, "heading_level": level,
                           "hierarchy_path": [title], "provenance": {"page_number": page}})
            index += 1
    chunks = [chunk.model_dump() for chunk in chunk_blocks(
        blocks, {"max_tokens": 40, "min_tokens": 0, "heading_context": True}, document_id="terms").chunks]
    encoder = load_encoder(threads=1)
    identity = EncoderIdentity(encoder.name, encoder.weights_sha256, 384, normalized=True)
    collection = f"real_{uuid.uuid4().hex[:10]}"
    with VectorStore.open(postgres.url, collection) as store:
        outcome = store.embed_and_apply("terms", chunks, identity, encoder.encode)
    assert outcome.embedded == outcome.inserted == len(chunks) == 3
    monkeypatch.setenv("LONGPARSER_VECTOR_STORE_URL", postgres.url)
    monkeypatch.setenv("LONGPARSER_VECTOR_COLLECTION", collection)
    get_settings.cache_clear()
    try:
        assert main(["search", "how long is the guarantee against defects?", "--document-id", "terms",
                     "-k", "3", "--json"]) == 0
    finally:
        get_settings.cache_clear()
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 3 and hits[0]["section_path"] == ["Warranty"]
    assert hits[0]["page_numbers"] == [1] and hits[0]["score"] > hits[1]["score"]
