"""``longparser evaluate``: the production boundary detector scored on a labelled file.

The metrics and their conventions are documented in :mod:`longparser.evaluation`.

Exit status: 0 report printed; 2 bad input (unreadable file, wrong shape, boundary out of
range, threshold outside [0, 1], invalid ``LONGPARSER_*`` settings); 3 the encoder cannot be
loaded (the message says what to install).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from loaders.encoder import load_encoder
from loaders.pinned_model import EncoderUnavailable
from longparser.evaluation import LabelledInputError, evaluate_predictions, parse_labelled, predict_boundaries


def _fmt(value: float | None) -> str:
    return "   -  " if value is None else f"{value:6.3f}"


def format_report(report: dict[str, Any]) -> str:
    """Readable table: per document, then per kind and overall."""
    lines = [f"threshold {report['threshold']}  model {report['model']}  sha256 {report['weights_sha256']}"]
    lines.append("")
    lines.append(f"{'document':<28} {'kind':<14} reference -> predicted")
    for s in report["documents"]:
        lines.append(f"{s['id']:<28} {s['kind']:<14} {s['reference']} -> {s['predicted']}")
    lines += ["", f"{'group':<16} docs  tp  fp  fn  precision recall     f1     pk windowdiff"]
    groups = [*report["kinds"].items(), ("overall", report["overall"])]
    for name, g in groups:
        lines.append(
            f"{name:<16} {g['documents']:>4} {g['tp']:>3} {g['fp']:>3} {g['fn']:>3}     "
            f"{_fmt(g['precision'])} {_fmt(g['recall'])} {_fmt(g['f1'])} {_fmt(g['pk'])}     "
            f"{_fmt(g['windowdiff'])}"
        )
    return "\n".join(lines)


def _configured_model_path() -> str | None:
    """``LONGPARSER_MODEL_PATH`` from the settings, when the settings module is importable.

    Raises:
        ValueError: the ``LONGPARSER_*`` environment does not validate.
    """
    try:
        from config.settings import get_settings
    except ImportError:
        return None
    value = getattr(get_settings(), "model_path", None)  # pydantic's ValidationError is a ValueError
    return None if value in (None, "") else str(value)


def _fail(status: int, message: str) -> int:
    print(f"longparser evaluate: error: {message}", file=sys.stderr)
    return status


def run_evaluate(args: argparse.Namespace) -> int:
    """CLI entry point; see the module docstring for the exit statuses."""
    if not 0.0 <= args.threshold <= 1.0:
        return _fail(2, f"--threshold must be within [0, 1], got {args.threshold}")
    try:
        with open(args.labelled, encoding="utf-8") as handle:
            documents = parse_labelled(json.load(handle))
    except (OSError, UnicodeDecodeError) as exc:
        return _fail(2, f"cannot read {args.labelled}: {exc}")
    except json.JSONDecodeError as exc:
        return _fail(2, f"{args.labelled} is not valid JSON: {exc}")
    except LabelledInputError as exc:
        return _fail(2, f"{args.labelled}: {exc}")
    try:
        model_path = args.model_path or _configured_model_path()
    except ValueError as exc:
        return _fail(2, f"invalid LONGPARSER_* settings: {exc}")
    try:
        encoder = load_encoder(model_path)
    except EncoderUnavailable as exc:
        return _fail(3, str(exc))
    report = {
        "threshold": args.threshold,
        "model": encoder.name,
        "weights_sha256": encoder.weights_sha256,
        **evaluate_predictions(documents, predict_boundaries(documents, encoder, args.threshold)),
    }
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0
