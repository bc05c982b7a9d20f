"""Strict mode (``strict_max_tokens``): each target exception, exactly (docs/strict.md).

The counter here is the word estimate (``n`` words -> ``int(n * 1.33)`` tokens: 3 -> 3,
4 -> 5, 9 -> 11, 12 -> 15) so that every figure can be checked by hand; the model tokenizer and
a non-additive counter are covered by the property tests (tests/property/test_strict.py).
"""

from __future__ import annotations

from itertools import pairwise

import pytest

from longparser import Resources, chunk_blocks
from longparser.errors import RequestRefused
from longparser.tokens import ESTIMATE, count
from schemas import InputError
from tests.counters import CallableCounter
from tests.unit.engine_helpers import run_engine, table_dict, words

STRICT = {"strict_max_tokens": True}


def _fits(result, max_tokens: int) -> None:
    for chunk in result.chunks:
        assert count(ESTIMATE, chunk.embed_text or chunk.text) <= max_tokens, chunk.text


def test_packing_counts_the_joined_text_not_the_sum_of_blocks(make_block):
    blocks = [make_block("two words"), make_block("two more")]  # 2 + 2 by sums, 5 joined
    assert len(run_engine(blocks, max_tokens=4).chunks) == 1  # the target: sums
    strict = run_engine(blocks, max_tokens=4, **STRICT)
    assert [c.text for c in strict.chunks] == ["two words", "two more"]


def test_an_oversized_paragraph_is_cut_at_sentences_and_every_piece_names_its_part(make_block):
    sentences = [f"Sentence {i} has exactly six words." for i in range(6)]  # 6 words: 7 tokens each
    text = " ".join(sentences)
    result = run_engine([make_block(text, page=3)], max_tokens=16, **STRICT)
    assert [c.text for c in result.chunks] == [" ".join(sentences[i : i + 2]) for i in range(0, 6, 2)]
    assert all(c.block_ids == ["b1"] and c.page_numbers == [3] for c in result.chunks)
    parts = [c.metadata["block_parts"] for c in result.chunks]
    assert [(p[0]["part"], p[0]["of"]) for p in parts] == [(1, 3), (2, 3), (3, 3)]
    assert [text[p[0]["start"] : p[0]["end"]] for p in parts] == [c.text for c in result.chunks]
    _fits(result, 16)


def test_a_sentence_longer_than_the_budget_is_cut_between_words(make_block):
    result = run_engine([make_block(words(30))], max_tokens=12, **STRICT)  # 9 words = 11 tokens
    assert [c.text for c in result.chunks] == [words(9)] * 3 + [words(3)]
    _fits(result, 12)


def test_an_oversized_row_is_cut_into_cells_under_its_label_and_names(make_block):
    # Every piece repeats the row's number and its label cell (column 0 here), so each says which
    # row it belongs to.
    row = [["Name", "A", "B", "C"], ["Ada", words(5, "x"), words(5, "y"), words(5, "z")]]
    table = make_block("", "table", table=table_dict(row))
    result = run_engine([table], max_tokens=12, generate_schema_chunks=False, **STRICT)
    assert [c.text for c in result.chunks] == [
        f"Row 1: Name=Ada; A={words(5, 'x')}", f"Row 1: Name=Ada; B={words(5, 'y')}",
        f"Row 1: Name=Ada; C={words(5, 'z')}"]
    assert all(c.metadata["row_start"] == c.metadata["row_end"] == 1 for c in result.chunks)
    _fits(result, 12)


def test_a_pipe_row_too_long_alone_is_cut_into_records_without_the_header_line(make_block):
    # Its pieces name their columns (records), so the header line above them would only take room.
    row = [["Name", "A", "B"], ["Ada", words(6, "x"), words(6, "y")], ["Bob", "1", "2"]]
    table = make_block("", "table", table=table_dict(row, flag_header=True))
    result = run_engine([table], max_tokens=14, generate_schema_chunks=False, table_chunk_format="pipe",
                        **STRICT)
    assert [c.text for c in result.chunks] == [
        f"Row 1: Name=Ada; A={words(6, 'x')}", f"Row 1: Name=Ada; B={words(6, 'y')}",
        "Name | A | B\nBob | 1 | 2"]
    rows = [(c.metadata["row_start"], c.metadata["row_end"]) for c in result.chunks]
    assert rows == [(1, 1), (1, 1), (2, 2)]
    _fits(result, 14)


def test_a_cell_too_long_is_cut_under_its_row_label_and_column_name(make_block):
    row = [["Name", "Notes"], ["Ada", words(20, "note")]]
    table = make_block("", "table", table=table_dict(row))
    result = run_engine([table], max_tokens=12, generate_schema_chunks=False, **STRICT)
    texts = [c.text for c in result.chunks]
    assert all(t.startswith("Row 1: Name=Ada; Notes=note") for t in texts)
    assert sum(t.count("note") for t in texts) == 20  # every word once
    _fits(result, 12)


def test_a_batch_that_no_longer_fits_is_cut_between_rows_under_title_and_header(make_block):
    # The heading that opens the table pushes its first batch over: the batch is cut between
    # rows, and the next piece repeats the title and the header line.
    rows = [["Name", "Year"], *[[f"N{i}", str(1900 + i)] for i in range(3)]]
    blocks = [make_block("Results of the yearly count", "heading", path=["R"]),
              make_block("Table 1: Names by year.", path=["R"]),
              make_block("", "table", path=["R"], table=table_dict(rows))]
    result = run_engine(blocks, max_tokens=26, min_tokens=1, table_chunk_format="pipe", table_titles=True,
                        generate_schema_chunks=False, **STRICT)
    assert [(c.text, c.block_ids) for c in result.chunks] == [
        ("Results of the yearly count\nTable 1: Names by year.\nName | Year\nN0 | 1900\nN1 | 1901",
         ["b1", "b2", "b3"]),
        ("Table 1: Names by year.\nName | Year\nN2 | 1902", ["b3"]),
    ]
    assert [(c.metadata["row_start"], c.metadata["row_end"]) for c in result.chunks] == [(1, 2), (3, 3)]
    assert result.chunks[1].metadata["title_repeated"] is True
    assert result.chunks[0].metadata["caption_block_id"] == "b2"
    _fits(result, 26)


def test_a_long_list_item_is_cut_and_every_later_piece_repeats_the_lead_in(make_block):
    blocks = [make_block("Steps:"), make_block(words(20, "step"), "list_item")]
    result = run_engine(blocks, max_tokens=12, **STRICT)
    texts = [c.text for c in result.chunks]
    assert texts[0].startswith("Steps:\n") and all(t.startswith("Steps:\n") for t in texts)
    assert all(c.metadata.get("lead_in_block_id") == "b1" for c in result.chunks[1:])
    assert " ".join(t.removeprefix("Steps:\n") for t in texts) == words(20, "step")
    _fits(result, 12)


def test_a_lead_in_too_long_to_repeat_keeps_its_end(make_block):
    lead = words(20, "intro") + " the steps are:"
    blocks = [make_block(lead), *(make_block(words(5, f"s{i}"), "list_item") for i in range(6))]
    result = run_engine(blocks, max_tokens=20, **STRICT)
    later = [c for c in result.chunks if c.metadata.get("lead_in_repeated")]
    assert later and all(c.text.startswith("intro the steps are:\n") or "the steps are:\n" in c.text
                         for c in later)
    _fits(result, 20)


def test_a_merge_never_crosses_the_maximum(make_block):
    blocks = [make_block(words(9, "full")), make_block(words(3, "tail"))]  # 11 + 3 -> 16 joined
    default = run_engine(blocks, max_tokens=12, min_tokens=5)
    assert [c.text for c in default.chunks] == [f"{words(9, 'full')}\n\n{words(3, 'tail')}"]
    strict = run_engine(blocks, max_tokens=12, min_tokens=5, **STRICT)
    assert [c.text for c in strict.chunks] == [words(9, "full"), words(3, "tail")]


def test_overlap_takes_only_the_room_left(make_block):
    first, second = "One two three. Four five six seven.", words(6, "next")
    blocks = [make_block(first), make_block(second)]
    # The second chunk (6 words) has room for 3 more words under 12 tokens: the end of the first
    # paragraph from a word start that fits.
    result = run_engine(blocks, max_tokens=12, overlap_blocks=1, **STRICT)
    assert result.chunks[1].text == f"five six seven.\n\n{second}"
    assert result.chunks[1].metadata["overlap_block_ids"] == ["b1"]
    _fits(result, 12)
    # A full chunk gets no overlap at all.
    full = run_engine([make_block(first), make_block(words(9, "next"))], max_tokens=12, overlap_blocks=1,
                      **STRICT)
    assert not full.chunks[1].overlap_with_previous


def test_overlap_max_share_caps_overlap_without_strict_mode(make_block):
    blocks = [make_block(words(40, "before")), make_block(words(40, "after"))]
    result = run_engine(blocks, max_tokens=60, overlap_blocks=1, overlap_max_share=0.1)
    assert result.chunks[1].text == f"{words(5, 'before')}\n\n{words(40, 'after')}"  # 5 words = 6 <= 6


def test_the_schema_chunk_shows_as_many_sample_rows_as_fit(make_block):
    rows = [["Name", "Year"], *[[f"N{i}", str(1900 + i)] for i in range(8)]]
    table = make_block("", "table", table=table_dict(rows))
    default = run_engine([table], max_tokens=40)
    assert default.chunks[0].metadata["sample_rows"] == 5
    strict = run_engine([table], max_tokens=40, **STRICT)
    schema = strict.chunks[0]
    assert schema.chunk_type == "table_schema" and 0 < schema.metadata["sample_rows"] < 5
    _fits(strict, 40)


def test_a_caption_never_ends_a_piece_without_its_table(make_block):
    caption = make_block("Table 1: " + words(5, "caption"), "caption")
    table = make_block(words(30, "cell"), "table")  # a table without cells: its text
    result = run_engine([caption, table], max_tokens=16, **STRICT)
    assert result.chunks[0].text.startswith("Table 1:") and "cell" in result.chunks[0].text
    _fits(result, 16)


def test_equation_glue_yields_to_the_maximum(make_block):
    blocks = [make_block(words(9, "intro")), make_block(words(6, "lead")),
              make_block(words(6, "eq"), "equation")]
    default = run_engine(blocks, max_tokens=16)
    assert default.chunks[1].text == f"{words(6, 'lead')}\n\n{words(6, 'eq')}"  # glued, over 16
    strict = run_engine(blocks, max_tokens=16, **STRICT)
    _fits(strict, 16)


def test_the_breadcrumb_counts_and_is_shortened_before_content(make_block):
    path = [words(6, "outer"), words(6, "inner")]
    blocks = [make_block(words(8, "body"), path=path), make_block(words(8, "more"), path=path)]
    result = run_engine(blocks, max_tokens=20, heading_context=True, **STRICT)
    _fits(result, 20)
    # Both titles (2 x 7 tokens) would take over half of 20: the outer one goes first.
    assert all(c.embed_text.startswith(words(6, "inner") + "\n") for c in result.chunks)
    assert all(words(6, "outer") not in c.embed_text for c in result.chunks)


def test_the_model_window_is_refused_only_for_strict_model_requests():
    above = r"max_tokens 300 is above the window of token_counter 'model' \(256 tokens\)"
    with pytest.raises(InputError, match=above):
        chunk_blocks([], {"max_tokens": 300, "strict_max_tokens": True, "token_counter": "model"})
    assert chunk_blocks([], {"max_tokens": 300, "token_counter": "estimate", "strict_max_tokens": True})


def test_the_model_counter_is_refused_when_missing():
    with pytest.raises(RequestRefused, match="token_counter 'model' needs the embedding model's tokenizer"):
        chunk_blocks([{"block_id": "a", "type": "paragraph", "text": "x"}], {"token_counter": "model"},
                     Resources(model_counter_error="install tokenizers"))


def test_a_budget_too_small_for_one_character_is_refused():
    def counter(text: str) -> int:
        return len(text) + 10

    with pytest.raises(RequestRefused, match="leaves no room for text"):
        chunk_blocks([{"block_id": "a", "type": "paragraph", "text": "x"}],
                     {"max_tokens": 5, "min_tokens": 0, "strict_max_tokens": True, "token_counter": "model"},
                     Resources(model_counter=_Counter(counter)))


def test_the_refusal_names_the_chunk_limit_that_is_max_tokens_less_the_reserve():
    def counter(text: str) -> int:
        return len(text) + 10

    refusal = r"chunk limit 10 \(max_tokens less reserve_tokens\) leaves no room for text"
    with pytest.raises(RequestRefused, match=refusal):
        chunk_blocks([{"block_id": "a", "type": "paragraph", "text": "x"}],
                     {"max_tokens": 30, "reserve_tokens": 20, "min_tokens": 0, "strict_max_tokens": True,
                      "token_counter": "model"},
                     Resources(model_counter=_Counter(counter)))


class _Counter:
    """A counter from a function, not additive."""

    name, additive = "stub", False

    def __init__(self, function):
        self.function = function

    def measure(self, texts):
        return [self.function(text) for text in texts]

    def count_joined(self, text, units):
        return self.function(text)

    def fitting_prefix(self, text, budget):
        return max(0, min(len(text), budget - 10))


def test_a_heading_merged_into_a_list_piece_keeps_the_lead_in_for_later_pieces(make_block):
    # The heading-only chunk merges into the list's first piece, which then no longer fits and is
    # cut: the piece after the cut still repeats the list's lead-in (the merge kept it).
    blocks = [make_block("Procedure for the yearly check", "heading"), make_block("Steps are:"),
              make_block("- open the cover and look", "list_item"),
              make_block("- close the cover and lock", "list_item"),
              make_block("- sign the log book today", "list_item")]
    result = run_engine(blocks, max_tokens=20, min_tokens=5, **STRICT)
    assert [(c.text, c.block_ids) for c in result.chunks] == [
        ("Procedure for the yearly check\n\nSteps are:\n- open the cover and look", ["b1", "b2", "b3"]),
        ("Steps are:\n- close the cover and lock", ["b4"]),
        ("Steps are:\n- sign the log book today", ["b5"]),
    ]
    assert [c.metadata.get("lead_in_block_id") for c in result.chunks] == [None, "b2", "b2"]
    _fits(result, 20)


def _cut_between_words(result, block_id: str, text: str) -> bool:
    """Whether every cut of ``text`` (a block's pieces, ``block_parts``) has whitespace in it."""
    spans = sorted({(p["start"], p["end"]) for c in result.chunks for p in c.metadata.get("block_parts", [])
                    if p["block_id"] == block_id})
    return all(text[end:start].isspace() for (_, end), (start, _) in pairwise(spans))


def test_a_word_is_not_cut_to_follow_a_heading_or_a_lead_in(make_block):
    # Found by the property search over CJK text, and the same in English: with a counter of
    # characters, a heading (or a list's lead-in, which must not end a chunk) left room for only
    # a fragment of the next block's first word, and the word was cut to follow it. The heading
    # stands alone instead; the lead-in's rest goes on in the next chunk, whole words only.
    stub = Resources(model_counter=CallableCounter(lambda text: len(text) // 3 + 2, name="stub"))
    long_title = "Urban heat island findings, year one"
    paragraph = "Concrete areas cooled slowly at night, the data show clearly."
    result = run_engine([make_block(long_title, "heading"), make_block(paragraph)], stub, max_tokens=16,
                        token_counter="model", heading_context=False, **STRICT)
    assert result.chunks[0].text == long_title
    assert _cut_between_words(result, "b2", paragraph)
    lead_in = "Urban heat islands make the city warmer than its surroundings instance."
    blocks = [make_block("Sum", "heading"), make_block("Sum", "heading"), make_block(lead_in),
              make_block("Concrete areas cooled slowly at night, the data show.", "list_item")]
    result = run_engine(blocks, stub, max_tokens=16, token_counter="model", heading_context=False, **STRICT)
    assert _cut_between_words(result, "b3", lead_in)


def test_overlap_before_a_chunk_that_starts_with_its_heading_counts_the_whole_breadcrumb(make_block):
    # Overlap moves the heading from the start of the text: its title is then written in the
    # breadcrumb too, and the room for the overlap must count it (this chunk counted 18 of 16).
    title = "alpha beta gamma delta epsilon zeta"
    blocks = [make_block(title, "heading", path=(title,)), make_block("Concretecoveredareas.", path=(title,)),
              make_block("Summary", "heading", path=()), make_block(title, "heading", path=(title,))]
    result = run_engine(blocks, max_tokens=16, min_tokens=0, overlap_blocks=1, heading_context=True, **STRICT)
    _fits(result, 16)
