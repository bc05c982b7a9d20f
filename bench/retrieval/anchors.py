#!/usr/bin/env python3
"""The retrieval benchmark's anchors: public chunkers run on the set's documents, chunk texts out.

Runs in a THROWAWAY environment that `make bench-retrieval` builds under `bench-data/` from
`bench/retrieval/anchors-requirements.txt` (none of these libraries is a project dependency):

    HF_HUB_OFFLINE=1 bench-data/retrieval-anchors/bin/python bench/retrieval/anchors.py \\
        --set eval/retrieval_v1 --split dev --model-path MODEL_DIR -o bench-data/retrieval/anchors-dev.json

Every anchor counts tokens with the pinned model's own Hugging Face tokenizer (loaded from the
local model directory, offline) at a budget of 256 tokens, and is run with its library's
defaults otherwise:

* ``hybrid``: docling-core ``HybridChunker`` (``max_tokens`` 256, ``merge_peers`` default) on the
  DoclingDocument; embedded text ``chunker.contextualize(chunk)`` (headings + text).
* ``langchain-recursive``: LangChain ``RecursiveCharacterTextSplitter.from_huggingface_tokenizer``
  (``chunk_size`` 256, ``chunk_overlap`` 0) on docling's Markdown export.
* ``langchain-markdown``: LangChain ``MarkdownHeaderTextSplitter`` on ``#``, ``##``, ``###``
  (its defaults: headers stripped from the content into metadata), then the recursive splitter
  above on each section; embedded text the page content.
* ``chonkie-recursive``: chonkie ``RecursiveChunker`` (``chunk_size`` 256, default rules) on the
  Markdown export; ``chonkie-markdown`` its ``markdown`` recipe when the recipe can be loaded
  offline (chonkie fetches recipes from the Hugging Face Hub; without it the row says why).

Output JSON: ``{"versions": {package: version}, "budget": 256, "markdown": {doc id: text},
"anchors": {name: {"description": str, "documents": {doc id: [{"text", "embed"}]}} |
{"description": str, "unavailable": reason}}}``. The project's harness (``lpeval.bench_retrieval``)
embeds and scores these texts exactly as it does its own chunks. This script imports nothing
from the project.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
from pathlib import Path
from typing import Any

BUDGET = 256
PACKAGES = ("docling-core", "langchain-text-splitters", "chonkie", "transformers", "tokenizers")


def load_set(set_dir: Path, split: str) -> list[tuple[str, dict[str, Any]]]:
    ids = json.loads((set_dir / "split.json").read_text(encoding="utf-8"))[split]
    files = {d["id"]: d["file"] for d in
             json.loads((set_dir / "questions_v1.json").read_text(encoding="utf-8"))["documents"]}
    return [(i, json.loads((set_dir / files[i]).read_text(encoding="utf-8"))) for i in ids]


def chunk(text: str, embed: str | None = None) -> dict[str, str]:
    return {"text": text, "embed": text if embed is None else embed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", default="eval/retrieval_v1")
    parser.add_argument("--split", required=True, choices=("dev", "test"))
    parser.add_argument("--model-path", required=True, help="the pinned model's local directory")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from chonkie import RecursiveChunker
    from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
    from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
    from docling_core.types.doc import DoclingDocument
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.model_path, local_files_only=True)
    hybrid = HybridChunker(tokenizer=HuggingFaceTokenizer(tokenizer=tokenizer, max_tokens=BUDGET))
    recursive = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
        tokenizer, chunk_size=BUDGET, chunk_overlap=0)
    headers = MarkdownHeaderTextSplitter(headers_to_split_on=[("#", "h1"), ("##", "h2"), ("###", "h3")])
    chonkie = RecursiveChunker(tokenizer=tokenizer, chunk_size=BUDGET)
    try:
        chonkie_md: Any = RecursiveChunker.from_recipe("markdown", lang="en", tokenizer=tokenizer,
                                                       chunk_size=BUDGET)
    except Exception as exc:  # the recipe lives on the Hugging Face Hub
        reason = str(exc).split(". ")[0]
        chonkie_md = f"n/a: chonkie fetches its markdown recipe from the Hugging Face Hub ({reason})"

    anchors: dict[str, dict[str, Any]] = {
        "hybrid": {"description": "docling-core HybridChunker 256, contextualize()", "documents": {}},
        "langchain-recursive": {"description": "LangChain RecursiveCharacterTextSplitter 256 on the "
                                "Markdown export", "documents": {}},
        "langchain-markdown": {"description": "LangChain MarkdownHeaderTextSplitter h1-h3 + recursive "
                               "256 on the Markdown export", "documents": {}},
        "chonkie-recursive": {"description": "chonkie RecursiveChunker 256 on the Markdown export",
                              "documents": {}},
        "chonkie-markdown": {"description": "chonkie RecursiveChunker markdown recipe 256",
                             "documents": {}},
    }
    if isinstance(chonkie_md, str):
        anchors["chonkie-markdown"] = {"description": anchors["chonkie-markdown"]["description"],
                                       "unavailable": chonkie_md}
    markdown: dict[str, str] = {}
    for doc_id, data in load_set(Path(args.set), args.split):
        doc = DoclingDocument.model_validate(data)
        md = markdown[doc_id] = doc.export_to_markdown()
        anchors["hybrid"]["documents"][doc_id] = [
            chunk(c.text, hybrid.contextualize(chunk=c)) for c in hybrid.chunk(dl_doc=doc)]
        anchors["langchain-recursive"]["documents"][doc_id] = [chunk(t) for t in recursive.split_text(md)]
        anchors["langchain-markdown"]["documents"][doc_id] = [
            chunk(t) for section in headers.split_text(md)
            for t in recursive.split_text(section.page_content)]
        anchors["chonkie-recursive"]["documents"][doc_id] = [chunk(c.text) for c in chonkie.chunk(md)]
        if not isinstance(chonkie_md, str):
            anchors["chonkie-markdown"]["documents"][doc_id] = [chunk(c.text) for c in chonkie_md.chunk(md)]
        print(f"{doc_id}: " + ", ".join(f"{name} {len(a['documents'][doc_id])}"
                                        for name, a in anchors.items() if "documents" in a), file=sys.stderr)
    versions = {p: importlib.metadata.version(p) for p in PACKAGES}
    result = {"split": args.split, "budget": BUDGET, "versions": versions, "markdown": markdown,
              "anchors": anchors}
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
