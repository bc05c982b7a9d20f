"""Ids, digests and names are matched whole (issue 25, measured problem 9).

In Python's ``re``, ``$`` also matches before a final newline, so ``re.match("^...$", "id\\n")``
accepts an id ending in a newline: a key, an event and a log line with a newline in it. Every
Python check uses ``fullmatch``; pydantic's ``pattern=`` constraints run in pydantic-core's Rust
regex, where ``$`` is the end of the text, and are held to that here too.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from config.settings import Settings
from schemas import ChunkRequest, InputError, parse_input
from schemas.config import is_tokenizer_name
from schemas.tokenizers import TokenizerSpec
from service.keys import is_sha256_hex, is_valid_document_id, payload_key, result_key
from service.payloads import MalformedReference, parse_reference
from tasks.chunk import raw_document_id

DIGEST = "a" * 64
TRAILING = ["\n", "\r\n", "\n\n"]


@pytest.mark.parametrize("end", TRAILING)
def test_a_document_id_with_a_trailing_newline_is_not_an_id(end: str) -> None:
    assert is_valid_document_id("tenantA-report")
    assert not is_valid_document_id("tenantA-report" + end)
    assert raw_document_id({"document_id": "tenantA-report" + end}) is None
    with pytest.raises(ValueError, match="invalid document id for a key"):
        result_key("lp", "tenantA-report" + end)


@pytest.mark.parametrize("end", TRAILING)
def test_the_request_schema_refuses_an_id_with_a_trailing_newline(end: str) -> None:
    assert ChunkRequest(document_id="tenantA-report").document_id == "tenantA-report"
    with pytest.raises(ValidationError, match="String should match pattern"):
        ChunkRequest(document_id="tenantA-report" + end)
    with pytest.raises(ValidationError, match="String should match pattern"):
        ChunkRequest.model_validate_json('{"document_id": "tenantA-report\\n"}')
    with pytest.raises(InputError, match=r"^document_id: String should match pattern"):
        parse_input({"document_id": "tenantA-report" + end, "blocks": []})


def test_a_digest_with_a_trailing_newline_is_not_a_digest() -> None:
    assert is_sha256_hex(DIGEST)
    assert not is_sha256_hex(DIGEST + "\n")
    with pytest.raises(ValueError, match="invalid request digest"):
        payload_key("lp", "doc", DIGEST + "\n")
    reference: dict[str, Any] = {"key": payload_key("lp", "doc", DIGEST), "sha256": DIGEST + "\n",
                                 "bytes": 10, "encoding": "zlib"}
    with pytest.raises(MalformedReference, match="64 lower-case hex digits"):
        parse_reference({"document_id": "doc", "reference": reference}, "lp")
    with pytest.raises(MalformedReference, match="valid document_id"):
        parse_reference({"document_id": "doc\n", "reference": {**reference, "sha256": DIGEST}}, "lp")
    with pytest.raises(ValidationError, match="String should match pattern"):
        TokenizerSpec(path="/t.json", kind="hf", sha256=DIGEST + "\n")


def test_a_tokenizer_name_with_a_trailing_newline_is_not_a_name() -> None:
    assert is_tokenizer_name("bert")
    assert not is_tokenizer_name("bert\n")


@pytest.mark.parametrize("field", ["key_prefix", "celery_key_prefix"])
def test_key_prefixes_with_a_trailing_newline_are_refused(field: str) -> None:
    assert getattr(Settings(**{field: "lp"}), field) == "lp"
    with pytest.raises(ValidationError, match="String should match pattern"):
        Settings(**{field: "lp\n"})
