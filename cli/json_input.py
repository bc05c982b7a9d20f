"""What every command reads: INPUT (a file, or ``-`` for standard input) and ``-c`` CONFIG.

``-c`` is read the same way by ``chunk``, ``submit`` and ``lpeval``'s ``evaluate`` and ``evaluate-retrieval``:
a value that starts with ``{`` or ``[`` is inline JSON, anything else names a file; either way
it must hold one JSON object of ChunkingConfig fields. Every failure is an
:class:`~schemas.InputError` whose message is one line naming what was read.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from schemas import InputError
from schemas.inputs import json_type

STDIN = "-"


def decode_json(text: str, where: str) -> Any:
    """``text`` decoded; InputError naming ``where`` when it is empty or not JSON."""
    if not text.strip():
        raise InputError(f"{where}: is empty (expected JSON)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        position = f"line {exc.lineno}, column {exc.colno}"
        raise InputError(f"{where}: not valid JSON: {exc.msg} ({position})") from None


def read_text(path: str, what: str) -> str:
    """A UTF-8 file's text (``-``: standard input), every failure an InputError naming it."""
    if path == STDIN:
        try:
            return sys.stdin.read()
        except UnicodeDecodeError as exc:
            raise InputError(f"{what} (standard input): not UTF-8 text ({exc.reason} at byte {exc.start})"
                             ) from None
    where = f"{what} {path}"
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        raise InputError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{where}: is a directory") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{where}: cannot read: {exc.strerror or exc}") from None


def load_json(path: str, what: str) -> Any:
    """Read and decode a JSON file (``-``: standard input), every failure an InputError."""
    where = f"{what} (standard input)" if path == STDIN else f"{what} {path}"
    return decode_json(read_text(path, what), where)


def config_fields(value: str) -> dict[str, Any]:
    """``-c VALUE``: the ChunkingConfig fields of an inline JSON object or of a JSON file.

    Raises:
        InputError: the file cannot be read, the text is not JSON, or it is not an object.
    """
    if value.lstrip().startswith(("{", "[")):
        where = "config (inline JSON)"
        fields = decode_json(value, where)
    else:
        where = f"config {value}"
        fields = load_json(value, "config")
    if not isinstance(fields, dict):
        raise InputError(f"{where}: config must be a JSON object of ChunkingConfig fields, got "
                         f"{json_type(fields)}")
    return fields
