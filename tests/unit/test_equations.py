"""Equation detection (plan case B13, detection part): positives, prose negatives, each signal's
exact points (worked out by hand from docs/chunking.md and longparser/equations.py), and the
re-tag in the pipeline.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longparser import chunk_blocks
from longparser.equations import (
    EQUATION_THRESHOLD,
    equation_score,
    equation_signals,
    looks_like_equation,
    pattern_kinds,
)

# (text, previous block's text). Includes every form of gen_blocks' _Gen.equation and the three
# equation_paragraph styles (bare, "..., where ... denotes ...", "..., which is defined as ...").
_EQUATION_POSITIVES = [
    ("f(x) = α x_i + β", None),
    ("L(θ) = ∑_i (θ x_i − y_i)² + λ ‖w‖²", None),
    ("E = mc²", "Einstein's mass-energy relation is given by:"),
    ("y_t = β y_{t-1} + (1 − β) x_t", None),
    ("\\frac{a}{b} + \\sum_{i=1}^n x_i", None),
    ("∂L/∂w_j = η · ∑_k a_k x_kj", None),
    ("P(y | x) = exp(z_y) / ∑_k exp(z_k)", None),
    ("α ≤ ∫ g(t) dt ≤ β + 3", None),
    ("h_i = σ(W x_i + b), i = 1, …, n", None),
    ("E = αβ / (2γ²)", None),
    ("y = a*x + b", None),
    ("E = mc^2", None),
    ("f(x) = μ x_i + ν, where μ denotes the revenue and x_i is the i-th margin.", None),
    (
        "Revenue and the liquidity of capital grow with each fiscal quarter of the year, which is "
        "defined as P(y | x) = exp(z_y) / ∑_k exp(z_k).",
        None,
    ),
    (
        "The gradient of the loss over the training batch, which is defined as E = αβ / (2γ²).",
        None,
    ),
]


_EQUATION_NEGATIVES = [
    "Results for d1, d2 and d3 are shown in Table 2 (p < 0.05).",
    "Run pip install x_y then set the a b c flags.",
    "Section 3.2 describes the results of the survey.",
    "Set max_tokens to 512 in the config file.",
    "(Smith et al., 2020, p. 12)",
    "I think a cat is a good pet, and so do I. A dog is fine too.",
    "Revenue grew 12% in 2023 versus 8.5% in 2022 (n = 30), a record since 1998.",
    "Grade A students scored higher than the B group on average.",
    "The keynote was given by Dr Smith in the hall where it is warm.",
    "Use the A/B test and w/o caching; see Appendix C for details.",
    "The company reported revenue of $4.2 million, up from $3.9 million in Q3 2022.",
    "Λόγος και ψυχή είναι έννοιες της αρχαίας φιλοσοφίας.",
    "· · · · · ·",
    "The temperature rose by 3 °C – roughly 5% – over the “reference” decade…",
]


@pytest.mark.case("B13")
@pytest.mark.parametrize(("text", "previous"), _EQUATION_POSITIVES)
def test_B13_equation_positives_are_detected(text, previous):
    assert equation_score(text, previous) >= EQUATION_THRESHOLD
    assert looks_like_equation(text, previous) is True


@pytest.mark.case("B13")
@pytest.mark.parametrize("text", _EQUATION_NEGATIVES)
def test_B13_equation_negatives_prose_is_not_detected(text):
    assert equation_score(text) < EQUATION_THRESHOLD
    assert looks_like_equation(text) is False


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Results for d1, d2 and d3 are shown in Table 2 (p < 0.05).", 0.5),  # one kind, once
        ("Run pip install x_y then set the a b c flags.", 0.5),  # x_y only; no operator after a b c
        ("Section 3.2 describes the results of the survey.", 0.0),
        ("E = mc²", 3.5),  # density 1/5 -> 2.0, one kind (definition) 0.5, short + "E =" 1.0
    ],
)
def test_B13_equation_score_exact_values(text, expected):
    signals = equation_signals(text)
    assert equation_score(text) == pytest.approx(expected)
    assert sum(signals.values()) == pytest.approx(expected)


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "previous"), [*_EQUATION_POSITIVES, *((t, None) for t in _EQUATION_NEGATIVES)]
)
def test_B13_looks_like_equation_agrees_with_the_score(text, previous):
    # looks_like_equation skips the own-phrase test when it cannot change the outcome.
    assert looks_like_equation(text, previous) is (equation_score(text, previous) >= EQUATION_THRESHOLD)


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("previous", "points"),
    [
        ("The energy is given by:", 1.5),
        ("The loss is defined as", 1.5),
        ("It can be expressed as,", 1.5),
        ("The margin is computed as :", 1.5),
        ("The average is Calculated As", 1.5),
        ("The update rule, where x denotes", 1.5),
        ("Here the output, where θ is", 1.5),
        ("The steps are as follows:", 0.0),
        ("The value given by the sensor is stored.", 0.0),  # phrase not at the end
        ("", 0.0),
        (None, 0.0),
    ],
)
def test_B13_signal_lead_in_from_previous_block(previous, points):
    assert equation_signals("x + y", previous)["lead_in"] == points


@pytest.mark.case("B13")
def test_B13_lead_in_alone_does_not_retag_but_lifts_a_formula_over_the_threshold():
    assert equation_score("x = 2", "The constant is given by:") == pytest.approx(1.5)  # lead-in only
    # A weak formula (only "* n", a short isolated variable: 1.0) needs the lead-in.
    assert equation_score("total = 2 * n") == pytest.approx(1.0)
    assert looks_like_equation("total = 2 * n") is False
    assert looks_like_equation("total = 2 * n", "The index is defined as:") is True


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("The loss is defined as the mean of the squared errors over the batch.", 1.0),
        ("Given by the board, the budget was approved.", 1.0),
        ("The output is obtained in the usual way from the inputs.", 0.0),
        ("The keynote, where it is warm, was fun.", 0.0),  # "where it is" is not "where x is"
        ("The layer output, where h denotes the hidden state, is normalised.", 1.0),
    ],
)
def test_B13_signal_own_phrase(text, points):
    signals = equation_signals(text)
    assert signals["own_phrase"] == points
    assert equation_score(text) == pytest.approx(points)  # nothing else fires in these sentences


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("The step size parameter of the optimiser, called λ here, matters most in practice.", 0.5),
        ("Both the λ and the μ parameters of the optimiser matter for the final accuracy.", 1.5),
        ("The three values λ, μ and ν of the optimiser are tuned on the validation split.", 1.5),
        ("Λόγος και ψυχή είναι έννοιες της αρχαίας φιλοσοφίας.", 0.0),  # Greek words, not symbols
        ("No Greek letters here at all, just plain English words.", 0.0),
    ],
)
def test_B13_signal_greek_letter_counts(text, points):
    assert equation_signals(text)["greek"] == points


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("∞ " + "x" * 18, 2.0),  # 1/19 non-space characters: 5.3% > 5%
        ("∞ " + "x" * 19, 1.0),  # exactly 5%: not above 5%
        ("∞ " + "x" * 98, 1.0),  # 1/99: 1.01% > 1%
        ("∞ " + "x" * 99, 0.0),  # exactly 1%: not above 1%
        ("x = y + z and more plain ascii operators < > * ^", 0.0),  # ASCII operators are not density
    ],
)
def test_B13_signal_density_tiers(text, points):
    assert equation_signals(text)["density"] == points


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("The plain sentence has no pattern at all in it.", 0.0),
        ("Results for d1 are shown here, and d2 and d3 as well.", 0.5),  # one kind, three times
        ("Use the x_i values and the d1 run for this experiment.", 1.5),  # scripts + d1-style
        ("Use the x_i values, the d1 run and exp(z) for this.", 2.0),  # + function call
        ("Use x_i, d1, exp(z) and \\alpha for the experiment.", 2.0),  # 4 kinds: still 2.0
    ],
)
def test_B13_signal_pattern_tiers(text, points):
    assert equation_signals(text)["patterns"] == points


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("the x_i and y_{t-1} terms, and x^2", ["scripts"]),
        ("then f(x) = 3 holds", ["definition"]),
        ("then P(y | x) = 3 holds", ["definition"]),
        ("so E = mc here", ["definition"]),
        ("so n = 30 here", []),  # a variable set to a bare number is a statistic
        ("the ∑ and ∫ signs", ["big_operator"]),
        ("apply softmax(z) and argmax(p)", ["function_call"]),
        ("apply max (the budget)", []),  # a call has no space before the parenthesis
        ("use \\mathbf{v} and \\alpha", ["latex"]),
        ("runs d1 and x12", ["indexed_variable"]),
        ("no H2O, COVID19 or x123 here", []),
        ("the λ, μ pair", ["greek_list"]),
        ("then a * b and c d e + 1", ["variable_run"]),
        ("the a b c flags", []),  # a run of lone letters needs an operator
        ("see Section 3.2, Table 4 and (Smith, 2020)", []),
    ],
)
def test_B13_pattern_kinds_what_counts_as_a_hit(text, kinds):
    assert pattern_kinds(text) == kinds


@pytest.mark.case("B13")
@pytest.mark.parametrize(
    ("text", "points"),
    [
        ("E = mc²", 1.0),
        ("a + b", 1.0),
        ("Significant at p < 0.05 only.", 0.0),  # letter, operator, bare number: a statistic
        ("I am a person and A is a grade.", 0.0),  # lone words, no operator
        ("The rule x = y holds for every one of the many records stored in the large table here.", 0.0),
    ],
)
def test_B13_signal_short_text_with_isolated_variable(text, points):
    assert equation_signals(text)["short_variable"] == points


@pytest.mark.case("B13")
def test_B13_separator_rule_of_math_dots_scores_zero():
    assert equation_signals("· · · · · ·") == dict.fromkeys(
        ("density", "patterns", "short_variable", "lead_in", "own_phrase", "greek"), 0.0
    )


@pytest.mark.case("B13")
def test_B13_pipeline_retags_formula_paragraph_as_equation_chunk(make_block):
    blocks = [
        make_block("The regularised squared loss of the linear model is given by:", block_id="lead"),
        make_block("L(θ) = ∑_i (θ x_i − y_i)² + λ ‖w‖²", block_id="eq"),
        make_block("Results for d1, d2 and d3 are shown in Table 2 (p < 0.05).", block_id="prose"),
    ]
    result = chunk_blocks(blocks, {"max_tokens": 512, "min_tokens": 1, "overlap_blocks": 0})
    assert result.stats.equations_detected == 1
    assert blocks[1]["type"] == "paragraph"  # the caller's block is not re-tagged
    holding = [c for c in result.chunks if "eq" in c.block_ids]
    assert len(holding) == 1
    assert holding[0].equation_detected is True
    assert holding[0].chunk_type == "equation"


@pytest.mark.case("B13")
def test_B13_pipeline_detection_off_keeps_paragraph(make_block):
    blocks = [make_block("L(θ) = ∑_i (θ x_i − y_i)² + λ ‖w‖²", block_id="eq")]
    result = chunk_blocks(blocks, {"detect_equations": False, "min_tokens": 1})
    assert result.stats.equations_detected == 0
    assert [c.equation_detected for c in result.chunks] == [False]


_MATHY_TEXT = st.text(alphabet=st.sampled_from(list("xyzabdIA01 _^=+*<>()\\,.:αβ∑∫−²·\n")), max_size=60)


@pytest.mark.case("B13")
@settings(max_examples=300, deadline=None)
@given(
    text=st.one_of(st.text(max_size=120), _MATHY_TEXT),
    previous=st.one_of(st.none(), st.text(max_size=80)),
)
def test_B13_looks_like_equation_matches_score_on_any_text(text, previous):
    score = equation_score(text, previous)
    assert 0.0 <= score <= 9.0  # 2.0 + 2.0 + 1.0 + 1.5 + 1.0 + 1.5
    assert looks_like_equation(text, previous) is (score >= EQUATION_THRESHOLD)
