"""Stage 5: list chunks (a run of list items plus its lead-in paragraph).

The lead-in and the items form one ``list`` chunk when their token sum fits ``max_tokens``.
Otherwise the run is split at bullet boundaries, never inside a bullet: the first piece holds
the lead-in (primary content) and as many items as fit; every later piece starts with the
lead-in repeated (``prefix``; its id is NOT in the piece's block_ids; metadata
``lead_in_repeated`` / ``lead_in_block_id``), so no piece loses what it is a list of. The
repetitions are charged to the call's allowance of repeated text (:mod:`longparser.repeats`);
where it cannot hold them all, every piece repeats the lead-in's short form instead.

Decisions: the repeated lead-in counts towards every piece's budget (a piece of items plus
its repeated lead-in aims at the target); a piece always holds at least one item (a lead-in is never
left alone, a single oversized bullet stays whole); lead-in and items are joined by a newline.
"""

from __future__ import annotations

from collections.abc import Callable

from longparser.budget import Budget
from longparser.build import LINE_SEPARATOR, Draft, parts_of
from longparser.prepare import Rec
from longparser.repeats import short_form
from longparser.sections import ListSeg, Section


def list_groups(
    lead: Rec | None, items: list[Rec], fits: Callable[[list[Rec], Rec, int], bool]
) -> list[list[Rec]]:
    """Split items into pieces; the first piece starts with ``lead`` when there is one.

    ``fits(piece, item, summed)``: whether a piece with ``item`` appended (its lead-in counted,
    repeated or not) fits.
    """
    base = lead.tokens if lead is not None else 0
    groups: list[list[Rec]] = []
    current: list[Rec] = [lead] if lead is not None else []
    has_item = False
    running = base
    for item in items:
        if has_item and not fits(current, item, running + item.tokens):
            groups.append(current)
            current, running = [], base
        current.append(item)
        running += item.tokens
        has_item = True
    groups.append(current)
    return groups


def list_drafts(seg: ListSeg, section: Section, budget: Budget) -> list[Draft]:
    """List drafts for one run of list items (and its optional lead-in)."""
    lead = seg.lead
    repeated = (lead.text + LINE_SEPARATOR, lead.units) if lead is not None else ("", 0)

    def draft_of(group: list[Rec]) -> Draft:
        draft = Draft(parts_of(group, LINE_SEPARATOR), "list", section)
        draft.lead_in = lead
        if lead is not None and group[0] is not lead:
            draft.repeat_lead_in(lead, *repeated)
        return draft

    groups = list_groups(lead, seg.items, budget.packer(draft_of))
    if lead is not None and not budget.repeats.take(len(lead.text) * (len(groups) - 1)):
        text = short_form(lead.text)
        repeated = (text + LINE_SEPARATOR, budget.measure(text))
    return [draft_of(group) for group in groups]
