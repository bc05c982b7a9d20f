"""Tokenizers as token counters (loaders/tokenizers.py): the three kinds, their windows,
digests, the counter each tokenizer gets, and counts held to the real tokenizer.

Every count is compared with the tokenizer itself, loaded apart from the loader
(:func:`tests.tokenizer_builds.real_count`: ``encode(text, add_special_tokens=True)``), on
texts built to hit every kind of whitespace and character class, and on joins of pieces.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
import shutil
from pathlib import Path

import pytest

from loaders.tokenizer import TOKENIZER_FILE, TokenizerUnavailable
from loaders.tokenizers import (
    OTHER_PYTHON_WHITESPACE,
    SegmentCounter,
    WholeTextCounter,
    WordCounter,
    load_named,
    load_path,
    load_tokenizer,
    model_window,
    spec_for_path,
    words,
)
from longparser.tokens import count
from schemas.tokenizers import TokenizerSpec
from tests.property.strategies import SEPARATORS, WORDS
from tests.tokenizer_builds import (
    bpe_model_dir,
    metaspace_tokenizer_file,
    real_count,
    tiktoken_declaration,
    wordpiece_st_dir,
)

PIECES = (*WORDS, *SEPARATORS, "<|endoftext|>", "[CLS]", "[SEP]", "end.", "it's", "“q”", "⑴", "¨", "ﬁ", "½")
GLUES = ("", " ", "  ", "\n", "\n\n", "\t", ".\n", " \n ", "\r\n", "\u3000", "\x0b", "\x1c", "\x85")
CHARACTERS = list(" \t\n\r\u3000\xa0\x0b\x0c\x1c\x85\u2028.,:;!?'\"()[]-—/_#%€0123456789abcXYZéü数据🙂"
                  "\u0301\u200b\ufeffﬁ½⑴²¨<>|")


def texts(seed: int, n: int) -> list[str]:
    """Random texts: character soup, and pieces glued by every kind of whitespace."""
    rng = random.Random(seed)
    found = []
    for _ in range(n):
        if rng.random() < 0.4:
            found.append("".join(rng.choice(CHARACTERS) for _ in range(rng.randint(0, 40))))
        else:
            found.append("".join(rng.choice(PIECES) + rng.choice(GLUES) for _ in range(rng.randint(0, 25))))
    return found


@functools.cache
def wordpiece() -> WordCounter:
    counter = load_tokenizer(TokenizerSpec(path=str(TOKENIZER_FILE), kind="hf", window=256), name="minilm")
    assert isinstance(counter, WordCounter)
    return counter


def _once(load):  # a counter per case for the whole module (loading probes the tokenizer)
    return functools.cache(load)


CASES = {
    "wordpiece-hf": (wordpiece, lambda: TOKENIZER_FILE),
    "wordpiece-st": (_once(lambda: load_path(str(wordpiece_st_dir()))), lambda: wordpiece_st_dir()),
    "wordpiece-st-lower": (_once(lambda: load_path(str(wordpiece_st_dir(128, True)))),
                           lambda: wordpiece_st_dir(128, True)),
    "bpe-hf": (_once(lambda: load_path(str(bpe_model_dir()))), lambda: bpe_model_dir()),
    "bpe-tiktoken": (_once(lambda: load_path(str(tiktoken_declaration()))), lambda: tiktoken_declaration()),
    "unigram-metaspace": (_once(lambda: load_tokenizer(TokenizerSpec(path=str(metaspace_tokenizer_file()),
                                                                     kind="hf", window=512))),
                          lambda: metaspace_tokenizer_file()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_counts_are_the_tokenizers_own(case: str) -> None:
    load, reference = CASES[case]
    counter = load()
    for text in texts(seed=len(case), n=1500):
        assert count(counter, text) == real_count(reference(), text), repr(text)


@pytest.mark.parametrize("case", sorted(CASES))
def test_joined_pieces_count_as_the_joined_text(case: str) -> None:
    """What the engine does: measure pieces, then join them with whitespace; an additive
    counter adds the units up, the others count the joined text."""
    load, reference = CASES[case]
    counter = load()
    rng = random.Random(7)
    for _ in range(400):
        pieces = [rng.choice(texts(rng.randrange(10**6), 1)) for _ in range(rng.randint(1, 5))]
        joined = "".join(piece + rng.choice(["\n\n", "\n", " "]) for piece in pieces[:-1]) + pieces[-1]
        units = counter.measure(pieces)
        counted = counter.count_joined("" if counter.additive else joined, units)
        assert counted == real_count(reference(), joined), joined


def test_each_family_gets_its_counter() -> None:
    """WordPiece counts by words (additive); byte-level BPE by segments; a Metaspace
    pre-tokenizer, which joins a line break to the next word, counts whole texts."""
    assert isinstance(wordpiece(), WordCounter) and wordpiece().additive
    assert isinstance(CASES["wordpiece-st"][0](), WordCounter)
    for case in ("bpe-hf", "bpe-tiktoken"):
        counter = CASES[case][0]()
        assert isinstance(counter, SegmentCounter) and not counter.additive
    assert isinstance(CASES["unigram-metaspace"][0](), WholeTextCounter)
    line_break = "alpha\nbeta"  # why: the Metaspace pre-tokenizer keeps "alpha\nbeta" one piece
    assert real_count(metaspace_tokenizer_file(), line_break) != sum(
        real_count(metaspace_tokenizer_file(), part) for part in ("alpha", "\nbeta"))


def test_byte_level_bpe_is_not_additive_which_is_why_it_recounts() -> None:
    """The reason the BPE counters recount joins: a separator costs tokens and glues to words."""
    real = bpe_model_dir()
    assert real_count(real, "alpha\n\nbeta") != real_count(real, "alpha") + real_count(real, "beta")


def test_special_tokens_count_as_the_model_adds_them() -> None:
    assert wordpiece().special_tokens == 2 and count(wordpiece(), "") == 2  # [CLS] [SEP]
    assert load_path(str(tiktoken_declaration())).special_tokens == 0
    declaration = json.loads(tiktoken_declaration().read_text(encoding="utf-8"))
    declaration["add_special_tokens"] = ["<|endoftext|>"]
    declaration["path"] = str(tiktoken_declaration().parent / declaration["path"])
    counter = load_tokenizer(TokenizerSpec.model_validate(declaration))
    assert count(counter, "hello world") == real_count(tiktoken_declaration(), "hello world") + 1


def test_a_huge_text_is_counted_exactly() -> None:
    text = "The turbine produced more power this year.\n\n" * 2000 + "x" * 5000
    for load, reference in CASES.values():
        assert count(load(), text) == real_count(reference(), text)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_prefix_search_stays_within_the_budget(case: str) -> None:
    load, reference = CASES[case]
    counter = load()
    for text in ["x" * 300, "数据🙂" * 80, "supercalifragilistic" * 20, " ".join(WORDS) * 3]:
        for budget in (3, 5, 9, 17, 40):
            end = counter.fitting_prefix(text, budget)
            assert real_count(reference(), text[:end]) <= budget
            assert end > 0 or real_count(reference(), text[:1]) > budget


def test_words_split_only_where_every_tokenizer_splits() -> None:
    assert words(" a\tb\nc\r\nd ") == ["a", "b", "c", "d"]
    assert words("a\x0bb a\x1cb a\u3000b") == ["a\x0bb", "a\x1cb", "a\u3000b"]  # kept whole: counted whole


# --- windows ----------------------------------------------------------------------------------


def _model_dir(tmp_path: Path, **files: dict[str, object]) -> Path:
    shutil.copy(TOKENIZER_FILE, tmp_path / "tokenizer.json")
    for name, content in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(content), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("files", "window"),
    [
        ({"sentence_bert_config": {"max_seq_length": 384},
          "tokenizer_config": {"model_max_length": 512}}, 384),
        ({"tokenizer_config": {"model_max_length": 512}, "config": {"max_position_embeddings": 514}}, 512),
        ({"tokenizer_config": {"model_max_length": 1e30}, "config": {"max_position_embeddings": 8192}}, 8192),
        ({"config": {"max_position_embeddings": 2048}}, 2048),
    ],
    ids=["sentence-bert", "tokenizer-config", "huge-means-none", "position-embeddings"],
)
def test_the_window_comes_from_the_models_own_config(tmp_path: Path, files: dict, window: int) -> None:
    directory = _model_dir(tmp_path, **files)
    assert model_window(directory) == window
    assert load_path(str(directory)).window == window
    assert load_path(str(directory / "tokenizer.json")).window == window  # its directory's files


def test_a_window_nobody_states_is_required(tmp_path: Path) -> None:
    directory = _model_dir(tmp_path)
    with pytest.raises(TokenizerUnavailable, match="window is not in its config files"):
        load_path(str(directory))
    assert load_tokenizer(TokenizerSpec(path=str(directory), kind="hf", window=128)).window == 128


def test_a_declared_window_above_the_models_own_is_refused(tmp_path: Path) -> None:
    directory = _model_dir(tmp_path, tokenizer_config={"model_max_length": 512})
    with pytest.raises(TokenizerUnavailable, match="declared window 1024 is above the model's own 512"):
        load_tokenizer(TokenizerSpec(path=str(directory), kind="hf", window=1024))
    assert load_tokenizer(TokenizerSpec(path=str(directory), kind="hf", window=256)).window == 256


def test_a_sentence_transformers_directory_uses_its_module_path_and_settings(tmp_path: Path) -> None:
    root = tmp_path / "model"
    (root / "0_Transformer").mkdir(parents=True)
    shutil.copy(TOKENIZER_FILE, root / "0_Transformer" / "tokenizer.json")
    (root / "0_Transformer" / "sentence_bert_config.json").write_text('{"max_seq_length": 200}')
    (root / "modules.json").write_text(json.dumps(
        [{"idx": 0, "name": "0", "path": "0_Transformer",
          "type": "sentence_transformers.models.Transformer"}]))
    counter = load_path(str(root))
    assert (counter.kind, counter.window) == ("st", 200)


# --- refusals: one line naming the file -------------------------------------------------------


def test_a_digest_that_differs_is_refused() -> None:
    digest = hashlib.sha256(TOKENIZER_FILE.read_bytes()).hexdigest()
    assert load_tokenizer(TokenizerSpec(path=str(TOKENIZER_FILE), kind="hf", window=256, sha256=digest))
    with pytest.raises(TokenizerUnavailable, match=f"has sha256 {digest}, not the declared 0000"):
        load_tokenizer(TokenizerSpec(path=str(TOKENIZER_FILE), kind="hf", window=256, sha256="0" * 64))


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("absent", None, "no such file or directory"),
        ("empty", "", "neither a sentence-transformers directory"),
        ("x.tiktoken", "", "needs its pattern and window"),
        ("t.json", "{}", "not a tokenizers file"),
        ("d.json", '{"kind": "tiktoken", "path": "x"}',
         "not a tokenizer declaration: .*needs window and pattern"),
    ],
    ids=["absent", "empty-dir", "bare-tiktoken", "not-tokenizer-json", "incomplete-declaration"],
)
def test_what_cannot_be_loaded_is_said_in_one_line(tmp_path: Path, name: str, content: str | None,
                                                   message: str) -> None:
    path = tmp_path / name
    if content == "" and "." not in name:
        path.mkdir()
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(TokenizerUnavailable, match=message) as info:
        load_path(str(path))
    assert "\n" not in str(info.value)


def test_a_tiktoken_file_that_is_not_ranks_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.tiktoken").write_text("not base64 at all\n")
    spec = TokenizerSpec(path=str(tmp_path / "bad.tiktoken"), kind="tiktoken", window=10,
                         pattern="cl100k_base")
    with pytest.raises(TokenizerUnavailable, match="line 1 is not 'base64-token rank'"):
        load_tokenizer(spec)


def test_a_declaration_file_resolves_its_path_beside_itself() -> None:
    spec = spec_for_path(str(tiktoken_declaration()))
    assert spec.kind == "tiktoken" and Path(spec.path) == tiktoken_declaration().parent / "encoding.tiktoken"


def test_declared_names_load_and_undeclared_ones_are_refused() -> None:
    declared = {"mini": TokenizerSpec(path=str(TOKENIZER_FILE), kind="hf", window=256)}
    counters = load_named(["estimate", "model", "mini", None], declared)
    assert list(counters) == ["mini"] and counters["mini"].name == "mini"
    with pytest.raises(TokenizerUnavailable, match=r"tokenizer 'e5' is not declared .*declares: mini"):
        load_named(["e5"], declared)


def test_declarations_say_what_a_kind_needs() -> None:
    with pytest.raises(ValueError, match="needs window and pattern"):
        TokenizerSpec(path="x", kind="tiktoken")
    with pytest.raises(ValueError, match="are for tiktoken files"):
        TokenizerSpec(path="x", kind="hf", pattern="cl100k_base")
    with pytest.raises(ValueError, match="not among special_tokens"):
        TokenizerSpec(path="x", kind="tiktoken", window=8, pattern="r50k_base", add_special_tokens=["<s>"])


def test_words_split_at_the_four_separators_only_whatever_else_python_splits_at() -> None:
    others = "".join(c for c in map(chr, range(0x110000)) if c.isspace() and c not in " \t\n\r")
    listed = re.compile(f"[{OTHER_PYTHON_WHITESPACE}]")
    assert "".join(c for c in map(chr, range(0x110000)) if listed.fullmatch(c)) == others
    for other in others:
        assert words(f"a{other}b c") == [f"a{other}b", "c"]
