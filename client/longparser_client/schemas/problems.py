"""A pydantic ``ValidationError`` as one line: the one formatter every layer uses.

pydantic's own text spans several lines and repeats the whole input. Here each error becomes
``location: message`` (``texts[3].prov[0].page_no: Input should be ...``; a cross-field check,
which has no location, by its message alone), problems are joined with ``; `` and at most
:data:`MAX_PROBLEMS` are named. A layer that knows more says it through ``describe``: the
settings name the environment variable, the request parser the block's id, the docling reader
picks the one telling error of a union. It lives in the wire contract because every layer may
import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import ValidationError

# A message quotes at most this much of a value, and names at most MAX_PROBLEMS problems: one
# readable line however broken the input (a labelled file passed as blocks has hundreds).
MAX_QUOTED_CHARS = 80
MAX_PROBLEMS = 5
# pydantic's messages for a failed validator start with these; the rest is our own text.
_PYDANTIC_PREFIXES = ("Value error, ", "Assertion failed, ")

ErrorDetails = Mapping[str, Any]
# pydantic's error for a default factory it did not call because a field it reads was invalid
_ECHOED_ERROR = "default_factory_not_called"


def quoted(value: object, limit: int = MAX_QUOTED_CHARS) -> str:
    """``repr(value)``, cut to ``limit`` characters with ``...`` when longer."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def join_problems(problems: list[str], limit: int = MAX_PROBLEMS) -> str:
    """Problems joined with ``; ``: the first ``limit``, then ``... and N more``."""
    shown = "; ".join(problems[:limit])
    return shown if len(problems) <= limit else f"{shown}; ... and {len(problems) - limit} more"


def error_location(loc: Iterable[Any]) -> str:
    """``texts[3].prov[0].page_no``: names joined by dots, list positions in brackets; ``""``
    for none (pydantic's ``__root__`` is no location)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part != "__root__":
            out += ("." if out else "") + str(part)
    return out


def error_message(error: ErrorDetails) -> str:
    """One error's message on one line, without pydantic's prefix for a failed validator."""
    message = str(error.get("msg", "invalid"))
    for prefix in _PYDANTIC_PREFIXES:
        message = message.removeprefix(prefix)
    return " ".join(message.split())


def located(where: str, message: str) -> str:
    """``where: message``, or the message alone when there is no location."""
    return f"{where}: {message}" if where else message


def describe_error(error: ErrorDetails) -> str:
    """One error as ``location: message``."""
    return located(error_location(error.get("loc", ())), error_message(error))


def describe_validation_error(exc: ValidationError,
                              describe: Callable[[ErrorDetails], str] = describe_error) -> str:
    """``exc`` in one line: each error by ``describe``, joined by :func:`join_problems`.

    A default computed from another field (min_tokens from max_tokens) is not computed when that
    field is invalid; pydantic reports this as an error of its own, which only echoes the first.
    """
    errors = [error for error in exc.errors(include_url=False) if error.get("type") != _ECHOED_ERROR]
    return join_problems([describe(error) for error in errors])
