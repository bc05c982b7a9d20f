"""``longparser metrics``' reading and rendering, on fakeredis (the real Redis: tests/integration)."""

from __future__ import annotations

import fakeredis
import kombu.transport.redis as kombu_redis

from cli.metrics import Gauges, read_gauges, read_unreadable, render
from service.keys import (
    KOMBU_PRIORITY_SEPARATOR,
    KOMBU_PRIORITY_STEPS,
    KOMBU_UNACKED,
    queue_list_keys,
    unreadable_messages_key,
)


def test_the_queue_list_names_are_kombus() -> None:
    assert kombu_redis.Channel.sep == KOMBU_PRIORITY_SEPARATOR
    assert list(KOMBU_PRIORITY_STEPS) == list(kombu_redis.PRIORITY_STEPS)
    assert kombu_redis.Channel.unacked_key == KOMBU_UNACKED
    channel = object.__new__(kombu_redis.Channel)  # _q_for_pri reads only the class attributes
    steps = kombu_redis.PRIORITY_STEPS
    assert queue_list_keys("p:", "q") == tuple(channel._q_for_pri("p:q", step) for step in steps)


def test_depth_sums_the_queue_list_and_its_priority_lists_and_held_counts_unacked() -> None:
    client = fakeredis.FakeRedis()
    own, pri3, _, pri9 = queue_list_keys("p:", "chunking")
    client.rpush(own, "a", "b")
    client.rpush(pri3, "c")
    client.rpush(pri9, "d")
    client.rpush("p:semantic", "e")
    client.rpush("chunking", "not ours: no prefix")
    client.hset("p:unacked", mapping={"t1": "m", "t2": "m"})
    client.hset("unacked", "t3", "not ours")
    gauges = read_gauges(client, "p:", ["chunking", "semantic", "chunking", "empty"])
    assert gauges == Gauges({"chunking": 4, "semantic": 1, "empty": 0}, 2)


def test_render_is_prometheus_text_with_escaped_labels() -> None:
    text = render(Gauges({"chunking": 3, 'odd"q\\n': 0}, 1))
    assert text.endswith("\n")
    lines = text.splitlines()
    assert "# TYPE longparser_queue_depth gauge" in lines and "# TYPE longparser_messages_held gauge" in lines
    assert 'longparser_queue_depth{queue="chunking"} 3' in lines
    assert 'longparser_queue_depth{queue="odd\\"q\\\\n"} 0' in lines
    assert "longparser_messages_held 1" in lines
    assert "# TYPE longparser_unreadable_messages_total counter" in lines
    assert lines[-1] == "longparser_unreadable_messages_total 0"


def test_the_unreadable_count_is_read_from_the_store_prefix() -> None:
    client = fakeredis.FakeRedis()
    assert read_unreadable(client, "lp") == 0  # no refusal yet: no key
    client.incr(unreadable_messages_key("lp"), 3)
    client.incr(unreadable_messages_key("other"))
    assert unreadable_messages_key("lp") == "lp:unreadable"
    assert read_unreadable(client, "lp") == 3
    assert render(Gauges({}, 0, 3)).splitlines()[-1] == "longparser_unreadable_messages_total 3"
