"""Payload checks shared by the producer client and the task (light: no Celery, no engine).

The same size rule runs on both sides: the client refuses an oversized request before it
reaches the broker, and the task refuses one that was enqueued by other means before it parses
a single block.
"""

from __future__ import annotations

import json
from typing import Any

from schemas import ChunkRequest, InputError, parse_input
from schemas.config import is_path_like
from tasks.errors import InvalidPayload, PayloadTooLarge


def encoded_size(payload: Any) -> int:
    """Bytes of the payload as compact UTF-8 JSON (what the broker carries, near enough).

    ``surrogatepass``: a lone surrogate somewhere in the payload must not crash the size check;
    validation then names it (schemas.blocks.UnicodeText).
    """
    try:
        text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        return len(text.encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError) as exc:
        raise InvalidPayload(f"payload is not JSON-serialisable: {exc}") from None


def check_size(payload: Any, limit: int) -> int:
    """The payload's JSON size; raises :class:`PayloadTooLarge` above ``limit``."""
    return check_encoded_size(encoded_size(payload), limit)


def check_encoded_size(size: int, limit: int) -> int:
    """``size`` (bytes of compact JSON) checked against ``limit`` (:class:`PayloadTooLarge`)."""
    if size > limit:
        raise PayloadTooLarge(
            f"payload is {size} bytes of JSON, over the {limit}-byte limit "
            "(LONGPARSER_MAX_PAYLOAD_BYTES); split the document or raise the limit on producers and workers"
        )
    return size


def validate_payload(payload: Any) -> ChunkRequest:
    """The payload as a ChunkRequest; raises :class:`InvalidPayload` naming block and field."""
    if not isinstance(payload, dict):
        raise InvalidPayload(f"payload must be a JSON object (ChunkRequest), got {type(payload).__name__}")
    try:
        return parse_input(payload)
    except InputError as exc:
        raise InvalidPayload(str(exc)) from None


def refuse_tokenizer_paths(request: ChunkRequest) -> None:
    """Producer side: a tokenizer named by path would be refused by every worker (workers never
    open a path a request names), so it is refused before it is queued.

    Raises:
        InputError: ``token_counter`` or ``fit`` is path-like (one line).
    """
    for field, reference in (("token_counter", request.config.token_counter), ("fit", request.config.fit)):
        if reference is not None and is_path_like(reference):
            raise InputError(f"config.{field}: {reference!r} is a path: workers never open a path a request "
                             "names; name a tokenizer the fleet declares in LONGPARSER_TOKENIZERS")

