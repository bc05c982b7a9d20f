"""Documents by reference (claim check): producer, payload store and task, on fakeredis.

The producer stores a large request's JSON compressed under ``P:payload:<id>:<sha256>`` and sends a
small reference; the task reads, checks and validates it, stores the record with the request's
digest and deletes the bytes; a missing or corrupt reference ends in a FAILURE record, except a
redelivery whose request's result is already stored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import weakref
import zlib
from dataclasses import replace
from typing import Any

import pytest
import redis.exceptions

from config.settings import Settings
from longparser import chunk_blocks
from schemas import ChunkRequest, ChunkResult
from service.keys import payload_key
from service.payloads import (
    CorruptPayload,
    MalformedReference,
    MissingPayload,
    RedisPayloads,
    Reference,
    decompress_checked,
    parse_reference,
)
from service.store import ResultStore
from tasks.chunk import (
    _handed_over,
    chunk_document,
    result_json_pieces,
    run_chunk_job,
    store_time_limit_failure,
)
from tasks.client import Producer
from tasks.errors import InvalidPayload, PayloadTooLarge, ReferenceCorrupt, ReferenceMissing, StoreUnavailable
from tasks.payload import request_json, request_json_pieces, split_request
from tests.unit.worker_fixtures import (  # noqa: F401
    FailingDeletes,
    FakeApp,
    context,
    eager,
    fake_app,
    isolated_settings,
    payload,
    producer,
    running_producer,
    settings,
    store,
)
from worker.context import WorkerContext


def _big(document_id: str = "big-1", blocks: int = 40) -> dict[str, Any]:
    """A request of ``blocks`` paragraphs, about 150 bytes of JSON each."""
    request = payload(document_id)
    request["blocks"] = [{"block_id": f"p{i}", "type": "paragraph", "text": f"Paragraph {i} says the turbine "
                          f"produced {i} megawatts in month {i % 12}.", "hierarchy_path": ["Results"],
                          "provenance": {"page_number": 1 + i // 10}} for i in range(blocks)]
    return request


def _encoded(request: dict[str, Any]) -> bytes:
    return request_json(ChunkRequest.model_validate(request))


def _small_threshold(base: Settings, threshold: int = 2048) -> Settings:
    return base.model_copy(update={"reference_threshold_bytes": threshold})


def _stored(into: ResultStore, document_id: str, request: dict[str, Any]) -> dict[str, Any]:
    """Store a referenced request as the producer does; returns its reference message."""
    return RedisPayloads(into.client, into.prefix, into.ttl).put(document_id, _encoded(request)
                                                                 ).as_message(document_id)


def _payload_keys(of: ResultStore) -> list[bytes]:
    return sorted(of.client.scan_iter(match=f"{of.prefix}:payload:*"))


# --------------------------------------------------------------------------- the payload store


def test_put_get_delete_round_trip_with_ttl_and_digest(store: ResultStore) -> None:  # noqa: F811
    payloads = RedisPayloads(store.client, store.prefix, store.ttl)
    data = _encoded(_big())
    reference = payloads.put("big-1", data)
    assert reference.sha256 == hashlib.sha256(data).hexdigest()
    assert reference.key == payload_key(store.prefix, "big-1", reference.sha256)
    assert (reference.bytes, reference.encoding) == (len(data), "zlib")
    assert 0 < store.client.ttl(reference.key) <= store.ttl
    assert len(store.client.get(reference.key)) < len(data) / 2  # compressed
    assert payloads.get(reference) == data
    payloads.delete(reference)
    with pytest.raises(MissingPayload, match="is gone"):
        payloads.get(reference)


@pytest.mark.parametrize(("stored", "problem"), [
    (b"not zlib", "are not zlib data"),
    (zlib.compress(b'{"other": 1}'), "inflate to 12 bytes"),
    (zlib.compress(b"x" * 10_000), "inflate to more than"),
    (zlib.compress(b"y" * 100)[:-6], "truncated"),
], ids=["not-zlib", "short", "bomb", "truncated"])
def test_corrupt_bytes_are_named(stored: bytes, problem: str) -> None:
    reference = Reference("k", "0" * 64, 100)
    with pytest.raises(CorruptPayload, match=problem):
        decompress_checked(stored, reference)


def test_a_digest_mismatch_is_corrupt() -> None:
    data = b'{"document_id": "a"}'
    with pytest.raises(CorruptPayload, match="do not match their sha256"):
        decompress_checked(zlib.compress(data), Reference("k", "0" * 64, len(data)))


@pytest.mark.parametrize(("change", "problem"), [
    ({"encoding": "gzip"}, "encoding 'gzip' is not supported"),
    ({"sha256": "XYZ"}, "needs sha256"),
    ({"bytes": "12"}, "needs sha256"),
    ({"key": "other:payload:big-1:" + "0" * 64}, "is not 'lptest"),
], ids=["encoding", "digest", "size", "foreign-key"])
def test_malformed_references_are_refused(settings: Settings, change: dict, problem: str) -> None:  # noqa: F811
    digest = "a" * 64
    key = payload_key(settings.key_prefix, "big-1", digest)
    message = {"document_id": "big-1",
               "reference": {"key": key, "sha256": digest, "bytes": 10, "encoding": "zlib", **change}}
    with pytest.raises(MalformedReference, match=problem):
        parse_reference(message, settings.key_prefix)


# --------------------------------------------------------------------------- the producer


def test_a_large_request_travels_by_reference(
    settings: Settings, store: ResultStore, fake_app: FakeApp  # noqa: F811
) -> None:
    referencing = Producer(_small_threshold(settings), app=fake_app, store=store)
    request = _big()
    handle = referencing.submit(request)
    [sent] = fake_app.sent
    message = sent["args"][0]
    data = _encoded(request)
    digest = hashlib.sha256(data).hexdigest()
    assert message == {"document_id": "big-1", "reference": {
        "key": payload_key(store.prefix, "big-1", digest), "sha256": digest, "bytes": len(data),
        "encoding": "zlib"}}
    assert zlib.decompress(store.client.get(message["reference"]["key"])) == data
    assert store.load_job("big-1")["task_id"] == handle.task_id


def test_a_small_request_stays_inline(producer: Producer, fake_app: FakeApp, store: ResultStore) -> None:  # noqa: F811
    producer.submit(_big(blocks=3))
    [sent] = fake_app.sent
    assert sent["args"][0]["blocks"][0]["block_id"] == "p0"
    assert _payload_keys(store) == []


def test_the_limit_for_referenced_requests_is_256_mib_and_still_refuses(
    settings: Settings, store: ResultStore, fake_app: FakeApp  # noqa: F811
) -> None:
    assert Settings.model_fields["max_payload_bytes"].default == 256 * 1024 * 1024
    limited = Producer(_small_threshold(settings).model_copy(update={"max_payload_bytes": 4096}),
                       app=fake_app, store=store)
    with pytest.raises(PayloadTooLarge, match=r"over the 4096-byte limit \(LONGPARSER_MAX_PAYLOAD_BYTES\)"):
        limited.submit(_big())
    assert fake_app.sent == [] and _payload_keys(store) == []


def test_a_threshold_above_the_inline_limit_is_refused() -> None:
    with pytest.raises(ValueError, match=r"reference_threshold_bytes .* must be at most max_inline_bytes"):
        Settings(reference_threshold_bytes=20 * 1024 * 1024)


# --------------------------------------------------------------------------- the task


def test_end_to_end_through_the_client(
    settings: Settings, store: ResultStore, context: WorkerContext, eager: list  # noqa: F811
) -> None:
    referencing = Producer(_small_threshold(settings), app=FakeApp(run=True), store=store)
    referencing.submit(_big())
    result = referencing.get_result("big-1", timeout=5)
    inline = run_chunk_job(_big("inline-1"), context)
    assert len(result.chunks) == inline["chunks"] > 1
    record = store.load_record("big-1")
    assert record["request_sha256"] == hashlib.sha256(_encoded(_big())).hexdigest()
    assert "request_sha256" not in store.load_record("inline-1")  # inline records are unchanged
    assert _payload_keys(store) == []  # deleted once the record was stored


def test_the_stored_result_equals_the_inline_one(context: WorkerContext, store: ResultStore) -> None:  # noqa: F811
    run_chunk_job(_big("same"), context, task_id="t-1")
    inline = store.load_record("same")["result"]
    run_chunk_job(_stored(store, "same", _big("same")), context, task_id="t-2")
    referenced = store.load_record("same")["result"]
    for result in (inline, referenced):
        result["stats"].pop("timings_ms")
    assert referenced == inline


def test_a_missing_reference_stores_a_failure_that_says_so(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    message = _stored(store, "big-1", _big())
    store.client.delete(message["reference"]["key"])
    with pytest.raises(ReferenceMissing, match="is gone"):
        run_chunk_job(message, context, task_id="t-1")
    record = store.load_record("big-1")
    assert (record["status"], record["error"]["type"]) == ("FAILURE", "ReferenceMissing")
    assert "expired after LONGPARSER_RESULT_TTL, or already consumed" in record["error"]["message"]


def test_corrupt_bytes_store_a_failure_and_are_left_to_expire(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    message = _stored(store, "big-1", _big())
    store.client.set(message["reference"]["key"], zlib.compress(b'{"document_id": "big-1", "blocks": []}'))
    with pytest.raises(ReferenceCorrupt, match="inflate to"):
        run_chunk_job(message, context, task_id="t-1")
    record = store.load_record("big-1")
    assert (record["status"], record["error"]["type"]) == ("FAILURE", "ReferenceCorrupt")
    assert _payload_keys(store) == [message["reference"]["key"].encode()]  # not ours: they expire


@pytest.mark.parametrize("declared", [{"bytes": 10}, {"bytes": 10**6}, {"sha256": "a" * 64}],
                         ids=["smaller", "larger", "digest"])
def test_a_message_naming_another_documents_bytes_wrongly_leaves_them_to_their_own(
    context: WorkerContext, store: ResultStore, declared: dict[str, Any]  # noqa: F811
) -> None:
    victim = _stored(store, "big-1", _big())
    forged = {"document_id": "big-1", "reference": {**victim["reference"], **declared}}
    if "sha256" in declared:  # the key names the digest: a forged digest names its own key
        forged["reference"]["key"] = payload_key(store.prefix, "big-1", declared["sha256"])
    with pytest.raises((ReferenceCorrupt, ReferenceMissing)):
        run_chunk_job(forged, context, task_id="t-forged")
    assert _payload_keys(store) == [victim["reference"]["key"].encode()]
    assert run_chunk_job(victim, context, task_id="t-1")["status"] == "SUCCESS"  # the real message
    assert store.load_record("big-1")["status"] == "SUCCESS" and _payload_keys(store) == []


def test_a_reference_to_another_document_is_corrupt_and_its_bytes_deleted(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    data = _encoded(_big("other"))
    reference = RedisPayloads(store.client, store.prefix, store.ttl).put("big-1", data)
    with pytest.raises(ReferenceCorrupt, match="referenced request is document 'other'"):
        run_chunk_job(reference.as_message("big-1"), context, task_id="t-1")
    assert _payload_keys(store) == []  # they matched everything the message declared: its own


def test_an_invalid_referenced_request_is_named_like_an_inline_one(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    bad = _big()
    bad["blocks"][2]["provenance"] = {"page_number": -1}
    reference = RedisPayloads(store.client, store.prefix, store.ttl).put("big-1", json.dumps(bad).encode())
    with pytest.raises(InvalidPayload, match=r"^block 2 \(id 'p2'\): provenance.page_number"):
        run_chunk_job(reference.as_message("big-1"), context, task_id="t-1")
    assert store.load_record("big-1")["status"] == "FAILURE"


def test_a_referenced_request_over_the_limit_is_refused_before_reading(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    message = _stored(store, "big-1", _big())
    limited = replace(context, settings=context.settings.model_copy(update={"max_payload_bytes": 2048}))
    with pytest.raises(PayloadTooLarge, match="LONGPARSER_MAX_PAYLOAD_BYTES"):
        run_chunk_job(message, limited, task_id="t-1")


def test_an_inline_request_over_the_inline_limit_is_refused(context: WorkerContext) -> None:  # noqa: F811
    limited = replace(context, settings=context.settings.model_copy(
        update={"max_inline_bytes": 2048, "reference_threshold_bytes": 1024}))
    with pytest.raises(PayloadTooLarge, match=r"\(LONGPARSER_MAX_INLINE_BYTES\); send it by reference"):
        run_chunk_job(_big(), limited, task_id="t-1")


def test_a_redelivery_after_the_result_was_stored_acks_and_stops(
    eager: list, store: ResultStore  # noqa: F811
) -> None:
    message = _stored(store, "big-1", _big())
    chunk_document.apply_async(args=[message], task_id="t-1").get()
    first = store.load_record("big-1")
    assert _payload_keys(store) == []
    outcome = chunk_document.apply_async(args=[message], task_id="t-1")  # the same message again
    assert outcome.state == "SUCCESS" and outcome.result["already_stored"] is True
    assert store.load_record("big-1") == first  # untouched


def test_a_gone_reference_with_another_requests_result_still_fails(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    run_chunk_job(_big(), context, task_id="t-0")  # an inline result of the same id: no digest
    message = _stored(store, "big-1", _big(blocks=41))
    store.client.delete(message["reference"]["key"])
    with pytest.raises(ReferenceMissing):
        run_chunk_job(message, context, task_id="t-1")
    assert store.load_record("big-1")["status"] == "FAILURE"


class OutageClient:
    """A Redis client whose GETs fail (Redis away) while ``down``."""

    def __init__(self, inner: Any):
        self.inner, self.down = inner, True

    def get(self, *args: Any, **kwargs: Any) -> Any:
        if self.down:
            raise redis.exceptions.ConnectionError("Connection refused (simulated)")
        return self.inner.get(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_redis_away_while_reading_leaves_the_message_for_redelivery(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    message = _stored(store, "big-1", _big())
    outage = OutageClient(store.client)
    away = replace(context, settings=context.settings.model_copy(update={"store_retry_window": 0.2}),
                   store=replace(store, client=outage))
    with pytest.raises(StoreUnavailable, match="reading the request of big-1"):
        run_chunk_job(message, away, task_id="t-1")
    assert store.load_record("big-1") is None and len(_payload_keys(store)) == 1  # nothing consumed
    outage.down = False
    assert run_chunk_job(message, away, task_id="t-1")["status"] == "SUCCESS"
    assert _payload_keys(store) == []


def test_the_hard_time_limit_failure_leaves_the_reference_to_expire(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    message = _stored(store, "big-1", _big())
    store_time_limit_failure(context, message, "t-9", 360)
    assert store.load_record("big-1")["status"] == "FAILURE"
    # the parent cannot tell whether the killed run had checked the bytes: they expire
    assert _payload_keys(store) == [message["reference"]["key"].encode()]
    assert 0 < store.client.ttl(message["reference"]["key"]) <= store.ttl


def test_put_of_pieces_stores_what_put_of_the_joined_bytes_stores(store: ResultStore) -> None:  # noqa: F811
    payloads = RedisPayloads(store.client, store.prefix, store.ttl)
    pieces = request_json_pieces(ChunkRequest.model_validate(_big()))
    whole = payloads.put("big-1", b"".join(pieces))
    stored = store.client.get(whole.key)
    store.client.delete(whole.key)
    assert payloads.put("big-1", pieces) == whole
    assert store.client.get(whole.key) == stored
    assert payloads.get(whole) == b"".join(pieces)


def _cells_table(rows: int, cols: int) -> dict[str, Any]:
    cells = [{"row_index": r, "col_index": c, "text": f"r{r}c{c}"} for r in range(rows) for c in range(cols)]
    cells[0] |= {"column_header": True, "row_span": 1}
    cells[-1] |= {"col_span": 1, "text": None}
    return {"n_rows": rows, "n_cols": cols, "cells": cells}


def test_a_request_s_blocks_travel_without_their_defaults_and_validate_to_the_same_blocks() -> None:
    request = _big(blocks=6)
    request["blocks"] += [
        {"block_id": "t1", "type": "table", "table": _cells_table(3, 2), "order_index": 7, "indent_level": 0,
         "flags": {"docling_label": "table"}, "confidence": {"overall": 1.0}},
        {"block_id": "h1", "type": "heading", "text": "Title", "heading_level": 2, "hierarchy_path": None,
         "provenance": {"page_number": 2, "bbox": {"x0": 1.0, "y0": 2.0, "x1": 3.0, "y1": 4.0,
                                                   "coord_origin": "BOTTOMLEFT"}}},
        {"block_id": "f1", "type": "figure", "text": ""},
    ]
    model = ChunkRequest.model_validate({**request, "config": {"min_tokens": 100, "max_tokens": 300}})
    pieces = request_json_pieces(model)
    sent = json.loads(b"".join(pieces))
    assert b"".join(pieces) == request_json(model)
    assert sent["config"] == {"min_tokens": 100, "max_tokens": 300}  # set to its default, and sent
    assert ChunkRequest.model_validate(sent) == model
    table = sent["blocks"][6]
    assert "order_index" in table and "indent_level" not in table and "heading_level" not in table
    assert [set(cell) for cell in table["table"]["cells"][:2]] == [
        {"row_index", "col_index", "text", "column_header"}, {"row_index", "col_index", "text"}]
    assert sent["blocks"][8] == {"block_id": "f1", "type": "figure", "text": ""}
    full = ChunkRequest.__pydantic_serializer__.to_json(model)
    assert len(b"".join(pieces)) < len(full)


def test_a_referenced_request_splits_into_its_envelope_and_its_raw_blocks() -> None:
    request = _big()
    envelope, blocks = split_request(json.dumps(request).encode())
    assert blocks == request["blocks"]  # dicts: the engine validates them as it reads them
    assert envelope == ChunkRequest.model_validate({**request, "blocks": []})
    with pytest.raises(InvalidPayload, match="not JSON"):
        split_request(b"{nope")
    with pytest.raises(InvalidPayload, match=r"config\.max_token"):
        split_request(json.dumps({**request, "config": {"max_token": 5}}).encode())
    # a request without a block list is validated whole, as an inline one would be
    with pytest.raises(InvalidPayload, match="payload must be a JSON object"):
        split_request(b"[1, 2]")


class _Held(dict):  # a decoded block that a weak reference can watch
    pass


def test_a_referenced_request_s_blocks_are_let_go_as_the_engine_reads_them() -> None:
    """The worker hands the decoded blocks to the engine one by one, each taken out of the list:
    a block read is freed (its memory serves the chunks), the chunks are the list's own."""
    _, decoded = split_request(json.dumps(_big(blocks=30)).encode())
    blocks = [_Held(block) for block in decoded]
    watched = [weakref.ref(block) for block in blocks]
    reader = _handed_over(blocks)
    read = []
    for block in reader:  # (enumerate's reused tuple would hold the last block)
        read.append(block["block_id"])
        del block
        index = len(read) - 1
        assert watched[index]() is None  # nothing but the reader held it
        assert all(ref() is not None for ref in watched[index + 1:])
    assert read == [block["block_id"] for block in decoded]  # in order
    assert blocks == []
    same = list(decoded)
    small = {"max_tokens": 64, "min_tokens": 20}
    handed = chunk_blocks(_handed_over(same), small, document_id="big-1")
    listed = chunk_blocks(decoded, small, document_id="big-1")
    assert handed.chunks == listed.chunks and len(handed.chunks) > 1
    assert handed.stats.blocks_in == listed.stats.blocks_in == 30
    assert same == []


@pytest.mark.parametrize("blocks", [0, 1, 30, 2500])
def test_a_result_s_json_in_pieces_is_its_serializer_s_json(blocks: int) -> None:
    """The worker stores a result's JSON piece by piece, chunks let go as they are encoded: the
    pieces join to the serializer's JSON of the whole result, a text holding the frame's cut
    mark (``"chunks":[]``) included."""
    request = _big(blocks=blocks)
    for block in request["blocks"][:1]:
        block["text"] = 'A field "chunks":[] in a block, and ],"stats": too.'
    result = chunk_blocks(request["blocks"], {"max_tokens": 64, "min_tokens": 20}, document_id="big-1")
    whole = ChunkResult.__pydantic_serializer__.to_json(result)
    count = len(result.chunks)
    pieces = list(result_json_pieces(result))
    assert b"".join(pieces) == whole
    assert result.chunks == [] and len(pieces) == 2 + -(-count // 500)
    assert len(json.loads(whole)["chunks"]) == count
    assert blocks < 2500 or count > 500  # the largest in two pieces of chunks at least


def test_inflating_stops_at_the_declared_size() -> None:
    """A small compressed payload (500 KB of zlib, 500 MiB of zeros) inflates no further than the
    size its message declares (plus one byte): the memory it takes is bounded by that size."""
    import tracemalloc

    bomb = zlib.compress(b"\0" * (500 * 1024 * 1024), 9)
    tracemalloc.start()
    try:
        for declared in (1000, 4 * 1024 * 1024):
            tracemalloc.reset_peak()
            with pytest.raises(CorruptPayload, match=f"inflate to more than the {declared} announced"):
                decompress_checked(bomb, Reference("k", "0" * 64, declared))
            assert tracemalloc.get_traced_memory()[1] < declared + 2 * 1024 * 1024
    finally:
        tracemalloc.stop()


def test_a_malformed_reference_message_stores_a_reference_corrupt_failure(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    message = _stored(store, "big-1", _big())
    gzip = {"document_id": "big-1", "reference": {**message["reference"], "encoding": "gzip"}}
    with pytest.raises(ReferenceCorrupt, match="encoding 'gzip' is not supported") as caught:
        run_chunk_job(gzip, context, task_id="t-1")
    assert caught.value.__cause__ is None  # the parser's own exception type does not travel
    record = store.load_record("big-1")
    assert (record["status"], record["error"]["type"]) == ("FAILURE", "ReferenceCorrupt")
    assert _payload_keys(store) == [message["reference"]["key"].encode()]  # never read: not ours


def test_referenced_bytes_not_deleted_after_the_result_are_logged_and_left_to_expire(
    context: WorkerContext, store: ResultStore, caplog: pytest.LogCaptureFixture  # noqa: F811
) -> None:
    message = _stored(store, "big-1", _big())
    failing = replace(context, store=replace(store, client=FailingDeletes(store.client)))
    with caplog.at_level(logging.WARNING, logger="tasks.chunk"):
        assert run_chunk_job(message, failing, task_id="t-1")["status"] == "SUCCESS"
    assert store.load_record("big-1")["status"] == "SUCCESS"
    key = message["reference"]["key"]
    assert (f"document big-1: the referenced request {key} was not deleted (Connection refused "
            "(simulated)); it expires with LONGPARSER_RESULT_TTL") in caplog.text
    assert _payload_keys(store) == [key.encode()] and 0 < store.client.ttl(key) <= store.ttl


def test_a_small_referenced_request_reports_no_progress(
    eager: list, context: WorkerContext, store: ResultStore, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    import tasks.chunk

    message = _stored(store, "big-1", _big(blocks=40))
    chunk_document.apply_async(args=[message], task_id="t-0").get()
    assert [meta["stage"] for _, meta in eager] == ["chunking", "storing"]  # its count is read first
    eager.clear()
    over = context.settings.model_copy(update={"progress_min_blocks": 41})
    monkeypatch.setattr(tasks.chunk.app, "context", replace(context, settings=over))
    message = _stored(store, "big-1", _big(blocks=40))
    assert chunk_document.apply_async(args=[message], task_id="t-1").get()["blocks"] == 40
    assert eager == []  # 40 blocks < 41: finished before a progress state would be read


def test_a_request_of_another_shape_is_validated_whole() -> None:
    dump = {"metadata": {"document_id": "dump-1"}, "pages": [{"page_number": 3, "blocks": [
        {"block_id": "p1", "type": "paragraph", "text": "Output rose.", "hierarchy_path": ["Results"]}]}]}
    envelope, blocks = split_request(json.dumps(dump).encode())  # a LongParser dump: no 'blocks' list
    assert (envelope.document_id, envelope.blocks) == ("dump-1", [])
    assert [(block.block_id, block.provenance["page_number"]) for block in blocks] == [("p1", 3)]
    with pytest.raises(InvalidPayload, match=r"^payload must be a JSON object \(ChunkRequest\), got list"):
        split_request(b'[{"document_id": "empty-1"}]')
    with pytest.raises(InvalidPayload, match=r"^payload is not JSON: "):
        split_request(b'{"document_id": ')
