"""Chinese, Japanese and Korean text (longparser/scripts.py): sentence ends, cuts never inside a
word or a syllable block, and the warning when the model's tokenizer reads the text poorly.

Counted with the pinned model's real tokenizer (its counter needs no torch); the texts are the
fixture brief written for these tests (tests/fixtures/scripts/README.md).
"""

from __future__ import annotations

import json
import re
import unicodedata
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from loaders.tokenizer import load_model_counter
from longparser import chunk_blocks
from longparser.cutting import LEVELS, fitting_tail, sentence_starts, split_spans
from longparser.resources import Resources
from longparser.scripts import POORLY_READ_SHARE, cluster_start, has_cjk, poorly_read_warning
from longparser.tokens import ESTIMATE, count
from schemas import parse_input
from tests.counters import CallableCounter

ROOT = Path(__file__).resolve().parents[2]
BRIEF = ROOT / "tests" / "fixtures" / "scripts" / "cjk_brief.json"
MODEL = load_model_counter()
STRICT_MODEL = {"min_tokens": 0, "strict_max_tokens": True, "token_counter": "model", "overlap_blocks": 0}


def _brief() -> dict[str, str]:
    return {block["block_id"]: block["text"] for block in _brief_blocks()}


def _brief_blocks() -> list[dict[str, Any]]:
    return json.loads(BRIEF.read_text(encoding="utf-8"))["blocks"]


def _sentences(text: str) -> list[str]:
    starts = sentence_starts(text)
    return [text[a:b].strip() for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def _pieces(text: str, budget: int) -> list[str]:
    spans = split_spans(text, lambda piece: count(MODEL, piece) <= budget, MODEL)
    assert spans is not None
    return [text[s:e] for s, e in spans]


# --- sentence ends -------------------------------------------------------------------------


def test_korean_sentences_end_at_da_and_yo_and_at_a_period_between_syllables() -> None:
    brief = _brief()
    assert _sentences(brief["ko-p3"]) == [
        "질문에 답하자면, 열섬 강도가 가장 큰 곳은 중구였어요.",
        "가장 작은 곳은 강북구였고요.",
        "두 지역의 차이는 평균 2.4도였습니다.",
    ]
    # a converter joined the lines: "못했다.다만" is two sentences, "2.4도" is not
    assert _sentences(brief["ko-p4"]) == [
        "이 연구는 위성 자료의 해상도가 낮아 골목 단위의 차이를 보지 못했다.",
        "다만 다른 도시에도 같은 방법을 적용할 수 있다.",
        "후속 연구는 부산과 대구를 다룰 예정이다.",
    ]


def test_chinese_sentences_end_at_ideographic_and_fullwidth_marks() -> None:
    sentences = _sentences(_brief()["zh-p1"])
    assert len(sentences) == 6
    assert [s[-1] for s in sentences] == ["。", "！", "。", "？", "。", "．"]


def test_japanese_quotes_closed_by_a_full_stop_end_a_sentence_unless_a_particle_follows() -> None:
    assert _sentences(_brief()["ja-p1"]) == [
        "都市のヒートアイランド現象とは、都心の気温が周辺地域より高くなる現象である。",
        "研究チームは「緑地を増やすことが最も効果的です。」と述べた。",
        "「本当ですか。」", "「はい、本当です。」",
        "夜間の効果は小さく、平均で〇・三度にとどまった。",
        "コンクリートで覆われた地域では、夜になっても気温が下がりにくかった。",
    ]


@pytest.mark.parametrize("text", [
    "Pi is 3.14 here.It stays one sentence, e.g. this. And this one!",
    "A list: a.b.c and \u201cquoted.\u201d Then more\u2026 done",
    "Caf\u00e9 r\u00e9sum\u00e9. Na\u00efve!",
])
def test_text_without_cjk_ends_sentences_as_before(text: str) -> None:
    """Only whitespace after . ! ? \u2026 (and closing quotes) ends a sentence in other scripts."""
    before = [0, *[m.end(1) for m in re.finditer(r"[.!?\u2026][\"'\u201d\u2019)\]]*(\s+)(?=\S)", text)]]
    assert sentence_starts(text) == before
    assert not has_cjk(text)


# --- cuts ----------------------------------------------------------------------------------


def test_the_issue_case_a_korean_paragraph_is_cut_only_at_sentences() -> None:
    """Hangul costs the model about three tokens a syllable; a paragraph cut to a budget that
    holds a sentence or two is cut at sentence ends, never inside one."""
    text = _brief()["ko-p2"]
    assert count(MODEL, text) > 80
    pieces = _pieces(text, 80)  # its longest sentence counts 73
    assert len(pieces) > 1
    assert all(piece.endswith("다.") for piece in pieces)
    assert " ".join(pieces) == text


def test_a_korean_sentence_too_long_is_cut_between_words() -> None:
    sentence = _brief()["ko-p2"].split(". ")[3]
    pieces = _pieces(sentence, 24)
    assert len(pieces) > 1 and " ".join(pieces) == sentence  # every cut at a space


def test_chinese_is_cut_at_sentence_ends_without_spaces() -> None:
    text = _brief()["zh-p1"]
    pieces = _pieces(text, 40)
    assert len(pieces) > 1 and "".join(pieces) == text
    assert all(piece[-1] in "。！？．" for piece in pieces)


def test_chinese_without_punctuation_is_cut_between_characters() -> None:
    text = _brief()["zh-p2"]
    pieces = _pieces(text, 32)
    assert len(pieces) > 3 and "".join(pieces) == text
    assert all(count(MODEL, piece) <= 32 for piece in pieces)
    assert max(count(MODEL, piece) for piece in pieces) > 24  # pieces are filled, not one character each


def test_japanese_kana_words_are_not_cut_where_the_tokenizer_splits_them() -> None:
    """WordPiece splits kana runs into pieces ("です" -> "て", "##す"): a cut between characters
    lies next to a Han ideograph or CJK punctuation, never between two kana."""
    text = _brief()["ja-p1"]
    for budget in (12, 16, 24):
        pieces = _pieces(text, budget)
        assert "".join(pieces) == text
        for before, after in pairwise(pieces):
            assert not (_kana(before[-1]) and _kana(after[0])), (before, after)


def _kana(char: str) -> bool:
    return "\u3040" <= char <= "\u30ff"


def test_no_cut_inside_a_hangul_syllable_written_as_jamo() -> None:
    """Decomposed Hangul (conjoining jamo, as some PDFs hold it): even a word cut by the
    counter's tokens keeps each syllable block whole."""
    word = unicodedata.normalize("NFD", "가나다라마바사아자차카타파하" * 3)
    spans = split_spans(word, lambda piece: count(MODEL, piece) <= 10, MODEL)
    assert spans is not None and len(spans) > 1
    for start, _ in spans[1:]:
        assert "\u1100" <= word[start] <= "\u1112", f"piece starts inside a syllable: {word[start]!r}"


def test_a_cluster_longer_than_the_budget_is_still_cut() -> None:
    """The strict maximum wins: a cluster alone over the budget is cut inside it."""
    assert cluster_start("a\u0301\u0302", 2, 0) == 0
    assert cluster_start("ab\u0301", 2, 0) == 1
    text = "e" + "\u0301" * 40
    spans = split_spans(text, lambda piece: len(piece) <= 8, CallableCounter(len))
    assert spans is not None and "".join(text[s:e] for s, e in spans) == text


def test_overlap_tails_start_at_a_cjk_sentence() -> None:
    text = _brief()["zh-p1"]
    tail = fitting_tail(text, lambda piece: count(MODEL, piece) <= 30)
    assert tail and text.endswith(tail) and tail[0] == "研"


@pytest.mark.parametrize("counter", [ESTIMATE, MODEL, CallableCounter(lambda t: len(t) // 3 + 2)],
                         ids=["estimate", "model", "stub"])
def test_the_brief_fits_strictly_with_every_counter(counter: Any) -> None:
    blocks = parse_input(json.loads(BRIEF.read_text(encoding="utf-8"))).blocks
    result = chunk_blocks(blocks, {**STRICT_MODEL, "max_tokens": 48}, Resources(model_counter=counter))
    assert all(count(counter, c.embed_text or c.text) <= 48 for c in result.chunks)
    # nothing lost, in order: the chunks (no overlap) hold every block's characters
    held = "".join("".join(c.text for c in result.chunks).split())
    assert held == "".join("".join(block.text for block in blocks).split())


def test_levels_are_unchanged_for_text_without_cjk() -> None:
    text = "One sentence here. Another one follows, longer than the first. " * 20
    spans = split_spans(text, lambda piece: count(MODEL, piece) <= 20, MODEL, LEVELS)
    assert spans is not None
    assert all(text[s:e].endswith(".") for s, e in spans)


# --- the warning ---------------------------------------------------------------------------


def test_the_model_counter_says_how_much_it_reads_poorly() -> None:
    brief = _brief()
    assert MODEL.poorly_read("Urban heat islands raise night temperatures.") == 0
    assert _share(brief["ko-p2"]) > 0.8  # single jamo pieces
    assert _share(brief["zh-p1"]) > 0.8  # one Han character a piece, or [UNK]
    assert MODEL.poorly_read("\U0001f680\U0001f680 rocket") == 1  # the emoji word is one [UNK]
    assert MODEL.poorly_read("한") == 3 and MODEL.poorly_read("x 한 y 数") == 4  # jamo, Han


def _share(text: str) -> float:
    """The share of ``text``'s tokens, special tokens aside, read poorly."""
    poor = MODEL.poorly_read(text)
    assert poor is not None
    return poor / (count(MODEL, text) - MODEL.special_tokens)


def _warnings(blocks: list[dict[str, Any]], counter: Any = MODEL) -> list[str]:
    config = {**STRICT_MODEL, "max_tokens": 256, "token_counter": "model"}
    return chunk_blocks(blocks, config, Resources(model_counter=counter)).stats.warnings


def test_a_korean_brief_with_the_model_counter_is_warned_once() -> None:
    blocks = [block for block in _brief_blocks() if block["block_id"].startswith("ko")]
    result = chunk_blocks(blocks, {**STRICT_MODEL, "max_tokens": 64}, Resources(model_counter=MODEL))
    poor = [w for w in result.stats.warnings if "retrieves badly" in w]
    assert len(poor) == 1
    assert poor[0].startswith(f"{len(result.chunks)} of {len(result.chunks)} chunks: ")
    assert "paraphrase-multilingual-MiniLM-L12-v2" in poor[0]
    assert "declared as the worker's tokenizer and encoder" in poor[0]


def test_english_and_a_little_cjk_are_not_warned() -> None:
    english = [{"block_id": "e", "type": "paragraph", "text": "Green space lowers daytime temperatures."}]
    assert _warnings(english) == []
    # one Chinese word in an English sentence: under the share
    mixed = [{"block_id": "m", "type": "paragraph",
              "text": "The term for urban heat island in Chinese is 热岛, used across the report below."}]
    assert 0 < _share(mixed[0]["text"]) < POORLY_READ_SHARE
    assert _warnings(mixed) == []


def test_no_warning_from_a_counter_that_cannot_say() -> None:
    assert poorly_read_warning([_chunk("도시 열섬 현상", 4)], ESTIMATE) == []
    korean = [{"block_id": "k", "type": "paragraph", "text": _brief()["ko-p1"]}]
    config = {**STRICT_MODEL, "max_tokens": 64, "token_counter": "estimate"}
    assert chunk_blocks(korean, config).stats.warnings == []


def test_the_share_is_counted_per_chunk() -> None:
    class Poor:
        name = "poor"

        def poorly_read(self, text: str) -> int | None:
            return {"a": 30, "b": 29, "c": None}[text]

    chunks = [_chunk("a", 100), _chunk("b", 100), _chunk("c", 100), _chunk("a", 100)]
    warning = poorly_read_warning(chunks, Poor())
    assert len(warning) == 1 and warning[0].startswith("2 of 4 chunks: poor's tokenizer")
    assert poorly_read_warning([_chunk("b", 100), _chunk("c", 100), _chunk("a", 0)], Poor()) == []


def _chunk(text: str, tokens: int) -> Any:
    return SimpleNamespace(text=text, token_count=tokens)
