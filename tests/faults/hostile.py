"""Hostile messages: what a producer with queue access can push, and what it costs a worker.

The hostile scenarios (``test_hostile_*.py``) push raw messages straight onto a queue's Redis
list, as any producer holding the documented producer ACL user can (``LPUSH`` on the queue), with
bodies and headers no client of ours would send, and measure for their table row:

* the peak RSS growth of the worker parent and of its pool children (``/proc``, every 50 ms),
  against what each had before the message was pushed;
* how many times the message was delivered (the parent's ``Task ...[id] received`` lines);
* the record stored under its document id (status and error type), if any.

``LONGPARSER_FAULTS_CODE_ROOT=DIR`` runs the workers from another checkout (same venv), which is
how the "before" column of the closing note's table is measured against the branch point.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.keys import TASK_NAME
from tests.faults.harness import REPO_ROOT, Proc

CODE_ROOT_ENV = "LONGPARSER_FAULTS_CODE_ROOT"
MB = 1024 * 1024
# The bound issue 25 sets: no message of up to 1 MB raises any worker process by more than this.
RSS_BOUND_BYTES = 64 * MB


def code_root() -> Path:
    """The checkout the scenario's workers run (this one unless ``$LONGPARSER_FAULTS_CODE_ROOT``)."""
    return Path(os.environ.get(CODE_ROOT_ENV) or REPO_ROOT)


# --------------------------------------------------------------------------- memory


def rss_bytes(pid: int) -> int | None:
    """Resident set size of ``pid`` (``VmRSS``), or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None
    return None


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid`` (every thread's ``children`` list)."""
    found: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as children:
                    found.update(int(p) for p in children.read().split())
            except (FileNotFoundError, ProcessLookupError):
                continue
    except (FileNotFoundError, ProcessLookupError):
        return []
    return sorted(found)


@dataclass
class RssSampler:
    """Samples a worker parent's RSS and its pool children's every ``interval`` s, in a thread.

    Growth is measured against the RSS each process had when sampling started; a child started
    later (a replacement for one that died) is measured against the largest starting child, so
    a fresh child's own start-up is not counted as the message's cost.
    """

    parent_pid: int
    interval: float = 0.05
    parent_base: int = 0
    parent_peak: int = 0
    child_base: dict[int, int] = field(default_factory=dict)
    child_peak: dict[int, int] = field(default_factory=dict)
    children_seen: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="rss-sampler")

    def start(self) -> RssSampler:
        self.parent_base = self.parent_peak = rss_bytes(self.parent_pid) or 0
        for child in children_of(self.parent_pid):
            rss = rss_bytes(child)
            if rss is not None:
                self.child_base[child] = self.child_peak[child] = rss
                self.children_seen.add(child)
        self._thread.start()
        return self

    def _sample(self) -> None:
        rss = rss_bytes(self.parent_pid)
        if rss is not None:
            self.parent_peak = max(self.parent_peak, rss)
        for child in children_of(self.parent_pid):
            rss = rss_bytes(child)
            if rss is None:
                continue
            self.children_seen.add(child)
            self.child_peak[child] = max(self.child_peak.get(child, 0), rss)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def stop(self) -> RssSampler:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sample()
        return self

    @property
    def parent_growth(self) -> int:
        return max(0, self.parent_peak - self.parent_base)

    @property
    def child_growth(self) -> int:
        """The largest growth of any pool child (a new child against the largest starting one)."""
        start = max(self.child_base.values(), default=0)
        return max((max(0, peak - self.child_base.get(pid, start)) for pid, peak in self.child_peak.items()),
                   default=0)

    @property
    def children_replaced(self) -> int:
        """Pool children that appeared after sampling started (one per child that died)."""
        return len(self.children_seen - set(self.child_base))


# --------------------------------------------------------------------------- raw messages


def task_body(payload: Any) -> bytes:
    """A Celery protocol-2 body for ``longparser.chunk_document(payload)``."""
    embed = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
    return json.dumps([[payload], {}, embed], separators=(",", ":")).encode()


def task_headers(task_id: str, **overrides: Any) -> dict[str, Any]:
    """Celery protocol-2 headers as ``send_task`` writes them; ``overrides`` replace any of them."""
    headers: dict[str, Any] = {
        "lang": "py", "task": TASK_NAME, "id": task_id, "shadow": None, "eta": None, "expires": None,
        "group": None, "group_index": None, "retries": 0, "timelimit": [None, None], "root_id": task_id,
        "parent_id": None, "argsrepr": "[<hostile>]", "kwargsrepr": "{}", "origin": "hostile@test",
        "ignore_result": True, "replaced_task_nesting": 0, "stamped_headers": None, "stamps": {},
    }
    headers.update(overrides)
    return headers


def raw_message(body: bytes, *, queue: str, task_id: str | None = None, headers: dict[str, Any] | None = None,
                content_type: str = "application/json", content_encoding: str = "utf-8",
                properties: dict[str, Any] | None = None) -> dict[str, Any]:
    """The envelope kombu's Redis transport keeps in a queue list (what ``LPUSH`` must write).

    ``body`` is carried base64-encoded, as kombu does; ``headers`` default to
    :func:`task_headers` of ``task_id``.
    """
    task_id = task_id or str(uuid.uuid4())
    return {
        "body": base64.b64encode(body).decode("ascii"),
        "content-encoding": content_encoding,
        "content-type": content_type,
        "headers": headers if headers is not None else task_headers(task_id),
        "properties": {
            "correlation_id": task_id, "reply_to": str(uuid.uuid4()), "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue}, "priority": 0,
            "body_encoding": "base64", "delivery_tag": str(uuid.uuid4()), **(properties or {}),
        },
    }


def push_raw(client: Any, list_key: str, message: dict[str, Any]) -> int:
    """``LPUSH`` one envelope onto a queue's list (``service.keys.queue_list_keys(...)[0]``);
    returns its length in bytes."""
    data = json.dumps(message, separators=(",", ":"))
    client.lpush(list_key, data)
    return len(data)


# --------------------------------------------------------------------------- observation


def deliveries(workers: list[Proc], task_id: str) -> int:
    """How many times ``task_id`` was delivered to a worker (the parent's INFO ``received`` lines)."""
    needle = f"[{task_id}] received"
    return sum(proc.log_text().count(needle) for proc in workers)


def record_summary(record: dict[str, Any] | None) -> str:
    """``SUCCESS``, ``FAILURE <type>`` or ``none``: the record column of the table."""
    if record is None:
        return "none"
    if record.get("status") == "FAILURE":
        return f"FAILURE {(record.get('error') or {}).get('type')}"
    return str(record.get("status"))


@dataclass
class HostileRow:
    """One line of the hostile-message table (closing note of issue 25)."""

    scenario: str
    message_bytes: int
    parent_growth: int
    child_growth: int
    deliveries: int
    record: str
    notes: str = ""

    def line(self) -> str:
        return (f"| {self.scenario} | {self.message_bytes / 1024:,.0f} KB | "
                f"{self.parent_growth / MB:.1f} MB | {self.child_growth / MB:.1f} MB | {self.deliveries} | "
                f"{self.record} | {code_root().name}{': ' + self.notes if self.notes else ''} |")


def wait_for(predicate: Any, timeout: float, interval: float = 0.1) -> Any:
    """``predicate()`` once truthy, else its last value after ``timeout`` s (no exception)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)
