"""The one place that builds chunks: :class:`Draft` units and their conversion to :class:`Chunk`.

Tables, lists and prose all become Drafts; merging, overlap and the strict fit work on
Drafts; :func:`to_chunk` is the only constructor of output chunks, so ids, pages, token
counts, equation flags and quality are derived the same way for every chunk type.

A Draft's text is ``prefix + body``:

* ``parts`` are the body's pieces in order: each a source record, the text it contributes
  (a block's text, a table row, a list item) and the separator written before it. A part
  marked ``context`` is text copied from elsewhere into the body (a lead-in kept inline when
  two list pieces merge): it is not a source.
* ``prefix`` is context put before the body (a repeated list lead-in, paragraph overlap),
  with its separator; its block ids are recorded in metadata, never in ``block_ids``.

``block_ids`` and ``page_numbers`` come from the source parts only. A chunk holding an
equation block is an ``equation`` chunk (table chunks keep their type).
"""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Any

from longparser.prepare import Rec
from longparser.sections import Section
from longparser.tokens import TokenCounter
from schemas import Chunk

PROSE_SEPARATOR = "\n\n"
LINE_SEPARATOR = "\n"
_TABLE_KINDS = frozenset({"table", "table_schema"})
_NO_PAGE = frozenset({None})  # a block from a source without pages (Markdown, text)
_validate_chunk = Chunk.__pydantic_validator__.validate_python  # Chunk.model_validate minus its wrapper


class Part(tuple):  # type: ignore[type-arg]
    """One piece of a draft's body (see the module doc): ``(rec, text, units, sep, context, span)``.

    ``units`` is the counter's measure of ``text``, ``sep`` the separator written before it when
    it does not start the body, ``context`` whether it is copied context rather than a source,
    ``span`` the ``(start, end)`` of ``text`` in the block's text when it is a piece of a block
    cut to a strict maximum (else None).
    A plain tuple subclass: built from a tuple by C code (``Part((...))``, or ``map(Part, ...)``
    over many), which matters for the many parts of a document.
    """

    __slots__ = ()
    rec: Rec = property(itemgetter(0))  # type: ignore[assignment]
    text: str = property(itemgetter(1))  # type: ignore[assignment]
    units: int = property(itemgetter(2))  # type: ignore[assignment]
    sep: str = property(itemgetter(3))  # type: ignore[assignment]
    context: bool = property(itemgetter(4))  # type: ignore[assignment]
    span: tuple[int, int] | None = property(itemgetter(5))  # type: ignore[assignment]

    def after(self, sep: str) -> Part:
        """This part with ``sep`` written before it."""
        return Part((self[0], self[1], self[2], sep, self[4], self[5]))


def part(
    rec: Rec, text: str, units: int, sep: str = "", context: bool = False, span: tuple[int, int] | None = None
) -> Part:
    return Part((rec, text, units, sep, context, span))


def parts_of(records: list[Rec], sep: str) -> list[Part]:
    """Each record's whole text as a part, joined by ``sep``."""
    return list(map(Part, zip(records, map(attrgetter("text"), records), map(attrgetter("units"), records),
                              repeat(sep), repeat(False), repeat(None))))


def join_parts(parts: list[Part]) -> str:
    """The body text: the parts joined by their separators (the first part's is not written)."""
    if not parts:
        return ""
    return parts[0][1] + "".join([p[3] + p[1] for p in parts[1:]])


class Draft:
    """A chunk in the making.

    Attributes:
        parts: the body's pieces (see the module doc).
        kind: chunk type (section | table | table_schema | list | equation).
        section: the section the chunk's content belongs to.
        meta: chunk metadata (tables: table_block_id, row_start, ...).
        prefix: context text before the body, with its separator, or "".
        prefix_units: the counter's measure of ``prefix``.
        lead: the list lead-in repeated as context (in ``prefix`` or inline), or None.
        overlap_ids: block ids of the overlap paragraphs held in ``prefix``.
        list_lead: a list draft's lead-in (primary or repeated): what a piece cut from it repeats.
        head: a pipe table draft's header line (one of its parts): what a piece cut from it repeats.
        breadcrumb: the heading breadcrumb when strict mode shortened it (None: the section's).
    """

    __slots__ = (
        "_body", "_parts", "breadcrumb", "head", "kind", "lead", "list_lead", "meta", "overlap_ids",
        "prefix", "prefix_units", "section",
    )

    def __init__(
        self, parts: list[Part], kind: str, section: Section, meta: dict[str, Any] | None = None
    ) -> None:
        self._parts: list[Part] = parts
        self._body: str | None = None
        self.kind, self.section = kind, section
        self.parts = parts
        self.meta = meta if meta is not None else {}
        self.prefix, self.prefix_units = "", 0
        self.lead: Rec | None = None
        self.overlap_ids: list[str] = []
        self.list_lead: Rec | None = None
        self.head: Part | None = None
        self.breadcrumb: list[str] | None = None

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

    def tokens(self, counter: TokenCounter) -> int:
        """The counter's count of the current text, from the measures of its pieces."""
        units = [p[2] for p in self.parts]
        if self.prefix:
            units.append(self.prefix_units)
        return counter.join("" if counter.additive else self.text, units)

    @property
    def sources(self) -> list[Rec]:
        """The source records in reading order, each once."""
        return sorted({p[0] for p in self.parts if not p[4]}, key=attrgetter("pos"))

    @property
    def path(self) -> tuple[str, ...]:
        return self.section.path

    @property
    def is_table(self) -> bool:
        return self.kind in _TABLE_KINDS

    @property
    def first_pos(self) -> int:
        """Reading-order position of the first source (a chunk's place in the output): repeated
        context (a header line, a lead-in) does not count, as it is not among ``block_ids``."""
        return min([p[0].pos for p in self.parts if not p[4]] or [p[0].pos for p in self.parts])

    def has_equation(self) -> bool:
        return any(p[0].kind == "equation" for p in self.parts if not p[4])

    def set_prefix(self, text: str, units: int) -> None:
        """Put context ``text`` (ending with its separator; measuring ``units``) before the body."""
        self.prefix, self.prefix_units = text, units

    def set_lead_in(self, lead: Rec) -> None:
        """Repeat the list lead-in ``lead`` as context before the body, on its own line."""
        self.set_prefix(lead.text + LINE_SEPARATOR, lead.units)
        self.lead = lead


def prose_kind(records: list[Rec], default: str) -> str:
    """``equation`` when any record is an equation, else ``default``."""
    return "equation" if any(rec.kind == "equation" for rec in records) else default


def chunk_metadata(draft: Draft, quality: dict[str, Any]) -> dict[str, Any]:
    """The chunk's metadata: the draft's own plus lead-in/overlap markers and quality."""
    meta = dict(draft.meta)
    if draft.lead is not None:
        meta["lead_in_repeated"] = True
        meta["lead_in_block_id"] = draft.lead.block_id
    if draft.overlap_ids:
        meta["overlap_block_ids"] = list(draft.overlap_ids)
    meta["quality"] = quality
    return meta


def to_chunk(
    draft: Draft, chunk_id: str, text: str, token_count: int, score: float, quality: dict[str, Any],
    sources: list[Rec], embed_text: str | None = None,
) -> Chunk:
    """Build the output chunk of ``draft`` (``sources``: its :attr:`Draft.sources`)."""
    return _validate_chunk({
        "chunk_id": chunk_id,
        "text": text,
        "token_count": token_count,
        "chunk_type": draft.kind,
        "section_path": list(draft.path),
        "page_numbers": sorted({rec.page for rec in sources} - _NO_PAGE),
        "block_ids": [rec.block_id for rec in sources],
        "overlap_with_previous": bool(draft.overlap_ids),
        "equation_detected": any(rec.kind == "equation" for rec in sources),
        "metadata": chunk_metadata(draft, quality),
        "quality_score": min(1.0, max(0.0, float(score))),
        "embed_text": embed_text,
    })
