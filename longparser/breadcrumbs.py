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
breadcrumb is whole. With ``breadcrumb_repeats_heading`` the breadcrumb of a section's chunk is
whole as long as the section has other chunks: when every chunk of a section carries its title,
the title alone cannot tell which chunk opens the section; said twice (breadcrumb and heading),
it weighs more in that chunk's vector, so a question naming the section finds its first chunk
first. A section of one chunk has no other chunk to stand out from: its title is said once.
"""

from __future__ import annotations

from collections import Counter

from longparser.build import Draft

BREADCRUMB_SEPARATOR = "\n"


def breadcrumb(draft: Draft, sole_chunk: bool = False, *, prefixed: bool = False) -> list[str]:
    """The section titles to put before ``draft``'s text, outermost first (``sole_chunk``: the
    draft is its section's only chunk; ``prefixed``: as they will be once a prefix, such as
    overlap, goes before the text: whole). While drafts are still fitted their number is not
    known, so the budget counts the breadcrumb of a section of several chunks: the longer one."""
    titles = draft.section.crumbs if draft.breadcrumb is None else draft.breadcrumb
    if draft.section.crumbs_repeat_heading and not sole_chunk:
        return list(titles)
    leading: set[str] = set()
    if not draft.prefix and not prefixed:
        for piece in draft.parts:
            if piece.rec.kind != "heading" or piece.repeated:
                break
            leading.add(_collapsed(piece.text))
    return [title for title in titles if _collapsed(title) not in leading]


def final_breadcrumbs(drafts: list[Draft]) -> list[list[str]]:
    """Each final draft's :func:`breadcrumb`, knowing which drafts are their section's only chunk."""
    chunks_of = Counter(id(draft.section) for draft in drafts)
    return [breadcrumb(draft, sole_chunk=chunks_of[id(draft.section)] == 1) for draft in drafts]


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def embed_text(draft: Draft, text: str, titles: list[str] | None = None) -> str:
    """``text`` (the draft's final text) after its breadcrumb (``titles``: what is written of it,
    when not the whole :func:`breadcrumb`)."""
    titles = breadcrumb(draft) if titles is None else titles
    return BREADCRUMB_SEPARATOR.join([*titles, text]) if titles else text
