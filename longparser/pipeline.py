"""The chunking pipeline: composes the stages, one named step each.

:data:`STAGES` is the one ordered list of the stages, each with the engine modules that
implement it (the first one's docstring opens with the stage's number, and no module names
another's); :data:`SHARED` names the pieces every stage uses. docs/chunking.md renders the
list, and a test holds both to the engine's layout: ``validate -> prepare -> sections ->
semantic boundaries -> drafts -> merge -> fit -> overlap -> parents -> finalize``.

Decisions:

* Reading order is the order of the caller's sequence (``order_index`` is not re-sorted);
  chunks are ordered by the position of their first source block (stable, so a table's
  schema chunk precedes its row chunks and bands/batches keep their order).
* Semantic mode requested without an encoder: structural packing, ``stats.semantic``
  records ``available=False`` with the reason, and one warning is logged per call. An encoder
  that raises propagates the error (the task fails visibly instead of silently degrading).
* ``stats.warnings``: what the request should hear about its config
  (:func:`schemas.config.config_warnings`: a field set to something other than its default that
  does nothing in the request's mode, a deprecated name), then about its output
  (``heading_context`` with no section path; chunks the model's tokenizer reads poorly,
  :func:`~longparser.scripts.poorly_read_warning`); each is also logged once per call, which
  the command line prints.
* ``token_count`` is the counter's count of the final text (with overlap and repeated text);
  packing works on per-block counts (their sums may differ from the joined text's count).
* The cyclic garbage collector is paused during a call (:func:`collector_paused` says why and
  how several threads share the pause); the engine makes no reference cycles.
* ``timings_ms``: ``validate`` is the validation of dict blocks (done while prepare reads
  them), ``prepare`` the rest of that pass (exclusions, equation re-tagging, token counts,
  table grids), ``structure`` sections, tables, lists, packing, merging, overlap and parents,
  ``quality`` scores, ids and final token counts, ``total`` the whole call.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from longparser.breadcrumbs import embed_text, final_breadcrumbs
from longparser.budget import Budget
from longparser.build import Draft, chunk_type, to_chunk
from longparser.errors import RequestRefused
from longparser.fit import block_parts, fit_all
from longparser.hierarchy import DerivedPaths, context_warnings
from longparser.ids import chunk_ids
from longparser.intake import BlockIntake
from longparser.lists import list_drafts
from longparser.merging import lead_headings, merge_small
from longparser.overlap import apply_overlap
from longparser.packing import pack_prose
from longparser.parents import ParentTree, parent_tree
from longparser.prepare import prepare
from longparser.preset import expanded, resolve
from longparser.quality import ChunkScorer
from longparser.repeats import CHUNK_CAP_FLOOR, TEXT_CHARS_PER_CHUNK, chunk_cap, short_path
from longparser.resources import NO_RESOURCES, Resources
from longparser.scripts import poorly_read_warning
from longparser.sections import ProseSeg, Section, TableSeg, group_sections
from longparser.semantic import section_boundaries
from longparser.table_chunks import pack_tables, table_drafts
from schemas import (
    Block,
    Chunk,
    ChunkingConfig,
    ChunkParent,
    ChunkRequest,
    ChunkResult,
    ChunkStats,
    SemanticStats,
    parse_config,
)
from schemas.config import config_warnings

logger = logging.getLogger(__name__)


class Stage(NamedTuple):
    """One step of :func:`chunk_blocks`: its name, the modules that implement it, what it does."""

    name: str
    modules: tuple[str, ...]
    does: str


STAGES: tuple[Stage, ...] = (
    Stage("validate", ("intake",),
          "each caller block checked against the one `Block` contract as prepare reads it"),
    Stage("prepare", ("prepare", "equations", "hierarchy"),
          "kept blocks as light records: exclusions, equation re-tagging, section paths from "
          "heading levels"),
    Stage("sections", ("sections",),
          "runs of blocks with one `hierarchy_path`, each cut into prose runs, tables and lists"),
    Stage("semantic boundaries", ("semantic", "boundary_methods"),
          "where a section's topic changes (semantic mode only)"),
    Stage("drafts", ("packing", "lists", "tables", "table_chunks"),
          "each segment's drafts: prose packed to the budget with equation glue, lists with their "
          "lead-in, table rows, bands and schema chunks (consecutive tables packed when asked)"),
    Stage("merge", ("merging",),
          "headings lead what they head, drafts under `min_tokens` join a neighbour; then reading "
          "order (first source block)"),
    Stage("fit", ("fit",), "strict mode: every chunk's final text cut to `max_tokens`"),
    Stage("overlap", ("overlap",), "the end of the previous draft repeated as context"),
    Stage("parents", ("parents",),
          "each chunk's parent: its innermost heading's scope, its whole table, or the document"),
    Stage("finalize", ("ids", "quality", "breadcrumbs", "boxes"),
          "ids, final token counts, quality scores, `embed_text` and boxes; each chunk built once"),
)
# What every stage uses, not a step of its own.
SHARED: tuple[str, ...] = ("budget", "build", "tokens", "cutting", "scripts", "preset", "repeats",
                           "resources", "errors")

NO_ENCODER_REASON = "no encoder provided"


class _CollectorPause:
    """Who holds the collector paused: the calls under way, and whether it ran before the first."""

    lock = threading.Lock()
    calls = 0
    was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a call runs, back as it was after the last one.

    A call allocates containers (records, grid rows, drafts, chunks) that live until it returns,
    so the collector's passes during a call find nothing to free, and each pass walks what
    survived into the older generations: a full pass walks the whole process (the caller's
    input included), which cost about a fifth of a call. The engine makes no reference cycles
    (what it drops is freed by reference counting at once: a test holds that a call leaves no
    cyclic garbage), so nothing it allocates waits for the collector. The switch is process-wide:
    calls in several threads share one pause (the last to finish turns the collector back on, if
    it was on before the first), and another thread's cyclic garbage waits for the collector no
    longer than the calls under way take.
    """
    with _CollectorPause.lock:
        if _CollectorPause.calls == 0:
            _CollectorPause.was_enabled = gc.isenabled()
            gc.disable()
        _CollectorPause.calls += 1
    try:
        yield
    finally:
        with _CollectorPause.lock:
            _CollectorPause.calls -= 1
            if _CollectorPause.calls == 0 and _CollectorPause.was_enabled:
                gc.enable()


def _as_config(config: ChunkingConfig | dict[str, Any] | None) -> ChunkingConfig:
    if config is None:
        return ChunkingConfig()
    if isinstance(config, ChunkingConfig):
        return config
    return parse_config(config)  # InputError: one line, with a suggestion for a typo


def _semantic(
    sections: list[Section], config: ChunkingConfig, resources: Resources
) -> tuple[set[int], SemanticStats]:
    """Positions of the blocks before which a semantic boundary starts a chunk, and their stats."""
    if not config.use_semantic_chunking:
        return set(), SemanticStats()
    encoder = resources.encoder
    if encoder is None:
        reason = resources.encoder_error or NO_ENCODER_REASON
        logger.warning("semantic chunking requested but unavailable (%s); packing structurally", reason)
        return set(), SemanticStats(requested=True, available=False, reason=reason)
    packable = [section.packable() for section in sections]
    found, embedded = section_boundaries(
        [[rec.text for rec in records] for records in packable], encoder, config.semantic_threshold,
        **config.semantic_method_args(),
    )
    starts = {records[i].pos for records, indices in zip(packable, found, strict=True) for i in indices}
    stats = SemanticStats(
        requested=True,
        available=True,
        boundaries=len(starts),  # until the chunks exist: see chunk_blocks
        boundaries_found=len(starts),
        texts_embedded=embedded,
        method=config.semantic_method,
        model=getattr(encoder, "name", None),
        weights_sha256=getattr(encoder, "weights_sha256", None),
    )
    return starts, stats


def section_drafts(section: Section, starts: set[int], config: ChunkingConfig, budget: Budget) -> list[Draft]:
    """The drafts of one section's segments, in order (consecutive tables packed when asked)."""
    drafts: list[Draft] = []
    tables: list[list[Draft]] = []  # the run of consecutive tables so far
    for seg in section.segments:
        if isinstance(seg, TableSeg):
            if tables and seg.lead is not None:  # its lead-in lies between it and the table before
                drafts.extend(_tables(tables, config, budget))
                tables = []
            tables.append(table_drafts(seg, section, config, budget))
            continue
        if tables:
            drafts.extend(_tables(tables, config, budget))
            tables = []
        if isinstance(seg, ProseSeg):
            drafts.extend(pack_prose(seg.records, starts, section, budget))
        else:
            drafts.extend(list_drafts(seg, section, budget))
    if tables:
        drafts.extend(_tables(tables, config, budget))
    return drafts


def _tables(tables: list[list[Draft]], config: ChunkingConfig, budget: Budget) -> list[Draft]:
    if config.pack_tables and len(tables) > 1:
        return pack_tables(tables, budget)
    return [draft for drafts in tables for draft in drafts]


def build_drafts(
    sections: list[Section], starts: set[int], config: ChunkingConfig, budget: Budget
) -> list[Draft]:
    """Drafts of the whole document: built, merged, ordered, fitted (strict), overlapped."""
    drafts = [draft for section in sections for draft in section_drafts(section, starts, config, budget)]
    drafts = merge_small(lead_headings(drafts), config.min_tokens, budget)
    drafts.sort(key=Draft.first_pos.fget)  # type: ignore[attr-defined]
    if budget.strict:
        drafts = fit_all(drafts, budget)
    apply_overlap(drafts, config.overlap_blocks, budget, config.overlap_max_share, config.overlap_unit)
    return drafts


def finalize(drafts: list[Draft], document_id: str | None, resources: Resources,
             budget: Budget, tree: ParentTree) -> tuple[list[Chunk], list[ChunkParent]]:
    """Ids, final token counts, quality scores (of the final text), the breadcrumb to embed and
    the parents (``tree``'s, named once the chunk ids are known).

    ``drafts`` is consumed: each draft is released once its chunk is built (the list holds None
    after), so a long document's peak holds a draft or its chunk, and a record once no draft
    holds it any more (the caller keeps no other reference), never the whole document twice."""
    score = ChunkScorer(resources.word_list, resources.language_id).score
    counter = budget.counter
    chunks = []
    pieces = block_parts(drafts) if budget.strict else None
    kinds = list(map(chunk_type, drafts))
    idents = chunk_ids(document_id, list(zip(kinds, map(Draft.primary_texts, drafts), strict=True)))
    parent_ids, parents = tree.resolve(document_id, idents)
    crumbs = final_breadcrumbs(drafts) if budget.with_breadcrumb else None
    whole = _section_titles_whole(drafts, crumbs, budget)
    for index, draft in enumerate(drafts):
        drafts[index] = None  # type: ignore[call-overload]  # released once its chunk is built (see doc)
        if pieces and pieces[index]:
            draft.meta["block_parts"] = pieces[index]
        text, sources = draft.text, draft.sources
        quality, components = score(text, [(rec.confidence, len(rec.text)) for rec in sources])
        path = None if whole else short_path(draft.path)
        to_embed = None
        if crumbs is not None:
            to_embed = embed_text(draft, text, crumbs[index] if whole else short_path(crumbs[index]))
        tokens = draft.tokens(counter)
        chunks.append(to_chunk(draft, idents[index], text, tokens, quality, components, sources, to_embed,
                               path, parent_ids[index], kind=kinds[index]))
    return chunks, parents


def request_warnings(config: ChunkingConfig) -> list[str]:
    """:func:`schemas.config.config_warnings` of ``config``, each logged once."""
    warnings = config_warnings(config)
    for warning in warnings:
        logger.warning("config: %s", warning)
    return warnings


def _section_titles_whole(drafts: list[Draft], crumbs: list[list[str]] | None, budget: Budget) -> bool:
    """Whether the chunks write their section's titles whole (``section_path`` and breadcrumb):
    every chunk of a section writes them again, so all of them are charged together to the
    call's allowance of repeated text; beyond it every chunk writes their short forms."""
    chars = sum([len(title) for draft in drafts for title in draft.path])
    if crumbs is not None:
        chars += sum([len(title) for titles in crumbs for title in titles])
    return budget.repeats.take(chars)


def _within_chunk_cap(chunks: int, input_chars: int) -> None:
    """Refuse a request that would make more chunks than :func:`~longparser.repeats.chunk_cap`
    allows for its text (each chunk costs a worker a few KB, however short)."""
    cap = chunk_cap(input_chars)
    if chunks > cap:
        raise RequestRefused(
            f"the request makes {chunks} chunks, over the cap of {cap} for its {input_chars} characters "
            f"of text ({CHUNK_CAP_FLOOR} + one per {TEXT_CHARS_PER_CHUNK}): raise max_tokens or "
            "table_rows_per_chunk"
        )


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000.0, 3)


def chunk_blocks(
    blocks: Iterable[Block | dict[str, Any]],
    config: ChunkingConfig | dict[str, Any] | None = None,
    resources: Resources | None = None,
    *,
    document_id: str | None = None,
) -> ChunkResult:
    """Chunk a document's blocks (reading order) into retrieval chunks.

    Args:
        blocks: Block models or plain dicts in LongParser's dump shape (validated here; the
            caller's objects are never modified), read once, in order: a list, or an iterator
            that lets each block go once read.
        config: a ChunkingConfig, a dict of its fields, or None for the defaults.
        resources: word list / language ID / encoder / token counter (None: none of them).
        document_id: recorded in the result and mixed into the chunk ids.

    Returns:
        The chunks in reading order plus stats.

    Raises:
        schemas.InputError: (a ValueError) a block or the config is invalid, two blocks share an
            id, or ``blocks`` is a whole input (``schemas.parse_input`` turns any input shape
            into a request); the message is one line naming the block and field, and suggests
            the field a config typo meant.
        RequestRefused: the config asks for a resource ``resources`` lacks (the model's counter,
            a tokenizer), or for chunks larger than the tokenizer's window (strict mode), or the
            request would make more chunks than its text allows (:func:`~longparser.repeats.chunk_cap`).
    """
    with collector_paused():
        return _chunk_blocks(blocks, config, resources, document_id)


def _chunk_blocks(
    blocks: Iterable[Block | dict[str, Any]],
    config: ChunkingConfig | dict[str, Any] | None,
    resources: Resources | None,
    document_id: str | None,
) -> ChunkResult:
    t0 = time.perf_counter()
    requested, res = _as_config(config), resources if resources is not None else NO_RESOURCES
    cfg, counter = resolve(requested, res)
    warnings = request_warnings(requested)
    budget = Budget(cfg.chunk_budget, counter, strict=cfg.strict_max_tokens,
                    with_breadcrumb=cfg.heading_context)
    intake = BlockIntake(blocks)
    watched = DerivedPaths(intake)  # section paths from heading levels when the input has none
    records, excluded, retagged = prepare(watched, cfg, counter, budget.repeats)
    section_paths = watched.apply(records)
    t2 = time.perf_counter()
    sections = group_sections(records, cfg.table_titles, cfg.breadcrumb_titles,
                              cfg.breadcrumb_repeats_heading)
    t3 = time.perf_counter()
    starts, semantic = _semantic(sections, cfg, res)
    t4 = time.perf_counter()
    drafts = build_drafts(sections, starts, cfg, budget)
    _within_chunk_cap(len(drafts), budget.repeats.input_chars)
    if semantic.available:  # the boundaries between the chunks as emitted
        semantic = semantic.model_copy(update={"boundaries": sum(draft.after_boundary for draft in drafts)})
    tree = parent_tree(sections, drafts)
    del records, sections  # the drafts hold what the chunks need of them: finalize frees both
    t5 = time.perf_counter()
    chunks, parents = finalize(drafts, document_id, res, budget, tree)
    t6 = time.perf_counter()
    timings = {
        "validate": round(intake.seconds * 1000.0, 3),
        "prepare": round(_ms(t0, t2) - intake.seconds * 1000.0, 3),
        "structure": round(_ms(t2, t3) + _ms(t4, t5), 3),
        "semantic": _ms(t3, t4), "quality": _ms(t5, t6), "total": _ms(t0, t6),
    }
    stats = ChunkStats(
        blocks_in=intake.count,
        blocks_excluded=excluded,
        equations_detected=retagged,
        chunks_out=len(chunks),
        chunks_by_type=dict(Counter(chunk.chunk_type for chunk in chunks)),
        token_counter=counter.name,
        strict_max_tokens=cfg.strict_max_tokens,
        semantic=semantic,
        resources=res.availability(),
        timings_ms=timings,
        section_paths=section_paths,
        warnings=[*warnings, *context_warnings(cfg, chunks),
                  *poorly_read_warning(chunks, counter)],
        config=expanded(requested.fit, cfg),
    )
    return ChunkResult(document_id=document_id, chunks=chunks, parents=parents, stats=stats)


def chunk_request(request: ChunkRequest, resources: Resources | None = None) -> ChunkResult:
    """Chunk a validated request; the result carries its document id."""
    return chunk_blocks(request.blocks, request.config, resources, document_id=request.document_id)
