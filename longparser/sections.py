"""Stage 3: sections, each cut into its segments: prose runs, tables and lists.

A section is a run of consecutive kept blocks with the same ``hierarchy_path`` (used exactly
as supplied; two separate runs with the same path are two sections). Headings belong to the
section they open because they carry its path (an extractor that gives a heading its
parent's path gets the heading at the end of the parent section: the hierarchy is used as
given).

Within a section, blocks are cut into segments, in reading order:

* ``TableSeg``: one table block plus at most one attached title: a caption, or with
  ``table_titles`` also a paragraph that names the table ("Table 2: ...", "TABLE 3 Results",
  "Table S1.": :func:`names_a_table`, re-tagged ``caption``), directly before or after the
  table (adjacent after exclusions, same section, same page). A title directly before a table
  is that table's (tables are titled above them far more often); a table without one then
  takes the title directly after it, if no other table took it; with ``table_titles`` a table
  still without one takes the paragraph directly before it that introduces it (ending with a
  colon: "Here are the things a duck could eat:"), as a list takes its lead-in. A caption that names a
  figure ("Figure 3: ...", "Fig. 3") is never a table's. A caption not attached to a table is
  ordinary prose. The ``paragraph`` directly before a table's title above it, when it
  introduces the table (:func:`introduces`, the rule of a list's lead-in) and names a table
  ("Table 1 lists the ..."), is the table's lead-in (``TableSeg.lead``), which opens its first chunk. A table
  without a title above it takes no lead-in: the caption marks where the table's part begins.
* ``ListSeg``: a run of consecutive ``list_item`` blocks plus its lead-in: the ``paragraph``
  directly before it in the same section, when that paragraph introduces the list
  (:func:`introduces`). Any other paragraph before a list is ordinary prose.
* ``ProseSeg``: any other run (paragraph, heading, equation, figure, caption, code, and
  headers/footers when they are not excluded) - these are packed.

Decision: caption adjacency is checked within the section (a caption and its table carry the
same path in every extractor output we know; attaching across sections would move text out
of its section).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter

from longparser.prepare import Rec


@dataclass(slots=True)
class ProseSeg:
    """A run of blocks that are packed (paragraphs, headings, equations, figures, ...)."""

    records: list[Rec]


@dataclass(slots=True)
class TableSeg:
    """A table block, its title (a caption or a "Table N" paragraph) and its lead-in, if it has
    them."""

    table: Rec
    caption: Rec | None = None
    lead: Rec | None = None


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
    crumbs: tuple[str, ...] = ()  # the titles its chunks' heading breadcrumb shows
    crumbs_repeat_heading: bool = False  # its first chunk keeps the title in its breadcrumb (if not alone)


    def packable(self) -> list[Rec]:
        """The records that reach packing, in order (the input of semantic boundaries)."""
        return [rec for seg in self.segments if isinstance(seg, ProseSeg) for rec in seg.records]


def group_sections(records: list[Rec], table_titles: bool = False, breadcrumb_titles: int | None = None,
                   breadcrumb_repeats_heading: bool = False) -> list[Section]:
    """Cut records into sections of consecutive equal paths, each with its segments
    (``table_titles``: "Table N" paragraphs title their tables too; ``breadcrumb_titles``: how
    many of the innermost titles of its path a chunk's breadcrumb shows, None: all;
    ``breadcrumb_repeats_heading``: see :func:`longparser.breadcrumbs.breadcrumb`)."""
    sections: list[Section] = []
    current: Section | None = None
    for rec in records:
        if current is None or rec.path != current.path:
            crumbs = rec.path if breadcrumb_titles is None else rec.path[len(rec.path) - breadcrumb_titles :]
            current = Section(len(sections), rec.path, crumbs=crumbs,
                              crumbs_repeat_heading=breadcrumb_repeats_heading)
            sections.append(current)
        current.records.append(rec)
    for section in sections:
        section.segments = segment(section.records, table_titles)
    return sections


# "Table 2: ...", "Table 1. ...", "TABLE 3 Results", "Table S1 -", "Tab. IV:", "Table A.2": a table's
# name, then punctuation, a capitalised word or the end (so "Table 2 shows ..." is prose).
_TABLE_NAME = re.compile(
    r"\s*(?:Table|TABLE|Tab\.)\s*(?:(?:[A-Z]\.?)?\d+(?:[.\-]\d+)*[a-z]?|[IVXLC]+)"
    r"(?:\s*[:.|\-\u2013\u2014]|\s+[A-Z(\[\"\u201c]|\s*$)"
)
_KIND = attrgetter("kind")
_TABLE_MENTION = re.compile(r"\b(?:Table|TABLE|Tab\.)\s*(?:[A-Z]\.?)?\d")  # "Table 1 lists ..."
_FIGURE_NAME = re.compile(r"\s*(?:Figure|FIGURE|Fig\.|FIG\.)\s*[A-Z]?\d")


def names_a_table(text: str) -> bool:
    """Whether a paragraph is a table's title: it starts with the table's name ("Table 2: ...")."""
    return _TABLE_NAME.match(text) is not None


def refers_to_a_table(text: str) -> bool:
    """Whether a paragraph speaks of a table ("Table 1 lists ...") without being one's title
    (another table's caption read as a paragraph is not this table's lead-in)."""
    return _TABLE_MENTION.search(text) is not None and not names_a_table(text)


def _is_title_for(rec: Rec, table: Rec, table_titles: bool) -> bool:
    """A caption (not a figure's), or with ``table_titles`` a paragraph naming a table, on the
    table's page."""
    if rec.page != table.page:
        return False
    if rec.kind == "caption":
        return _FIGURE_NAME.match(rec.text) is None
    return table_titles and rec.kind == "paragraph" and names_a_table(rec.text)


def _introduces_table(rec: Rec, table: Rec) -> bool:
    """A paragraph on the table's page that ends with a colon: the table's lead-in."""
    return rec.kind == "paragraph" and rec.page == table.page and rec.text.rstrip().endswith(":")


def attach_captions(records: list[Rec], table_titles: bool = False) -> dict[int, Rec]:
    """Map each table's index in ``records`` to its title (see the module doc); a paragraph
    taken as a title is re-tagged ``caption`` (the engine's own record)."""
    kinds = list(map(_KIND, records))
    if "table" not in kinds:  # most sections: two C-level passes
        return {}
    attached: dict[int, Rec] = {}
    claimed: set[int] = set()
    tables = [i for i, kind in enumerate(kinds) if kind == "table"]
    for i in tables:  # a title directly before a table is that table's
        if i > 0 and _is_title_for(records[i - 1], records[i], table_titles):
            attached[i] = records[i - 1]
            claimed.add(i - 1)
    last = len(records) - 1
    for i in tables:  # else the title directly after it, if no table took it
        if i not in attached and i < last and i + 1 not in claimed and \
                _is_title_for(records[i + 1], records[i], table_titles):
            attached[i] = records[i + 1]
            claimed.add(i + 1)
    for i in tables:  # else the paragraph that introduces it ("... a duck could eat:")
        if table_titles and i not in attached and i > 0 and i - 1 not in claimed and \
                _introduces_table(records[i - 1], records[i]):
            attached[i] = records[i - 1]
            claimed.add(i - 1)
    for title in attached.values():
        title.kind = "caption"
    return attached


# How a sentence that introduces a list ends (lower-cased, trailing punctuation aside).
LEAD_IN_ENDINGS = (
    "the following", "as follows", "following", "include", "includes", "including", "such as",
    "namely", "below", "listed below", "these", "are", "e.g.", "for example", "for instance",
)
SHORT_LEAD_IN_WORDS = 40


def introduces(text: str) -> bool:
    """Whether a paragraph directly before a list (or a table) is its lead-in: it ends with a colon or a
    lead-in phrase ("the following", "as follows", "include", "such as", ...), or it is short
    (at most :data:`SHORT_LEAD_IN_WORDS` words). A long paragraph that merely precedes a list
    (a page-break fragment, the end of a discussion) is prose, never repeated with the list."""
    stripped = text.rstrip()
    if stripped.endswith(":") or len(stripped.split()) <= SHORT_LEAD_IN_WORDS:
        return True
    return stripped.rstrip(".,;—–-").rstrip().lower().endswith(LEAD_IN_ENDINGS)


def _lead_in(prose: list[Rec], about: Callable[[str], object] = bool) -> Rec | None:
    """The last record of the prose run so far, taken out of it, when it is a paragraph that
    introduces what comes next (a list, a table) and, for a table, names one (``about``: a
    running header or a closing remark is short too, but says nothing of the table); else None."""
    if prose and prose[-1].kind == "paragraph" and introduces(prose[-1].text) and about(prose[-1].text):
        return prose.pop()
    return None


def segment(records: list[Rec], table_titles: bool = False) -> list[Segment]:
    """Split a section's records into prose runs, tables (with titles) and lists (with lead-ins)."""
    captions = attach_captions(records, table_titles)
    caption_pos = {cap.pos for cap in captions.values()}
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
            caption = captions.get(i)
            titled_above = caption is not None and i > 0 and records[i - 1] is caption
            lead = _lead_in(prose, refers_to_a_table) if titled_above else None
            flush()
            segments.append(TableSeg(rec, caption, lead))
        elif rec.kind == "list_item":
            lead = _lead_in(prose)
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
