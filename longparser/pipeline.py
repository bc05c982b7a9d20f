"""The chunking pipeline (SPEC section 3): composes the stages, one named step each.

``validate -> prepare (exclusions, equation re-tag) -> sections/segments -> semantic
boundaries -> drafts (tables, lists, packing with equation glue) -> minimum-size merge ->
reading order -> overlap -> ids, token counts, quality -> result``.

Decisions where SPEC is silent:

* Reading order is the order of the caller's sequence (``order_index`` is not re-sorted);
  chunks are ordered by the position of their first primary block (stable, so a table's
  schema chunk precedes its row chunks and bands/batches keep their order).
* Semantic mode requested without an encoder: structural packing, ``stats.semantic``
  records ``available=False`` with the reason, and one warning is logged per call. An encoder
  that raises propagates the error (the task fails visibly instead of silently degrading).
* ``token_count`` is the counter's count of the final text (with overlap/context);
  packing works on per-block sums (DEC-04: they may differ).
* The cyclic garbage collector is paused for the duration of a call (and restored to its
  previous state): the engine creates no reference cycles (everything it allocates is freed
  by reference counting), while the collector's full scans of the caller's large block lists
  made per-block throughput fall as documents grew (measured: ~16k -> ~25k blocks/s CPU on
  100k blocks).
* Dict blocks are validated one at a time while prepare reads them, by the TypedDict mirror
  of the Block contract, with Block's own error for a block it rejects (longparser.intake;
  streaming: nothing is held for the whole document; a list of Block models, the worker's
  input, is read as it is); ``timings_ms["validate"]`` is the validation time
  accumulated in that pass and ``prepare`` the rest of it (exclusions, equation re-tagging,
  token counts, table grids). ``structure`` covers sections, tables, lists, packing,
  merging and overlap; ``quality`` covers scores, ids and final token counts; ``total``
  the whole call.
"""

from __future__ import annotations

import gc
import logging
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from longparser.build import Draft, block_ids, to_chunk
from longparser.ids import chunk_id
from longparser.intake import BlockIntake
from longparser.lists import list_drafts
from longparser.merging import merge_small
from longparser.overlap import apply_overlap
from longparser.packing import pack_prose
from longparser.prepare import prepare
from longparser.quality import ChunkScorer
from longparser.resources import NO_RESOURCES, Resources
from longparser.sections import ListSeg, ProseSeg, Section, Segment, group_sections, packable_texts, segment
from longparser.semantic import section_boundaries
from longparser.table_chunks import table_drafts
from longparser.tokens import TokenCounter
from schemas import Block, Chunk, ChunkingConfig, ChunkRequest, ChunkResult, ChunkStats, SemanticStats

logger = logging.getLogger(__name__)

NO_ENCODER_REASON = "no encoder provided"


def _as_config(config: ChunkingConfig | dict[str, Any] | None) -> ChunkingConfig:
    if config is None:
        return ChunkingConfig()
    if isinstance(config, ChunkingConfig):
        return config
    return ChunkingConfig.model_validate(config)


def _semantic(
    segmented: list[list[Segment]], config: ChunkingConfig, resources: Resources
) -> tuple[list[set[int]] | None, SemanticStats]:
    """Semantic boundaries per section (None when not placed) and their stats."""
    if not config.use_semantic_chunking:
        return None, SemanticStats()
    encoder = resources.encoder
    if encoder is None:
        reason = resources.encoder_error or NO_ENCODER_REASON
        logger.warning("semantic chunking requested but unavailable (%s); packing structurally", reason)
        return None, SemanticStats(requested=True, available=False, reason=reason)
    texts = [packable_texts(segments) for segments in segmented]
    boundaries, embedded = section_boundaries(
        texts, encoder, config.semantic_threshold, **config.semantic_method_args())
    stats = SemanticStats(
        requested=True,
        available=True,
        boundaries=sum(len(found) for found in boundaries),
        texts_embedded=embedded,
        model=getattr(encoder, "name", None),
        weights_sha256=getattr(encoder, "weights_sha256", None),
    )
    return boundaries, stats


def _local(ordered: list[int], seg: ProseSeg) -> set[int]:
    """Section-level boundary indices (sorted) inside ``seg``, made relative to it.

    Bisection keeps this linear overall for a long section with many prose runs.
    """
    lo, hi = seg.offset, seg.offset + len(seg.records)
    return {i - lo for i in ordered[bisect_left(ordered, lo) : bisect_left(ordered, hi)]}


def _section_drafts(
    section: Section, segments: list[Segment], boundaries: set[int], config: ChunkingConfig,
    counter: TokenCounter,
) -> list[Draft]:
    drafts: list[Draft] = []
    where = (section.index, section.path)
    ordered = sorted(boundaries)
    for seg in segments:
        if isinstance(seg, ProseSeg):
            local = _local(ordered, seg) if ordered else set()
            drafts.extend(pack_prose(seg.records, local, config.max_tokens, *where))
        elif isinstance(seg, ListSeg):
            drafts.extend(list_drafts(seg.lead, seg.items, config.max_tokens, *where))
        else:
            drafts.extend(table_drafts(seg, *where, config, counter))
    return drafts


def _first_pos(draft: Draft) -> int:
    return draft.first_pos


def build_drafts(
    sections: list[Section], segmented: list[list[Segment]], boundaries: list[set[int]] | None,
    config: ChunkingConfig, counter: TokenCounter,
) -> list[Draft]:
    """Drafts of the whole document: built, merged, ordered, overlapped."""
    drafts: list[Draft] = []
    for k, section in enumerate(sections):
        found = boundaries[k] if boundaries is not None else set()
        drafts.extend(_section_drafts(section, segmented[k], found, config, counter))
    drafts = merge_small(drafts, config.min_tokens, counter)
    drafts.sort(key=_first_pos)
    apply_overlap(drafts, config.overlap_blocks)
    return drafts


def finalize(drafts: list[Draft], document_id: str | None, resources: Resources) -> list[Chunk]:
    """Ids, final token counts and quality scores (of the final text).

    One :class:`ChunkScorer` serves the whole document (its dictionary memo is shared by the
    chunks); token counts come from the drafts' summed word counts (see longparser.tokens).
    """
    counter = resources.token_counter
    score = ChunkScorer(resources.word_list, resources.language_id).score
    chunks = []
    for index, draft in enumerate(drafts):
        text = draft.text
        sources = [(rec.confidence, len(rec.text)) for rec in draft.blocks]
        quality, components = score(text, sources)
        ids = block_ids(draft)
        ident = chunk_id(document_id, index, draft.kind, ids, text)
        chunks.append(to_chunk(draft, ident, text, draft.tokens(counter), quality, components, ids))
    return chunks


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause automatic cyclic GC; restore the caller's setting afterwards (see module doc)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000.0, 3)


def chunk_blocks(
    blocks: Sequence[Block | dict[str, Any]],
    config: ChunkingConfig | dict[str, Any] | None = None,
    resources: Resources | None = None,
    *,
    document_id: str | None = None,
) -> ChunkResult:
    """Chunk a document's blocks (reading order) into retrieval chunks.

    Args:
        blocks: Block models or plain dicts in LongParser's dump shape (validated here; the
            caller's objects are never modified).
        config: a ChunkingConfig, a dict of its fields, or None for the defaults.
        resources: word list / language ID / encoder / token counter (None: none of them).
        document_id: recorded in the result and mixed into the chunk ids.

    Returns:
        The chunks in reading order plus stats.
    """
    with _gc_paused():
        return _chunk(blocks, config, resources, document_id)


def _chunk(
    blocks: Sequence[Block | dict[str, Any]],
    config: ChunkingConfig | dict[str, Any] | None,
    resources: Resources | None,
    document_id: str | None,
) -> ChunkResult:
    t0 = time.perf_counter()
    cfg, res = _as_config(config), resources if resources is not None else NO_RESOURCES
    counter = res.token_counter
    intake = BlockIntake(blocks)
    records, excluded, retagged = prepare(intake.fields(), cfg, counter)
    t2 = time.perf_counter()
    sections = group_sections(records)
    segmented = [segment(section) for section in sections]
    t3 = time.perf_counter()
    boundaries, semantic = _semantic(segmented, cfg, res)
    t4 = time.perf_counter()
    drafts = build_drafts(sections, segmented, boundaries, cfg, counter)
    t5 = time.perf_counter()
    chunks = finalize(drafts, document_id, res)
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
        semantic=semantic,
        resources=res.availability(),
        timings_ms=timings,
    )
    return ChunkResult(document_id=document_id, chunks=chunks, stats=stats)


def chunk_request(request: ChunkRequest, resources: Resources | None = None) -> ChunkResult:
    """Chunk a validated request; the result carries its document id."""
    return chunk_blocks(request.blocks, request.config, resources, document_id=request.document_id)
