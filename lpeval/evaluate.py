"""``lpeval evaluate``: the production boundary detector scored on a labelled file.

``python -m lpeval evaluate FILE [--method NAME] [--threshold T] [--pair-threshold P]
[--boundary-cost C] [-c CONFIG] [--json]``: the method and its parameters are the
``semantic_*`` fields of a chunking config (``-c`` first, then the flags; defaults as in
:class:`schemas.ChunkingConfig`), so a configuration is scored exactly as a request with that
config would chunk. The metrics and their conventions are documented in
:mod:`lpeval.evaluation`. The encoder is the pinned model run by the settings' backend
(``LONGPARSER_ENCODER_BACKEND``, default ``torch``) with their thread count, as ``longparser
chunk`` loads it, so the report scores the vectors that runtime produces.

Exit status: 0 report printed; 2 bad input (unreadable file, wrong shape, boundary out of
range, a parameter outside its bounds, an invalid config, invalid ``LONGPARSER_*`` settings),
with one line on stderr; 3 the encoder cannot be loaded (the message says what to install).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cli.json_input import config_fields, load_json
from config.settings import SettingsError, get_settings
from loaders.encoder import load_encoder
from loaders.pinned_model import EncoderUnavailable
from loaders.resources import ResourceSpec
from longparser.boundary_methods import resolve
from longparser.resources import Encoder
from lpeval.evaluation import (
    LabelledDocument,
    LabelledInputError,
    evaluate_predictions,
    parse_labelled,
    predict_boundaries,
)
from schemas import ChunkingConfig, InputError, parse_config

# Command-line flag -> ChunkingConfig field (the method's parameters live in the config).
PARAMETER_FLAGS = {
    "threshold": "semantic_threshold",
    "pair_threshold": "semantic_pair_threshold",
    "boundary_cost": "semantic_boundary_cost",
}


class CommandError(Exception):
    """A failure the command reports as one line, with its exit status."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def method_parameters(config: ChunkingConfig) -> dict[str, Any]:
    """The method that runs (an alias resolved) and its parameters, as the report prints them."""
    name = resolve(config.semantic_method)
    if name == "adjacent":
        return {"method": name, "threshold": config.semantic_threshold}
    own = {k: v for k, v in config.semantic_method_args().items() if k != "method"}
    return {"method": name, **own}


def _fmt(value: float | None) -> str:
    return "   -  " if value is None else f"{value:6.3f}"


def format_report(report: dict[str, Any]) -> str:
    """Readable table: per document, then per kind and overall, then one-topic documents."""
    params = "  ".join(f"{k} {v}" for k, v in report["parameters"].items() if k != "method")
    model = f"model {report['model']}  sha256 {report['weights_sha256']}"
    lines = [f"method {report['method']}  {params}  {model}"]
    lines.append("")
    lines.append(f"{'document':<28} {'kind':<14} reference -> predicted")
    for s in report["documents"]:
        lines.append(f"{s['id']:<28} {s['kind']:<14} {s['reference']} -> {s['predicted']}")
    unsegmented = report["no_boundary_documents"]
    by_kind = ", ".join(
        f"{kind} {g['boundaries']} in {g['documents']}" for kind, g in unsegmented["kinds"].items()
    )
    lines += [
        "",
        f"boundaries in one-topic documents (reference has none): {unsegmented['boundaries']} in "
        f"{unsegmented['documents']} documents, {unsegmented['documents_with_boundaries']} cut"
        + (f" ({by_kind})" if by_kind else ""),
        "",
        f"{'group':<16} docs  tp  fp  fn  precision recall     f1     pk windowdiff",
    ]
    for name, g in [*report["kinds"].items(), ("overall", report["overall"])]:
        lines.append(
            f"{name:<16} {g['documents']:>4} {g['tp']:>3} {g['fp']:>3} {g['fn']:>3}     "
            f"{_fmt(g['precision'])} {_fmt(g['recall'])} {_fmt(g['f1'])} {_fmt(g['pk'])}     "
            f"{_fmt(g['windowdiff'])}"
        )
    return "\n".join(lines)


def _bounds_error(flag: str, field: str, value: float) -> str | None:
    """The message for a parameter outside the bounds its config field declares, else None."""
    low = high = None
    for rule in ChunkingConfig.model_fields[field].metadata:
        low = getattr(rule, "ge", low)
        high = getattr(rule, "le", high)
    if (low is not None and value < low) or (high is not None and value > high):
        return f"--{flag.replace('_', '-')} must be within [{low:g}, {high:g}], got {value}"
    return None


def build_config(args: argparse.Namespace) -> ChunkingConfig:
    """``-c`` CONFIG (a file or an inline object, as ``longparser chunk`` reads it) with the method
    flags over it, validated.

    Raises:
        CommandError: status 2, naming the flag or the config problem.
    """
    fields: dict[str, Any] = {}
    if getattr(args, "config", None):
        try:
            fields = config_fields(args.config)
        except InputError as exc:
            raise CommandError(2, str(exc)) from None
    if getattr(args, "method", None) is not None:
        fields["semantic_method"] = args.method
    for flag, field in PARAMETER_FLAGS.items():
        value = getattr(args, flag, None)
        if value is None:
            continue
        message = _bounds_error(flag, field, value)
        if message:
            raise CommandError(2, message)
        fields[field] = value
    try:
        return parse_config(fields)
    except InputError as exc:  # one line, the same messages as ``longparser chunk``
        raise CommandError(2, str(exc)) from None


def read_labelled(path: str) -> list[LabelledDocument]:
    """Parse the labelled file. Raises: CommandError (status 2)."""
    try:
        data = load_json(path, "labelled file")
    except InputError as exc:
        raise CommandError(2, str(exc)) from None
    try:
        return parse_labelled(data)
    except LabelledInputError as exc:
        raise CommandError(2, f"{path}: {exc}") from None


def encoder_for(args: argparse.Namespace) -> Encoder:
    """The pinned encoder (``--model-path``, else the settings', else the model package's), run by
    the settings' ``encoder_backend`` (``LONGPARSER_ENCODER_BACKEND``) with their thread count, so
    a configuration is scored on the runtime a worker with those settings embeds with.

    Raises:
        CommandError: status 2 for invalid settings, 3 when the model or the backend cannot be
            loaded.
    """
    try:
        spec = ResourceSpec.from_settings(get_settings())
    except SettingsError as exc:
        raise CommandError(2, f"settings (LONGPARSER_* environment / .env): {exc}") from None
    try:
        return load_encoder(args.model_path or spec.model_path, threads=spec.threads,
                            backend=spec.encoder_backend)
    except EncoderUnavailable as exc:
        raise CommandError(3, str(exc)) from None


def fail(command: str, error: CommandError) -> int:
    print(f"lpeval {command}: error: {error}", file=sys.stderr)
    return error.status


def run_evaluate(args: argparse.Namespace) -> int:
    """CLI entry point; see the module docstring for the exit statuses."""
    try:
        config = build_config(args)
        documents = read_labelled(args.labelled)
        encoder = encoder_for(args)
    except CommandError as exc:
        return fail("evaluate", exc)
    parameters = method_parameters(config)
    predicted = predict_boundaries(
        documents, encoder, config.semantic_threshold, **config.semantic_method_args()
    )
    report = {
        "method": parameters["method"],
        "requested_method": config.semantic_method,
        "parameters": parameters,
        **({"threshold": config.semantic_threshold} if parameters["method"] == "adjacent" else {}),
        "model": encoder.name,
        "weights_sha256": encoder.weights_sha256,
        **evaluate_predictions(documents, predicted),
    }
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0
