"""Boundary methods: where one section's topic changes, from its blocks' unit vectors.

Every method is a pure function ``method(unit, **parameters) -> list[int]`` over the rows of
ONE section (float64, unit length, or all-zero for a zero-norm embedding, in reading order,
blank blocks already left out). A returned ``b`` (``1 <= b < n``, ascending) means "a new
chunk starts before row ``b``". :data:`METHODS` is the one registry of names; ``"recommended"``,
an older name of ``cohesion`` still accepted and warned (:data:`ALIASES`,
:data:`schemas.config.DEPRECATED_SEMANTIC_METHODS`), is resolved by :func:`resolve`.
Cut-offs are absolute, never relative to the section: a document-relative cut-off
(TextTiling's mean - c * std of depth scores, C99's gradient test, a percentile) always finds
"the least similar" gap, so it cuts one-topic sections, which is the failure the labelled set
measures (see docs/semantic.md).

``adjacent`` (the default, the seed's rule): a boundary before row ``i`` when
``cos(v[i-1], v[i]) < threshold``, strictly.

``cohesion`` (the method to use for semantic boundaries): the partition of the section into
contiguous segments that maximises

    sum over pairs (i, j) in one segment with j - i <= COHESION_WINDOW of (cos(v[i], v[j]) - pair_threshold)
    - boundary_cost * (number of boundaries)

found exactly by dynamic programming. Two blocks "belong together" when their cosine exceeds
``pair_threshold``; a boundary is placed where the pairs it separates are, together, below it
by more than ``boundary_cost``. Unlike the adjacent rule, one dissimilar neighbour (a quotation,
an anecdote, a table of figures inside one subject) does not cut when the blocks around it
still agree with each other, and a real topic change is seen by every pair across it.
Small sections, as the objective gives them:

* 1 block: no boundary (the caller never embeds it);
* 2 blocks: a boundary iff ``cos < pair_threshold - boundary_cost``;
* 3 blocks: the best of the four partitions (each boundary weighed against every pair it
  separates, the 0-2 pair included).

Ties: a boundary has to raise the objective by more than :data:`TIE_TOLERANCE`; an equal score
keeps the blocks together (as ``adjacent`` does at ``cos == threshold``). Zero-norm rows have
similarity 0.0 with everything. Cost: ``O(n * COHESION_WINDOW)`` numpy work and Python steps
per section, negligible next to encoding ``n`` texts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from schemas.config import DEPRECATED_SEMANTIC_METHODS

BoundaryMethod = Callable[..., list[int]]

# Pairs further apart than this are not compared. Within one long subject, blocks far apart
# drift (their cosine falls towards that of unrelated text), so comparing them would cut long
# one-topic sections; the window also bounds the cost to O(n) per section. 8 covers every
# segment length of the labelled set (1-5 blocks) on both sides of a boundary; on its dev split
# windows of 3-6 cut more one-topic documents and 8 scored as the unbounded sum.
COHESION_WINDOW = 8
# A boundary must gain more than this; float sums of up to n * 8 terms err by ~1e-13.
TIE_TOLERANCE = 1e-9


def adjacent(unit: np.ndarray, threshold: float) -> list[int]:
    """Boundaries where a block's cosine with the previous one is strictly below ``threshold``."""
    if len(unit) < 2:
        return []
    sims = np.einsum("ij,ij->i", unit[:-1], unit[1:])
    return [int(i) + 1 for i in np.flatnonzero(sims < threshold)]


def _pair_gains(unit: np.ndarray, pair_threshold: float, window: int) -> np.ndarray:
    """``cum[j, m]``: sum of ``cos(v[j-d], v[j]) - pair_threshold`` for ``d = 1..m`` (0 where ``j-d < 0``)."""
    n = len(unit)
    gains = np.zeros((n, window + 1), dtype=np.float64)
    for d in range(1, min(window, n - 1) + 1):
        gains[d:, d] = np.einsum("ij,ij->i", unit[d:], unit[:-d]) - pair_threshold
    return np.cumsum(gains, axis=1)


def _short_scores(cum: np.ndarray, window: int) -> list[list[float]]:
    """``short[a][length]``: the pair sum of segment ``[a, a + length)`` for lengths ``1..window``."""
    n = len(cum)
    short = np.zeros((n, window + 1), dtype=np.float64)
    for length in range(2, window + 1):
        ends = np.arange(length - 1, n)  # last row a + length - 1, for every a that fits
        short[: len(ends), length] = short[: len(ends), length - 1] + cum[ends, length - 1]
    return short.tolist()


def cohesion(unit: np.ndarray, pair_threshold: float, boundary_cost: float) -> list[int]:
    """The partition maximising the windowed pair objective of the module docstring."""
    n, window = len(unit), COHESION_WINDOW
    if n < 2:
        return []
    cum = _pair_gains(unit, pair_threshold, window)
    short = _short_scores(cum, window)
    full = cum[:, window].tolist()  # row j's pairs with all its predecessors in the window
    prefix = [0.0]
    for value in full:
        prefix.append(prefix[-1] + value)
    best, start = [0.0] + [0.0] * n, [0] * (n + 1)
    long_best, long_start = -np.inf, -1  # best a with b - a > window, as a + window < b
    for b in range(1, n + 1):
        a_long = b - window - 1  # becomes eligible for every later b too
        if a_long >= 0:
            cost = boundary_cost if a_long else 0.0
            value = best[a_long] - cost + short[a_long][window] - prefix[a_long + window]
            if value > long_best + TIE_TOLERANCE:
                long_best, long_start = value, a_long
        top, top_start = -np.inf, -1
        if long_start >= 0:
            top, top_start = long_best + prefix[b], long_start
        for a in range(max(0, b - window), b):  # ascending: on a tie the longer segment stays
            value = best[a] - (boundary_cost if a else 0.0) + short[a][b - a]
            if value > top + TIE_TOLERANCE:
                top, top_start = value, a
        best[b], start[b] = top, top_start
    cuts, b = [], n
    while b > 0:
        b = start[b]
        if b:
            cuts.append(b)
    return cuts[::-1]


METHODS: dict[str, BoundaryMethod] = {"adjacent": adjacent, "cohesion": cohesion}
ALIASES = dict(DEPRECATED_SEMANTIC_METHODS)


def resolve(name: str) -> str:
    """The registry name for ``name`` (an alias resolved).

    Raises:
        ValueError: unknown method, with the names that exist.
    """
    resolved = ALIASES.get(name, name)
    if resolved not in METHODS:
        raise ValueError(f"unknown semantic method {name!r}; expected one of {sorted([*METHODS, *ALIASES])}")
    return resolved


def boundary_rule(method: str, **parameters: Any) -> Callable[[np.ndarray], list[int]]:
    """``method`` with its parameters bound: a function of a section's unit rows."""
    fn = METHODS[resolve(method)]
    return lambda unit: fn(unit, **parameters)
