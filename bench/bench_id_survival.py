#!/usr/bin/env python3
"""Chunk-id survival: how many chunk ids stay the same when a real document is edited near its start.

Documents: the dev split of ``eval/retrieval_v1`` (docling JSON) and the tests' real fixtures
(``tests/fixtures/docling`` and the Markdown pages of ``tests/fixtures/markdown``); the paper
2408.09869 stays out (reserved). Each document is chunked once as it is and once after each edit:

* ``edit``: in the first paragraph of at least 8 words (among the first third of the document),
  three words are replaced;
* ``insert``: a new paragraph is inserted right after that paragraph.

Docling documents are edited as blocks (a new block gets a fresh id); Markdown pages are edited
in their source and converted again, so the loader renumbers every later block (``md-<n>``), as
a real re-conversion does. ``unchanged`` = ids of the edited result also in the original result /
ids of the original. ``index ids`` recomputes the previous scheme (a hash of the chunk's index,
type, block ids and text) on the same chunks, for comparison.

Configs: the defaults, and ``schemas.config.RECOMMENDED_CONFIG`` (the pinned model's bundled
tokenizer counts; no torch needed).

Usage:
    .venv/bin/python bench/bench_id_survival.py            # table on stdout
    .venv/bin/python bench/bench_id_survival.py --json out.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from loaders.docling import blocks_from_docling  # noqa: E402
from loaders.markdown import blocks_from_markdown  # noqa: E402
from loaders.tokenizer import load_model_counter  # noqa: E402
from longparser import Resources, chunk_blocks  # noqa: E402
from lpeval.retrieval_set import split_documents  # noqa: E402
from schemas.config import RECOMMENDED_CONFIG  # noqa: E402

RESERVED = "2408.09869"
MIN_WORDS = 8
NEW_PARAGRAPH = ("This paragraph was added by the benchmark to stand for an edit: a sentence or two "
                 "that a writer inserted near the start of the document, after it was first indexed.")
_WORD = re.compile(r"[A-Za-z]{3,}")


def change_words(text: str) -> str:
    """``text`` with its 2nd, 4th and 6th words of 3+ letters replaced."""
    seen = 0

    def swap(match: re.Match[str]) -> str:
        nonlocal seen
        seen += 1
        return "edited" if seen in (2, 4, 6) else match.group(0)

    return _WORD.sub(swap, text)


def _target(blocks: list[dict[str, Any]]) -> int | None:
    limit = max(1, len(blocks) // 3)
    for i, block in enumerate(blocks[:limit]):
        if block.get("type") == "paragraph" and len(_WORD.findall(block.get("text", ""))) >= MIN_WORDS:
            return i
    return None


def edited_blocks(blocks: list[dict[str, Any]], how: str) -> list[dict[str, Any]] | None:
    """A docling document's blocks after the edit ``how`` (None: no paragraph to edit)."""
    i = _target(blocks)
    if i is None:
        return None
    copy = [dict(b) for b in blocks]
    if how == "edit":
        copy[i]["text"] = change_words(copy[i]["text"])
    else:
        new = {k: v for k, v in copy[i].items() if k not in ("table", "bbox")}
        new.update(block_id="bench-inserted", text=NEW_PARAGRAPH)
        copy.insert(i + 1, new)
    return copy


def edited_markdown(source: str, how: str) -> str | None:
    """A Markdown page after the edit ``how``, made in its source (None: no paragraph to edit)."""
    paragraphs = source.split("\n\n")
    limit = max(1, len(paragraphs) // 3)
    for i, para in enumerate(paragraphs[:limit]):
        line = para.strip()
        if (line and not line.startswith(("#", "-", "*", "`", "|", ">", "<", "!", "[", "$", "1."))
                and "\n" not in line and len(_WORD.findall(line)) >= MIN_WORDS):
            if how == "edit":
                paragraphs[i] = change_words(para)
            else:
                paragraphs.insert(i + 1, NEW_PARAGRAPH)
            return "\n\n".join(paragraphs)
    return None


def index_ids(document_id: str, result: Any) -> list[str]:
    """The previous scheme's ids of ``result``'s chunks (hash of index, type, block ids, text)."""
    ids = []
    for index, c in enumerate(result.chunks):
        head = "\x00".join((document_id, str(index), c.chunk_type, "\x01".join(c.block_ids), ""))
        ids.append(hashlib.sha256((head + c.text).encode("utf-8")).hexdigest()[:32])
    return ids


def documents() -> list[tuple[str, Callable[[str], list[dict[str, Any]] | None]]]:
    """``(name, blocks_after(how))`` per document; ``how`` is "" (as is), "edit" or "insert"."""
    docs: list[tuple[str, Callable[[str], list[dict[str, Any]] | None]]] = []

    def docling_doc(data: dict[str, Any], name: str) -> Callable[[str], list[dict[str, Any]] | None]:
        blocks = blocks_from_docling(data, source_file=name)
        return lambda how: blocks if not how else edited_blocks(blocks, how)

    def markdown_doc(source: str, name: str) -> Callable[[str], list[dict[str, Any]] | None]:
        def after(how: str) -> list[dict[str, Any]] | None:
            text = source if not how else edited_markdown(source, how)
            return None if text is None else blocks_from_markdown(text, source_file=name)
        return after

    for doc in split_documents("dev"):
        docs.append((doc.id, docling_doc(doc.docling(), doc.path.name)))
    for path in sorted((ROOT / "tests/fixtures/docling").glob("*.docling.json")):
        if RESERVED not in path.name:
            docs.append((f"fixture:{path.name}", docling_doc(json.loads(path.read_text()), path.name)))
    for path in sorted((ROOT / "tests/fixtures/markdown").glob("*/*.md")):
        if path.name != "README.md":
            docs.append((f"md:{path.parent.name}/{path.name}", markdown_doc(path.read_text(), path.name)))
    return docs


def measure(configs: dict[str, dict[str, Any]], resources: Resources) -> list[dict[str, Any]]:
    rows = []
    for name, after in documents():
        original = after("")
        assert original is not None
        for config_name, config in configs.items():
            doc_id = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:100]
            base = chunk_blocks(original, config, resources, document_id=doc_id)
            base_ids, base_index = [c.chunk_id for c in base.chunks], index_ids(doc_id, base)
            for how in ("edit", "insert"):
                blocks = after(how)
                if blocks is None:
                    continue
                result = chunk_blocks(blocks, config, resources, document_id=doc_id)
                new_ids, new_index = {c.chunk_id for c in result.chunks}, set(index_ids(doc_id, result))
                rows.append({"document": name, "config": config_name, "edit": how, "chunks": len(base_ids),
                             "unchanged": sum(i in new_ids for i in base_ids),
                             "unchanged_index_ids": sum(i in new_index for i in base_index)})
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| document | config | edit | chunks | unchanged | index ids (before) |",
             "|---|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['document']} | {r['config']} | {r['edit']} | {r['chunks']} | "
                     f"{r['unchanged'] / r['chunks']:.1%} | {r['unchanged_index_ids'] / r['chunks']:.1%} |")
    for config in sorted({r["config"] for r in rows}):
        for how in ("edit", "insert"):
            sel = [r for r in rows if r["config"] == config and r["edit"] == how]
            total = sum(r["chunks"] for r in sel)
            lines.append(f"| **all ({len(sel)} documents)** | {config} | {how} | {total} | "
                         f"**{sum(r['unchanged'] for r in sel) / total:.1%}** | "
                         f"{sum(r['unchanged_index_ids'] for r in sel) / total:.1%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    resources = Resources(model_counter=load_model_counter())
    rows = measure({"default": {}, "recommended": dict(RECOMMENDED_CONFIG)}, resources)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
