"""Stage 5: token-budget packing of prose runs, semantic boundaries and equation glue.

Blocks are appended while the running sum of per-block token counts stays within
``max_tokens`` (a target: docs/strict.md lists its exceptions); a new chunk starts before a
block that would exceed it, or before a semantic boundary. A single block larger than the
target forms its own chunk, kept whole.

Equation glue: when a new chunk starts right before an equation block, the last block of the
closed chunk moves into the new chunk when it is a ``paragraph`` (the sentence that
introduces the formula) and the closed chunk keeps at least one block. Page numbers and
block ids are derived from the blocks each chunk finally holds (build.py), so a paragraph on
page 3 glued to an equation on page 4 gives the new chunk pages [3, 4] and takes page 3 away
from the closed chunk when none of its remaining blocks is on page 3 (provenance follows the
blocks, whichever way they move). Decision: the glued chunk may exceed the target (paragraph + equation), like
the other target exceptions.

Heading glue (a heading belongs to what follows it): when a new chunk starts, headings at
the end of the closed chunk move into the new chunk, again only while the closed chunk keeps
at least one block. When headings moved, equation glue does not apply (the heading, not the
paragraph before it, introduces what follows). In the usual input a heading opens its own
section (its path includes itself) and is never at the end of a chunk; this guards inputs
whose headings share the path of the surrounding text.

Prose blocks are joined with a blank line.
"""

from __future__ import annotations

from collections.abc import Callable, Set

from longparser.budget import Budget
from longparser.build import PROSE_SEPARATOR, Draft, leads_to_equation, parts_of
from longparser.prepare import Rec
from longparser.sections import Section


def _glue(closed: list[Rec], upcoming: Rec) -> list[Rec]:
    """Blocks to move from the end of ``closed`` to the chunk that starts with ``upcoming``."""
    cut = len(closed)
    while cut > 1 and closed[cut - 1].kind == "heading":
        cut -= 1
    if cut == len(closed) and cut > 1 and leads_to_equation(closed[-1], upcoming):
        cut -= 1
    moved = closed[cut:]
    del closed[cut:]
    return moved


def pack_groups(
    records: list[Rec], starts: Set[int], fits: Callable[[list[Rec], Rec, int], bool]
) -> list[list[Rec]]:
    """Group records into chunks.

    Args:
        records: the prose run, reading order.
        starts: positions (``Rec.pos``) of records before which a new chunk must start.
        fits: whether a group with the next record appended (and the sum of their token counts)
            fits the budget.
    """
    groups: list[list[Rec]] = []
    current: list[Rec] = []
    running = 0
    for rec in records:
        if current and (rec.pos in starts or not fits(current, rec, running + rec.tokens)):
            groups.append(current)
            current = _glue(current, rec)
            running = sum(moved.tokens for moved in current)
        current.append(rec)
        running += rec.tokens
    if current:
        groups.append(current)
    return groups


def pack_prose(records: list[Rec], starts: Set[int], section: Section, budget: Budget) -> list[Draft]:
    """Pack a prose run into prose drafts (their chunk type: :func:`~longparser.build.chunk_type`).

    A draft holding a block a semantic boundary starts at is ``after_boundary``: every such block
    starts a new chunk, so the boundary lies between this draft and the one before it (blocks
    glued to it from the closed chunk come from before the boundary, but they introduce it).
    """

    def draft(group: list[Rec]) -> Draft:
        return Draft(parts_of(group, PROSE_SEPARATOR), "section", section)

    drafts = [draft(group) for group in pack_groups(records, starts, budget.packer(draft))]
    if starts:
        for made in drafts:
            made.after_boundary = any(part.rec.pos in starts for part in made.parts)
    return drafts
