"""Stage 8: paragraph overlap.

With ``overlap_blocks`` N > 0, a draft receives, as repeated text, the texts of the trailing
paragraphs of the draft right before it (chunk order), when both are in the same section,
neither is a table/table_schema draft and no semantic boundary lies between them (the topic
changed: the previous topic's text would only mislead). Primary ids and pages do not change; the copied ids go
to metadata ``overlap_block_ids`` and ``overlap_with_previous`` is set.

Decisions (docs/chunking.md has the rules):

* Candidates are the previous draft's last N primary blocks, taken from the end while they
  are ``paragraph`` blocks (a trailing heading, list item or caption stops the walk: it is not
  a paragraph). A trailing ``equation`` block cancels the overlap entirely (the overlap would
  duplicate an equation).
* No overlap onto a draft that already starts with repeated text (a later list piece with its
  lead-in), nor when the draft's text already starts with the overlap text.
* Overlap texts are joined to each other and to the draft with a blank line.
* ``overlap_max_share`` caps the overlap at that share of ``max_tokens`` (opt-in), and in
  strict mode the overlap takes at most the room the chunk has left: whole paragraphs are
  dropped from its start first, then the earliest kept one is cut to its end (from a sentence
  start, else a word start). A chunk with no room gets no overlap.
"""

from __future__ import annotations

from itertools import pairwise

from longparser.budget import Budget
from longparser.build import Draft, Part
from longparser.cutting import fitting_tail

OVERLAP_SEPARATOR = "\n\n"


def overlap_candidates(previous: Draft, n: int) -> list[Part]:
    """The trailing paragraphs of ``previous`` to copy (possibly none), in reading order."""
    picked: list[Part] = []
    for piece in reversed(previous.parts):
        if piece.repeated:
            continue  # an inline lead-in is not the previous chunk's own text
        if len(picked) == n:
            break
        if piece.rec.kind == "equation":
            return []
        if piece.rec.kind != "paragraph":
            break
        picked.append(piece)
    picked.reverse()
    return picked


def _fitted(
    picked: list[Part], current: Draft, budget: Budget, cap: int | None
) -> tuple[str, list[Part], int | None]:
    """The overlap text that may go before ``current``, the paragraphs it copies from, and its
    units when they are known without measuring it (whole paragraphs, an additive counter).

    Whole paragraphs are dropped from the start until the rest fits (the share cap, and in
    strict mode the room ``current`` has left); a last paragraph still too long keeps its end,
    from a sentence start if one fits, else a word start.
    """

    room = budget.prefix_room(current, cap)

    def allowed(text: str, units: int | None = None) -> bool:
        if room is not None:  # an additive counter: the room is known in units
            return (budget.measure(text) if units is None else units) <= room
        return budget.prefix_fits(current, text, OVERLAP_SEPARATOR, cap)

    while True:  # ``picked`` is never empty
        text = OVERLAP_SEPARATOR.join([piece.text for piece in picked])
        units = sum(piece.units for piece in picked)
        if allowed(text, units):
            return text, picked, units if budget.counter.additive else None
        if len(picked) == 1:
            break
        picked = picked[1:]
    tail = fitting_tail(picked[0].text, allowed)
    return (tail, picked, None) if tail else ("", [], None)


def apply_overlap(drafts: list[Draft], n: int, budget: Budget, max_share: float | None) -> None:
    """Prepend overlap in place (drafts are the engine's own objects)."""
    if n <= 0:
        return
    cap = None if max_share is None else int(max_share * budget.max_tokens)
    for previous, current in pairwise(drafts):
        if previous.section is not current.section or previous.is_table or current.is_table:
            continue
        if current.after_boundary:
            continue
        if current.prefix:
            continue
        picked = overlap_candidates(previous, n)
        if not picked or current.body.startswith(OVERLAP_SEPARATOR.join([piece.text for piece in picked])):
            continue
        text, copied, units = _fitted(picked, current, budget, cap)
        if text:
            current.set_prefix(text + OVERLAP_SEPARATOR, budget.measure(text) if units is None else units)
            current.overlap_ids = [piece.rec.block_id for piece in copied]
