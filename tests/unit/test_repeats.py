"""The bound on repeated text (longparser/repeats.py, docs/chunking.md "Repeated text"): the rule,
and each kind of repetition written whole within the call's allowance and in its short form
beyond it; the crafted requests of bench/bench_amplification.py stay within a few times their
input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.bench_amplification import CASES, request_of
from longparser import chunk_blocks, chunk_request
from longparser import repeats as repeats_module
from longparser.errors import RequestRefused
from longparser.repeats import (
    CHUNK_CAP_FLOOR,
    DITTO,
    ELLIPSIS,
    REPEATS_PER_INPUT_CHAR,
    SHORT_FORM_CHARS,
    TEXT_CHARS_PER_CHUNK,
    RepeatAllowance,
    chunk_cap,
    short_form,
    short_path,
)
from worker.serialization import InlineRequest

LONG = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi"


def test_short_form_keeps_a_short_text_and_cuts_a_long_one_at_a_word():
    assert short_form("Name") == "Name"
    assert short_form("x" * SHORT_FORM_CHARS) == "x" * SHORT_FORM_CHARS
    cut = short_form(LONG)
    assert cut == "alpha beta gamma delta epsilon zeta eta theta…"
    assert len(cut) <= SHORT_FORM_CHARS and LONG.startswith(cut[: -len(ELLIPSIS)])


def test_short_form_of_a_text_without_spaces_is_cut_at_the_limit():
    assert short_form("w" * 5_000) == "w" * (SHORT_FORM_CHARS - 1) + ELLIPSIS


def test_short_path_keeps_the_innermost_title():
    assert short_path([]) == []
    assert short_path(["Results"]) == ["Results"]
    assert short_path(["Part I", "Results", LONG]) == [ELLIPSIS, short_form(LONG)]


def test_allowance_takes_what_it_holds_and_refuses_the_rest_untouched():
    allowance = RepeatAllowance(10)
    assert allowance.take(6) and allowance.left == 4
    assert not allowance.take(5) and allowance.left == 4
    allowance.grow(2)
    assert allowance.left == 4 + 2 * REPEATS_PER_INPUT_CHAR
    assert allowance.take(allowance.left) and allowance.left == 0


@pytest.fixture
def small_allowance(monkeypatch: pytest.MonkeyPatch) -> None:
    """An allowance of nothing, so a small request shows the short forms."""
    monkeypatch.setattr(repeats_module, "REPEAT_ALLOWANCE_CHARS", 0)
    monkeypatch.setattr(repeats_module, "REPEATS_PER_INPUT_CHAR", 0)


def _table(cells: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"block_id": "t1", "type": "table", "text": "", "table": {"cells": cells}, **extra}


def _headed(header: list[str], values: list[str]) -> dict[str, Any]:
    cells = [{"row_index": 0, "col_index": c, "text": text, "column_header": True}
             for c, text in enumerate(header)]
    rows = [{"row_index": r, "col_index": 0, "text": value} for r, value in enumerate(values, start=1)]
    return _table(cells + rows)


def _rows(result: Any) -> list[Any]:
    return [chunk for chunk in result.chunks if chunk.chunk_type == "table"]


def test_row_records_repeat_their_names_within_the_allowance():
    result = chunk_blocks([_headed(["Name", "Year"], ["Ada", "Alan"])], {"generate_schema_chunks": False})
    assert [c.text for c in _rows(result)] == ["Row 1: Name=Ada; Year=\nRow 2: Name=Alan; Year="]


def test_a_table_whose_row_records_the_allowance_cannot_hold_is_written_in_its_plain_form(small_allowance):
    names = [f"N{c} {LONG}" for c in range(3)]
    values = [f"v{r}" for r in range(40)]
    config = {"generate_schema_chunks": False, "table_rows_per_chunk": 10}
    result = chunk_blocks([_headed(names, values)], config)
    rows = _rows(result)
    assert {c.metadata["table_format"] for c in rows} == {"pipe"}
    assert rows[0].text.split("\n")[:2] == [" | ".join(names), "v0 |  | "]  # the first batch: whole names
    later = rows[1].text.split("\n")
    assert later[0] == short_form(" | ".join(names)) and later[1] == "v10 |  | "  # the header line's
    own = sum(map(len, names + values))
    assert sum(len(c.text) for c in rows) < 4 * own + 4 * SHORT_FORM_CHARS * len(rows)


def test_the_plain_form_writes_a_spanning_cell_once_then_a_ditto_mark(small_allowance):
    cells = [{"row_index": 0, "col_index": 0, "text": "Key", "column_header": True},
             {"row_index": 0, "col_index": 1, "text": "Value", "column_header": True},
             {"row_index": 1, "col_index": 0, "row_span": 30, "text": LONG}]
    cells += [{"row_index": r, "col_index": 1, "text": str(r)} for r in range(1, 31)]
    result = chunk_blocks([_table(cells)], {"generate_schema_chunks": False})
    lines = "\n".join(c.text for c in _rows(result)).split("\n")
    assert lines[1] == f"{LONG} | 1" and lines[2] == f"{DITTO} | 2" and lines[-1] == f"{DITTO} | 30"


def test_a_spanning_header_beyond_the_allowance_names_its_first_column_whole(small_allowance):
    group = f"G {LONG} {LONG}"
    cells = [{"row_index": 0, "col_index": 0, "col_span": 3, "text": group, "column_header": True}]
    cells += [{"row_index": 1, "col_index": c, "text": f"s{c}", "column_header": True} for c in range(3)]
    cells += [{"row_index": 2, "col_index": c, "text": str(c)} for c in range(3)]
    schema = chunk_blocks([_table(cells)]).chunks[0]
    assert [column["name"] for column in schema.metadata["columns"]] == [
        f"{group} / s0", f"{short_form(group)} / s1", f"{short_form(group)} / s2"]


def test_repeated_header_lines_and_titles_beyond_the_allowance_are_short(small_allowance):
    caption = {"block_id": "c1", "type": "caption", "text": f"Table 1: {LONG} {LONG}."}
    table = _headed([f"Name {LONG}"], [f"v{r}" for r in range(40)])
    config = {"table_titles": True, "table_chunk_format": "pipe", "generate_schema_chunks": False,
              "table_rows_per_chunk": 10}
    rows = _rows(chunk_blocks([caption, table], config))
    assert rows[0].text.startswith(f"{caption['text']}\nName {LONG}\n")
    for chunk in rows[1:]:
        assert chunk.text.startswith(f"{short_form(caption['text'])}\n{short_form('Name ' + LONG)}\nv")
        assert chunk.metadata["title_repeated"] is True


def _list(lead: str, items: int) -> list[dict[str, Any]]:
    return [{"block_id": "p1", "type": "paragraph", "text": lead},
            *[{"block_id": f"i{k}", "type": "list_item", "text": f"item {k}"} for k in range(items)]]


def test_a_list_lead_in_beyond_the_allowance_is_repeated_in_its_short_form(small_allowance):
    lead = f"{LONG} {LONG} as follows:"
    result = chunk_blocks(_list(lead, 30), {"max_tokens": 40, "min_tokens": 0})
    assert result.chunks[0].text.startswith(lead + "\n")
    assert len(result.chunks) > 2
    for chunk in result.chunks[1:]:
        assert chunk.text.startswith(short_form(lead) + "\n")
        assert chunk.metadata["lead_in_repeated"] is True and chunk.metadata["lead_in_block_id"] == "p1"


def test_a_list_lead_in_within_the_allowance_is_repeated_whole():
    lead = f"{LONG} as follows:"
    result = chunk_blocks(_list(lead, 30), {"max_tokens": 40, "min_tokens": 0})
    assert len(result.chunks) > 2 and all(c.text.startswith(lead + "\n") for c in result.chunks)


def test_section_titles_beyond_the_allowance_are_written_short(small_allowance):
    path = ["Part I", f"Results {LONG} {LONG}"]
    blocks = [{"block_id": f"b{k}", "type": "paragraph", "text": f"Paragraph {k} " + "word " * 30,
               "hierarchy_path": path} for k in range(20)]
    result = chunk_blocks(blocks, {"max_tokens": 40, "min_tokens": 0, "heading_context": True,
                                   "overlap_blocks": 0})
    assert len(result.chunks) > 2
    assert all(c.section_path == short_path(path) for c in result.chunks)
    assert all(c.embed_text == "\n".join([*short_path(path), c.text]) for c in result.chunks)


def test_section_titles_within_the_allowance_are_written_whole():
    path = ["Part I", f"Results {LONG}"]
    blocks = [{"block_id": "b1", "type": "paragraph", "text": "Text.", "hierarchy_path": path}]
    chunk = chunk_blocks(blocks, {"heading_context": True}).chunks[0]
    assert chunk.section_path == path and chunk.embed_text == "\n".join([*path, "Text."])


def _paragraphs(n: int, text: str) -> list[dict[str, Any]]:
    return [{"block_id": f"p{k}", "type": "paragraph", "text": text} for k in range(n)]


SMALL = {"max_tokens": 1, "min_tokens": 0, "overlap_blocks": 0}


def test_a_request_making_more_chunks_than_its_text_allows_is_refused_with_the_numbers():
    n = CHUNK_CAP_FLOOR + 100  # one character each: the cap is CHUNK_CAP_FLOOR + 10
    with pytest.raises(RequestRefused) as refused:
        chunk_blocks(_paragraphs(n, "x"), SMALL)
    assert str(refused.value) == (
        f"the request makes {n} chunks, over the cap of {chunk_cap(n)} for its {n} characters of text "
        f"({CHUNK_CAP_FLOOR} + one per {TEXT_CHARS_PER_CHUNK}): raise max_tokens or table_rows_per_chunk")


def test_the_chunk_cap_grows_with_the_text():
    assert chunk_cap(0) == CHUNK_CAP_FLOOR
    assert chunk_cap(10 * TEXT_CHARS_PER_CHUNK) == CHUNK_CAP_FLOOR + 10
    text = "y" * TEXT_CHARS_PER_CHUNK  # one token with the estimate: a chunk per paragraph
    n = CHUNK_CAP_FLOOR + 50
    assert len(chunk_blocks(_paragraphs(n, text), SMALL).chunks) == n


@pytest.mark.parametrize("case", [case for case in CASES if case != "many-chunks"])
def test_crafted_repetition_writes_a_few_times_its_request(case: str):
    """Each crafted request of the bench (up to 1 MB) writes at most its allowance (2,000,000 +
    4 per input character) and a short form per chunk, where before the fix it wrote 100 MB to
    several GB."""
    body = json.dumps(request_of(case), separators=(",", ":"))
    result = chunk_request(InlineRequest.model_validate_json(body))
    written = sum(len(c.text) + len(c.embed_text or "") + sum(map(len, c.section_path))
                  for c in result.chunks)
    bound = repeats_module.REPEAT_ALLOWANCE_CHARS + (1 + REPEATS_PER_INPUT_CHAR) * len(body)
    assert written <= bound + 4 * SHORT_FORM_CHARS * len(result.chunks), (case, written)


def test_a_request_of_one_chunk_per_tiny_block_is_refused():
    body = json.dumps(request_of("many-chunks"))
    with pytest.raises(RequestRefused, match="the request makes 20000 chunks, over the cap of 4100"):
        chunk_request(InlineRequest.model_validate_json(body))
