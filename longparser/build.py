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

from operator import attrgetter
from typing import Any, NamedTuple

from longparser.prepare import Rec
from longparser.sections import Section
from longparser.tokens import TokenCounter
from schemas import Chunk

PROSE_SEPARATOR = "\n\n"
LINE_SEPARATOR = "\n"
_TABLE_KINDS = frozenset({"table", "table_schema"})
_validate_chunk = Chunk.__pydantic_validator__.validate_python  # Chunk.model_validate minus its wrapper


class Part(NamedTuple):
    """One piece of a draft's body (see the module doc)."""

    rec: Rec
    text: str
    sep: str = ""
    context: bool = False


def parts_of(records: list[Rec], sep: str) -> list[Part]:
    """Each record's whole text as a part, joined by ``sep``."""
    return [Part(rec, rec.text, sep) for rec in records]


def join_parts(parts: list[Part]) -> str:
    """The body text: the parts joined by their separators (the first part's is not written)."""
    if not parts:
        return ""
    return parts[0].text + "".join([part.sep + part.text for part in parts[1:]])


class Draft:
    """A chunk in the making.

    Attributes:
        parts: the body's pieces (see the module doc).
        kind: chunk type (section | table | table_schema | list | equation).
        section: the section the chunk's content belongs to.
        meta: chunk metadata (tables: table_block_id, row_start, ...).
        prefix: context text before the body, with its separator, or "".
        lead: the list lead-in repeated as context (in ``prefix`` or inline), or None.
        overlap_ids: block ids of the overlap paragraphs held in ``prefix``.
    """

    __slots__ = ("_counted", "kind", "lead", "meta", "overlap_ids", "parts", "prefix", "section")

    def __init__(
        self, parts: list[Part], kind: str, section: Section, meta: dict[str, Any] | None = None
    ) -> None:
        self.parts, self.kind, self.section = parts, kind, section
        self.meta = meta if meta is not None else {}
        self.prefix = ""
        self.lead: Rec | None = None
        self.overlap_ids: list[str] = []
        self._counted: tuple[str, int] | None = None  # (text, count) of the last count

    @property
    def body(self) -> str:
        return join_parts(self.parts)

    @property
    def text(self) -> str:
        return self.prefix + self.body if self.prefix else self.body

    def tokens(self, counter: TokenCounter) -> int:
        """The counter's count of the current text (counted again only after a change)."""
        text = self.text
        if self._counted is None or self._counted[0] != text:
            self._counted = (text, counter.count(text))
        return self._counted[1]

    @property
    def sources(self) -> list[Rec]:
        """The source records in reading order, each once."""
        return sorted({part.rec for part in self.parts if not part.context}, key=attrgetter("pos"))

    @property
    def path(self) -> tuple[str, ...]:
        return self.section.path

    @property
    def is_table(self) -> bool:
        return self.kind in _TABLE_KINDS

    @property
    def first_pos(self) -> int:
        """Reading-order position of the first source (a chunk's place in the output)."""
        return min([part.rec.pos for part in self.parts])

    def has_equation(self) -> bool:
        return any(part.rec.kind == "equation" for part in self.parts if not part.context)

    def set_lead_in(self, lead: Rec) -> None:
        """Repeat the list lead-in ``lead`` as context before the body, on its own line."""
        self.prefix, self.lead = lead.text + LINE_SEPARATOR, lead


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
    sources: list[Rec],
) -> Chunk:
    """Build the output chunk of ``draft`` (``sources``: its :attr:`Draft.sources`)."""
    return _validate_chunk({
        "chunk_id": chunk_id,
        "text": text,
        "token_count": token_count,
        "chunk_type": draft.kind,
        "section_path": list(draft.path),
        "page_numbers": sorted({rec.page for rec in sources}),
        "block_ids": [rec.block_id for rec in sources],
        "overlap_with_previous": bool(draft.overlap_ids),
        "equation_detected": draft.has_equation(),
        "metadata": chunk_metadata(draft, quality),
        "quality_score": min(1.0, max(0.0, float(score))),
    })
