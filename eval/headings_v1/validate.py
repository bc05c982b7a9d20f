"""Structural checks for segment_titles.json (JSON only; no model, no scoring)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "boundaries_v1")

docs = []
for name in ("dev.json", "test.json"):
    with open(os.path.join(SRC, name)) as f:
        docs.extend(json.load(f))
with open(os.path.join(HERE, "segment_titles.json")) as f:
    titles = json.load(f)

errors = []
ids = [d["id"] for d in docs]
if len(ids) != len(set(ids)):
    errors.append("duplicate ids in input")
missing = set(ids) - set(titles)
extra = set(titles) - set(ids)
if missing:
    errors.append(f"missing ids: {sorted(missing)}")
if extra:
    errors.append(f"extra ids: {sorted(extra)}")

n_segments = 0
for d in docs:
    h = titles.get(d["id"])
    if h is None:
        continue
    want = len(d["boundaries"]) + 1
    if not isinstance(h, list) or len(h) != want:
        errors.append(f"{d['id']}: {len(h) if isinstance(h, list) else type(h)} headings, want {want}")
        continue
    n_segments += want
    for t in h:
        if not isinstance(t, str) or t != t.strip():
            errors.append(f"{d['id']}: bad heading {t!r}")
            continue
        w = len(t.split())
        if not 2 <= w <= 7:
            errors.append(f"{d['id']}: {w} words in {t!r}")
        if t[0].isdigit():
            errors.append(f"{d['id']}: numbered heading {t!r}")
    if len({t.lower() for t in h}) != len(h):
        errors.append(f"{d['id']}: duplicate headings {h}")

print(f"documents: {len(titles)}  segments: {n_segments}")
if errors:
    print("\n".join(errors))
    sys.exit(1)
print("OK")
