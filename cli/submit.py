"""``longparser submit`` and ``longparser result``: the producer client on the command line.

* ``submit INPUT [--format F] [-c CONFIG] [config flags] [--wait] [--timeout S]`` - INPUT in
  any shape ``longparser chunk`` accepts (``--format`` as there), a DoclingDocument included
  (converted here, on the producer side: the worker receives a ChunkRequest); the document id
  comes from the input, else from the file name. The config flags are ``chunk``'s and win over
  ``-c``. Prints the job handle as JSON; with ``--wait`` prints the result JSON instead, keys in
  the schema's order. ``--wait`` does not poll: it blocks on the completion stream
  (:meth:`tasks.client.Producer.wait`) until the document's record is stored or ``--timeout``.
* ``result DOCUMENT_ID [--diff]`` - prints the stored result JSON (with its ``chunks``), keys in
  the schema's order, as ``chunk`` and ``submit --wait`` print them; with ``--diff``, the
  record's chunk-id diff against the document's previous result instead
  (``{"previous_task_id", "added", "removed", "unchanged"}``, ``null`` when there is none;
  docs/reingestion.md).

Exit status: 0 success; 1 pending, failed, unknown or timed out; 2 bad input or settings;
3 broker/store unreachable for the whole ``LONGPARSER_SUBMIT_RETRY_WINDOW`` (at its first
failure a line says it is retrying, where and for how long); 4 Redis full (OOM under
noeviction). Every error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from schemas import ChunkResult, InputError
from schemas.errors import RequestRefused
from service import retry as service_retry

EXIT_OK, EXIT_NOT_READY, EXIT_BAD_INPUT, EXIT_UNREACHABLE, EXIT_FULL = 0, 1, 2, 3, 4


def _say(command: str, message: str) -> None:
    print(f"longparser {command}: {' '.join(message.split())}", file=sys.stderr)


def _producer(command: str) -> Any:
    """A producer for the process's settings, or None after printing why (bad settings)."""
    from config.settings import SettingsError, get_settings
    from tasks.client import Producer

    try:
        return Producer(get_settings())
    except SettingsError as exc:
        _say(command, f"error: settings (LONGPARSER_* environment / .env): {exc}")
        return None


class RetryNotice(logging.Filter):
    """ONE line as soon as Redis does not answer - where (passwords masked) and for how long the
    command retries - so an outage is never a silent wait; the last line (exit 3) comes when the
    window has passed.

    Two ways to notice: a PING of the store when the command starts (a publish to a broker that
    refuses connections first spends seconds inside kombu's own connection attempts, before the
    first retry), and the producer's per-retry warnings (``service.retry``), which this filter
    keeps out of the terminal once the line is out.
    """

    def __init__(self, command: str, producer: Any) -> None:
        super().__init__()
        self.command = command
        self.producer = producer
        self.said = False

    def say(self) -> None:
        if self.said:
            return
        from config.settings import masked_url

        self.said = True
        settings = self.producer.settings
        urls = sorted({masked_url(settings.broker_url), masked_url(settings.result_url)})
        _say(self.command, f"Redis at {', '.join(urls)} does not answer; retrying for up to "
                           f"{settings.submit_retry_window:g} s (LONGPARSER_SUBMIT_RETRY_WINDOW)")

    def probe(self) -> None:
        """PING the store once, on the producer's own connection; the line at once when it fails."""
        from service.retry import is_transient

        try:
            self.producer.store.client.ping()
        except Exception as exc:
            if not is_transient(exc):
                raise
            self.say()

    def filter(self, record: logging.LogRecord) -> bool:
        self.say()
        return False


@contextmanager
def retry_notice(command: str, producer: Any) -> Iterator[RetryNotice]:
    """:class:`RetryNotice` on the retry logger while a command runs."""
    retry_logger = service_retry.logger
    notice = RetryNotice(command, producer)
    retry_logger.addFilter(notice)
    try:
        yield notice
    finally:
        retry_logger.removeFilter(notice)


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _guarded(command: str, producer: Any, run: Any) -> int:
    """``run(notice)``, with an outage said at once (``notice.probe()`` before the first Redis
    call, :class:`RetryNotice`) and the producer's typed errors turned into one line and an
    exit status."""
    from tasks.errors import (
        BrokerUnavailable,
        JobFailed,
        JobNotFound,
        PayloadTooLarge,
        ResultTimeout,
        StoreFull,
    )

    try:
        with retry_notice(command, producer) as notice:
            return run(notice)
    except (InputError, PayloadTooLarge, RequestRefused) as exc:
        _say(command, f"error: {exc}")
        return EXIT_BAD_INPUT
    except BrokerUnavailable as exc:
        _say(command, f"error: {exc}")
        return EXIT_UNREACHABLE
    except StoreFull as exc:
        _say(command, f"error: {exc}")
        return EXIT_FULL
    except JobFailed as exc:
        _say(command, f"error: {exc}")
        return EXIT_NOT_READY
    except (ResultTimeout, JobNotFound) as exc:
        _say(command, str(exc))
        return EXIT_NOT_READY


def run_submit(args: argparse.Namespace) -> int:
    """Run ``longparser submit``; returns the exit status."""
    from cli.chunk import load_request, warn_if_empty

    producer = _producer("submit")
    if producer is None:
        return EXIT_BAD_INPUT

    def run(notice: RetryNotice) -> int:
        request = load_request(args)
        warn_if_empty("submit", request)
        notice.probe()
        handle = producer.submit(request)
        if not args.wait:
            _print_json(handle.as_dict())
            return EXIT_OK
        _say("submit", f"submitted {handle.document_id} (task {handle.task_id}) to queue {handle.queue}; "
                       "waiting")
        result = producer.get_result(handle, timeout=args.timeout)
        _print_json(result.model_dump(mode="json"))  # a ChunkResult: the schema's field order
        return EXIT_OK

    with producer:
        return _guarded("submit", producer, run)


def _describe_pending(view: dict[str, Any]) -> str:
    progress = view.get("progress") or {}
    stage = f", stage {progress['stage']}" if progress.get("stage") else ""
    return (f"document {view['document_id']} is not finished: state {view['state']}{stage} "
            f"(task {view['task_id']}, queue {view['queue']})")


def run_result(args: argparse.Namespace) -> int:
    """Run ``longparser result``; returns the exit status."""
    producer = _producer("result")
    if producer is None:
        return EXIT_BAD_INPUT

    def run(notice: RetryNotice) -> int:
        document_id = args.document_id
        notice.probe()
        view = producer.status(document_id)
        record = producer.fetch_record(document_id) if view["state"] == "SUCCESS" else None
        if view["state"] == "SUCCESS" and record is not None and args.diff:
            _print_json(record.get("diff"))
            if record.get("diff") is None:
                _say("result", f"document {document_id} has no earlier result to compare with (first stored, "
                               "or the earlier one expired): diff null")
            return EXIT_OK
        if view["state"] == "SUCCESS" and record is not None and record.get("result") is not None:
            # Through the schema: its field order, whatever order the record was stored in.
            _print_json(ChunkResult.model_validate(record["result"]).model_dump(mode="json"))
            return EXIT_OK
        if view["state"] == "FAILURE":
            error = view["error"] or {}
            _say("result", f"document {document_id} failed: {error.get('type')}: {error.get('message')}")
        elif view["state"] == "UNKNOWN":
            _say("result", f"no job and no stored result for document {document_id}")
        elif view["state"] == "SUCCESS":
            _say("result", f"document {document_id} finished but its result is gone (expired?)")
        else:
            _say("result", _describe_pending(view))
        return EXIT_NOT_READY

    with producer:
        return _guarded("result", producer, run)
