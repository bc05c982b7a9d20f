"""Section paths from heading levels (client/longparser_client/schemas/headings.py, the rule;
longparser/hierarchy.py, the engine's use of it), pages that do not exist, and code cut only at
line ends.

* Paths are derived only when no block of the input has a non-empty ``hierarchy_path``; a
  heading of level n closes the open headings of level n or deeper; stats say where the paths
  came from.
* ``heading_context`` that changes nothing warns once, in the log and ``stats.warnings``.
* A block whose page is null (Markdown, text) gives its chunk no page.
* Strict mode cuts a code block only at line ends, keeping each line's indentation.
"""

from __future__ import annotations

import logging

import pytest

from longparser import Resources
from longparser.hierarchy import HEADING_CONTEXT_UNUSED
from longparser_client.schemas.headings import HeadingStack
from schemas import Block
from tests.unit.engine_helpers import run_engine, words


def _levelled(make_block, items: list[tuple[str, str, int | None]]) -> list[dict]:
    """Blocks with no hierarchy_path: (type, text, heading_level)."""
    return [make_block(text, kind, path=(), heading_level=level) for kind, text, level in items]


def test_heading_stack_closes_same_and_deeper_levels():
    stack = HeadingStack()
    assert stack.heading(1, "A") == ("A",)
    assert stack.heading(2, "A.1") == ("A", "A.1")
    assert stack.heading(3, "A.1.a") == ("A", "A.1", "A.1.a")
    assert stack.heading(2, "A.2") == ("A", "A.2")  # closes A.1 and A.1.a
    assert stack.path_of("paragraph", None, "text") == ("A", "A.2")
    assert stack.path_of("footer", None, "Page 3") == ()  # furniture belongs to no section
    assert stack.heading(1, "B") == ("B",)
    assert stack.heading(3, "B.x.y") == ("B", "B.x.y")  # a skipped level nests all the same
    assert stack.heading(2, "B.2") == ("B", "B.2")
    assert stack.heading(None, "C") == ("C",)  # no level: level 1
    assert stack.heading(0, "Title") == ("Title",)  # a title (level 0) closes everything
    assert stack.heading(1, "  ") == ("Title",)  # a blank heading opens nothing


def test_a_derived_title_is_its_heading_with_whitespace_collapsed(make_block):
    # A heading a PDF line break split over two lines: the breadcrumb holds one title per line,
    # so a title with a line break in it would read as two titles neither of which is a section.
    blocks = _levelled(make_block, [
        ("heading", "Results\n and  discussion", 1), ("paragraph", words(5, "intro"), None),
        ("heading", "Tables", 2), ("paragraph", words(5, "rows"), None),
    ])
    result = run_engine(blocks, heading_context=True, min_tokens=0, max_tokens=12)
    assert [c.section_path for c in result.chunks] == [
        ["Results and discussion"], ["Results and discussion", "Tables"]]
    first, second = result.chunks
    assert first.embed_text == first.text  # the chunk starts with its heading: no breadcrumb
    assert second.embed_text.splitlines()[0] == "Results and discussion"


def test_paths_derived_from_levels_when_no_block_has_one(make_block):
    blocks = _levelled(make_block, [
        ("heading", "Guide", 1), ("paragraph", words(5, "intro"), None),
        ("heading", "Install", 2), ("paragraph", words(5, "pip"), None),
        ("heading", "Linux", 3), ("paragraph", words(5, "apt"), None),
        ("heading", "Use", 2), ("paragraph", words(5, "run"), None),
    ])
    result = run_engine(blocks)
    assert [(c.section_path, c.block_ids) for c in result.chunks] == [
        (["Guide"], ["b1", "b2"]),
        (["Guide", "Install"], ["b3", "b4"]),
        (["Guide", "Install", "Linux"], ["b5", "b6"]),
        (["Guide", "Use"], ["b7", "b8"]),
    ]
    assert result.stats.section_paths == "derived"
    assert result.stats.warnings == []


def test_paths_given_anywhere_are_used_as_given(make_block):
    blocks = _levelled(make_block, [("heading", "Guide", 1), ("paragraph", words(5), None),
                                    ("heading", "Install", 2)])
    blocks.append(make_block(words(5, "pip"), path=["Elsewhere"]))
    result = run_engine(blocks)
    assert [c.section_path for c in result.chunks] == [[], ["Elsewhere"]]
    assert result.stats.section_paths == "input"


def test_no_headings_no_paths(make_block):
    result = run_engine([make_block(words(5), path=()), make_block(words(5, "more"), path=())])
    assert result.stats.section_paths == "none"
    assert all(c.section_path == [] for c in result.chunks)


def test_block_models_and_dicts_derive_the_same_paths(make_block):
    blocks = _levelled(make_block, [("heading", "A", 1), ("paragraph", words(5), None),
                                    ("heading", "B", 2), ("paragraph", words(5, "b"), None)])
    as_dicts = run_engine(blocks)
    as_models = run_engine([Block.model_validate(block) for block in blocks])
    assert as_models.model_dump(exclude={"stats": {"timings_ms"}}) == \
        as_dicts.model_dump(exclude={"stats": {"timings_ms"}})


def test_derived_paths_give_heading_context_a_breadcrumb(make_block):
    blocks = _levelled(make_block, [("heading", "Guide", 1), ("heading", "Install", 2),
                                    ("paragraph", words(5, "pip"), None),
                                    ("paragraph", words(5, "venv"), None)])
    result = run_engine(blocks, heading_context=True, max_tokens=8)
    first, second = result.chunks  # the headings lead the first paragraph; the second is apart
    assert first.embed_text == first.text  # titles the text opens with are not repeated
    assert second.section_path == ["Guide", "Install"]
    assert second.embed_text == "Guide\nInstall\n" + words(5, "venv")


def test_heading_context_that_changes_nothing_warns_once(make_block, caplog):
    blocks = [make_block(words(5), path=()), make_block(words(5, "b"), path=())]
    with caplog.at_level(logging.WARNING, logger="longparser"):
        result = run_engine(blocks, heading_context=True)
    assert result.stats.warnings == [HEADING_CONTEXT_UNUSED]
    assert [r.getMessage() for r in caplog.records] == [HEADING_CONTEXT_UNUSED]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="longparser"):
        quiet = run_engine(blocks)  # heading_context off: nothing to say
    assert quiet.stats.warnings == [] and not caplog.records


@pytest.mark.parametrize("strict", [False, True])
def test_null_pages_give_chunks_no_pages(make_block, strict):
    blocks = [make_block(words(5), page=1), make_block(words(5, "b"), page=1)]
    for block in blocks:
        block["provenance"]["page_number"] = None
    result = run_engine(blocks, strict_max_tokens=strict)
    assert result.chunks and all(c.page_numbers == [] for c in result.chunks)


def test_null_and_real_pages_mixed(make_block):
    blocks = [make_block(words(5), page=2), make_block(words(5, "b"), page=1)]
    blocks[1]["provenance"]["page_number"] = None
    assert run_engine(blocks).chunks[0].page_numbers == [2]


def test_code_is_cut_only_at_line_ends_keeping_indentation(make_block):
    lines = ["def f():"] + [f"    total_{i} = compute(alpha, beta. gamma) + {i}" for i in range(40)]
    code = "\n".join(lines)
    result = run_engine([make_block(code, "code")], max_tokens=64, strict_max_tokens=True)
    assert len(result.chunks) > 3
    pieces = [c.text for c in result.chunks]
    assert all(c.token_count <= 64 for c in result.chunks)
    for piece in pieces:  # whole lines, the indentation of each kept
        assert all(line in lines for line in piece.split("\n")), piece
    assert "\n".join(pieces) == code


def test_prose_is_still_cut_at_sentences(make_block):
    text = " ".join(f"Sentence {i} says {words(8, 'w')}." for i in range(20))
    result = run_engine([make_block(text)], max_tokens=40, strict_max_tokens=True)
    assert all(c.text.endswith(".") for c in result.chunks)


def test_a_code_line_longer_than_the_budget_is_still_cut(make_block):
    code = "short = 1\n" + "x = " + " + ".join(f"v{i}" for i in range(200))
    result = run_engine([make_block(code, "code")], Resources(), max_tokens=32, strict_max_tokens=True)
    assert all(c.token_count <= 32 for c in result.chunks)
    assert "".join(c.text.replace("\n", "").replace(" ", "") for c in result.chunks) == \
        code.replace("\n", "").replace(" ", "")
