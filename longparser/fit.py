"""Stage 7: strict mode (``strict_max_tokens``), every chunk's final text at most ``max_tokens``.

The stages before this one already aim at the budget (packing, list pieces, table rows and
schema samples, merges are sized with the chunk's real count). This stage makes the maximum
true by construction whatever the counter: it recounts every draft as it will be emitted
(``embed_text`` when ``heading_context`` is on: the breadcrumb counts) and cuts any draft that
is over, the way semchunk and docling-core's HybridChunker do: split at the coarsest natural
boundary, then pack the pieces again.

* A draft over the budget is cut between its parts (blocks, list items, row batches) into
  pieces that fit. Each later piece repeats what its content needs to be understood: a list's
  lead-in (like every later list piece), a pipe table's header line. Overlap is not repeated.
  Headings never end a piece that content follows: they move on with that content, unless not
  even the first word of it fits beside them (then they stand alone: no word is cut to follow
  a heading, caption, lead-in or header line, and repeated text gives way before a word is cut;
  a later piece that would need a word cut beside them goes on whole, to be cut where it goes).
* A part too long for any piece (an oversized paragraph or list item) is cut at line breaks,
  then sentence ends, then word boundaries, and a single over-long word by the counter's own
  prefix search (a tokenizer's offsets). A code block is cut at line ends only (each line
  keeps its indentation); only a single line longer than a piece is cut further. Every piece
  keeps its block's id and page; the chunk's metadata ``block_parts`` says which part of which
  block it holds.
* A table says where it may be cut (:class:`~longparser.build.TableRows`): a row batch between
  its rows; a row too long alone between its cells, written as records (``Row 3: Name=Ada;
  B=...``), every piece repeating the row's number and its label cells (the row-header cells,
  else column 0), a cell too long cut at words under them and its column's name again. Every
  piece of a table repeats the table's title and header line; ``row_start``/``row_end`` say
  which rows each piece holds.
* A schema chunk is never cut: its last sample rows are dropped until it fits
  (``metadata.sample_rows`` says how many are shown); only a description that cannot fit even
  alone (a table of very many columns) is cut.
* Repeated text may take at most :data:`~longparser.budget.REPEAT_SHARE` of the budget: a longer
  breadcrumb loses its outermost titles first (the last one left is cut to fit), a longer
  lead-in or header line is cut. Repeated text is shortened, never content.

Nothing is lost: every non-whitespace character of kept text is in some chunk, in order.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

from longparser.breadcrumbs import BREADCRUMB_SEPARATOR, breadcrumb
from longparser.budget import Budget
from longparser.build import LINE_SEPARATOR, Draft, Part, TableRows
from longparser.cutting import CODE_LEVELS, LEVELS, fitting_tail, split_spans
from longparser.errors import RequestRefused

# --- repeated text: breadcrumbs, lead-ins, header lines ----------------------------------------


def shorten_breadcrumb(draft: Draft, budget: Budget) -> None:
    """Keep the breadcrumb within the repeat share: drop outer titles, then cut the last one."""
    titles = list(draft.section.crumbs)
    while titles and not _within_share(BREADCRUMB_SEPARATOR.join(titles), budget):
        if len(titles) == 1:
            titles = [_shortened(titles[0], budget, keep_end=False)]
            break
        titles = titles[1:]
    if list(draft.section.crumbs) != titles:
        draft.breadcrumb = titles


def _within_share(text: str, budget: Budget) -> bool:
    return budget.count(text) <= budget.repeat_tokens


def _shortened(text: str, budget: Budget, keep_end: bool) -> str:
    """``text`` cut to the repeat share: its end (a lead-in: what it says is listed) or start."""
    if _within_share(text, budget):
        return text
    if keep_end:
        return fitting_tail(text, lambda tail: _within_share(tail, budget))
    spans = split_spans(text, lambda head: _within_share(head, budget), budget.counter)
    return text[spans[0][0] : spans[0][1]] if spans else ""


def _empty_piece(draft: Draft, budget: Budget, *, first: bool) -> Draft:
    """An empty draft for a piece of ``draft``: its kind, section, metadata and what its pieces
    repeat. The first piece keeps ``draft``'s prefix (overlap, a repeated lead-in); a later piece
    repeats the list's lead-in, if any. A repeated lead-in is shortened to the repeat share."""
    if first:
        lead_in, prefix, prefix_units = draft.repeated_lead_in, draft.prefix, draft.prefix_units
        overlap_ids = list(draft.overlap_ids)
    else:
        lead_in, prefix, prefix_units, overlap_ids = draft.lead_in, "", 0, []
    piece = draft.evolve(parts=[], meta=dict(draft.meta), overlap_ids=overlap_ids, prefix=prefix,
                         prefix_units=prefix_units, repeated_lead_in=lead_in,
                         after_boundary=first and draft.after_boundary)
    if lead_in is not None:
        text = _shortened(lead_in.text, budget, keep_end=True)
        piece.set_prefix(text + LINE_SEPARATOR, budget.measure(text))
    return piece


def _cut_row(part: Part) -> bool:
    """A piece of a table row cut between its cells (records name their columns)."""
    return part.rows is not None and part.rows.cut


def _shortened_repeat(part: Part, budget: Budget) -> Part:
    """A repeated part (a title, a header line) shortened to the repeat share, keeping its start."""
    text = _shortened(part.text, budget, keep_end=False)
    return part if text == part.text else part._replace(text=text, units=budget.measure(text), span=None)


def _table_header(draft: Draft, budget: Budget, upcoming: Part | None) -> list[Part]:
    """The parts a later piece of a table draft starts with (its title and header line, each
    shortened to the repeat share; no header line above the pieces of a row cut between its
    cells, which name their columns)."""
    parts = []
    for head in draft.table_header:
        if upcoming is not None and _cut_row(upcoming) and head.rec.kind == "table":
            continue
        text = _shortened(head.text, budget, keep_end=False)
        parts.append(Part(head.rec, text, budget.measure(text), LINE_SEPARATOR if parts else "", True))
    return parts


# --- tables: rows, cells, sample rows ----------------------------------------------------------


def _row_parts(piece: Part, rows: TableRows, budget: Budget) -> list[Part]:
    """A row batch as one part per row."""
    return [Part(piece.rec, line, budget.measure(line), piece.sep if k == 0 else LINE_SEPARATOR,
                 piece.repeated, None, TableRows(rows.grid, rows.columns, rows.start + k, [line]))
            for k, line in enumerate(rows.lines)]


def _cell_parts(piece: Part, rows: TableRows, draft: Draft, budget: Budget) -> list[Part] | None:
    """A row too long alone, cut between its cells (see the module doc); None if not even a
    fragment of it fits beside what ``draft`` holds.

    Each piece is ``Row N: `` then the row's label cells, then as many other cells as fit; a
    cell too long even so is cut under ``Row N: <label cells>; name=``, else under ``Row N:
    name=``, else written bare after its name on a piece of its own (repeated text gives way to
    content)."""
    grid, n = rows.grid, rows.start + 1
    row = grid.rows[rows.start]
    sep = piece.sep if draft.parts else ""

    def made(text: str) -> Part:
        return Part(piece.rec, text, budget.measure(text), sep, False, None,
                    TableRows(grid, rows.columns, rows.start, [text], cut=True))

    def fits(text: str) -> bool:
        return budget.fits(draft.evolve(parts=[*draft.parts, made(text)]))

    cells = [(grid.columns[c], row[c]) for c in rows.columns]
    key_columns = [c for c in rows.columns if c in grid.label_columns] or rows.columns[:1]
    keys = [f"{grid.columns[c]}={row[c]}" for c in key_columns]
    label = f"Row {n}: "
    if not fits(label + "; ".join(keys)):  # label cells too long to repeat: written once, as cells
        keys = []

    def written(group: list[str]) -> str:
        return label + "; ".join([*keys, *group])

    texts: list[str] = []
    group: list[str] = []
    for c, (name, value) in zip(rows.columns, cells, strict=True):
        if keys and c in key_columns:
            continue
        cell = f"{name}={value}"
        if fits(written([*group, cell])):
            group.append(cell)
            continue
        if group:
            texts.append(written(group))
            group = []
        if fits(written([cell])):
            group = [cell]
            continue
        cut = _cut_cell(name, value, [written([f"{name}="]), f"{label}{name}="], fits, budget)
        if cut is None:
            return None
        texts.extend(cut)
    if group or not texts:
        texts.append(written(group))
    if keys and not any(text.startswith(written([])) for text in texts):
        texts.insert(0, written([]))  # the label cells, once at least
    return [made(text) for text in texts]


def _cut_cell(name: str, value: str, heads: list[str], fits: Callable[[str], bool],
              budget: Budget) -> list[str] | None:
    """One cell's value cut under the first of ``heads`` it fits under; else its name and its
    value bare, each cut as it must be; None if not even one character fits."""
    for head in heads:
        spans = split_spans(value, lambda fragment, head=head: fits(head + fragment), budget.counter)
        if spans is not None and spans:
            return [head + value[s:e] for s, e in spans]
    texts = []
    for text in (name, value):
        spans = split_spans(text, fits, budget.counter)
        if spans is None:
            return None
        texts.extend(text[s:e] for s, e in spans)
    return texts


def _table_pieces(piece: Part, draft: Draft, budget: Budget) -> list[Part] | None:
    """A table part cut where the table allows: between rows, else between one row's cells."""
    rows = piece.rows
    assert rows is not None
    if rows.cut:
        return _text_pieces(piece._replace(rows=None), draft, budget)
    if len(rows.lines) > 1:
        return _row_parts(piece, rows, budget)
    # the row's pieces name their columns: the header line above them goes
    draft.parts = [p for p in draft.parts if not (p.rec.kind == "table" and p.rows is None)]
    return _cell_parts(piece, rows, draft, budget)


def _row_meta(piece: Draft) -> None:
    """A table piece's ``row_start``/``row_end``: the rows it holds."""
    ranges = [p.rows.row_range() for p in piece.parts if p.rows is not None]
    if ranges:
        piece.meta["row_start"], piece.meta["row_end"] = ranges[0][0], ranges[-1][1]


def _fewer_samples(draft: Draft, budget: Budget) -> Draft:
    """A schema draft with its last sample rows dropped until it fits (the header line above
    them goes with the last one)."""
    shown = draft.meta.get("sample_rows", 0)
    parts = draft.parts
    while shown and not budget.fits(draft):
        parts, shown = parts[:-1], shown - 1
        if not shown and parts and parts[-1].repeated:
            parts = parts[:-1]
        draft = draft.evolve(parts=parts, meta={**draft.meta, "sample_rows": shown})
    return draft


# --- cutting a draft into pieces -------------------------------------------------------------


_LEADING_KINDS = frozenset({"heading", "caption"})


def _leads(piece: Part) -> bool:
    """A heading or caption: it belongs with the content after it, never at a piece's end."""
    return piece.rec.kind in _LEADING_KINDS and not piece.repeated


def _opens(piece: Part, draft: Draft) -> bool:
    """A heading, a caption, the list's lead-in or a table's header line: it opens what follows,
    never ends a piece."""
    if piece.repeated:
        return False
    return _leads(piece) or piece.rec is draft.lead_in or _header_line(piece, draft)


def _header_line(piece: Part, draft: Draft) -> bool:
    """A table's header line (its first batch's own; later pieces repeat it)."""
    return piece.rec.kind == "table" and piece.rows is None and any(
        piece.text == head.text for head in draft.table_header)


def _has_content(draft: Draft) -> bool:
    """Whether ``draft`` holds a source part besides what only opens content (repeated text aside)."""
    return any(not p.repeated and not _opens(p, draft) for p in draft.parts)


def _text_pieces(piece: Part, draft: Draft, budget: Budget) -> list[Part] | None:
    """``piece`` cut so that each cut fits after what ``draft`` holds; None if not even a
    fragment of it fits there, or not even its first word after a heading, caption or lead-in
    (they then stand alone) or beside repeated text (which gives way first): a word is cut only
    where nothing else could give it room."""
    text, (offset, _) = piece.text, piece.span or (0, 0)
    sep = piece.sep if draft.parts else ""

    def fits(candidate: str) -> bool:
        trial = draft.evolve(parts=[*draft.parts, Part(piece.rec, candidate, budget.measure(candidate), sep)])
        return budget.fits(trial)

    # beside openers or repeated text no word is cut (a word that does not fit beside them goes
    # on, with the rest, to where it is cut again)
    room_elsewhere = any(_opens(p, draft) for p in draft.parts) or _repeats_text(draft, budget)
    spans = split_spans(text, fits, budget.counter, CODE_LEVELS if piece.rec.kind == "code" else LEVELS,
                        whole_words=room_elsewhere)
    if spans is None:
        return None
    # a later cut is written after the text that separated it (whitespace, or nothing inside a word)
    seps = [sep, *[text[end:start] for (_, end), (start, _) in pairwise(spans)]]
    return [Part(piece.rec, text[s:e], budget.measure(text[s:e]), cut_sep, piece.repeated,
                 (offset + s, offset + e)) for cut_sep, (s, e) in zip(seps, spans, strict=True)]


def _appended(current: Draft, piece: Part, budget: Budget) -> list[Part]:
    """``current``'s parts with ``piece`` after them. A cut written right after the cut before it
    (a word cut in two) becomes one part again, measured as one: units only add up across
    whitespace; after anything else it starts a line."""
    parts = current.parts
    if parts and piece.sep == "" and piece.span and parts[-1].span and parts[-1].span[1] == piece.span[0]:
        before = parts[-1]
        text = before.text + piece.text
        return [*parts[:-1], Part(before.rec, text, budget.measure(text), before.sep, before.repeated,
                                  (before.span[0], piece.span[1]))]
    if not parts:
        return [piece.after("")]
    # the rest of a word cut in two, after other text (a repeated header line): a line of its own,
    # or it would run into that text (and count differently: units only add up across whitespace)
    return [*parts, piece.after(piece.sep or LINE_SEPARATOR)]


def _close(piece: Draft, pieces: list[Draft], hold_headings: bool = True) -> list[Part]:
    """Add ``piece`` to ``pieces``, holding back the headings (captions, a list's lead-in) it
    ends with when it has other content (they open the next piece); returns what was held back."""
    parts = piece.parts
    cut = len(parts)
    while hold_headings and cut > 0 and _opens(parts[cut - 1], piece):
        cut -= 1
    if not any(not p.repeated and not _opens(p, piece) for p in parts[:cut]):
        cut = len(parts)  # nothing but headings or captions: they stand alone
    piece.parts = parts[:cut]
    pieces.append(piece)
    return parts[cut:]


def _next_piece(draft: Draft, carried: list[Part], budget: Budget, upcoming: Part | None) -> Draft:
    """The next piece of ``draft``: what it repeats, then the headings carried over (a list's
    lead-in carried over is content again, not repeated)."""
    piece = _empty_piece(draft, budget, first=False)
    if any(p.rec is draft.lead_in for p in carried):
        piece.set_prefix("", 0)
        piece.repeated_lead_in = None
    opening = _table_header(draft, budget, upcoming)
    if carried:
        carried = [carried[0].after(LINE_SEPARATOR if opening else ""), *carried[1:]]
    piece.parts = opening + carried
    return piece


def _repeats_text(piece: Draft, budget: Budget) -> bool:
    """Whether ``piece`` repeats text that :func:`_drop_repeated_text` can give up."""
    return bool(piece.prefix or any(p.repeated for p in piece.parts)
                or (budget.with_breadcrumb and breadcrumb(piece)))


def _drop_repeated_text(piece: Draft, budget: Budget) -> bool:
    """Give up what an empty ``piece`` repeats when not even a fragment of content fits beside
    it: its prefix (a repeated lead-in or overlap), then its repeated parts (a header line), then
    its breadcrumb. Each is already within its own share, but together they can fill the
    budget; repeated text gives way, content never does. False when nothing is left."""
    if piece.prefix:
        piece.set_prefix("", 0)
        piece.repeated_lead_in, piece.overlap_ids = None, []
        return True
    if any(p.repeated for p in piece.parts):
        piece.parts = [p for p in piece.parts if not p.repeated]
        return True
    if budget.with_breadcrumb and breadcrumb(piece):
        piece.breadcrumb = []
        return True
    return False


def fit_draft(draft: Draft, budget: Budget) -> list[Draft]:
    """``draft`` if it fits, else the pieces it is cut into (see the module doc).

    Raises:
        RequestRefused: not even one character fits, with all repeated text given up.
    """
    if draft.kind == "table_schema":
        draft = _fewer_samples(draft, budget)
    if budget.fits(draft):
        return [draft]
    pieces: list[Draft] = []
    current = _empty_piece(draft, budget, first=True)
    queue = [_shortened_repeat(p, budget) if p.repeated else p for p in draft.parts]
    while queue:
        piece = queue.pop(0)
        trial = current.evolve(parts=_appended(current, piece, budget))
        if budget.fits(trial):
            current.parts = trial.parts
            continue
        if piece.repeated:  # repeated text is never cut: it gives way
            continue
        if _has_content(current):  # close it; the piece starts the next one
            current = _next_piece(draft, _close(current, pieces), budget, piece)
            queue.insert(0, piece)
            continue
        if piece.rows is None:
            cut = _text_pieces(piece, current, budget)
            if cut is not None and len(cut) == 1 and cut[0].text == piece.text:
                # whole, it fits after what ``current`` holds only as _text_pieces joins it, not
                # as it is appended (a line break instead of nothing, or a word joined to its
                # other half): cutting it again would give it back the same, for ever
                cut = None
        else:
            cut = _table_pieces(piece, current, budget)
        if cut is not None:
            queue[:0] = cut
        elif any(_opens(p, current) for p in current.parts):  # openers nothing fits beside
            _close(current, pieces)
            current = _next_piece(draft, [], budget, piece)
            queue.insert(0, piece)
        elif _drop_repeated_text(current, budget):
            queue.insert(0, piece)
        else:
            raise RequestRefused(f"{budget.described_limit()} leaves no room for text beside the "
                                 "text a chunk must repeat")
    if current.parts:
        _close(current, pieces, hold_headings=False)
    if draft.kind == "table":
        for done in pieces:
            _row_meta(done)
    return pieces


def fit_all(drafts: list[Draft], budget: Budget) -> list[Draft]:
    """Every draft fitted (see the module doc); reading order kept."""
    if budget.with_breadcrumb:
        for draft in drafts:
            shorten_breadcrumb(draft, budget)
    pieces = [piece for draft in drafts for piece in fit_draft(draft, budget)]
    # a caption after its table that had to stand alone goes back after the table's pieces
    pieces.sort(key=Draft.first_pos.fget)  # type: ignore[attr-defined]
    return pieces


def _piece_of_block_text(p: Part) -> bool:
    """A piece of its block's own text: a span of the text cut, not of a table row the engine
    rendered from cells (a structured table's pieces are told by ``row_start``/``row_end``)."""
    return p.span is not None and not p.repeated and p.rec.grid is None


def block_parts(drafts: list[Draft]) -> list[list[dict[str, Any]]]:
    """For each draft, the pieces of blocks it holds: ``{block_id, part, of, start, end}``, where
    ``block.text[start:end]`` is the piece as the chunk's text holds it (docs/chunking.md,
    "Provenance")."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for draft in drafts:
        for p in draft.parts:
            if _piece_of_block_text(p):
                spans.setdefault(p.rec.block_id, []).append(p.span)  # type: ignore[arg-type]
    numbers = {key: sorted(set(found)) for key, found in spans.items()}
    out = []
    for draft in drafts:
        out.append([
            {"block_id": p.rec.block_id, "part": numbers[p.rec.block_id].index(p.span) + 1,
             "of": len(numbers[p.rec.block_id]), "start": p.span[0], "end": p.span[1]}  # type: ignore[index]
            for p in draft.parts if _piece_of_block_text(p)
        ])
    return out
