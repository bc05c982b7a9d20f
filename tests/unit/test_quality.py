"""Quality scores (plan case B14): confidence weighting, noise, dictionary coverage, language
ID, sentence-end bonus, caps and clamps (exact values worked out by hand from docs/chunking.md (quality) and
longparser/quality.py), and the components stored by the pipeline.
"""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longparser import Resources, chunk_blocks, quality
from longparser.quality import LANGUAGE_SAMPLE_CHARS, UNKNOWN_SOURCES_SCORE, score_chunk


def noise_count(text: str) -> int:
    """Noise characters of ``text``, as the scorer counts them (its byte-level fast path)."""
    return quality._noise(quality._Scan(text))


def alphabetic_tokens(text: str) -> list[str]:
    """The tokens dictionary coverage is measured on, as the scorer finds them (letter runs of
    2+ characters)."""
    runs = [run.decode("utf-8", "surrogatepass") for run in quality._letter_runs(quality._Scan(text))]
    return [run for run in runs if len(run) > 1]


_REQUIRED_KEYS = {
    "confidence", "noise_ratio", "noise_penalty", "dictionary_coverage", "coverage_penalty",
    "language", "language_confidence", "language_penalty", "penalty_total", "sentence_end_bonus",
    "score",
}


@pytest.mark.case("B14")
@pytest.mark.parametrize(
    "sources",
    [[(0.9, 100), (0.5, 300)], [(0.8, 0), (0.4, 0)]],
    ids=["weighted-by-text-length", "empty-sources-plain-mean"],
)
def test_B14_confidence_weighted_by_text_length_or_plain_mean(sources):
    # (0.9 * 100 + 0.5 * 300) / 400 = 0.6; no text at all: (0.8 + 0.4) / 2 = 0.6.
    # No noise, no resources, no sentence end.
    score, parts = score_chunk("alpha beta gamma", sources)
    assert parts["confidence"] == pytest.approx(0.6)
    assert score == pytest.approx(0.6)
    assert parts["penalty_total"] == 0.0


@pytest.mark.case("B14")
@pytest.mark.parametrize(
    ("text", "ratio", "penalty", "expected"),
    [
        ("a" * 19 + "\ufffd", 0.05, 0.1, 0.9),  # 1 noise character in 20: ratio 0.05, penalty 0.1
        ("ab" + "\x07" * 8, 0.8, 0.5, 0.5),  # ratio 0.8 -> 2 * 0.8 = 1.6, capped at 0.5
    ],
    ids=["twice-the-ratio", "capped-at-half"],
)
def test_B14_noise_penalty_is_twice_the_noise_ratio_capped_at_half(text, ratio, penalty, expected):
    score, parts = score_chunk(text, [(1.0, len(text))])
    assert parts["noise_ratio"] == pytest.approx(ratio)
    assert parts["noise_penalty"] == pytest.approx(penalty)
    assert score == pytest.approx(expected)


@pytest.mark.case("B14")
@pytest.mark.parametrize(
    ("text", "noise"),
    [
        ("Plain words, digits 123, punctuation . , ; : ! ? ' \" ( ) [ ] { } - / % & * + = < > @ # $ _ |", 0),
        ("Typographic “quotes” ‘single’ – — … • · ° § © ® ™ ± × ÷ € £ ¥ «guillemets»", 0),
        ("Accents é ü ß ñ, Greek αβγ, Cyrillic жук, CJK 漢字, decomposed e\u0301, superscript x²", 0),
        ("\x00\x01\x1b\x7f", 4),  # control characters (whitespace controls are whitespace)
        ("^`\\", 3),
        ("\ufffd\ue000╬✂∑∫", 6),  # replacement char, private use, box drawing, dingbat, math ops
        ("tab\tnew\nline\r\x0b\x0c no-break\u00a0space", 0),
    ],
)
def test_B14_noise_character_set(text, noise):
    assert noise_count(text) == noise


def _naive_noise(text: str) -> int:
    allowed = set(".,;:!?'\"()[]{}-/%&*+=<>@#$_|~–—‐‑‒−…“”‘’„‚«»‹›•·°§¶©®™±×÷′″€£¥¢‰†‡¡¿\u00a0\u202f")
    return sum(
        1 for c in text
        if not (c.isalnum() or c.isspace() or c in allowed or unicodedata.category(c)[0] == "M")
    )


def _naive_tokens(text: str) -> list[str]:
    runs, current = [], ""
    for c in text.lower() + " ":
        if c.isalpha() or unicodedata.category(c)[0] == "M":  # letters and combining marks
            current += c
        else:
            runs.append(current)
            current = ""
    return [r for r in runs if len(r) > 1]


@pytest.mark.case("B14")
@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200))
def test_B14_noise_and_tokens_match_the_per_character_definition(text):
    # The byte-level fast paths must agree with the plain per-character definitions.
    assert noise_count(text) == _naive_noise(text)
    if "Σ" not in text and len(text.lower()) == len(text):  # case mapping that changes length aside
        assert alphabetic_tokens(text) == _naive_tokens(text)


@pytest.mark.case("B14")
def test_B14_total_penalty_capped_at_point_eight_and_score_clamped_at_zero(fake_word_list, fake_language_id):
    text = "zzzz qqqq " + "\x07" * 5  # noise 5/15 -> 0.5 (capped); coverage 0/2 -> 0.3
    language_id = fake_language_id(language="xx", confidence=0.0)  # (0.8 - 0.0) * 0.5 = 0.4
    score, parts = score_chunk(text, [(0.5, 15)], word_list=fake_word_list, language_id=language_id)
    assert (parts["noise_penalty"], parts["coverage_penalty"], parts["language_penalty"]) == pytest.approx(
        (0.5, 0.3, 0.4)
    )
    assert parts["penalty_total"] == pytest.approx(0.8)  # 1.2 capped
    assert score == 0.0  # 0.5 - 0.8 clamped
    assert parts["score"] == 0.0


@pytest.mark.case("B14")
def test_B14_score_clamped_at_one_with_sentence_bonus():
    score, parts = score_chunk("Alpha beta.", [(1.0, 11)])
    assert parts["sentence_end_bonus"] == 0.05
    assert score == 1.0


@pytest.mark.case("B14")
def test_B14_dictionary_unavailable_gives_no_coverage_penalty():
    score, parts = score_chunk("zzz qqq xxx vvv", [(0.9, 15)], word_list=None)
    assert parts["dictionary_coverage"] is None
    assert parts["coverage_penalty"] == 0.0
    assert score == pytest.approx(0.9)


@pytest.mark.case("B14")
def test_B14_dictionary_low_coverage_exact_penalty(fake_word_list):
    # Tokens (2+ letters): the, alpha, zzz, qqq, xxx -> 2/5 = 0.4; "a" and "I" (single letters,
    # "a" IS in the word list) and "x_1 2024" do not count. Penalty 0.6 - 0.4 = 0.2.
    text = "The alpha zzz qqq xxx a I x_1 2024"
    score, parts = score_chunk(text, [(1.0, len(text))], word_list=fake_word_list)
    assert alphabetic_tokens(text) == ["the", "alpha", "zzz", "qqq", "xxx"]
    assert parts["dictionary_coverage"] == pytest.approx(0.4)
    assert parts["coverage_penalty"] == pytest.approx(0.2)
    assert score == pytest.approx(0.8)


@pytest.mark.case("B14")
@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The “Quick” brown—fox isn't here", ["the", "quick", "brown", "fox", "isn", "here"]),
        ("Éclair CAFÉ x_1 2024 a I ok.", ["éclair", "café", "ok"]),
        ("Жук пишет по-русски", ["жук", "пишет", "по", "русски"]),
        ("ΟΔΟΣ • alpha", ["οδος", "alpha"]),  # Unicode lower-casing: final sigma
        ("L(θ) = ∑_i (θ x_i − y_i)²", []),
    ],
)
def test_B14_dictionary_tokens_are_lowercased_letter_runs(text, tokens):
    assert alphabetic_tokens(text) == tokens


@pytest.mark.case("B14")
def test_B14_dictionary_coverage_penalty_capped(fake_word_list):
    score, parts = score_chunk("zzz qqq xxx", [(1.0, 11)], word_list=fake_word_list)
    assert parts["dictionary_coverage"] == 0.0
    assert parts["coverage_penalty"] == pytest.approx(0.3)  # min(0.6 - 0.0, 0.3)
    assert score == pytest.approx(0.7)


@pytest.mark.case("B14")
@pytest.mark.parametrize(
    ("text", "coverage"),
    [
        ("The data table is in the report section.", 1.0),
        ("the data row zzz qqq", 0.6),  # exactly 60%: not under, no penalty
    ],
)
def test_B14_dictionary_high_coverage_no_penalty(fake_word_list, text, coverage):
    _, parts = score_chunk(text, [(1.0, 10)], word_list=fake_word_list)
    assert parts["dictionary_coverage"] == pytest.approx(coverage)
    assert parts["coverage_penalty"] == 0.0


@pytest.mark.case("B14")
def test_B14_dictionary_without_alphabetic_tokens_is_unmeasured(fake_word_list):
    _, parts = score_chunk("12 345 x_1 a I", [(1.0, 14)], word_list=fake_word_list)
    assert parts["dictionary_coverage"] is None
    assert parts["coverage_penalty"] == 0.0


@pytest.mark.case("B14")
def test_B14_fasttext_low_confidence_exact_penalty(fake_language_id):
    language_id = fake_language_id(language="de", confidence=0.5)
    score, parts = score_chunk("alpha beta\ngamma delta", [(1.0, 22)], language_id=language_id)
    assert language_id.calls == ["alpha beta gamma delta"]  # one line for fastText
    assert parts["language"] == "de"
    assert parts["language_confidence"] == pytest.approx(0.5)
    assert parts["language_penalty"] == pytest.approx(0.15)  # (0.8 - 0.5) * 0.5
    assert score == pytest.approx(0.85)


@pytest.mark.case("B14")
@pytest.mark.parametrize(("confidence", "penalty"), [(0.8, 0.0), (0.99, 0.0), (0.79, 0.005)])
def test_B14_fasttext_penalty_only_under_point_eight(fake_language_id, confidence, penalty):
    language_id = fake_language_id(confidence=confidence)
    _, parts = score_chunk("alpha beta gamma", [(1.0, 16)], language_id=language_id)
    assert parts["language_penalty"] == pytest.approx(penalty)


@pytest.mark.case("B14")
def test_B14_fasttext_raising_counts_as_confidence_one(fake_language_id):
    language_id = fake_language_id(error=RuntimeError("model file unreadable"))
    score, parts = score_chunk("alpha beta gamma", [(0.9, 16)], language_id=language_id)
    assert len(language_id.calls) == 1
    assert parts["language_confidence"] == 1.0
    assert parts["language_penalty"] == 0.0
    assert parts["language"] is None
    assert parts["language_error"] == "RuntimeError"
    assert score == pytest.approx(0.9)


@pytest.mark.case("B14")
@pytest.mark.parametrize(
    ("text", "queried"), [("Short.", False), ("  123456789  ", False), ("1234567890", True)]
)
def test_B14_short_text_is_not_sent_to_language_id(fake_language_id, text, queried):
    language_id = fake_language_id(confidence=0.1)
    _, parts = score_chunk(text, [(1.0, len(text))], language_id=language_id)
    assert bool(language_id.calls) is queried
    if not queried:
        language = (parts["language"], parts["language_confidence"], parts["language_penalty"])
        assert language == (None, 1.0, 0.0)


@pytest.mark.case("B14")
def test_B14_long_text_sends_a_bounded_whole_word_sample_to_language_id(fake_language_id):
    language_id = fake_language_id(confidence=0.5)
    text = "alpha beta\n" * 100  # 1,100 characters
    _, parts = score_chunk(text, [(1.0, len(text))], language_id=language_id)
    (sent,) = language_id.calls
    assert sent == " ".join(["alpha beta"] * 46) + " alpha"  # 511 characters, no word cut
    assert len(sent) <= LANGUAGE_SAMPLE_CHARS == 512
    assert parts["language_penalty"] == pytest.approx(0.15)


@pytest.mark.case("B14")
def test_B14_unknown_sources_score_half(fake_word_list, fake_language_id):
    language_id = fake_language_id(confidence=0.1)
    score, parts = score_chunk("zzz \x07\x07 qqq", [], word_list=fake_word_list, language_id=language_id)
    assert score == UNKNOWN_SOURCES_SCORE == 0.5
    assert parts["unknown_sources"] is True
    assert parts["score"] == 0.5
    assert language_id.calls == []  # nothing else is computed


@pytest.mark.case("B14")
@pytest.mark.parametrize(
    ("text", "bonus"),
    [
        ("It ends.", 0.05), ("It ends!", 0.05), ("It ends?", 0.05), ("It ends:", 0.05),
        ('He said "stop"', 0.05), ("He said “stop”", 0.05), ("It trails…", 0.05),
        ("(See Table 2.)", 0.05), ("‘It ends.’", 0.05), ("It ends.  \n", 0.05),
        ("It does not end", 0.0), ("It does not end,", 0.0), ("It does not end;", 0.0),
        ("(no end)", 0.0), ("", 0.0),
    ],
)
def test_B14_sentence_end_bonus(text, bonus):
    score, parts = score_chunk(text, [(0.5, 10)])
    assert parts["sentence_end_bonus"] == bonus
    assert score == pytest.approx(0.5 + bonus)


@pytest.mark.case("B14")
def test_B14_components_complete_json_serialisable_and_rounded(fake_resources):
    text = "The alpha model results show the data. zzz \ufffd"
    score, parts = score_chunk(
        text, [(0.7777777, 13), (0.3333333, 29)],
        word_list=fake_resources.word_list, language_id=fake_resources.language_id,
    )
    assert parts.keys() >= _REQUIRED_KEYS
    assert json.loads(json.dumps(parts)) == parts
    for value in parts.values():
        if isinstance(value, float):
            assert value == round(value, 4)
    assert score == parts["score"]


@pytest.mark.case("B14")
def test_B14_pipeline_stores_quality_components(make_block, fake_resources):
    blocks = [
        make_block("Alpha beta", confidence=0.9),  # 10 characters
        make_block("Model results show table data.", confidence=0.5),  # 30 characters
    ]
    result = chunk_blocks(blocks, {"min_tokens": 1, "overlap_blocks": 0}, fake_resources)
    assert len(result.chunks) == 1
    chunk = result.chunks[0]
    quality = chunk.metadata["quality"]
    assert quality["confidence"] == pytest.approx(0.6)  # (0.9 * 10 + 0.5 * 30) / 40
    assert quality["dictionary_coverage"] == 1.0
    assert quality["language"] == "en"
    assert quality["sentence_end_bonus"] == 0.05
    assert chunk.quality_score == pytest.approx(0.65)
    assert quality["score"] == pytest.approx(0.65)


@pytest.mark.case("B14")
def test_B14_pipeline_without_resources_scores_confidence_only(make_block):
    blocks = [make_block("zzz qqq xxx vvv", confidence=0.8)]
    result = chunk_blocks(blocks, {"min_tokens": 1}, Resources())
    quality = result.chunks[0].metadata["quality"]
    assert (quality["dictionary_coverage"], quality["language"]) == (None, None)
    assert result.chunks[0].quality_score == pytest.approx(0.8)
