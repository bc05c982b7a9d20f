"""Small-to-big retrieval over a chunking result: search the small chunks, return their parents.

    from adapters.small_to_big import small_to_big

    hits = [chunk_id for chunk_id, _score in vector_search(question, k=20)]   # best first
    for unit in small_to_big(result, hits, budget=1024, max_parent_tokens=1024):
        prompt_parts.append(unit.text)

Fitted chunks embed well (one topic each, inside the model's window); a reader wants more
context than one of them. :func:`small_to_big` takes the retrieved chunk ids, best first, and
returns each one's parent (``ChunkResult.parents``: its section, its whole table, or the
document; docs/chunking.md, "Parents") in rank order, each once, while they fit the token
budget. A parent larger than ``max_parent_tokens`` is not returned: the chunk itself is (a
section of many pages is no better context than the hit). Parents hold no text; a parent's text
is the texts of the chunks in its scope joined in reading order (:func:`parent_text`): a
section's own chunks and its subsections' and tables'.

Tokens are the engine's counts (``Chunk.token_count``, the request's counter) unless a
``count`` function is given; a parent's count is the sum of its chunks' counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from schemas import Chunk, ChunkParent, ChunkResult

__all__ = ["PARENT_SEPARATOR", "Context", "parent_key", "parent_text", "scope_chunks", "small_to_big"]

PARENT_SEPARATOR = "\n\n"
_DOCUMENT = "doc"


@dataclass(frozen=True)
class Context:
    """One unit :func:`small_to_big` returns.

    Attributes:
        id: the parent's id (:func:`parent_key`: ``doc`` prefixed with the document id), or the
            chunk's id when the chunk stands for a parent over ``max_parent_tokens``.
        kind: ``section``, ``table``, ``document`` or ``chunk``.
        title: the parent's title (a heading, a table's caption), else None.
        text: the parent's own chunks' texts joined, or the chunk's text.
        tokens: its token count.
        chunk_ids: the chunks its text is made of, in reading order.
        hits: the retrieved chunk ids it answers for, best first.
    """

    id: str
    kind: str
    title: str | None
    text: str
    tokens: int
    chunk_ids: list[str]
    hits: list[str]


def parent_key(result: ChunkResult, parent_id: str) -> str:
    """A parent id unique across documents: ``doc`` is every result's, so it becomes
    ``<document_id>:doc``; section and table ids already mix the document id in."""
    if parent_id == _DOCUMENT and result.document_id is not None:
        return f"{result.document_id}:{_DOCUMENT}"
    return parent_id


def parent_text(result: ChunkResult, parent: ChunkParent | str, *, separator: str = PARENT_SEPARATOR) -> str:
    """A parent's text: the texts (not ``embed_text``: no breadcrumbs) of every chunk in its
    scope joined in reading order: its own chunks and its subsections' and tables' (a section is
    its heading's whole scope)."""
    found = parent if isinstance(parent, ChunkParent) else _find(result, parent)
    chunks = scope_chunks(result)[found.id]
    return separator.join(chunk.text for chunk in chunks)


def scope_chunks(result: ChunkResult) -> dict[str, list[Chunk]]:
    """Every parent's chunks, its own and its descendants', in reading order."""
    parents = {p.id: p for p in result.parents}
    scopes: dict[str, list[Chunk]] = {p.id: [] for p in result.parents}
    for chunk in result.chunks:
        parent_id = chunk.parent_id
        while parent_id is not None:
            scopes[parent_id].append(chunk)
            parent_id = parents[parent_id].parent_id
    return scopes


def small_to_big(
    result: ChunkResult,
    hits: Iterable[str],
    *,
    budget: int | None = None,
    max_parent_tokens: int | None = None,
    count: Callable[[str], int] | None = None,
) -> list[Context]:
    """The parents of the retrieved chunks ``hits`` (ids, best first), in rank order, no text twice.

    A hit whose chunk an earlier unit already holds adds nothing (it is credited to that unit);
    a parent that holds units returned before it (a section after one of its subsections)
    takes the place of the first of them and they are dropped, so it costs only its new tokens.

    Args:
        result: the result the chunks come from (its ``parents``).
        hits: retrieved chunk ids, best first; ids not in ``result`` are ignored.
        budget: the most tokens to return in all (None: no limit). A unit that does not fit
            what is left is skipped; a smaller one further down may still fit.
        max_parent_tokens: a parent over this many tokens is replaced by the hit chunk itself
            (None: parents of any size).
        count: a token counter for the returned texts (default: the engine's chunk counts, a
            parent's being the sum of its chunks').

    Raises:
        ValueError: ``result`` has chunks without parents (stored before parents existed).
    """
    chunks = {c.chunk_id: c for c in result.chunks}
    parents = {p.id: p for p in result.parents}
    scopes = scope_chunks(result) if result.parents else {}
    units: list[Context] = []
    held: dict[str, Context] = {}  # chunk id -> the returned unit that holds it
    used = 0
    for hit in hits:
        chunk = chunks.get(hit)
        if chunk is None:
            continue
        if chunk.parent_id is None or chunk.parent_id not in parents:
            raise ValueError("this result has no parents: chunk it again with this release")
        if hit in held:
            _credit(held[hit], hit)
            continue
        parent = parents[chunk.parent_id]
        unit = _unit(parent_key(result, parent.id), parent.kind, parent.title, scopes[parent.id], hit, count)
        if max_parent_tokens is not None and unit.tokens > max_parent_tokens:
            unit = _unit(chunk.chunk_id, "chunk", None, [chunk], hit, count)
        inner = list({id(u): u for u in (held[c] for c in unit.chunk_ids if c in held)}.values())
        cost = unit.tokens - sum(u.tokens for u in inner)
        if budget is not None and used + cost > budget:
            continue
        used += cost
        if inner:  # scopes nest: the new unit holds each of them whole
            place = min(units.index(u) for u in inner)
            for u in inner:
                unit.hits[:0] = [h for h in u.hits if h not in unit.hits]
            units = [u for u in units if all(u is not v for v in inner)]
            units.insert(place, unit)
        else:
            units.append(unit)
        for chunk_id in unit.chunk_ids:
            held[chunk_id] = unit
    return units


def _credit(unit: Context, hit: str) -> None:
    if hit not in unit.hits:
        unit.hits.append(hit)


def _find(result: ChunkResult, parent_id: str) -> ChunkParent:
    found = next((p for p in result.parents if p.id == parent_id), None)
    if found is None:
        raise KeyError(f"no parent {parent_id!r} in this result")
    return found


def _unit(key: str, kind: str, title: str | None, chunks: list[Chunk], hit: str,
          count: Callable[[str], int] | None) -> Context:
    text = PARENT_SEPARATOR.join(chunk.text for chunk in chunks)
    tokens = count(text) if count is not None else sum(chunk.token_count for chunk in chunks)
    return Context(key, kind, title, text, tokens, [chunk.chunk_id for chunk in chunks], [hit])
