"""Stage 2: light internal records, exclusions, equation re-tagging.

The caller's blocks are never touched: each kept block becomes a :class:`Rec`, a slotted
record that the later stages read instead of the caller's model or dict (attribute access on
a slotted object is several times cheaper than on a model, and re-tagging a record cannot
mutate the caller's Block or dict). prepare reads each block's fields as
:mod:`longparser.intake` hands them over (a dict, validated, Block's defaults applied).

Decisions (docs/chunking.md has the rules):

* Exclusions run before equation detection, so the "previous text" handed to the detector
  is the previous *kept* block (a page footer between a lead-in and its formula must not
  hide the lead-in).
* Check order per block: header/footer (when ``exclude_headers_footers``), then blank, then
  separator-only. A table block with cells is never blank (its text may be empty). Blank
  text has no character a reader sees: whitespace, control and format characters only (a
  stray ``\x84`` where a PDF's bullet glyph was, a zero-width space).
* Separator-only: every character is one of ``_ - = . · •``, whitespace, or a box-drawing
  character (U+2500-U+257F), and at least one such character is present.
* Only ``paragraph`` blocks are re-tagged; blocks the extractor typed ``equation`` stay
  equations and are not counted in ``equations_detected`` (that stat counts re-tags).
* With ``exclude_headers_footers`` off, headers and footers are ordinary content.
* A table whose cells are those of the table before it in its section (the converter emitted
  it twice; other blocks, a caption, may come between, another table may not) is kept once:
  the later one is counted in ``excluded_counts["duplicate_table"]`` and its block id joins
  the first one's ``Grid.duplicate_block_ids`` (its chunks name it). A list converted as a
  table (:func:`~longparser.tables.list_items`) becomes one ``list_item`` record, its items
  on lines of their own.
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Iterable
from operator import attrgetter
from typing import Any

from longparser.boxes import keep_box
from longparser.equations import looks_like_equation
from longparser.repeats import RepeatAllowance
from longparser.tables import Grid, build_grid, table_key
from longparser.tokens import TokenCounter, counts
from schemas import ChunkingConfig

_TEXT = attrgetter("text")

_SEPARATOR_CHARS = frozenset("_-=.·•") | frozenset(chr(c) for c in range(0x2500, 0x2580))
# A block whose text starts with one of these is neither blank nor separator-only: unless it is a
# header/footer, it is kept without calling exclusion_reason (the usual block).
_KEPT_FIRST_CHARS = frozenset(string.ascii_letters + string.digits)
_HEADER_FOOTER = frozenset({"header", "footer"})
_INVISIBLE = frozenset({"Cc", "Cf"})


class Rec:
    """One kept block, as the stages see it.

    Attributes:
        pos: index in the caller's sequence (reading order; the chunk order key).
        block_id, kind, text, page, path, confidence: from the block (kind may be re-tagged).
        origin, x0, y0, x1, y1: the block's box (:func:`longparser.boxes.keep_box`); ``origin``
            None when it has none (the edges are then unset).
        units, tokens: the token counter's measure and count of ``text`` (0 for table blocks,
            whose drafts measure their own rendered rows).
        grid: a structured table block's grid (built here, so the block's pydantic cells can be
            freed as soon as the block is read: memory stays flat on large documents), or None
            (every other block, and a table block without cells).
    """

    __slots__ = (
        "block_id", "confidence", "grid", "kind", "origin", "page", "path", "pos", "text", "tokens", "units",
        "x0", "x1", "y0", "y1",
    )

    def __init__(
        self,
        pos: int,
        block_id: str,
        kind: str,
        text: str,
        page: int | None,
        path: tuple[str, ...],
        confidence: float,
        grid: Grid | None,
    ) -> None:
        self.pos, self.block_id, self.kind, self.text = pos, block_id, kind, text
        self.page, self.path, self.confidence = page, path, confidence
        self.grid, self.units, self.tokens, self.origin = grid, 0, 0, None

    def __repr__(self) -> str:  # debugging aid only
        return f"Rec({self.pos}, {self.block_id!r}, {self.kind!r}, {self.text[:30]!r})"


def is_separator(text: str) -> bool:
    """True for separator-only text such as ``-----``, ``· · ·`` or a box-drawing rule."""
    seen = False
    for char in text:
        if char in _SEPARATOR_CHARS:
            seen = True
        elif not char.isspace():
            return False
    return seen


def _invisible(text: str) -> bool:
    """Only whitespace and control or format characters (a stray C1 control such as ``\x84``, a
    zero-width space): nothing a reader sees."""
    return all(char.isspace() or unicodedata.category(char) in _INVISIBLE for char in text)


def exclusion_reason(kind: str, text: str, has_cells: bool, exclude_headers_footers: bool) -> str | None:
    """Why a block is excluded (``header``/``footer``/``blank``/``separator``), or None.

    ``has_cells``: the block carries a table with at least one cell.
    """
    if exclude_headers_footers and (kind == "header" or kind == "footer"):
        return kind
    if kind == "table" and has_cells:
        return None
    if not text or text.isspace() or _invisible(text):
        return "blank"
    first = text.lstrip()[0]  # is_separator stops at the first other character: test it here first
    if first in _SEPARATOR_CHARS and is_separator(text):
        return "separator"
    return None


def prepare(
    blocks: Iterable[dict[str, Any]], config: ChunkingConfig, counter: TokenCounter,
    repeats: RepeatAllowance | None = None,
) -> tuple[list[Rec], dict[str, int], int]:
    """Exclude, re-tag and convert blocks (their validated fields: see :mod:`longparser.intake`).

    Every kept block's text is measured once, in one batch (a tokenizer counter batches them).
    ``repeats``: the call's allowance of repeated text, grown by each kept block's text and
    charged with a table's repeated column names (:func:`~longparser.tables.build_grid`).

    Returns:
        ``(records, excluded_counts, equations_detected)``; ``excluded_counts`` holds only
        non-zero reasons.
    """
    records: list[Rec] = []
    excluded: dict[str, int] = {}
    retagged = 0
    previous_text: str | None = None
    detect = config.detect_equations
    drop_hf = config.exclude_headers_footers
    infer_header = config.table_header_inference
    last_list: list[str] | None = None
    path: tuple[str, ...] = ()
    grown = 0  # the records whose text ``repeats`` has counted
    previous_table: tuple[tuple[Any, ...], Grid] | None = None  # (its section and table_key, its grid)
    for pos, block in enumerate(blocks):
        kind, text, table = block["type"], block["text"], block["table"]
        cells = None if table is None else table["cells"]
        if text[:1] not in _KEPT_FIRST_CHARS or kind in _HEADER_FOOTER:
            reason = exclusion_reason(kind, text, bool(cells), drop_hf)
            if reason is not None:
                excluded[reason] = excluded.get(reason, 0) + 1
                continue
        if detect and kind == "paragraph" and looks_like_equation(text, previous_text):
            kind = "equation"
            retagged += 1
        if block["hierarchy_path"] != last_list:  # consecutive blocks share one path tuple
            last_list = block["hierarchy_path"]
            path = tuple(last_list)
        grid = None
        if kind == "table" and cells:
            if repeats is not None:  # the text read so far, before the table's names are charged
                repeats.grow(sum(map(len, map(_TEXT, records[grown:]))) + len(text))
                grown = len(records) + 1
            grid = build_grid(cells, infer_header, repeats)
            if grid.list_items is not None:  # a list converted as a table is chunked as a list
                kind, text, grid = "list_item", "\n".join(grid.list_items), None
            else:
                key = (path, table_key(grid))
                if previous_table is not None and previous_table[0] == key:
                    previous_table[1].duplicate_block_ids.append(block["block_id"])
                    excluded["duplicate_table"] = excluded.get("duplicate_table", 0) + 1
                    continue
                previous_table = (key, grid)
        provenance = block["provenance"]
        rec = Rec(pos, block["block_id"], kind, text, provenance["page_number"], path,
                  block["confidence"]["overall"], grid)
        if provenance["bbox"] is not None:
            keep_box(rec, provenance["bbox"])
        records.append(rec)
        previous_text = text
    if repeats is not None:
        repeats.grow(sum(map(len, map(_TEXT, records[grown:]))))
    counted = [rec for rec in records if rec.kind != "table"]
    texts = [rec.text for rec in counted]
    units = counter.measure(texts)
    for rec, n, tokens in zip(counted, units, counts(counter, texts, units), strict=True):
        rec.units, rec.tokens = n, tokens
    return records, excluded, retagged
