"""Stage 5: table blocks to drafts: row batches, bands, schema chunk, title.

Formats (``table_chunk_format``), each row of a data row (or band) written whole:

* ``row_record``: ``Row 3: Name=Ada; Year=1843`` (1-based data-row number). Every column is
  written, an empty cell as ``Year=``: a column with no value in any row must still show its
  header somewhere (nothing lost, also without a schema chunk), and an explicit empty value
  tells a reader the cell is blank rather than absent.
  A spanning header is said once per row, as in ``labelled`` (``Row 3: Item=Revenue; Year
  ended: 2024=$1,234, 2023=$1,100``): said before every value, it outweighed the values.
* ``labelled``: ``Ada: Year=1843; Field=Math``: the row's label (its row-header cells, else its
  first column: :meth:`~longparser.tables.Grid.label`) first, then the other columns as
  ``name=value`` (``Row 3:`` stands in for an empty label); consecutive columns under one
  spanning header are written once under it: ``Text: Count=510377; % of Total: Train=45.82,
  Test=49.28``. The rows never write their label columns' names, so when a label column has
  one, the first batch of each band opens with it on a line of its own (``Name``; its own
  content, not repeated): no header text is lost, also without a schema chunk.
* ``pipe``: ``Ada | 1843`` (positional, empty cells kept), under the header line
  ``Name | Year`` at the top of every batch.
* ``markdown``: a Markdown table: ``| Name | Year |`` and ``|---|---|`` at the top of every
  batch, then ``| Ada | 1843 |`` (a ``|`` inside a cell written ``\\|``).

Batching: rows are added while the batch fits (:meth:`Budget.packer`: the per-line token sum
with its title and header line, or in strict mode the batch's emitted count) and holds fewer
than ``table_rows_per_chunk`` rows; a single row larger than the target is kept whole (a target
exception). A column band *fits one chunk* when it fits the budget and has at most
``table_rows_per_chunk`` rows (the row cap is a caller's explicit ask for chunks of a few rows,
so it holds for small tables too): such a band stays whole (a small table reads best whole,
and only a single-chunk table is packed with its neighbours). With ``table_batch_tokens`` N, a
band that does not fit one chunk is cut into batches whose rows count at most N tokens (their
lines' sum; the title and header lines aside), so each chunk holds a few rows, the facts a
question asks for, under the table's title rather than as many rows as the budget takes. In
strict mode a row too long alone is cut by the fit stage, which the batch tells where a table
may be cut (:class:`~longparser.build.TableRows`).

Wide tables (more than ``wide_table_col_threshold`` columns): bands of :data:`BAND_WIDTH` (12)
columns, each carrying column 0 as the key. The threshold says when a table is banded, the
fixed width how: a band reads as one row of a dozen named values whatever the threshold (below
12, a table just over it is one band: ``col_band`` set, nothing repeated). Reading: band 1 is
columns 0-11; every later band is column 0 plus the next 11 columns (12-22, 23-33, ...).
``col_band`` is ``[first, last]`` of the columns a band covers besides the repeated key
(band 1: ``[0, 11]``; band 2: ``[12, 22]``); it is null for tables that are not banded.
Bands are emitted one after another, each with all its row batches.

Schema chunk (``generate_schema_chunks``, chunk_type ``table_schema``): counts, each
column's type and null rate, and up to 5 sample rows in the table format over all columns
(``metadata.sample_rows`` says how many are shown). It may exceed the target (a target
exception); in strict mode the fit stage drops sample rows until it fits, never cutting it.

Title (a caption, or with ``table_titles`` a "Table N" paragraph: see sections.py), written
on its own line at the top of a chunk, before the header line:

* without ``table_titles``, the caption is primary content of the table's FIRST chunk - the
  schema chunk when one is generated, emitted before the rows, else the first row batch;
* with ``table_titles``, the title is primary content of the first ROW chunk and repeated (like
  a repeated lead-in: ``metadata.title_repeated``) at the top of every later row chunk and of
  the schema chunk, which then comes after the rows: every chunk says which table it is.

Repeated text (:mod:`longparser.repeats`): what a table's rows repeat (the column names of
``row_record`` and ``labelled`` rows, long texts written again, the key column and its name in
every band) is counted from the grid and charged to the call's allowance before any row is
written; where the allowance cannot hold it, the table is written in its plain form: ``pipe``
rows (``metadata.table_format`` ``pipe``) where a text of
:data:`~longparser.repeats.DITTO_MIN_CHARS` characters or more already written in the table reads
:data:`~longparser.repeats.DITTO`, and a later band's key column and its name their short forms.
The title and header line repeated in later batches are charged once the batches are known;
beyond the allowance each is its short form.

Lead-in: the paragraph that introduces the table ("Table 1 lists ...", ``TableSeg.lead``: the
rule of a list's lead-in, longparser/sections.py) opens the table's first chunk, on its own line
above the title: a table is not separated from the sentence that says what it holds.

Fallback: a table block without cells becomes one ``table`` chunk of its text
(``table_format`` ``text``); a structured table without data rows becomes one ``table``
chunk holding its header line.
"""

from __future__ import annotations

from itertools import accumulate, chain
from operator import itemgetter
from typing import Any, NamedTuple

from longparser.budget import Budget
from longparser.build import LINE_SEPARATOR, Draft, Part, TableRows
from longparser.cutting import sentence_starts
from longparser.prepare import Rec
from longparser.repeats import DITTO, DITTO_MIN_CHARS, short_form
from longparser.sections import Section, TableSeg
from longparser.tables import Grid, column_profiles
from longparser.tokens import counts
from schemas import ChunkingConfig

PACKED_SEPARATOR = "\n\n"
BAND_WIDTH = 12  # columns of a band, its key included (see the module doc)
SAMPLE_ROWS = 5
TITLE_NAME_WORDS = 3  # "Table 1:", "TABLE S2.": a first sentence this short only names the table
_HEADED_FORMATS = frozenset({"pipe", "markdown"})


def column_bands(n_cols: int, threshold: int) -> list[tuple[list[int], list[int] | None]]:
    """``[(columns, col_band)]``; one unbanded entry for tables up to ``threshold`` columns."""
    if n_cols <= threshold:
        return [(list(range(n_cols)), None)]
    bands = [(list(range(min(BAND_WIDTH, n_cols))), [0, min(BAND_WIDTH, n_cols) - 1])]
    for start in range(BAND_WIDTH, n_cols, BAND_WIDTH - 1):
        stop = min(start + BAND_WIDTH - 1, n_cols)
        bands.append(([0, *range(start, stop)], [start, stop - 1]))
    return bands


def _escape_percent(text: str) -> str:
    return text.replace("%", "%%")


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_rows(grid: Grid, cols: list[int], fmt: str, rows: list[list[str]], first: int = 1) -> list[str]:
    """Render data rows (numbered from ``first``) over the columns ``cols``."""
    pick = itemgetter(*cols) if len(cols) > 1 else (lambda row: (row[cols[0]],))
    if fmt == "pipe":
        return [" | ".join(pick(row)) for row in rows]
    if fmt == "markdown":
        return ["| " + " | ".join(map(_markdown_cell, pick(row))) + " |" for row in rows]
    if fmt == "labelled":
        others = [c for c in cols if c not in grid.label_columns]
        template = _values_template(grid, others)
        return [f"{grid.label(row) or f'Row {number}'}: " + template % tuple([row[c] for c in others])
                for number, row in enumerate(rows, start=first)]
    # One %-format per row (cheaper than str.format, which parses its template on every call)
    # instead of a join over key=value pieces; a % in a column name is escaped, so the template
    # has exactly one field per column after the number.
    template = "Row %d: " + _values_template(grid, cols)
    return [template % (number, *pick(row)) for number, row in enumerate(rows, start=first)]


def _values_template(grid: Grid, cols: list[int]) -> str:
    """``name=%s; ...`` (a %-format template) over ``cols``, a spanning header said once per row:
    consecutive columns under one spanning header written once under it (``%% of Total: Train=%s,
    Test=%s``), and consecutive columns of one name (a spanning header with no header under it)
    that name once (``Year ended December 31=%s, %s``)."""
    groups = grid.groups or [""] * len(grid.columns)
    pieces: list[str] = []
    previous, previous_name = "", None
    for c in cols:
        group, name = groups[c], grid.columns[c]
        if group:
            sub = _escape_percent(name[len(group) + 3 :] if name.startswith(group + " / ") else name) + "=%s"
            if group == previous:
                pieces[-1] += ", " + sub
            else:
                pieces.append(f"{_escape_percent(group)}: {sub}")
        elif name == previous_name and not previous and c not in grid.unnamed:
            pieces[-1] += ", %s"
        else:
            pieces.append(_escape_percent(name) + "=%s")
        previous, previous_name = group, name
    return "; ".join(pieces)


def label_names(grid: Grid, cols: list[int]) -> str:
    """The names of the label columns among ``cols``, joined by `` / `` ("" when they have none):
    what ``labelled`` rows, which start with the label's text, never write."""
    return " / ".join(grid.columns[c] for c in cols if c in grid.label_columns and c not in grid.unnamed)


def header_line(grid: Grid, cols: list[int], fmt: str, short_key: bool = False) -> str:
    """The line naming the columns above a batch ("" for formats that name them in each row);
    ``short_key``: the first column (a later band's key, named again) by its short form."""
    names = [grid.columns[c] for c in cols]
    if short_key:
        names[0] = short_form(names[0])
    if fmt == "pipe":
        return " | ".join(names)
    if fmt == "markdown":
        names = [_markdown_cell(name) for name in names]
        return "| " + " | ".join(names) + " |\n|" + "---|" * len(cols)
    return ""


def _meta(
    rec: Rec, fmt: str, rows: tuple[int, int] | None = None, band: list[int] | None = None
) -> dict[str, Any]:
    meta = {"table_block_id": rec.block_id, "row_start": rows[0] if rows else None,
            "row_end": rows[1] if rows else None, "col_band": band, "table_format": fmt}
    return _with_duplicates(rec, meta)


def _with_duplicates(rec: Rec, meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` naming the tables emitted once as this one (``duplicate_block_ids``), if any."""
    if rec.grid is not None and rec.grid.duplicate_block_ids:
        meta["duplicate_block_ids"] = list(rec.grid.duplicate_block_ids)
    return meta


class _Batcher:
    """Row batches of one column band (see the module doc)."""

    def __init__(self, rec: Rec, grid: Grid, cols: list[int], band: list[int] | None,
                 openings: tuple[list[Part], list[Part]], section: Section, config: ChunkingConfig,
                 budget: Budget, form: RowForm) -> None:
        fmt = form.fmt
        self.rec, self.grid, self.cols, self.band, self.fmt = rec, grid, cols, band, fmt
        self.first_opening, self.opening = openings
        self.section = section
        later_band = band is not None and band[0] > 0
        self.lines = (render_rows(grid, cols, fmt, grid.rows) if form.written is None
                      else render_plain(grid, cols, grid.rows, form.written, later_band))
        counter = budget.counter
        self.units = counter.measure(self.lines)
        self.sums = [0, *accumulate(self.units)]
        self.opening_tokens = sum(counter.count_joined(p.text, (p.units,)) for p in self.opening)
        self.first_tokens = sum(counter.count_joined(p.text, (p.units,)) for p in self.first_opening)
        self.tokens = counts(counter, self.lines, self.units)
        self.token_sums = [0, *accumulate(self.tokens)]
        self.rows_per_chunk = config.table_rows_per_chunk
        self.batch_tokens = config.table_batch_tokens
        self.fits = budget.packer(lambda rows: self.draft(rows[0], rows[-1] + 1))

    def draft(self, i: int, j: int) -> Draft:
        """The draft of rows ``i..j-1``: its opening parts (the first batch's own, the others'
        repeated), then one part holding the rows."""
        lines = self.lines[i:j]
        opening = self.first_opening if i == 0 else self.opening
        body = Part(self.rec, LINE_SEPARATOR.join(lines), self.sums[j] - self.sums[i],
                    LINE_SEPARATOR if opening else "", rows=TableRows(self.grid, self.cols, i, lines))
        meta = _meta(self.rec, self.fmt, (i + 1, j), self.band)
        draft = Draft([*opening, body], "table", self.section, meta)
        draft.table_header = tuple(self.opening)
        return draft

    def batches(self) -> list[Draft]:
        """The batches: the band whole when it fits one chunk (the budget and
        ``table_rows_per_chunk``: the one test of it), else batches of at most
        ``table_batch_tokens`` of rows."""
        drafts = self._batches(None)
        if len(drafts) > 1 and self.batch_tokens is not None:
            return self._batches(self.batch_tokens)
        return drafts

    def _batches(self, limit: int | None) -> list[Draft]:
        """The batches, each sized with the opening it has."""
        drafts: list[Draft] = []
        start, running = 0, self.first_tokens
        sums = self.token_sums
        for i in range(len(self.lines)):
            held = i - start
            if held and (held >= self.rows_per_chunk
                         or (limit is not None and sums[i + 1] - sums[start] > limit)
                         or not self.fits(range(start, i), i, running + self.tokens[i])):
                drafts.append(self.draft(start, i))
                start, running = i, self.opening_tokens
            running += self.tokens[i]
        if start < len(self.lines):
            drafts.append(self.draft(start, len(self.lines)))
        return drafts


def _row_drafts(rec: Rec, grid: Grid, titles: tuple[Part, Part] | None, section: Section,
                config: ChunkingConfig, budget: Budget, form: RowForm) -> list[Draft]:
    """Row batches per column band, each opening with the table's title and header line: the
    first batch of the table with the title as its own content (``titles[0]``) and of each band
    with its header line as its own content (the column names), the others repeating them
    (``titles[1]``, the title's first sentence; in their short forms where the call's allowance
    of repeated text cannot hold them)."""
    fmt = form.fmt
    drafts: list[Draft] = []
    for cols, band in column_bands(len(grid.columns), config.wide_table_col_threshold):
        repeated = [titles[1]] if titles is not None else []
        own = [titles[0] if not drafts else titles[1]] if titles is not None else []
        if fmt in _HEADED_FORMATS:
            head = header_line(grid, cols, fmt, form.written is not None and band is not None and band[0] > 0)
            line = Part(rec, head, budget.measure(head), LINE_SEPARATOR if repeated else "", True)
            repeated.append(line)
            own.append(line._replace(repeated=False))
        elif fmt == "labelled" and (head := label_names(grid, cols)):
            own.append(Part(rec, head, budget.measure(head), LINE_SEPARATOR if own else ""))
        batches = _Batcher(rec, grid, cols, band, (own, repeated), section, config, budget, form).batches()
        drafts.extend(_repeated_openings(batches, budget))
    return drafts


def _repeated_openings(batches: list[Draft], budget: Budget) -> list[Draft]:
    """The batches, their repeated title and header line charged to the call's allowance of
    repeated text; where it cannot hold them, each in its short form."""
    if budget.repeats.take(sum(len(p.text) for draft in batches for p in draft.parts if p.repeated)):
        return batches
    for draft in batches:
        draft.parts = [_short_part(p, budget) if p.repeated else p for p in draft.parts]
        draft.table_header = tuple(_short_part(p, budget) for p in draft.table_header)
    return batches


def _short_part(part: Part, budget: Budget) -> Part:
    text = short_form(part.text)
    return part if text == part.text else part._replace(text=text, units=budget.measure(text))


class RowForm(NamedTuple):
    """How a table's rows are written: ``fmt``, the format, and ``written`` the long texts
    already written (``None``: the format as configured; a set: the plain form)."""

    fmt: str
    written: set[str] | None = None


def row_form(grid: Grid, config: ChunkingConfig, budget: Budget) -> RowForm:
    """The configured format when the call's allowance of repeated text holds what the table's
    rows repeat (:func:`repeated_row_chars`), else the plain form (see the module doc)."""
    fmt = config.table_chunk_format
    bands = column_bands(len(grid.columns), config.wide_table_col_threshold)
    if budget.repeats.take(repeated_row_chars(grid, [cols for cols, _ in bands], fmt)):
        return RowForm(fmt)
    return RowForm("pipe", set())


def repeated_row_chars(grid: Grid, bands: list[list[int]], fmt: str) -> int:
    """The characters a table's rows repeat, counted from the grid before any row is written (in
    C passes): the column names every row record writes (``row_record``, ``labelled``), the text
    the rows write beyond the cells' own (a spanning cell at every position it covers), and the
    key column and its name in every band after the first."""
    total = max(0, sum(map(len, chain.from_iterable(grid.rows))) - grid.text_chars)
    if len(bands) > 1:
        key = len(grid.columns[0]) + sum(map(len, map(itemgetter(0), grid.rows)))
        total += (len(bands) - 1) * key
    if fmt in ("row_record", "labelled"):
        for cols in bands:
            total += len(grid.rows) * sum(len(grid.columns[c]) for c in cols
                                          if fmt == "row_record" or c not in grid.label_columns)
    return total


def render_plain(grid: Grid, cols: list[int], rows: list[list[str]], written: set[str],
                 later_band: bool) -> list[str]:
    """Rows in the plain form: ``pipe`` lines where a text of
    :data:`~longparser.repeats.DITTO_MIN_CHARS` characters or more already written in the table
    reads :data:`~longparser.repeats.DITTO`, and the key column of a later band its short form."""
    lines = []
    for row in rows:
        cells = []
        for c in cols:
            text = row[c]
            if len(text) >= DITTO_MIN_CHARS:
                if later_band and c == cols[0]:
                    text = short_form(text)
                elif text in written:
                    text = DITTO
                else:
                    written.add(text)
            cells.append(text)
        lines.append(" | ".join(cells))
    return lines


def _schema_draft(rec: Rec, grid: Grid, title: Part | None, section: Section, fmt: str,
                  budget: Budget) -> Draft:
    """Counts, column types and null rates, and up to :data:`SAMPLE_ROWS` sample rows (the fit
    stage shows fewer where a maximum holds: one part per sample line, the last ones)."""
    profiles = column_profiles(grid)
    described = "; ".join(f"{p['name']} ({p['type']}, {round(p['null_rate'] * 100)}% null)" for p in profiles)
    description = (f"Table schema: {len(grid.rows)} data rows, {len(grid.columns)} columns.\n"
                   f"Columns: {described}\nSample rows:")
    columns = list(range(len(grid.columns)))
    samples = render_rows(grid, columns, fmt, grid.rows[:SAMPLE_ROWS])
    head = [header_line(grid, columns, fmt)] if fmt in _HEADED_FORMATS and samples else []
    units = budget.counter.measure([description, *head, *samples])
    parts = [*([title] if title is not None else []), Part(rec, description, units[0], LINE_SEPARATOR)]
    parts += [Part(rec, line, n, LINE_SEPARATOR, True)
              for line, n in zip(head, units[1 : 1 + len(head)], strict=True)]
    parts += [Part(rec, line, n, LINE_SEPARATOR)
              for line, n in zip(samples, units[1 + len(head):], strict=True)]
    meta: dict[str, Any] = {"table_block_id": rec.block_id, "n_rows": len(grid.rows),
                            "n_cols": len(grid.columns), "columns": profiles, "table_format": fmt,
                            "sample_rows": len(samples)}
    return Draft(parts, "table_schema", section, _with_duplicates(rec, meta))


def title_label(text: str) -> str:
    """What later chunks repeat of a table's title: its first sentence that says more than the
    table's name ("Table 1: DocLayNet dataset overview." of a title and its legend)."""
    stripped = text.strip()
    for start in sentence_starts(stripped)[1:]:
        head = stripped[:start].rstrip()
        if len(head.split()) > TITLE_NAME_WORDS:
            return head
    return stripped


def _opened_by(title: Part, draft: Draft) -> None:
    """Put ``title`` (primary) on its own line at the top of ``draft``."""
    first, *rest = draft.parts
    draft.parts = [title, first.after(LINE_SEPARATOR), *rest]


def _whole(rec: Rec, text: str, section: Section, meta: dict[str, Any], budget: Budget) -> Draft:
    """A table draft of one piece of text (the table's own text, a header line)."""
    return Draft([Part(rec, text, budget.measure(text))], "table", section, meta)


def table_drafts(seg: TableSeg, section: Section, config: ChunkingConfig, budget: Budget) -> list[Draft]:
    """All drafts of one table block, in emission order (see the module doc), the first opened
    by the table's lead-in when it has one."""
    drafts = _own_drafts(seg, section, config, budget)
    if seg.lead is not None:
        _opened_by(Part(seg.lead, seg.lead.text, seg.lead.units), drafts[0])
    return drafts


def _own_drafts(seg: TableSeg, section: Section, config: ChunkingConfig, budget: Budget) -> list[Draft]:
    """The drafts of the table and its title."""
    rec, grid, title_rec = seg.table, seg.table.grid, seg.caption
    fmt = config.table_chunk_format
    title = None if title_rec is None else Part(title_rec, title_rec.text, title_rec.units)
    if grid is None or not grid.rows:
        text = rec.text if grid is None else header_line(grid, list(range(len(grid.columns))), "pipe")
        drafts = [_whole(rec, text, section, _meta(rec, "text" if grid is None else fmt), budget)]
        if grid is not None and config.generate_schema_chunks:
            drafts.insert(0, _schema_draft(rec, grid, None, section, fmt, budget))
        if title is not None:
            _opened_by(title, drafts[0])
        return drafts
    form = row_form(grid, config, budget)
    fmt = form.fmt
    if not config.table_titles:
        drafts = _row_drafts(rec, grid, None, section, config, budget, form)
        if config.generate_schema_chunks:
            drafts.insert(0, _schema_draft(rec, grid, None, section, fmt, budget))
        if title is not None:
            _opened_by(title, drafts[0])
        return drafts
    repeated = None
    if title is not None:
        label = title_label(title.text)
        repeated = title._replace(text=label, units=budget.measure(label), repeated=True)
    titles = None if title is None else (title, repeated)
    drafts = _row_drafts(rec, grid, titles, section, config, budget, form)
    if config.generate_schema_chunks:
        drafts.append(_schema_draft(rec, grid, repeated, section, fmt, budget))
    return drafts


def _packed(tables: list[Draft]) -> Draft:
    """Whole tables' drafts as one draft, each table after a blank line."""
    first = tables[0]
    parts = list(first.parts)
    for draft in tables[1:]:
        head, *rest = draft.parts
        parts += [head.after(PACKED_SEPARATOR), *rest]
    meta = {**first.meta, "row_start": None, "row_end": None, "col_band": None,
            "table_block_ids": [draft.meta["table_block_id"] for draft in tables]}
    duplicates = [block_id for draft in tables for block_id in draft.meta.get("duplicate_block_ids", ())]
    if duplicates:
        meta["duplicate_block_ids"] = duplicates
    return Draft(parts, "table", first.section, meta)


def pack_tables(tables: list[list[Draft]], budget: Budget) -> list[Draft]:
    """With ``pack_tables``: consecutive tables (nothing between them) that each make a single
    chunk (:meth:`_Batcher.batches`: within the budget and ``table_rows_per_chunk`` rows) are
    packed together while they fit, like paragraphs (a spreadsheet or a form converted as many
    small tables: a label table beside its value table). ``tables``: each table's drafts, in
    order; a table of more than one chunk is never packed."""
    counter = budget.counter
    fits = budget.packer(_packed)
    out: list[Draft] = []
    group: list[Draft] = []
    running = 0
    for drafts in tables:
        whole = drafts[0] if len(drafts) == 1 and drafts[0].kind == "table" else None
        tokens = whole.tokens(counter) if whole is not None else 0
        if group and (whole is None or not fits(group, whole, running + tokens)):
            out.append(group[0] if len(group) == 1 else _packed(group))
            group, running = [], 0
        if whole is None:
            out.extend(drafts)
            continue
        group.append(whole)
        running += tokens
    if group:
        out.append(group[0] if len(group) == 1 else _packed(group))
    return out
