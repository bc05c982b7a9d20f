"""The evaluation and benchmark command line, run from a source checkout: python -m lpeval COMMAND.

Subcommands:

* ``evaluate LABELLED.json [-c CONFIG] [--method NAME] [--threshold 0.3] [--json]`` - boundary
  quality with the real model (:mod:`lpeval.evaluate`);
* ``evaluate-retrieval LABELLED.json [-c CONFIG] [--budget 512] [--embed text|embed_text]`` -
  retrieval hit rate, MRR and context precision of a chunking config, with the real model
  (:mod:`lpeval.evaluate_retrieval`);
* ``bench-retrieval --split dev [--anchors FILE] [-o PREFIX]`` - the real-document retrieval
  benchmark (:mod:`lpeval.bench_retrieval`, docs/retrieval-benchmark.md).

``-c`` takes a JSON file or an inline JSON object, as ``longparser chunk`` reads it. Library
warnings print as one line each, as the ``longparser`` command prints them.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable, Sequence

from cli.main import add_config_option, cli_logging
from longparser.boundary_methods import ALIASES, METHODS
from lpeval.bench_retrieval import add_arguments as add_bench_arguments
from lpeval.bench_retrieval import run_bench_retrieval
from lpeval.evaluate import run_evaluate
from lpeval.evaluate_retrieval import run_evaluate_retrieval
from schemas.config import SEMANTIC_THRESHOLD

PROG = "lpeval"
LABELLED_FORMAT = """\
LABELLED.json is a non-empty JSON list of labelled documents (eval/boundaries_v1/dev.json is one):
  [{"id": "doc-1",                   unique, non-empty
    "blocks": ["text", "text", ...], the document's paragraphs, in order
    "boundaries": [3, 7],            a new segment starts before block 3 and before block 7:
                                     distinct, 1 <= b < number of blocks; [] = one topic
    "kind": "clear_shift",           optional: results are also grouped by kind
    "questions": [{"question": "...", "answer_block": 4}]}]
                                     optional; evaluate-retrieval scores each one (at least one
                                     document must have some): is block 4 in the context?
Other fields (a rationale, say) are ignored.
"""
EVALUATE_EXIT = ("exit status: 0 report printed; 2 bad input (unreadable or malformed file, invalid config "
                 "or parameter, invalid LONGPARSER_* settings); 3 the encoder (or, for token_counter "
                 "'model', the tokenizer) cannot be loaded: the message says what to install. Errors: one "
                 "line on stderr.")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    evaluate = sub.add_parser("evaluate", help="boundary precision/recall/F1, Pk and WindowDiff",
                              formatter_class=argparse.RawDescriptionHelpFormatter,
                              epilog=f"{LABELLED_FORMAT}\n{textwrap.fill(EVALUATE_EXIT, 96)}")
    evaluate.add_argument("labelled", metavar="LABELLED.json", help="labelled documents (format below)")
    evaluate.add_argument("--method", choices=sorted([*METHODS, *ALIASES]), default=None,
                          help="boundary method (default: the config's, adjacent)")
    evaluate.add_argument("--threshold", type=float, default=None,
                          help="adjacent: cosine threshold below which a boundary is placed "
                               f"(default: the config's semantic_threshold, {SEMANTIC_THRESHOLD})")
    evaluate.add_argument("--pair-threshold", type=float, default=None, help="cohesion: pair threshold")
    evaluate.add_argument("--boundary-cost", type=float, default=None, help="cohesion: boundary cost")
    add_config_option(evaluate)
    evaluate.add_argument("--json", action="store_true", help="print the report as JSON")
    evaluate.add_argument("--model-path", default=None, help="local model directory (default: settings)")

    retrieval = sub.add_parser(
        "evaluate-retrieval", help="hit rate, MRR and context precision of a chunking config",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"{LABELLED_FORMAT}\n{textwrap.fill(EVALUATE_EXIT, 96)}",
    )
    retrieval.add_argument("labelled", metavar="LABELLED.json",
                           help="labelled documents with questions (format below)")
    add_config_option(retrieval)
    retrieval.add_argument("--budget", type=int, default=512, help="context budget in tokens (512)")
    retrieval.add_argument("--group-size", type=int, default=4, help="documents per long document (4)")
    retrieval.add_argument("--json", action="store_true", help="print the report as JSON")
    retrieval.add_argument("--model-path", default=None, help="local model directory (default: settings)")
    retrieval.add_argument("--headings", metavar="TITLES.json",
                           help="segment titles (document id -> titles): each segment opens with a heading")
    retrieval.add_argument("--embed", choices=("text", "embed_text"), default="text",
                           help="what is embedded for ranking (embed_text needs heading_context)")

    bench = sub.add_parser(
        "bench-retrieval", help="the real-document retrieval benchmark (docs/retrieval-benchmark.md)",
        epilog="exit status: 0 done; 2 bad arguments or set files; 3 the model cannot be loaded.",
    )
    add_bench_arguments(bench)
    return parser


RUNS: dict[str, Callable[[argparse.Namespace], int]] = {
    "evaluate": run_evaluate,
    "evaluate-retrieval": run_evaluate_retrieval,
    "bench-retrieval": run_bench_retrieval,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with cli_logging(args.command, prog=PROG):
        return RUNS[args.command](args)  # argparse accepts only these commands


if __name__ == "__main__":
    sys.exit(main())
