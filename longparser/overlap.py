"""Stage 8: paragraph overlap.

With ``overlap_blocks`` N > 0, a draft receives, as context, the texts of the trailing
paragraphs of the draft right before it (chunk order), when both are in the same section and
neither is a table/table_schema draft. Primary ids and pages do not change; the copied ids go
to metadata ``overlap_block_ids`` and ``overlap_with_previous`` is set.

Decisions where SPEC is silent:

* Candidates are the previous draft's last N primary blocks, taken from the end while they
  are ``paragraph`` blocks (a trailing heading, list item or caption stops the walk: it is not
  a paragraph). A trailing ``equation`` block cancels the overlap entirely (the overlap would
  duplicate an equation).
* No overlap onto a draft that already carries context (a later list piece with its
  repeated lead-in), nor when the draft's text already starts with the overlap text.
* Overlap texts are joined to each other and to the draft with a blank line.
"""

from __future__ import annotations

from itertools import pairwise

from longparser.build import Draft
from longparser.prepare import Rec

OVERLAP_SEPARATOR = "\n\n"


def overlap_candidates(previous: Draft, n: int) -> list[Rec]:
    """The trailing paragraphs of ``previous`` to copy (possibly none), in reading order."""
    picked: list[Rec] = []
    for part in reversed(previous.parts):
        if part.context:
            continue  # an inline lead-in is not the previous chunk's own text
        rec = part.rec
        if len(picked) == n:
            break
        if rec.kind == "equation":
            return []
        if rec.kind != "paragraph":
            break
        picked.append(rec)
    picked.reverse()
    return picked


def apply_overlap(drafts: list[Draft], n: int) -> None:
    """Prepend overlap context in place (drafts are the engine's own objects)."""
    if n <= 0:
        return
    for previous, current in pairwise(drafts):
        if previous.section is not current.section or previous.is_table or current.is_table:
            continue
        if current.prefix:
            continue
        picked = overlap_candidates(previous, n)
        if not picked:
            continue
        context = OVERLAP_SEPARATOR.join([rec.text for rec in picked])
        if current.body.startswith(context):
            continue
        current.set_prefix(context + OVERLAP_SEPARATOR, sum(rec.units for rec in picked))
        current.overlap_ids = [rec.block_id for rec in picked]
