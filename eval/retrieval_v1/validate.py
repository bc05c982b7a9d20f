#!/usr/bin/env python3
"""Checks the retrieval set: the documents' origins, the split, and every question's answer.

    .venv/bin/python eval/retrieval_v1/validate.py [--set DIR] [QUESTIONS_FILE]

Reads files and the converter's text only: no chunker, no model. The checks are the labelling
protocol's (README.md), defined once in ``lpeval.retrieval_set.validate_set``: each document is
the upstream blob ``documents/manifest.json`` records and not a reserved document; the split
holds every document once; question ids are unique, kinds valid, rationales given; each answer
occurs exactly once in its document's converter text (each block's and each table cell's text
counted separately, after NFKC, case folding and whitespace collapsing) and at least once in
docling's Markdown export; at least half of the answers are 4 words or more. ``--set`` checks
another set by the same protocol (``eval/retrieval_v2/validate.py`` does).

Prints the counts by kind and split, and exits 1 on any error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from lpeval.retrieval_set import QUESTIONS_FILE, validate_main  # noqa: E402

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=HERE, help="the set directory (this one)")
    parser.add_argument("questions", nargs="?", default=QUESTIONS_FILE)
    args = parser.parse_args()
    sys.exit(validate_main(args.set, [args.questions]))
