"""Stage 6: headings lead what they head, and minimum-size merging.

Headings first (:func:`lead_headings`): headings at the end of a draft that has other content
move to the start of the next draft, the content they open (whatever its section or type), so
no chunk ends with a heading unless the document does. Then (:func:`merge_small`):

* a draft made only of headings merges FORWARD into the next draft, the content it opens (its
  own section's next draft, else the next section's first), whatever ``min_tokens`` is (also
  0), and backward into the previous draft only when there is no next one (the very end of the
  document; never into a table). A heading-only draft before a table opens the table's first
  draft, like a caption (its id in ``block_ids``). A heading leads what follows it even across
  a semantic boundary: a boundary between a heading and its content is not a topic change.
* with ``min_tokens`` > 0, any other draft whose token count is under ``min_tokens`` merges
  with a draft ADJACENT to it in reading order, in this order of preference: the previous one
  if it is of the same section, the next one if it is of the same section, the previous one,
  the next one. Never with a table or table_schema draft (they are neither merged nor merge
  targets, and a table between two drafts keeps them apart: text after a table never moves
  ahead of it), never across a semantic boundary (``Draft.after_boundary``), and in strict
  mode only with a neighbour it fits with. Lists take part like prose. With no such neighbour
  the draft stays as it is. Texts join with a blank line; blocks (hence ids and pages) are
  unioned in order.

A merged draft belongs to its target's section: a heading merged forward takes the section of
the content it opens (a chunk's ``section_path`` is that of its content). The merged chunk's
type is worked out from its parts (:func:`~longparser.build.chunk_type`), never carried from
either side; metadata is the union (target wins). A merged draft is checked again when the
loop reaches it (it may still be under the minimum). Merging only ever joins neighbours, so
reading order is kept.

Repeated text: the earlier draft's prefix stays. The later draft's repeated lead-in is
dropped when the earlier draft already holds that lead-in: as primary content (the first piece
of the list) or as its own repeated lead-in (two later pieces of the same list re-joined), so
the merged text shows the lead-in once, at the top. Otherwise (a lead-in the earlier draft
lacks) it stays in the text, inline.
"""

from __future__ import annotations

from itertools import pairwise

from longparser.budget import Budget
from longparser.build import LINE_SEPARATOR, Draft, Part
from longparser.prepare import Rec

MERGE_SEPARATOR = "\n\n"


def _holds_lead_in(draft: Draft, lead_in: Rec) -> bool:
    """Whether ``draft``'s text already shows the lead-in block (primary or repeated)."""
    return draft.repeated_lead_in is lead_in or any(piece.rec is lead_in for piece in draft.parts)


def merge_pair(earlier: Draft, later: Draft, target: Draft) -> Draft:
    """One draft holding ``earlier`` then ``later``; ``target`` decides the section.

    The merged draft keeps what a piece cut from it must repeat (a list's lead-in), so that a
    strict cut of it still shows what its items are a list of, and whether a semantic boundary
    comes before it (the earlier draft's).
    """
    later_parts = list(later.parts)
    repeated = earlier.repeated_lead_in
    if later.repeated_lead_in is not None and not _holds_lead_in(earlier, later.repeated_lead_in):
        # the later piece's repeated lead-in stays in the text, inline
        lead_in = later.repeated_lead_in
        # what the later piece repeats of it: its prefix (the lead-in or its short form)
        text, units = ((later.prefix.removesuffix(LINE_SEPARATOR), later.prefix_units) if later.prefix
                       else (lead_in.text, lead_in.units))
        later_parts[:1] = [Part(lead_in, text, units, repeated=True),
                           later_parts[0].after(LINE_SEPARATOR)]
        repeated = repeated or lead_in
    later_parts[0] = later_parts[0].after(MERGE_SEPARATOR)
    meta = {**(earlier if target is later else later).meta, **target.meta}
    return target.evolve(parts=earlier.parts + later_parts, meta=meta, prefix=earlier.prefix,
                         prefix_units=earlier.prefix_units, repeated_lead_in=repeated,
                         lead_in=earlier.lead_in or later.lead_in, after_boundary=earlier.after_boundary)


def _only_headings(draft: Draft) -> bool:
    return all(piece.rec.kind == "heading" for piece in draft.parts)


def _trailing_headings(draft: Draft) -> int:
    """How many parts at the end of ``draft`` are headings."""
    n = 0
    for piece in reversed(draft.parts):
        if piece.rec.kind != "heading" or piece.repeated:
            break
        n += 1
    return n


def _open_with(headings: list[Part], draft: Draft) -> None:
    """Put ``headings`` at the start of ``draft`` (a table's opening lines, else a paragraph)."""
    sep = LINE_SEPARATOR if draft.is_table else MERGE_SEPARATOR
    first, *rest = draft.parts
    draft.parts = [headings[0].after(""), *headings[1:], first.after(sep), *rest]


def lead_headings(drafts: list[Draft]) -> list[Draft]:
    """Move headings that end a draft with other content to the start of the next draft."""
    for draft, following in pairwise(drafts):
        n = _trailing_headings(draft)
        if n and n < len(draft.parts):
            moved = draft.parts[-n:]
            draft.parts = draft.parts[:-n]
            _open_with([moved[0].after(MERGE_SEPARATOR), *moved[1:]], following)
    return drafts


def _adjacent(slots: list[Draft | None], i: int, step: int) -> int | None:
    """Index of the draft next to slot ``i`` in direction ``step`` (emptied slots skipped)."""
    j = i + step
    while 0 <= j < len(slots):
        if slots[j] is not None:
            return j
        j += step
    return None


def _may_join(slots: list[Draft | None], i: int, j: int) -> bool:
    """Whether adjacent slots ``i`` and ``j`` may merge: no table, no semantic boundary between."""
    draft, other = slots[i], slots[j]
    assert draft is not None and other is not None
    return not other.is_table and not (other if j > i else draft).after_boundary


def _merged(slots: list[Draft | None], i: int, j: int) -> Draft:
    """The drafts of slots ``i`` and ``j`` as one, in reading order; ``slots[j]`` is the target."""
    draft, target = slots[i], slots[j]
    assert draft is not None and target is not None
    earlier, later = (target, draft) if j < i else (draft, target)
    return merge_pair(earlier, later, target)


def _place(slots: list[Draft | None], i: int, j: int, merged: Draft) -> None:
    """Put ``merged`` (slots ``i`` and ``j``) in the LATER slot and empty the other: a forward
    merge is then re-checked when the loop reaches it, and scans never walk back over a growing
    run of emptied slots (that would be quadratic on long runs of small drafts)."""
    slots[max(i, j)] = merged
    slots[min(i, j)] = None


def _target(slots: list[Draft | None], i: int, budget: Budget) -> tuple[int, Draft] | None:
    """The adjacent slot ``slots[i]`` merges into (see the module doc) and the merged draft."""
    draft = slots[i]
    assert draft is not None
    before, after = _adjacent(slots, i, -1), _adjacent(slots, i, 1)
    section = draft.section.index
    same = [j for j in (before, after) if j is not None and slots[j].section.index == section]  # type: ignore[union-attr]
    for j in (*same, *(j for j in (before, after) if j is not None and j not in same)):
        if not _may_join(slots, i, j):
            continue
        merged = _merged(slots, i, j)
        if budget.accepts(merged):
            return j, merged
    return None


def _merge_heading(slots: list[Draft | None], i: int) -> None:
    """Merge the heading-only draft in slot ``i`` forward, or (at the end) back into prose."""
    draft = slots[i]
    assert draft is not None
    following = _adjacent(slots, i, 1)
    if following is not None:
        target = slots[following]
        assert target is not None
        if target.is_table:
            _open_with(draft.parts, target)
            target.after_boundary = target.after_boundary or draft.after_boundary
            slots[i] = None
        else:
            _place(slots, i, following, _merged(slots, i, following))
        return
    previous = _adjacent(slots, i, -1)
    if previous is not None and not slots[previous].is_table:  # type: ignore[union-attr]
        _place(slots, i, previous, _merged(slots, i, previous))


def merge_small(drafts: list[Draft], min_tokens: int, budget: Budget) -> list[Draft]:
    """Merge heading-only drafts, then drafts under ``min_tokens`` (see module doc); a new list.

    Heading-only drafts go first, so that no small draft can take one as its merge target (a
    chunk would then end with the heading).
    """
    slots: list[Draft | None] = list(drafts)
    for i, draft in enumerate(slots):
        if draft is not None and not draft.is_table and _only_headings(draft):
            _merge_heading(slots, i)
    if min_tokens > 0:
        counter = budget.counter
        for i in range(len(slots)):
            draft = slots[i]
            if draft is None or draft.is_table or draft.tokens(counter) >= min_tokens:
                continue
            found = _target(slots, i, budget)
            if found is not None:
                _place(slots, i, *found)
    return [draft for draft in slots if draft is not None]
