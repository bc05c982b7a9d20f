#!/usr/bin/env python3
"""Checks the retrieval set: the documents' origins, the split, and every question's answer.

    .venv/bin/python eval/retrieval_v2/validate.py [QUESTIONS_FILE]

Reads files and the converter's text only: no chunker, no model. The checks are the labelling
protocol's (README.md), defined once in ``lpeval.retrieval_set.validate_set``: each document is
the upstream blob ``documents/manifest.json`` records and not a reserved document; the split
holds every document once; question ids are unique, kinds valid, rationales given; each answer
occurs exactly once in its document's converter text (each block's and each table cell's text
counted separately, after NFKC, case folding and whitespace collapsing) and at least once in
docling's Markdown export; at least half of the answers are 4 words or more.

Prints the counts by kind and split, and exits 1 on any error.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from lpeval.retrieval_set import validate_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(validate_main(HERE, sys.argv[1:]))
