"""Section paths from heading levels: the one rule for the engine and the converters.

Many producers know each heading's depth (``heading_level``: Markdown's ``#`` count, an HTML
``<h2>``, a PDF outline) but fill no ``hierarchy_path``. The engine derives the paths of such
an input (``longparser/hierarchy.py``) and the Markdown converter
(:mod:`longparser_client.converters.markdown`) writes them, both with :class:`HeadingStack`:

* A heading of level n closes every open heading of level n or deeper and opens its own; its
  path includes itself (LongParser's convention), so a heading starts the section it names.
* Every other block takes the open headings' path; page headers and footers belong to no
  section (``[]``), as in LongParser's own output.
* A heading without a level counts as level 1 (it closes everything open); a heading whose text
  is blank opens nothing (it is excluded anyway).
* A title is the heading's text with its whitespace collapsed to single spaces: a heading that
  a PDF line break split over two lines is one title, and a breadcrumb (one title per line)
  never gets a line that is half a title.

It lives with the wire contract, which the producer distribution carries alone, so a producer
converting Markdown needs neither the engine nor its dependencies.
"""

from __future__ import annotations

DEFAULT_LEVEL = 1
_NO_SECTION = frozenset({"header", "footer"})


class HeadingStack:
    """The open headings while a document is read in order (see the module doc for the rule)."""

    __slots__ = ("_levels", "path")

    def __init__(self) -> None:
        self._levels: list[int] = []
        self.path: tuple[str, ...] = ()

    def heading(self, level: int | None, title: str) -> tuple[str, ...]:
        """Open a heading; returns its own path (which includes it)."""
        title = " ".join(title.split())
        if not title:
            return self.path
        level = DEFAULT_LEVEL if level is None else level
        depth = len(self._levels)
        while depth and self._levels[depth - 1] >= level:
            depth -= 1
        del self._levels[depth:]
        self._levels.append(level)
        self.path = (*self.path[:depth], title)
        return self.path

    def path_of(self, kind: str, level: int | None, text: str) -> tuple[str, ...]:
        """The path of a block of type ``kind`` read next (a heading is opened first)."""
        if kind == "heading":
            return self.heading(level, text)
        return () if kind in _NO_SECTION else self.path
