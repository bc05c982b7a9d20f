#!/usr/bin/env python3
"""Engine profiling for optimisation work: CPU time per stage, A/B between two source trees.

Every measurement uses CPU time (``time.process_time``): the development host is shared, so
wall time says more about the neighbours than about the engine. With ``--cpu-stages``,
``time.perf_counter`` is replaced by ``time.process_time`` inside the measuring child so the
engine's own ``stats.timings_ms`` are per-stage CPU milliseconds too; off by default, because
``process_time`` is a system call (~1 us here) and dict input times every block's validation.

``--root`` selects the source tree imported (``longparser`` and ``schemas`` from that
directory), so a snapshot of the code before a change and the working tree can be measured
in the same run, alternately, best of several repeats.

Resources (``--res``):

* ``words``: a word list (``/usr/share/dict/words`` when present, else a deterministic
  generated 100k-word frozenset holding gen_blocks' vocabulary) and a fake language ID.
  The headline configuration: the original chunker's scoring was word list + Python code;
  fastText is a separate C++ cost, reported separately.
* ``words-nolid``: the same word list, no language ID.
* ``fasttext``: the same word list and the real fastText model
  (``longparser.resources.load_language_id()``).
* ``none``: no resources.

Commands:
    profile_engine.py time    --root R --n 10000 --input blocks --res words --repeat 5
    profile_engine.py compare --roots /tmp/base . --n 10000 --input blocks --res words
    profile_engine.py rss     --root R --n 100000 --input dicts --res words
    profile_engine.py dump    --root R --out /tmp/prefix     # outputs for equivalence checks
    profile_engine.py cprofile --root R --n 10000 --input blocks --res words
    profile_engine.py validation --root R --n 10000     # whole-stream validation: models vs mirror
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
DICT_WORDS = Path("/usr/share/dict/words")
GENERATED_WORDS = 100_000
# Non-default options for the equivalence dumps: overlap, pipe tables, banding, small budgets.
VARIANT_CONFIG = {"table_chunk_format": "pipe", "overlap_blocks": 2, "max_tokens": 200, "min_tokens": 50,
                  "exclude_headers_footers": False, "wide_table_col_threshold": 8}


class FakeLanguageId:
    """Deterministic stand-in for fastText: the confidence is a function of the text sent.

    Any change in what the engine sends to the identifier changes the outputs, so the
    equivalence dumps catch it.
    """

    def predict(self, text: str) -> tuple[str, float]:
        return "en", 0.5 + (zlib.crc32(text.encode("utf-8")) % 500) / 1000.0


def _import_root(root: str) -> None:
    """The engine of checkout ``root`` with its own producer client (the block validator lives
    there, before the editable install's copy); the stream generator is always this checkout's."""
    checkout = Path(root).resolve()
    sys.path[:0] = [str(checkout), str(checkout / "client"), str(BENCH_DIR)]


def word_list() -> frozenset[str]:
    """The dictionary: the system's when present, else gen_blocks' vocabulary + generated words."""
    if DICT_WORDS.is_file():
        return frozenset(w.strip().lower() for w in DICT_WORDS.read_text(errors="ignore").split())
    import gen_blocks

    vocab = {w.lower() for w in gen_blocks.FUNCTION_WORDS}
    for words in gen_blocks.TOPICS.values():
        vocab.update(w.lower() for w in words)
    rng = random.Random(7)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    while len(vocab) < GENERATED_WORDS:
        vocab.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 11))))
    return frozenset(vocab)


def resources(kind: str) -> Any:
    from loaders.quality import load_language_id
    from longparser.resources import Resources

    if kind == "none":
        return Resources()
    if kind == "words":
        return Resources(word_list=word_list(), language_id=FakeLanguageId())
    if kind == "words-nolid":
        return Resources(word_list=word_list())
    if kind == "fasttext":
        lid = load_language_id()
        if lid is None:
            raise SystemExit("fastText language ID unavailable")
        return Resources(word_list=word_list(), language_id=lid)
    raise SystemExit(f"unknown resources {kind!r}")


def _inputs(n: int, kind: str) -> list[Any]:
    import gen_blocks
    from pydantic import TypeAdapter

    from schemas import Block

    blocks = gen_blocks.generate(n)
    return TypeAdapter(list[Block]).validate_python(blocks) if kind == "blocks" else blocks


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Best-of-``repeat`` CPU time of chunk_blocks in this process, with per-stage CPU ms."""
    if args.cpu_stages:
        time.perf_counter = time.process_time  # stats.timings_ms become CPU ms (this process only)
    _import_root(args.root)
    from longparser import chunk_blocks

    res = resources(args.res)
    chunk_blocks(_inputs(500, args.input), None, res)  # warm-up: imports, regex compilation
    blocks = _inputs(args.n, args.input)
    rss_input = _rss_mb()
    best, timings, chunks = float("inf"), {}, 0
    for _ in range(args.repeat):
        start = time.process_time()
        result = chunk_blocks(blocks, None, res)
        cpu = time.process_time() - start
        if cpu < best:
            best, timings, chunks = cpu, result.stats.timings_ms, len(result.chunks)
        del result
    return {"root": args.root, "n": args.n, "input": args.input, "res": args.res, "cpu_s": best,
            "blocks_per_cpu_s": args.n / best, "chunks": chunks, "timings_ms": timings,
            "rss_input_mb": rss_input, "rss_peak_mb": _rss_mb()}


def _child(args: argparse.Namespace, root: str) -> dict[str, Any]:
    command = [sys.executable, __file__, "time", "--root", root, "--n", str(args.n), "--input", args.input,
               "--res", args.res, "--repeat", str(args.repeat)]
    command += ["--cpu-stages"] if args.cpu_stages else []
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"child failed for {root}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare(args: argparse.Namespace) -> None:
    """Alternate fresh children per root for ``rounds`` rounds; keep each root's best."""
    best: dict[str, dict[str, Any]] = {}
    for _ in range(args.rounds):
        for root in args.roots:
            fig = _child(args, root)
            if root not in best or fig["cpu_s"] < best[root]["cpu_s"]:
                best[root] = fig
    base = best[args.roots[0]]["cpu_s"]
    for root in args.roots:
        fig = best[root]
        stages = " ".join(f"{k}={v:.0f}" for k, v in fig["timings_ms"].items())
        print(f"{root:<16} n={fig['n']} {fig['input']}/{fig['res']}: {fig['cpu_s'] * 1000:8.0f} ms CPU "
              f"{fig['blocks_per_cpu_s']:>9,.0f} blocks/s  x{base / fig['cpu_s']:.2f}  "
              f"peak {fig['rss_peak_mb']:.0f} MB  [{stages}]")


def dump(args: argparse.Namespace) -> None:
    """Outputs (stats.timings_ms removed): 1k/10k streams, fake resources and none, one variant config."""
    _import_root(args.root)
    from longparser import chunk_blocks

    runs = [(n, kind, None) for n in (1_000, 10_000) for kind in ("words", "none")]
    runs.append((10_000, "words", VARIANT_CONFIG))
    for n, kind, config in runs:
        blocks = _inputs(n, "dicts")
        result = chunk_blocks(blocks, config, resources(kind), document_id="doc")
        data = result.model_dump(mode="json")
        data["stats"].pop("timings_ms")
        path = f"{args.out}_{n}_{kind}{'_variant' if config else ''}.json"
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(data, handle, ensure_ascii=False, sort_keys=True)
        print(path, len(data["chunks"]))


def cprofile(args: argparse.Namespace) -> None:
    import cProfile
    import pstats

    _import_root(args.root)
    from longparser import chunk_blocks

    res = resources(args.res)
    chunk_blocks(_inputs(500, args.input), None, res)
    blocks = _inputs(args.n, args.input)
    profiler = cProfile.Profile(time.process_time)
    profiler.runcall(chunk_blocks, blocks, None, res)
    pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.top)


def validation(args: argparse.Namespace) -> None:
    """CPU time to validate the whole stream at once (held, as a ChunkRequest holds it): into
    Block models, and (where the tree has it) into the TypedDict mirror, best of ``repeat``."""
    import gc

    _import_root(args.root)
    from pydantic import TypeAdapter

    from schemas import Block

    blocks = _inputs(args.n, "dicts")
    adapters = {"Block models": TypeAdapter(list[Block])}
    try:
        from schemas.block_dicts import BlockDict
    except ImportError:
        pass
    else:
        adapters["dict mirror"] = TypeAdapter(list[BlockDict])
    gc.disable()  # as in chunk_blocks; the collector would otherwise scan the growing list
    best: dict[str, float] = {}
    for _ in range(args.repeat):
        for name, adapter in adapters.items():
            start = time.process_time()
            adapter.validate_python(blocks)
            best[name] = min(best.get(name, float("inf")), time.process_time() - start)
    print(f"{args.root}: n={args.n} " + ", ".join(f"{name} {t * 1000:.1f} ms" for name, t in best.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("time", "compare", "rss", "dump", "cprofile", "validation"))
    parser.add_argument("--root", default=str(BENCH_DIR.parent))
    parser.add_argument("--roots", nargs="+", default=[str(BENCH_DIR.parent)])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--input", choices=("blocks", "dicts"), default="blocks")
    parser.add_argument("--res", choices=("words", "words-nolid", "fasttext", "none"), default="words")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default="/tmp/profile_engine")
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--top", type=int, default=35)
    parser.add_argument("--cpu-stages", action="store_true", help="stats.timings_ms in CPU time (see doc)")
    args = parser.parse_args()
    if args.command in ("time", "rss"):
        if args.command == "rss":
            args.repeat = 1
        print(json.dumps(measure(args)))
    elif args.command == "compare":
        compare(args)
    elif args.command == "dump":
        dump(args)
    elif args.command == "validation":
        validation(args)
    else:
        cprofile(args)


if __name__ == "__main__":
    main()
