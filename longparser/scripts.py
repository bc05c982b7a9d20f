"""Chinese, Japanese and Korean text: where its sentences end, where it may be cut, and when the
model's tokenizer reads it so poorly that retrieval suffers.

* **Sentence ends.** Besides ``. ! ? …`` before whitespace (every script): the ideographic and
  fullwidth full stops and marks ``。 ！ ？ ． ｡``, with or without whitespace after them (Chinese
  and Japanese write none), closing brackets and quotes after them kept with the sentence
  (``。」``) unless a particle follows them (``「そうです。」と言った``);
  and ``. ! ?`` between two Hangul syllables (``…했다.이 결과는``: text whose
  line breaks a converter removed). Korean ``다.`` / ``요.`` endings before a space are sentence
  ends by the first rule.
* **Word boundaries.** Whitespace (Korean writes spaces between words), and between two
  characters when one of them is a Han ideograph or CJK punctuation: no tokenizer reads a Han
  ideograph as part of a longer word (WordPiece models split each one off), so a cut there is
  never inside a word. A cut never falls between two kana, two Hangul syllables or two Latin
  letters, before closing punctuation or an iteration mark (``々``, ``ー``), or after an opening
  bracket.
* **Clusters.** A cut inside an over-long word (the last resort) steps back out of a character
  cluster: never before a combining mark, a Hangul vowel or final jamo (text in decomposed
  form), a variation selector, or after a zero-width joiner or a Hangul initial jamo.
* **Poorly read text** (:func:`poorly_read_warning`): a tokenizer that knows a script only as
  ``[UNK]`` or single letters (all-MiniLM-L6-v2 splits Hangul into single jamo: a two-sentence
  line costs 46 tokens) gives vectors that retrieve such text badly. Where the counter can say
  how it reads a text (``poorly_read``, see :mod:`longparser.tokens`), chunks where such pieces
  make up :data:`POORLY_READ_SHARE` of the tokens or more are counted, and the result warns once.

Texts without any of these scripts are cut exactly as before (the patterns here apply only to a
text holding one of their characters).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence

from schemas import Chunk

logger = logging.getLogger(__name__)

# Han ideographs (and radicals, 々 〆 〇 and the Suzhou numerals), as tokenizers treat them: each
# one a word of its own.
HAN = ("\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3038-\u303b\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
       "\U00020000-\U0003134f")
HANGUL_SYLLABLES = "\uac00-\ud7a3"
HIRAGANA = "\u3041-\u309f"
# Every character that makes a text CJK or Korean: jamo, CJK punctuation, kana, Han, Hangul,
# compatibility forms, fullwidth and halfwidth forms.
_CJK_TEXT = re.compile("[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
                       "\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003134f]")

SENTENCE_MARKS = "。！？．｡"  # ideographic and fullwidth full stops and marks
# Closing brackets and quotes that stay with what they close.
CLOSERS = "\"'”’)\\]」』）〕】〉》〗〙〛｣］｝"
CJK_OPENERS = "「『（〔【〈《〖〘〚｢［｛"
OPENERS = CJK_OPENERS + "“‘(\\[{"
# Never first in a piece: closing and mid-sentence punctuation, iteration and length marks.
_FOLLOWERS = CLOSERS + SENTENCE_MARKS + "、，；：・…‥ー々〻ゝゞヽヾ゛゜.,;:!?%"
# After these a cut between characters is fine (with a Han ideograph they make the rule).
_ENDS_A_WORD = HAN + SENTENCE_MARKS + "、，；：」』）〕】〉》〗〙〛｣］｝"

# Sentence ends (group 1: the whitespace after, maybe none): every script's rule first.
CJK_SENTENCES = re.compile(
    r"(?:[.!?…][\"'”’)\]]*(?=\s)"
    rf"|[{SENTENCE_MARKS}][{SENTENCE_MARKS}!?]*+(?:[{CLOSERS}]++(?![{HIRAGANA}]))?+(?![{CLOSERS}])"
    rf"|(?<=[{HANGUL_SYLLABLES}])[.!?]+(?=[{HANGUL_SYLLABLES}]))"
    r"(\s*)(?=\S)"
)
# Word boundaries (group 1: the whitespace, or nothing between two characters).
CJK_WORDS = re.compile(
    rf"(\s+|(?<=[{_ENDS_A_WORD}])(?=[^\s{_FOLLOWERS}])|(?<=[^\s{OPENERS}])(?=[{HAN}{CJK_OPENERS}]))(?=\S)"
)

_JOINS_NEXT = re.compile("[\u200d\u1100-\u115f\ua960-\ua97f]")  # ZWJ, Hangul initial jamo
_JOINS_PREVIOUS = re.compile("[\u200c\u200d\u1160-\u11ff\ud7b0-\ud7ff\ufe00-\ufe0f\U0001f3fb-\U0001f3ff"
                             "\U000e0020-\U000e007f\U000e0100-\U000e01ef]")

# The share of a chunk's tokens, read poorly, from which its retrieval suffers.
POORLY_READ_SHARE = 0.3
MULTILINGUAL_MODELS = "paraphrase-multilingual-MiniLM-L12-v2 or multilingual-e5-small"


def has_cjk(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether ``text[start:end]`` holds a Chinese, Japanese or Korean character."""
    return not text.isascii() and _CJK_TEXT.search(text, start, len(text) if end is None else end) is not None


def inside_cluster(text: str, at: int) -> bool:
    """Whether a cut at ``at`` would split a character cluster (a syllable block written as
    jamo, a letter and its combining marks, an emoji sequence)."""
    if at <= 0 or at >= len(text):
        return False
    after = text[at]
    return (_JOINS_NEXT.match(text[at - 1]) is not None or _JOINS_PREVIOUS.match(after) is not None
            or unicodedata.combining(after) != 0 or unicodedata.category(after) in ("Mn", "Mc", "Me"))


def cluster_start(text: str, at: int, start: int) -> int:
    """``at``, or the start of the cluster it falls inside (never before ``start``)."""
    while at > start and inside_cluster(text, at):
        at -= 1
    return at


def poorly_read_warning(chunks: Sequence[Chunk], counter: object) -> list[str]:
    """``stats.warnings``: one warning when ``counter`` reads :data:`POORLY_READ_SHARE` or more
    of some chunks' tokens (``token_count``) as ``[UNK]``, single jamo or single CJK characters
    (the counter's ``poorly_read``; none from a counter without it)."""
    reading = getattr(counter, "poorly_read", None)
    if reading is None:
        return []
    poor = 0
    for chunk in chunks:
        found = reading(chunk.text)
        poor += found is not None and chunk.token_count > 0 and found >= POORLY_READ_SHARE * chunk.token_count
    if not poor:
        return []
    name = getattr(counter, "name", "the model")
    warning = (f"{poor} of {len(chunks)} chunks: {name}'s tokenizer reads {POORLY_READ_SHARE:.0%} or more "
               "of their tokens as [UNK], single jamo or single CJK characters, so this text "
               f"retrieves badly with this model; a multilingual encoder ({MULTILINGUAL_MODELS}), "
               "declared as the worker's tokenizer and encoder, would serve it")
    logger.warning(warning)
    return [warning]
