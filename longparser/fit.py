"""Strict mode (``strict_max_tokens``): every chunk's final text counts at most ``max_tokens``.

The stages before this one already aim at the budget (packing, list pieces, table rows and
schema samples, merges are sized with the chunk's real count). This stage makes the maximum
true by construction whatever the counter: it recounts every draft as it will be emitted
(``embed_text`` when ``heading_context`` is on: the breadcrumb counts) and cuts any draft that
is over, the way semchunk and docling-core's HybridChunker do: split at the coarsest natural
boundary, then pack the pieces again.

* A draft over the budget is cut between its parts (blocks, list items, row batches) into
  pieces that fit. Each later piece repeats what its content needs to be understood: a list's
  lead-in (as context, like every later list piece), a pipe table's header line. Overlap is not
  repeated. Headings never end a piece that content follows: they move on with that content.
* A part too long for any piece (an oversized paragraph, list item, row batch or schema) is cut
  at line breaks, then sentence ends, then word boundaries, and a single over-long word by the
  counter's own prefix search (a tokenizer's offsets). A code block is cut at line ends only
  (each line keeps its indentation); only a single line longer than a piece is cut further.
  Every piece keeps its block's id and page; the chunk's metadata ``block_parts`` says which
  part of which block it holds.
* Repeated context may take at most :data:`CONTEXT_SHARE` of the budget: a longer breadcrumb
  loses its outermost titles first (the last one left is cut to fit), a longer lead-in or
  header line is cut. Context is shortened, never content.

Nothing is lost: every non-whitespace character of kept text is in some chunk, in order.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from longparser.budget import Budget
from longparser.build import LINE_SEPARATOR, Draft, Part, part
from longparser.context import BREADCRUMB_SEPARATOR, breadcrumb
from longparser.cutting import CODE_LEVELS, LEVELS, fitting_tail, split_spans
from longparser.errors import RequestRefused

# --- context: breadcrumbs, lead-ins, header lines --------------------------------------------


def shorten_breadcrumb(draft: Draft, budget: Budget) -> None:
    """Keep the breadcrumb within the context share: drop outer titles, then cut the last one."""
    titles = list(draft.path)
    while titles and not _within_share(BREADCRUMB_SEPARATOR.join(titles), budget):
        if len(titles) == 1:
            titles = [_shortened(titles[0], budget, keep_end=False)]
            break
        titles = titles[1:]
    if list(draft.path) != titles:
        draft.breadcrumb = titles


def _within_share(text: str, budget: Budget) -> bool:
    return budget.count(text) <= budget.context_tokens


def _shortened(text: str, budget: Budget, keep_end: bool) -> str:
    """``text`` cut to the context share: its end (a lead-in: what it says is listed) or start."""
    if _within_share(text, budget):
        return text
    if keep_end:
        return fitting_tail(text, lambda tail: _within_share(tail, budget))
    spans = split_spans(text, lambda head: _within_share(head, budget), budget.counter)
    return text[spans[0][0] : spans[0][1]] if spans else ""


def _empty_like(draft: Draft) -> Draft:
    """An empty draft of ``draft``'s kind, section and metadata, knowing what its pieces repeat."""
    piece = Draft([], draft.kind, draft.section, dict(draft.meta))
    piece.list_lead, piece.head, piece.breadcrumb = draft.list_lead, draft.head, draft.breadcrumb
    return piece


def _continued(draft: Draft, budget: Budget) -> Draft:
    """An empty draft for the next piece of ``draft``: same kind, section and metadata, with the
    context a piece of it repeats (a list's lead-in, a pipe table's header line)."""
    piece = _empty_like(draft)
    lead = draft.list_lead
    if lead is not None:
        text = _shortened(lead.text, budget, keep_end=True)
        piece.set_prefix(text + LINE_SEPARATOR, budget.measure(text))
        piece.lead = lead
    return piece


def _opening(draft: Draft, budget: Budget) -> list[Part]:
    """The parts a continued piece of ``draft`` starts with (a pipe table's header line)."""
    head = draft.head
    if head is None:
        return []
    text = _shortened(head.text, budget, keep_end=False)
    return [part(head.rec, text, budget.measure(text), "", True)]


# --- cutting a draft into pieces -------------------------------------------------------------


def _with(draft: Draft, parts: list[Part]) -> Draft:
    """``draft`` with ``parts`` appended (a trial: the draft itself is not changed)."""
    trial = Draft(draft.parts + parts, draft.kind, draft.section, draft.meta)
    trial.prefix, trial.prefix_units, trial.breadcrumb = draft.prefix, draft.prefix_units, draft.breadcrumb
    return trial


_LEADING_KINDS = frozenset({"heading", "caption"})


def _leads(piece: Part) -> bool:
    """A heading or caption: it belongs with the content after it, never at a piece's end."""
    return piece.rec.kind in _LEADING_KINDS and not piece.context


def _opens(piece: Part, draft: Draft) -> bool:
    """A heading, a caption or the list's lead-in: it opens what follows, never ends a piece."""
    return _leads(piece) or (piece.rec is draft.list_lead and not piece.context)


def _has_content(draft: Draft) -> bool:
    """Whether ``draft`` holds a source part besides what only opens content (context aside)."""
    return any(not p.context and not _opens(p, draft) for p in draft.parts)


def _text_pieces(piece: Part, draft: Draft, budget: Budget) -> list[Part] | None:
    """``piece`` cut so that each cut fits after what ``draft`` holds; None if not even a
    fragment of it fits there."""
    text, (offset, _) = piece.text, piece.span or (0, 0)
    sep = piece.sep if draft.parts else ""

    def fits(candidate: str) -> bool:
        return budget.fits(_with(draft, [part(piece.rec, candidate, budget.measure(candidate), sep)]))

    spans = split_spans(text, fits, budget.counter, CODE_LEVELS if piece.rec.kind == "code" else LEVELS)
    if spans is None:
        return None
    # a later cut is written after the text that separated it (whitespace, or nothing inside a word)
    seps = [sep, *[text[end:start] for (_, end), (start, _) in pairwise(spans)]]
    return [part(piece.rec, text[s:e], budget.measure(text[s:e]), cut_sep, piece.context,
                 (offset + s, offset + e)) for cut_sep, (s, e) in zip(seps, spans, strict=True)]


def _appended(current: Draft, piece: Part, budget: Budget) -> list[Part]:
    """``current``'s parts with ``piece`` after them. A cut written right after the cut before it
    (a word cut in two) becomes one part again, measured as one: units only add up across
    whitespace; after anything else it starts a line."""
    parts = current.parts
    if parts and piece.sep == "" and piece.span and parts[-1].span and parts[-1].span[1] == piece.span[0]:
        before = parts[-1]
        text = before.text + piece.text
        return [*parts[:-1], part(before.rec, text, budget.measure(text), before.sep, before.context,
                                  (before.span[0], piece.span[1]))]
    if not parts:
        return [piece.after("")]
    # the rest of a word cut in two, after other text (a repeated header line): a line of its own,
    # or it would run into that text (and count differently: units only add up across whitespace)
    return [*parts, piece.after(piece.sep or LINE_SEPARATOR)]


def _close(piece: Draft, pieces: list[Draft], hold_headings: bool = True) -> list[Part]:
    """Add ``piece`` to ``pieces``, holding back the headings (captions, a list's lead-in) it
    ends with when it has other content (they open the next piece); returns what was held back."""
    parts = piece.parts
    cut = len(parts)
    while hold_headings and cut > 0 and _opens(parts[cut - 1], piece):
        cut -= 1
    if not any(not p.context and not _opens(p, piece) for p in parts[:cut]):
        cut = len(parts)  # nothing but headings or captions: they stand alone
    piece.parts = parts[:cut]
    pieces.append(piece)
    return parts[cut:]


def _first_piece(draft: Draft, budget: Budget) -> Draft:
    """An empty draft for the first piece of ``draft``: its context, a repeated lead-in shortened."""
    piece = _empty_like(draft)
    piece.prefix, piece.prefix_units, piece.lead = draft.prefix, draft.prefix_units, draft.lead
    piece.overlap_ids = list(draft.overlap_ids)
    if draft.lead is not None:
        text = _shortened(draft.lead.text, budget, keep_end=True)
        piece.set_prefix(text + LINE_SEPARATOR, budget.measure(text))
    return piece


def _continuation(draft: Draft, carried: list[Part], budget: Budget) -> Draft:
    """The next piece of ``draft``: its repeated context, then the headings carried over (a
    list's lead-in carried over is content again, not repeated as context)."""
    piece = _continued(draft, budget)
    if any(p.rec is draft.list_lead for p in carried):
        piece.set_prefix("", 0)
        piece.lead = None
    opening = _opening(draft, budget)
    if carried:
        carried = [carried[0].after(LINE_SEPARATOR if opening else ""), *carried[1:]]
    piece.parts = opening + carried
    return piece


def _drop_repeated_context(piece: Draft, budget: Budget) -> bool:
    """Give up what an empty ``piece`` repeats as context when not even a fragment of content
    fits beside it: its prefix (a repeated lead-in or overlap), then its repeated parts (a header
    line), then its breadcrumb. Each is already within its own share, but together they can
    fill the budget; context gives way, content never does. False when nothing is left."""
    if piece.prefix:
        piece.set_prefix("", 0)
        piece.lead, piece.overlap_ids = None, []
        return True
    if any(p.context for p in piece.parts):
        piece.parts = [p for p in piece.parts if not p.context]
        return True
    if budget.with_breadcrumb and breadcrumb(piece):
        piece.breadcrumb = []
        return True
    return False


def fit_draft(draft: Draft, budget: Budget) -> list[Draft]:
    """``draft`` if it fits, else the pieces it is cut into (see the module doc).

    Raises:
        RequestRefused: not even one character fits, with all repeated context given up.
    """
    if budget.fits(draft):
        return [draft]
    pieces: list[Draft] = []
    current = _first_piece(draft, budget)
    queue = list(draft.parts)
    while queue:
        piece = queue.pop(0)
        trial = _with(current, [])
        trial.parts = _appended(current, piece, budget)
        if budget.fits(trial):
            current.parts = trial.parts
            continue
        if _has_content(current):  # close it; the piece starts the next one
            current = _continuation(draft, _close(current, pieces), budget)
            queue.insert(0, piece)
            continue
        cut = _text_pieces(piece, current, budget)
        if cut is not None:
            queue[:0] = cut
        elif any(_opens(p, current) for p in current.parts):  # openers nothing fits beside
            _close(current, pieces)
            current = _continuation(draft, [], budget)
            queue.insert(0, piece)
        elif _drop_repeated_context(current, budget):
            queue.insert(0, piece)
        else:
            raise RequestRefused(f"max_tokens {budget.max_tokens} leaves no room for text beside the "
                                 "context a chunk must repeat")
    if current.parts:
        _close(current, pieces, hold_headings=False)
    return pieces


def fit_all(drafts: list[Draft], budget: Budget) -> list[Draft]:
    """Every draft fitted (see the module doc); reading order kept."""
    if budget.with_breadcrumb:
        for draft in drafts:
            shorten_breadcrumb(draft, budget)
    pieces = [piece for draft in drafts for piece in fit_draft(draft, budget)]
    # a caption after its table that had to stand alone goes back after the table's pieces
    pieces.sort(key=Draft.first_pos.fget)  # type: ignore[attr-defined]
    return pieces


def block_parts(drafts: list[Draft]) -> list[list[dict[str, Any]]]:
    """For each draft, the pieces of blocks it holds: ``{block_id, part, of, start, end}``."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for draft in drafts:
        for p in draft.parts:
            if p.span is not None and not p.context:
                spans.setdefault(p.rec.block_id, []).append(p.span)
    numbers = {key: sorted(set(found)) for key, found in spans.items()}
    out = []
    for draft in drafts:
        out.append([
            {"block_id": p.rec.block_id, "part": numbers[p.rec.block_id].index(p.span) + 1,
             "of": len(numbers[p.rec.block_id]), "start": p.span[0], "end": p.span[1]}
            for p in draft.parts if p.span is not None and not p.context
        ])
    return out
