"""The result store: records with their completion events, re-ingestion diffs, compressed results.

fakeredis stands in for Redis (it runs MULTI/EXEC, WATCH and streams); the consumer-group and
blocking behaviour is tested on a real redis-server (tests/integration/test_events.py).
"""

from __future__ import annotations

import json
from typing import Any

import fakeredis
import pytest

from service.keys import chunk_ids_key, events_key, result_key, start_count_key
from service.store import (
    COMPRESSED,
    ResultStore,
    compress_result,
    decode_record,
    failure_record,
    stored_result,
)

PREFIX = "lp-store-test"


class CountingClient:
    """A fakeredis client that records the commands of each MULTI/EXEC and each script call."""

    def __init__(self) -> None:
        self.inner = fakeredis.FakeRedis()
        self.transactions: list[list[str]] = []

    def pipeline(self, transaction: bool = True, **kwargs: Any) -> Any:
        pipe = self.inner.pipeline(transaction=transaction, **kwargs)
        execute = pipe.execute

        def recorded(*args: Any, **kw: Any) -> Any:
            self.transactions.append([str(command[0][0]).upper() for command in pipe.command_stack])
            return execute(*args, **kw)

        pipe.execute = recorded
        return pipe

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Any) -> Any:
        reply = self.inner.evalsha(sha, numkeys, *keys_and_args)  # (the first call loads the script)
        self.transactions.append(["EVALSHA", *[str(k) for k in keys_and_args[:numkeys]]])
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def store() -> ResultStore:
    return ResultStore(fakeredis.FakeRedis(), PREFIX, 60)


def _result(ids: list[str], text: str = "x") -> str:
    return json.dumps({"document_id": "doc-1", "chunks": [{"chunk_id": i, "text": text} for i in ids]})


def _events(store: ResultStore) -> list[dict[str, str]]:
    return [{k.decode(): v.decode() for k, v in fields.items()}
            for _, fields in store.client.xrange(events_key(PREFIX))]


def test_each_record_and_its_event_are_one_atomic_write() -> None:
    """SUCCESS: one script call (record, side key, event, the task's start count deleted);
    FAILURE: one MULTI/EXEC (record, event, start count deleted)."""
    client = CountingClient()
    store = ResultStore(client, PREFIX, 60)
    store.save_success("doc-1", "t-1", _result(["a", "b"]), ["a", "b"])
    store.save_record(failure_record("doc-1", "t-2", "InvalidPayload", "bad"))
    store.save_success("doc-1", None, _result(["a", "b"]), ["a", "b"])  # no task id: no count to delete
    assert client.transactions == [
        ["EVALSHA", result_key(PREFIX, "doc-1"), chunk_ids_key(PREFIX, "doc-1"), events_key(PREFIX),
         start_count_key(PREFIX, "t-1")],
        ["SET", "XADD", "DEL"],
        ["EVALSHA", result_key(PREFIX, "doc-1"), chunk_ids_key(PREFIX, "doc-1"), events_key(PREFIX)]]


def test_a_tasks_start_count_lives_until_its_record_is_stored(store: ResultStore) -> None:
    assert [store.count_start("t-1") for _ in range(3)] == [1, 2, 3]
    assert 0 < store.client.ttl(start_count_key(PREFIX, "t-1")) <= 60  # the results' TTL
    assert store.count_start("t-2") == 1  # per task id
    store.save_success("doc-1", "t-1", _result(["a"]), ["a"])
    store.save_record(failure_record("doc-2", "t-2", "InvalidPayload", "bad"))
    assert store.client.exists(start_count_key(PREFIX, "t-1"), start_count_key(PREFIX, "t-2")) == 0
    assert store.count_start("t-1") == 1  # counted afresh
    store.forget_starts("t-1")
    assert not store.client.exists(start_count_key(PREFIX, "t-1"))


def test_a_task_id_outside_the_plain_alphabet_is_keyed_by_its_digest() -> None:
    assert start_count_key("p", "0b6e3f7c-1b0a-4c4e-9a57-5d1f3c1e2a10") == \
        "p:starts:0b6e3f7c-1b0a-4c4e-9a57-5d1f3c1e2a10"
    for hostile in ("a:result:b", "t\n", "x" * 10_000, ""):
        key = start_count_key("p", hostile)
        assert key.startswith("p:starts:sha256-") and len(key) == len("p:starts:sha256-") + 64


def test_diff_against_the_previous_success_and_its_event_counts(store: ResultStore) -> None:
    store.save_success("doc-1", "t-1", _result(["a", "b", "c"]), ["a", "b", "c"])
    assert store.load_record("doc-1")["diff"] is None
    store.save_record(failure_record("doc-1", "t-2", "InvalidPayload", "bad"))  # does not hide t-1
    store.save_success("doc-1", "t-3", _result(["a", "d", "c"]), ["a", "d", "c"])
    record = store.load_record("doc-1")
    assert record["diff"] == {"previous_task_id": "t-1", "added": ["d"], "removed": ["b"],
                              "unchanged": ["a", "c"]}
    events = _events(store)
    names = ("status", "task_id", "chunks", "added", "removed", "unchanged", "error_type")
    assert [tuple(e[n] for n in names) for e in events] == [("SUCCESS", "t-1", "3", "", "", "", ""),
                                 ("FAILURE", "t-2", "0", "", "", "", "InvalidPayload"),
                                 ("SUCCESS", "t-3", "3", "1", "1", "2", "")]
    assert {e["result_key"] for e in events} == {result_key(PREFIX, "doc-1")}
    assert all(e["document_id"] == "doc-1" and float(e["stored_at"]) > 0 for e in events)
    assert sorted(events[0]) == sorted(["document_id", "status", "task_id", "result_key", "chunks", "added",
                                        "removed", "unchanged", "error_type", "stored_at"])


def test_redelivered_identical_task_is_all_unchanged(store: ResultStore) -> None:
    for _ in range(2):
        store.save_success("doc-1", "t-1", _result(["a", "b"]), ["a", "b"])
    assert store.load_record("doc-1")["diff"] == {"previous_task_id": "t-1", "added": [], "removed": [],
                                                  "unchanged": ["a", "b"]}


def test_a_concurrent_write_of_the_same_document_makes_the_diff_recompute() -> None:
    """The write is conditional on the side key's token read with the previous ids: a run that
    stored in between makes the script refuse, and the retry diffs against that run's ids."""
    server = fakeredis.FakeServer()
    store = ResultStore(fakeredis.FakeRedis(server=server), PREFIX, 60)
    other = ResultStore(fakeredis.FakeRedis(server=server), PREFIX, 60)
    store.save_success("doc-1", "t-1", _result(["a"]), ["a"])
    reads = 0
    real_get = store.client.get

    def get(name: str) -> Any:
        nonlocal reads
        value = real_get(name)
        reads += 1
        if reads == 1:  # another worker stores t-2 right after our read
            other.save_success("doc-1", "t-2", _result(["b"]), ["b"])
        return value

    store.client.get = get  # type: ignore[method-assign]
    store.save_success("doc-1", "t-3", _result(["b", "c"]), ["b", "c"])
    assert reads == 2
    assert store.load_record("doc-1")["diff"] == {"previous_task_id": "t-2", "added": ["c"], "removed": [],
                                                  "unchanged": ["b"]}
    assert len(store.client.xrange(events_key(PREFIX))) == 3  # the refused write added no event


def test_events_are_capped(store: ResultStore) -> None:
    capped = ResultStore(store.client, PREFIX, 60, events_maxlen=100)
    for n in range(1000):
        capped.save_record(failure_record(f"doc-{n}", f"t-{n}", "InvalidPayload", "bad"))
    length = store.client.xlen(events_key(PREFIX))
    assert 100 <= length < 1000  # MAXLEN ~ trims whole macro nodes: about the cap, never unbounded


def test_large_results_are_stored_compressed_and_read_back_plain(store: ResultStore) -> None:
    small = ResultStore(store.client, PREFIX, 60, compress_bytes=2048)
    big = _result([f"id-{n}" for n in range(200)], text="word " * 20)
    small.save_success("doc-1", "t-1", big, [f"id-{n}" for n in range(200)])
    raw = json.loads(store.client.get(result_key(PREFIX, "doc-1")))
    assert raw["encoding"] == COMPRESSED and isinstance(raw["result"], str)
    assert list(raw) == ["record_version", "status", "document_id", "task_id", "encoding", "result", "error",
                         "diff"]
    assert len(store.client.get(result_key(PREFIX, "doc-1"))) < len(big) / 4
    record = small.load_record("doc-1")
    assert "encoding" not in record and record["result"] == json.loads(big)
    small.save_success("doc-2", "t-2", _result(["a"]), ["a"])  # under the threshold: plain JSON
    assert "encoding" not in json.loads(store.client.get(result_key(PREFIX, "doc-2")))


def test_a_result_in_pieces_is_stored_as_the_same_result_whole() -> None:
    """Pieces read once: under the threshold joined, over it compressed as they come, to the very
    bytes the whole JSON gives (zlib's output does not depend on how its input is cut)."""
    big = _result([f"id-{n}" for n in range(200)], text="word " * 20).encode()
    cuts = [big[start:start + 777] for start in range(0, len(big), 777)]
    assert stored_result(iter(cuts), 2048) == stored_result(big, 2048) == (compress_result(big), COMPRESSED)
    assert stored_result(iter(cuts), len(big)) == (big, None)
    assert stored_result(iter([]), 2048) == (b"", None)
    read = []
    stored_result((read.append(piece) or piece for piece in cuts), 2048)
    assert read == cuts  # each piece read once, in order


def test_an_unknown_encoding_says_to_upgrade_the_producer() -> None:
    raw = json.dumps({"document_id": "doc-1", "encoding": "zstd", "result": "..."})
    with pytest.raises(ValueError, match="unknown to this client: upgrade longparser-worker on the producer"):
        decode_record(raw)
