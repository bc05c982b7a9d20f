"""The one place that builds chunks: :class:`Draft` units and their conversion to :class:`Chunk`.

Tables, lists and prose all become Drafts; merging, overlap and the strict fit work on
Drafts; :func:`to_chunk` is the only constructor of output chunks, so ids, pages, token
counts, equation flags and quality are derived the same way for every chunk type.

A Draft's text is ``prefix + body``:

* ``parts`` are the body's pieces in order: each a source record, the text it contributes
  (a block's text, a table row, a list item) and the separator written before it. A part
  marked ``repeated`` is text copied from elsewhere into the body (a lead-in kept inline when
  two list pieces merge, a table's header line): it is not a source.
* ``prefix`` is repeated text put before the body (a list's lead-in, paragraph overlap),
  with its separator; its block ids are recorded in metadata, never in ``block_ids``.

``block_ids``, ``page_numbers`` and ``boxes`` come from the source parts only. A chunk holding an
equation block is an ``equation`` chunk (table chunks keep their type).

A Draft is changed in place only by the stage that owns it; a trial (will this fit?) is a new
Draft made by :meth:`Draft.evolve`, which copies every field it is not given.
"""

from __future__ import annotations

from functools import partial
from itertools import repeat
from operator import attrgetter
from typing import Any, NamedTuple

from longparser.boxes import merged_boxes
from longparser.prepare import Rec
from longparser.sections import Section, introduces
from longparser.tables import Grid
from longparser.tokens import TokenCounter
from schemas import Chunk

PROSE_SEPARATOR = "\n\n"
LINE_SEPARATOR = "\n"
_TABLE_KINDS = frozenset({"table", "table_schema"})
_NO_PAGE = frozenset({None})  # a block from a source without pages (Markdown, text)
_validate_chunk = Chunk.__pydantic_validator__.validate_python  # Chunk.model_validate minus its wrapper


class TableRows(NamedTuple):
    """What a table part holds, so that the strict fit can cut it where a table may be cut:
    between its rows, and a row too long alone between its cells. The part's text is
    ``"\n".join(lines)``.

    Attributes:
        grid: the table.
        columns: the grid columns the lines show (a column band).
        start: the index in ``grid.rows`` of the first row held (row numbers count from 1).
        lines: the rendered rows, one per row.
        cut: the part is already a piece of row ``start`` cut between its cells (``lines`` holds
            its one line): it is not cut by rows again.
    """

    grid: Grid
    columns: list[int]
    start: int
    lines: list[str]
    cut: bool = False

    def row_range(self) -> tuple[int, int]:
        """The first and last row numbers held (1-based)."""
        return self.start + 1, self.start + (1 if self.cut else len(self.lines))


class Part(NamedTuple):
    """One piece of a draft's body (see the module doc).

    Attributes:
        rec: the block the text comes from.
        text: the text this piece contributes.
        units: the counter's measure of ``text``.
        sep: the separator written before ``text`` when it does not start the body.
        repeated: a copy of text from elsewhere (a repeated lead-in or header line), not a source.
        span: ``(start, end)`` of ``text`` in the block's text when it is a piece of a block cut
            to a strict maximum, else None.
        rows: the table rows ``text`` renders (a table's row batch), else None.
    """

    rec: Rec
    text: str
    units: int
    sep: str = ""
    repeated: bool = False
    span: tuple[int, int] | None = None
    rows: TableRows | None = None

    def after(self, sep: str) -> Part:
        """This part with ``sep`` written before it."""
        return self._replace(sep=sep)


_part_of_tuple = partial(tuple.__new__, Part)  # a Part from a 7-tuple, in C (many parts per document)


def parts_of(records: list[Rec], sep: str) -> list[Part]:
    """Each record's whole text as a part, joined by ``sep``."""
    return list(map(_part_of_tuple, zip(records, map(attrgetter("text"), records),
                                        map(attrgetter("units"), records), repeat(sep), repeat(False),
                                        repeat(None), repeat(None))))


def join_parts(parts: list[Part]) -> str:
    """The body text: the parts joined by their separators (the first part's is not written)."""
    if not parts:
        return ""
    pieces = [parts[0].text]  # separators and texts joined once (no string per separator + text)
    for part in parts[1:]:
        pieces.append(part.sep)
        pieces.append(part.text)
    return "".join(pieces)


class Draft:
    """A chunk in the making.

    Attributes:
        parts: the body's pieces (see the module doc).
        kind: the stage's type (section | table | table_schema | list); the chunk's type is
            :func:`chunk_type`, worked out from the parts once drafts are final.
        section: the section the chunk's content belongs to.
        meta: chunk metadata (tables: table_block_id, row_start, ...).
        prefix: repeated text before the body, with its separator, or "".
        prefix_units: the counter's measure of ``prefix``.
        repeated_lead_in: the list lead-in this draft repeats (in ``prefix`` or inline), or None.
        overlap_ids: block ids of the overlap paragraphs held in ``prefix``.
        lead_in: a list draft's lead-in (primary or repeated): what a piece cut from it repeats.
        table_header: a table draft's title and header line, as repeated parts: what every piece
            cut from it starts with.
        breadcrumb: the heading breadcrumb when strict mode shortened it (None: the section's).
        after_boundary: a semantic boundary separates this draft from the one before it (nothing
            merges across it, no overlap crosses it).
    """

    __slots__ = (
        "_body", "_parts", "after_boundary", "breadcrumb", "kind", "lead_in", "meta", "overlap_ids",
        "prefix", "prefix_units", "repeated_lead_in", "section", "table_header",
    )

    def __init__(
        self, parts: list[Part], kind: str, section: Section, meta: dict[str, Any] | None = None
    ) -> None:
        self._parts: list[Part] = parts
        self._body: str | None = None
        self.kind, self.section = kind, section
        self.meta = meta if meta is not None else {}
        self.prefix, self.prefix_units = "", 0
        self.repeated_lead_in: Rec | None = None
        self.overlap_ids: list[str] = []
        self.lead_in: Rec | None = None
        self.table_header: tuple[Part, ...] = ()
        self.breadcrumb: list[str] | None = None
        self.after_boundary = False

    def evolve(self, **changes: Any) -> Draft:
        """A new draft with ``changes`` (field names as attributes) and every other field copied
        (``meta`` and ``overlap_ids`` are shared unless given)."""
        new = Draft.__new__(Draft)
        parts = changes.pop("parts", None)
        if parts is None:
            new._parts, new._body = self._parts, self._body
        else:
            new._parts, new._body = parts, None
        new.kind, new.section, new.meta = self.kind, self.section, self.meta
        new.prefix, new.prefix_units = self.prefix, self.prefix_units
        new.repeated_lead_in, new.overlap_ids = self.repeated_lead_in, self.overlap_ids
        new.lead_in, new.table_header, new.breadcrumb = self.lead_in, self.table_header, self.breadcrumb
        new.after_boundary = self.after_boundary
        for name, value in changes.items():
            setattr(new, name, value)
        return new

    @property
    def parts(self) -> list[Part]:
        return self._parts

    @parts.setter
    def parts(self, parts: list[Part]) -> None:
        self._parts, self._body = parts, None

    @property
    def body(self) -> str:
        if self._body is None:
            self._body = join_parts(self._parts)
        return self._body

    @property
    def text(self) -> str:
        return self.prefix + self.body if self.prefix else self.body

    def units(self) -> list[int]:
        """The measures of the text's pieces: the body's parts, then the prefix."""
        units = [p.units for p in self._parts]
        if self.prefix:
            units.append(self.prefix_units)
        return units

    def tokens(self, counter: TokenCounter) -> int:
        """The counter's count of the current text, from the measures of its pieces."""
        return counter.count_joined("" if counter.additive else self.text, self.units())

    @property
    def sources(self) -> list[Rec]:
        """The source records in reading order, each once."""
        return sorted({p.rec for p in self._parts if not p.repeated}, key=attrgetter("pos"))

    def primary_texts(self) -> list[str]:
        """The texts of the body's own parts (not repeated ones, not the prefix): what the
        chunk's id is made of (:mod:`longparser.ids`). The whole body when every part is a repeat."""
        return [p.text for p in self._parts if not p.repeated] or [self.body]

    @property
    def path(self) -> tuple[str, ...]:
        return self.section.path

    @property
    def is_table(self) -> bool:
        return self.kind in _TABLE_KINDS

    @property
    def first_pos(self) -> int:
        """Reading-order position of the first source (a chunk's place in the output): repeated
        text (a header line, a lead-in) does not count, as it is not among ``block_ids``."""
        return min([p.rec.pos for p in self._parts if not p.repeated] or [p.rec.pos for p in self._parts])

    def has_equation(self) -> bool:
        return any(p.rec.kind == "equation" for p in self._parts if not p.repeated)

    def set_prefix(self, text: str, units: int) -> None:
        """Put repeated ``text`` (ending with its separator; measuring ``units``) before the body."""
        self.prefix, self.prefix_units = text, units

    def repeat_lead_in(self, lead_in: Rec, line: str, units: int) -> None:
        """Repeat the list lead-in ``lead_in`` before the body: ``line`` (its text or its short
        form, and :data:`LINE_SEPARATOR`; one string shared by every piece), measuring ``units``."""
        self.set_prefix(line, units)
        self.repeated_lead_in = lead_in


def leads_to_equation(rec: Rec, following: Rec) -> bool:
    """Whether ``rec`` is the paragraph that introduces the equation ``following`` (equation
    glue keeps them in one chunk: longparser/packing.py)."""
    return rec.kind == "paragraph" and following.kind == "equation"


def chunk_type(draft: Draft) -> str:
    """The type of the chunk ``draft`` makes, worked out from its own parts (repeated text and
    headings aside), never carried through merges: a table's drafts keep their type; ``list``
    when every part is a list item or the lead-in of the list item after it
    (:func:`~longparser.sections.introduces`); ``equation`` when it holds an equation and
    every other part is next to one (the paragraph that introduces it, the one after it that
    says what its symbols are); else ``section``. A chunk of prose that merely holds an equation
    among other paragraphs says so in ``equation_detected``."""
    if draft.kind in _TABLE_KINDS:
        return draft.kind
    own = [p.rec for p in draft._parts if not p.repeated and p.rec.kind != "heading"]
    if not own:
        return "section"
    kinds = [rec.kind for rec in own]
    if kinds[-1] == "list_item" and all(
            kind == "list_item" or (after == "list_item" and kind == "paragraph" and introduces(rec.text))
            for rec, kind, after in zip(own, kinds, [*kinds[1:], None], strict=True)):
        return "list"
    if "equation" not in kinds:
        return "section"
    following, previous = [*own[1:], None], [None, *own[:-1]]
    if all(rec.kind == "equation" or (nxt is not None and leads_to_equation(rec, nxt))
           or (before is not None and before.kind == "equation")
           for before, rec, nxt in zip(previous, own, following, strict=True)):
        return "equation"
    return "section"


def _title_markers(draft: Draft, meta: dict[str, Any]) -> None:
    """A table chunk's title (its caption part): ``title_block_id``, and ``caption_block_id``
    where it is the chunk's own content or ``title_repeated`` where it is repeated."""
    for p in draft.parts:
        if p.rec.kind == "caption":
            meta["title_block_id"] = p.rec.block_id
            if p.repeated:
                meta["title_repeated"] = True
            else:
                meta["caption_block_id"] = p.rec.block_id
            return


def chunk_metadata(draft: Draft, quality: dict[str, Any]) -> dict[str, Any]:
    """The chunk's metadata: the draft's own plus title, lead-in and overlap markers and quality."""
    meta = dict(draft.meta)
    if draft.is_table:
        _title_markers(draft, meta)
    if draft.repeated_lead_in is not None:
        meta["lead_in_repeated"] = True
        meta["lead_in_block_id"] = draft.repeated_lead_in.block_id
    if draft.overlap_ids:
        meta["overlap_block_ids"] = list(draft.overlap_ids)
    meta["quality"] = quality
    return meta


def to_chunk(
    draft: Draft, chunk_id: str, text: str, token_count: int, score: float, quality: dict[str, Any],
    sources: list[Rec], embed_text: str | None = None, section_path: list[str] | None = None,
    parent_id: str | None = None, *, kind: str | None = None,
) -> Chunk:
    """Build the output chunk of ``draft`` (``sources``: its :attr:`Draft.sources`; ``section_path``:
    what is written of the draft's path, when not the whole path; ``parent_id``: its parent's,
    :mod:`longparser.parents`; ``kind``: its :func:`chunk_type`, when the caller has it already)."""
    return _validate_chunk({
        "chunk_id": chunk_id,
        "text": text,
        "token_count": token_count,
        "chunk_type": chunk_type(draft) if kind is None else kind,
        "section_path": list(draft.path) if section_path is None else section_path,
        "page_numbers": sorted({rec.page for rec in sources} - _NO_PAGE),
        "block_ids": [rec.block_id for rec in sources],
        "parent_id": parent_id,
        "overlap_with_previous": bool(draft.overlap_ids),
        "equation_detected": any(rec.kind == "equation" for rec in sources),
        "metadata": chunk_metadata(draft, quality),
        "quality_score": min(1.0, max(0.0, float(score))),
        "embed_text": embed_text,
        "boxes": merged_boxes(sources),
    })
