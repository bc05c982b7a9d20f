"""docker/keda-scaledobject.yaml reads the lists the workers consume, on the Redis compose runs.

Each ScaledObject scales the compose service of the same name; its redis trigger must watch
that service's queue list (named as :func:`service.keys.queue_list_keys` names it under the
default settings) on the broker compose gives the workers, or the autoscaler would watch an
empty list while the backlog grows.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from config.settings import Settings
from service.keys import queue_list_keys

ROOT = Path(__file__).resolve().parents[2]
KEDA = ROOT / "docker" / "keda-scaledobject.yaml"
COMPOSE = ROOT / "docker" / "compose.yaml"


def _scaled_objects() -> list[dict]:
    documents = [d for d in yaml.safe_load_all(KEDA.read_text(encoding="utf-8")) if d]
    assert documents and all(d["kind"] == "ScaledObject" for d in documents)
    assert all(d["apiVersion"] == "keda.sh/v1alpha1" for d in documents)
    return documents


def _compose_queue(service: dict) -> str:
    [queues] = [arg.split("=", 1)[1] for arg in service["command"] if arg.startswith("--queues=")]
    return queues


def test_each_scaled_object_watches_the_queue_list_of_the_service_it_scales() -> None:
    compose = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    defaults = Settings(_env_file=None)
    watched = {}
    for scaled in _scaled_objects():
        service = compose["services"][scaled["spec"]["scaleTargetRef"]["name"]]
        queue = _compose_queue(service)
        [trigger] = scaled["spec"]["triggers"]
        assert trigger["type"] == "redis"
        metadata = trigger["metadata"]
        # the queue's own list: where every message LongParser's producer sends waits
        assert metadata["listName"] == queue_list_keys(defaults.celery_key_prefix, queue)[0]
        broker = urlsplit(service["environment"]["LONGPARSER_BROKER_URL"])
        assert metadata["address"] == f"{broker.hostname}:{broker.port}"
        assert metadata["databaseIndex"] == broker.path.strip("/")
        # KEDA takes its metadata as strings; a YAML number would be refused
        assert all(isinstance(value, str) for value in metadata.values())
        assert re.fullmatch(r"[1-9]\d*", metadata["listLength"])
        assert scaled["spec"]["minReplicaCount"] <= scaled["spec"]["maxReplicaCount"]
        watched[queue] = metadata["listName"]
    assert set(watched) == {defaults.structural_queue, defaults.semantic_queue}


def test_the_lists_named_are_the_queues_of_the_default_settings() -> None:
    defaults = Settings(_env_file=None)
    assert defaults.celery_key_prefix == ""  # else listName needs the prefix (the file says so)
    assert queue_list_keys("", defaults.structural_queue)[0] == "chunking"
    assert queue_list_keys("lp:", "chunking")[0] == "lp:chunking"
