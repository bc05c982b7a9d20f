"""``lpeval bench-retrieval``: the real-document retrieval benchmark, every chunker in one run.

``python -m lpeval bench-retrieval --split dev [--set DIR] [--anchors ANCHORS.json] [--only-ours]
[--model-path DIR] [--max-tokens N] [-o OUT_PREFIX]`` (``make bench-retrieval SET=... SPLIT=dev``
builds the anchors first; docs/retrieval-benchmark.md).

Every row runs at the model's window (:mod:`lpeval.encoders`: 256 tokens for the pinned
all-MiniLM-L6-v2, 384 for the second encoder all-mpnet-base-v2): our recommended row is the
``fit`` preset for that window, the anchors are run at it (``anchors.py --budget``), the page
chunker cuts at it, and tokens are counted by that model's tokenizer.

For each row (a chunker or one of our configs) and each document of the split:

1. **Chunks.** Our rows chunk the project's blocks of the document (:mod:`loaders.docling`, or
   :mod:`loaders.markdown` for a Markdown document) through :func:`longparser.chunk_blocks` with
   the row's config: the ``fit`` preset at the model's window (:data:`~schemas.config.RECOMMENDED_CONFIG`
   for the pinned model),
   the default config, semantic mode, and ablations, each a few keys over the recommended
   config. A key the installed engine does not know makes its row ``n/a`` (the benchmark is
   written ahead of the engine). The anchors' chunks come from ``bench/retrieval/anchors.py``
   (run in a throwaway environment); the page chunker (one chunk per page of docling's Markdown
   export, cut to the window) runs here, and so does "ours on the Markdown export" once a
   Markdown reader is installed (:data:`MARKDOWN_READERS`).
2. **Embedding**, the same for every row: each chunk's ``embed_text`` when it has one, else its
   ``text`` (anchors give theirs: HybridChunker's ``contextualize()``), embedded by the pinned
   model as the service embeds (:func:`loaders.encoder.load_encoder`: a text over the model's
   window is embedded in windows), questions likewise; each text is embedded once per run.
3. **Ranking**: a question's own document's chunks by cosine similarity, ties in chunk order.
4. **Metrics** (:mod:`lpeval.retrieval_metrics`, one definition each): hit@1, hit@5, MRR@10,
   recall at 512 and 1,024 tokens of embedded text (counted by the pinned tokenizer, special
   tokens excluded; the last chunk cut at the budget), answers cut mid-fact, by question kind;
   and per row the chunks, the tokens embedded in total and the chunks over the model's window.
   *Best row per question* is the best rank any row got (an upper bound of what chunking can do),
   small-to-big rows aside; *best chunker per question* the same over the chunkers alone (every
   row but our ablations, extra sizes and small-to-big rows): the oracle a retriever choosing
   the chunker per question would reach.
5. **Small-to-big rows** rank the recommended config's chunks as above, then return units
   other than the chunks (:data:`SMALL_TO_BIG_ROWS`): each hit's parent
   (:func:`adapters.small_to_big.small_to_big`: section, whole table or document, in rank
   order, no text twice; parents over a cap give the chunk itself), or, indexing both
   granularities, the chunks and the section parents of up to :data:`BOTH_PARENT_TOKENS`
   tokens ranked together (a unit whose chunks were all returned already is skipped). A
   parent's text is its chunks' texts joined (a retriever's job: the result holds none). Their
   rank, MRR and recall are over the returned units, whose size the row reports
   (``mean_returned_tokens``: larger units rank higher more easily; judge them by recall).

Writes ``OUT_PREFIX.json`` (everything, per question too) and ``OUT_PREFIX.md`` (the tables),
and prints the tables. Exit status: 0 done; 2 bad arguments or set files; 3 the model cannot be
loaded.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from lpeval.encoders import KNOWN_ENCODERS, PINNED_ENCODER, BenchEncoder
from lpeval.retrieval_metrics import QuestionScore, occurrences, score_question, summarise
from lpeval.retrieval_set import (
    DEFAULT_SET,
    QUESTION_KINDS,
    RetrievalSetError,
    SetDocument,
    split_documents,
)
from lpeval.through_store import THROUGH_STORE_ROW
from schemas.config import MODEL_WINDOW, RECOMMENDED_CONFIG, ChunkingConfig, fit_preset

BUDGET = MODEL_WINDOW  # the pinned model's; a run with another model uses that model's window
CONTEXT_BUDGETS = (512, 1024)
RECOMMENDED_ROW = "ours: recommended"

# Ablations: each a few keys over RECOMMENDED_CONFIG, so each choice is measured alone.
ABLATIONS: dict[str, dict[str, Any]] = {
    "breadcrumbs off": {"heading_context": False},
    "breadcrumbs: the whole path": {"breadcrumb_titles": None},
    "breadcrumbs leave out the heading a chunk starts with": {"breadcrumb_repeats_heading": False},
    "overlap capped (1 paragraph, 5% of max_tokens)": {"overlap_blocks": 1, "overlap_max_share": 0.05},
    "overlap uncapped (1 paragraph)": {"overlap_blocks": 1, "overlap_max_share": None},
    "sentence-level overlap (2 sentences, capped at 20%)": {
        "overlap_blocks": 2, "overlap_unit": "sentence", "overlap_max_share": 0.2},
    "rows as row_record (key=value)": {"table_chunk_format": "row_record"},
    "rows as pipe": {"table_chunk_format": "pipe"},
    "rows as markdown": {"table_chunk_format": "markdown"},
    "table batches as large as the budget (no table_batch_tokens)": {"table_batch_tokens": None},
    "table titles on rows off": {"table_titles": False},
    "header rows: flags only (no inference)": {"table_header_inference": False},
    "schema chunks on": {"generate_schema_chunks": True},
    "tables not packed": {"pack_tables": False},
    "min_tokens 50": {"min_tokens": 50},
}
# Settings the engine may gain; a row stays "n/a" until the installed ChunkingConfig knows its key.
PENDING_ABLATIONS: dict[str, dict[str, Any]] = {}
# Small-to-big rows: name -> the largest parent returned (tokens of the pinned tokenizer; None: any).
SMALL_TO_BIG_ROWS: dict[str, int | None] = {
    "ours: fit, small-to-big": None,
    "ours: fit, small-to-big (parents up to 1,024 tokens, else the chunk)": 1024,
    "ours: fit, small-to-big (parents up to 512 tokens, else the chunk)": 512,
}
BOTH_ROW = "ours: fit + section parents up to 1,024 tokens, indexed together"
BOTH_PARENT_TOKENS = 1024
# "module:function" names of a Markdown reader (markdown text -> block dicts), tried in order.
MARKDOWN_READERS = ("loaders.markdown:blocks_from_markdown",)


@dataclass(frozen=True)
class Chunked:
    """One chunk as scored: what is embedded (and searched for the answer)."""

    embed: str


# What a row returns for a ranking of its embedded texts (indices, best first): the texts, best first.
Expand = Callable[[Sequence[int]], list[str]]


@dataclass
class Row:
    name: str
    description: str
    source: str  # "blocks" (the converter's text) or "markdown": where answers are looked for
    chunks: dict[str, list[Chunked]] = field(default_factory=dict)  # document id -> chunks
    unavailable: str | None = None
    seconds: float = 0.0
    # document id -> what is returned for a ranking (small-to-big rows); absent: the chunks ranked
    expand: dict[str, Expand] = field(default_factory=dict)
    returned_tokens: list[int] = field(default_factory=list)  # sizes of the first 10 units returned


class BenchError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# --- our chunks ------------------------------------------------------------------------------


def our_configs(model: BenchEncoder = PINNED_ENCODER, sizes: Sequence[int] = (),
                ablations: bool = True) -> dict[str, dict[str, Any] | None]:
    """Row name -> config fields (None: the default config). The recommended row is the ``fit``
    preset for ``model`` (:func:`recommended_config`); each of
    ``sizes`` adds the preset with that ``max_tokens`` (what ``fit`` should pick is measured so);
    without ``ablations``, no ablation and no semantic row (a quicker run with a larger model)."""
    recommended = recommended_config(model)
    rows: dict[str, dict[str, Any] | None] = {RECOMMENDED_ROW: recommended, "ours: default config": None}
    if ablations:
        rows["ours: recommended + semantic_method recommended"] = {
            **recommended, "use_semantic_chunking": True, "semantic_method": "recommended"}
        for name, keys in {**ABLATIONS, **PENDING_ABLATIONS}.items():
            rows[f"{RECOMMENDED_ROW}, {name}"] = {**recommended, **keys}
    for size in sizes:
        rows[f"{RECOMMENDED_ROW}, max_tokens {size}"] = {**recommended, "max_tokens": size}
    return rows


def recommended_config(model: BenchEncoder) -> dict[str, Any]:
    """The recommended row's config for ``model``: RECOMMENDED_CONFIG (``{"fit": "model"}``
    spelled out) for the pinned model; ``{"fit": NAME}`` for another, which the engine expands
    with that model's counter, held under NAME (:attr:`BenchEncoder.counter_name`)."""
    return dict(RECOMMENDED_CONFIG) if model is PINNED_ENCODER else {"fit": model.counter_name}


def is_chunker(row_name: str) -> bool:
    """A chunker of its own (ours as recommended, our other configs, an anchor), not a variation
    of the recommended row (an ablation or another size): the rows the oracle row chooses among."""
    return not row_name.startswith(f"{RECOMMENDED_ROW}, ")


def config_or_reason(fields: Mapping[str, Any] | None) -> tuple[ChunkingConfig | None, str | None]:
    """The config, or why this engine cannot run it (an unknown key: "n/a")."""
    try:
        return ChunkingConfig(**(fields or {})), None
    except ValidationError as exc:
        unknown = [".".join(map(str, e["loc"])) for e in exc.errors() if e["type"] == "extra_forbidden"]
        if unknown:
            return None, f"n/a: this engine has no {', '.join(unknown)}"
        raise


def chunk_with_engine(blocks: Sequence[dict[str, Any]], config: ChunkingConfig, resources: Any,
                      document_id: str) -> list[Chunked]:
    return _embedded(engine_result(blocks, config, resources, document_id))


def engine_result(blocks: Sequence[dict[str, Any]], config: ChunkingConfig, resources: Any,
                  document_id: str) -> Any:
    from longparser import chunk_blocks

    return chunk_blocks(blocks, config, resources, document_id=document_id)


def small_to_big_rows(results: Mapping[str, Any], tokens: ModelTokens) -> list[Row]:
    """The small-to-big rows over the recommended config's results (document id -> ChunkResult)."""
    rows = []
    for name, cap in SMALL_TO_BIG_ROWS.items():
        row = Row(name, f"{RECOMMENDED_ROW}'s chunks ranked, their parents returned"
                  + ("" if cap is None else f" (over {cap} tokens: the chunk)"), "blocks")
        for doc_id, result in results.items():
            row.chunks[doc_id] = _embedded(result)
            row.expand[doc_id] = _parents_of_ranked(result, cap, tokens)
        rows.append(row)
    both = Row(BOTH_ROW, f"{RECOMMENDED_ROW}'s chunks and the section parents of up to "
               f"{BOTH_PARENT_TOKENS} tokens, embedded and ranked together", "blocks")
    for doc_id, result in results.items():
        units = _both_granularities(result, tokens)
        both.chunks[doc_id] = [Chunked(embed) for embed, _, _ in units]
        both.expand[doc_id] = _first_news(units)
    rows.append(both)
    return rows


def _embedded(result: Any) -> list[Chunked]:
    return [Chunked(c.embed_text if c.embed_text is not None else c.text) for c in result.chunks]


def _parents_of_ranked(result: Any, cap: int | None, tokens: ModelTokens) -> Expand:
    from adapters.small_to_big import small_to_big

    ids = [c.chunk_id for c in result.chunks]

    def expand(order: Sequence[int]) -> list[str]:
        units = small_to_big(result, [ids[i] for i in order], max_parent_tokens=cap, count=tokens.count)
        return [unit.text for unit in units]

    return expand


def _both_granularities(result: Any, tokens: ModelTokens) -> list[tuple[str, str, frozenset[str]]]:
    """(embedded text, returned text, chunk ids) of each chunk, then of each section parent whose
    text is at most :data:`BOTH_PARENT_TOKENS` tokens (and more than its one chunk)."""
    from adapters.small_to_big import PARENT_SEPARATOR, scope_chunks

    units = [(c.embed, c.embed, frozenset({chunk.chunk_id}))
             for c, chunk in zip(_embedded(result), result.chunks, strict=True)]
    scopes = scope_chunks(result)
    for parent in result.parents:
        members = scopes[parent.id]
        text = PARENT_SEPARATOR.join(chunk.text for chunk in members)
        if parent.kind == "section" and len(members) > 1 and tokens.count(text) <= BOTH_PARENT_TOKENS:
            units.append((text, text, frozenset(chunk.chunk_id for chunk in members)))
    return units


def _first_news(units: Sequence[tuple[str, str, frozenset[str]]]) -> Expand:
    """Returned texts for a ranking of ``units``: best first, skipping a unit whose chunks were all
    returned already (a chunk of a section returned before it)."""

    def expand(order: Sequence[int]) -> list[str]:
        returned: set[str] = set()
        texts = []
        for index in order:
            _, text, chunk_ids = units[index]
            if chunk_ids <= returned:
                continue
            returned |= chunk_ids
            texts.append(text)
        return texts

    return expand


def markdown_reader() -> Callable[[str], list[dict[str, Any]]] | None:
    """The first Markdown reader installed (:data:`MARKDOWN_READERS`), else None."""
    for name in MARKDOWN_READERS:
        module, _, function = name.partition(":")
        try:
            return getattr(importlib.import_module(module), function)
        except (ImportError, AttributeError):
            continue
    return None


# --- the page chunker ------------------------------------------------------------------------


def page_texts(document: SetDocument) -> list[str]:
    """docling's Markdown export of each page (the whole document when it has no pages; a
    Markdown document's own text)."""
    from docling_core.types.doc import DoclingDocument

    if document.is_markdown:
        return [document.markdown()]
    doc = DoclingDocument.model_validate(document.docling())
    pages = sorted(doc.pages)
    texts = [doc.export_to_markdown(page_no=p) for p in pages] if pages else [doc.export_to_markdown()]
    return [t for t in texts if t.strip()]


# --- tokens ----------------------------------------------------------------------------------


class ModelTokens:
    """The model's tokenizer: a text's count (special tokens excluded), its cut to n tokens, and
    the window every row runs at (``room``: the window less the special tokens)."""

    def __init__(self, tokenizer: Any, window: int = MODEL_WINDOW) -> None:
        self.tokenizer = tokenizer
        self.window = window
        self.room = window - tokenizer.num_special_tokens_to_add(False)
        self._counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        if text not in self._counts:
            self._counts[text] = len(self.tokenizer.encode(text, add_special_tokens=False).ids)
        return self._counts[text]

    def cut(self, text: str, n: int) -> str:
        offsets = self.tokenizer.encode(text, add_special_tokens=False).offsets
        return text[: offsets[n - 1][1]] if 0 < n <= len(offsets) else (text if n > 0 else "")


# --- the run ---------------------------------------------------------------------------------


def build_rows(documents: Sequence[SetDocument], anchors: dict[str, Any] | None, only_ours: bool,
               tokens: ModelTokens, encoder: Any, counter: Any, sizes: Sequence[int] = (),
               ablations: bool = True,
               model: BenchEncoder = PINNED_ENCODER) -> tuple[list[Row], dict[str, str]]:
    """Every row's chunks of every document, and each document's Markdown export."""
    from longparser import Resources

    markdown = dict((anchors or {}).get("markdown", {}))
    for doc in documents:
        markdown.setdefault(doc.id, doc.markdown())
    blocks = {doc.id: doc.blocks() for doc in documents}
    rows: list[Row] = []
    recommended = recommended_config(model)
    counters = {} if model is PINNED_ENCODER else {model.counter_name: counter}
    for name, fields in our_configs(model, sizes, ablations).items():
        row = Row(name, json.dumps(fields, sort_keys=True) if fields is not None else "defaults", "blocks")
        config, row.unavailable = config_or_reason(fields)
        if config is not None:
            resources = Resources(encoder=encoder if config.use_semantic_chunking else None,
                                  model_counter=counter, counters=counters)
            start = time.perf_counter()
            row.chunks = {d.id: chunk_with_engine(blocks[d.id], config, resources, d.id) for d in documents}
            row.seconds = time.perf_counter() - start
        rows.append(row)
    fitted = ChunkingConfig(**recommended)
    fitted_resources = Resources(model_counter=counter, counters=counters)
    rows += small_to_big_rows({d.id: engine_result(blocks[d.id], fitted, fitted_resources, d.id)
                               for d in documents}, tokens)
    reader = markdown_reader()
    row = Row("ours on the Markdown export: recommended", "Markdown -> blocks -> recommended config",
              "markdown")
    if reader is None:
        row.unavailable = "n/a: no Markdown reader installed (" + ", ".join(MARKDOWN_READERS) + ")"
    else:
        config = ChunkingConfig(**recommended)
        resources = Resources(model_counter=counter, counters=counters)
        row.chunks = {d.id: chunk_with_engine(reader(markdown[d.id]), config, resources, d.id)
                      for d in documents}
    rows.append(row)
    if only_ours:
        return rows, markdown
    for name, anchor in (anchors or {}).get("anchors", {}).items():
        source = "blocks" if name == "hybrid" else "markdown"
        row = Row(f"anchor: {name}", anchor["description"], source,
                  unavailable=anchor.get("unavailable"))
        if row.unavailable is None:
            row.chunks = {d.id: [Chunked(c["embed"]) for c in anchor["documents"][d.id]] for d in documents}
        rows.append(row)
    page = Row("anchor: page chunker",
               f"one chunk per page of the Markdown export, cut to {tokens.window} tokens", "markdown")
    page.chunks = {d.id: [Chunked(_cut(t, tokens)) for t in page_texts(d)] for d in documents}
    rows.append(page)
    return rows, markdown


def _cut(text: str, tokens: ModelTokens) -> str:
    return text if tokens.count(text) <= tokens.window else tokens.cut(text, tokens.window)


def embed_all(encoder: Any, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Unit vectors of the unique texts, one encode call."""
    from longparser.semantic import unit_rows

    unique = list(dict.fromkeys(texts))
    vectors = unit_rows(np.asarray(encoder.encode(unique)))
    return dict(zip(unique, vectors, strict=True))


def score_rows(rows: Sequence[Row], documents: Sequence[SetDocument], markdown: Mapping[str, str],
               tokens: ModelTokens, vectors: Mapping[str, np.ndarray]) -> dict[str, list[QuestionScore]]:
    """Per row, one score per question (documents in order, questions in order)."""
    sources = {doc.id: "\n".join(doc.units()) for doc in documents}
    scores: dict[str, list[QuestionScore]] = {}
    for row in rows:
        if row.unavailable is not None:
            continue
        scores[row.name] = []
        for doc in documents:
            texts = [c.embed for c in row.chunks[doc.id]]
            source = sources[doc.id] if row.source == "blocks" else markdown[doc.id]
            matrix = np.stack([vectors[t] for t in texts]) if texts else np.zeros((0, 1))
            expand = row.expand.get(doc.id)
            for q in doc.questions:
                order = np.argsort(-(matrix @ vectors[q.question]), kind="stable").tolist() if texts else []
                returned = texts if expand is None else expand(order)
                if expand is not None:
                    order = list(range(len(returned)))
                    row.returned_tokens += [tokens.count(t) for t in returned[:10]]
                scores[row.name].append(score_ranking(order, returned, q.answer, source, tokens))
    return scores


def score_ranking(order: Sequence[int], texts: Sequence[str], answer: str, source: str,
                  tokens: ModelTokens) -> QuestionScore:
    """One question's score for a ranking (indices into ``texts``, best first): every row's."""
    return score_question(order, texts, answer, CONTEXT_BUDGETS, tokens.count, tokens.cut,
                          in_source=occurrences(source, answer) > 0)


def through_store_row(documents: Sequence[SetDocument], texts: Mapping[str, list[str]],
                      orders: Mapping[str, list[list[int]]], offline: Row, vectors: Mapping[str, np.ndarray],
                      tokens: ModelTokens) -> tuple[Row, list[QuestionScore], dict[str, Any]]:
    """The through-store row (:mod:`lpeval.through_store`) scored like the offline recommended row
    (``offline``), and how it compares: the documents whose chunks differ, the questions whose
    rank differs, and those among them whose store ranking is no offline ranking but for ties."""
    from lpeval.through_store import beyond_ties

    row = Row(THROUGH_STORE_ROW, f"{RECOMMENDED_ROW}'s config run by the worker's task (embed, vector store "
              "configured), questions ranked by the store's search filtered by document", "blocks")
    scores, other_chunks, beyond = [], [], []
    for doc in documents:
        row.chunks[doc.id] = [Chunked(text) for text in texts[doc.id]]
        same = texts[doc.id] == [c.embed for c in offline.chunks[doc.id]]
        if not same:
            other_chunks.append(doc.id)
        source = "\n".join(doc.units())
        for q, order in zip(doc.questions, orders[doc.id], strict=True):
            scores.append(score_ranking(order, texts[doc.id], q.answer, source, tokens))
            if same and texts[doc.id]:
                cosines = np.stack([vectors[t] for t in texts[doc.id]]) @ vectors[q.question]
                if beyond_ties(order, cosines):
                    beyond.append(q.id)
    return row, scores, {"documents_with_other_chunks": other_chunks, "questions_beyond_ties": beyond}


def rank_differences(documents: Sequence[SetDocument], offline: Sequence[QuestionScore],
                     through: Sequence[QuestionScore]) -> list[str]:
    """The questions whose rank differs between two rows."""
    questions = [q for d in documents for q in d.questions]
    return [q.id for q, a, b in zip(questions, offline, through, strict=True) if a.rank != b.rank]


def best_per_question(scores: Mapping[str, list[QuestionScore]]) -> list[QuestionScore]:
    """For each question, the best any row of ``scores`` did."""
    best = []
    for per_row in zip(*scores.values(), strict=True):
        ranks = [s.rank for s in per_row if s.rank is not None]
        best.append(QuestionScore(
            rank=min(ranks) if ranks else None,
            recalled={b: any(s.recalled[b] for s in per_row) for b in CONTEXT_BUDGETS},
            cut_mid_fact=all(s.cut_mid_fact for s in per_row)))
    return best


def report(rows: Sequence[Row], documents: Sequence[SetDocument], scores: Mapping[str, list[QuestionScore]],
           tokens: ModelTokens) -> dict[str, Any]:
    kinds = [q.kind for d in documents for q in d.questions]
    result_rows = []
    for row in rows:
        entry: dict[str, Any] = {"name": row.name, "description": row.description, "source": row.source}
        if row.unavailable is not None:
            entry["unavailable"] = row.unavailable
            result_rows.append(entry)
            continue
        embedded = [c.embed for d in documents for c in row.chunks[d.id]]
        counts = [tokens.count(t) for t in embedded]
        entry.update({
            "chunks": len(embedded),
            "tokens_embedded": sum(counts),
            "mean_tokens": sum(counts) / len(counts) if counts else 0.0,
            "over_window": sum(c > tokens.room for c in counts),
            "chunking_seconds": round(row.seconds, 3),
            "mean_returned_tokens": _mean(row.returned_tokens or counts),
            **summarise(scores[row.name], CONTEXT_BUDGETS),
            "by_kind": _by_kind(scores[row.name], kinds),
            "per_question": [
                {"id": q.id, "rank": s.rank, **{f"recall@{b}": s.recalled[b] for b in CONTEXT_BUDGETS},
                 "cut_mid_fact": s.cut_mid_fact, "missing": s.missing}
                for q, s in zip([q for d in documents for q in d.questions], scores[row.name], strict=True)
            ],
        })
        result_rows.append(entry)
    # the best chunking per question: units larger than chunks (small-to-big) are not chunkings
    chunkings = {r.name: scores[r.name] for r in rows
                 if r.name in scores and not r.expand and r.name != THROUGH_STORE_ROW}
    best = best_per_question(chunkings)
    chunkers = [name for name in chunkings if is_chunker(name)]
    oracle = best_per_question({name: scores[name] for name in chunkers})
    questions = [q for d in documents for q in d.questions]
    return {
        "documents": [d.id for d in documents],
        "questions": len(kinds),
        "questions_by_kind": {k: kinds.count(k) for k in QUESTION_KINDS},
        "budget": tokens.window,
        "context_budgets": list(CONTEXT_BUDGETS),
        "rows": result_rows,
        "best_per_question": {**summarise(best, CONTEXT_BUDGETS), "by_kind": _by_kind(best, kinds)},
        "best_chunker_per_question": {
            **summarise(oracle, CONTEXT_BUDGETS), "by_kind": _by_kind(oracle, kinds), "chunkers": chunkers,
            "per_question": [
                {"id": q.id, "rank": s.rank, **{f"recall@{b}": s.recalled[b] for b in CONTEXT_BUDGETS}}
                for q, s in zip(questions, oracle, strict=True)]},
    }


def _mean(values: Sequence[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def _by_kind(scores: Sequence[QuestionScore], kinds: Sequence[str]) -> dict[str, Any]:
    return {k: summarise([s for s, kind in zip(scores, kinds, strict=True) if kind == k], CONTEXT_BUDGETS)
            for k in QUESTION_KINDS if k in kinds}


# --- tables ----------------------------------------------------------------------------------


def markdown_tables(result: dict[str, Any]) -> str:
    hybrid = next((r for r in result["rows"] if r["name"] == "anchor: hybrid" and "chunks" in r), None)
    lines = [
        f"{len(result['documents'])} documents, {result['questions']} questions ("
        + ", ".join(f"{k} {n}" for k, n in result["questions_by_kind"].items())
        + f"); budget {result['budget']} tokens of the model's tokenizer "
        f"({result.get('model', 'the pinned model')}); recall at 512 / 1,024 tokens of embedded text.",
        "",
        "| row | chunks | tokens embedded | x hybrid | hit@1 | hit@5 | MRR@10 | recall@512 | recall@1024 "
        "| cut mid-fact | over window | unit returned (mean tokens) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        if "unavailable" in r:
            lines.append(f"| {r['name']} | {r['unavailable']} |  |  |  |  |  |  |  |  |  |  |")
            continue
        ratio = f"{r['tokens_embedded'] / hybrid['tokens_embedded']:.2f}" if hybrid else ""
        lines.append(
            f"| {r['name']} | {r['chunks']} | {r['tokens_embedded']:,} | {ratio} | {r['hit@1']:.3f} | "
            f"{r['hit@5']:.3f} | {r['mrr@10']:.3f} | {r['recall@512']:.3f} | {r['recall@1024']:.3f} | "
            f"{r['cut_mid_fact']} | {r['over_window']} | {r['mean_returned_tokens']:.0f} |")
    oracles = _oracle_rows(result)
    for name, b in oracles:
        lines.append(f"| {name} |  |  |  | {b['hit@1']:.3f} | {b['hit@5']:.3f} | {b['mrr@10']:.3f} "
                     f"| {b['recall@512']:.3f} | {b['recall@1024']:.3f} | {b['cut_mid_fact']} |  |  |")
    if "through_store" in result:
        through = result["through_store"]
        lines += ["", f"{THROUGH_STORE_ROW} against {RECOMMENDED_ROW}: {len(through['rank_differs'])} "
                  f"question(s) ranked differently, {len(through['rank_differs_beyond_ties'])} beyond ties; "
                  f"store rankings that are no offline ranking but for ties: "
                  f"{len(through['questions_beyond_ties'])}; documents chunked differently: "
                  f"{len(through['documents_with_other_chunks'])}."]
    kinds = [k for k in QUESTION_KINDS if result["questions_by_kind"].get(k)]
    lines += ["", "By question kind: recall@1024 as questions recalled / questions, and MRR@10.", "",
              "| row | " + " | ".join(f"{k} ({result['questions_by_kind'][k]})" for k in kinds) + " |",
              "|---|" + "---|" * len(kinds)]
    for r in [*result["rows"], *({"name": name, **b} for name, b in oracles)]:
        if "by_kind" not in r:
            continue
        cells = [f"{round(r['by_kind'][k]['recall@1024'] * r['by_kind'][k]['questions'])}/"
                 f"{r['by_kind'][k]['questions']}, {r['by_kind'][k]['mrr@10']:.3f}" for k in kinds]
        lines.append(f"| {r['name']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _oracle_rows(result: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The oracle rows of a result: the best chunker per question (when the result has it) and
    the best row per question."""
    rows = []
    if "best_chunker_per_question" in result:
        rows.append(("*best chunker per question*", result["best_chunker_per_question"]))
    rows.append(("*best row per question*", result["best_per_question"]))
    return rows


# --- command ---------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split", required=True, choices=("dev", "test"))
    parser.add_argument("--set", default=str(DEFAULT_SET), help="the set directory (eval/retrieval_v1)")
    parser.add_argument("--anchors", metavar="ANCHORS.json",
                        help="bench/retrieval/anchors.py output for this split (without it: our rows only)")
    parser.add_argument("--only-ours", action="store_true", help="our rows only, even with --anchors")
    parser.add_argument("--document", action="append", metavar="ID",
                        help="only this document of the split (repeatable; a smoke run)")
    parser.add_argument("-o", "--output", metavar="PREFIX", help="write PREFIX.json and PREFIX.md")
    parser.add_argument("--model-path", default=None,
                        help="local model directory: the pinned model (default: the package's) or the second "
                             "encoder (bench/retrieval/install_second_encoder.py); rows run at its window")
    parser.add_argument("--max-tokens", type=int, action="append", default=[], metavar="N",
                        help="also the recommended row at max_tokens N (repeatable): what fit should pick")
    parser.add_argument("--no-ablations", action="store_true",
                        help="leave out the ablation rows and the semantic row (a quicker run)")
    parser.add_argument("--threads", type=int, default=2, help="encoder threads (2)")
    parser.add_argument("--through-store", action="store_true",
                        help="also the recommended row run through the worker's task, the vector store and "
                             "search (lpeval/through_store.py); the pinned model only")
    parser.add_argument("--store-url", metavar="URL",
                        help="PostgreSQL with pgvector for --through-store (default: a pgserver one started "
                             "in a temporary directory)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole benchmark for the parsed arguments; raises BenchError."""
    from loaders.encoder import load_encoder
    from loaders.pinned_model import EncoderUnavailable
    from loaders.tokenizer import TokenizerUnavailable, load_model_counter

    try:
        documents = split_documents(args.split, Path(args.set))
    except RetrievalSetError as exc:
        raise BenchError(2, str(exc)) from None
    if args.document:
        unknown = sorted(set(args.document) - {d.id for d in documents})
        if unknown:
            raise BenchError(2, f"not in the {args.split} split: {unknown}")
        documents = [d for d in documents if d.id in args.document]
    anchors = None
    if args.anchors:
        try:
            anchors = json.loads(Path(args.anchors).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BenchError(2, f"cannot read {args.anchors}: {exc}") from None
        if anchors.get("set", Path(args.set).name) != Path(args.set).name:
            raise BenchError(2, f"{args.anchors} holds the set {anchors.get('set')!r}, "
                                f"not {Path(args.set).name!r}")
        if anchors.get("split") != args.split:
            raise BenchError(2, f"{args.anchors} holds the {anchors.get('split')!r} split, "
                                f"not {args.split!r}")
    try:
        model = bench_encoder(args.model_path)
        counter = (load_model_counter() if model is PINNED_ENCODER
                   else model_counter(model, Path(args.model_path)))
        encoder = load_encoder(args.model_path, threads=args.threads, counter=counter,
                               expected_sha256=model.weights_sha256)
    except (EncoderUnavailable, TokenizerUnavailable) as exc:
        raise BenchError(3, str(exc)) from None
    if args.through_store and model is not PINNED_ENCODER:
        raise BenchError(2, "--through-store runs the worker's pinned model: leave out --model-path "
                            "or give the pinned model's directory")
    if anchors is not None and anchors.get("budget", BUDGET) != model.window:
        raise BenchError(2, f"{args.anchors} was chunked at {anchors.get('budget', BUDGET)} tokens, "
                            f"not at {model.name}'s window {model.window} (anchors.py --budget)")
    tokens = ModelTokens(counter.tokens.tokenizer, model.window)
    rows, markdown = build_rows(documents, anchors, args.only_ours, tokens, encoder, counter, args.max_tokens,
                                not args.no_ablations, model)
    texts = [c.embed for r in rows for d in documents for c in r.chunks.get(d.id, [])]
    vectors = embed_all(encoder, [*texts, *(q.question for d in documents for q in d.questions)])
    scores = score_rows(rows, documents, markdown, tokens, vectors)
    through = None
    if args.through_store:
        offline = next(r for r in rows if r.name == RECOMMENDED_ROW)
        row, scores[THROUGH_STORE_ROW], through = through_store_row(
            documents, *run_through_store(documents, args), offline, vectors, tokens)
        differ = rank_differences(documents, scores[RECOMMENDED_ROW], scores[THROUGH_STORE_ROW])
        through["rank_differs"] = differ
        through["rank_differs_beyond_ties"] = [q for q in differ if q in through["questions_beyond_ties"]]
        rows.insert(rows.index(offline) + 1, row)
    result = report(rows, documents, scores, tokens)
    if through is not None:
        result["through_store"] = through
    result.update({"set": Path(args.set).name, "split": args.split,
                   "model": model.name if model is not PINNED_ENCODER else encoder.name,
                   "weights_sha256": encoder.weights_sha256,
                   "recommended_config": recommended_config(model),
                   "fitted_config": fit_preset(model.counter_name, model.window),
                   "anchor_versions": (anchors or {}).get("versions", {})})
    return result


def run_through_store(documents: Sequence[SetDocument], args: argparse.Namespace
                      ) -> tuple[dict[str, list[str]], dict[str, list[list[int]]]]:
    """The recommended config through a worker context on a vector store, and ``longparser
    search``'s query embedder (:mod:`lpeval.through_store`)."""
    from cli.search import load_query_embedder
    from lpeval import through_store

    with through_store.postgres_url(args.store_url) as url:
        settings = through_store.worker_settings(url, args.model_path, args.threads)
        context = through_store.worker_context(settings)
        return through_store.run_through_store(documents, RECOMMENDED_CONFIG, context,
                                               load_query_embedder(settings))


def bench_encoder(model_path: str | None) -> BenchEncoder:
    """Which known encoder ``model_path`` holds, by its weights (None: the pinned model)."""
    from loaders.pinned_model import WEIGHTS_FILE, EncoderUnavailable, file_sha256

    if model_path is None:
        return PINNED_ENCODER
    weights = Path(model_path) / WEIGHTS_FILE
    if not weights.is_file():
        raise EncoderUnavailable(f"model directory {model_path} has no {WEIGHTS_FILE}")
    digest = file_sha256(weights)
    if digest not in KNOWN_ENCODERS:
        known = ", ".join(e.name for e in KNOWN_ENCODERS.values())
        raise EncoderUnavailable(f"{weights} (sha256 {digest}) is none of the benchmark's encoders ({known})")
    return KNOWN_ENCODERS[digest]


def model_counter(model: BenchEncoder, model_path: Path) -> Any:
    """The token counter of a non-pinned encoder, from its own ``tokenizer.json``."""
    from loaders.tokenizers import HuggingFaceTokens, TokenizerUnavailable, WordCounter

    file = model_path / "tokenizer.json"
    try:
        from tokenizers import Tokenizer

        tokens = HuggingFaceTokens(Tokenizer.from_file(str(file)), lower=False)
    except Exception as exc:  # ImportError, or a missing or unreadable file
        raise TokenizerUnavailable(f"cannot load {file}: {exc}") from None
    return WordCounter(tokens, name=model.name, kind="hf", window=model.window)


def run_bench_retrieval(args: argparse.Namespace) -> int:
    try:
        result = run(args)
    except BenchError as exc:
        print(f"lpeval bench-retrieval: error: {exc}", file=sys.stderr)
        return exc.status
    tables = markdown_tables(result)
    print(tables)
    if args.output:
        prefix = Path(args.output)
        prefix.parent.mkdir(parents=True, exist_ok=True)
        prefix.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        prefix.with_suffix(".md").write_text(tables + "\n", encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lpeval bench-retrieval",
                                     description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run_bench_retrieval(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
