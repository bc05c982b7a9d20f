"""The ``longparser`` command line.

Subcommands:

* ``chunk INPUT.json [-c CONFIG.json] [-o OUT.json] [--semantic]`` - run the engine locally;
* ``evaluate LABELLED.json [--method NAME] [--threshold 0.3] [--json]`` - boundary quality with
  the real model;
* ``evaluate-retrieval LABELLED.json [-c CONFIG.json] [--budget 512]`` - retrieval hit rate, MRR
  and context precision of a chunking config, with the real model;
* ``submit INPUT.json [--wait] [--semantic]`` - enqueue on the worker fleet;
* ``result DOCUMENT_ID`` - fetch a stored result.

This module only parses arguments and dispatches; each command lives with the code it drives.
The producer-side commands import :mod:`tasks` lazily so that ``chunk`` works with the engine
alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from longparser.boundary_methods import ALIASES, METHODS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="longparser", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    chunk = sub.add_parser("chunk", help="chunk a document's blocks locally and print the result JSON")
    chunk.add_argument(
        "input", metavar="INPUT.json", help="block list, ChunkRequest or LongParser document"
    )
    chunk.add_argument("-c", "--config", metavar="CONFIG.json", help="ChunkingConfig fields (JSON object)")
    chunk.add_argument("-o", "--output", metavar="OUT.json", help="write the result here (atomically)")
    chunk.add_argument("--semantic", action="store_true", help="place semantic boundaries (needs the model)")
    chunk.add_argument(
        "--summary", action="store_true", help="print a readable chunk summary instead of JSON"
    )

    evaluate = sub.add_parser("evaluate", help="boundary precision/recall/F1, Pk and WindowDiff")
    evaluate.add_argument("labelled", metavar="LABELLED.json")
    evaluate.add_argument("--method", choices=sorted([*METHODS, *ALIASES]), default=None,
                          help="boundary method (default: the config's, adjacent)")
    evaluate.add_argument("--threshold", type=float, default=None, help="adjacent: cosine threshold (0.3)")
    evaluate.add_argument("--pair-threshold", type=float, default=None, help="cohesion: pair threshold")
    evaluate.add_argument("--boundary-cost", type=float, default=None, help="cohesion: boundary cost")
    evaluate.add_argument("-c", "--config", metavar="CONFIG.json", help="ChunkingConfig fields (JSON object)")
    evaluate.add_argument("--json", action="store_true", help="print the report as JSON")
    evaluate.add_argument("--model-path", default=None, help="local model directory (default: settings)")

    retrieval = sub.add_parser(
        "evaluate-retrieval", help="hit rate, MRR and context precision of a chunking config"
    )
    retrieval.add_argument("labelled", metavar="LABELLED.json")
    retrieval.add_argument("-c", "--config", metavar="CONFIG.json", help="ChunkingConfig fields (JSON)")
    retrieval.add_argument("--budget", type=int, default=512, help="context budget in tokens (512)")
    retrieval.add_argument("--group-size", type=int, default=4, help="documents per long document (4)")
    retrieval.add_argument("--json", action="store_true", help="print the report as JSON")
    retrieval.add_argument("--model-path", default=None, help="local model directory (default: settings)")

    submit = sub.add_parser("submit", help="enqueue a document on the worker fleet")
    submit.add_argument("input", metavar="INPUT.json", help="block list, ChunkRequest or LongParser document")
    submit.add_argument("-c", "--config", metavar="CONFIG.json", help="ChunkingConfig fields (JSON object)")
    submit.add_argument("--wait", action="store_true", help="wait for the result and print it")
    submit.add_argument("--timeout", type=float, default=300.0, help="seconds to wait with --wait")
    submit.add_argument("--semantic", action="store_true", help="route to the semantic queue")

    result = sub.add_parser("result", help="print a stored result (exit 1 if pending or failed)")
    result.add_argument("document_id", metavar="DOCUMENT_ID")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "chunk":
        from cli.chunk import run_chunk

        return run_chunk(args)
    if args.command == "evaluate":
        from cli.evaluate import run_evaluate

        return run_evaluate(args)
    if args.command == "evaluate-retrieval":
        from cli.evaluate_retrieval import run_evaluate_retrieval

        return run_evaluate_retrieval(args)
    if args.command == "submit":
        from cli.submit import run_submit

        return run_submit(args)
    if args.command == "result":
        from cli.submit import run_result

        return run_result(args)
    raise AssertionError(args.command)  # argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
