"""Turning user-supplied JSON into a validated ChunkRequest, with readable errors.

Three input shapes are accepted (CLI ``chunk``/``submit`` and the task share this code):

* a JSON list of blocks;
* a ChunkRequest object (``{"document_id", "blocks", "config"?, "schema_version"?}``);
* a LongParser Document dump (``{"metadata": {...}, "pages": [{"blocks": [...]}, ...]}``),
  whose blocks are flattened in page order.

Errors name the block (its index in reading order) and the field, e.g.
``block 3 (id 'b-3'): table.cells[0].row_index: Field required``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from schemas.requests import ChunkRequest


class InputError(ValueError):
    """The input is not a valid chunking request; the message is meant for a human."""


def _format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(root)"


def format_validation_error(exc: ValidationError, blocks: list[Any] | None = None) -> str:
    """One line per problem: ``block N (id 'X'): field.path: message``.

    ``blocks`` (the raw block list) lets the message quote the offending block's id.
    """
    lines = []
    for err in exc.errors(include_url=False):
        loc = tuple(err.get("loc", ()))
        msg = _unicode_message(err) if err.get("type") == "string_unicode" else err.get("msg", "invalid")
        if len(loc) >= 2 and loc[0] == "blocks" and isinstance(loc[1], int):
            index = loc[1]
            ident = ""
            if blocks is not None and 0 <= index < len(blocks) and isinstance(blocks[index], dict):
                block_id = blocks[index].get("block_id")
                if isinstance(block_id, str) and block_id:
                    ident = f" (id {block_id!r})"
            field = _format_loc(loc[2:]) if len(loc) > 2 else "(block)"
            lines.append(f"block {index}{ident}: {field}: {msg}")
        else:
            lines.append(f"{_format_loc(loc)}: {msg}")
    return "; ".join(lines)


def _unicode_message(err: Any) -> str:
    """Say which character made a string invalid Unicode (see schemas.blocks.UnicodeText)."""
    value = err.get("input")
    if isinstance(value, str):
        for position, char in enumerate(value):
            if "\ud800" <= char <= "\udfff":
                return (f"not valid Unicode: lone surrogate U+{ord(char):04X} at character {position} "
                        "(UTF-8 cannot encode it; the text extraction that produced it is broken)")
    return "not valid Unicode (UTF-8 cannot encode it)"


def _request_dict(data: Any, default_document_id: str | None) -> dict[str, Any]:
    if isinstance(data, list):
        return {"document_id": default_document_id, "blocks": data}
    if not isinstance(data, dict):
        raise InputError(
            f"expected a JSON list of blocks, a ChunkRequest object or a LongParser document, "
            f"got {type(data).__name__}"
        )
    if "pages" in data and "blocks" not in data:
        pages = data["pages"]
        if not isinstance(pages, list):
            raise InputError("document dump: 'pages' must be a list")
        blocks: list[Any] = []
        for number, page in enumerate(pages):
            if not isinstance(page, dict) or not isinstance(page.get("blocks", []), list):
                raise InputError(f"document dump: page {number} must be an object with a 'blocks' list")
            blocks.extend(page.get("blocks", []))
        metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        document_id = data.get("document_id") or metadata.get("document_id") or default_document_id
        return {"document_id": document_id, "blocks": blocks}
    if "blocks" in data:
        request = dict(data)
        if not request.get("document_id"):
            request["document_id"] = default_document_id
        return request
    raise InputError(
        "expected a JSON list of blocks, an object with 'blocks' (ChunkRequest) or "
        "'pages' (LongParser document)"
    )


def parse_input(
    data: Any,
    *,
    default_document_id: str | None = None,
    config_overrides: dict[str, Any] | None = None,
) -> ChunkRequest:
    """Validate any accepted input shape into a ChunkRequest.

    Args:
        data: decoded JSON (list or object).
        default_document_id: used when the input carries no document id (e.g. derived from a
            file name); a missing id with no default is an error.
        config_overrides: config fields that win over the input's own (``--semantic``,
            ``-c CONFIG.json``).

    Raises:
        InputError: with a message naming the block index and field.
    """
    request = _request_dict(data, default_document_id)
    if not request.get("document_id"):
        raise InputError("document_id: missing (give one in the request or name the input file)")
    if config_overrides:
        base = request.get("config") or {}
        if not isinstance(base, dict):
            raise InputError("config: must be an object")
        request["config"] = {**base, **config_overrides}
    try:
        return ChunkRequest.model_validate(request)
    except ValidationError as exc:
        raw_blocks = request.get("blocks") if isinstance(request.get("blocks"), list) else None
        raise InputError(format_validation_error(exc, raw_blocks)) from None
