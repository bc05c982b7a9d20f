"""A smoke run of ``bench/bench_tokenizers.py`` (the full run is ``make bench``, outside CI):
a small tokenizer and stream, every row printed."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def test_the_tokenizer_bench_prints_its_rows(capsys: Any) -> None:
    bench = runpy.run_path(str(ROOT / "bench" / "bench_tokenizers.py"))
    small = ["--vocab", "600", "--blocks", "300", "--repeat", "1", "--train-chars", "300000"]
    assert bench["main"](small) == 0
    out = capsys.readouterr().out
    assert "counters: bpe-hf SegmentCounter, bpe-tiktoken SegmentCounter" in out
    for stream in ("gen_blocks", "diverse"):
        for mode in ("default", "strict, bpe-hf (cold memo)", "strict, bpe-tiktoken (cold memo)",
                     "strict, bpe-tiktoken (segments known)", "strict, bpe-tiktoken (all remembered)"):
            rows = [line for line in out.splitlines() if line.split()[:1] == [stream]]
            assert any(mode in row for row in rows), (stream, mode)
