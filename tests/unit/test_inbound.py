"""The worker parent's rules for what it takes from a queue (worker/inbound.py), one by one.

The transport and the consumer that apply them to real messages on a real redis-server:
tests/integration/test_kombu_contract.py; with real workers: tests/faults/test_hostile_parent.py.
"""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace
from typing import Any

import fakeredis
import pytest
from celery import Celery

from service.celeryconfig import BODY_LIMIT_OPTION, celery_config, inline_body_limit
from service.keys import unreadable_messages_key
from service.store import ResultStore
from worker import inbound

LIMIT = 4096


def envelope(body: str = '[[{"document_id": "d"}], {}, {}]', *, headers: dict[str, Any] | None = None,
             encoding: str | None = None, content_type: str = "application/json",
             delivery_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """kombu's envelope of a task message, as the transport decodes it from the queue list."""
    if encoding == "base64":
        body = base64.b64encode(body.encode()).decode()
    return {"body": body, "content-encoding": "utf-8", "content-type": content_type,
            "headers": {"id": "task-1", "task": "longparser.chunk_document", **(headers or {})},
            "properties": {"delivery_tag": "tag-1", "body_encoding": encoding, "correlation_id": "task-1",
                           "delivery_info": delivery_info or {"exchange": "chunking",
                                                              "routing_key": "chunking"}}}


def test_a_plain_task_envelope_is_admitted() -> None:
    assert inbound.refusal(envelope(), LIMIT) is None
    assert inbound.refusal(envelope(encoding="base64"), LIMIT) is None


@pytest.mark.parametrize(("message", "words"), [
    (["not", "an", "envelope"], "JSON array, not kombu's envelope"),
    ({"body": "x", "headers": "h", "properties": {}}, "headers or properties"),
    ({**envelope(), "properties": {"delivery_info": {}}}, "delivery tag"),
    (envelope(headers={"compression": "application/x-gzip"}), "compressed body"),
    (envelope(headers={"task": None}), "protocol 2 only"),
    (envelope(content_type="application/x-python-serialize"), "accept application/json only"),
    ({**envelope(), "body": ["decoded"]}, "JSON array, not the encoded text"),
    (envelope("x" * (LIMIT + 1)), f"over the {LIMIT}-byte inline limit"),
    (envelope("x" * (LIMIT + 3), encoding="base64"), f"body of {LIMIT + 3} bytes"),
])
def test_refused_envelopes_say_why_in_one_line(message: Any, words: str) -> None:
    refused = inbound.refusal(message, LIMIT)
    assert refused is not None and words in refused.reason and "\n" not in refused.reason
    # only a body over the limit can still name its document (no other refusal reads the body)
    assert refused.error_type == (inbound.PAYLOAD_TOO_LARGE if "inline limit" in refused.reason else None)


def test_the_parent_refuses_a_long_body_as_the_child_would() -> None:
    from tasks.errors import PayloadTooLarge

    assert PayloadTooLarge.__name__ == inbound.PAYLOAD_TOO_LARGE


@pytest.mark.parametrize(("body", "encoding", "found"), [
    ('[[{"document_id": "tenant-a.report", "blocks": [', None, "tenant-a.report"),
    ('[ [ {"document_id":"d1"', "base64", "d1"),
    ('[[{"blocks": [], "document_id": "d1"}]]', None, None),  # not first: not read
    ('[[{"document_id": "a b"', None, None),  # not a usable id
    ('[[{"document_id": "tenant\\nx"', None, None),  # escapes are never part of an id
    ('[[{"document_id": "' + "x" * 2000 + '"', None, None),  # beyond the head
])
def test_a_long_body_names_its_document_only_first_and_whole(body: str, encoding: str | None,
                                                             found: str | None) -> None:
    if encoding == "base64":
        body = base64.b64encode(body.encode()).decode()
    assert inbound.leading_document_id(body, encoding) == found


def test_the_body_limit_is_the_decoded_length() -> None:
    assert inbound.refusal(envelope("x" * LIMIT), LIMIT) is None
    assert inbound.refusal(envelope("x" * LIMIT, encoding="base64"), LIMIT) is None  # base64 text is longer
    assert inbound.body_length(None, None) == 0


def test_a_raw_message_over_the_envelope_limit_is_replaced_before_it_is_decoded() -> None:
    limit = inbound.envelope_limit(LIMIT)
    assert limit == 2 * LIMIT + inbound.ENVELOPE_HEADROOM
    short = json.dumps(envelope()).encode()
    assert inbound.screen_pop_reply(short, limit) is short
    assert inbound.screen_pop_reply(None, limit) is None
    long = json.dumps(envelope("x" * (limit + 1))).encode()
    replaced = json.loads(inbound.screen_pop_reply(long, limit))
    assert replaced["task_id"] == "task-1"  # from the properties at the envelope's end
    refused = inbound.refusal(replaced, LIMIT)
    assert refused is not None
    assert f"message of {len(long)} bytes, over the {limit}-byte limit" in refused.reason
    assert refused.error_type is None  # nothing of it was decoded: its document id cannot be read
    hostile = json.dumps({"properties": {"correlation_id": "a b\nc"}, "body": "x" * limit}).encode()
    assert json.loads(inbound.screen_pop_reply(hostile, limit))["task_id"] is None  # not a usable id


def test_scheduling_headers_are_reset_to_what_send_task_sends() -> None:
    headers = {"eta": "2027-01-01T00:00:00+00:00", "expires": "2027-01-02T00:00:00+00:00",
               "timelimit": [600, 700], "retries": 4, "id": "t"}
    assert inbound.strip_scheduling_headers(headers) == ["eta", "expires", "timelimit", "retries"]
    assert headers == {"eta": None, "expires": None, "timelimit": [None, None], "retries": 0, "id": "t"}
    assert inbound.strip_scheduling_headers(headers) == []  # now empty: nothing to say
    absent: dict[str, Any] = {}
    assert inbound.strip_scheduling_headers(absent) == []  # set all the same: a body cannot name them
    assert absent == inbound.SCHEDULING_HEADERS


def test_celery_send_task_sends_the_scheduling_headers_empty() -> None:
    app = Celery("probe", broker="memory://", set_as_current=False)
    headers = app.amqp.as_task_v2("id-1", "longparser.chunk_document", args=[{}]).headers
    assert {name: headers[name] for name in inbound.SCHEDULING_HEADERS} == {
        "eta": None, "expires": None, "timelimit": [None, None], "retries": 0}
    assert inbound.strip_scheduling_headers(dict(headers)) == []


def test_a_message_is_routed_back_to_the_queue_it_came_from() -> None:
    hostile = {"exchange": "", "routing_key": "celery-task-meta-victim", "priority": 0}
    message = envelope(delivery_info=hostile)
    inbound.route_back_to(message, "chunking")
    assert message["properties"]["delivery_info"] == {**hostile, "routing_key": "chunking"}


def test_admit_strips_routes_and_logs_once(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.setattr(inbound._Once, "warned", False)
    first = envelope(headers={"eta": "2027-01-01T00:00:00", "timelimit": [600, 700]},
                     delivery_info={"exchange": "", "routing_key": "victim"})
    second = envelope(headers={"expires": "2027-01-01T00:00:00"})
    with caplog.at_level("WARNING", logger=inbound.__name__):
        assert inbound.admit(first, "chunking", LIMIT) and inbound.admit(second, "chunking", LIMIT)
    assert first["headers"]["timelimit"] == [None, None] and second["headers"]["expires"] is None
    assert first["properties"]["delivery_info"]["routing_key"] == "chunking"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "the producer set eta, timelimit" in lines[0] and "task-1" in lines[0]


def test_remote_control_and_events_are_checked_for_size_and_encoding_only(monkeypatch: pytest.MonkeyPatch
                                                                         ) -> None:
    refused: list[tuple[Any, ...]] = []
    monkeypatch.setattr(inbound, "refuse", lambda *args: refused.append(args))
    control = envelope(headers={"task": None, "clock": 3, "expires": 1.0e9})
    del control["headers"]["task"]
    assert inbound.admit(control, "node@host.celery.pidbox", LIMIT, task_queue=False)
    assert control["headers"]["expires"] == 1.0e9  # a control message's expiry is kombu's own
    assert control["properties"]["delivery_info"]["routing_key"] == "chunking"  # nothing rerouted
    assert not inbound.admit(envelope(headers={"compression": "zlib"}), "celeryev.x", LIMIT, task_queue=False)
    assert not inbound.admit(envelope("x" * (LIMIT + 1)), "celeryev.x", LIMIT, task_queue=False)
    assert len(refused) == 2


def test_admit_refuses_and_records(monkeypatch: pytest.MonkeyPatch) -> None:
    refused: list[tuple[Any, ...]] = []
    monkeypatch.setattr(inbound, "refuse", lambda *args: refused.append(args))
    assert not inbound.admit(envelope(headers={"compression": "zlib"}), "chunking", LIMIT)
    assert not inbound.admit(json.loads(inbound.screen_pop_reply(b"y" * 10**6, 1000)), "chunking", LIMIT)
    long = '[[{"document_id": "d-long", "blocks": ["' + "x" * LIMIT + '"]}], {}, {}]'
    assert not inbound.admit(envelope(long, encoding="base64"), "chunking", LIMIT)
    assert [(task_id, queue, document_id) for task_id, queue, _, document_id in refused] == [
        ("task-1", "chunking", None), (None, "chunking", None), ("task-1", "chunking", "d-long")]


def test_unreadable_messages_are_counted_in_the_store() -> None:
    store = ResultStore(fakeredis.FakeRedis(), "lp", 60)
    inbound.count_unreadable(store)
    inbound.count_unreadable(store)
    assert int(store.client.get(unreadable_messages_key("lp"))) == 2


def test_a_count_that_cannot_be_written_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    server = fakeredis.FakeServer()
    server.connected = False
    inbound.count_unreadable(ResultStore(fakeredis.FakeRedis(server=server), "lp", 60))
    assert "could not count an unreadable message" in caplog.text


def test_task_ids_must_be_fit_for_a_log_line() -> None:
    assert inbound.readable_task_id("0b5e-41f2") == "0b5e-41f2"
    for bad in ("", "a b", "x\n", None, 5, "-leading", "x" * 200):
        assert inbound.readable_task_id(bad) is None
    assert inbound.task_id_of({"headers": {"id": 5}, "properties": {"correlation_id": "c-1"}}) == "c-1"


def test_the_worker_transport_gets_the_inline_limit() -> None:
    from config.settings import Settings

    settings = Settings(max_inline_bytes=2048, reference_threshold_bytes=1024)
    assert celery_config(settings)["broker_transport_options"][BODY_LIMIT_OPTION] == 2048 \
        == inline_body_limit(settings)


def test_a_refusal_is_recorded_under_its_document_or_counted(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    store = ResultStore(fakeredis.FakeRedis(), "lp", 60)
    marked: list[tuple[str, str, str]] = []
    backend = SimpleNamespace(mark_as_failure=lambda task_id, exc: marked.append(
        (task_id, type(exc).__name__, str(exc))))
    monkeypatch.setattr(inbound.compat, "current_app",
                        lambda: SimpleNamespace(context=SimpleNamespace(store=store), backend=backend))
    with caplog.at_level("INFO", logger=inbound.__name__):
        inbound.refuse("t-1", "chunking", inbound.Refusal("compressed body"))
        inbound.refuse("t-2", "chunking", inbound.Refusal("body too long", inbound.PAYLOAD_TOO_LARGE), "d-1")
        inbound.refuse(None, "chunking", inbound.Refusal("not an envelope"))
    assert int(store.client.get(unreadable_messages_key("lp"))) == 2  # t-1 and the one without a task id
    record = store.load_record("d-1")
    assert record is not None and (record["status"], record["task_id"], record["error"]) == (
        "FAILURE", "t-2", {"type": "PayloadTooLarge", "message": "body too long"})
    assert [fields[b"document_id"] for _, fields in store.client.xrange(store.events_key)] == [b"d-1"]
    assert marked == [("t-1", "MessageRefused", "compressed body"),
                      ("t-2", "MessageRefused", "body too long")]
    unread = [r.getMessage() for r in caplog.records if "could be read" in r.getMessage()]
    assert len(unread) == 2 and "task t-1 from queue chunking" in unread[0]
    assert "no readable task id" in unread[1]


class Delivered:
    """A message as kombu built it: its body decoded on first use, like kombu's ``payload``."""

    def __init__(self, body: str) -> None:
        self.body = body

    @property
    def payload(self) -> Any:
        return json.loads(self.body)


@pytest.mark.parametrize(("body", "words"), [
    ("[1]", "JSON array of 1, not Celery's [args, kwargs, embed]"),
    ('"str"', "JSON string, not"),
    ('{"args": [], "kwargs": {}, "eta": "2030-01-01T00:00:00"}', "JSON object, not"),
    ('[[], {}, null]', "JSON array of 3, not"),
    ("[" * 5000 + "]" * 5000, "cannot be decoded (RecursionError"),
    ("[[1], {}", "cannot be decoded (JSONDecodeError"),
])
def test_task_bodies_celery_cannot_unpack_are_refused(body: str, words: str) -> None:
    problem = inbound.task_body_problem(Delivered(body))
    assert problem is not None and words in problem and "\n" not in problem


def test_protocol_2_task_bodies_pass() -> None:
    assert inbound.task_body_problem(Delivered('[[{"document_id": "d"}], {}, {"chain": null}]')) is None
    assert inbound.task_body_problem(Delivered("[[], {}, {}]")) is None  # the task says what it lacks
