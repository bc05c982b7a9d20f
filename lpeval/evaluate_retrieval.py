"""``lpeval evaluate-retrieval``: what a chunking config gives a retriever, on labelled questions.

``python -m lpeval evaluate-retrieval LABELLED.json [-c CONFIG.json] [--budget 512] [--group-size 4]
[--json]``, on the format of :mod:`lpeval.evaluation` with questions:

1. **Long documents.** The labelled documents are concatenated into long multi-topic
   documents of ``--group-size`` documents each: with ``L = ceil(N / group_size)`` long
   documents, long document ``j`` holds documents ``j, j + L, j + 2L, ...`` in file order
   (deterministic; a file sorted by kind gives each long document a mix of kinds). Each long
   document is ONE section of paragraphs with no headings: semantic chunking matters where
   structure is missing. Block ids are ``"<document id>#<index>"``.
2. **Chunking** through the real engine (:func:`longparser.chunk_blocks`) with the config
   (``-c``; defaults otherwise), the pinned encoder passed in when the config asks for semantic
   chunking.
   With ``--headings TITLES.json`` every labelled segment opens with its title instead,
   a heading whose section the segment is.
3. **Ranking.** Chunks (``text``: overlap context included, as a retriever would embed them;
   with ``--embed embed_text`` their breadcrumb and text) and questions are embedded with the
   pinned model (run by the settings' ``encoder_backend``, as :mod:`lpeval.evaluate` loads it) in
   one batch; for each question every chunk of every long document is ranked by cosine, ties
   in chunk order.
4. **Context.** Exactly ``--budget`` tokens for every configuration: chunks are read
   best-first, each as the blocks whose text it carries (overlap context, then its
   ``block_ids``), blocks taken whole while they fit, and the first block that does not fit is
   cut to the tokens left (a prompt packer truncates its last passage). Without the cut,
   configurations whose chunks fill the budget less would be compared on smaller contexts.
   Tokens are counted per block by the engine's token counter (the output names it).
5. **Metrics**, means over questions: *hit rate* - the answer block is inside the context
   (whole, in a chunk that has it among its ``block_ids``); *MRR* - 1 / rank of the first
   chunk whose ``block_ids`` holds it, over the full ranking; *context precision* - the share
   of the context's tokens that come from the answer's source document.

Exit status: 0 report printed; 2 bad input (unreadable file, wrong shape, no questions, invalid
config, budget or group size below 1, invalid ``LONGPARSER_*`` settings); 3 the encoder cannot
be loaded (the message says what to install).
"""

from __future__ import annotations

import argparse
import json
import math
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np

from loaders.tokenizer import TokenizerUnavailable, load_model_counter
from longparser import Resources, chunk_blocks
from longparser.resources import Encoder, select_counter
from longparser.semantic import unit_rows
from longparser.tokens import ESTIMATE_NAME, TokenCounter, count
from lpeval.evaluate import CommandError, build_config, encoder_for, fail, method_parameters, read_labelled
from lpeval.evaluation import LabelledDocument
from schemas import Chunk, ChunkingConfig, ChunkResult

COUNTER_NAMES = {ESTIMATE_NAME: "word estimate (whitespace words x 1.33)"}


def block_id(document: LabelledDocument, index: int) -> str:
    return f"{document.id}#{index}"


def long_documents(documents: Sequence[LabelledDocument], group_size: int) -> list[list[LabelledDocument]]:
    """Documents ``j, j + L, j + 2L, ...`` for each long document ``j`` (``L`` long documents)."""
    count = math.ceil(len(documents) / group_size)
    return [list(documents[j::count]) for j in range(count)]


Headings = dict[str, list[str]]  # document id -> one title per labelled segment


def heading_id(document: LabelledDocument, segment: int) -> str:
    return f"{document.id}#h{segment}"


def section_blocks(
    group: Sequence[LabelledDocument], headings: Headings | None = None
) -> list[dict[str, Any]]:
    """One long document's blocks: paragraphs with no headings and no hierarchy (one section);
    with ``headings``, every labelled segment opens with its title, a heading whose section it
    is (hierarchy path ``[title]``)."""
    blocks: list[dict[str, Any]] = []
    for doc in group:
        starts = [0, *doc.boundaries]
        for i, text in enumerate(doc.blocks):
            path: list[str] = []
            if headings is not None:
                segment = bisect_right(starts, i) - 1  # boundaries are sorted and unique
                path = [headings[doc.id][segment]]
                if i == starts[segment]:
                    blocks.append({"block_id": heading_id(doc, segment), "type": "heading",
                                   "text": path[0], "hierarchy_path": path})
            blocks.append({"block_id": block_id(doc, i), "type": "paragraph", "text": text,
                           "hierarchy_path": path})
    return blocks


def chunk_groups(
    groups: Sequence[Sequence[LabelledDocument]], config: ChunkingConfig, resources: Resources,
    headings: Headings | None = None,
) -> list[ChunkResult]:
    return [
        chunk_blocks(section_blocks(group, headings), config, resources, document_id=f"long-{j}")
        for j, group in enumerate(groups)
    ]


def rank_chunks(encoder: Encoder, questions: Sequence[str], chunk_texts: Sequence[str]) -> np.ndarray:
    """For each question, chunk indices best-first (cosine; ties in chunk order). One encode batch."""
    unique = list(dict.fromkeys([*chunk_texts, *questions]))
    row = {text: i for i, text in enumerate(unique)}
    unit = unit_rows(np.asarray(encoder.encode(unique)))
    scores = unit[[row[q] for q in questions]] @ unit[[row[t] for t in chunk_texts]].T
    return np.argsort(-scores, axis=1, kind="stable")


Carried = tuple[str, bool]  # (block id, among the chunk's primary block_ids)


def take_context(
    order: Sequence[int], carried: Sequence[Sequence[Carried]], block_tokens: dict[str, int], budget: int
) -> list[tuple[Carried, int]]:
    """``((block id, primary), tokens taken)`` of the context: exactly ``budget`` tokens when the
    corpus has them.

    Chunks are read best-first, each as the blocks it carries in reading order (overlap context
    first); blocks are taken whole while they fit, and the first that does not fit is cut to
    the tokens left, which ends the context.
    """
    taken, left = [], budget
    for index in order:
        for block in carried[index]:
            tokens = block_tokens[block[0]]
            taken.append((block, min(tokens, left)))
            left -= taken[-1][1]
            if left == 0:
                return taken
    return taken


def carried_blocks(chunk: Chunk) -> list[Carried]:
    """The blocks whose text a chunk carries, in its reading order: overlap context, then primary."""
    overlap = chunk.metadata.get("overlap_block_ids", [])
    return [(b, False) for b in overlap] + [(b, True) for b in chunk.block_ids]


def score_question(
    order: Sequence[int], chunks: Sequence[Chunk], answer: str, source: str, budget: int,
    block_tokens: dict[str, int], block_source: dict[str, str],
) -> dict[str, Any]:
    """Hit, reciprocal rank and context precision of one question."""
    context = take_context(order, [carried_blocks(c) for c in chunks], block_tokens, budget)
    rank = next((r for r, i in enumerate(order, 1) if answer in chunks[i].block_ids), None)
    total = sum(tokens for _, tokens in context)
    own = sum(tokens for (block, _), tokens in context if block_source[block] == source)
    return {
        "hit": any(c == (answer, True) and tokens == block_tokens[answer] for c, tokens in context),
        "rank": rank,
        "reciprocal_rank": 0.0 if rank is None else 1.0 / rank,
        "context_tokens": total,
        "context_precision": own / total if total else 0.0,
    }


def evaluate_retrieval(
    documents: Sequence[LabelledDocument], config: ChunkingConfig, encoder: Encoder, budget: int,
    group_size: int, model_counter: TokenCounter | None = None, headings: Headings | None = None,
    embed: str = "text",
) -> dict[str, Any]:
    """The whole report (see the module docstring); tokens are counted by the config's counter.

    ``headings``: titles of the labelled segments, each put before its segment as a heading
    (else no headings); ``embed``: what is embedded for ranking, ``text`` or ``embed_text``
    (the breadcrumb and the text, with ``heading_context``).
    """
    groups = long_documents(documents, group_size)
    semantic_encoder = encoder if config.use_semantic_chunking else None
    resources = Resources(encoder=semantic_encoder, model_counter=model_counter)
    counter = select_counter(config.token_counter, resources)
    results = chunk_groups(groups, config, resources, headings)
    chunks = [chunk for result in results for chunk in result.chunks]
    block_tokens = {block_id(d, i): count(counter, t) for d in documents for i, t in enumerate(d.blocks)}
    block_source = {block_id(d, i): d.id for d in documents for i in range(len(d.blocks))}
    for d in documents if headings is not None else ():
        for segment, title in enumerate(headings[d.id]):
            block_tokens[heading_id(d, segment)] = count(counter, title)
            block_source[heading_id(d, segment)] = d.id
    asked = [(d, q) for d in documents for q in d.questions]
    embedded = [c.embed_text if embed == "embed_text" and c.embed_text is not None else c.text
                for c in chunks]
    orders = rank_chunks(encoder, [q.question for _, q in asked], embedded)
    per_question = [
        {"document": d.id, "question": q.question, "answer_block_id": block_id(d, q.answer_block),
         **score_question(order, chunks, block_id(d, q.answer_block), d.id, budget, block_tokens,
                          block_source)}
        for (d, q), order in zip(asked, orders.tolist(), strict=True)
    ]  # fmt: skip
    n = len(per_question)
    return {
        "budget": budget,
        "embedded": embed,
        "headings": headings is not None,
        "token_counter": COUNTER_NAMES.get(counter.name, counter.name),
        "group_size": group_size,
        "long_documents": len(groups),
        "documents": len(documents),
        "blocks": len(block_tokens),
        "chunks": len(chunks),
        "mean_chunk_tokens": sum(c.token_count for c in chunks) / len(chunks),
        "semantic_boundaries": sum(r.stats.semantic.boundaries for r in results),
        "questions": n,
        "hit_rate": sum(q["hit"] for q in per_question) / n,
        "mrr": sum(q["reciprocal_rank"] for q in per_question) / n,
        "context_precision": sum(q["context_precision"] for q in per_question) / n,
        "mean_context_tokens": sum(q["context_tokens"] for q in per_question) / n,
        "per_question": per_question,
    }


def format_report(report: dict[str, Any]) -> str:
    semantic = report["config"]["use_semantic_chunking"]
    method = report["method"] if semantic else "off (structural packing)"
    lines = [
        f"semantic: {method}; max_tokens {report['config']['max_tokens']}, "
        f"min_tokens {report['config']['min_tokens']}, overlap_blocks {report['config']['overlap_blocks']}",
        f"corpus: {report['documents']} documents in {report['long_documents']} long documents of "
        f"{report['group_size']}, {report['blocks']} blocks -> {report['chunks']} chunks "
        f"(mean {report['mean_chunk_tokens']:.1f} tokens, "
        f"{report['semantic_boundaries']} semantic boundaries)",
        f"budget {report['budget']} tokens, counted by the {report['token_counter']}; "
        f"model {report['model']}",
        f"questions {report['questions']}: hit rate {report['hit_rate']:.3f}  MRR {report['mrr']:.3f}  "
        f"context precision {report['context_precision']:.3f}  "
        f"(mean context {report['mean_context_tokens']:.1f} tokens)",
    ]
    return "\n".join(lines)


def read_headings(path: str, documents: Sequence[LabelledDocument]) -> Headings:
    """Segment titles: a JSON object of document id -> one title per labelled segment."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise CommandError(2, f"cannot read headings {path}: {exc}") from None
    for doc in documents:
        titles = data.get(doc.id) if isinstance(data, dict) else None
        if not isinstance(titles, list) or len(titles) != len(doc.boundaries) + 1:
            raise CommandError(2, f"{path}: document {doc.id!r} needs {len(doc.boundaries) + 1} titles")
    return {doc.id: data[doc.id] for doc in documents}


def run_evaluate_retrieval(args: argparse.Namespace) -> int:
    """CLI entry point; see the module docstring for the exit statuses."""
    try:
        if args.budget < 1:
            raise CommandError(2, f"--budget must be at least 1, got {args.budget}")
        if args.group_size < 1:
            raise CommandError(2, f"--group-size must be at least 1, got {args.group_size}")
        config = build_config(args)
        documents = read_labelled(args.labelled)
        if not any(d.questions for d in documents):
            raise CommandError(2, f"{args.labelled}: no document has questions")
        headings = read_headings(args.headings, documents) if getattr(args, "headings", None) else None
        embed = getattr(args, "embed", "text")
        if embed == "embed_text" and not config.heading_context:
            raise CommandError(2, "--embed embed_text needs heading_context in the config")
        encoder = encoder_for(args)
        model_counter = None
        if config.token_counter == "model":
            try:
                model_counter = load_model_counter()
            except TokenizerUnavailable as exc:
                raise CommandError(3, str(exc)) from None
    except CommandError as exc:
        return fail("evaluate-retrieval", exc)
    report = {
        "config": config.model_dump(mode="json"),
        "method": method_parameters(config)["method"],
        "model": encoder.name,
        "weights_sha256": encoder.weights_sha256,
        **evaluate_retrieval(documents, config, encoder, args.budget, args.group_size, model_counter,
                             headings, embed),
    }
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0
