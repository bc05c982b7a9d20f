"""The word estimate's unit over any texts (Hypothesis): a text's words are exactly
``len(text.split())``, whichever whitespace it holds (ASCII runs, the separators ``\\x1c``-``\\x1f``,
no-break and ideographic spaces) and however the texts are batched (a few short texts are split,
a larger batch is counted on its bytes): each text of a batch counts as it would alone (no word
runs from one text into the next)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from longparser import tokens
from longparser.tokens import BATCH_CHARS, ESTIMATE, estimate_for_words, word_counts
from tests.property.test_invariants import PROPERTY_SETTINGS

# the characters where words split or do not: every ASCII whitespace, non-ASCII whitespace,
# letters of several scripts, punctuation and control characters that are not whitespace
PIECES = st.sampled_from([
    " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0", "\u2003", "\u3000",
    "a", "Z", "7", "é", "中", "-", ".", "\x00", "\x7f", "\u200b",
])
TEXTS = st.lists(st.text(alphabet=PIECES, max_size=40) | st.text(max_size=20), max_size=12)


@PROPERTY_SETTINGS
@given(TEXTS)
def test_each_texts_words_are_its_split(texts: list[str]) -> None:
    assert word_counts(texts) == [len(text.split()) for text in texts]
    # the same texts in a batch counted on its bytes: with a long text beside them
    batch = [*texts, "w0rd " * (BATCH_CHARS // 5 + 1), *texts]
    assert word_counts(batch) == [len(text.split()) for text in batch]


@PROPERTY_SETTINGS
@given(TEXTS)
def test_a_batch_measures_each_text_as_alone(texts: list[str]) -> None:
    texts = [*texts, "a " * BATCH_CHARS]  # a batch counted on its bytes
    assert ESTIMATE.measure(texts) == [units for text in texts for units in ESTIMATE.measure([text])]
    measured = zip(texts, ESTIMATE.measure(texts), strict=True)
    assert [ESTIMATE.count_joined(text, (units,)) for text, units in measured] == [
        estimate_for_words(len(text.split())) for text in texts]


@PROPERTY_SETTINGS
@given(TEXTS, st.integers(min_value=1, max_value=30))
def test_a_batch_counted_in_slices_counts_each_text_once(texts: list[str], slice_chars: int) -> None:
    # slices of a few characters: every text lands in exactly one slice, in order
    saved = tokens.BATCH_CHARS, tokens.SLICE_CHARS
    tokens.BATCH_CHARS, tokens.SLICE_CHARS = 0, slice_chars
    try:
        assert word_counts(texts) == [len(text.split()) for text in texts]
    finally:
        tokens.BATCH_CHARS, tokens.SLICE_CHARS = saved
