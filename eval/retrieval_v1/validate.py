#!/usr/bin/env python3
"""Checks the retrieval set: the documents' origins, the split, and every question's answer.

    .venv/bin/python eval/retrieval_v1/validate.py [QUESTIONS_FILE]

Reads files and the docling converter's text only: no chunker, no model. Checks that

* every document file has the git blob id ``documents/manifest.json`` records (byte-for-byte
  copies of the upstream files) and is not a reserved document;
* ``split.json`` puts every document in exactly one split;
* question ids are unique, kinds are prose / table / list / section, rationales are given;
* each answer occurs exactly once in its document's converter text (counted in each block's
  and each table cell's text separately, after NFKC, case folding and whitespace collapsing),
  and at least once in docling's Markdown export (where spanning cells may repeat it);
* at least half of the answers are 4 words or more.

Prints the counts by kind and split, and exits 1 on any error.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from lpeval.retrieval_metrics import normalise, occurrences  # noqa: E402
from lpeval.retrieval_set import (  # noqa: E402
    QUESTIONS_FILE,
    document_units,
    markdown_export,
    read_documents,
    read_split,
)

RESERVED = {
    "1706.03762_main.tex.json", "2203.01017v2.json", "2305.03393v1.json", "redp5110_sampled.json",
    "amt_handbook_sample.json", "pone.0234687.nxml.json", "elife-56337.nxml.json", "wiki_duck.html.json",
    "ipa20180000016.json", "grve_10q_htm.xml.json", "docx_rich_tables_01.docx.json", "2311.18481v1.json",
    "2408.09869v5_hierarchical_enriched_summary.json", "cross_page_lists.json",
}
RESERVED_PAPERS = ("2408.09869", "2305.03393", "1706.03762", "2203.01017", "2311.18481")


def blob_id(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def main() -> int:
    questions_file = sys.argv[1] if len(sys.argv) > 1 else QUESTIONS_FILE
    errors: list[str] = []
    manifest = json.loads((HERE / "documents" / "manifest.json").read_text(encoding="utf-8"))
    documents = read_documents(HERE, questions_file)
    split = read_split(HERE)
    ids = [d.id for d in documents]
    in_split = split["dev"] + split["test"]
    if sorted(in_split) != sorted(ids) or len(set(in_split)) != len(in_split):
        errors.append(f"split.json must hold each document once: {sorted(set(ids) ^ set(in_split))}")
    question_ids = Counter(q.id for d in documents for q in d.questions)
    errors += [f"duplicate question id {i}" for i, n in question_ids.items() if n > 1]
    kinds: Counter[tuple[str, str]] = Counter()
    long_answers = total = 0
    for doc in documents:
        name = doc.path.name
        entry = manifest.get(name)
        if name in RESERVED or any(p in name for p in RESERVED_PAPERS):
            errors.append(f"{doc.id}: {name} is a reserved document")
        if entry is None:
            errors.append(f"{doc.id}: {name} is not in documents/manifest.json")
        elif blob_id(doc.path) != entry["blob"]:
            errors.append(f"{doc.id}: {name} is not the upstream blob {entry['blob']}")
        docling = doc.docling()
        units = [normalise(u) for u in document_units(docling)]
        markdown = markdown_export(docling)
        doc_split = "dev" if doc.id in split["dev"] else "test"
        for q in doc.questions:
            total += 1
            kinds[(doc_split, q.kind)] += 1
            long_answers += len(q.answer.split()) >= 4
            found = sum(u.count(normalise(q.answer)) for u in units)
            if found != 1:
                errors.append(f"{q.id}: answer {q.answer!r} occurs {found} times in the converter's text")
            if occurrences(markdown, q.answer) < 1:
                errors.append(f"{q.id}: answer {q.answer!r} is not in the Markdown export")
    if 2 * long_answers < total:
        errors.append(f"only {long_answers} of {total} answers have 4 words or more")
    for s in ("dev", "test"):
        docs = [d for d in documents if d.id in split[s]]
        by_kind = ", ".join(f"{k} {kinds[(s, k)]}" for k in ("prose", "table", "list", "section"))
        print(f"{s}: {len(docs)} documents, {sum(len(d.questions) for d in docs)} questions ({by_kind})")
    print(f"answers of 4 words or more: {long_answers} of {total}")
    for error in errors:
        print("ERROR", error)
    print("OK" if not errors else f"{len(errors)} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
