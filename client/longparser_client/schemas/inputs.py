"""Turning user-supplied input into a validated ChunkRequest, with readable one-line errors.

Accepted input shapes (the CLI's ``chunk``/``submit``, the producer client and the task share
this code):

* a JSON list of blocks;
* a ChunkRequest object (``{"document_id", "blocks", "config"?, "schema_version"?}``);
* a LongParser Document dump (``{"metadata": {...}, "pages": [{"blocks": [...]}, ...]}``),
  whose blocks are flattened in page order;
* a docling ``DoclingDocument`` (its JSON object, or the model itself), converted to blocks by
  a converter the caller passes in (``longparser_client.converters.docling.blocks_from_docling``):
  the conversion needs docling-core and belongs to the producer side, while this module is the
  wire contract and imports neither. The document id is the DoclingDocument's ``name`` when it has one of
  its own (docling's default name ``"Document"`` counts as none), else the caller's default;
* a Markdown or plain-text document (a ``str``), converted by a converter the caller passes in
  the same way (``longparser_client.converters.markdown.blocks_from_markdown`` or
  ``blocks_from_text``); a string carries no id, so the caller's default is its id.

Errors name the block (its index in reading order) and the field, e.g.
``block 3 (id 'b-3'): table.cells[0].row_index: Field required``, or the config field, e.g.
``config.max_token: unknown field, did you mean 'max_tokens'?``; never pydantic's own
prefixes ("Value error, ...") or its multi-line layout.
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from longparser_client.schemas.blocks import Block
from longparser_client.schemas.config import ChunkingConfig
from longparser_client.schemas.problems import (
    MAX_PROBLEMS,
    MAX_QUOTED_CHARS,
    describe_validation_error,
    error_location,
    error_message,
    join_problems,
    quoted,
)
from longparser_client.schemas.requests import ChunkRequest

DOCLING_SCHEMA_NAME = "DoclingDocument"
# The name docling gives every document it builds without one (a DocTags conversion, for
# instance): it names no document, so it is not used as an id - every such document would
# share it, and each result would replace the previous one in the store.
DOCLING_DEFAULT_NAME = "Document"
# What a producer installs for each converter: extras of the producer distribution (client/), which
# the worker's distribution installs too.
DOCLING_INSTALL_HINT = "pip install 'longparser-client[docling]'"
MARKDOWN_INSTALL_HINT = "pip install 'longparser-client[markdown]'"
# A DoclingDocument -> block dicts (wire shape, reading order). It reports a document it cannot
# read with a ValueError (one line).
DoclingConverter = Callable[[Any], list[Any]]
DOCLING_CONVERTER = f"longparser_client.converters.docling.blocks_from_docling; {DOCLING_INSTALL_HINT}"
# A Markdown or plain-text document -> block dicts (wire shape, reading order).
TextConverter = Callable[[str], list[Any]]
TEXT_CONVERTERS = (f"longparser_client.converters.markdown.blocks_from_markdown ({MARKDOWN_INSTALL_HINT}) "
                   "or blocks_from_text")

_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9._:@-]+")
_ID_MAX_LEN = 200  # DOCUMENT_ID_PATTERN: 1 leading alphanumeric or "_" + up to 199 more
_BOUND_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})
# Config values are taken as their JSON type (ChunkingConfig is strict): what each type error means.
_TYPE_ERRORS = {"int_type": "an integer", "float_type": "a number", "bool_type": "true or false"}


class InputError(ValueError):
    """The input is not a valid chunking request; the message is one line meant for a human."""


# Latin letters NFKD does not decompose into a base letter and marks.
_LATIN_LETTERS = str.maketrans({"Æ": "AE", "æ": "ae", "Ø": "O", "ø": "o", "ß": "ss", "Œ": "OE", "œ": "oe",
                                "Ł": "L", "ł": "l", "Đ": "D", "đ": "d", "Þ": "Th", "þ": "th", "ı": "i"})


def _ascii(name: str) -> str:
    """Latin letters as ASCII: accents dropped (NFKD, then no combining marks), ``Ü`` -> ``U``,
    ``ø`` -> ``o``, ``ß`` -> ``ss``; other scripts are left for the caller to replace."""
    decomposed = unicodedata.normalize("NFKD", name.translate(_LATIN_LETTERS))
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def document_id_from_name(name: str) -> str | None:
    """``name`` fitted to ``schemas.requests.DOCUMENT_ID_PATTERN``, or None when nothing is left.

    Accented letters lose their accents (``Bericht_Ü`` -> ``Bericht_U``), runs of other unsafe
    characters become ``-``, leading characters the pattern does not allow first (anything but
    a letter, digit or ``_``) are dropped and the id is cut to 200 characters:
    ``"Q3 report (final)"`` -> ``"Q3-report-final-"``; ``"_report"`` stays ``"_report"``, so
    it never becomes the id of ``report``.
    """
    cleaned = _UNSAFE_ID_CHARS.sub("-", _ascii(name))
    cleaned = re.sub(r"^[^A-Za-z0-9_]+", "", cleaned)[:_ID_MAX_LEN]
    return cleaned or None


def is_docling_input(data: Any) -> bool:
    """A DoclingDocument: its JSON object or the model (both carry ``schema_name``)."""
    if isinstance(data, dict):
        return data.get("schema_name") == DOCLING_SCHEMA_NAME
    return getattr(data, "schema_name", None) == DOCLING_SCHEMA_NAME


# --- messages ------------------------------------------------------------------------------


def _format_loc(loc: tuple[Any, ...]) -> str:
    return error_location(loc) or "(root)"


def _unknown_config_field(name: str) -> str:
    """``unknown field, did you mean 'max_tokens'?`` (or the list of fields when nothing is close)."""
    fields = list(ChunkingConfig.model_fields)
    wanted = name.lower().replace("-", "_")
    close = difflib.get_close_matches(wanted, fields, n=1, cutoff=0.6)
    if not close and len(wanted) >= 4:  # a part of one field's name: "strict", "counter"
        close = [field for field in fields if wanted in field]
    if len(close) == 1:
        return f"unknown field, did you mean {close[0]!r}?"
    return f"unknown field (ChunkingConfig fields: {', '.join(fields)})"


def _json_value(value: Any) -> str:
    """How a value reads in JSON (``true``, ``"256"``), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return quoted(value)
    return text if len(text) <= MAX_QUOTED_CHARS else f"{text[:MAX_QUOTED_CHARS - 3]}..."


def _message(err: Any, loc: tuple[Any, ...]) -> str:
    kind = err.get("type")
    if kind == "string_unicode":
        return _unicode_message(err)
    if loc and loc[0] == "config":
        if kind == "extra_forbidden" and len(loc) == 2:
            return _unknown_config_field(str(loc[1]))
        if kind in _BOUND_ERRORS:
            return f"{err.get('msg', 'invalid')} (got {quoted(err.get('input'))})"
        if kind in _TYPE_ERRORS:
            value = err.get("input")
            return (f"must be {_TYPE_ERRORS[kind]}, got {_json_value(value)} ({json_type(value)}); "
                    "config values are never converted")
    return error_message(err)


def _block_name(index: int, block: Any) -> str:
    """``block 3 (id 'b-3')``, or ``block 3`` when the raw block has no usable id."""
    block_id = block.get("block_id") if isinstance(block, dict) else getattr(block, "block_id", None)
    if isinstance(block_id, str) and block_id:
        return f"block {index} (id {quoted(block_id)})"
    return f"block {index}"


def _missing_text(block: Any) -> str:
    """``field required (it has 'content')``: a block without ``text`` most often carries it
    under another name, so the message names the block's other keys holding a string (those that
    look like text), else all its keys."""
    keys = list(block) if isinstance(block, dict) else []
    texts = [key for key in keys if key not in Block.model_fields and isinstance(block[key], str)]
    named = ", ".join(map(quoted, (texts or keys)[:MAX_PROBLEMS]))
    more = len(texts or keys) - MAX_PROBLEMS
    named += f" and {more} more" if more > 0 else ""
    return f"field required (it has {named})" if texts else f"field required (its keys: {named or 'none'})"


def _problem(err: Any, blocks: Callable[[int], Any]) -> str:
    loc = tuple(err.get("loc", ()))
    msg = " ".join(_message(err, loc).split())
    if len(loc) >= 2 and loc[0] == "blocks" and isinstance(loc[1], int):
        field = _format_loc(loc[2:]) if len(loc) > 2 else "(block)"
        if loc[2:] == ("text",) and err.get("type") == "missing":
            msg = _missing_text(blocks(loc[1]))
        return f"{_block_name(loc[1], blocks(loc[1]))}: {field}: {msg}"
    return f"{_format_loc(loc)}: {msg}"


def format_validation_error(exc: ValidationError, blocks: list[Any] | None = None) -> str:
    """One line: ``block N (id 'X'): field.path: message``, problems joined by ``; ``.

    ``blocks`` (the raw block list) lets the message quote the offending block's id. Config
    errors name the config field, suggest the closest field for an unknown key and quote the
    value that broke a bound; a cross-field config check is reported by its own message. At
    most :data:`schemas.problems.MAX_PROBLEMS` problems are named, then ``... and N more``.
    """

    def block_at(index: int) -> Any:
        return blocks[index] if blocks is not None and 0 <= index < len(blocks) else None

    return describe_validation_error(exc, lambda err: _problem(err, block_at))


def describe_block_error(exc: ValidationError, index: int, block: Any) -> str:
    """:func:`format_validation_error` of one block validated alone (``Block.model_validate``),
    named by its ``index`` in the caller's sequence."""
    errors = [{**err, "loc": ("blocks", index, *err.get("loc", ()))} for err in exc.errors(include_url=False)]
    return join_problems([_problem(err, lambda _: block) for err in errors])


def not_a_block_sequence(blocks: Any) -> str | None:
    """What to say when ``blocks`` is a whole input rather than a sequence of blocks, else None.

    A LongParser dump, a ChunkRequest or a DoclingDocument passed where blocks are expected
    would otherwise be iterated key by key (``'metadata'`` is not a block).
    """
    if not isinstance(blocks, Mapping | str | bytes) and not is_docling_input(blocks):
        return None
    hint = "schemas.parse_input(data) validates any input shape into a ChunkRequest: chunk its .blocks"
    if is_docling_input(blocks):
        return ("expected a sequence of blocks, got a DoclingDocument: convert it with "
                "schemas.parse_input(document, docling=longparser_client.converters.docling."
                "blocks_from_docling), then chunk its .blocks")
    if isinstance(blocks, Mapping) and "pages" in blocks:
        return ("expected a sequence of blocks, got a LongParser document dump (an object with 'pages'); "
                f"{hint}")
    if isinstance(blocks, Mapping) and "blocks" in blocks:
        return (f"expected a sequence of blocks, got a ChunkRequest (an object with 'blocks'); {hint}, "
                "or pass it to longparser.chunk_request")
    return f"expected a sequence of blocks (Block models or dicts), got {json_type(blocks)}; {hint}"


def _unicode_message(err: Any) -> str:
    """Say which character made a string invalid Unicode (see schemas.blocks.UnicodeText)."""
    value = err.get("input")
    if isinstance(value, str):
        for position, char in enumerate(value):
            if "\ud800" <= char <= "\udfff":
                return (f"not valid Unicode: lone surrogate U+{ord(char):04X} at character {position} "
                        "(UTF-8 cannot encode it; the text extraction that produced it is broken)")
    return "not valid Unicode (UTF-8 cannot encode it)"


# --- shapes --------------------------------------------------------------------------------


def _page_number(page: Any, index: int) -> Any:
    """How to name a page in a message: the dump's own ``page_number``, else its 1-based position."""
    if isinstance(page, dict):
        number = page.get("page_number")
        if isinstance(number, int) and not isinstance(number, bool):
            return number
    return index + 1


def _on_page(block: Any, page_number: int) -> Any:
    """A dump block as listed under its page: without a page in its provenance, it is on that page."""
    if not isinstance(block, dict):
        return block  # validation names it
    provenance = block.get("provenance")
    if provenance is None:
        return {**block, "provenance": {"page_number": page_number}}
    if isinstance(provenance, dict) and provenance.get("page_number") is None:
        return {**block, "provenance": {**provenance, "page_number": page_number}}
    return block


def _dump_blocks(pages: Any) -> list[Any]:
    """The blocks of a LongParser dump in page order; a block whose provenance names no page is
    on the page it is listed under (the page's ``page_number``, else its 1-based position)."""
    if not isinstance(pages, list):
        raise InputError("document dump: 'pages' must be a list")
    blocks: list[Any] = []
    for index, page in enumerate(pages):
        page_blocks = page.get("blocks", []) if isinstance(page, dict) else None
        if not isinstance(page_blocks, list):
            what = "not an object" if not isinstance(page, dict) else f"'blocks' is {json_type(page_blocks)}"
            raise InputError(
                f"document dump: page {_page_number(page, index)} must be an object with a 'blocks' "
                f"list ({what})"
            )
        number = _page_number(page, index)
        blocks.extend(_on_page(block, number) for block in page_blocks)
    return blocks


def json_type(value: Any) -> str:
    """What a decoded JSON value is, for a message: ``a list``, ``a boolean``, ``null``."""
    names = {type(None): "null", bool: "a boolean", str: "a string", dict: "an object", list: "a list"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else type(value).__name__)


def _converter_missing(what: str, converters: str) -> InputError:
    """The refusal of an input that only a converter the caller did not pass can read."""
    return InputError(f"{what} must be converted to blocks on the producer side: pass the converter "
                      f"({converters})")


def _docling_request(
    data: Any, default_document_id: str | None, docling: DoclingConverter | None
) -> dict[str, Any]:
    if docling is None:
        raise _converter_missing("a DoclingDocument", DOCLING_CONVERTER)
    name = data.get("name") if isinstance(data, dict) else getattr(data, "name", None)
    own_name = isinstance(name, str) and name.strip() != DOCLING_DEFAULT_NAME
    document_id = (document_id_from_name(name) if own_name else None) or default_document_id
    if not document_id:  # said before the conversion, which is the costly part
        raise InputError(
            "document_id: missing: the DoclingDocument has no name of its own (docling's default "
            f"{DOCLING_DEFAULT_NAME!r} counts as none); set its name to the document's id"
        )
    try:
        blocks = docling(data)
    except InputError:
        raise
    except ValueError as exc:  # the converter's one-line "cannot read this document"
        raise InputError(" ".join(str(exc).split())) from None
    return {"document_id": document_id, "blocks": blocks}


def _text_request(
    data: str, default_document_id: str | None, text_converter: TextConverter | None
) -> dict[str, Any]:
    if text_converter is None:
        raise _converter_missing("a Markdown or plain-text document (a string)", TEXT_CONVERTERS)
    if not default_document_id:
        raise InputError("document_id: missing: a Markdown or plain-text document carries none; give one")
    return {"document_id": default_document_id, "blocks": text_converter(data)}


def _request_dict(
    data: Any, default_document_id: str | None, docling: DoclingConverter | None,
    text_converter: TextConverter | None = None,
) -> dict[str, Any]:
    if is_docling_input(data):
        return _docling_request(data, default_document_id, docling)
    if isinstance(data, str):
        return _text_request(data, default_document_id, text_converter)
    if isinstance(data, list):
        return {"document_id": default_document_id, "blocks": data}
    if not isinstance(data, dict):
        raise InputError(
            f"expected a JSON list of blocks, a ChunkRequest object, a LongParser document, a "
            f"DoclingDocument or a Markdown or text string, got {type(data).__name__}"
        )
    if "pages" in data and "blocks" not in data:
        blocks = _dump_blocks(data["pages"])
        metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        document_id = data.get("document_id") or metadata.get("document_id") or default_document_id
        return {"document_id": document_id, "blocks": blocks}
    if "blocks" in data:
        request = dict(data)
        if not request.get("document_id"):
            request["document_id"] = default_document_id
        return request
    raise InputError(
        "expected a JSON list of blocks, an object with 'blocks' (ChunkRequest), 'pages' "
        "(LongParser document) or 'schema_name': 'DoclingDocument'"
    )


def parse_input(
    data: Any,
    *,
    default_document_id: str | None = None,
    document_id: str | None = None,
    config_overrides: Mapping[str, Any] | None = None,
    docling: DoclingConverter | None = None,
    text_converter: TextConverter | None = None,
) -> ChunkRequest:
    """Validate any accepted input shape into a ChunkRequest.

    Args:
        data: decoded JSON (list or object), a DoclingDocument model, or a Markdown or text
            document (a ``str``, converted by ``text_converter``).
        default_document_id: used when the input carries no document id (e.g. derived from a
            file name); a missing id with no default is an error.
        document_id: the id to use whatever the input carries (``--document-id``).
        config_overrides: config fields that win over the input's own (``--semantic``,
            ``-c CONFIG.json``, ``--max-tokens``).
        docling: converts a DoclingDocument to block dicts
            (``longparser_client.converters.docling.blocks_from_docling``); without it a
            DoclingDocument is refused with a message saying so.
        text_converter: converts a string (Markdown or plain text) to block dicts
            (``longparser_client.converters.markdown.blocks_from_markdown`` /
            ``blocks_from_text``); without it a string is refused with a message saying so.

    Raises:
        InputError: with a one-line message naming the block index and field.
    """
    request = _request_dict(data, document_id or default_document_id, docling, text_converter)
    if document_id:
        request["document_id"] = document_id
    if not request.get("document_id"):
        raise InputError("document_id: missing (give one in the request; on the command line, --document-id "
                         "or the input file's name)")
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


def parse_config(fields: Mapping[str, Any]) -> ChunkingConfig:
    """Validate ChunkingConfig fields alone, with the same one-line messages (``config.FIELD: ...``).

    Raises:
        InputError: an unknown field (with a suggestion), a value out of its bounds, or a
            cross-field conflict.
    """
    try:
        return ChunkRequest.model_validate({"document_id": "config", "config": dict(fields)}).config
    except ValidationError as exc:
        raise InputError(format_validation_error(exc)) from None
