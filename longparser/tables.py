"""Stage 4, part 1: structured table grids, column names and column types.

Decisions where SPEC is silent:

* Grid size comes from the cells: a row/column exists when some cell starts in it, so the
  grid holds at most one row and one column per cell (the declared ``n_rows``/``n_cols`` are
  informational, and a cell at row 10**9 adds one row, not a billion: a payload cannot make
  the engine allocate a huge grid). Indices without a starting cell are skipped; a span
  covers the existing rows/columns in its range, so it is clipped to the grid.
* A spanning cell's text is repeated in every position it covers (a row-spanning "Region"
  then names every row it covers, so each row record stands alone; a column-spanning
  header names every column under it). Where cells overlap, the first cell wins.
* Header rows are the rows covered by any ``column_header`` cell, else the first row. A
  column's name is its header rows' distinct non-empty texts joined by `` / ``
  (``Revenue / 2024``), or ``col_<i>`` (its 0-based column index) when empty. Duplicate names
  are kept as given.
* Cell text is stripped; in a cell holding a line break, tab or other non-printable
  character, every whitespace run becomes a single space (a cell must not break a row's
  line); other cells keep their inner spacing as given.
* Data rows are the non-header rows that hold some text; they are numbered 1, 2, ... in
  that order (the ``Row N`` of records and the row_start/row_end of metadata).
* Type guess per column over its non-empty data values: ``date`` when all are ISO-like
  (``2024-05-01``, ``2024/05/01``, optional time) or d/m/y (``1/5/2024``, ``01.05.24``);
  ``number`` when all are numbers (sign, thousands commas, decimals, ``% $ € £``); else
  ``string`` (also for a column with no values). Null rate = empty cells / data rows.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TypedDict

from schemas.blocks import TableCell

# One value; cell texts are cleaned (no newlines), so a column can be checked in ONE regex
# call over its values joined by "\n" (see _all_match) instead of one call per value.
_DATE = (
    r"(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{1,2}[-/.]\d{1,2}[-/.](?:\d{4}|\d{2}))"
)
_NUMBER = r"(?:[-+−]?[ ]*[$€£]?[ ]*[-+−]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)[ ]*[%$€£]?)"
_DATE_COLUMN_RE = re.compile(f"{_DATE}(?:\n{_DATE})*")
_NUMBER_COLUMN_RE = re.compile(f"{_NUMBER}(?:\n{_NUMBER})*")
_DIGITS_TO_ZERO = str.maketrans("123456789", "000000000")


@dataclass(slots=True)
class Grid:
    """A table as rows of cell texts."""

    columns: list[str]
    rows: list[list[str]]  # data rows only, in order


_CELL_FIELDS = itemgetter("row_index", "col_index", "row_span", "col_span", "text", "column_header")


def _clean(text: str | None) -> str:
    """Stripped; a cell holding a line break, tab or other non-printable character has every
    whitespace run collapsed to one space (a cell must not break its row's line)."""
    if not text:
        return ""  # a null cell text reads as empty
    text = text.strip()
    return text if text.isprintable() else " ".join(text.split())


def _fill(grid: list[list[str]], cells: Sequence[TableCell], row_ids: list[int], col_ids: list[int]) -> set[int]:
    """Write cell texts into the grid; return the header row positions.

    ``row_ids``/``col_ids``: the sorted row and column indices at which some cell starts; grid
    position ``i`` is row ``row_ids[i]``. A span covers the positions whose index falls in its
    range, so it is clipped to the grid. Where cells overlap, the first cell wins.
    """
    row_at = {r: i for i, r in enumerate(row_ids)}
    col_at = {c: j for j, c in enumerate(col_ids)}
    header_rows: set[int] = set()
    for r0, c0, rs, cs, text, is_header in map(_CELL_FIELDS, cells):
        text = _clean(text)
        i, j = row_at[r0], col_at[c0]
        i1 = bisect_left(row_ids, r0 + rs) if rs > 1 else i + 1
        j1 = bisect_left(col_ids, c0 + cs) if cs > 1 else j + 1
        if is_header:
            header_rows.update(range(i, i1))
        for r in range(i, i1):
            row = grid[r]
            for c in range(j, j1):
                if not row[c]:
                    row[c] = text
    return header_rows


def build_grid(cells: Sequence[TableCell]) -> Grid:
    """Grid of a structured table from its (non-empty) cells.

    Only the rows and columns where some cell starts exist: a cell at row 10**9 costs one row,
    not a billion (the grid's size is bounded by the number of cells).
    """
    row_ids = sorted(set(map(itemgetter("row_index"), cells)))
    col_ids = sorted(set(map(itemgetter("col_index"), cells)))
    grid = [[""] * len(col_ids) for _ in row_ids]
    header_rows = sorted(_fill(grid, cells, row_ids, col_ids) or {0})
    columns = []
    for c, index in enumerate(col_ids):
        parts: list[str] = []
        for r in header_rows:
            text = grid[r][c]
            if text and text not in parts:
                parts.append(text)
        columns.append(" / ".join(parts) or f"col_{index}")
    skip = set(header_rows)
    rows = [row for r, row in enumerate(grid) if r not in skip and any(row)]
    return Grid(columns, rows)


def _all_match(pattern: re.Pattern[str], values: str) -> bool:
    """Whether every line of ``values`` (cleaned values joined by newlines) is one value of the type."""
    return pattern.fullmatch(values) is not None


def _shapes(values: list[str]) -> str:
    """The column's distinct value shapes (ASCII digits read as ``0``), joined by newlines.

    The type patterns see digits only through ``\\d``, so a value and its shape match alike;
    a column of numbers or dates has a handful of shapes (``00.0%``, ``0000-00-00``), and the
    regex engine (~30 ns per character) then reads those instead of every value.
    """
    return "\n".join(set("\n".join(values).translate(_DIGITS_TO_ZERO).split("\n")))


def guess_type(values: list[str]) -> str:
    """``date``, ``number`` or ``string`` for a column's non-empty (cleaned) values."""
    if not values:
        return "string"
    first = values[0]  # a text column is decided here, before any whole-column work
    if not (_all_match(_DATE_COLUMN_RE, first) or _all_match(_NUMBER_COLUMN_RE, first)):
        return "string"
    shapes = _shapes(values)
    if _all_match(_DATE_COLUMN_RE, shapes):
        return "date"
    if _all_match(_NUMBER_COLUMN_RE, shapes):
        return "number"
    return "string"


class ColumnProfile(TypedDict):
    """One column of a schema chunk's ``metadata["columns"]``."""

    name: str
    type: str
    null_rate: float


def column_profiles(grid: Grid) -> list[ColumnProfile]:
    """``[{name, type, null_rate}]`` per column (null_rate rounded to 4 places)."""
    n = len(grid.rows)
    columns = zip(*grid.rows, strict=True) if n else iter([() for _ in grid.columns])
    profiles: list[ColumnProfile] = []
    for name, column in zip(grid.columns, columns, strict=True):
        values = list(filter(None, column))
        nulls = n - len(values)
        null_rate = round(nulls / n, 4) if nulls else 0.0  # round(x, 4) is slow (decimal): skip it for 0
        profiles.append({"name": name, "type": guess_type(values), "null_rate": null_rate})
    return profiles
