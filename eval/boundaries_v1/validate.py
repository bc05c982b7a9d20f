"""Structural validator for boundaries_v1. Reads the JSON and checks fields only; no model, no scoring."""
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
KINDS = {"one_topic", "clear_shift", "subtle_shift", "hard_negative"}
FIELDS = {"id", "kind", "split", "blocks", "boundaries", "rationale", "questions"}
SENT_END = re.compile(r"[.!?]['\")]?(?=\s|$)")
SURFACE_CUES = ("turning to", "now,", "another topic", "moving on", "on a different note", "meanwhile")

errors, warnings, ids = [], [], set()
for name in ("dev.json", "test.json"):
    split = name.split(".")[0]
    docs = json.loads((HERE / name).read_text(encoding="utf-8"))
    if not isinstance(docs, list):
        errors.append(f"{name}: not a list"); continue
    for i, d in enumerate(docs):
        where = f"{name}[{i}] {d.get('id')}"
        if set(d) != FIELDS:
            errors.append(f"{where}: fields {sorted(set(d) ^ FIELDS)}")
            continue
        if not isinstance(d["id"], str) or not d["id"]:
            errors.append(f"{where}: bad id")
        if d["id"] in ids:
            errors.append(f"{where}: duplicate id")
        ids.add(d["id"])
        if d["kind"] not in KINDS:
            errors.append(f"{where}: bad kind {d['kind']}")
        if d["split"] != split:
            errors.append(f"{where}: split {d['split']} in {name}")
        blocks = d["blocks"]
        if not (isinstance(blocks, list) and 2 <= len(blocks) <= 12 and all(isinstance(b, str) and b.strip() for b in blocks)):
            errors.append(f"{where}: blocks must be 2-12 non-empty strings")
            continue
        for j, b in enumerate(blocks):
            n = len(SENT_END.findall(b))
            if not 1 <= n <= 4:
                errors.append(f"{where}: block {j} has {n} sentences")
            if any(ch in b for ch in "#*\u2022") or re.match(r"\s*(\d+[.)]|-)\s", b):
                errors.append(f"{where}: block {j} looks like markdown/list")
            if b.lower().startswith(SURFACE_CUES):
                errors.append(f"{where}: block {j} starts with a surface cue")
        bd = d["boundaries"]
        if not (isinstance(bd, list) and all(isinstance(x, int) for x in bd)):
            errors.append(f"{where}: boundaries not int list")
        else:
            if bd != sorted(set(bd)):
                errors.append(f"{where}: boundaries not distinct/sorted")
            if any(not 1 <= x < len(blocks) for x in bd):
                errors.append(f"{where}: boundary out of range")
            if d["kind"] in ("one_topic", "hard_negative") and bd:
                errors.append(f"{where}: {d['kind']} must have no boundaries")
            if d["kind"] in ("clear_shift", "subtle_shift") and not bd:
                errors.append(f"{where}: {d['kind']} needs boundaries")
            cuts = [0] + bd + [len(blocks)]
            seg = [b - a for a, b in zip(cuts, cuts[1:])]
            if d["kind"] in ("clear_shift", "subtle_shift") and max(seg) > 5:
                warnings.append(f"{where}: segment longer than 5 blocks {seg}")
        if not isinstance(d["rationale"], str) or len(d["rationale"]) < 20:
            errors.append(f"{where}: rationale too short")
        qs = d["questions"]
        if not isinstance(qs, list) or len(qs) > 3:
            errors.append(f"{where}: questions must be a list of 0-3")
            continue
        for q in qs:
            if set(q) != {"question", "answer_block"} or not isinstance(q["question"], str) or not q["question"].strip():
                errors.append(f"{where}: bad question {q}")
            elif not (isinstance(q["answer_block"], int) and 0 <= q["answer_block"] < len(blocks)):
                errors.append(f"{where}: answer_block out of range {q}")

for w in warnings:
    print("WARN", w)
for e in errors:
    print("ERR ", e)
print(f"{len(ids)} documents, {len(errors)} errors, {len(warnings)} warnings")
sys.exit(1 if errors else 0)
