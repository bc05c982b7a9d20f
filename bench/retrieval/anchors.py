#!/usr/bin/env python3
"""The retrieval benchmark's anchors: public chunkers run on the set's documents, chunk texts out.

Runs in a THROWAWAY environment that `make bench-retrieval` builds under `bench-data/` from
`bench/retrieval/anchors-requirements.txt` (none of these libraries is a project dependency):

    HF_HUB_OFFLINE=1 bench-data/retrieval-anchors/bin/python bench/retrieval/anchors.py \\
        --set eval/retrieval_v1 --split dev --model-path MODEL_DIR [--budget 256] \\
        -o bench-data/retrieval/anchors-retrieval_v1-dev.json

Every anchor counts tokens with the model's own Hugging Face tokenizer (loaded from the local
model directory, offline) at a budget of the model's window (``--budget``: 256 for the pinned
all-MiniLM-L6-v2, 384 for all-mpnet-base-v2), and is run with its library's defaults otherwise.
A Markdown document of the set (a ``.md`` file) is read as it is by the Markdown-based anchors,
and HybridChunker chunks docling's own conversion of it (the entry's ``docling_file``):

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

Output JSON: ``{"set": name, "split", "versions": {package: version}, "budget": N, "markdown": {doc id: text},
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

BUDGET = 256  # the pinned model's window; --budget for another model's
PACKAGES = ("docling-core", "langchain-text-splitters", "chonkie", "transformers", "tokenizers")


def load_set(set_dir: Path, split: str) -> list[tuple[str, dict[str, Any], str | None]]:
    """(id, docling JSON, the Markdown text of a Markdown document or None) for each document."""
    ids = json.loads((set_dir / "split.json").read_text(encoding="utf-8")).get(split, [])
    entries = {d["id"]: d for d in
               json.loads((set_dir / "questions_v1.json").read_text(encoding="utf-8"))["documents"]}
    documents = []
    for i in ids:
        entry = entries[i]
        markdown = None
        if entry["file"].endswith(".md"):
            markdown = (set_dir / entry["file"]).read_text(encoding="utf-8")
            entry = {**entry, "file": entry["docling_file"]}
        documents.append((i, json.loads((set_dir / entry["file"]).read_text(encoding="utf-8")), markdown))
    return documents


def model_window(model_path: Path) -> int:
    """The model's window: sentence-transformers' ``max_seq_length`` (256 for the pinned model)."""
    config = model_path / "sentence_bert_config.json"
    if config.is_file():
        return int(json.loads(config.read_text(encoding="utf-8")).get("max_seq_length", BUDGET))
    return BUDGET


def chunk(text: str, embed: str | None = None) -> dict[str, str]:
    return {"text": text, "embed": text if embed is None else embed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", default="eval/retrieval_v1")
    parser.add_argument("--split", required=True, choices=("dev", "test"))
    parser.add_argument("--model-path", required=True, help="the model's local directory (its tokenizer)")
    parser.add_argument("--budget", type=int, default=None,
                        help="tokens per chunk (default: the model's window, max_seq_length in its "
                             f"sentence_bert_config.json, else {BUDGET})")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.budget is None:
        args.budget = model_window(Path(args.model_path))

    from chonkie import RecursiveChunker
    from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
    from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
    from docling_core.types.doc import DoclingDocument
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.model_path, local_files_only=True)
    hybrid = HybridChunker(tokenizer=HuggingFaceTokenizer(tokenizer=tokenizer, max_tokens=args.budget))
    recursive = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
        tokenizer, chunk_size=args.budget, chunk_overlap=0)
    headers = MarkdownHeaderTextSplitter(headers_to_split_on=[("#", "h1"), ("##", "h2"), ("###", "h3")])
    chonkie = RecursiveChunker(tokenizer=tokenizer, chunk_size=args.budget)
    try:
        chonkie_md: Any = RecursiveChunker.from_recipe("markdown", lang="en", tokenizer=tokenizer,
                                                       chunk_size=args.budget)
    except Exception as exc:  # the recipe lives on the Hugging Face Hub
        reason = str(exc).split(". ")[0]
        chonkie_md = f"n/a: chonkie fetches its markdown recipe from the Hugging Face Hub ({reason})"

    anchors: dict[str, dict[str, Any]] = {
        "hybrid": {"description": f"docling-core HybridChunker {args.budget}, contextualize()",
                   "documents": {}},
        "langchain-recursive": {"description": f"LangChain RecursiveCharacterTextSplitter {args.budget} "
                                "on the Markdown export", "documents": {}},
        "langchain-markdown": {"description": "LangChain MarkdownHeaderTextSplitter h1-h3 + recursive "
                               f"{args.budget} on the Markdown export", "documents": {}},
        "chonkie-recursive": {"description": f"chonkie RecursiveChunker {args.budget} on the Markdown export",
                              "documents": {}},
        "chonkie-markdown": {"description": f"chonkie RecursiveChunker markdown recipe {args.budget}",
                             "documents": {}},
    }
    if isinstance(chonkie_md, str):
        anchors["chonkie-markdown"] = {"description": anchors["chonkie-markdown"]["description"],
                                       "unavailable": chonkie_md}
    markdown: dict[str, str] = {}
    for doc_id, data, source_markdown in load_set(Path(args.set), args.split):
        doc = DoclingDocument.model_validate(data)
        md = markdown[doc_id] = doc.export_to_markdown() if source_markdown is None else source_markdown
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
    result = {"set": Path(args.set).name, "split": args.split, "budget": args.budget, "versions": versions,
              "markdown": markdown, "anchors": anchors}
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
