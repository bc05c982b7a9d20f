"""Stage 7: minimum-size merging (SPEC 3.7).

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

from longparser.build import Draft
from longparser.tokens import TokenCounter

MERGE_SEPARATOR = "\n\n"


def _holds_lead_in(draft: Draft, lead_id: str | None) -> bool:
    """Whether ``draft``'s text already shows the lead-in block ``lead_id`` (primary or repeated)."""
    if lead_id is None:
        return False
    return lead_id == draft.lead_id or lead_id in [rec.block_id for rec in draft.blocks]


def merge_pair(earlier: Draft, later: Draft, target: Draft) -> Draft:
    """One draft holding ``earlier`` then ``later``; ``target`` decides the type and section."""
    later_text, later_words = later.body, later.body_word_count()
    lead_id = earlier.lead_id
    if later.prefix and not _holds_lead_in(earlier, later.lead_id):
        later_text, later_words = later.prefix + later.body, later.text_word_count()
        lead_id = lead_id or later.lead_id
    kind = "equation" if earlier.has_equation() or later.has_equation() else target.kind
    meta = {**(earlier if target is later else later).meta, **target.meta}
    return Draft(
        earlier.blocks + later.blocks,
        earlier.body + MERGE_SEPARATOR + later_text,
        kind,
        target.section,
        target.path,
        meta,
        prefix=earlier.prefix,
        lead_id=lead_id,
        body_words=earlier.body_word_count() + later_words,  # MERGE_SEPARATOR is whitespace
        prefix_words=earlier.prefix_words,
    )


def _neighbour(slots: list[Draft | None], i: int, step: int, section: int | None) -> int | None:
    """Index of the nearest eligible draft from ``i`` in direction ``step`` (same section if given)."""
    j = i + step
    while 0 <= j < len(slots):
        other = slots[j]
        if other is not None and not other.is_table:
            # sections are contiguous: past the first eligible draft of another section,
            # no draft of ``section`` follows
            return j if section is None or other.section == section else None
        j += step
    return None


def _target(slots: list[Draft | None], i: int) -> int | None:
    section = slots[i].section  # type: ignore[union-attr]
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
