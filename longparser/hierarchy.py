"""Section paths from heading levels, for inputs whose headings carry a level but no path.

Many producers know each heading's depth but fill no ``hierarchy_path``; without paths every
chunk's ``section_path`` would be empty and ``heading_context`` would add nothing. The rule that
turns levels into paths is :class:`schemas.headings.HeadingStack`, one definition for the engine
and the Markdown converter (``longparser_client.converters.markdown``).

The engine derives paths only when NO block of the input has a non-empty ``hierarchy_path``:
a path given anywhere means the producer states the structure, and it is used exactly as
given. :class:`DerivedPaths` watches the blocks as ``prepare`` reads them (one pass, nothing
held but one shared tuple per block) and stops looking at the first block that has a path.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from longparser.prepare import Rec
from schemas import Chunk, ChunkingConfig
from schemas.headings import HeadingStack

logger = logging.getLogger(__name__)

SectionPaths = Literal["input", "derived", "none"]


class DerivedPaths:
    """The blocks ``prepare`` reads, passed through, with the path each would get from levels.

    Iterate it instead of the blocks, then call :meth:`apply` on the records prepare made.
    """

    __slots__ = ("blocks", "given", "headings", "paths")

    def __init__(self, blocks: Iterable[dict[str, Any]]) -> None:
        self.blocks = blocks
        self.given = False  # a block of the input has a non-empty hierarchy_path
        self.headings = 0
        self.paths: list[tuple[str, ...]] = []  # by block position, while no path was given

    def __iter__(self) -> Iterator[dict[str, Any]]:
        stack = HeadingStack()
        blocks = iter(self.blocks)
        for block in blocks:
            if block["hierarchy_path"]:
                self.given = True
                yield block
                yield from blocks  # the input states its structure: nothing more to watch
                return
            kind = block["type"]
            if kind == "heading":
                self.headings += 1
            self.paths.append(stack.path_of(kind, block["heading_level"], block["text"]))
            yield block

    def apply(self, records: list[Rec]) -> SectionPaths:
        """Give ``records`` their derived paths when the input has none of its own.

        Returns where the chunks' section paths come from: ``input`` (the blocks' own paths),
        ``derived`` (from heading levels) or ``none`` (no paths and no headings to derive
        them from).
        """
        if self.given:
            return "input"
        if not self.headings:
            return "none"
        paths = self.paths
        for rec in records:
            rec.path = paths[rec.pos]
        return "derived" if any(rec.path for rec in records) else "none"


HEADING_CONTEXT_UNUSED = (
    "heading_context changes nothing: no chunk has a section path (no block has a "
    "hierarchy_path and no heading to derive one from)"
)


def context_warnings(config: ChunkingConfig, chunks: list[Chunk]) -> list[str]:
    """``stats.warnings``: a warning, also logged once per call, when ``heading_context`` was
    asked for but no chunk has a section path to put before its text."""
    if not config.heading_context or not chunks or any(chunk.section_path for chunk in chunks):
        return []
    logger.warning(HEADING_CONTEXT_UNUSED)
    return [HEADING_CONTEXT_UNUSED]
