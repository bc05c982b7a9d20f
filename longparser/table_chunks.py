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
``table_rows_per_chunk`` rows; a single row larger than the target is kept whole (DEC-04).

Wide tables (more than ``wide_table_col_threshold`` columns): bands of 12 columns, each
carrying column 0 as the key. Reading: band 1 is columns 0-11; every later band is column 0
plus the next 11 columns (12-22, 23-33, ...). ``col_band`` is ``[first, last]`` of the
columns a band covers besides the repeated key (band 1: ``[0, 11]``; band 2: ``[12, 22]``);
it is null for tables that are not banded. Bands are emitted one after another, each with
all its row batches.

Schema chunk (``generate_schema_chunks``, chunk_type ``table_schema``): counts, each
column's type and null rate, up to 5 sample rows in the table format over all columns. It is
emitted before the row chunks and may exceed the target (DEC-04).

Caption: an attached caption (see sections.py) is primary content of the table's FIRST
chunk - the schema chunk when one is generated (so chunk order by first block stays reading
order), else the first row batch - with its text prepended on its own line and its id in
block_ids in reading order. Decision: metadata ``caption_block_id`` marks it.

Fallback: a table block without cells becomes one ``table`` chunk of its text
(``table_format`` ``text``); a structured table without data rows becomes one ``table``
chunk holding its header line.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from longparser.build import LINE_SEPARATOR, Draft, part
from longparser.prepare import Rec
from longparser.sections import Section, TableSeg
from longparser.tables import Grid, column_profiles
from longparser.tokens import TokenCounter
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


def _batches(line_tokens: list[int], head_tokens: int, config: ChunkingConfig) -> list[int]:
    """Start indices of row batches."""
    starts: list[int] = []
    running, held = 0, 0
    for i, tokens in enumerate(line_tokens):
        if held and (running + tokens > config.max_tokens or held >= config.table_rows_per_chunk):
            held = 0
        if held == 0:
            starts.append(i)
            running = head_tokens
        running += tokens
        held += 1
    return starts


def _meta(
    rec: Rec, fmt: str, rows: tuple[int, int] | None = None, band: list[int] | None = None
) -> dict[str, Any]:
    return {"table_block_id": rec.block_id, "row_start": rows[0] if rows else None,
            "row_end": rows[1] if rows else None, "col_band": band, "table_format": fmt}


def _row_drafts(rec: Rec, grid: Grid, section: Section, config: ChunkingConfig,
                counter: TokenCounter) -> list[Draft]:
    fmt = config.table_chunk_format
    drafts: list[Draft] = []
    for cols, band in column_bands(len(grid.columns), config.wide_table_col_threshold):
        lines = render_rows(grid, cols, fmt, grid.rows)
        head = " | ".join([grid.columns[c] for c in cols]) if fmt == "pipe" else ""
        units = counter.measure(lines)
        head_units = counter.measure((head,))[0] if head else 0
        line_tokens = [counter.join(line, (n,)) for line, n in zip(lines, units, strict=True)]
        starts = _batches(line_tokens, counter.join(head, (head_units,)) if head else 0, config)
        for k, start in enumerate(starts):
            stop = starts[k + 1] if k + 1 < len(starts) else len(lines)
            rows = part(rec, LINE_SEPARATOR.join(lines[start:stop]), sum(units[start:stop]), LINE_SEPARATOR)
            parts = [part(rec, head, head_units), rows] if head else [rows]
            drafts.append(Draft(parts, "table", section, _meta(rec, fmt, (start + 1, stop), band)))
    return drafts


def _schema_draft(rec: Rec, grid: Grid, section: Section, fmt: str, counter: TokenCounter) -> Draft:
    profiles = column_profiles(grid)
    described = "; ".join(f"{p['name']} ({p['type']}, {round(p['null_rate'] * 100)}% null)" for p in profiles)
    cols = list(range(len(grid.columns)))
    samples = render_rows(grid, cols, fmt, grid.rows[:SAMPLE_ROWS])
    if fmt == "pipe":
        samples.insert(0, " | ".join(grid.columns))
    text = (f"Table schema: {len(grid.rows)} data rows, {len(grid.columns)} columns.\n"
            f"Columns: {described}\nSample rows:\n" + LINE_SEPARATOR.join(samples))
    meta: dict[str, Any] = {"table_block_id": rec.block_id, "n_rows": len(grid.rows),
                            "n_cols": len(grid.columns), "columns": profiles, "table_format": fmt}
    return _whole(rec, text, "table_schema", section, meta, counter)


def _with_caption(draft: Draft, seg: TableSeg) -> None:
    """Attach the caption to the table's first draft: its text first, on its own line."""
    cap = seg.caption
    if cap is None:
        return
    first, *rest = draft.parts
    draft.parts = [part(cap, cap.text, cap.units), first.after(LINE_SEPARATOR), *rest]
    draft.meta["caption_block_id"] = cap.block_id


def _whole(
    rec: Rec, text: str, kind: str, section: Section, meta: dict[str, Any], counter: TokenCounter
) -> Draft:
    """A draft of one piece of text (the table's own text, a header line, a schema)."""
    return Draft([part(rec, text, counter.measure((text,))[0])], kind, section, meta)


def table_drafts(
    seg: TableSeg, section: Section, config: ChunkingConfig, counter: TokenCounter
) -> list[Draft]:
    """All drafts of one table block, in emission order."""
    rec, grid = seg.table, seg.table.grid
    fmt = config.table_chunk_format
    if grid is None:
        drafts = [_whole(rec, rec.text, "table", section, _meta(rec, "text"), counter)]
    else:
        drafts = [_schema_draft(rec, grid, section, fmt, counter)] if config.generate_schema_chunks else []
        if grid.rows:
            drafts.extend(_row_drafts(rec, grid, section, config, counter))
        else:
            drafts.append(_whole(rec, " | ".join(grid.columns), "table", section, _meta(rec, fmt), counter))
    _with_caption(drafts[0], seg)
    return drafts
