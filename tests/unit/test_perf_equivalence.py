"""The engine's fast paths give exactly what the straightforward computations give.

Each optimisation in the engine replaces a simple computation by a cheaper one that must be
equal on every input; these tests pin that equality (the simple form is the reference):

* word counts without splitting (``word_count``, ``line_word_counts``) == ``len(text.split())``;
* the ASCII pre-filter of equation detection never changes ``looks_like_equation``;
* chunk token counts summed from per-block word counts == the DEC-04 estimate of the final text;
* memoized dictionary coverage (``ChunkScorer``) == a fresh ``score_chunk`` and == the share of
  ``alphabetic_tokens`` found in the word list;
* one ``str.format`` template per table row == the key=value rendering, braces included;
* a column's type guessed on its distinct digit shapes == every value matched against the
  type patterns; the DEC-04 estimate without ``max`` == ``max(1, int(words * 1.33))``;
  quality rounding that skips integral values == ``round(x, 4)``;
* the dense-table fast path of ``build_grid`` (C-level passes over row-major cells without
  spans) == the general cell-by-cell fill, for any cell list (spans, gaps, any order, headers),
  on TableCell dataclasses and on validated cell dicts (None texts included) alike;
* the chunks built by the engine validate against the output schema, on a 1k benchmark stream.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

import longparser.equations as equations
import longparser.tables as tables
from longparser import chunk_blocks
from longparser.equations import EQUATION_THRESHOLD, equation_score, looks_like_equation
from longparser.quality import ChunkScorer, _rounded, alphabetic_tokens, score_chunk
from longparser.resources import Resources
from longparser.table_chunks import render_rows
from longparser.tables import _DATE, _NUMBER, Grid, build_grid, guess_type
from longparser.tokens import estimate_tokens, line_word_counts, tokens_for_words, word_count
from schemas import Chunk, TableCell
from schemas.block_dicts import TableCellDict

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"
_CELL_DICTS = TypeAdapter(list[TableCellDict])
WHITESPACE = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2028\u3000"
# Letters, digits, every character an equation gate tests, Greek, operators, lead-in words.
EQUATION_ALPHABET = "abxyzEfPn01239 _^=+*<>\\()|,.:-−±≤∑σαβ√"
LEAD_INS = [None, "", "The loss is defined as:", "where x denotes", "Plain prose.", "given by", "x_i"]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(WHITESPACE + "ab.é=") | st.characters(), max_size=40))
def test_word_count_is_the_split_count(text: str) -> None:
    assert word_count(text) == len(text.split())
    assert estimate_tokens(text) == max(1, int(len(text.split()) * 1.33))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(WHITESPACE + "ab;=é"), max_size=12), max_size=6))
def test_line_word_counts_are_the_split_counts(lines: list[str]) -> None:
    assert line_word_counts(lines) == [len(line.split()) for line in lines]


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=st.sampled_from(EQUATION_ALPHABET), max_size=90), st.sampled_from(LEAD_INS))
def test_looks_like_equation_agrees_with_the_score(text: str, previous: str | None) -> None:
    assert looks_like_equation(text, previous) is (equation_score(text, previous) >= EQUATION_THRESHOLD)


@pytest.mark.parametrize(
    ("text", "previous", "score"),
    [
        ("Results for d1, d2 and d3 are shown in Table 2.", None, 0.5),  # plain ASCII: decided early
        ("Its value d1 is defined as follows", None, 1.5),  # digit + own phrase: still under 2.0
        ("Its value is shown below", "The rate is given by:", 1.5),  # lead-in alone
        ("Its value d1 is defined as follows", "The rate is given by:", 3.0),  # lead-in + d1 + phrase
    ],
)
def test_plain_ascii_prefilter_cases(text: str, previous: str | None, score: float) -> None:
    assert equation_score(text, previous) == pytest.approx(score)
    assert looks_like_equation(text, previous) is (score >= EQUATION_THRESHOLD)


def _bench_blocks(n: int) -> list[dict]:
    sys.path.insert(0, str(BENCH_DIR))
    try:
        import gen_blocks
    finally:
        sys.path.remove(str(BENCH_DIR))
    return gen_blocks.generate(n)


@pytest.fixture(scope="module")
def stream_1k() -> list[dict]:
    return _bench_blocks(1000)


@pytest.mark.parametrize(
    "config",
    [
        None,
        {"overlap_blocks": 2, "max_tokens": 200, "min_tokens": 50, "table_chunk_format": "pipe"},
        {"overlap_blocks": 0, "min_tokens": 0, "wide_table_col_threshold": 8,
         "exclude_headers_footers": False},
    ],
)
def test_summed_token_counts_equal_the_estimate_of_the_text(
    stream_1k: list[dict], config: dict | None
) -> None:
    result = chunk_blocks(stream_1k, config)
    assert result.chunks
    assert [c.token_count for c in result.chunks] == [estimate_tokens(c.text) for c in result.chunks]


def test_chunks_validate_against_the_output_schema(stream_1k: list[dict], fake_resources: Resources) -> None:
    result = chunk_blocks(stream_1k, None, fake_resources, document_id="doc")
    for chunk in result.chunks:
        assert Chunk.model_validate(chunk.model_dump()) == chunk


def test_memoized_coverage_equals_fresh_scores(stream_1k: list[dict], fake_word_list: frozenset[str]) -> None:
    texts = [chunk.text for chunk in chunk_blocks(stream_1k).chunks]
    texts += ["Ünïcode wörds ΑΣ σοφός don't x_i", "a b c", "", "Σίσυφος ΟΔΥΣΣΕΥΣ"]
    texts.append("caf\u0065\u0301 na\u00efve")  # decomposed accent: the mark stays in the word
    words = fake_word_list | {"wörds", "σοφός", "don", "café"}
    scorer = ChunkScorer(words)
    sources = [(0.9, 10)]
    for text in texts:
        memoized = scorer.score(text, sources)
        assert memoized == score_chunk(text, sources, word_list=words)
        tokens = alphabetic_tokens(text)
        expected = sum(token in words for token in tokens) / len(tokens) if tokens else None
        coverage = memoized[1]["dictionary_coverage"]
        assert coverage == (None if expected is None else round(expected, 4))


def test_row_template_renders_braces_verbatim() -> None:
    grid = Grid(["a{b}", "{0}", "c}}{"], [["x{1}", "", "{}"], ["1", "2", "3"]])
    assert render_rows(grid, [0, 1, 2], "row_record", 1, grid.rows) == [
        "Row 1: a{b}=x{1}; {0}=; c}}{={}",
        "Row 2: a{b}=1; {0}=2; c}}{=3",
    ]
    assert render_rows(grid, [1], "row_record", 4, grid.rows) == ["Row 4: {0}=", "Row 5: {0}=2"]
    assert render_rows(grid, [0, 2], "pipe", 1, grid.rows) == ["x{1} | {}", "1 | 3"]


# Digits (ASCII and not: the type patterns use \\d), every character the date/number patterns name.
TYPE_ALPHABET = "0123456789٣-/.:,+−$€£% TZxa"


def _reference_type(values: list[str]) -> str:
    """The type guess in its plain form: every value fully matched against one value pattern."""
    if values and all(re.fullmatch(_DATE, value) for value in values):
        return "date"
    if values and all(re.fullmatch(_NUMBER, value) for value in values):
        return "number"
    return "string"


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(TYPE_ALPHABET), min_size=1, max_size=14), max_size=6))
def test_type_guess_on_shapes_equals_matching_every_value(values: list[str]) -> None:
    assert guess_type(values) == _reference_type(values)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["2024-05-01", "1999-12-31T23:59:59Z", "01.05.24"], "date"),
        (["58.6%", "$591,024", "-1,769.5", "٣٣"], "number"),
        (["58.6%", "n/a"], "string"),
        (["valuation", "12"], "string"),
        ([], "string"),
    ],
)
def test_type_guess_cases(values: list[str], expected: str) -> None:
    assert guess_type(values) == _reference_type(values) == expected


def test_token_estimate_from_words_is_the_dec04_formula() -> None:
    assert [tokens_for_words(n) for n in range(3000)] == [max(1, int(n * 1.33)) for n in range(3000)]


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False) | st.sampled_from([0.0, -0.0, 1.0, 0.5, 0.05, 0.123449999, 2.0]))
def test_rounding_of_quality_components_equals_round(value: float) -> None:
    rounded = _rounded(value)
    assert rounded == round(value, 4)
    assert str(rounded) == str(round(value, 4))  # sign of zero included


@st.composite
def _cell_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Row-major dense tables, sometimes disturbed: a span, a missing or moved cell, headers."""
    n_rows, n_cols = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    texts = st.none() | st.text(alphabet=" a1\n\t.é", max_size=6)
    cells = [
        {"r0": r, "c0": c, "text": draw(texts), "column_header": draw(st.booleans()) and r == 0}
        for r in range(n_rows) for c in range(n_cols)
    ]
    disturbance = draw(st.sampled_from(["none", "span", "drop", "swap", "shuffle"]))
    if disturbance == "span":
        span = draw(st.sampled_from(["rspan", "cspan"]))
        draw(st.sampled_from(cells))[span] = draw(st.integers(2, 3))
    elif disturbance == "drop" and len(cells) > 1:
        cells.pop(draw(st.integers(0, len(cells) - 2)))
    elif disturbance == "swap" and len(cells) > 1:
        i = draw(st.integers(0, len(cells) - 2))
        cells[i], cells[i + 1] = cells[i + 1], cells[i]
    elif disturbance == "shuffle":
        cells = draw(st.permutations(cells))
    return cells


@settings(max_examples=300, deadline=None)
@given(_cell_lists())
def test_dense_table_fast_path_equals_the_general_fill(raw: list[dict[str, Any]]) -> None:
    models = [TableCell(**cell) for cell in raw]  # what a Block holds
    dicts = _CELL_DICTS.validate_python(raw)  # what dict input yields (text may be None)
    grids = []
    for cells in (models, dicts):
        grids.append(build_grid(cells))
        with mock.patch.object(tables, "_dense", lambda _cells, _get: None):
            grids.append(build_grid(cells))
    assert all((grid.columns, grid.rows) == (grids[0].columns, grids[0].rows) for grid in grids)


def test_cell_cleaning_does_not_depend_on_other_cells() -> None:
    # Found by the test above: the dense path used to collapse "1  1" because another cell of
    # the same table held a line break; the general path never did.
    cells = [TableCell(row_index=0, col_index=0, text="Net\nrevenue"),
             TableCell(row_index=0, col_index=1, text="Q1  2024")]
    assert build_grid(cells).columns == ["Net revenue", "Q1  2024"]


def _lead_in_without_prefilters(previous: str | None) -> bool:
    """``_ends_with_lead_in`` as its docstring defines it, without the two cheap exits."""
    if not previous:
        return False
    tail = " ".join(previous[-equations._LEAD_IN_TAIL :].lower().split()).rstrip(":,").rstrip()
    return tail.endswith(equations._VERB_ENDINGS) or (
        tail.endswith(("is", "denotes")) and equations._WHERE_END_RE.search(tail) is not None
    )


_LEAD_IN_PIECES = ["defined as", "given by", "where x is", "where α denotes", "as", "by", "is", "Yes",
                   "S", "y", ".", ":", ",", " ", "\n", "\u2003", "ſ", "K", "İ", "s.", "x"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_LEAD_IN_PIECES), max_size=6).map("".join) | st.text(max_size=12))
def test_lead_in_prefilters_never_change_the_answer(previous: str) -> None:
    assert equations._ends_with_lead_in(previous) == _lead_in_without_prefilters(previous)
