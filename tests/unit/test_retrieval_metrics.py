"""The retrieval benchmark's metric definitions (lpeval.retrieval_metrics), on hand-made chunks.

Tokens here are whitespace words, and cutting keeps the first words: the definitions do not
depend on the tokenizer, which the benchmark passes in.
"""

import pytest

from lpeval.retrieval_metrics import (
    first_rank,
    holds,
    normalise,
    occurrences,
    score_question,
    summarise,
    within_budget,
)


def words(text: str) -> int:
    return len(text.split())


def first_words(text: str, n: int) -> str:
    return " ".join(text.split()[:n])


def test_normalise_folds_case_compatibility_forms_and_whitespace():
    assert normalise("  The  ＡＢＣ\n\tﬁle  ") == "the abc file"
    assert normalise("O₂ and CO₂") == "o2 and co2"


def test_holds_needs_the_whole_answer_after_normalising():
    assert holds("Row: Count = 510377\n", "510377")
    assert holds("LEADS TO\ndefective   chromosome segregation", "leads to defective chromosome segregation")
    assert not holds("leads to defective chromosome", "leads to defective chromosome segregation")


def test_occurrences_counts_normalised_matches():
    assert occurrences("Abc abc ABC", "abc") == 3
    assert occurrences("a b", "a  b") == 1
    assert occurrences("nothing", "abc") == 0


def test_first_rank_is_one_based_over_the_given_order():
    texts = ["alpha", "beta answer", "gamma answer"]
    assert first_rank([2, 1, 0], texts, "answer") == 1
    assert first_rank([0, 1, 2], texts, "answer") == 2
    assert first_rank([0], texts, "answer") is None


def test_within_budget_cuts_the_last_chunk_to_the_tokens_left():
    texts = ["a b c", "d e f g", "h i"]
    assert within_budget([0, 1, 2], texts, 5, words, first_words) == ["a b c", "d e"]
    assert within_budget([2, 0], texts, 100, words, first_words) == ["h i", "a b c"]
    assert within_budget([0, 1], texts, 3, words, first_words) == ["a b c"]


def test_an_answer_cut_off_by_the_budget_is_not_recalled():
    texts = ["one two three", "x y the answer here"]
    score = score_question([0, 1], texts, "the answer", [4, 6, 7], words, first_words)
    assert score.rank == 2
    assert score.recalled == {4: False, 6: False, 7: True}
    assert not score.cut_mid_fact


def test_cut_mid_fact_when_the_answer_is_split_between_chunks():
    texts = ["the first half of the", "answer sits here"]
    score = score_question([0, 1], texts, "of the answer", [512], words, first_words)
    assert score.rank is None and score.cut_mid_fact and not score.missing
    assert score.recalled == {512: False}


def test_missing_from_the_source_is_not_a_cut():
    score = score_question([0], ["nothing"], "answer", [512], words, first_words, in_source=False)
    assert score.missing and not score.cut_mid_fact


def test_reciprocal_rank_stops_at_the_cutoff():
    texts = [f"chunk {i}" for i in range(12)] + ["the answer"]
    order = list(range(13))
    score = score_question(order, texts, "the answer", [512], words, first_words)
    assert score.rank == 13
    assert score.reciprocal_rank(10) == 0.0
    assert score.reciprocal_rank(20) == pytest.approx(1 / 13)
    assert score.hit(13) and not score.hit(5)


def test_summarise_means_over_questions():
    texts = ["the answer", "other", "more text"]
    scores = [
        score_question([0, 1, 2], texts, "the answer", [2, 4], words, first_words),  # rank 1
        score_question([1, 2, 0], texts, "the answer", [2, 4], words, first_words),  # rank 3
        score_question([0, 1, 2], texts, "absent", [2, 4], words, first_words),      # cut
    ]
    summary = summarise(scores, [2, 4])
    assert summary["questions"] == 3
    assert summary["hit@1"] == pytest.approx(1 / 3)
    assert summary["hit@5"] == pytest.approx(2 / 3)
    assert summary["mrr@10"] == pytest.approx((1 + 1 / 3) / 3)
    assert summary["recall@2"] == pytest.approx(1 / 3)
    assert summary["recall@4"] == pytest.approx(1 / 3)
    assert summary["cut_mid_fact"] == 1 and summary["missing"] == 0
    assert summarise([], [2]) == {"questions": 0}
