"""Heading context for embedding (``heading_context``): ``embed_text`` is the chunk's heading
breadcrumb (its section path, one title per line) followed by its text."""

from __future__ import annotations

from tests.unit.engine_helpers import run_engine, table_dict, words


def _doc(make_block):
    return [
        make_block("2 Results", "heading", path=["2 Results"]),
        make_block("2.1 Output", "heading", path=["2 Results", "2.1 Output"]),
        make_block(words(30, "output"), path=["2 Results", "2.1 Output"]),
        make_block(words(30, "more"), path=["2 Results", "2.1 Output"]),
        make_block("", "table", path=["2 Results", "2.1 Output"], table=table_dict([["A"], ["1"]])),
    ]


def test_embed_text_is_null_unless_heading_context_is_on(make_block):
    result = run_engine(_doc(make_block), max_tokens=45)
    assert [c.embed_text for c in result.chunks] == [None] * len(result.chunks)


def test_breadcrumb_then_text_without_repeating_a_heading_the_text_starts_with(make_block):
    result = run_engine(_doc(make_block), max_tokens=45, min_tokens=20, heading_context=True)
    first, second, schema, rows = result.chunks
    # the first chunk opens with both headings of its path: nothing to add
    assert first.text.startswith("2 Results\n\n2.1 Output\n\n")
    assert first.embed_text == first.text
    # a later chunk of the same section carries the whole path
    assert second.embed_text == f"2 Results\n2.1 Output\n{second.text}"
    assert schema.embed_text == f"2 Results\n2.1 Output\n{schema.text}"
    assert rows.embed_text == f"2 Results\n2.1 Output\n{rows.text}"
    assert [c.text for c in result.chunks] == [c.text for c in run_engine(_doc(make_block), max_tokens=45,
                                                                          min_tokens=20).chunks]


def test_overlap_means_the_text_does_not_start_with_a_heading(make_block):
    blocks = [make_block("Intro", "heading", path=["Intro"]), make_block(words(30, "a"), path=["Intro"]),
              make_block(words(30, "b"), path=["Intro"])]
    result = run_engine(blocks, max_tokens=45, overlap_blocks=1, heading_context=True)
    assert result.chunks[1].overlap_with_previous
    assert result.chunks[1].embed_text == f"Intro\n{result.chunks[1].text}"


def test_no_section_path_means_no_breadcrumb(make_block):
    result = run_engine([make_block("Plain text.", path=[])], heading_context=True)
    assert result.chunks[0].embed_text == "Plain text."


def test_breadcrumb_titles_keeps_the_innermost_titles(make_block):
    path = ["Annual report", "Operations", "Fleet"]
    blocks = [make_block("The fleet grew.", path=path)]
    one = run_engine(blocks, heading_context=True, breadcrumb_titles=1)
    two = run_engine(blocks, heading_context=True, breadcrumb_titles=2)
    assert one.chunks[0].embed_text == "Fleet\nThe fleet grew."
    assert two.chunks[0].embed_text == "Operations\nFleet\nThe fleet grew."
    assert one.chunks[0].section_path == path


def test_breadcrumb_repeats_heading_keeps_the_title_on_the_chunk_that_opens_the_section(make_block):
    plain = run_engine(_doc(make_block), max_tokens=45, min_tokens=20, heading_context=True)
    result = run_engine(_doc(make_block), max_tokens=45, min_tokens=20, heading_context=True,
                        breadcrumb_repeats_heading=True)
    first, second = result.chunks[:2]
    # the opening chunk says its titles twice: the breadcrumb, then the headings it starts with
    assert first.text.startswith("2 Results\n\n2.1 Output\n\n")
    assert first.embed_text == f"2 Results\n2.1 Output\n{first.text}"
    # every other chunk is as before; the chunks' own text and ids do not change
    assert [c.embed_text for c in result.chunks[1:]] == [c.embed_text for c in plain.chunks[1:]]
    assert second.embed_text == f"2 Results\n2.1 Output\n{second.text}"
    assert [(c.chunk_id, c.text) for c in result.chunks] == [(c.chunk_id, c.text) for c in plain.chunks]



def test_a_section_of_one_chunk_says_its_title_once_even_when_headings_are_repeated(make_block):
    blocks = [make_block("Intro", "heading", path=["Intro"]), make_block(words(10, "i"), path=["Intro"]),
              make_block("Method", "heading", path=["Method"]),
              *[make_block(words(30, w), path=["Method"]) for w in ("a", "b", "c")]]
    result = run_engine(blocks, max_tokens=45, min_tokens=0, heading_context=True,
                        breadcrumb_repeats_heading=True)
    intro, method, *rest = result.chunks
    assert [c.section_path for c in result.chunks] == [["Intro"]] + [["Method"]] * (1 + len(rest))
    assert rest  # Method goes on in other chunks; Intro has one
    # no other chunk of Intro for its first to stand out from: the title once, as the heading
    assert intro.embed_text == intro.text and intro.text.startswith("Intro\n\n")
    assert method.embed_text == f"Method\n{method.text}" and method.text.startswith("Method\n\n")
    assert all(c.embed_text == f"Method\n{c.text}" for c in rest)
