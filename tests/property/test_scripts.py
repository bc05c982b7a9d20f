"""Strict mode over Chinese, Japanese and Korean documents (Hypothesis), with every counter: the
word estimate, the pinned model's counter, a stub that is not additive, and the three tokenizer
families of test_tokenizer_families (WordPiece, byte-level BPE, tiktoken) recounted with the
real tokenizer.

Documents are sentences of the fixture brief (tests/fixtures/scripts/cjk_brief.json) joined the
ways converters join them: with spaces, line breaks, or nothing (Chinese and Japanese write no
spaces; a converter that drops line breaks writes ``했다.다만``), sometimes in decomposed Hangul
(conjoining jamo), sometimes beside English words. Invariants: no chunk over the maximum, nothing
lost, reading order, and no cut inside a word or a syllable block: a cut between two
non-whitespace characters has a Han ideograph or CJK punctuation on one side, and never falls
before a combining mark or a Hangul vowel or final jamo (or it is a sentence end,
``했다.다만``). The last holds wherever every word fits in half the budget (the other half may
go to repeated text); a longer word is cut inside by design.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from itertools import pairwise
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from longparser import chunk_blocks
from longparser.resources import Resources
from longparser.tokens import TokenCounter, count
from tests.property.strategies import configs
from tests.property.test_invariants import PROPERTY_SETTINGS, check_exclusions
from tests.property.test_strict import (
    COUNTERS,
    check_maximum,
    check_nothing_lost_in_pieces,
    check_reading_order,
)
from tests.property.test_tokenizer_families import (
    FAMILIES,
    FAMILY_SETTINGS,
    check_fits_real_tokenizer,
    family_resources,
)

BRIEF = Path(__file__).resolve().parents[1] / "fixtures" / "scripts" / "cjk_brief.json"
_TEXTS = [(b["block_id"][:2], b["text"]) for b in json.loads(BRIEF.read_text(encoding="utf-8"))["blocks"]
          if b["type"] == "paragraph"]
# The brief's sentences by language, split here by the test's own reading of the punctuation.
SENTENCES = {
    "ko": [s for lang, text in _TEXTS if lang == "ko" for s in re.split(r"(?<=\.)\s*(?=[가-힣])", text)],
    "zh": [s for lang, text in _TEXTS if lang == "zh" for s in re.findall(r"[^。！？．]+[。！？．]?", text)],
    "ja": [s for lang, text in _TEXTS if lang == "ja" for s in re.findall(r"[^。」]+[。」]+", text)],
}
ENGLISH = ("heat", "island", "Seoul", "2.4", "e.g.", "NDVI-based", "(see Table 2)")
JOINERS = {"ko": (" ", " ", "\n", ""), "zh": ("", "", " ", "\n"), "ja": ("", "", "\n", " ")}
PATHS = ((), ("도시 열섬 현상에 관한 연구 요약",), ("研究摘要", "主要结果"), ("ヒートアイランド",))


@st.composite
def cjk_paragraphs(draw: st.DrawFn) -> str:
    lang = draw(st.sampled_from(sorted(SENTENCES)))
    rng = random.Random(draw(st.integers(min_value=0, max_value=2**32 - 1)))
    joiner = rng.choice(JOINERS[lang])
    parts = [rng.choice(SENTENCES[lang]) for _ in range(draw(st.integers(min_value=1, max_value=14)))]
    if draw(st.booleans()):  # an English word or two inside
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(ENGLISH))
    text = joiner.join(parts)
    if lang == "ko" and draw(st.integers(min_value=0, max_value=3)) == 0:
        text = unicodedata.normalize("NFD", text)  # syllables as conjoining jamo
    return text


@st.composite
def cjk_documents(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Sections: an optional heading, then paragraphs and list items (a heading always has
    content after it: a stack of headings that fills the budget leaves its content no room for
    a whole word, by the rule that headings never end a chunk)."""
    blocks: list[dict[str, Any]] = []

    def block(kind: str, text: str, path: tuple[str, ...]) -> None:
        index = len(blocks)
        blocks.append({"block_id": f"b{index}", "type": kind, "text": text, "order_index": index,
                       "heading_level": 2 if kind == "heading" else None, "hierarchy_path": list(path),
                       "provenance": {"source_file": "brief.pdf", "page_number": 1}})

    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        path = draw(st.sampled_from(PATHS))
        if path and draw(st.booleans()):
            block("heading", path[-1], path)
        for _ in range(draw(st.integers(min_value=1, max_value=4))):
            kind = draw(st.sampled_from(["paragraph", "paragraph", "list_item"]))
            block(kind, draw(cjk_paragraphs()), path)
    return blocks


_HAN = re.compile(r"[\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_PUNCTUATION = re.compile(r"[\u3000-\u303f\uff00-\uffef]")
# Words a cut must not fall inside: runs of Hangul (syllables or jamo), of kana, of Latin letters and digits.
_WORDS = re.compile(r"[\u1100-\u11ff\uac00-\ud7a3]+|[\u3041-\u30ff]+|[A-Za-z0-9]+")


def _splits_a_cluster(after: str) -> bool:
    return unicodedata.combining(after) != 0 or "\u1160" <= after <= "\u11ff"


def check_no_cut_inside_a_word(blocks: list[dict[str, Any]], result: Any, cost: Any, budget: int) -> None:
    """Every cut between two non-whitespace characters lies beside a Han ideograph or CJK
    punctuation, or after a sentence's last mark, never inside a cluster (where every word fits
    in half the budget)."""
    texts = {block["block_id"]: block["text"] for block in blocks}
    words = [word for text in texts.values() for word in _WORDS.findall(text)]
    if any(cost(word) > budget // 2 for word in words):
        return
    spans: dict[str, set[tuple[int, int]]] = {}
    for chunk in result.chunks:
        for piece in chunk.metadata.get("block_parts", []):
            spans.setdefault(piece["block_id"], set()).add((piece["start"], piece["end"]))
    for block_id, found in spans.items():
        text, ordered = texts[block_id], sorted(found)
        for (_, end), (start, _) in pairwise(ordered):
            if end != start:
                continue  # cut at whitespace
            before, after = text[end - 1], text[start]
            assert not _splits_a_cluster(after), f"cut inside a cluster: {text[end - 4:start + 4]!r}"
            beside = [char for char in (before, after) if _HAN.match(char) or _CJK_PUNCTUATION.match(char)]
            hangul_sentence_end = before in ".!?" and _WORDS.fullmatch(text[end - 2]) is not None
            where = f"{text[max(0, end - 6):end]!r} | {text[start:start + 6]!r}"
            assert beside or hangul_sentence_end, f"cut inside a word: {where}"


def _strict(config: dict[str, Any], max_tokens: int, counter: str) -> dict[str, Any]:
    return {**config, "max_tokens": max_tokens, "min_tokens": min(config["min_tokens"], max_tokens - 1),
            "strict_max_tokens": True, "token_counter": counter}


@PROPERTY_SETTINGS
@given(blocks=cjk_documents(), config=configs(), max_tokens=st.sampled_from([16, 32, 64, 128, 256]),
       counter=st.sampled_from(sorted(COUNTERS)))
def test_strict_cjk_keeps_the_maximum_loses_nothing_and_cuts_no_word(
    blocks: list[dict[str, Any]], config: dict[str, Any], max_tokens: int, counter: str
) -> None:
    name, chosen = COUNTERS[counter]
    strict = _strict(config, max_tokens, name)
    result = chunk_blocks(blocks, strict, Resources(model_counter=chosen), document_id="cjk")
    kept = check_exclusions(blocks, strict, result)
    check_maximum(result, chosen, max_tokens)
    check_nothing_lost_in_pieces(blocks, kept, result)
    check_reading_order(blocks, result)
    counted: TokenCounter = chosen
    check_no_cut_inside_a_word(blocks, result, lambda word: count(counted, word), max_tokens)


@FAMILY_SETTINGS
@given(blocks=cjk_documents(), config=configs(), family=st.sampled_from(sorted(FAMILIES)),
       max_tokens=st.sampled_from([16, 32, 64, 128, 256, 512]))
def test_strict_cjk_fits_every_tokenizer_family(
    blocks: list[dict[str, Any]], config: dict[str, Any], family: str, max_tokens: int
) -> None:
    max_tokens = min(max_tokens, FAMILIES[family][2])
    strict = _strict(config, max_tokens, family)
    resources = family_resources(family)
    result = chunk_blocks(blocks, strict, resources, document_id="cjk")
    kept = check_exclusions(blocks, strict, result)
    check_fits_real_tokenizer(result, family, max_tokens)
    check_nothing_lost_in_pieces(blocks, kept, result)
    check_reading_order(blocks, result)
    counter = resources.counters[family]
    check_no_cut_inside_a_word(blocks, result, lambda word: count(counter, word), max_tokens)
