"""The TypedDict mirror of the Block contract (schemas.block_dicts) agrees with Block.

``chunk_blocks`` validates dict input with the mirror (longparser.intake) and falls back to
Block only when the mirror rejects a dict. The mirror must therefore never accept what Block
rejects, and must read the same values from what both accept; it should not reject what Block
accepts either (that would only cost speed, but it is a divergence all the same).
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from longparser import chunk_blocks
from longparser.intake import BlockIntake, fields_of_dict, fields_of_model
from schemas import BBox, Block, Confidence, Provenance, Table, TableCell
from schemas.block_dicts import (
    BBoxDict,
    BlockDict,
    ConfidenceDict,
    ProvenanceDict,
    TableCellDict,
    TableDict,
    validate_block_dict,
)

ABSENT = object()  # the key is left out

_JUNK = [None, 3, -1, 1.5, "x", "", "7", b"bytes", [], ["a"], {}, True,
         "lone \ud800", ["\udfff"], "astral \U0001d6fc"]


def _field(valid: list[Any], invalid: list[Any] = (), one_in: int = 10) -> st.SearchStrategy[Any]:  # type: ignore[assignment]
    """Mostly a valid value (ABSENT: key left out), sometimes (1 in ``one_in``) a field-specific
    invalid one or junk of any type, so that many generated blocks are valid as a whole and
    the values read from accepted blocks are compared too."""
    def pick(k: int) -> st.SearchStrategy[Any]:
        if k > 2:
            return st.sampled_from(valid)
        return st.sampled_from(list(invalid) if invalid and k == 1 else _JUNK)

    return st.integers(1, one_in + 1).flatmap(pick)


def _dict(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(fields).map(lambda d: {k: v for k, v in d.items() if v is not ABSENT})


_CELLS = _dict(
    row_index=_field([0, 1, 2, "1", 1.0], [ABSENT, -1, 1.5], one_in=40),
    r0=_field([ABSENT, ABSENT, 0, 3], [-2], one_in=40),
    col_index=_field([0, 1, 2], [ABSENT, -1], one_in=40),
    c0=_field([ABSENT, ABSENT, 0, 2], [-3], one_in=40),
    row_span=_field([ABSENT, ABSENT, 1, 2, "2"], [0, -1], one_in=40),
    rspan=_field([ABSENT, ABSENT, 1, 3], [0], one_in=40),
    col_span=_field([ABSENT, ABSENT, 1, 2], [0], one_in=40),
    cspan=_field([ABSENT, ABSENT, 1, 2], [0], one_in=40),
    text=_field([ABSENT, "Revenue", None, "a\nb", "", "12.5%"], [5, ["x"]], one_in=40),
    column_header=_field([ABSENT, True, False, 1, 0, "yes", "false"], ["maybe", 2], one_in=40),
)
_BBOX = _dict(**{k: _field([ABSENT, 0, 1.5, "2.5", 72], ["left"]) for k in ("x0", "y0", "x1", "y1")})
_PROVENANCE = _dict(
    source_file=_field([ABSENT, None, "report.pdf"], [3]),
    page_number=_field([ABSENT, 0, 1, 7, "2", 3.0], [-1, 2.5, None]),
    bbox=_field([ABSENT, None]) | _BBOX,
    extractor=_field([ABSENT, None, "docling"], [1]),
)
_CONFIDENCE = _dict(overall=_field([ABSENT, 0, 0.5, 1, "0.3", 1.0], [1.5, -0.1, None]))
_TABLE = _dict(
    n_rows=_field([ABSENT, 0, 2, "3"], [-1]),
    n_cols=_field([ABSENT, 0, 2], [-1]),
    cells=_field([ABSENT, []], ["x"]) | st.lists(_CELLS, min_size=1, max_size=4),
)
_BLOCKS = _dict(
    block_id=_field(["b1", "blk-7", "x"], [ABSENT, ""]),
    type=_field(["paragraph", "heading", "table", "footer", "list_item", "equation"], [ABSENT, "bogus"]),
    text=_field([ABSENT, "Some text.", None, "", "  ", "é x"], [["a"]]),
    order_index=_field([ABSENT, 0, 5, "3", -2], [1.5]),
    heading_level=_field([ABSENT, None, 2, "1"], ["one"]),
    indent_level=_field([ABSENT, 0, 1], [None]),
    hierarchy_path=_field([ABSENT, None, [], ["Intro"], ["A", "B"]], [[1], [None], "A"]),
    provenance=_field([ABSENT, None]) | _PROVENANCE,
    confidence=_field([ABSENT, None]) | _CONFIDENCE,
    flags=_field([ABSENT, {"ocr": True}, None, 3]),
    table=_field([ABSENT, None]) | _TABLE,
    extra=_field([ABSENT, "ignored"]),
)


def _comparable(fields: tuple[Any, ...]) -> tuple[Any, ...]:
    """A BlockFields tuple with its cells as plain tuples (dataclasses vs dicts), None texts as ""."""
    *head, cells = fields
    if cells is None:
        return (*head, None)
    read = (lambda c: tuple(c[n] for n in _CELL_NAMES)) if cells and type(cells[0]) is dict else (
        lambda c: tuple(getattr(c, n) for n in _CELL_NAMES))
    return (*head, [(*read(cell)[:4], read(cell)[4] or "", read(cell)[5]) for cell in cells])


_CELL_NAMES = ("row_index", "col_index", "row_span", "col_span", "text", "column_header")


@settings(max_examples=1500, deadline=None)
@given(_BLOCKS)
def test_mirror_accepts_exactly_what_block_accepts_and_reads_the_same_values(raw: dict[str, Any]) -> None:
    _assert_same_verdict_and_values(raw)


def _assert_same_verdict_and_values(raw: dict[str, Any]) -> None:
    try:
        model: Block | None = Block.model_validate(raw)
    except ValidationError:
        model = None
    try:
        mirrored: dict[str, Any] | None = validate_block_dict(raw)
    except ValidationError:
        mirrored = None
    assert (model is None) == (mirrored is None), (raw, model, mirrored)
    if model is not None and mirrored is not None:
        assert _comparable(fields_of_dict(mirrored)) == _comparable(fields_of_model(model))


_BASE: dict[str, Any] = {
    "block_id": "t1", "type": "table", "text": "Revenue by region", "order_index": 3, "heading_level": None,
    "indent_level": 0, "hierarchy_path": ["Results"],
    "provenance": {"source_file": "r.pdf", "page_number": 4, "bbox": {"x0": 1, "y0": 2, "x1": 3, "y1": 4},
                   "extractor": "docling"},
    "confidence": {"overall": 0.8}, "flags": None,
    "table": {"n_rows": 2, "n_cols": 2, "cells": [
        {"row_index": 0, "col_index": 0, "row_span": 1, "col_span": 2, "text": "Region",
         "column_header": True},
        {"r0": 1, "c0": 0, "rspan": 1, "cspan": 1, "text": "North"},
    ]},
}


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, (*path, key))]
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [leaf for i, item in enumerate(value) for leaf in _leaves(item, (*path, i))]
    return [path]


def _replaced(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(_BASE)
    *parents, last = path
    target = raw
    for key in parents:
        target = target[key]
    if value is ABSENT:
        del target[last]
    else:
        target[last] = value
    return raw


@pytest.mark.parametrize("path", _leaves(_BASE), ids=lambda path: ".".join(map(str, path)))
def test_every_field_alone_out_of_range_wrong_or_missing(path: tuple[Any, ...]) -> None:
    # Deterministic complement of the property above: each field of a valid table block set to
    # every kind of junk, an out-of-range number, or removed, one at a time.
    for value in [ABSENT, *_JUNK, -1, 0, 2, 1.5, -0.1, 1.01, "-1", "0.5", None, "x\udc80"]:
        _assert_same_verdict_and_values(_replaced(path, value))


_PAIRS: list[tuple[Any, Any]] = [
    (Block, BlockDict), (BBox, BBoxDict), (Provenance, ProvenanceDict), (Confidence, ConfidenceDict),
    (Table, TableDict), (TableCell, TableCellDict),
]


def _names(schema: Any) -> set[str]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return set(schema.model_fields)
    return {field.name for field in dataclasses.fields(schema)}


@pytest.mark.parametrize(("schema", "mirror"), _PAIRS, ids=[pair[0].__name__ for pair in _PAIRS])
def test_mirror_has_the_same_fields(schema: Any, mirror: Any) -> None:
    # A field added to the contract must be added to the mirror (its constraints could reject input).
    assert set(typing.get_type_hints(mirror)) == _names(schema)


def test_rejected_dict_raises_blocks_own_error() -> None:
    bad = {"block_id": "b1", "type": "table", "table": {"cells": [{"r0": 0, "c0": -1}]}}
    with pytest.raises(ValidationError) as raised:
        chunk_blocks([bad])
    assert raised.value.title == "Block"
    assert [error["loc"] for error in raised.value.errors()] == [("table", "cells", 0, "c0")]


def test_dict_input_is_read_through_the_mirror_and_models_as_they_are() -> None:
    raw = {"block_id": "b1", "type": "paragraph", "text": None, "provenance": None}
    model = Block.model_validate(raw)
    intake = BlockIntake([raw, model])
    assert list(intake) == [("b1", "paragraph", "", [], 1, 1.0, None)] * 2
    assert intake.count == 2


@pytest.mark.parametrize("field", ["block_id", "text", "hierarchy_path", "cell text"])
def test_lone_surrogates_are_refused_by_both_and_astral_text_is_kept(field: str) -> None:
    def block(value: str) -> dict[str, Any]:
        raw: dict[str, Any] = {"block_id": "b1", "type": "table", "text": "t", "hierarchy_path": ["A"],
                               "table": {"cells": [{"r0": 0, "c0": 0, "text": "c"}]}}
        if field == "hierarchy_path":
            raw[field] = ["A", value]
        elif field == "cell text":
            raw["table"]["cells"][0]["text"] = value
        else:
            raw[field] = value
        return raw

    for validate in (Block.model_validate, validate_block_dict):
        with pytest.raises(ValidationError) as raised:
            validate(block("bad \ud800"))
        assert [error["type"] for error in raised.value.errors()] == ["string_unicode"]
        validate(block("emoji \U0001f600 and \U0001d6fc"))  # valid astral characters pass
