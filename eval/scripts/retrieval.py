#!/usr/bin/env python3
"""Retrieval table: structural packing vs the seed method vs the recommended one, equal budgets.

    .venv/bin/python eval/scripts/retrieval.py eval/boundaries_v1/test.json \\
        -o eval/results/retrieval_test.json

Runs what ``python -m lpeval evaluate-retrieval FILE -c CONFIG --budget N`` runs (same code, the
pinned model loaded once) for each configuration, at budgets 512 and 1024 tokens (word
estimate), at the default packing (max_tokens 512, min_tokens 100) and at max_tokens 256 /
min_tokens 50; four documents per long document.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from loaders.encoder import load_encoder  # noqa: E402
from lpeval.evaluate_retrieval import evaluate_retrieval  # noqa: E402
from lpeval.evaluation import parse_labelled  # noqa: E402
from schemas import ChunkingConfig  # noqa: E402

METHODS: dict[str, dict[str, Any]] = {
    "structural packing": {},
    "seed: adjacent 0.3": {"use_semantic_chunking": True},
    "recommended (cohesion)": {"use_semantic_chunking": True, "semantic_method": "recommended"},
}
PACKING: dict[str, dict[str, Any]] = {
    "max_tokens 512 / min 100 (default)": {},
    "max_tokens 256 / min 50": {"max_tokens": 256, "min_tokens": 50},
}
BUDGETS = (512, 1024)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labelled")
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    documents = parse_labelled(json.loads(Path(args.labelled).read_text(encoding="utf-8")))
    encoder = load_encoder(threads=1)
    rows, results = [], []
    for packing, packing_fields in PACKING.items():
        for budget in BUDGETS:
            for method, fields in METHODS.items():
                config = ChunkingConfig(**fields, **packing_fields)
                report = evaluate_retrieval(documents, config, encoder, budget, group_size=4)
                report.pop("per_question")
                results.append({"packing": packing, "method": method, **report})
                rows.append(
                    f"| {packing} | {budget} | {method} | {report['chunks']} | "
                    f"{report['mean_chunk_tokens']:.0f} | {report['hit_rate']:.3f} | {report['mrr']:.3f} | "
                    f"{report['context_precision']:.3f} |"
                )
    first = results[0]
    print(f"{args.labelled}: {len(documents)} documents, {first['questions']} questions, "
          f"{first['long_documents']} long documents of 4; tokens: {first['token_counter']}")  # fmt: skip
    print("| packing | budget | chunking | chunks | mean chunk tokens | hit rate | MRR | context precision |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if args.output:
        text = json.dumps({"labelled": args.labelled, "results": results}, indent=1)
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
