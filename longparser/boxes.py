"""A chunk's boxes: where its primary blocks lie on each page, for citations and highlighting.

The input gives one box per block (``provenance.bbox``: ``x0, y0, x1, y1`` and the origin
they are read from). A chunk's boxes are its *source* blocks' boxes (the blocks in
``block_ids``; overlap and other repeated context are not sources) merged per page: one
rectangle per page, the smallest that holds every source block's box on that page (their
union's bounding rectangle). Coordinates are the blocks' own, unchanged: no scaling, no
conversion between origins, so a box is exactly a block's box when the chunk holds one block on
that page. Blocks whose boxes use different origins on one page are merged per origin (their
rectangles cannot be compared without the page's height). A block without a box gives its
chunk none; a chunk none of whose sources has a box has no boxes.

Why one rectangle per page: it is what a viewer highlights to show a citation (docling-serve,
unstructured and LangChain give none per chunk), and it is cheap. On a multi-column page a
chunk that runs from the foot of one column to the head of the next gets a rectangle across
both columns, covering text of other chunks too: the blocks' own boxes (by ``block_ids``) are
the exact outline.

A piece of a block (strict mode cut it) carries its whole block's box: the input says where a
block is, not where each of its characters is. Every row batch of a table carries the table's
box (and the first one its caption's, when the caption is its content).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from schemas.blocks import TOPLEFT

# A block's box normalised once when the block is read: (origin, left, low y, right, high y),
# so merging is min/max on fixed places whatever the origin and however x0/x1 were ordered.
Box = tuple[str, float, float, float, float]


class Boxed(Protocol):
    """What merging reads of a block's record."""

    page: int | None
    box: Box | None


def block_box(bbox: dict[str, Any] | None) -> Box | None:
    """The normalised form of a block's validated ``provenance.bbox`` (None: it has none)."""
    if bbox is None:
        return None
    x0, y0, x1, y1 = bbox["x0"], bbox["y0"], bbox["x1"], bbox["y1"]
    return (bbox.get("coord_origin", TOPLEFT), min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


def _written(page: int | None, box: Box) -> dict[str, Any]:
    """A merged box as a chunk writes it: ``t``/``b`` are the top and bottom edges as the origin
    reads them (top-left: ``t < b``; bottom-left: ``t > b``)."""
    origin, left, low, right, high = box
    top, bottom = (low, high) if origin == TOPLEFT else (high, low)
    return {"page": page, "l": left, "t": top, "r": right, "b": bottom, "coord_origin": origin}


def merged_boxes(sources: Iterable[Boxed]) -> list[dict[str, Any]]:
    """The boxes of a chunk whose source records are ``sources``: one per page (and origin), in
    page order (see the module doc)."""
    merged: dict[tuple[int | None, str], Box] = {}
    for rec in sources:
        box = rec.box
        if box is None:
            continue
        key = (rec.page, box[0])
        seen = merged.get(key)
        if seen is None:
            merged[key] = box
        elif seen != box:
            merged[key] = (box[0], min(seen[1], box[1]), min(seen[2], box[2]),
                           max(seen[3], box[3]), max(seen[4], box[4]))
    if not merged:
        return []
    if len(merged) == 1:
        ((page, _), box), = merged.items()
        return [_written(page, box)]
    order = sorted(merged, key=lambda key: (key[0] is None, key[0] or 0, key[1]))
    return [_written(key[0], merged[key]) for key in order]
