"""Stage 5: structured table grids, column names and column types.

Decisions (docs/chunking.md has the rules):

* Grid size comes from the cells: a row/column exists when some cell starts in it, so the
  grid holds at most one row and one column per cell (the declared ``n_rows``/``n_cols`` are
  informational, and a cell at row 10**9 adds one row, not a billion: a payload cannot make
  the engine allocate a huge grid). Indices without a starting cell are skipped; a span
  covers the existing rows/columns in its range, so it is clipped to the grid. What the
  expansion costs (the grid, and the positions the spans cover) is bounded at validation by
  ``schemas.blocks.MAX_TABLE_AREA``.
* A spanning cell's text is repeated in every position it covers (a row-spanning "Region"
  then names every row it covers, so each row record stands alone; a column-spanning
  header names every column under it). Where cells overlap, the first cell wins.
* Header rows are the rows covered by any ``column_header`` cell (docling's flags). Without
  flags (and unless inference is off) they are the rows above the first row that is at least
  half numeric, when that row is one of the first :data:`MAX_HEADER_ROWS` + 1 (a header of up
  to 6 rows; none when row 0 itself is numeric: a table of figures without a header). Half
  numeric: half of the row's cells that hold something are figures: a digit and no letter
  (``7,015``, ``84-89``, ``4.68 (2.22–9.87)``) or a quantity, a number and at most two short
  unit words (``1.445 ppm ZnSO4``, ``135 kA``); placeholders such as ``n/a`` and ``-`` hold
  nothing. A row whose figures are all years, two or more (``Revenue | 2023 | 2024``), ends
  the header only when no other numeric row comes within those rows: years head columns more
  often than they fill them. A table with no numeric row there (all text, or figures further
  down) has the first row alone as its header. So a deep header (a title row, a group row, a
  unit row) names every column. With inference off and no flags there is no header row. A
  column's name is its header rows' distinct non-empty texts joined by `` / ``
  (``Revenue / 2024``), or ``col_<i>`` (its 0-based column index) when empty. Duplicate names
  are kept as given.
* A row's label says which row it is: the texts of its row-header cells (``row_header``
  flags: the columns holding a flagged cell), else its first column's text (the first column
  whose texts differ from row to row: a column of one repeated mark labels nothing).
* Cell text is stripped; in a cell holding a line break, tab or other non-printable
  character, every whitespace run becomes a single space (a cell must not break a row's
  line); other cells keep their inner spacing as given.
* Data rows are the non-header rows that hold some text; they are numbered 1, 2, ... in
  that order (the ``Row N`` of records and the row_start/row_end of metadata).
* Signs in cells of their own (financial filings write ``$`` | ``1,234``, ``(2,070`` | ``)``,
  ``12.5`` | ``%``): a cell holding only a currency sign or an opening parenthesis is joined to
  the figure in the next non-empty cell of its row, a cell holding only a closing parenthesis
  or a percent sign to the figure in the previous one (``$1,234``, ``(2,070)``, ``12.5%``; a
  parenthesis only to a figure it closes, a percent sign never to a year),
  before the header rows are read (a lone ``$`` is no figure). A sign with no figure beside it
  stays. A column a join emptied is dropped when every row of it is then empty or says what an
  adjacent column says in that row (the spanning year above the ``$`` column).
* Identical adjacent columns (every row, header rows included, the same as the column to its
  left: a spanning cell repeated in each column it covers, by a span or by the converter) are
  one column.
* A list converted as a table (:func:`list_items`): a one-column table whose rows, the first
  aside, start with a bullet or an enumerator, or a two-column table whose first column holds
  only bullets or enumerators, has ``list_items`` set (each row's text, its marker first): the
  engine chunks it as a list.
* Type guess per column over its non-empty data values: ``date`` when all are ISO-like
  (``2024-05-01``, ``2024/05/01``, optional time) or d/m/y (``1/5/2024``, ``01.05.24``);
  ``number`` when all are numbers (sign, thousands commas, decimals, ``% $ € £``); else
  ``string`` (also for a column with no values). Null rate = empty cells / data rows.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import add, itemgetter, mul
from typing import Any, TypedDict

from longparser.repeats import RepeatAllowance, short_form
from schemas.blocks import TableCell, fills_grid_row_by_row, has_spans

# One value; cell texts are cleaned (no newlines), so a column can be checked in ONE regex
# call over its values joined by "\n" (see _all_match) instead of one call per value.
_DATE = (
    r"(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{1,2}[-/.]\d{1,2}[-/.](?:\d{4}|\d{2}))"
)
_NUMBER = r"(?:[-+−]?[ ]*[$€£]?[ ]*[-+−]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)[ ]*[%$€£]?)"
_DATE_COLUMN_RE = re.compile(f"{_DATE}(?:\n{_DATE})*")
_NUMBER_COLUMN_RE = re.compile(f"{_NUMBER}(?:\n{_NUMBER})*")
# on UTF-8 bytes: a multi-byte sequence holds no ASCII byte, so only the ASCII digits change
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")  # any script's letters
_PLACEHOLDERS = frozenset({"-", "–", "—", "n/a", "na", "n.a.", "…", "...", "*", "x", "?"})
# A measured value: a number (sign, comparison, percent) and one or two unit words of at most six
# characters, such as ``ppm ZnSO4`` or ``kA`` (``2 x 136V AC UPS`` is text).
_QUANTITY = re.compile(r"[-+−±~<>≤≥]?\s*\d[\d,.]*\s*%?(?:\s*[^\W\d_]\S{0,5}){1,2}")
_YEAR = re.compile(r"(?:1[89]|2[01])\d\d")

# Signs a filing writes in a cell of their own: those before a figure, those after it.
_OPENING_SIGNS = frozenset({"$", "€", "£", "¥", "US$", "(", "$(", "€(", "£("})
_CLOSING_SIGNS = frozenset({")", "%", ")%", "%)"})
_SIGNS = _OPENING_SIGNS | _CLOSING_SIGNS
_FIGURE_START = re.compile(r"[-+−]?\(?[-+−]?\.?\d")
_FIGURE_END = re.compile(r"\d%?$")
# A list item's marker: a bullet glyph, or an enumerator (``1.``, ``2)``, ``(a)``, ``iv.``).
_BULLETS = "•◦▪▫●○■□‣⁃∙·➢➤►▶✓✔-–—*"
_ENUMERATOR = r"(?:\(?(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,5})[.)])"
_MARKER = re.compile(f"(?:[{re.escape(_BULLETS)}]|{_ENUMERATOR})")
_MARKED_ITEM = re.compile(f"{_MARKER.pattern}\\s+\\S")
_DASHES = frozenset({"-", "–", "—"})  # a filing's zero or nil: ``$`` | ``—``
_BARE_NUMBER = re.compile(r"\d{1,3}")
MIN_LIST_ITEMS = 2

MAX_HEADER_ROWS = 6


@dataclass(slots=True)
class Grid:
    """A table as rows of cell texts.

    Attributes:
        columns: each column's name.
        rows: the data rows, in order, as cell texts.
        label_columns: the columns whose texts label a row (its row-header cells, else column 0).
        groups: each column's first header text when its name joins several (a spanning header
            over sub-headers: ``Count`` of ``Count / Train``), else "" (None: no column has one).
        unnamed: the columns whose header rows hold no text (their name is ``col_<i>``).
        text_chars: the characters of its cells' texts as given (each cell once).
        list_items: the rows as list items when the table is a list converted as a table
            (:func:`list_items`), else None.
        duplicate_block_ids: the blocks of later tables with the same cells, emitted once as
            this table (filled by the prepare stage).
    """

    columns: list[str]
    rows: list[list[str]]
    label_columns: list[int]
    groups: list[str] | None = None  # each column's first header text when it has several, else ""
    unnamed: frozenset[int] = frozenset()
    text_chars: int = 0
    list_items: list[str] | None = None
    duplicate_block_ids: list[str] = field(default_factory=list)

    def label(self, row: list[str]) -> str:
        """The row's label: the distinct texts of its label columns, joined by `` / ``."""
        texts: list[str] = []
        for c in self.label_columns:
            if row[c] and row[c] not in texts:
                texts.append(row[c])
        return " / ".join(texts)


_ROW, _COL, _TEXT = itemgetter("row_index"), itemgetter("col_index"), itemgetter("text")
_HEADER = itemgetter("column_header")


_ROW_HEADER = itemgetter("row_header")  # validated cells always have it (default False)


def clean_texts(texts: list[str | None]) -> list[str]:
    """Cell texts as written into the grid: stripped, and in a cell holding a line break, tab or
    other non-printable character every whitespace run becomes one space (a cell must not break
    its row's line). A null text reads as empty."""
    texts = [text or "" for text in texts] if None in texts else texts
    cleaned = list(map(str.strip, texts))  # type: ignore[arg-type]
    if "".join(cleaned).isprintable():  # one C-level check for the usual one-line cells
        return cleaned
    return [text if text.isprintable() else " ".join(text.split()) for text in cleaned]


def _positions(
    cells: Sequence[TableCell], rows: list[int], cols: list[int],
    row_ids: Sequence[int], col_ids: Sequence[int],
) -> tuple[list[int], Sequence[int]]:
    """Every grid position the cells cover, in cell order: ``(flat positions, owning cell index)``.

    ``rows``/``cols``: each cell's row and column index. A span covers the grid rows/columns
    whose index falls in its range (clipped to the grid). A span-free table has one position per
    cell, computed column-wise in C; a table with spans is expanded cell by cell.
    """
    width = len(col_ids)
    row_at = {r: i for i, r in enumerate(row_ids)}.__getitem__
    col_at = {c: j for j, c in enumerate(col_ids)}.__getitem__
    row_starts = map(mul, map(row_at, rows), repeat(width))
    firsts = list(map(add, row_starts, map(col_at, cols)))
    if not has_spans(cells):
        return firsts, range(len(cells))
    positions: list[int] = []
    owners: list[int] = []
    for k, cell in enumerate(cells):
        i0, j0 = divmod(firsts[k], width)
        i1 = bisect_left(row_ids, cell["row_index"] + cell["row_span"])
        j1 = bisect_left(col_ids, cell["col_index"] + cell["col_span"])
        covered = [i * width + j for i in range(i0, i1) for j in range(j0, j1)]
        positions.extend(covered)
        owners.extend([k] * len(covered))
    return positions, owners


def _flagged_rows(cells: Sequence[TableCell], row_ids: Sequence[int]) -> list[int]:
    """Grid rows covered by a cell flagged ``column_header``."""
    flagged: set[int] = set()
    for cell in filter(_HEADER, cells):
        start = bisect_left(row_ids, cell["row_index"])
        flagged.update(range(start, bisect_left(row_ids, cell["row_index"] + cell["row_span"])))
    return sorted(flagged)


def _filled_beside(row: list[str], c: int, step: int) -> int | None:
    """The index of the first non-empty cell from ``c`` in direction ``step`` (``±1``), or None."""
    c += step
    while 0 <= c < len(row):
        if row[c]:
            return c
        c += step
    return None


def _joins_after(sign: str, figure: str) -> bool:
    """Whether a closing ``sign`` belongs to the ``figure`` before it: a parenthesis (``)``,
    ``)%``, ``%)``) to a figure it closes (``(2,070``), a percent sign to a figure that ends in a
    digit and is not a year (a header's ``2024`` | ``%`` names two columns)."""
    if _FIGURE_END.search(figure) is None:
        return False
    if ")" in sign:
        return figure.count("(") > figure.count(")")
    return figure[-1].isdigit() and _YEAR.fullmatch(figure) is None


def join_signs(rows: list[list[str]]) -> tuple[list[list[str]], set[int]]:
    """The rows with each sign in a cell of its own joined to its figure (see the module doc:
    ``$`` | ``1,234`` reads ``$1,234``; ``(2,070`` | ``)`` reads ``(2,070)``), and the columns a
    join emptied somewhere. Rows without a lone sign are returned as they are."""
    emptied: set[int] = set()
    joined: list[list[str]] = []
    for row in rows:
        if _SIGNS.isdisjoint(row):
            joined.append(row)
            continue
        row = list(row)
        for c, text in enumerate(row):
            if text in _OPENING_SIGNS:
                j = _filled_beside(row, c, 1)
                if j is not None and (_FIGURE_START.match(row[j]) or row[j] in _DASHES):
                    row[j], row[c] = text + row[j], ""
                    emptied.add(c)
            elif text in _CLOSING_SIGNS:
                i = _filled_beside(row, c, -1)
                if i is not None and _joins_after(text, row[i]):
                    row[i], row[c] = row[i] + text, ""
                    emptied.add(c)
        joined.append(row)
    return joined, emptied


def redundant_columns(rows: list[list[str]], emptied: set[int]) -> set[int]:
    """The columns that say nothing of their own: one identical, row for row, to the column to its
    left, and one a join emptied (``emptied``) whose every row is empty or the text of an adjacent
    column that stays in that row (a spanning header over a sign's column)."""
    width = len(rows[0])
    # Most tables are decided by their first row: two columns the same there are rare.
    dropped = {c for c in range(1, width) if rows[0][c] == rows[0][c - 1]
               and all(row[c] == row[c - 1] for row in rows)}
    for c in sorted(emptied - dropped):
        beside = [n for n in (c - 1, c + 1) if 0 <= n < width and n not in emptied]
        if all(not row[c] or any(row[n] == row[c] for n in beside) for row in rows):
            dropped.add(c)
    return dropped


def _enumerated(markers: list[str]) -> bool:
    """Bullets or enumerators (``•``, ``1.``, ``(a)``), or the numbers 1, 2, 3, ... in order."""
    if all(map(_MARKER.fullmatch, markers)):
        return True
    if not all(map(_BARE_NUMBER.fullmatch, markers)):
        return False
    first = int(markers[0])
    return list(map(int, markers)) == list(range(first, first + len(markers)))


def list_items(rows: list[list[str]]) -> list[str] | None:
    """A list converted as a table, as its items (the rows' texts, each marker first), or None:
    a one-column table whose non-empty rows, the first aside, start with a bullet or an
    enumerator and a word (``• Ships within a week``, ``2) Returns``); or a two-column table
    whose first column holds only bullets or enumerators (or the numbers 1, 2, 3, ...) and whose
    second holds text, not figures. At least :data:`MIN_LIST_ITEMS` marked items."""
    if not rows or len(rows[0]) > 2:
        return None
    if len(rows[0]) == 1:
        texts = [row[0] for row in rows if row[0]]
        marked = texts[1:] if texts and not _MARKED_ITEM.match(texts[0]) else texts
        if len(marked) >= MIN_LIST_ITEMS and all(
                _MARKED_ITEM.match(text) and _LETTER.search(text) for text in marked):
            return texts
        return None
    markers = [row[0] for row in rows if row[0]]
    texts = [row[1] for row in rows if row[1]]
    if (len(markers) < MIN_LIST_ITEMS or not _enumerated(markers)
            or not all(_LETTER.search(text) and not _is_figure(text) for text in texts)):
        return None
    return [f"{marker} {text}".strip() for marker, text in rows if marker or text]


def _is_figure(value: str) -> bool:
    """A figure: a digit and no letter (``7,015``, ``84-89``, ``4.68 (2.22–9.87)``, ``±0.3``), or
    a quantity: a number and at most two short unit words (``1.445 ppm ZnSO4``, ``135 kA``)."""
    if _DIGIT.search(value) is None:
        return False
    return _LETTER.search(value) is None or _QUANTITY.fullmatch(value) is not None


def _figures(row: list[str]) -> tuple[list[str], list[str]]:
    """The row's cells that hold something (placeholders such as ``n/a`` or ``-`` hold nothing),
    and those of them that are figures."""
    values = [value for value in row if value and value.lower() not in _PLACEHOLDERS]
    return values, list(filter(_is_figure, values))


def _half_numeric(row: list[str]) -> bool:
    """At least half of the row's cells that hold something are figures."""
    values, figures = _figures(row)
    return bool(values) and 2 * len(figures) >= len(values)


def _years_row(row: list[str]) -> bool:
    """The row's figures are two or more distinct years and nothing else (``Revenue | 2023 | 2024``)."""
    _, figures = _figures(row)
    return len(set(figures)) >= 2 and all(map(_YEAR.fullmatch, figures))


def _inferred_header_rows(grid: list[list[str]]) -> list[int]:
    """Without flags: the rows above the first half-numeric row among the first
    :data:`MAX_HEADER_ROWS` + 1, a row of years only when no other numeric row follows there;
    row 0 alone when none is numeric (see the module doc)."""
    years = None  # the first row of years, the header's end when no other numeric row follows
    for r in range(min(len(grid), MAX_HEADER_ROWS + 1)):
        if _half_numeric(grid[r]):
            if not _years_row(grid[r]):
                return list(range(r))
            years = r if years is None else years
    return [0] if years is None else list(range(years))


def _label_columns(cells: Sequence[TableCell], col_ids: Sequence[int], header_rows: set[int],
                   row_ids: Sequence[int]) -> list[int]:
    """Grid columns holding a ``row_header`` cell outside the header rows (empty when none)."""
    return sorted({bisect_left(col_ids, cell["col_index"]) for cell in filter(_ROW_HEADER, cells)
                   if bisect_left(row_ids, cell["row_index"]) not in header_rows})


def _first_telling_column(rows: list[list[str]]) -> int:
    """The first column that does not repeat one text in every row that has one (a column of
    check marks tells no row from another); 0 when every column does."""
    for c in range(len(rows[0]) if rows else 0):
        seen, repeats = "", 0
        for row in rows:  # usually decided by the second row
            text = row[c]
            if text and seen and text != seen:
                return c
            if text:
                seen, repeats = text, repeats + 1
        if repeats < 2:
            return c
    return 0


def _header_texts(grid: list[list[str]], header_rows: list[int], c: int) -> list[str]:
    """Column ``c``'s distinct non-empty header texts, top down: what its name joins."""
    parts: list[str] = []
    for r in header_rows:
        text = grid[r][c]
        if text and text not in parts:
            parts.append(text)
    return parts


def _repeated_header_chars(header_texts: list[list[str]]) -> int:
    """The characters of header text the column names repeat: each text in every column it
    names after the first (a spanning header's text, said again in each column under it)."""
    seen: set[str] = set()
    repeated = 0
    for parts in header_texts:
        for text in parts:
            if text in seen:
                repeated += len(text)
            else:
                seen.add(text)
    return repeated


def _short_repeats(header_texts: list[list[str]]) -> list[list[str]]:
    """The header texts with each text in its short form in the columns after the first it names."""
    seen: set[str] = set()
    shortened = []
    for parts in header_texts:
        shortened.append([short_form(text) if text in seen else text for text in parts])
        seen.update(parts)
    return shortened


def build_grid(
    cells: Sequence[TableCell], infer_header: bool = True, repeats: RepeatAllowance | None = None
) -> Grid:
    """Grid of a structured table from its (non-empty) cells (``infer_header``: header rows are
    inferred when no cell is flagged, see the module doc). ``repeats``: the call's allowance of
    repeated text (:mod:`longparser.repeats`), grown by the cells' text and charged with the
    header text the column names repeat; where it cannot hold them, a spanning header's text is
    written whole in the first column it names and in its short form in the others.

    Only the rows and columns where some cell starts exist: a cell at row 10**9 costs one row,
    not a billion (the grid's size is bounded by the number of cells). Each cell's text fills
    every position it covers; where non-empty texts overlap, the first cell's wins.
    """
    rows, cols = list(map(_ROW, cells)), list(map(_COL, cells))
    texts = clean_texts(list(map(_TEXT, cells)))
    row_ids: Sequence[int]
    col_ids: Sequence[int]
    if fills_grid_row_by_row(rows, cols) and not has_spans(cells):
        row_ids, col_ids = range(rows[-1] + 1), range(cols[-1] + 1)
        flat = texts  # each position written once, in order
    else:
        row_ids, col_ids = sorted(set(rows)), sorted(set(cols))
        positions, owners = _positions(cells, rows, cols, row_ids, col_ids)
        written = texts if isinstance(owners, range) else list(map(texts.__getitem__, owners))
        # Empty texts never fill a position; among the rest the first write must win, so the
        # writes are applied last to first (a dict keeps the last value given for a key).
        filled = dict(zip(reversed(list(compress(positions, written))), reversed(list(filter(None, written))),
                          strict=True))
        flat = list(map(filled.get, range(len(row_ids) * len(col_ids)), repeat("")))
    width, all_col_ids = len(col_ids), col_ids
    grid = [flat[k : k + width] for k in range(0, len(flat), width)]
    emptied: set[int] = set()
    if not _SIGNS.isdisjoint(texts):
        grid, emptied = join_signs(grid)
    kept = None
    if width > 1 and (dropped := redundant_columns(grid, emptied)):
        kept = [c for c in range(width) if c not in dropped]
        grid = [[row[c] for c in kept] for row in grid]
        col_ids = [col_ids[c] for c in kept]
    items = list_items(grid) if len(col_ids) <= 2 else None
    header_rows = _flagged_rows(cells, row_ids) or (_inferred_header_rows(grid) if infer_header else [])
    header_texts = [_header_texts(grid, header_rows, c) for c in range(len(col_ids))]
    text_chars = sum(map(len, texts))
    if repeats is not None:
        repeats.grow(text_chars)
        if not repeats.take(_repeated_header_chars(header_texts)):
            header_texts = _short_repeats(header_texts)
    columns, groups, unnamed = [], [], set()
    for c, (index, parts) in enumerate(zip(col_ids, header_texts, strict=True)):
        columns.append(" / ".join(parts) or f"col_{index}")
        if not parts:
            unnamed.add(c)
        groups.append(parts[0] if len(parts) > 1 else "")
    skip = set(header_rows)
    data = [row for r, row in enumerate(grid) if r not in skip and any(row)]
    label_columns = []
    if any(map(_ROW_HEADER, cells)):
        label_columns = _label_columns(cells, all_col_ids, skip, row_ids)
        if kept is not None:  # the label columns among those kept, renumbered
            position = {old: new for new, old in enumerate(kept)}
            label_columns = [position[c] for c in label_columns if c in position]
    return Grid(columns, data, label_columns or [_first_telling_column(data)], groups, frozenset(unnamed),
                text_chars, items)


def table_key(grid: Grid) -> tuple[Any, ...]:
    """What makes two tables the same table: their column names and data rows as read (two tables
    with the same cells have the same key)."""
    return tuple(grid.columns), tuple(map(tuple, grid.rows))


def _all_match(pattern: re.Pattern[str], values: str) -> bool:
    """Whether every line of ``values`` (cleaned values joined by newlines) is one value of the type."""
    return pattern.fullmatch(values) is not None


def _shapes(values: list[str]) -> str:
    """The column's distinct value shapes (ASCII digits read as ``0``), joined by newlines.

    The type patterns see digits only through ``\\d``, so a value and its shape match alike;
    a column of numbers or dates has a handful of shapes (``00.0%``, ``0000-00-00``), and the
    regex engine then reads those instead of every value.
    """
    zeroed = "\n".join(values).encode("utf-8").translate(_DIGITS_TO_ZERO).decode("utf-8")
    return "\n".join(set(zeroed.split("\n")))


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
