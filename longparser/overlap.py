"""Stage 8: overlap.

With ``overlap_blocks`` N > 0, a draft receives, as repeated text, the end of the draft right
before it (chunk order), when both are in the same section, neither is a table/table_schema
draft and no semantic boundary lies between them (the topic changed: the previous topic's text
would only mislead). Primary ids and pages do not change; the copied ids go to metadata
``overlap_block_ids`` and ``overlap_with_previous`` is set.

Decisions (docs/chunking.md has the rules):

* What is copied (``overlap_unit``): the previous draft's last N ``paragraph`` blocks
  (``paragraph``, the default), or the last N sentences of them (``sentence``). Candidates are
  taken from the end while they are paragraphs (a trailing heading, list item or caption stops
  the walk: it is not a paragraph); a trailing ``equation`` block cancels the overlap entirely
  (the overlap would duplicate an equation).
* A piece of a block cut to a strict maximum never receives the same block's earlier piece as
  overlap: the walk stops at a block the draft itself holds (it would repeat what the reader
  reads next, not give context).
* No overlap onto a draft that already starts with repeated text (a later list piece with its
  lead-in), nor when the draft's text already starts with the overlap text.
* Overlap texts are joined to each other and to the draft with a blank line.
* ``overlap_max_share`` caps the overlap at that share of the chunk limit (``max_tokens`` less
  ``reserve_tokens``) and at a third of the draft's own tokens, so that overlap is never more
  than a quarter of the chunk it opens (more would make the chunk mostly a copy of its
  neighbour); in strict mode the overlap also takes at
  most the room the chunk has left. Whole paragraphs are dropped from its start first, then the
  earliest kept one is cut to its end (from a sentence start, else a word start). A chunk with
  no room gets no overlap.
"""

from __future__ import annotations

from collections.abc import Set
from itertools import pairwise

from longparser.budget import Budget
from longparser.build import Draft, Part
from longparser.cutting import fitting_tail, sentence_starts
from longparser.prepare import Rec

OVERLAP_SEPARATOR = "\n\n"
PARAGRAPH, SENTENCE = "paragraph", "sentence"
# Overlap at most a quarter of the chunk it opens: a third of the chunk's own tokens.
OWN_TOKENS_PER_OVERLAP_TOKEN = 3


def overlap_candidates(previous: Draft, n: int, own: Set[Rec] = frozenset()) -> list[Part]:
    """The trailing paragraphs of ``previous`` to copy (possibly none), in reading order; the
    walk stops at a block in ``own`` (the receiving draft's blocks)."""
    picked: list[Part] = []
    for piece in reversed(previous.parts):
        if piece.repeated:
            continue  # an inline lead-in is not the previous chunk's own text
        if len(picked) == n:
            break
        if piece.rec.kind == "equation":
            return []
        if piece.rec.kind != "paragraph" or piece.rec in own:
            break
        picked.append(piece)
    picked.reverse()
    return picked


def _last_sentences(picked: list[Part], n: int, budget: Budget) -> list[Part]:
    """The last ``n`` sentences of the paragraphs ``picked``, as parts of the same blocks."""
    kept: list[Part] = []
    for piece in reversed(picked):
        starts = sentence_starts(piece.text)
        if len(starts) >= n:
            text = piece.text[starts[-n] :]
            if text != piece.text:
                piece = piece._replace(text=text, units=budget.measure(text))
            kept.append(piece)
            break
        kept.append(piece)
        n -= len(starts)
    kept.reverse()
    return kept


def _fitted(
    picked: list[Part], current: Draft, budget: Budget, cap: int | None
) -> tuple[str, list[Part], int | None]:
    """The overlap text that may go before ``current``, the paragraphs it copies from, and its
    units when they are known without measuring it (whole paragraphs, an additive counter).

    Whole paragraphs are dropped from the start until the rest fits (the cap, and in strict
    mode the room ``current`` has left); a last paragraph still too long keeps its end, from a
    sentence start if one fits, else a word start.
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


def apply_overlap(
    drafts: list[Draft], n: int, budget: Budget, max_share: float | None, unit: str = PARAGRAPH
) -> None:
    """Prepend overlap in place (drafts are the engine's own objects)."""
    if n <= 0:
        return
    share_cap = None if max_share is None else int(max_share * budget.chunk_limit)
    counter = budget.counter
    for previous, current in pairwise(drafts):
        if previous.section is not current.section or previous.is_table or current.is_table:
            continue
        if current.after_boundary or current.prefix:
            continue
        own = {piece.rec for piece in current.parts if piece.span is not None}
        picked = overlap_candidates(previous, n, own)  # n sentences lie in n paragraphs at most
        if picked and unit == SENTENCE:
            picked = _last_sentences(picked, n, budget)
        if not picked or current.body.startswith(OVERLAP_SEPARATOR.join([piece.text for piece in picked])):
            continue
        cap = share_cap
        if cap is not None:  # never a quarter of the chunk or more: a third of its own tokens
            cap = min(cap, current.tokens(counter) // OWN_TOKENS_PER_OVERLAP_TOKEN)
            if cap <= 0:
                continue
        text, copied, units = _fitted(picked, current, budget, cap)
        if text:
            current.set_prefix(text + OVERLAP_SEPARATOR, budget.measure(text) if units is None else units)
            current.overlap_ids = [piece.rec.block_id for piece in copied]
