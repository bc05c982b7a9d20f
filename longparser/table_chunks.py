"""Stage 4, part 2: table blocks to drafts: schema chunk, row batches, bands, captions.

Formats (``table_chunk_format``):

* ``row_record``: ``Row 3: Name=Ada; Year=1843`` (1-based data-row number). Every column
  of the row (or band) is written, an empty cell as ``Year=``: a column with no value in any
  row must still show its header somewhere (nothing lost, also without a schema chunk), and
  an explicit empty value tells a reader the cell is blank rather than absent. Rejected:
  leaving empty cells out (leaner, but it lost empty columns' headers entirely).
* ``pipe``: ``Ada | 1843`` (positional, empty cells kept), with the header line
  ``Name | Year`` at the top of every batch.

Batching: rows are added while the batch's token sum (per-line counts, the pipe header line
included) stays within ``max_tokens`` and the batch holds fewer than
``table_rows_per_chunk`` rows; a single row larger than the target is kept whole (a target exception).

Wide tables (more than ``wide_table_col_threshold`` columns): bands of 12 columns, each
carrying column 0 as the key. Reading: band 1 is columns 0-11; every later band is column 0
plus the next 11 columns (12-22, 23-33, ...). ``col_band`` is ``[first, last]`` of the
columns a band covers besides the repeated key (band 1: ``[0, 11]``; band 2: ``[12, 22]``);
it is null for tables that are not banded. Bands are emitted one after another, each with
all its row batches.

Schema chunk (``generate_schema_chunks``, chunk_type ``table_schema``): counts, each
column's type and null rate, up to 5 sample rows in the table format over all columns. It is
emitted before the row chunks and may exceed the target (a target exception).

Caption: an attached caption (see sections.py) is primary content of the table's FIRST
chunk - the schema chunk when one is generated (so chunk order by first block stays reading
order), else the first row batch - with its text prepended on its own line and its id in
block_ids in reading order. Decision: metadata ``caption_block_id`` marks it.

Fallback: a table block without cells becomes one ``table`` chunk of its text
(``table_format`` ``text``); a structured table without data rows becomes one ``table``
chunk holding its header line.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from longparser.budget import Budget
from longparser.build import LINE_SEPARATOR, Draft, Part
from longparser.cutting import split_spans
from longparser.errors import RequestRefused
from longparser.prepare import Rec
from longparser.sections import Section, TableSeg
from longparser.tables import Grid, column_profiles
from schemas import ChunkingConfig

BAND_WIDTH = 12
SAMPLE_ROWS = 5


def column_bands(n_cols: int, threshold: int) -> list[tuple[list[int], list[int] | None]]:
    """``[(columns, col_band)]``; one unbanded entry for tables up to ``threshold`` columns."""
    if n_cols <= threshold:
        return [(list(range(n_cols)), None)]
    bands = [(list(range(min(BAND_WIDTH, n_cols))), [0, min(BAND_WIDTH, n_cols) - 1])]
    for start in range(BAND_WIDTH, n_cols, BAND_WIDTH - 1):
        stop = min(start + BAND_WIDTH - 1, n_cols)
        bands.append(([0, *range(start, stop)], [start, stop - 1]))
    return bands


def render_rows(grid: Grid, cols: list[int], fmt: str, rows: list[list[str]]) -> list[str]:
    """Render data rows (numbered from 1) over the columns ``cols``."""
    pick = itemgetter(*cols) if len(cols) > 1 else (lambda row: (row[cols[0]],))
    if fmt == "pipe":
        return [" | ".join(pick(row)) for row in rows]
    # One str.format per row instead of a join over key=value pieces; braces in column names
    # are escaped, so the template has exactly one field per column after the number.
    template = "Row {}: " + "; ".join(_escape_braces(grid.columns[c]) + "={}" for c in cols)
    return [template.format(number, *pick(row)) for number, row in enumerate(rows, start=1)]


def _escape_braces(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _meta(
    rec: Rec, fmt: str, rows: tuple[int, int] | None = None, band: list[int] | None = None
) -> dict[str, Any]:
    return {"table_block_id": rec.block_id, "row_start": rows[0] if rows else None,
            "row_end": rows[1] if rows else None, "col_band": band, "table_format": fmt}


def _row_label(fmt: str, number: int) -> str:
    return f"Row {number}: " if fmt == "row_record" else ""


def _row_pieces(
    grid: Grid, cols: list[int], fmt: str, number: int, budget: Budget, draft_of: Callable[..., Draft]
) -> list[tuple[list[int], str, str]]:
    """Strict mode: one row too long for a chunk, as ``(columns, head, line)`` pieces that each
    fit, every piece repeating the row's label (its number; in pipe format its key cell, column
    ``cols[0]``) and the names of its columns. A single cell too long even so is cut, each cut
    under the label and the column's name again."""
    row = grid.rows[number - 1]

    def fits(head: str, line: str) -> bool:
        return budget.fits(draft_of(head, [line], [budget.measure(line)], (number, number), None))

    def render(group: list[int], values: dict[int, str] | None = None) -> tuple[str, str]:
        values = values or {}
        texts = [values.get(c, row[c]) for c in group]
        if fmt == "pipe":
            return " | ".join(grid.columns[c] for c in group), " | ".join(texts)
        return "", _row_label(fmt, number) + "; ".join(
            f"{grid.columns[c]}={text}" for c, text in zip(group, texts, strict=True))

    key = [cols[0]] if fmt == "pipe" and fits(*render(cols[:1])) else []
    pieces: list[tuple[list[int], str, str]] = []
    group = list(key)
    for c in cols[len(key):]:
        if fits(*render([*group, c])):
            group.append(c)
            continue
        if len(group) > len(key):
            pieces.append((group, *render(group)))
        group = [*key, c]
        if not fits(*render(group)):  # one cell too long: cut its value
            pieces.extend(_cell_pieces(row[c], grid.columns[c], group, c, render, fits, budget))
            group = list(key)
    if len(group) > len(key) or not pieces or (key and not any(key[0] in cols_ for cols_, _, _ in pieces)):
        pieces.append((group, *render(group)))  # what is left, or the key cell if no piece showed it
    return pieces


def _cell_pieces(value: str, name: str, group: list[int], c: int, render: Callable[..., tuple[str, str]],
                 fits: Callable[[str, str], bool], budget: Budget) -> list[tuple[list[int], str, str]]:
    """One cell's value cut under its row label and column name (``group`` with the key); when
    even that leaves no room, the column name (content too: it must appear) comes first on its
    own, then the value bare (repeated context gives way to content)."""
    for columns in (group, [c]) if value.strip() else ():
        spans = split_spans(value, lambda v, columns=columns: fits(*render(columns, {c: v})), budget.counter)
        if spans is not None:
            return [(columns, *render(columns, {c: value[s:e]})) for s, e in spans]
    pieces = []
    for text in (name, value) if value.strip() else (name,):
        spans = split_spans(text, lambda v: fits("", v), budget.counter)
        if spans is None:
            raise RequestRefused(f"max_tokens {budget.max_tokens} leaves no room for a table cell")
        pieces.extend(([c], "", text[s:e]) for s, e in spans)
    return pieces


def _row_drafts(
    rec: Rec, grid: Grid, section: Section, config: ChunkingConfig, budget: Budget
) -> list[Draft]:
    """Row batches per column band; in strict mode a row that does not fit alone is cut into
    pieces (:func:`_row_pieces`), each its own chunk."""
    fmt, counter = config.table_chunk_format, budget.counter
    drafts: list[Draft] = []

    def draft_of(head: str, lines: list[str], units: list[int], rows: tuple[int, int],
                 band: list[int] | None) -> Draft:
        body = Part(rec, LINE_SEPARATOR.join(lines), sum(units), LINE_SEPARATOR)
        head_part = Part(rec, head, budget.measure(head)) if head else None
        parts = [head_part, body] if head_part else [body]
        draft = Draft(parts, "table", section, _meta(rec, fmt, rows, band))
        draft.header_line = head_part
        return draft

    for cols, band in column_bands(len(grid.columns), config.wide_table_col_threshold):
        lines = render_rows(grid, cols, fmt, grid.rows)
        head = " | ".join([grid.columns[c] for c in cols]) if fmt == "pipe" else ""
        units = counter.measure(lines)
        tokens = [counter.count_joined(line, (n,)) for line, n in zip(lines, units, strict=True)]
        head_units = [budget.measure(head)] if head else []
        head_tokens = counter.count_joined(head, head_units) if head else 0

        def batch(i: int, j: int, head: str = head, lines: list[str] = lines, units: list[int] = units,
                  band: list[int] | None = band) -> Draft:
            return draft_of(head, lines[i:j], units[i:j], (i + 1, j), band)

        def fits(i: int, j: int, summed: int, batch: Callable[[int, int], Draft] = batch,
                 units: list[int] = units, head_units: list[int] = head_units) -> bool:
            """Rows i..j-1 under the header line: the per-line sum, or (strict) the emitted count."""
            if not budget.strict:
                return summed <= budget.max_tokens
            known = budget.fits_units([*head_units, sum(units[i:j])], section.path)
            return budget.fits(batch(i, j)) if known is None else known

        start, held, running = 0, 0, 0
        for i in range(len(lines)):
            if budget.strict and not fits(i, i + 1, 0):  # a row too long even alone
                if held:
                    drafts.append(batch(start, i))
                    held = 0
                drafts.extend(draft_of(piece_head, [line], [budget.measure(line)], (i + 1, i + 1),
                                       [group[0], group[-1]])
                              for group, piece_head, line in _row_pieces(grid, cols, fmt, i + 1, budget,
                                                                         draft_of))
                continue
            if held and (held >= config.table_rows_per_chunk or not fits(start, i + 1, running + tokens[i])):
                drafts.append(batch(start, i))
                held = 0
            if held == 0:
                start, running = i, head_tokens
            running += tokens[i]
            held += 1
        if held:
            drafts.append(batch(start, len(lines)))
    return drafts


def _schema_draft(rec: Rec, grid: Grid, section: Section, fmt: str, budget: Budget) -> Draft:
    """Counts, column types and null rates, and up to :data:`SAMPLE_ROWS` sample rows: in strict
    mode as many as fit (possibly none; the description itself is then cut by the fit stage).

    One part per line after the description, so that fewer samples need no new count.
    """
    profiles = column_profiles(grid)
    described = "; ".join(f"{p['name']} ({p['type']}, {round(p['null_rate'] * 100)}% null)" for p in profiles)
    description = (f"Table schema: {len(grid.rows)} data rows, {len(grid.columns)} columns.\n"
                   f"Columns: {described}\nSample rows:")
    samples = render_rows(grid, list(range(len(grid.columns))), fmt, grid.rows[:SAMPLE_ROWS])
    head = [" | ".join(grid.columns)] if fmt == "pipe" and samples else []
    lines = [*head, *samples]
    units = budget.counter.measure([description, *lines])
    parts = [Part(rec, description, units[0])] + [
        Part(rec, line, n, LINE_SEPARATOR) for line, n in zip(lines, units[1:], strict=True)]
    meta: dict[str, Any] = {"table_block_id": rec.block_id, "n_rows": len(grid.rows),
                            "n_cols": len(grid.columns), "columns": profiles, "table_format": fmt}
    draft = Draft(parts, "table_schema", section, meta)
    shown = len(samples)
    while shown > 0 and not budget.accepts(draft):
        shown -= 1
        draft.parts = parts[: 1 + (len(head) if shown else 0) + shown]
    meta["sample_rows"] = shown
    return draft


def _with_caption(draft: Draft, seg: TableSeg) -> None:
    """Attach the caption to the table's first draft: its text first, on its own line."""
    cap = seg.caption
    if cap is None:
        return
    first, *rest = draft.parts
    draft.parts = [Part(cap, cap.text, cap.units), first.after(LINE_SEPARATOR), *rest]
    draft.meta["caption_block_id"] = cap.block_id


def _whole(rec: Rec, text: str, kind: str, section: Section, meta: dict[str, Any], budget: Budget) -> Draft:
    """A draft of one piece of text (the table's own text, a header line, a schema)."""
    return Draft([Part(rec, text, budget.measure(text))], kind, section, meta)


def table_drafts(seg: TableSeg, section: Section, config: ChunkingConfig, budget: Budget) -> list[Draft]:
    """All drafts of one table block, in emission order."""
    rec, grid = seg.table, seg.table.grid
    fmt = config.table_chunk_format
    if grid is None:
        drafts = [_whole(rec, rec.text, "table", section, _meta(rec, "text"), budget)]
    else:
        drafts = [_schema_draft(rec, grid, section, fmt, budget)] if config.generate_schema_chunks else []
        if grid.rows:
            drafts.extend(_row_drafts(rec, grid, section, config, budget))
        else:
            drafts.append(_whole(rec, " | ".join(grid.columns), "table", section, _meta(rec, fmt), budget))
    _with_caption(drafts[0], seg)
    return drafts
