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
block is, not where each of its characters is. Every chunk of a table (row batches, schema)
carries the table's whole box, and the table's first chunk its caption's too (where the
caption is its content, not a repeated title).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from schemas.blocks import TOPLEFT


class Boxed(Protocol):
    """What merging reads of a block's record: its page, and its box as :func:`keep_box` left
    it (``origin`` None: the block has no box; else the edges ``x0, y0, x1, y1``)."""

    page: int | None
    origin: str | None
    x0: float
    y0: float
    x1: float
    y1: float


def keep_box(rec: Boxed, bbox: dict[str, Any]) -> None:
    """Keep a block's validated ``provenance.bbox`` on its record, as plain attributes: a tuple
    or dict per block would be one more container for the collector to count and walk on every
    long document (it showed in the default mode's speed)."""
    rec.origin = bbox.get("coord_origin", TOPLEFT)
    rec.x0, rec.y0, rec.x1, rec.y1 = bbox["x0"], bbox["y0"], bbox["x1"], bbox["y1"]


def _written(page: int | None, origin: str, edges: list[float]) -> dict[str, Any]:
    """A merged box as a chunk writes it: ``t``/``b`` are the top and bottom edges as the origin
    reads them (top-left: ``t < b``; bottom-left: ``t > b``)."""
    left, low, right, high = edges
    top, bottom = (low, high) if origin == TOPLEFT else (high, low)
    return {"page": page, "l": left, "t": top, "r": right, "b": bottom, "coord_origin": origin}


def merged_boxes(sources: Sequence[Boxed]) -> list[dict[str, Any]]:
    """The boxes of a chunk whose source records are ``sources``: one per page (and origin), in
    page order (see the module doc). Corners given in either order read as the same rectangle.

    It runs for every chunk, and most chunks lie on one page: that case is merged in local
    variables with comparisons; a second page (or origin) hands over to :func:`_per_page`."""
    seen = False
    page = origin = None
    left = low = right = high = 0.0
    for rec in sources:
        where = rec.origin
        if where is None:
            continue
        x0, y0, x1, y1 = rec.x0, rec.y0, rec.x1, rec.y1
        if x1 < x0:
            x0, x1 = x1, x0
        if y1 < y0:
            y0, y1 = y1, y0
        if not seen:
            seen, page, origin = True, rec.page, where
            left, low, right, high = x0, y0, x1, y1
            continue
        if rec.page != page or where != origin:
            return _per_page(sources)
        if x0 < left:
            left = x0
        if y0 < low:
            low = y0
        if x1 > right:
            right = x1
        if y1 > high:
            high = y1
    return [_written(page, origin, [left, low, right, high])] if seen else []  # type: ignore[arg-type]


def _per_page(sources: Sequence[Boxed]) -> list[dict[str, Any]]:
    """:func:`merged_boxes` for sources on several pages (or origins)."""
    merged: dict[tuple[int | None, str], list[float]] = {}
    for rec in sources:
        origin = rec.origin
        if origin is None:
            continue
        x0, y0, x1, y1 = rec.x0, rec.y0, rec.x1, rec.y1
        box = [min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)]
        edges = merged.setdefault((rec.page, origin), box)
        if edges is not box:
            edges[:] = [min(edges[0], box[0]), min(edges[1], box[1]),
                        max(edges[2], box[2]), max(edges[3], box[3])]
    order = sorted(merged, key=lambda key: (key[0] is None, key[0] or 0, key[1]))
    return [_written(page, origin, merged[(page, origin)]) for page, origin in order]
