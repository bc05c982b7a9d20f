"""``longparser submit`` and ``longparser result``: the producer client on the command line.

* ``submit INPUT [-c CONFIG] [--wait] [--timeout S] [--semantic]`` - INPUT in any shape
  ``longparser chunk`` accepts; the document id comes from the input, else from the file name.
  Prints the job handle as JSON; with ``--wait`` prints the result JSON instead.
* ``result DOCUMENT_ID`` - prints the stored result JSON (with its ``chunks``).

Exit status: 0 success; 1 pending, failed, unknown, timed out or broker/store unreachable
(one line on stderr says which); 2 bad input or settings (one line, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import redis.exceptions
from kombu.exceptions import OperationalError
from kombu.utils.url import maybe_sanitize_url
from pydantic import ValidationError

from schemas import InputError

EXIT_OK, EXIT_NOT_READY, EXIT_BAD_INPUT = 0, 1, 2
UNREACHABLE = (OperationalError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


def _say(command: str, message: str) -> None:
    print(f"longparser {command}: {' '.join(message.split())}", file=sys.stderr)


def _settings(command: str) -> Any:
    from config.settings import get_settings

    try:
        return get_settings()
    except ValidationError as exc:
        _say(command, f"error: settings (LONGPARSER_* environment): {exc}")
        return None


def _unreachable(command: str, settings: Any, exc: Exception) -> int:
    _say(command, f"error: broker/store unreachable ({maybe_sanitize_url(settings.broker_url)}, "
                  f"{maybe_sanitize_url(settings.result_url)}): {exc}")
    return EXIT_NOT_READY


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _wait(handle: Any, timeout: float, settings: Any) -> int:
    from tasks.client import get_result
    from tasks.errors import JobFailed, JobNotFound, ResultTimeout

    try:
        result = get_result(handle, timeout=timeout, settings=settings)
    except JobFailed as exc:
        _say("submit", f"error: {exc}")
        return EXIT_NOT_READY
    except (ResultTimeout, JobNotFound) as exc:
        _say("submit", str(exc))
        return EXIT_NOT_READY
    _print_json(result.model_dump(mode="json"))
    return EXIT_OK


def run_submit(args: argparse.Namespace) -> int:
    """Run ``longparser submit``; returns the exit status."""
    from cli.chunk import load_request
    from tasks.client import submit
    from tasks.errors import PayloadTooLarge

    settings = _settings("submit")
    if settings is None:
        return EXIT_BAD_INPUT
    try:
        request = load_request(args)
        handle = submit(request, settings=settings)
    except (InputError, PayloadTooLarge) as exc:
        _say("submit", f"error: {exc}")
        return EXIT_BAD_INPUT
    except UNREACHABLE as exc:
        return _unreachable("submit", settings, exc)
    if not args.wait:
        _print_json(handle.as_dict())
        return EXIT_OK
    _say("submit", f"submitted {handle.document_id} (task {handle.task_id}) to queue {handle.queue}; waiting")
    try:
        return _wait(handle, args.timeout, settings)
    except UNREACHABLE as exc:
        return _unreachable("submit", settings, exc)


def _describe_pending(view: dict[str, Any]) -> str:
    progress = view.get("progress") or {}
    stage = f", stage {progress['stage']}" if progress.get("stage") else ""
    return (f"document {view['document_id']} is not finished: state {view['state']}{stage} "
            f"(task {view['task_id']}, queue {view['queue']})")


def run_result(args: argparse.Namespace) -> int:
    """Run ``longparser result``; returns the exit status."""
    from tasks.client import fetch_record, status

    settings = _settings("result")
    if settings is None:
        return EXIT_BAD_INPUT
    try:
        view = status(args.document_id, settings=settings)
        record = fetch_record(args.document_id, settings=settings) if view["state"] == "SUCCESS" else None
    except InputError as exc:
        _say("result", f"error: {exc}")
        return EXIT_BAD_INPUT
    except UNREACHABLE as exc:
        return _unreachable("result", settings, exc)
    if view["state"] == "SUCCESS" and record is not None and record.get("result") is not None:
        _print_json(record["result"])
        return EXIT_OK
    if view["state"] == "FAILURE":
        error = view["error"] or {}
        _say("result", f"document {args.document_id} failed: {error.get('type')}: {error.get('message')}")
    elif view["state"] == "UNKNOWN":
        _say("result", f"no job and no stored result for document {args.document_id}")
    elif view["state"] == "SUCCESS":
        _say("result", f"document {args.document_id} finished but its result is gone (expired?)")
    else:
        _say("result", _describe_pending(view))
    return EXIT_NOT_READY
