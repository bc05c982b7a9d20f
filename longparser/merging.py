"""Stage 7: minimum-size merging.

A draft whose token count (of its text so far) is under ``min_tokens`` merges into the
previous draft of the same section, else the next draft of the same section, else the
previous draft, else the next. Table and table_schema drafts never take part: they are
neither merged nor merge targets, and "previous"/"next" skip over them (decision: the
nearest eligible draft, so a short paragraph after a table can still join the prose before
the table). Texts join with a blank line; blocks (hence ids and pages) are unioned in order.

The merged draft keeps the target's type, but becomes ``equation`` when either side held an
equation; metadata is the union (target wins). A draft merged forward is checked again (it
may still be under the minimum). The pipeline restores reading order (by first block)
afterwards.

Context prefixes: the earlier draft's prefix stays. The later draft's repeated lead-in is
dropped when the earlier draft already holds that lead-in: as primary content (the first piece
of the list) or as its own repeated lead-in (two later pieces of the same list re-joined), so
the merged text shows the lead-in once, at the top. Otherwise (a lead-in the earlier draft
lacks) it stays in the text, inline.
"""

from __future__ import annotations

from longparser.build import LINE_SEPARATOR, Draft, part
from longparser.prepare import Rec
from longparser.tokens import TokenCounter

MERGE_SEPARATOR = "\n\n"


def _holds_lead_in(draft: Draft, lead: Rec) -> bool:
    """Whether ``draft``'s text already shows the lead-in block (primary or repeated)."""
    return draft.lead is lead or any(piece.rec is lead for piece in draft.parts)


def merge_pair(earlier: Draft, later: Draft, target: Draft) -> Draft:
    """One draft holding ``earlier`` then ``later``; ``target`` decides the type and section."""
    later_parts = list(later.parts)
    lead = earlier.lead
    if later.lead is not None and not _holds_lead_in(earlier, later.lead):
        # the later piece's repeated lead-in stays in the text, inline, as context
        later_parts[:1] = [part(later.lead, later.lead.text, later.lead.units, context=True),
                           later_parts[0].after(LINE_SEPARATOR)]
        lead = lead or later.lead
    later_parts[0] = later_parts[0].after(MERGE_SEPARATOR)
    kind = "equation" if earlier.has_equation() or later.has_equation() else target.kind
    meta = {**(earlier if target is later else later).meta, **target.meta}
    merged = Draft(earlier.parts + later_parts, kind, target.section, meta)
    merged.set_prefix(earlier.prefix, earlier.prefix_units)
    merged.lead = lead
    return merged


def _neighbour(slots: list[Draft | None], i: int, step: int, section: int | None) -> int | None:
    """Index of the nearest eligible draft from ``i`` in direction ``step`` (same section if given)."""
    j = i + step
    while 0 <= j < len(slots):
        other = slots[j]
        if other is not None and not other.is_table:
            # sections are contiguous: past the first eligible draft of another section,
            # no draft of ``section`` follows
            return j if section is None or other.section.index == section else None
        j += step
    return None


def _target(slots: list[Draft | None], i: int) -> int | None:
    section = slots[i].section.index  # type: ignore[union-attr]
    for step, same in ((-1, section), (1, section), (-1, None), (1, None)):
        j = _neighbour(slots, i, step, same)
        if j is not None:
            return j
    return None


def merge_small(drafts: list[Draft], min_tokens: int, counter: TokenCounter) -> list[Draft]:
    """Merge drafts under ``min_tokens`` (see module doc); returns a new list."""
    if min_tokens <= 0:
        return list(drafts)
    slots: list[Draft | None] = list(drafts)
    for i in range(len(slots)):
        draft = slots[i]
        if draft is None or draft.is_table or draft.tokens(counter) >= min_tokens:
            continue
        j = _target(slots, i)
        if j is None:
            continue
        target = slots[j]
        assert target is not None  # _target returns live slots only
        earlier, later = (target, draft) if j < i else (draft, target)
        # The merged draft goes to the LATER slot: a forward merge is then re-checked when the
        # loop reaches it, and backward scans never walk over a growing run of emptied slots
        # (that would be quadratic on long runs of small drafts). Reading order is restored
        # by first block in the pipeline.
        slots[max(i, j)] = merge_pair(earlier, later, target)
        slots[min(i, j)] = None
    return [draft for draft in slots if draft is not None]
