"""Stage 7: headings lead what they head, and minimum-size merging.

Headings first (:func:`lead_headings`): headings at the end of a draft that has other content
move to the start of the next draft, the content they open (whatever its section or type), so
no chunk ends with a heading unless the document does. Then, with ``min_tokens`` > 0
(:func:`merge_small`):

* a draft made only of headings merges FORWARD into the next draft, the content it opens (its
  own section's next draft, else the next section's first), and backward into the previous
  draft only at the very end of the document. A heading-only draft before a table joins the
  table's first draft as its opening lines, like a caption (its id in ``block_ids``); a
  table still never merges with prose;
* any other draft whose token count is under ``min_tokens`` merges into the previous draft of
  the same section, else the next draft of the same section, else the previous draft, else
  the next. Table and table_schema drafts never take part: they are neither merged nor merge
  targets, and "previous"/"next" skip over them (decision: the nearest eligible draft, so a
  short paragraph after a table can still join the prose before the table). Texts join with a
  blank line; blocks (hence ids and pages) are unioned in order.

A merged draft belongs to its target's section: a heading merged forward takes the section of
the content it opens (a chunk's ``section_path`` is that of its content).

The merged draft keeps the target's type, but becomes ``equation`` when either side held an
equation; metadata is the union (target wins). A draft merged forward is checked again (it
may still be under the minimum). The pipeline restores reading order (by first block)
afterwards.

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
    """One draft holding ``earlier`` then ``later``; ``target`` decides the type and section.

    The merged draft keeps what a piece cut from it must repeat (a list's lead-in), so that a
    strict cut of it still shows what its items are a list of.
    """
    later_parts = list(later.parts)
    repeated = earlier.repeated_lead_in
    if later.repeated_lead_in is not None and not _holds_lead_in(earlier, later.repeated_lead_in):
        # the later piece's repeated lead-in stays in the text, inline
        lead_in = later.repeated_lead_in
        later_parts[:1] = [Part(lead_in, lead_in.text, lead_in.units, repeated=True),
                           later_parts[0].after(LINE_SEPARATOR)]
        repeated = repeated or lead_in
    later_parts[0] = later_parts[0].after(MERGE_SEPARATOR)
    kind = "equation" if earlier.has_equation() or later.has_equation() else target.kind
    meta = {**(earlier if target is later else later).meta, **target.meta}
    return target.evolve(parts=earlier.parts + later_parts, kind=kind, meta=meta, prefix=earlier.prefix,
                         prefix_units=earlier.prefix_units, repeated_lead_in=repeated,
                         lead_in=earlier.lead_in or later.lead_in)


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


def _merged(slots: list[Draft | None], i: int, j: int) -> Draft:
    """The drafts of slots ``i`` and ``j`` as one, in reading order; ``slots[j]`` is the target."""
    draft, target = slots[i], slots[j]
    assert draft is not None and target is not None
    earlier, later = (target, draft) if j < i else (draft, target)
    return merge_pair(earlier, later, target)


def _place(slots: list[Draft | None], i: int, j: int, merged: Draft) -> None:
    """Put ``merged`` (slots ``i`` and ``j``) in the LATER slot and empty the other: a forward
    merge is then re-checked when the loop reaches it, and backward scans never walk over a
    growing run of emptied slots (that would be quadratic on long runs of small drafts).
    Reading order is restored by first block in the pipeline."""
    slots[max(i, j)] = merged
    slots[min(i, j)] = None


def _target(slots: list[Draft | None], i: int, budget: Budget) -> tuple[int, Draft] | None:
    """The slot ``slots[i]`` merges into (see module doc) and the merged draft; in strict mode
    only a neighbour it fits with."""
    draft = slots[i]
    assert draft is not None
    for step, same in ((-1, draft.section.index), (1, draft.section.index), (-1, None), (1, None)):
        j = _neighbour(slots, i, step, same)
        if j is None:
            continue
        merged = _merged(slots, i, j)
        if budget.accepts(merged):
            return j, merged
    return None


def _merge_heading(slots: list[Draft | None], i: int) -> None:
    """Merge the heading-only draft in slot ``i`` forward (or, at the end, back), if it has a
    neighbour at all."""
    draft = slots[i]
    assert draft is not None
    following = next((j for j in range(i + 1, len(slots)) if slots[j] is not None), None)
    if following is not None and slots[following].is_table:  # type: ignore[union-attr]
        _open_with(draft.parts, slots[following])  # type: ignore[arg-type]
        slots[i] = None
        return
    j = following if following is not None else _neighbour(slots, i, -1, None)
    if j is not None:
        _place(slots, i, j, _merged(slots, i, j))


def merge_small(drafts: list[Draft], min_tokens: int, budget: Budget) -> list[Draft]:
    """Merge heading-only drafts, then drafts under ``min_tokens`` (see module doc); a new list.

    Heading-only drafts go first, so that no small draft can take one as its merge target (a
    chunk would then end with the heading).
    """
    if min_tokens <= 0:
        return list(drafts)
    slots: list[Draft | None] = list(drafts)
    for i, draft in enumerate(slots):
        if draft is not None and not draft.is_table and _only_headings(draft):
            _merge_heading(slots, i)
    for i in range(len(slots)):
        draft = slots[i]
        if draft is None or draft.is_table or draft.tokens(budget.counter) >= min_tokens:
            continue
        found = _target(slots, i, budget)
        if found is not None:
            _place(slots, i, *found)
    return [draft for draft in slots if draft is not None]
