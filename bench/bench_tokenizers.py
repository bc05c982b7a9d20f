#!/usr/bin/env python3
"""Strict counting with a 100k-vocabulary BPE tokenizer against the default mode, same process.

The tokenizer is built in this run (nothing can be downloaded): a byte-level BPE with cl100k's
pre-tokenizer pattern, trained with the ``tokenizers`` library to ``--vocab`` tokens on a
diverse corpus (the Python standard library's sources and this repository's fixture
documents, a reserved evaluation document left out), loaded both as a Hugging Face
``tokenizer.json`` and, its ranks written in tiktoken's format, as a tiktoken encoding, each
through ``loaders.tokenizers`` exactly as a worker loads a declared tokenizer.

Two 10k-block streams: ``gen_blocks``' stream (its small topic vocabularies), and a diverse
stream of the same shape whose texts are lines of standard-library files the tokenizer was not
trained on (identifiers, numbers, prose, code: many distinct words). Each timed strict run
starts with a cold memo (the counter forgets everything it remembered, as a freshly started
worker has), the default mode and the strict modes alternated round by round, best CPU time of
each; the pinned model's counter is shown beside them (warm, as ``make bench`` measures it).
Two more rows per counter say where the cold run's time goes: "segments known" (the words and
segments of the stream remembered, not its lines and texts: what tokenizing them costs is gone)
and "all remembered" (every text counted before: what is left is the engine's strict work and
memo lookups, the most any exact counter of this kind could reach).

Config: ``max_tokens`` 256, ``min_tokens`` 50, strict, the tokenizer as ``token_counter``.

Usage: .venv/bin/python bench/bench_tokenizers.py [--vocab 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path[:0] = [str(BENCH_DIR), str(ROOT)]

import gen_blocks  # noqa: E402 - the copy beside this file

from tests.tokenizer_builds import (  # noqa: E402
    CL100K_PATTERN,
    repository_texts,
    stdlib_texts,
    train_byte_level_bpe,
    write_hf_model,
    write_tiktoken,
)

STRICT = {"max_tokens": 256, "min_tokens": 50, "strict_max_tokens": True}
TRAIN_CHARS = 40_000_000


def corpus(train_chars: int = TRAIN_CHARS, held_out_share: float = 0.2) -> tuple[list[str], list[str]]:
    """Training texts, and held-out standard-library files for the diverse stream."""
    files = list(stdlib_texts(train_chars))
    held = files[:: int(1 / held_out_share)]
    train = [text for index, text in enumerate(files) if index % int(1 / held_out_share)]
    return [*train, *repository_texts()], held


def diverse_stream(n: int, held_out: list[str], seed: int) -> list[dict[str, Any]]:
    """``gen_blocks``' stream of ``n`` blocks with every text replaced by held-out lines of
    about the same length (tables keep their shape, cells get words of those lines)."""
    rng = random.Random(seed)
    lines = [line.strip() for text in held_out for line in text.splitlines() if len(line.strip()) > 3]
    words = [word for line in lines[:200_000] for word in line.split()]
    blocks = gen_blocks.generate(n, seed)
    for block in blocks:
        if block.get("text"):
            wanted, parts = len(block["text"]), []
            while sum(map(len, parts)) < wanted:
                parts.append(rng.choice(lines))
            block["text"] = " ".join(parts)
        for cell in (block.get("table") or {}).get("cells", []):
            if cell.get("text"):
                cell["text"] = " ".join(rng.choice(words) for _ in range(len(cell["text"].split())))
    return blocks


def measure(blocks: list[dict[str, Any]], counters: dict[str, Any], resources: Any, repeat: int
            ) -> dict[str, float]:
    """Best CPU seconds of the default mode and of strict mode with each counter: from a cold
    memo, again with the words and segments of the stream remembered but not its texts
    (what a worker has after documents of the same kind: ``+vocab``; whole texts and lines
    forgotten), and with everything remembered (``+all``: the same stream counted just before)."""
    from longparser import chunk_blocks

    best: dict[str, float] = {}
    for _ in range(repeat):
        start = time.process_time()
        chunk_blocks(blocks, None, resources)
        best["default"] = min(best.get("default", float("inf")), time.process_time() - start)
        for name, counter in counters.items():
            config = {**STRICT, "token_counter": name}
            runs = [(name, getattr(counter, "forget", None))]
            if hasattr(counter, "lines"):  # texts and lines forgotten, words and segments kept
                runs.append((f"{name} +vocab", lambda c=counter: (c.texts.clear(), c.lines.clear())))
                runs.append((f"{name} +all", None))
            for label, reset in runs:
                if reset is not None:
                    reset()
                start = time.process_time()
                chunk_blocks(blocks, config, replace(resources, counters=counters))
                best[label] = min(best.get(label, float("inf")), time.process_time() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", type=int, default=100_000)
    parser.add_argument("--blocks", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=gen_blocks.DEFAULT_SEED)
    parser.add_argument("--train-chars", type=int, default=TRAIN_CHARS,
                        help="standard-library characters read for training (%(default)s)")
    args = parser.parse_args(argv)

    from loaders.tokenizer import load_model_counter
    from loaders.tokenizers import load_path
    from longparser.resources import Resources

    started = time.perf_counter()
    train, held_out = corpus(args.train_chars)
    tokenizer = train_byte_level_bpe(train, args.vocab, CL100K_PATTERN)
    trained = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as directory:
        hf_dir = write_hf_model(tokenizer, Path(directory) / "hf", window=8191)
        declaration = write_tiktoken(tokenizer, Path(directory) / "tiktoken", window=8191)
        counters = {"bpe-hf": load_path(str(hf_dir)), "bpe-tiktoken": load_path(str(declaration))}
    print(f"tokenizer: byte-level BPE, cl100k pattern, {tokenizer.get_vocab_size():,} tokens, trained on "
          f"{sum(map(len, train)) / 1e6:.1f} M characters in {trained:.0f} s; counters: "
          + ", ".join(f"{name} {type(counter).__name__}" for name, counter in counters.items()))
    model = load_model_counter()
    resources = Resources(model_counter=model)
    streams = {"gen_blocks": gen_blocks.generate(args.blocks, args.seed),
               "diverse": diverse_stream(args.blocks, held_out, args.seed)}
    print(f"{'stream':>10}  {'mode':>38}  {'CPU s':>6}  {'blocks/s':>9}  {'of default':>10}")
    for stream, blocks in streams.items():
        from longparser import chunk_blocks

        chunk_blocks(blocks[:500], {**STRICT, "token_counter": "model"}, resources)  # imports, model memo
        timed = {"model": model, **counters}
        best = measure(blocks, timed, resources, args.repeat)
        for mode, seconds in best.items():
            label = {"default": "default", "model": "strict, pinned model (warm)"}.get(mode) or (
                f"strict, {mode.split()[0]} (segments known)" if mode.endswith("+vocab")
                else f"strict, {mode.split()[0]} (all remembered)" if mode.endswith("+all")
                else f"strict, {mode} (cold memo)")
            rate, share = len(blocks) / seconds, best["default"] / seconds
            print(f"{stream:>10}  {label:>38}  {seconds:>6.3f}  {rate:>9,.0f}  {share:>10.0%}")
    load = os.getloadavg()
    print(f"(best of {args.repeat}, CPU time, same process; goal: strict with the 100k BPE at least 40% of "
          f"default's blocks/s on the 10k stream; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
