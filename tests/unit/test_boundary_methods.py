"""Boundary methods (longparser.boundary_methods) on stub vectors, and how config selects them.

The cohesion method is checked against a brute-force enumeration of every partition of the
objective in its docstring; the decisions on ties, zero vectors and short sections are spelled
out case by case.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any, get_args

import numpy as np
import pytest
from pydantic import ValidationError

from cli.chunk import load_request
from cli.main import build_parser
from longparser import Resources, chunk_blocks
from longparser.boundary_methods import (
    ALIASES,
    COHESION_WINDOW,
    METHODS,
    adjacent,
    boundary_rule,
    cohesion,
    resolve,
)
from longparser.semantic import section_boundaries, unit_rows
from schemas import ChunkingConfig, ChunkRequest
from schemas.config import SemanticMethod

MU, BETA = 0.21, 0.15  # the config defaults, spelled out so the hand-computed cases read


def _unit(*rows: Any) -> np.ndarray:
    return unit_rows(np.array(rows, dtype=np.float64))


def _angle(degrees: float) -> list[float]:
    return [math.cos(math.radians(degrees)), math.sin(math.radians(degrees))]


def _objective(unit: np.ndarray, cuts: tuple[int, ...], mu: float, beta: float) -> float:
    edges, total = [0, *cuts, len(unit)], -beta * len(cuts)
    for a, b in itertools.pairwise(edges):
        for i in range(a, b):
            for j in range(i + 1, min(b, i + COHESION_WINDOW + 1)):
                total += float(unit[i] @ unit[j]) - mu
    return total


def _brute_force(unit: np.ndarray, mu: float, beta: float) -> tuple[float, list[list[int]]]:
    """The best objective and every partition reaching it (within 1e-9)."""
    n = len(unit)
    scored = [
        (_objective(unit, cuts, mu, beta), list(cuts))
        for k in range(n)
        for cuts in itertools.combinations(range(1, n), k)
    ]
    best = max(value for value, _ in scored)
    return best, [cuts for value, cuts in scored if value >= best - 1e-9]


# --- registry ---------------------------------------------------------------------------------


def test_registry_and_config_vocabulary_agree() -> None:
    assert set(get_args(SemanticMethod)) == {*METHODS, *ALIASES}
    assert resolve("recommended") == "cohesion"
    assert {name: resolve(name) for name in METHODS} == {name: name for name in METHODS}


def test_unknown_method_is_refused_with_the_names() -> None:
    with pytest.raises(ValueError, match=r"unknown semantic method 'texttiling'; expected one of"):
        resolve("texttiling")
    with pytest.raises(ValueError, match="unknown semantic method"):
        section_boundaries([["a", "b"]], _NeverEncoder(), method="texttiling")


def test_boundary_rule_binds_parameters() -> None:
    unit = _unit([1, 0], [0, 1], [0, 1])
    assert boundary_rule("adjacent", threshold=0.3)(unit) == adjacent(unit, 0.3) == [1]
    assert boundary_rule("recommended", pair_threshold=MU, boundary_cost=BETA)(unit) == [1]


# --- cohesion: the objective, exactly ---------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_cohesion_finds_the_best_partition(seed: int) -> None:
    """Random sections of 2-12 blocks (longer than the window + 1, so pairs drop out)."""
    rng = np.random.default_rng(seed)
    for _ in range(25):
        n = int(rng.integers(2, 13))
        unit = unit_rows(rng.normal(size=(n, 3)))
        mu, beta = float(rng.uniform(-0.2, 0.6)), float(rng.uniform(0.0, 0.5))
        best, winners = _brute_force(unit, mu, beta)
        found = cohesion(unit, mu, beta)
        assert _objective(unit, tuple(found), mu, beta) == pytest.approx(best, abs=1e-9)
        assert found in winners


@pytest.mark.parametrize(
    ("degrees", "expected"),
    [
        (0.0, []),
        (70.0, []),  # cos 0.342: together scores +0.132, a cut -0.15
        (85.0, []),  # cos 0.087: together -0.123, still above -0.15
        (87.0, [1]),  # cos 0.052: together -0.158 < -0.15
        (90.0, [1]),
        (180.0, [1]),
    ],
)
def test_two_blocks_cut_iff_cosine_below_threshold_minus_cost(degrees: float, expected: list[int]) -> None:
    unit = _unit([1.0, 0.0], _angle(degrees))
    assert cohesion(unit, MU, BETA) == expected
    assert (float(unit[0] @ unit[1]) < MU - BETA) == bool(expected)


def test_exact_tie_keeps_blocks_together() -> None:
    """cos([1, 0], [3, 4]) is exactly 0.6: with 0.7 - 0.1 the cut gains nothing."""
    unit = _unit([1.0, 0.0], [3.0, 4.0])
    assert cohesion(unit, 0.7, 0.1) == []
    assert cohesion(unit, 0.7 + 1e-6, 0.1) == [1]
    # adjacent: equal to the threshold is not a boundary either
    assert adjacent(unit, 0.6) == [] and adjacent(unit, 0.6 + 1e-12) == [1]


def test_ties_between_partitions_keep_the_longer_segment() -> None:
    """Identical blocks, pair threshold 1 and no cost: every partition scores 0."""
    unit = _unit([1, 0], [1, 0], [1, 0], [1, 0])
    assert cohesion(unit, 1.0, 0.0) == []


def test_three_blocks_weigh_the_outer_pair_too() -> None:
    # a, x, a: x is unlike both neighbours (adjacent cuts twice) but a agrees with a across it
    unit = _unit([1, 0], [0, 1], [1, 0])
    assert adjacent(unit, 0.3) == [1, 2]
    # together: -0.21 - 0.21 + 0.79 = 0.37; any cut loses the a-a pair
    assert cohesion(unit, MU, BETA) == []
    # a, a, b: the last block leaves
    assert cohesion(_unit([1, 0], [1, 0], [0, 1]), MU, BETA) == [2]


def test_zero_vectors_have_similarity_zero() -> None:
    zero = [0.0, 0.0]
    # between two agreeing blocks: kept (0.79 - 0.42 = 0.37 > -0.3 for two cuts)
    assert cohesion(_unit([1, 0], zero, [1, 0]), MU, BETA) == []
    # after two agreeing blocks: 0.79 - 0.15 (cut) > 0.79 - 0.42 (kept)
    assert cohesion(_unit([1, 0], [1, 0], zero), MU, BETA) == [2]
    # two zero vectors: -0.21 together < -0.15 apart, as adjacent's 0.0 < 0.3
    assert cohesion(_unit(zero, zero), MU, BETA) == [1]
    assert adjacent(_unit(zero, zero), 0.3) == [1]


@pytest.mark.parametrize("method", [lambda u: cohesion(u, MU, BETA), lambda u: adjacent(u, 0.3)])
def test_sections_of_zero_and_one_block_have_no_boundary(method: Any) -> None:
    assert method(np.zeros((0, 2))) == []
    assert method(_unit([1, 0])) == []


def test_one_dissimilar_block_inside_a_subject_does_not_cut() -> None:
    subject = [_angle(d) for d in (0, 5, 10, 15)]
    aside = _angle(90)  # a quotation or an anecdote: unlike its neighbours
    unit = unit_rows(np.array([*subject[:2], aside, *subject[2:]]))
    assert adjacent(unit, 0.3) == [2, 3]
    assert cohesion(unit, MU, BETA) == []


def test_a_topic_change_is_found_where_every_pair_across_it_disagrees() -> None:
    first = [_angle(d) for d in (0, 8, 4)]
    second = [_angle(d) for d in (88, 95, 90, 84)]
    assert cohesion(unit_rows(np.array(first + second)), MU, BETA) == [3]


def test_drift_beyond_the_window_does_not_cut_a_long_section() -> None:
    """40 blocks turning 4 degrees each: neighbours agree, the two ends are opposite."""
    unit = unit_rows(np.array([_angle(4.0 * i) for i in range(40)]))
    assert float(unit[0] @ unit[-1]) < -0.9
    assert cohesion(unit, MU, BETA) == []


def test_methods_are_deterministic_and_leave_their_input_alone() -> None:
    unit = unit_rows(np.random.default_rng(7).normal(size=(30, 8)))
    before = unit.copy()
    runs = {tuple(cohesion(unit, MU, BETA)) for _ in range(3)}
    assert len(runs) == 1
    assert np.array_equal(unit, before)


# --- through section_boundaries and the pipeline ----------------------------------------------


class _StubEncoder:
    name = "stub"
    weights_sha256 = None

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors, self.calls = vectors, []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


class _NeverEncoder(_StubEncoder):
    def __init__(self) -> None:
        super().__init__({})

    def encode(self, texts: list[str]) -> np.ndarray:
        raise AssertionError("the encoder must not be called")


# two subjects (a, b) and an aside x unlike both
_VECTORS = {
    "a": [1.0, 0.0, 0.0], "a2": [0.99, 0.1, 0.0], "x": [0.0, 0.0, 1.0], "b": [0.0, 1.0, 0.0],
    "b2": [0.1, 0.99, 0.0],
}  # fmt: skip


def test_section_boundaries_runs_the_method_per_section_in_one_batch() -> None:
    encoder = _StubEncoder(_VECTORS)
    sections = [["a", " ", "a2", "x", "a"], ["only"], ["a", "a2", "", "b", "b2"]]
    found, embedded = section_boundaries(
        sections, encoder, method="recommended", pair_threshold=MU, boundary_cost=BETA
    )
    assert found == [set(), set(), {3}]  # index 3 of the caller's list ("b"), the blank skipped
    assert encoder.calls == [["a", "a2", "x", "b", "b2"]]  # one batch; "only" is never embedded
    assert embedded == 5
    adjacent_found, _ = section_boundaries(sections, _StubEncoder(_VECTORS), 0.3)
    assert adjacent_found == [{3, 4}, set(), {3}]


def test_short_sections_are_not_embedded_whatever_the_method() -> None:
    assert section_boundaries([["a"], [" ", "b"]], _NeverEncoder(), method="cohesion",
                              pair_threshold=MU, boundary_cost=BETA) == ([set(), set()], 0)  # fmt: skip


def test_pipeline_uses_the_configured_method(make_block: Any) -> None:
    blocks = [make_block(t) for t in ("a", "a2", "x", "a", "b", "b2")]
    base = {"use_semantic_chunking": True, "min_tokens": 0, "overlap_blocks": 0, "detect_equations": False}
    seed = chunk_blocks(blocks, base, Resources(encoder=_StubEncoder(_VECTORS)))
    recommended = chunk_blocks(
        blocks, {**base, "semantic_method": "recommended"}, Resources(encoder=_StubEncoder(_VECTORS))
    )
    assert [c.text for c in seed.chunks] == ["a\n\na2", "x", "a", "b\n\nb2"]
    assert [c.text for c in recommended.chunks] == ["a\n\na2\n\nx\n\na", "b\n\nb2"]
    assert recommended.stats.semantic.boundaries == 1


# --- configuration ----------------------------------------------------------------------------


def test_config_defaults_keep_the_seed_call() -> None:
    config = ChunkingConfig()
    assert (config.semantic_method, config.semantic_threshold) == ("adjacent", 0.3)
    assert config.semantic_method_args() == {}
    cohesion_config = ChunkingConfig(semantic_method="recommended")
    assert cohesion_config.semantic_method_args() == {
        "method": "recommended", "pair_threshold": MU, "boundary_cost": BETA,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"semantic_method": "texttiling"}, "semantic_method"),
        ({"semantic_pair_threshold": 1.5}, "semantic_pair_threshold"),
        ({"semantic_pair_threshold": -0.1}, "semantic_pair_threshold"),
        ({"semantic_boundary_cost": -1}, "semantic_boundary_cost"),
        ({"semantic_boundary_cost": 11}, "semantic_boundary_cost"),
    ],
)
def test_config_rejects_unknown_methods_and_parameters(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        ChunkingConfig(**fields)
    assert info.value.errors()[0]["loc"] == (field,)


def test_recommended_is_accepted_in_requests_and_config_files(tmp_path: Path) -> None:
    request = ChunkRequest.model_validate(
        {"document_id": "d", "blocks": [], "config": {"semantic_method": "recommended"}}
    )
    assert request.config.semantic_method == "recommended"
    (tmp_path / "in.json").write_text(json.dumps([{"block_id": "b", "type": "paragraph", "text": "t"}]))
    (tmp_path / "c.json").write_text(json.dumps({"semantic_method": "recommended"}))
    args = build_parser().parse_args(["chunk", str(tmp_path / "in.json"), "-c", str(tmp_path / "c.json")])
    assert load_request(args).config.semantic_method == "recommended"
