"""Stage 9: parents: the section, table or document each chunk belongs to.

A retriever that finds a small chunk often wants its context: the section it sits in, the whole
table a row batch comes from (small-to-big retrieval, citations, merging siblings). This stage
works that out from the sections and the final drafts; nothing of the text is copied (a
parent's text is its chunks' texts joined, or its blocks read from first to last).

The rules (docs/chunking.md, "Parents"):

* **Sections.** A section parent is a heading's scope: from the heading to the next heading of
  the same or a higher level, subsections included. Scopes are read from the section paths
  (``hierarchy_path``, given or derived from heading levels), so they follow the same rule as
  ``section_path``: a run of consecutive blocks whose path starts with the scope's path. A
  chunk's parent is the innermost scope of its section, the section its ``section_path``
  shows: a chunk that spans two sections (a heading that leads the subsection it opens, a small
  draft merged with a neighbour) belongs where its content does, as its ``section_path`` says.
  Blocks under no heading (a preamble, a page header kept in the text) belong to the document
  and do not end the scope around them. Two consecutive headings with the same path are one
  section, so one scope.
* **Tables.** Every chunk of a table (row batches, bands, schema chunk; tables packed into one
  chunk: the first table's) has the table as parent, and the table has its section as parent.
* **The document** (id ``doc``) is the root: the parent of the top sections and tables, and of
  every chunk under no heading. A result without chunks has no parents.

Ids are stable and deterministic the way chunk ids are (:mod:`longparser.ids`): a section's is
a hash of the document id and its path (with an occurrence number when a path comes back), a
table's a hash of its first chunk's id; block ids are left out, since loaders number blocks by
position. Parents are listed document first, then by their first block (an enclosing section
before what it holds); each lists its own chunks in reading order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter

from longparser.build import Draft
from longparser.ids import chunk_ids
from longparser.prepare import Rec
from longparser.sections import Section
from schemas.chunks import DOCUMENT_PARENT_ID, ChunkParent

DOCUMENT = 0  # the document scope's index in ParentTree.scopes
_SECTION_KEY = "parent:section"
_TABLE_KEY = "parent:table"
_NO_PAGE = frozenset({None})
_validate_parent = ChunkParent.__pydantic_validator__.validate_python  # model_validate minus its wrapper
_page = attrgetter("page")


@dataclass(slots=True)
class Scope:
    """A parent in the making: what it spans and which drafts are its own."""

    kind: str
    title: str | None
    path: tuple[str, ...]
    parent: int | None
    first: Rec
    last: Rec
    pages: set[int | None] = field(default_factory=set)
    drafts: list[int] = field(default_factory=list)


@dataclass(slots=True)
class ParentTree:
    """Every parent's scope (the document's first) and the scope each draft belongs to."""

    scopes: list[Scope]
    of_draft: list[int]

    def resolve(self, document_id: str | None, ids: Sequence[str]) -> tuple[list[str], list[ChunkParent]]:
        """Each chunk's parent id and the parents, given the chunks' ids (``ids``, the drafts' order)."""
        if not self.of_draft:
            return [], []
        names = self._names(document_id, ids)
        firsts = [scope.first.pos for scope in self.scopes]
        order = [DOCUMENT, *sorted(range(1, len(self.scopes)), key=firsts.__getitem__)]
        parents = [
            _validate_parent({
                "id": names[i], "kind": scope.kind, "title": scope.title,
                "parent_id": None if scope.parent is None else names[scope.parent],
                "first_block_id": scope.first.block_id, "last_block_id": scope.last.block_id,
                "page_numbers": sorted(scope.pages - _NO_PAGE), "chunk_ids": [ids[d] for d in scope.drafts],
            })
            for i in order for scope in (self.scopes[i],)
        ]
        return [names[s] for s in self.of_draft], parents

    def _names(self, document_id: str | None, ids: Sequence[str]) -> list[str]:
        keys = [(_SECTION_KEY, list(s.path)) if s.kind == "section" else (_TABLE_KEY, [ids[s.drafts[0]]])
                for s in self.scopes[1:]]
        return [DOCUMENT_PARENT_ID, *chunk_ids(document_id, keys)]


def _section_scopes(sections: Sequence[Section]) -> tuple[list[Scope], list[int]]:
    """The document's scope and every heading's, and the innermost scope of each section."""
    first, last = sections[0].records[0], sections[-1].records[-1]
    scopes = [Scope("document", None, (), None, first, last)]
    innermost: list[int] = []
    open_: list[int] = []  # the open scopes, outermost first: open_[d] has a path of d + 1 titles
    for section in sections:
        path, records = section.path, section.records
        pages = set(map(_page, records))
        scopes[DOCUMENT].pages |= pages
        if not path:  # under no heading: the document's, and the scopes around it stay open
            innermost.append(DOCUMENT)
            continue
        depth = 0
        while depth < len(open_) and depth < len(path) and scopes[open_[depth]].path[depth] == path[depth]:
            depth += 1
        del open_[depth:]
        for d in range(depth, len(path)):
            scopes.append(Scope("section", path[d], path[: d + 1], open_[-1] if open_ else DOCUMENT,
                                records[0], records[-1]))
            open_.append(len(scopes) - 1)
        for index in open_:
            scopes[index].last = records[-1]
            scopes[index].pages |= pages
        innermost.append(open_[-1])
    return scopes, innermost


def _table_title(draft: Draft) -> str | None:
    """The table's caption, when the draft holds it (as its own text or repeated)."""
    return next((" ".join(p.rec.text.split()) for p in draft.parts if p.rec.kind == "caption"), None)


def parent_tree(sections: Sequence[Section], drafts: Sequence[Draft]) -> ParentTree:
    """The parents of the final drafts (see the module doc)."""
    if not drafts:
        return ParentTree([], [])
    scopes, innermost = _section_scopes(sections)
    tables: dict[str, int] = {}
    of_draft = []
    for index, draft in enumerate(drafts):
        section_scope = innermost[draft.section.index]
        if draft.is_table:
            sources = draft.sources or [p.rec for p in draft.parts]
            table_id = draft.meta["table_block_id"]
            scope_index = tables.get(table_id)
            if scope_index is None:
                scope_index = tables[table_id] = len(scopes)
                scopes.append(Scope("table", _table_title(draft), (), section_scope, sources[0], sources[-1]))
            scope = scopes[scope_index]
            scope.title = scope.title or _table_title(draft)
            scope.first = min(scope.first, sources[0], key=_pos)
            scope.last = max(scope.last, sources[-1], key=_pos)
            scope.pages.update(rec.page for rec in sources)
        else:
            scope_index = section_scope
        scopes[scope_index].drafts.append(index)
        of_draft.append(scope_index)
    return ParentTree(scopes, of_draft)


def _pos(rec: Rec) -> int:
    return rec.pos
