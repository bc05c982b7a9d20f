"""Retrieval metrics over answer strings: one definition of each, used by the benchmark and its tests.

A question is answered by a short answer string taken from its document. A chunk *holds* the
answer when the normalised chunk text contains the normalised answer (:func:`normalise`:
Unicode NFKC, case folding, every run of whitespace collapsed to one space), so a chunk cannot
match by formatting accident and every chunker is judged on the same text.

For one question, chunks are ranked best-first (their order is given; it comes from cosine
similarity of embeddings, computed elsewhere):

* **hit@k**: a chunk among the first ``k`` holds the answer.
* **reciprocal rank at 10** (MRR@10 when averaged): ``1 / rank`` of the first chunk holding the
  answer when that rank is at most 10, else 0.
* **recall at a budget of B tokens**: chunks are taken best-first, each counted in tokens of
  what is embedded for it, until B tokens are taken; the last chunk taken is cut to the tokens
  left (a prompt packer truncates its last passage). The question is recalled when one taken
  chunk (the cut one by its kept part) holds the answer whole.
* **cut mid-fact**: the answer occurs in the text the chunker was given, yet no single chunk
  holds it. An answer missing from that text altogether (a rendering that lost it) is counted
  apart, as *missing*, not as a cut.

No I/O and no model here: token counting and cutting are passed in as functions.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_SPACES = re.compile(r"\s+")

CountTokens = Callable[[str], int]
# keeps the first ``n`` tokens of a text (``n`` below the text's count)
CutToTokens = Callable[[str, int], str]


def normalise(text: str) -> str:
    """NFKC, case folding, whitespace runs collapsed to one space, ends stripped."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def holds(text: str, answer: str) -> bool:
    """Whether ``text`` contains the whole ``answer`` after normalising both."""
    return normalise(answer) in normalise(text)


def occurrences(text: str, answer: str) -> int:
    """Non-overlapping occurrences of the normalised answer in the normalised text."""
    return normalise(text).count(normalise(answer))


def first_rank(order: Sequence[int], texts: Sequence[str], answer: str) -> int | None:
    """1-based rank of the first chunk in ``order`` that holds the answer; None when none does."""
    return next((rank for rank, index in enumerate(order, 1) if holds(texts[index], answer)), None)


def within_budget(
    order: Sequence[int], texts: Sequence[str], budget: int, count: CountTokens, cut: CutToTokens
) -> list[str]:
    """The texts taken best-first until ``budget`` tokens; the last one cut to the tokens left."""
    taken: list[str] = []
    left = budget
    for index in order:
        if left <= 0:
            break
        tokens = count(texts[index])
        taken.append(texts[index] if tokens <= left else cut(texts[index], left))
        left -= min(tokens, left)
    return taken


@dataclass(frozen=True)
class QuestionScore:
    """One question against one chunker's chunks of its document."""

    rank: int | None  # first chunk holding the answer, over the full ranking
    recalled: dict[int, bool]  # budget -> answer held whole by a chunk within the budget
    cut_mid_fact: bool  # in the chunker's source text, but no chunk holds it
    missing: bool = False  # not in the chunker's source text at all

    def hit(self, k: int) -> bool:
        return self.rank is not None and self.rank <= k

    def reciprocal_rank(self, cutoff: int = 10) -> float:
        return 1.0 / self.rank if self.rank is not None and self.rank <= cutoff else 0.0


def score_question(
    order: Sequence[int], texts: Sequence[str], answer: str, budgets: Sequence[int],
    count: CountTokens, cut: CutToTokens, in_source: bool = True,
) -> QuestionScore:
    """Rank, recall at each budget and cut mid-fact of one question (``order``: best-first;
    ``in_source``: whether the answer occurs in the text the chunker was given)."""
    rank = first_rank(order, texts, answer)
    recalled = {
        budget: any(holds(t, answer) for t in within_budget(order, texts, budget, count, cut))
        for budget in budgets
    }
    return QuestionScore(rank=rank, recalled=recalled, cut_mid_fact=in_source and rank is None,
                         missing=not in_source)


def summarise(scores: Sequence[QuestionScore], budgets: Sequence[int]) -> dict[str, float | int]:
    """Means over questions: hit@1, hit@5, MRR@10, recall at each budget; and the cut count."""
    n = len(scores)
    if n == 0:
        return {"questions": 0}
    summary: dict[str, float | int] = {
        "questions": n,
        "hit@1": sum(s.hit(1) for s in scores) / n,
        "hit@5": sum(s.hit(5) for s in scores) / n,
        "mrr@10": sum(s.reciprocal_rank(10) for s in scores) / n,
    }
    for budget in budgets:
        summary[f"recall@{budget}"] = sum(s.recalled[budget] for s in scores) / n
    summary["cut_mid_fact"] = sum(s.cut_mid_fact for s in scores)
    summary["missing"] = sum(s.missing for s in scores)
    return summary
