"""The longparser command line: chunk documents for retrieval, locally or on the worker fleet.

Subcommands:

* ``chunk INPUT [--format F] [-c CONFIG] [-o OUT.json] [--document-id ID] [config flags] [--summary]`` -
  run the engine locally;
* ``submit INPUT [--format F] [-c CONFIG] [--document-id ID] [config flags] [--wait]`` - enqueue on the
  worker fleet;
* ``result DOCUMENT_ID [--diff]`` - fetch a stored result (or its chunk-id diff);
* ``metrics [--queue Q] [--port N] [--bind ADDR]`` - each queue's depth and the messages workers
  hold, as Prometheus text (printed once, or served at ``/metrics``);
* ``search QUESTION [--document-id ID] [-k N] [--result FILE.json]`` - the chunks nearest a
  question, from the vector store or a result with embeddings (:mod:`cli.search`).

The evaluation and benchmark commands (``evaluate``, ``evaluate-retrieval``, ``bench-retrieval``)
are not installed with the worker: they run from a source checkout as ``python -m lpeval
COMMAND`` (:mod:`lpeval.main`); ``longparser`` answers those names with that one line.

INPUT ``-`` reads standard input; ``--format json|markdown|text`` says what INPUT holds (default
``auto``: a file's extension, standard input JSON). ``-c`` takes a JSON file or an inline JSON
object, the same way for every command (:mod:`cli.json_input`). Config flags (``chunk`` and ``submit``):
``--max-tokens N``, ``--min-tokens N``, ``--token-counter COUNTER``, ``--fit TOKENIZER``,
``--reserve-tokens N``, ``--strict``, ``--heading-context``, ``--semantic``, ``--embed [NAME]``;
they win over ``-c`` and over the input's own config.

This module parses arguments, sets up logging and dispatches; each command lives with the code
it drives. The producer-side commands import :mod:`tasks` lazily so that ``chunk`` works with
the engine alone.

Logging: for the duration of a command, warnings logged by the libraries (the loaders, the
engine) print on stderr as one line each, prefixed like the command's own lines
(``longparser chunk: warning: ...``), and a warning repeating an earlier one's arguments - the
same missing resource reported by the loader that found it missing and by the engine that
missed it - prints once.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from typing import Any

from cli.chunk import AUTO, INPUT_FORMATS, format_rule
from schemas.config import DEFAULT_MIN_TOKENS, MODEL_WINDOW, ChunkingConfig

DISTRIBUTION = "longparser-worker"
INPUT_HELP = ("block list, ChunkRequest, LongParser document dump or docling DoclingDocument (JSON), "
              "or a Markdown or plain-text file (see --format); - reads standard input")
DOCUMENT_ID_HELP = ("the document id (wins over the input's own; default: the input's, else the file name "
                    "with accents dropped and other characters outside A-Z a-z 0-9 . _ : @ - as '-'{stdin})")
# Commands of the evaluation package (not installed): the one line that says where they went.
MOVED_TO_LPEVAL = ("evaluate", "evaluate-retrieval", "bench-retrieval")


def version() -> str:
    """The installed distribution's version (``unknown`` when run from a tree not installed)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def field_bounds(metadata: list[Any]) -> str | None:
    """``1-100000``, ``>= 1`` or ``> 0 and <= 1`` from a pydantic field's constraints."""
    found = {name: getattr(m, name) for m in metadata for name in ("ge", "gt", "le", "lt")
             if getattr(m, name, None) is not None}
    low = {name: value for name, value in found.items() if name in ("ge", "gt")}
    high = {name: value for name, value in found.items() if name in ("le", "lt")}
    if "ge" in low and "le" in high:
        return f"{low['ge']}-{high['le']}"
    parts = [f"{'>=' if n == 'ge' else '>'} {v}" for n, v in low.items()]
    parts += [f"{'<=' if n == 'le' else '<'} {v}" for n, v in high.items()]
    return " and ".join(parts) or None


def config_limits() -> str:
    """The config's limits, read from :class:`ChunkingConfig` itself (so help never drifts)."""
    limits = []
    for name, field in ChunkingConfig.model_fields.items():
        bounds = field_bounds(field.metadata)
        if name == "min_tokens":
            bounds = f"{bounds} and < max_tokens"
        if bounds:
            limits.append(f"{name} {bounds}")
    return (", ".join(limits) + f"; with strict_max_tokens and token_counter 'model': max_tokens <= "
            f"{MODEL_WINDOW} (the model's window)")


def _default(name: str) -> Any:
    return ChunkingConfig.model_fields[name].default


def _add_input(parser: argparse.ArgumentParser) -> None:
    """INPUT and ``--format`` (``chunk`` and ``submit``)."""
    parser.add_argument("input", metavar="INPUT", help=INPUT_HELP)
    parser.add_argument("--format", choices=INPUT_FORMATS, default=AUTO,
                        help=f"how INPUT is read (default {AUTO}: {format_rule()})")


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """``-c``: every command reads it with :func:`cli.json_input.config_fields`."""
    parser.add_argument(
        "-c", "--config", metavar="CONFIG",
        help="ChunkingConfig fields: a JSON file, or an inline JSON object such as "
             f"'{{\"max_tokens\": 256}}' (fields: docs/config.md). Limits: {config_limits()}",
    )


def _add_config_flags(parser: argparse.ArgumentParser, semantic_help: str) -> None:
    """``-c`` and the config flags of ``chunk`` and ``submit`` (flags win over ``-c``, which wins
    over the input's own config)."""
    add_config_option(parser)
    flags = parser.add_argument_group(
        "config flags", "each wins over -c and over the input's own config; unset: theirs, else the default"
    )
    bounds = field_bounds(ChunkingConfig.model_fields["max_tokens"].metadata)
    flags.add_argument(
        "--max-tokens", type=int, metavar="N",
        help=f"chunk size target in tokens, a hard maximum with --strict; {bounds} "
             f"(default: {_default('max_tokens')})",
    )
    flags.add_argument(
        "--min-tokens", type=int, metavar="N",
        help="chunks below this merge into a neighbour of the same section; 0 up to max_tokens - 1 "
             f"(default: {DEFAULT_MIN_TOKENS}, or max_tokens // 2 when max_tokens is {DEFAULT_MIN_TOKENS} "
             "or less)",
    )
    flags.add_argument(
        "--token-counter", metavar="COUNTER",
        help="how tokens are counted: 'estimate' (words x 1.33), 'model' (the pinned model's own "
             "tokenizer), or a tokenizer: a path (a model directory, tokenizer.json, a tiktoken "
             "declaration .json) or a name LONGPARSER_TOKENIZERS declares (docs/tokenizers.md) "
             f"(default: {_default('token_counter')})",
    )
    flags.add_argument(
        "--fit", metavar="TOKENIZER",
        help="one setting for an embedding model: 'model', a tokenizer path or a declared name; strict "
             "mode with that tokenizer, max_tokens = min(its window, 256) and the recommended settings "
             "(other flags and -c win) (default: off)",
    )
    flags.add_argument(
        "--reserve-tokens", type=int, metavar="N",
        help="room kept free in every chunk for a prefix the embedder adds (e5: 'passage: '); chunks "
             f"count at most max_tokens - N (default: {_default('reserve_tokens')})",
    )
    flags.add_argument(
        "--strict", action="store_true",
        help="strict_max_tokens: every chunk's final text counts at most max_tokens; with "
             f"--token-counter model, max_tokens must be <= {MODEL_WINDOW} (default: off)",
    )
    flags.add_argument(
        "--heading-context", action="store_true",
        help="give each chunk embed_text: its heading breadcrumb, then its text (default: off)",
    )
    flags.add_argument("--semantic", action="store_true", help=semantic_help)
    flags.add_argument(
        "--embed", nargs="?", const=True, metavar="NAME",
        help="give each chunk `embedding`, the vector of its embedded text: with the pinned "
             "all-MiniLM-L6-v2 (or the encoder --fit names, when LONGPARSER_ENCODERS declares one by that "
             "name), or with the encoder NAME declares; needs an encoder (docs/encoders.md; routes to the "
             "semantic queue) (default: off)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="longparser", description=__doc__.split("\n\n")[0],
        epilog="evaluation and benchmarks (evaluate, evaluate-retrieval, bench-retrieval): python -m lpeval, "
               "from a source checkout",
    )
    parser.add_argument("--version", action="version", version=f"longparser {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    chunk = sub.add_parser(
        "chunk", help="chunk a document's blocks locally and print the result JSON",
        epilog="exit status: 0 success; 1 OUT could not be written; 2 bad input, config or settings, or a "
               "request refused (a token counter or --fit tokenizer that cannot be loaded, --semantic "
               "without the model). Errors and warnings: one line each on stderr.",
    )
    _add_input(chunk)
    chunk.add_argument("--document-id", metavar="ID", help=DOCUMENT_ID_HELP.format(stdin="; stdin: 'stdin'"))
    chunk.add_argument("-o", "--output", metavar="OUT.json", help="write the result here (atomically)")
    chunk.add_argument(
        "--summary", action="store_true",
        help="print a readable chunk summary instead of JSON (with -o the JSON still goes to OUT)",
    )
    _add_config_flags(chunk, "place semantic boundaries (needs the embedding model: without it, exit 2; "
                             "default: off)")

    submit = sub.add_parser(
        "submit", help="enqueue a document on the worker fleet",
        epilog="exit status: 0 submitted (with --wait: finished); 1 failed or timed out; 2 bad input, "
               "config or settings; 3 broker/store unreachable; 4 Redis full.",
    )
    _add_input(submit)
    submit.add_argument("--document-id", metavar="ID",
                        help=DOCUMENT_ID_HELP.format(stdin="; stdin: the input must carry one, or give this"))
    submit.add_argument("--wait", action="store_true", help="wait for the result and print it")
    submit.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                        help="with --wait: give up after this many seconds, exit 1 (default: 300)")
    _add_config_flags(submit, "semantic boundaries: route to the semantic queue (default: off)")

    result = sub.add_parser(
        "result", help="print a stored result (exit 1 if pending or failed)",
        epilog="exit status: 0 printed; 1 pending, failed or unknown; 2 bad id or settings; "
               "3 broker/store unreachable.",
    )
    result.add_argument("document_id", metavar="DOCUMENT_ID",
                        help="the document id submit printed (--document-id, else the input's, else its file "
                             "name)")
    result.add_argument("--diff", action="store_true",
                        help="print the chunk ids added, removed and unchanged against the document's "
                             "previous result (docs/reingestion.md) instead of the result; null when none")

    metrics = sub.add_parser(
        "metrics", help="queue depths and held messages as Prometheus text (docs/operations.md, Autoscaling)",
        epilog="exit status: 0 printed (with --port: served until stopped); 2 invalid settings; 3 broker "
               "unreachable.",
    )
    from cli.metrics import add_arguments as add_metrics_arguments

    add_metrics_arguments(metrics)

    search = sub.add_parser(
        "search", help="the chunks nearest a question, from the vector store (docs/vectors.md)",
        epilog="exit status: 0 printed; 1 nothing found; 2 no store configured, bad settings or input; "
               "3 store unreachable.",
    )
    from cli.search import add_arguments as add_search_arguments

    add_search_arguments(search)
    return parser


# --- logging -------------------------------------------------------------------------------


class OneLineHandler(logging.Handler):
    """Library log records of WARNING and above as the command's own stderr lines, once each."""

    def __init__(self, command: str, prog: str = "longparser") -> None:
        super().__init__(logging.WARNING)
        self.command = command
        self.prog = prog
        self.seen: set[tuple[str, ...]] = set()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            args = record.args if isinstance(record.args, tuple) else (record.args,) if record.args else ()
            key = tuple(map(repr, args)) or (record.getMessage(),)
            if key in self.seen:
                return
            self.seen.add(key)
            message = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                message += f" ({type(exc).__name__}: {exc})"
            # sys.stderr at emit time, not at set-up: the stream may have been replaced since.
            print(f"{self.prog} {self.command}: {record.levelname.lower()}: {' '.join(message.split())}",
                  file=sys.stderr)
        except Exception:  # a broken record must not break the command
            self.handleError(record)


@contextmanager
def cli_logging(command: str, prog: str = "longparser") -> Iterator[OneLineHandler]:
    """Print library warnings as one-line messages of ``prog command`` while the command runs."""
    handler = OneLineHandler(command, prog)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "chunk":
        from cli.chunk import run_chunk

        return run_chunk(args)
    if args.command == "submit":
        from cli.submit import run_submit

        return run_submit(args)
    if args.command == "result":
        from cli.submit import run_result

        return run_result(args)
    if args.command == "metrics":
        from cli.metrics import run_metrics

        return run_metrics(args)
    if args.command == "search":
        from cli.search import run_search

        return run_search(args)
    raise AssertionError(args.command)  # argparse rejects unknown commands


def moved_command(argv: Sequence[str]) -> str | None:
    """The one-line error for an evaluation command asked of ``longparser``, else None."""
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    if command not in MOVED_TO_LPEVAL:
        return None
    return (f"longparser: error: '{command}' is not installed with the worker; from a source checkout run "
            f"'python -m lpeval {command} ...' (docs/retrieval-benchmark.md)")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    moved = moved_command(argv)
    if moved is not None:
        print(moved, file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    with cli_logging(args.command):
        return _dispatch(args)


if __name__ == "__main__":
    sys.exit(main())
