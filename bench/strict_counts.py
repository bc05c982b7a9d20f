#!/usr/bin/env python3
"""Chunk sizes in the pinned model's own tokens, default mode against strict mode.

The measurements of issue 9 (docs/strict.md): the sample document and the 3,000-block
generated stream, each chunk's emitted text (``embed_text`` with heading context) counted with
the model's tokenizer, special tokens included. Prints a Markdown table.

Usage: .venv/bin/python bench/strict_counts.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path[:0] = [str(BENCH_DIR), str(ROOT)]

import gen_blocks  # noqa: E402 - the copy beside this file

from loaders.tokenizer import load_model_counter  # noqa: E402
from longparser import Resources, chunk_blocks  # noqa: E402
from longparser.tokens import count  # noqa: E402
from schemas import parse_input  # noqa: E402

WINDOW = 256
STRICT = {"strict_max_tokens": True, "token_counter": "model"}


def main() -> int:
    counter = load_model_counter()
    resources = Resources(model_counter=counter)
    sample = parse_input(json.loads((ROOT / "examples" / "sample_document.json").read_text(encoding="utf-8")))
    stream = gen_blocks.generate(3000)
    runs = [
        ("sample document", sample.blocks, {}),
        ("sample document", sample.blocks, {"max_tokens": WINDOW, **STRICT}),
        ("3,000-block stream", stream, {}),
        ("3,000-block stream", stream, {"max_tokens": WINDOW, **STRICT}),
        ("3,000-block stream", stream, {"max_tokens": WINDOW, "min_tokens": 50}),
        ("3,000-block stream", stream, {"max_tokens": WINDOW, "min_tokens": 50, **STRICT}),
        ("3,000-block stream", stream,
         {"max_tokens": WINDOW, "min_tokens": 50, "heading_context": True, **STRICT}),
    ]
    print(f"| document | config | chunks | over {WINDOW} | median | max |")
    print("|---|---|---|---|---|---|")
    for name, blocks, config in runs:
        result = chunk_blocks(blocks, config, resources)
        sizes = sorted(count(counter, chunk.embed_text or chunk.text) for chunk in result.chunks)
        over = sum(1 for size in sizes if size > WINDOW)
        print(f"| {name} | `{json.dumps(config)}` | {len(sizes):,} | {over:,} ({over / len(sizes):.0%}) | "
              f"{sizes[len(sizes) // 2]:,} | {sizes[-1]:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
