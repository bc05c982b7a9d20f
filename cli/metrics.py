"""``longparser metrics``: each queue's depth and the messages workers hold, as Prometheus text.

* ``metrics`` prints the gauges once and exits;
* ``metrics --port N [--bind ADDR]`` serves them at ``http://ADDR:N/metrics`` (read from Redis at
  each scrape) until stopped.

Gauges (the queues are ``LONGPARSER_STRUCTURAL_QUEUE`` and ``LONGPARSER_SEMANTIC_QUEUE`` unless
``--queue`` names others):

* ``longparser_queue_depth{queue="..."}`` - messages waiting in the queue: the length of its
  Redis list (``LONGPARSER_CELERY_KEY_PREFIX`` + the queue's name), plus kombu's priority
  sub-lists, which hold only messages a producer sent with a priority above 0;
* ``longparser_messages_held`` - messages delivered to workers and not yet acknowledged (kombu's
  ``unacked`` hash, every queue's): running, or prefetched by a busy process;
* ``longparser_unreadable_messages_total`` (a counter) - messages workers refused before their
  document id could be read (compressed, oversized or undecodable bodies, a payload without a
  usable ``document_id``): no record can name them, each was logged once with its task id. Read
  from the result store (``LONGPARSER_RESULT_URL``, key ``LONGPARSER_KEY_PREFIX:unreadable``).

A worker takes a message off the list when it starts on it (prefetch 1), so the depth is the
backlog no worker has reached: what an autoscaler scales on (docs/operations.md, "Autoscaling").
All the lengths are read in one pipeline from the broker (``LONGPARSER_BROKER_URL``).

Exit status: 0 printed (or served until interrupted); 2 invalid settings; 3 Redis unreachable
(one line on stderr). Served, a scrape that cannot reach Redis answers 503 with that line.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
EXIT_OK, EXIT_BAD_SETTINGS, EXIT_UNREACHABLE = 0, 2, 3


@dataclass(frozen=True)
class Gauges:
    """One reading: waiting messages per queue, the held messages of every queue, and the
    messages refused unread so far."""

    depths: dict[str, int]
    held: int
    unreadable: int = 0


def read_gauges(client: Any, celery_key_prefix: str, queues: Iterable[str]) -> Gauges:
    """LLEN of each queue's lists and HLEN of the unacked hash, in one pipeline (one round trip)."""
    from service.keys import queue_list_keys, unacked_key

    lists = {queue: queue_list_keys(celery_key_prefix, queue) for queue in dict.fromkeys(queues)}
    pipe = client.pipeline(transaction=False)
    for keys in lists.values():
        for key in keys:
            pipe.llen(key)
    pipe.hlen(unacked_key(celery_key_prefix))
    replies = iter(pipe.execute())
    depths = {queue: sum(next(replies) for _ in keys) for queue, keys in lists.items()}
    return Gauges(depths, next(replies))


def read_unreadable(client: Any, key_prefix: str) -> int:
    """The count of messages refused before their document id could be read (0: none yet)."""
    from service.keys import unreadable_messages_key

    return int(client.get(unreadable_messages_key(key_prefix)) or 0)


def _label(value: str) -> str:
    # The exposition format's escapes inside a label value: backslash, double quote, newline.
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(gauges: Gauges) -> str:
    """The Prometheus text exposition of ``gauges``."""
    lines = ["# HELP longparser_queue_depth Messages waiting in the queue (not yet taken by a worker).",
             "# TYPE longparser_queue_depth gauge"]
    lines += [f'longparser_queue_depth{{queue="{_label(queue)}"}} {depth}'
              for queue, depth in gauges.depths.items()]
    lines += ["# HELP longparser_messages_held Messages delivered to workers and not yet acknowledged.",
              "# TYPE longparser_messages_held gauge",
              f"longparser_messages_held {gauges.held}",
              "# HELP longparser_unreadable_messages_total Messages refused before their document id could "
              "be read (no record names them).",
              "# TYPE longparser_unreadable_messages_total counter",
              f"longparser_unreadable_messages_total {gauges.unreadable}"]
    return "\n".join(lines) + "\n"


class _Reader:
    """Reads the gauges for the settings' broker; the CLI's error line when Redis is away."""

    def __init__(self, settings: Any, queues: Sequence[str]) -> None:
        from service.redis_client import redis_client

        self.settings, self.queues = settings, list(queues)
        self.client = redis_client(settings.broker_url, settings)
        self.store_client = self.client if settings.result_url == settings.broker_url else \
            redis_client(settings.result_url, settings)

    def text(self) -> str:
        gauges = read_gauges(self.client, self.settings.celery_key_prefix, self.queues)
        unreadable = read_unreadable(self.store_client, self.settings.key_prefix)
        return render(Gauges(gauges.depths, gauges.held, unreadable))

    def close(self) -> None:
        self.client.close()
        if self.store_client is not self.client:
            self.store_client.close()

    def describe(self, exc: Exception) -> str:
        from config.settings import masked_url

        return (f"error: broker unreachable at {masked_url(self.settings.broker_url)} "
                f"({type(exc).__name__}: {' '.join(str(exc).split())})")


def metrics_server(reader: _Reader, bind: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server answering ``GET /metrics`` with a fresh reading (other paths: 404)."""
    from service.redis_client import TRANSIENT_ERRORS

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] != "/metrics":
                self._answer(404, "not found: the gauges are at /metrics\n")
                return
            try:
                self._answer(200, reader.text())
            except TRANSIENT_ERRORS as exc:
                self._answer(503, reader.describe(exc) + "\n")

        def _answer(self, status: int, body: str) -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return None  # one line per scrape would drown the log

    return ThreadingHTTPServer((bind, port), Handler)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _say(message: str) -> None:
    print(f"longparser metrics: {' '.join(message.split())}", file=sys.stderr)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queue", action="append", metavar="QUEUE",
                        help="a queue to report (repeatable; default: LONGPARSER_STRUCTURAL_QUEUE and "
                             "LONGPARSER_SEMANTIC_QUEUE)")
    parser.add_argument("--port", type=int, metavar="N",
                        help="serve the gauges at http://BIND:N/metrics instead of printing them once")
    parser.add_argument("--bind", default="127.0.0.1", metavar="ADDR",
                        help="with --port: the address to listen on (default: 127.0.0.1; 0.0.0.0 for a "
                             "scraper on another host)")


def run_metrics(args: argparse.Namespace) -> int:
    """Run ``longparser metrics``; returns the exit status."""
    from config.settings import SettingsError, get_settings
    from service.redis_client import TRANSIENT_ERRORS

    try:
        settings = get_settings()
    except SettingsError as exc:
        _say(f"error: settings (LONGPARSER_* environment / .env): {exc}")
        return EXIT_BAD_SETTINGS
    reader = _Reader(settings, args.queue or (settings.structural_queue, settings.semantic_queue))
    try:
        if args.port is None:
            try:
                sys.stdout.write(reader.text())
            except TRANSIENT_ERRORS as exc:
                _say(reader.describe(exc))
                return EXIT_UNREACHABLE
            return EXIT_OK
        with metrics_server(reader, args.bind, args.port) as server:
            _say(f"serving http://{args.bind}:{server.server_address[1]}/metrics")
            signal.signal(signal.SIGTERM, _interrupt)  # docker stop / kill: leave like Ctrl-C
            with contextlib.suppress(KeyboardInterrupt):
                server.serve_forever()
        return EXIT_OK
    finally:
        reader.close()
