"""The model's token counter against the tokenizer's own encode (the pinned tokenizer file).

The counter counts word by word with a memo; these tests hold it to the count of
``Tokenizer.encode`` on the whole text, over texts made of the characters where the two could
part: ASCII punctuation, controls the normalizer deletes (some of which Python splits at),
Unicode whitespace and punctuation, accents and combining marks, CJK, and words too long for
WordPiece.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loaders.tokenizers as tokenizers_module
from loaders.tokenizer import load_model_counter

COUNTER = load_model_counter()


def _encoded(text: str) -> int:
    return len(COUNTER.tokens.tokenizer.encode(text, add_special_tokens=False).ids)


TRICKY = (
    "aZ09 .,;:!?'\"()[]{}-_/\\@#$%^&*+=<>|~`"  # ASCII letters, digits and punctuation
    "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85"  # whitespace, and controls Python splits at
    "\x00\x01\x07\x7f\u200b\u200d\ufeff\ufffd"  # controls and formats the normalizer deletes
    "\xa0\u2002\u2009\u202f\u3000\u2028"  # Unicode whitespace
    "\u2014\u2013\u2022\u25e6\u00b7\u2026\u00ab\u00bb\u201c\u201d\u00bf"  # Unicode punctuation, bullets
    "\u00e9\u00c9e\u0301\u00df\u03a3\u03c3\u0130\u00f1"  # accents, combining marks, case
    "\u4e2d\u6587\u3042\uac00\u2211\u222b\u00b2\u2264\U0001f600"  # CJK, kana, hangul, maths, emoji
)
words = st.text(alphabet=TRICKY, min_size=0, max_size=12) | st.sampled_from(
    ["tokenization", "Hello,", "x" * 101, "é" * 101, "naïve", "ΣΟΦΙΑ", "U.S.A.", "3.14159"]
)
texts = st.lists(words, max_size=30).map(lambda parts: " ".join(parts)) | st.text(max_size=80)


@settings(max_examples=400)
@given(texts)
def test_counts_equal_the_tokenizers_encode(text: str) -> None:
    assert COUNTER.measure([text]) == [_encoded(text)]


@given(st.lists(texts, min_size=1, max_size=5), st.sampled_from([" ", "\n\n", "\t", "\u3000"]))
def test_texts_joined_by_whitespace_count_the_sum_of_their_parts(parts: list[str], separator: str) -> None:
    joined = separator.join(parts)
    assert COUNTER.count_joined(joined, COUNTER.measure(parts)) == _encoded(joined) + COUNTER.special_tokens
    assert COUNTER.special_tokens == 2  # [CLS] and [SEP]


def test_the_word_memo_starts_again_at_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = load_model_counter()
    monkeypatch.setattr(tokenizers_module, "MEMO_LIMIT", 3)
    text = "one two three four five one"
    assert counter.measure([text]) == [_encoded(text)]
    assert len(counter.words) <= 3


def test_the_tokenizer_files_own_truncation_and_padding_are_undone() -> None:
    long_text = " ".join(["word"] * 300)
    assert COUNTER.measure([long_text]) == [300]
    assert _encoded(long_text) == 300


def test_the_tokenizers_own_tokens_in_a_text_count_as_its_encode_counts_them() -> None:
    texts = ["[CLS] x", "a[SEP]b", "[MASK]ed [PAD]"]
    assert COUNTER.measure(texts) == [_encoded(text) for text in texts]
