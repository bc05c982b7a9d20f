"""The cheaper hand-off (worker/serialization.py): a pool child validates an inline chunking
request straight from the body's JSON; every other body is decoded exactly as before."""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

import pytest
from celery.app import trace
from kombu.serialization import loads, registry
from kombu.utils import json as kombu_json

from schemas import ChunkRequest
from service.store import ResultStore
from tasks.chunk import run_chunk_job
from tests.unit.worker_fixtures import context, isolated_settings, payload, settings, store  # noqa: F401
from worker import celery_compat
from worker.celery_compat import drop_decoded_arguments
from worker.context import WorkerContext
from worker.serialization import InlineRequest, decode_task_body, install_task_decoder

EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}


def body(*args: Any, kwargs: dict | None = None) -> str:
    """A task body as Celery's producer encodes it (kombu's JSON)."""
    return kombu_json.dumps([list(args), kwargs or {}, EMBED])


def test_an_inline_request_comes_out_validated() -> None:
    args, kwargs, embed = decode_task_body(body(payload()), limit=1 << 20)
    assert isinstance(args[0], InlineRequest)
    assert args[0] == InlineRequest.model_validate(payload())
    assert ChunkRequest.model_validate(payload()).model_dump() == args[0].model_dump()
    assert (kwargs, embed) == ({}, EMBED)
    assert decode_task_body(body(payload()).encode(), limit=1 << 20)[0][0] == args[0]


@pytest.mark.parametrize("request_", [
    {"document_id": "d", "reference": {"key": "k", "sha256": "0" * 64, "bytes": 1, "encoding": "zlib"}},
    {**payload(), "metadata": {"source": "crm"}},  # an unknown member: the task ignores it, as before
    {**payload(), "blocks": [{"block_id": "b", "type": "nope", "text": "x"}]},  # invalid: the task names it
    "not a request",
], ids=["reference", "unknown-member", "invalid", "not-an-object"])
def test_other_bodies_are_decoded_as_before(request_: Any) -> None:
    text = body(request_)
    assert decode_task_body(text, limit=1 << 20) == celery_compat.fast_json_loads(text)


def test_a_body_over_the_limit_is_decoded_as_before_so_the_task_checks_its_size() -> None:
    text = body(payload())
    assert decode_task_body(text, limit=len(text) - 1) == celery_compat.fast_json_loads(text)
    assert isinstance(decode_task_body(text, limit=len(text))[0][0], InlineRequest)


def test_other_json_and_two_arguments_are_decoded_as_before() -> None:
    for text in ('{"method": "ping", "arguments": {}}', body(payload(), payload()), "[[1, 2], {}, {}]",
                 body(payload(), kwargs={"x": 1})):
        assert decode_task_body(text, limit=1 << 20) == celery_compat.fast_json_loads(text)


def test_the_decoder_is_installed_for_application_json() -> None:
    saved = registry._decoders["application/json"]
    try:
        install_task_decoder(1 << 20)
        args, _, _ = loads(body(payload()), "application/json", "utf-8")
        assert isinstance(args[0], InlineRequest)
    finally:
        registry._decoders["application/json"] = saved


def test_the_task_serves_a_validated_request_without_checking_it_again(
    context: WorkerContext, store: ResultStore  # noqa: F811
) -> None:
    [validated], _, _ = decode_task_body(body(payload()), limit=1 << 20)
    summary = run_chunk_job(validated, context, task_id="t-1")
    inline = store.load_record("doc-1")
    run_chunk_job(payload(), context, task_id="t-1")
    plain = store.load_record("doc-1")
    for record in (inline, plain):
        record["result"]["stats"].pop("timings_ms")
    assert inline.pop("diff") is None  # the first run of doc-1
    assert plain.pop("diff")["added"] == []  # the second: the same chunks again
    assert summary["chunks"] == 2 and inline == plain


def test_the_child_decodes_the_body_and_overwrites_the_request_arguments() -> None:
    """What drop_decoded_arguments relies on: Celery's pool-side tracers take args and kwargs from
    the body they decode, never from the request dict they are sent."""
    for tracer in (trace.fast_trace_task, trace.trace_task_ret):
        source = inspect.getsource(tracer)
        assert "args, kwargs, embed = loads(" in source
        assert "request.update({\n        'args': args, 'kwargs': kwargs," in source
    request_dict = {"id": "t", "args": [payload()], "kwargs": {"a": 1}}
    drop_decoded_arguments(SimpleNamespace(request_dict=request_dict))
    assert request_dict == {"id": "t", "args": (), "kwargs": {}}
