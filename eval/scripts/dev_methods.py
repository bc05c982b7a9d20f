#!/usr/bin/env python3
"""The candidate boundary methods tried on the DEV split, and the cohesion parameter grid.

    .venv/bin/python eval/scripts/dev_methods.py [eval/boundaries_v1/dev.json]

Reproduces the dev table of docs/semantic.md. The production methods (``adjacent``,
``cohesion``) come from :mod:`longparser.boundary_methods`; the rejected candidates are written
here only, as read in their papers, over the same unit vectors (one encode batch of the file's
distinct blocks, the pinned model): TextTiling depth scores (Hearst 1997) over block windows
with its document-relative cut-off ``mean - c * std`` (as in Solbiati et al. 2021 over sentence
embeddings), the same with an absolute similarity ceiling, depth scores with an absolute floor,
windowed centroid comparisons (chonkie-style smoothing), C99 (Choi 2000: 11x11 rank mask,
divisive clustering, gradient stop at mean + 1.2 std), and cohesion variants (no window limit
is the same as 8 here; window 4; a minimum segment of 2 blocks). Each method sees one
document's vectors only. Scored by :func:`lpeval.evaluation.evaluate_predictions`.
Never run on the test split: tuning is on dev only.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from loaders.encoder import load_encoder  # noqa: E402
from longparser.boundary_methods import adjacent, cohesion  # noqa: E402
from longparser.semantic import unit_rows  # noqa: E402
from lpeval.evaluation import evaluate_predictions, parse_labelled  # noqa: E402

Method = Callable[[np.ndarray], list[int]]


def window_sims(u: np.ndarray, k: int) -> np.ndarray:
    """Mean pairwise cosine between the k blocks before and the k blocks after each gap."""
    s = u @ u.T
    return np.array([s[max(0, g - k) : g, g : g + k].mean() for g in range(1, len(u))])


def depth_scores(s: np.ndarray) -> np.ndarray:
    """Hearst's depth: climb to the highest similarity on each side while it rises."""
    out = np.zeros(len(s))
    for i in range(len(s)):
        left = i
        while left > 0 and s[left - 1] >= s[left]:
            left -= 1
        right = i
        while right < len(s) - 1 and s[right + 1] >= s[right]:
            right += 1
        out[i] = (s[left] - s[i]) + (s[right] - s[i])
    return out


def texttiling(k: int, c: float, ceiling: float | None = None) -> Method:
    def method(u: np.ndarray) -> list[int]:
        if len(u) < 2:
            return []
        s = window_sims(u, k)
        d = depth_scores(s)
        cut = d.mean() - c * d.std()
        return [i + 1 for i in range(len(s)) if d[i] > cut and (ceiling is None or s[i] < ceiling)]
    return method


def depth_floor(k: int, floor: float) -> Method:
    def method(u: np.ndarray) -> list[int]:
        if len(u) < 2:
            return []
        s = window_sims(u, k)
        d = depth_scores(s)
        padded = np.concatenate([[np.inf], s, [np.inf]])
        minima = (s <= padded[:-2]) & (s <= padded[2:])
        return [i + 1 for i in range(len(s)) if minima[i] and d[i] >= floor]
    return method


def window_centroid(k: int, threshold: float) -> Method:
    def method(u: np.ndarray) -> list[int]:
        out = []
        for g in range(1, len(u)):
            left, right = u[max(0, g - k) : g].mean(0), u[g : g + k].mean(0)
            if left @ right / (np.linalg.norm(left) * np.linalg.norm(right)) < threshold:
                out.append(g)
        return out
    return method


def c99(mask: int = 11, c: float = 1.2) -> Method:
    def method(u: np.ndarray) -> list[int]:
        n = len(u)
        if n < 3:
            return []
        s, h = u @ u.T, mask // 2
        rank = np.zeros_like(s)
        for i, j in itertools.product(range(n), range(n)):
            win = s[max(0, i - h) : i + h + 1, max(0, j - h) : j + h + 1]
            rank[i, j] = (win < s[i, j]).sum() / (win.size - 1)
        p = np.zeros((n + 1, n + 1))
        p[1:, 1:] = rank.cumsum(0).cumsum(1)

        def inside(cuts: list[int]) -> float:
            pairs = list(itertools.pairwise(cuts))
            total = sum(p[b, b] - p[a, b] - p[b, a] + p[a, a] for a, b in pairs)
            return total / sum((b - a) ** 2 for a, b in pairs)

        cuts, densities, order = [0, n], [inside([0, n])], []
        while len(cuts) < n + 1:
            candidates = [sorted([*cuts, x]) for x in range(1, n) if x not in cuts]
            best = max(candidates, key=inside)
            order.append(next(x for x in best if x not in cuts))
            cuts = best
            densities.append(inside(best))
        gradient = np.diff(densities)
        above = [i for i, g in enumerate(gradient) if g > gradient.mean() + c * gradient.std()]
        return sorted(order[: max(above) + 1]) if above else []
    return method


def cohesion_min_segment(mu: float, beta: float, minimum: int) -> Method:
    """Cohesion over every partition whose segments have at least ``minimum`` blocks (brute force)."""
    def method(u: np.ndarray) -> list[int]:
        n, s = len(u), u @ u.T
        best, best_cuts = None, []
        for k in range(n):
            for cuts in itertools.combinations(range(1, n), k):
                edges = [0, *cuts, n]
                if k and min(b - a for a, b in itertools.pairwise(edges)) < minimum:
                    continue
                value = -beta * k + sum(
                    s[i, j] - mu for a, b in itertools.pairwise(edges)
                    for i in range(a, b) for j in range(i + 1, min(b, i + 9))
                )
                if best is None or value > best + 1e-9:
                    best, best_cuts = value, list(cuts)
        return best_cuts
    return method


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "eval/boundaries_v1/dev.json")
    if "test" in Path(path).name:
        raise SystemExit("tuning runs on dev only")
    documents = parse_labelled(json.loads(Path(path).read_text(encoding="utf-8")))
    encoder = load_encoder(threads=1)
    texts = sorted({b for d in documents for b in d.blocks})
    unit = unit_rows(encoder.encode(texts))
    row = {t: i for i, t in enumerate(texts)}
    sections = [unit[[row[b] for b in d.blocks]] for d in documents]

    def scored(method: Method) -> dict:
        report = evaluate_predictions(documents, [method(u) for u in sections])
        return {**report["overall"], "one_topic": report["kinds"]["one_topic"]["fp"],
                "hard_negative": report["kinds"]["hard_negative"]["fp"]}  # fmt: skip

    candidates: dict[str, Method] = {
        **{f"adjacent, threshold {t}": lambda u, t=t: adjacent(u, t) for t in (0.3, 0.2, 0.15, 0.1)},
        "window centroid, k=2, threshold 0.2": window_centroid(2, 0.2),
        "window centroid, k=3, threshold 0.3": window_centroid(3, 0.3),
        "TextTiling depth, k=2, mean - 0.5 std": texttiling(2, 0.5),
        "TextTiling depth, k=1, mean - 0.5 std": texttiling(1, 0.5),
        "TextTiling depth, k=2, mean - 0 std, window cosine < 0.2": texttiling(2, 0.0, 0.2),
        "depth floor, k=2, depth >= 0.3": depth_floor(2, 0.3),
        "depth floor, k=3, depth >= 0.15": depth_floor(3, 0.15),
        "C99, 11x11 rank mask, c 1.2": c99(),
        "cohesion 0.21 / 0.15 (recommended defaults)": lambda u: cohesion(u, 0.21, 0.15),
        "cohesion 0.22 / 0.1": lambda u: cohesion(u, 0.22, 0.1),
        "cohesion 0.22 / 0 (no boundary cost)": lambda u: cohesion(u, 0.22, 0.0),
        "cohesion 0.22 / 0, minimum segment 2 blocks": cohesion_min_segment(0.22, 0.0, 2),
    }
    print(f"{path}: {len(documents)} documents")
    print("| method (dev) | P | R | F1 | Pk | WindowDiff | in one_topic | in hard_negative |")
    print("|---|---|---|---|---|---|---|---|")
    for name, method in candidates.items():
        r = scored(method)
        print(f"| {name} | {r['precision']:.3f} | {r['recall']:.3f} | {r['f1']:.3f} | {r['pk']:.3f} | "
              f"{r['windowdiff']:.3f} | {r['one_topic']} | {r['hard_negative']} |")  # fmt: skip
    betas = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)
    print("\ncohesion grid: F1 / boundaries in one-topic documents (one_topic + hard_negative)")
    print("| pair_threshold \\ boundary_cost | " + " | ".join(str(b) for b in betas) + " |")
    print("|---" * (len(betas) + 1) + "|")
    for mu in (0.18, 0.19, 0.2, 0.21, 0.22, 0.23, 0.24, 0.25, 0.26):
        cells = []
        for beta in betas:
            r = scored(lambda u, mu=mu, beta=beta: cohesion(u, mu, beta))
            cells.append(f"{r['f1']:.3f} / {r['one_topic'] + r['hard_negative']}")
        print(f"| {mu} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
