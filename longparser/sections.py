"""Stage 3: sections, each cut into its segments: prose runs, tables and lists.

A section is a run of consecutive kept blocks with the same ``hierarchy_path`` (used exactly
as supplied; two separate runs with the same path are two sections). Headings belong to the
section they open because they carry its path (an extractor that gives a heading its
parent's path gets the heading at the end of the parent section: the hierarchy is used as
given).

Within a section, blocks are cut into segments, in reading order:

* ``TableSeg``: one table block plus at most one attached caption. A table takes the caption
  directly before it (adjacent after exclusions, same section, same page) if no earlier table
  claimed it, else the caption directly after it. A caption not attached to a table is
  ordinary prose.
* ``ListSeg``: a run of consecutive ``list_item`` blocks plus its lead-in: the ``paragraph``
  directly before it in the same section, when that paragraph introduces the list
  (:func:`introduces_list`). Any other paragraph before a list is ordinary prose.
* ``ProseSeg``: any other run (paragraph, heading, equation, figure, caption, code, and
  headers/footers when they are not excluded) - these are packed.

Decision: caption adjacency is checked within the section (a caption and its table carry the
same path in every extractor output we know; attaching across sections would move text out
of its section).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from longparser.prepare import Rec


@dataclass(slots=True)
class ProseSeg:
    """A run of blocks that are packed (paragraphs, headings, equations, figures, ...)."""

    records: list[Rec]


@dataclass(slots=True)
class TableSeg:
    table: Rec
    caption: Rec | None = None
    caption_before: bool = False


@dataclass(slots=True)
class ListSeg:
    lead: Rec | None
    items: list[Rec]


Segment = ProseSeg | TableSeg | ListSeg


@dataclass(slots=True)
class Section:
    """Consecutive records sharing one hierarchy path, and the segments they form."""

    index: int
    path: tuple[str, ...]
    records: list[Rec] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)

    def packable(self) -> list[Rec]:
        """The records that reach packing, in order (the input of semantic boundaries)."""
        return [rec for seg in self.segments if isinstance(seg, ProseSeg) for rec in seg.records]


def group_sections(records: list[Rec]) -> list[Section]:
    """Cut records into sections of consecutive equal paths, each with its segments."""
    sections: list[Section] = []
    current: Section | None = None
    for rec in records:
        if current is None or rec.path != current.path:
            current = Section(len(sections), rec.path)
            sections.append(current)
        current.records.append(rec)
    for section in sections:
        section.segments = segment(section.records)
    return sections


def _is_caption_for(rec: Rec, table: Rec, claimed: set[int]) -> bool:
    return rec.kind == "caption" and rec.page == table.page and rec.pos not in claimed


def attach_captions(records: list[Rec]) -> dict[int, tuple[Rec, bool]]:
    """Map each table's index in ``records`` to ``(caption, caption_before)``."""
    claimed: set[int] = set()
    attached: dict[int, tuple[Rec, bool]] = {}
    last = len(records) - 1
    for i, rec in enumerate(records):
        if rec.kind != "table":
            continue
        if i > 0 and _is_caption_for(records[i - 1], rec, claimed):
            attached[i] = (records[i - 1], True)
        elif i < last and _is_caption_for(records[i + 1], rec, claimed):
            attached[i] = (records[i + 1], False)
        else:
            continue
        claimed.add(attached[i][0].pos)
    return attached


# How a sentence that introduces a list ends (lower-cased, trailing punctuation aside).
LEAD_IN_ENDINGS = (
    "the following", "as follows", "following", "include", "includes", "including", "such as",
    "namely", "below", "listed below", "these", "are", "e.g.", "for example", "for instance",
)
SHORT_LEAD_IN_WORDS = 40


def introduces_list(text: str) -> bool:
    """Whether a paragraph directly before a list is its lead-in: it ends with a colon or a
    lead-in phrase ("the following", "as follows", "include", "such as", ...), or it is short
    (at most :data:`SHORT_LEAD_IN_WORDS` words). A long paragraph that merely precedes a list
    (a page-break fragment, the end of a discussion) is prose, never repeated with the list."""
    stripped = text.rstrip()
    if stripped.endswith(":") or len(stripped.split()) <= SHORT_LEAD_IN_WORDS:
        return True
    return stripped.rstrip(".,;—–-").rstrip().lower().endswith(LEAD_IN_ENDINGS)


def segment(records: list[Rec]) -> list[Segment]:
    """Split a section's records into prose runs, tables (with captions) and lists (with lead-ins)."""
    captions = attach_captions(records)
    caption_pos = {cap.pos for cap, _ in captions.values()}
    segments: list[Segment] = []
    prose: list[Rec] = []

    def flush() -> None:
        nonlocal prose
        if prose:
            segments.append(ProseSeg(prose))
            prose = []

    i, n = 0, len(records)
    while i < n:
        rec = records[i]
        if rec.kind == "table":
            flush()
            cap, before = captions.get(i, (None, False))
            segments.append(TableSeg(rec, cap, before))
        elif rec.kind == "list_item":
            introduced = prose and prose[-1].kind == "paragraph" and introduces_list(prose[-1].text)
            lead = prose.pop() if introduced else None
            flush()
            j = i
            while j < n and records[j].kind == "list_item":
                j += 1
            segments.append(ListSeg(lead, records[i:j]))
            i = j
            continue
        elif rec.pos not in caption_pos:
            prose.append(rec)
        i += 1
    flush()
    return segments
