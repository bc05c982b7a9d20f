"""Payload checks shared by the producer client and the task (light: no Celery, no engine).

The same size rule runs on both sides: the client refuses an oversized request before it
reaches the broker, and the task refuses one that was enqueued by other means before it parses
a single block.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core
from pydantic import TypeAdapter

from longparser_client.errors import InvalidPayload, PayloadTooLarge
from longparser_client.schemas import Block, ChunkingConfig, ChunkRequest, InputError, parse_input
from longparser_client.schemas.config import fit_refusal, is_tokenizer_name, known_window
from longparser_client.schemas.errors import RequestRefused


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


MAX_PAYLOAD_SETTING = "LONGPARSER_MAX_PAYLOAD_BYTES"
MAX_INLINE_SETTING = "LONGPARSER_MAX_INLINE_BYTES"


def check_size(payload: Any, limit: int, setting: str = MAX_PAYLOAD_SETTING) -> int:
    """The payload's JSON size; raises :class:`PayloadTooLarge` above ``limit``."""
    return check_encoded_size(encoded_size(payload), limit, setting)


def check_encoded_size(size: int, limit: int, setting: str = MAX_PAYLOAD_SETTING) -> int:
    """``size`` (bytes of compact JSON) checked against ``limit`` (:class:`PayloadTooLarge`);
    ``setting`` names the variable that sets the limit."""
    if size > limit:
        advice = ("send it by reference (the Python producer does above LONGPARSER_REFERENCE_THRESHOLD_BYTES)"
                  if setting == MAX_INLINE_SETTING else
                  "split the document or raise the limit on producers and workers")
        raise PayloadTooLarge(f"payload is {size} bytes of JSON, over the {limit}-byte limit ({setting}); "
                              f"{advice}")
    return size


def inline_limit(max_payload_bytes: int, max_inline_bytes: int) -> tuple[int, str]:
    """The limit of a request carried inside its message, and the setting that sets it."""
    if max_inline_bytes < max_payload_bytes:
        return max_inline_bytes, MAX_INLINE_SETTING
    return max_payload_bytes, MAX_PAYLOAD_SETTING


def validate_payload(payload: Any) -> ChunkRequest:
    """The payload as a ChunkRequest; raises :class:`InvalidPayload` naming block and field."""
    if not isinstance(payload, dict):
        raise InvalidPayload(f"payload must be a JSON object (ChunkRequest), got {type(payload).__name__}")
    try:
        return parse_input(payload)
    except InputError as exc:
        raise InvalidPayload(str(exc)) from None


def split_request(data: bytes) -> tuple[ChunkRequest, list[Any]]:
    """A request's JSON as its envelope (a ChunkRequest without blocks: id, config) and its blocks
    as decoded dicts, which the engine validates one by one as it reads them.

    For a large request this is the lean form: a document's blocks as dicts take about a third
    of the memory of the same blocks as validated models, and the engine's validation of a
    block is the same rule either way (one definition: ``schemas.blocks``). A request of another
    shape (no ``blocks`` list) is validated whole, as :func:`validate_payload` does.

    Raises:
        InvalidPayload: not JSON, or an invalid envelope (the blocks are checked by the engine).
    """
    try:
        # pydantic-core's parser reads the bytes as they are (no decoded copy of the text first)
        # and shares repeated short strings (keys, types): less memory than json.loads.
        decoded = pydantic_core.from_json(data, cache_strings="all")
    except ValueError:
        try:  # what it refuses and json accepts (a lone surrogate escape) is judged by validation
            decoded = json.loads(data)
        except ValueError as exc:
            raise InvalidPayload(f"payload is not JSON: {exc}") from None
    if not isinstance(decoded, dict) or not isinstance(decoded.get("blocks"), list):
        request = validate_payload(decoded)
        return request.model_copy(update={"blocks": []}), list(request.blocks)
    blocks = decoded.pop("blocks")
    decoded["blocks"] = []
    return validate_payload(decoded), blocks


_encode_blocks = TypeAdapter(list[Block]).serializer.to_json


def request_json_pieces(request: ChunkRequest) -> tuple[bytes, bytes, bytes]:
    """The request as a producer sends it, in three pieces whose concatenation is its UTF-8
    JSON: the envelope up to the blocks, the blocks, the rest of the envelope.

    The config holds only the fields the caller set (``model_fields_set``): the engine alone
    expands the ``fit`` preset, and fields set explicitly win over it
    (:func:`schemas.config.fit_config`), so a config sent with every default filled in would
    leave the preset nothing to expand, and a worker would chunk another request than the
    library. A config field set to its default value is set all the same, and travels.

    The blocks leave out every field whose value is its default (``order_index`` 0, a table
    cell's spans of 1 and false header flags, null parts): validation fills each one in again,
    so the worker reads the same blocks, from JSON about a quarter smaller than the blocks
    dumped whole (a large request's bytes in Redis and what its worker decodes: the decoded
    dicts hold only the fields sent). The same bytes go inline or, for a large request, by
    reference (read as pieces: never joined into one buffer there).
    """
    unset = ChunkingConfig.model_fields.keys() - request.config.model_fields_set
    frame = ChunkRequest.__pydantic_serializer__.to_json(request.model_copy(update={"blocks": []}),
                                                         exclude={"config": unset})
    # the first '"blocks":[]' is the key: a quote inside a string is escaped
    head, tail = frame.split(b'"blocks":[]', 1)
    return head + b'"blocks":', _encode_blocks(request.blocks, exclude_defaults=True), tail


def request_json(request: ChunkRequest) -> bytes:
    """:func:`request_json_pieces`, joined."""
    return b"".join(request_json_pieces(request))


def refuse_tokenizer_paths(request: ChunkRequest) -> None:
    """Producer side: a tokenizer named by path would be refused by every worker (workers never
    open a path a request names), so it is refused before it is queued.

    Raises:
        InputError: ``token_counter`` or ``fit`` is path-like (one line).
    """
    for field, reference in (("token_counter", request.config.token_counter), ("fit", request.config.fit)):
        if reference is not None and not is_tokenizer_name(reference):  # not name-shaped: a path
            raise InputError(f"config.{field}: {reference!r} is a path: workers never open a path a request "
                             "names; name a tokenizer the fleet declares in LONGPARSER_TOKENIZERS")



def refuse_undoing_fit(request: ChunkRequest) -> None:
    """Producer side: a ``fit`` request whose explicit fields would undo the fit (another
    ``token_counter``, ``strict_max_tokens`` false, ``max_tokens`` above the pinned model's window
    for ``fit: "model"``) is refused before it is queued, as every worker would refuse it. A
    declared tokenizer's window is known to the workers only: they refuse a ``max_tokens`` above it.

    Raises:
        RequestRefused: the reason, in one line (the worker's own words).
    """
    refusal = fit_refusal(request.config, known_window(request.config.fit or ""))
    if refusal:
        raise RequestRefused(refusal)

