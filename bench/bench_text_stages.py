#!/usr/bin/env python3
"""Micro-benchmark of the two per-text stages: equation detection and chunk quality scoring.

Times, on gen_blocks' 10k stream (``bench/gen_blocks.py`` or ``$GEN_BLOCKS_DIR``):

* ``looks_like_equation`` (what the pipeline calls) and ``equation_score`` over every paragraph
  text (with its previous block's text), split into prose and equation-like paragraphs;
* ``score_chunk`` over synthetic ~400-word chunk texts (consecutive non-table blocks of a
  section), without resources, with a word list, and with a word list + a constant language
  identifier (fastText itself is not what is measured here);

each against a naive reference written below the way the original was (per-character Python
loops, whole-text regex scans), reporting per-call microseconds and the speed ratio. The naive
references implement the same definitions, so the run also checks that both agree (equation
decisions, noise counts, tokens) and reports any disagreement.

Usage:
    .venv/bin/python bench/bench_text_stages.py [--blocks 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, os.environ.get("GEN_BLOCKS_DIR", str(Path(__file__).resolve().parent)))

import gen_blocks

from longparser import equations, quality

# ---------------------------------------------------------------------------------------------
# Naive references (per-character loops; the shape of the original implementation)
# ---------------------------------------------------------------------------------------------

_GREEK = set(equations._GREEK_LETTERS)
_MATH_EXTRA = set(equations._EXTRA_MATH)
_PHRASES = ("defined as", "given by", "expressed as", "computed as", "calculated as", "written as",
            "denoted by", "denoted as")


def naive_equation_score(text: str, previous: str | None) -> float:
    """Per-character density and Greek counts; whole-text regex scans for patterns."""
    n_math = n_greek = non_space = 0
    for ch in text:
        if ch.isspace():
            continue
        non_space += 1
        if ch in _GREEK:
            n_greek += 1
            n_math += 1
        elif ch in _MATH_EXTRA or (ord(ch) > 127 and unicodedata.category(ch) == "Sm"):
            n_math += 1
    if n_math and not any(ch.isalnum() for ch in text):
        return 0.0
    density = n_math / non_space if non_space else 0.0
    score = 2.0 if density > 0.05 else 1.0 if density > 0.01 else 0.0
    kinds = [
        r"(?<![\w\\])[A-Za-z]_(?:\{[^{}\n]{1,16}\}|[A-Za-z0-9]{1,3}\b)|[A-Za-z0-9)\]}]\^\w",
        r"\b[A-Za-z]\w{0,3}\s*\([^()=\n]{1,30}\)\s*=(?!=)|(?<![\w.])[A-Za-z](?:_\w+)?\s*=\s*(?![\d.,]+\b)\S",
        r"[∑∏∫∮√]|\\(?:sum|prod|int|oint|sqrt)\b",
        r"\b(?:sqrt|log|ln|exp|sin|cos|tan|tanh|sigmoid|softmax|argmax|argmin|max|min|det)\(",
        r"\\[A-Za-z]+",
        r"\b[A-Za-z]\d{1,2}\b",
        r"[α-ωΑ-Ω]\s*,\s*[α-ωΑ-Ω]",
        r"(?<![\w.])[A-Za-z]\s*[=+*^<>−±×·≤≥]\s*[A-Za-z](?!\w)"
        r"|(?<![\w.])[A-Za-z](?:[ \t]+[A-Za-z]\b)+\s*[=+*<>]",
    ]
    hits = sum(1 for k in kinds if re.search(k, text))
    score += 2.0 if hits >= 3 else 1.5 if hits == 2 else 0.5 if hits == 1 else 0.0
    if len(text.strip()) < 80 and re.search(r"(?<![\w.])[A-Za-z]\s*[=+*^<>−±×·≤≥](?!\s*[\d.]+\b)", text):
        score += 1.0
    low = text.lower()
    if previous and previous.lower().rstrip().rstrip(":,").rstrip().endswith(_PHRASES):
        score += 1.5
    if any(p in low for p in _PHRASES) or re.search(r"\bwhere\s+\S{1,3}\s+(?:is|denotes)\b", low):
        score += 1.0
    score += 1.5 if n_greek >= 2 else 0.5 if n_greek == 1 else 0.0
    return score


_NAIVE_OK = set(".,;:!?'\"()[]{}-/%&*+=<>@#$_|~") | set(quality._TYPOGRAPHIC)


def naive_noise(text: str) -> int:
    return sum(
        1 for ch in text
        if not (ch.isalnum() or ch.isspace() or ch in _NAIVE_OK or unicodedata.category(ch)[0] == "M")
    )


def naive_tokens(text: str) -> list[str]:
    out = []
    for word in text.lower().split():
        current = ""
        for ch in word + " ":
            if ch.isalpha():
                current += ch
            else:
                if len(current) > 1:
                    out.append(current)
                current = ""
    return out


def naive_score_chunk(text: str, sources: Sequence[tuple[float, int]], *, word_list: Any = None,
                      language_id: Any = None) -> tuple[float, dict[str, Any]]:
    total = sum(n for _, n in sources)
    conf = sum(c * n for c, n in sources) / total if total else sum(c for c, _ in sources) / len(sources)
    noise_pen = min(2 * naive_noise(text) / len(text), 0.5) if text else 0.0
    cov_pen = 0.0
    if word_list is not None:
        toks = naive_tokens(text)
        if toks:
            cov = sum(1 for t in toks if t in word_list) / len(toks)
            cov_pen = min(0.6 - cov, 0.3) if cov < 0.6 else 0.0
    lang_pen = 0.0
    if language_id is not None and len(text.strip()) >= 10:
        _, lc = language_id.predict(text.strip().replace("\n", " "))
        lang_pen = max(0.0, 0.8 - lc) * 0.5
    pen = min(noise_pen + cov_pen + lang_pen, 0.8)
    bonus = 0.05 if text.rstrip().endswith(quality._SENTENCE_ENDS) else 0.0
    return max(0.0, min(1.0, conf - pen + bonus)), {}


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------

class _ConstantLanguageId:
    def predict(self, text: str) -> tuple[str, float]:
        return "en", 0.93


def paragraph_pairs(blocks: list[dict]) -> list[tuple[str, str | None]]:
    pairs, previous = [], None
    for b in blocks:
        if b["type"] == "paragraph":
            pairs.append((b["text"], previous))
        previous = b["text"]
    return pairs


def chunk_inputs(blocks: list[dict], words: int = 400) -> list[tuple[str, list[tuple[float, int]]]]:
    """Greedy ~``words``-word chunks of consecutive text blocks of one section."""
    chunks, texts, sources, path, n = [], [], [], None, 0
    for b in blocks:
        if b["type"] in ("table", "header", "footer") or not b["text"].strip():
            continue
        if (tuple(b["hierarchy_path"]) != path or n >= words) and texts:
            chunks.append(("\n\n".join(texts), sources))
            texts, sources, n = [], [], 0
        path = tuple(b["hierarchy_path"])
        texts.append(b["text"])
        sources.append((b["confidence"]["overall"], len(b["text"])))
        n += len(b["text"].split())
    if texts:
        chunks.append(("\n\n".join(texts), sources))
    return chunks


_CLOCK = time.process_time  # CPU time: robust on a shared machine; --clock wall for perf_counter


def per_call_us(fn: Callable[[], None], calls: int, repeat: int) -> float:
    """Best of ``repeat`` runs, per call, in microseconds."""
    best = float("inf")
    for _ in range(repeat):
        t0 = _CLOCK()
        fn()
        best = min(best, _CLOCK() - t0)
    return best / calls * 1e6


def row(label: str, fast: float, naive: float | None) -> None:
    ratio = f"{naive / fast:6.1f}x" if naive else ""
    naive_s = f"{naive:9.2f}" if naive else " " * 9
    print(f"  {label:<44} {fast:8.2f} {naive_s} {ratio}")


# ---------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu: process CPU time (default; steadier when other work shares the CPUs)")
    args = ap.parse_args(argv)
    global _CLOCK
    _CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    blocks = gen_blocks.generate(args.blocks)
    pairs = paragraph_pairs(blocks)
    eq_pairs = [p for p in pairs if equations.looks_like_equation(*p)]
    prose = [p for p in pairs if not equations.looks_like_equation(*p)]
    chunks = chunk_inputs(blocks)
    vocab = frozenset(w for ws in gen_blocks.TOPICS.values() for w in ws)
    vocab |= frozenset(gen_blocks.FUNCTION_WORDS)
    lang = _ConstantLanguageId()
    rep = args.repeat

    print(f"{len(pairs)} paragraphs ({len(eq_pairs)} equation-like), {len(chunks)} chunks "
          f"(mean {sum(len(t.split()) for t, _ in chunks) / len(chunks):.0f} words)")
    print(f"  {'per call, microseconds (' + args.clock + ' time)':<44} {'fast':>8} {'naive':>9} ratio")

    def eq_run(fn: Callable[..., Any], ps: list) -> Callable[[], None]:
        return lambda: [fn(t, p) for t, p in ps] and None

    for label, ps in (("all paragraphs", pairs), ("prose paragraphs", prose), ("equation-like", eq_pairs)):
        naive = per_call_us(eq_run(naive_equation_score, ps), len(ps), rep)
        for fn in (equations.looks_like_equation, equations.equation_score):
            row(f"{fn.__name__}, {label}", per_call_us(eq_run(fn, ps), len(ps), rep), naive)

    for label, kw in (("no resources", {}), ("word list", {"word_list": vocab}),
                      ("word list + language id", {"word_list": vocab, "language_id": lang})):
        fast = per_call_us(lambda kw=kw: [quality.score_chunk(t, s, **kw) for t, s in chunks] and None,
                           len(chunks), rep)
        naive = per_call_us(lambda kw=kw: [naive_score_chunk(t, s, **kw) for t, s in chunks] and None,
                            len(chunks), rep)
        row(f"score_chunk, {label}", fast, naive)

    # Agreement between the fast code and the naive references.
    eq_diff = sum(
        equations.looks_like_equation(t, p) != (naive_equation_score(t, p) >= 2.0) for t, p in pairs
    )
    noise_diff = sum(quality.noise_count(t) != naive_noise(t) for t, _ in chunks)
    token_diff = sum(quality.alphabetic_tokens(t) != naive_tokens(t) for t, _ in chunks)
    score_diff = max(
        abs(quality.score_chunk(t, s, word_list=vocab, language_id=lang)[0]
            - naive_score_chunk(t, s, word_list=vocab, language_id=lang)[0])
        for t, s in chunks
    )
    print(f"agreement: equation decisions differ on {eq_diff}/{len(pairs)} paragraphs; noise counts "
          f"differ on {noise_diff}/{len(chunks)} chunks; tokens on {token_diff}/{len(chunks)}; "
          f"max score difference {score_diff:.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
