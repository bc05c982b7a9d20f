"""Counts for README. Reads dev.json and test.json and counts; no model, no scoring."""
import json
from collections import Counter
from pathlib import Path

HERE = Path(__file__).parent
KINDS = ["one_topic", "clear_shift", "subtle_shift", "hard_negative"]
rows, allq = [], []
for split in ("dev", "test"):
    docs = json.loads((HERE / f"{split}.json").read_text(encoding="utf-8"))
    for k in KINDS + ["all"]:
        ds = [d for d in docs if k == "all" or d["kind"] == k]
        rows.append((split, k, len(ds), sum(len(d["blocks"]) for d in ds),
                     sum(len(d["boundaries"]) for d in ds),
                     sum(1 for d in ds if d["questions"]), sum(len(d["questions"]) for d in ds)))
    allq += [q["question"] for d in docs for q in d["questions"]]
tot = [r for r in rows if r[1] == "all"]
rows.append(("total", "all", *[sum(r[i] for r in tot) for i in range(2, 7)]))
print("| split | kind | docs | blocks | boundaries | docs with questions | questions |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(str(x) for x in r) + " |")

docs = [d for s in ("dev", "test") for d in json.loads((HERE / f"{s}.json").read_text(encoding="utf-8"))]
lens = Counter(len(d["blocks"]) for d in docs)
print("\nblocks per document:", dict(sorted(lens.items())))
print("documents with 2-3 blocks:", sum(v for k, v in lens.items() if k <= 3),
      "| 4-9:", sum(v for k, v in lens.items() if 4 <= k <= 9),
      "| 10-12:", sum(v for k, v in lens.items() if k >= 10))
segs = []
for d in docs:
    if d["boundaries"]:
        c = [0] + d["boundaries"] + [len(d["blocks"])]
        segs += [b - a for a, b in zip(c, c[1:])]
print("segment lengths in shift documents:", dict(sorted(Counter(segs).items())))
print("duplicate question texts:", len(allq) - len(set(allq)))
