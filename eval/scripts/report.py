#!/usr/bin/env python3
"""Boundary table of one labelled split: the seed method, the recommended one, public anchors.

    .venv/bin/python eval/scripts/report.py eval/boundaries_v1/test.json \\
        --anchors /tmp/anchors-test.json -o eval/results/boundaries_test.json

The seed method (adjacent, threshold 0.3) and the recommended method (with the config's default
parameters) run through the production path (:func:`lpeval.evaluation.predict_boundaries`,
one encode batch each, the pinned model loaded once); the anchors' predictions come from
``eval/scripts/anchors.py`` (a throwaway environment). Everything is scored by the same
:func:`lpeval.evaluation.evaluate_predictions`. Prints a Markdown table (P, R, F1, Pk,
WindowDiff, boundaries placed in one_topic and in hard_negative documents) and writes the full
reports as JSON.
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
from lpeval.evaluation import evaluate_predictions, parse_labelled, predict_boundaries  # noqa: E402
from schemas import ChunkingConfig  # noqa: E402


def row(name: str, report: dict[str, Any]) -> str:
    o, kinds = report["overall"], report["kinds"]
    one = {k: kinds[k]["fp"] for k in ("one_topic", "hard_negative") if k in kinds}
    docs = {k: kinds[k]["documents"] for k in one}
    return (
        f"| {name} | {o['precision']:.3f} | {o['recall']:.3f} | {o['f1']:.3f} | {o['pk']:.3f} | "
        f"{o['windowdiff']:.3f} | {one.get('one_topic', '-')} / {docs.get('one_topic', '-')} | "
        f"{one.get('hard_negative', '-')} / {docs.get('hard_negative', '-')} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labelled")
    parser.add_argument("--anchors", help="output of eval/scripts/anchors.py for the same file")
    parser.add_argument("-o", "--output", help="write the reports here (JSON)")
    args = parser.parse_args()
    documents = parse_labelled(json.loads(Path(args.labelled).read_text(encoding="utf-8")))
    encoder = load_encoder(threads=1)
    configs = {
        "seed: adjacent, threshold 0.3": ChunkingConfig(),
        "recommended (cohesion, defaults)": ChunkingConfig(semantic_method="recommended"),
    }
    reports: dict[str, Any] = {}
    for name, config in configs.items():
        args_ = config.semantic_method_args()
        predicted = predict_boundaries(documents, encoder, config.semantic_threshold, **args_)
        reports[name] = evaluate_predictions(documents, predicted)
    if args.anchors:
        anchors = json.loads(Path(args.anchors).read_text(encoding="utf-8"))
        for anchor in anchors["anchors"].values():
            predicted = [anchor["predictions"][doc.id] for doc in documents]
            reports[anchor["description"]] = evaluate_predictions(documents, predicted)
    print(f"{args.labelled}: {len(documents)} documents, {encoder.name}, {encoder.weights_sha256}")
    print("| method | P | R | F1 | Pk | WindowDiff | in one_topic / docs | in hard_negative / docs |")
    print("|---|---|---|---|---|---|---|---|")
    for name, report in reports.items():
        print(row(name, report))
    if args.output:
        Path(args.output).write_text(json.dumps(
            {"labelled": args.labelled, "model": encoder.name, "weights_sha256": encoder.weights_sha256,
             "reports": reports}, indent=1) + "\n", encoding="utf-8")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
