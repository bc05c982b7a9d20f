"""Heading breadcrumbs for embedding (``heading_context``): a chunk's section titles before its text.

A chunk's ``embed_text`` is its heading breadcrumb - the titles of its section path, outermost
first, one per line (with ``breadcrumb_titles`` N, only the N innermost) - followed by its
text, so that the vector of a chunk deep in a document still carries what the chunk is about
(docling-core's ``contextualize()`` does the same).
``text`` stays the chunk's own content.

A title the text already starts with (a heading block at the very start of the chunk) is not
repeated in the breadcrumb; titles and headings are compared with their whitespace collapsed
(a derived title is the heading's text collapsed, see :mod:`longparser.hierarchy`). A chunk
starting with repeated text (overlap, a repeated lead-in) does not start with a heading, so its
breadcrumb is whole.
"""

from __future__ import annotations

from longparser.build import Draft

BREADCRUMB_SEPARATOR = "\n"


def breadcrumb(draft: Draft, *, prefixed: bool = False) -> list[str]:
    """The section titles to put before ``draft``'s text, outermost first (``prefixed``: as
    they will be once a prefix, such as overlap, goes before the text: whole)."""
    leading: set[str] = set()
    if not draft.prefix and not prefixed:
        for piece in draft.parts:
            if piece.rec.kind != "heading" or piece.repeated:
                break
            leading.add(_collapsed(piece.text))
    titles = draft.section.crumbs if draft.breadcrumb is None else draft.breadcrumb
    return [title for title in titles if _collapsed(title) not in leading]


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def embed_text(draft: Draft, text: str, titles: list[str] | None = None) -> str:
    """``text`` (the draft's final text) after its breadcrumb (``titles``: what is written of it,
    when not the whole :func:`breadcrumb`)."""
    titles = breadcrumb(draft) if titles is None else titles
    return BREADCRUMB_SEPARATOR.join([*titles, text]) if titles else text
