"""Markdown and plain text in (client/longparser_client/converters/markdown.py): what becomes
what, ids, pages, and the producer side (``parse_input``, the CLI, the producer client).

The real-file corpus is tested in ``test_markdown_corpus.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from longparser import chunk_blocks
from longparser_client.converters.markdown import (
    blocks_from_markdown,
    blocks_from_text,
    convert_markdown,
    convert_text,
)
from schemas import Block, ChunkRequest, InputError
from schemas.inputs import parse_input
from tasks.client import Producer
from tests.unit.worker_fixtures import (  # noqa: F401
    FakeApp,
    context,
    eager,
    fake_app,
    isolated_settings,
    producer,
    running_producer,
    settings,
    store,
)

DOC = """\
---
title: Front matter title
tags: [a, b]
---
# Guide

Intro with *emphasis*, `code`, a [link](https://example.com), $x^2$ and ![a logo](logo.png)
on two lines.\\
A hard break.

## Install

- first item
  still the first item

  a second paragraph of the first item

  ```sh
  pip install thing
  ```

  - nested one
  - nested two

  after the nested list
- second item

1. one
10. ten

### Linux

| Name | Value |
|------|------:|
| a \\| b | `1` |
| short |

$$
E = mc^2
$$

    indented code
      keeps its indentation

> quoted text
> # a quoted heading

!!! warning "Careful"
    Admonition body.

<div align="center"><b>HTML</b> text<!-- a comment --></div>

<!-- only a comment -->

***

## Use

```python
def f():
    return 1
```
"""


def _blocks() -> list[dict[str, Any]]:
    return blocks_from_markdown(DOC, source_file="guide.md")


def _by_text(blocks: list[dict[str, Any]], start: str) -> dict[str, Any]:
    [block] = [b for b in blocks if b["text"].startswith(start)]
    return block


def test_every_block_is_valid_and_ids_are_ordinals():
    blocks = _blocks()
    for block in blocks:
        Block.model_validate(block)
    assert [b["block_id"] for b in blocks] == [f"md-{n}" for n in range(1, len(blocks) + 1)]
    assert [b["order_index"] for b in blocks] == list(range(len(blocks)))
    assert blocks_from_markdown(DOC, source_file="guide.md") == blocks  # deterministic


def test_no_page_is_invented_and_lines_point_at_the_source():
    blocks = _blocks()
    assert {b["provenance"]["page_number"] for b in blocks} == {None}
    assert {b["provenance"]["source_file"] for b in blocks} == {"guide.md"}
    lines = DOC.splitlines()
    for block in blocks:
        first, last = block["flags"]["lines"]
        assert 1 <= first <= last <= len(lines)
    install = _by_text(blocks, "Install")
    assert lines[install["flags"]["lines"][0] - 1] == "## Install"


def test_headings_and_their_paths_follow_the_heading_tree():
    blocks = _blocks()
    headings = [(b["text"], b["heading_level"], b["hierarchy_path"])
                for b in blocks if b["type"] == "heading"]
    assert headings == [
        ("Guide", 1, ["Guide"]),
        ("Install", 2, ["Guide", "Install"]),
        ("Linux", 3, ["Guide", "Install", "Linux"]),
        ("Use", 2, ["Guide", "Use"]),  # closes Install and Linux
    ]
    assert _by_text(blocks, "def f()")["hierarchy_path"] == ["Guide", "Use"]
    assert _by_text(blocks, "Intro")["hierarchy_path"] == ["Guide"]


def test_inline_markup_is_resolved_to_its_text():
    intro = _by_text(_blocks(), "Intro")
    assert intro["type"] == "paragraph"
    assert intro["text"] == ("Intro with emphasis, code, a link, $x^2$ and a logo on two lines.\n"
                             "A hard break.")


def test_front_matter_and_breaks_yield_no_block():
    conversion = convert_markdown(DOC)
    assert conversion.front_matter == "title: Front matter title\ntags: [a, b]"
    assert not any("Front matter" in b["text"] for b in conversion.blocks)
    assert conversion.report.skipped == {"front_matter": 1, "thematic_break": 1, "html_without_text": 1}


def test_list_items_keep_their_paragraphs_and_code_nested_lists_go_deeper():
    items = [(b["text"], b["indent_level"], b["flags"].get("continued", False))
             for b in _blocks() if b["type"] == "list_item"]
    assert items == [
        ("first item still the first item\n\na second paragraph of the first item\n\n"
         "pip install thing", 1, False),
        ("nested one", 2, False),
        ("nested two", 2, False),
        ("after the nested list", 1, True),
        ("second item", 1, False),
        ("1. one", 1, False),
        ("10. ten", 1, False),
    ]


def test_pipe_table_cells_with_their_header_row():
    [table] = [b for b in _blocks() if b["type"] == "table"]
    assert table["text"] == ""
    assert table["hierarchy_path"] == ["Guide", "Install", "Linux"]
    cells = [(c["row_index"], c["col_index"], c["text"], c["column_header"]) for c in table["table"]["cells"]]
    assert cells == [(0, 0, "Name", True), (0, 1, "Value", True), (1, 0, "a | b", False), (1, 1, "1", False),
                     (2, 0, "short", False), (2, 1, "", False)]  # GFM fills a short row
    assert (table["table"]["n_rows"], table["table"]["n_cols"]) == (3, 2)


def test_code_math_quotes_admonitions_and_html():
    blocks = _blocks()
    fenced = _by_text(blocks, "def f()")
    assert (fenced["type"], fenced["text"], fenced["flags"]["code_language"]) == \
        ("code", "def f():\n    return 1", "python")
    indented = _by_text(blocks, "indented code")
    assert (indented["type"], indented["text"]) == ("code", "indented code\n  keeps its indentation")
    assert (_by_text(blocks, "E = mc^2")["type"]) == "equation"
    quoted = _by_text(blocks, "quoted text")
    assert quoted["flags"]["blockquote"] == 1
    quoted_heading = _by_text(blocks, "a quoted heading")  # quoted material, not structure
    assert (quoted_heading["type"], quoted_heading["flags"]["heading_level"]) == ("paragraph", 1)
    title, body = _by_text(blocks, "Careful"), _by_text(blocks, "Admonition body.")
    assert title["flags"] == {"admonition_title": True, "admonition": "warning",
                              "lines": title["flags"]["lines"]}
    assert body["flags"]["admonition"] == "warning"
    html = _by_text(blocks, "HTML")
    assert (html["type"], html["text"], html["flags"]["html"]) == ("paragraph", "HTML text", True)


def test_inline_line_breaks_and_html_tags():
    [paragraph] = blocks_from_markdown("one<br>two<BR/>three <kbd>Ctrl</kbd>")
    assert paragraph["text"] == "one\ntwo\nthree Ctrl"
    [table] = blocks_from_markdown("| a |\n|---|\n| x<br>y |\n")
    assert table["table"]["cells"][1]["text"] == "x y"  # a cell is one line


def test_blank_and_bom_inputs():
    assert blocks_from_markdown("") == []
    assert blocks_from_markdown("\n\n   \n") == []
    assert blocks_from_markdown("\ufeff# Title\n")[0]["text"] == "Title"
    assert convert_markdown("-\n-\n").report.skipped == {"empty_list_item": 2}
    assert convert_markdown("#\n\ntext\n").report.skipped == {"empty_heading": 1}


def test_plain_text_paragraphs_at_blank_lines():
    text = "\ufeffFirst paragraph\nits second line.\r\n\r\n   \n\nSecond.\n\n\n  Third, indented.\n"
    blocks = blocks_from_text(text, source_file="notes.txt")
    assert [(b["block_id"], b["type"], b["text"], b["flags"]["lines"]) for b in blocks] == [
        ("txt-1", "paragraph", "First paragraph\nits second line.", [1, 2]),
        ("txt-2", "paragraph", "Second.", [6, 6]),
        ("txt-3", "paragraph", "Third, indented.", [9, 9]),
    ]
    assert {b["provenance"]["page_number"] for b in blocks} == {None}
    assert convert_text("").blocks == [] and convert_text(" \n\n ").blocks == []


def test_markdown_chunks_have_no_pages_and_section_paths():
    result = chunk_blocks(_blocks(), {"max_tokens": 64, "min_tokens": 0, "heading_context": True},
                          document_id="guide")
    assert result.chunks and all(c.page_numbers == [] for c in result.chunks)
    assert result.stats.section_paths == "input"
    assert result.stats.warnings == []
    assert {"table", "table_schema", "list", "section"} <= set(result.stats.chunks_by_type)
    # the math block shares a chunk with code, a quote and an admonition: a section that says
    # it holds an equation
    assert [c.chunk_type for c in result.chunks if c.equation_detected] == ["section"]
    again = chunk_blocks(_blocks(), {"max_tokens": 64, "min_tokens": 0, "heading_context": True},
                         document_id="guide")
    assert [c.chunk_id for c in again.chunks] == [c.chunk_id for c in result.chunks]


# --- producer side ----------------------------------------------------------------------------


def test_parse_input_converts_a_string_with_the_converter_given():
    request = parse_input("# T\n\ntext", default_document_id="notes", text_converter=blocks_from_markdown,
                          config_overrides={"max_tokens": 128})
    assert request.document_id == "notes"
    assert [b.block_id for b in request.blocks] == ["md-1", "md-2"]
    assert request.blocks[0].provenance["page_number"] is None
    assert request.config.max_tokens == 128


def test_parse_input_refuses_a_string_without_converter_or_id():
    with pytest.raises(InputError, match=r"^a Markdown or plain-text document \(a string\) must be"):
        parse_input("# T", default_document_id="notes")
    with pytest.raises(InputError, match=r"^document_id: missing: a Markdown or plain-text document"):
        parse_input("# T", text_converter=blocks_from_markdown)


@pytest.mark.parametrize(("name", "first_id"), [("notes.md", "md-1"), ("Notes.MARKDOWN", "md-1"),
                                               ("notes.txt", "txt-1")])
def test_cli_chunk_reads_markdown_and_text_by_suffix(tmp_path: Path, capsys, monkeypatch, name, first_id):
    from cli import chunk as cli_chunk
    from longparser.resources import Resources

    monkeypatch.setattr(cli_chunk, "load_resources", lambda config: Resources())
    path = tmp_path / name
    path.write_text("# Notes\n\nSome text.\n", encoding="utf-8")
    assert main(["chunk", str(path)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["document_id"] == Path(name).stem
    assert result["chunks"][0]["block_ids"][0] == first_id
    assert all(chunk["page_numbers"] == [] for chunk in result["chunks"])


def test_cli_chunk_markdown_errors_are_one_line(tmp_path: Path, capsys):
    assert main(["chunk", str(tmp_path / "missing.md")]) == 2
    assert capsys.readouterr().err.strip().endswith("missing.md: no such file")
    bad = tmp_path / "latin1.md"
    bad.write_bytes("caf\xe9".encode("latin-1"))
    assert main(["chunk", str(bad)]) == 2
    assert "not UTF-8 text" in capsys.readouterr().err


def test_client_converts_markdown_on_the_producer_side(producer: Producer, fake_app: FakeApp):  # noqa: F811
    handle = producer.submit("# Notes\n\nSome text.\n", text_converter=blocks_from_markdown,
                             document_id="notes", config={"max_tokens": 256})
    [sent] = fake_app.sent
    request = sent["args"][0]
    assert handle.document_id == request["document_id"] == "notes"
    expected = ChunkRequest.model_validate({"document_id": "notes", "blocks": blocks_from_markdown(
        "# Notes\n\nSome text.\n")})
    sent_blocks = ChunkRequest.model_validate(request).blocks  # sent without their default values
    assert sent_blocks == expected.blocks
    assert sent_blocks[0].provenance["page_number"] is None


def test_client_refuses_a_string_without_converter(producer: Producer, fake_app: FakeApp):  # noqa: F811
    with pytest.raises(InputError, match="must be converted to blocks on the producer side"):
        producer.submit("# Notes", document_id="notes")
    assert fake_app.sent == []


def test_markdown_end_to_end_through_the_task(running_producer: Producer):  # noqa: F811
    running_producer.submit("# Notes\n\nSome text.\n\n## More\n\nOther text.\n",
                            text_converter=blocks_from_markdown, document_id="notes")
    result = running_producer.get_result("notes", timeout=5)
    assert [c.section_path for c in result.chunks] == [["Notes", "More"]] or \
        [c.section_path for c in result.chunks] == [["Notes"], ["Notes", "More"]]
    assert all(c.page_numbers == [] for c in result.chunks)


def test_cli_submit_markdown(producer: Producer, fake_app: FakeApp, tmp_path: Path, capsys,  # noqa: F811
                             monkeypatch):
    import cli.submit
    from cli.main import build_parser

    monkeypatch.setattr(cli.submit, "_producer", lambda command: producer)
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nSome text.\n", encoding="utf-8")
    assert cli.submit.run_submit(build_parser().parse_args(["submit", str(path), "--max-tokens", "128"])) == 0
    assert json.loads(capsys.readouterr().out)["document_id"] == "notes"
    [sent] = fake_app.sent
    assert sent["args"][0]["blocks"][0]["block_id"] == "md-1"
    assert sent["args"][0]["blocks"][0]["provenance"]["source_file"] == "notes.md"
    assert sent["args"][0]["config"]["max_tokens"] == 128


# --- library helpers --------------------------------------------------------------------------


def test_chunk_markdown_and_chunk_text_are_the_converter_then_the_engine():
    from adapters import chunk_markdown, chunk_text

    def same(result):
        return result.model_dump(exclude={"stats": {"timings_ms"}})

    config = {"max_tokens": 64, "min_tokens": 0}
    assert same(chunk_markdown(DOC, config, document_id="guide", source_file="guide.md")) == \
        same(chunk_blocks(_blocks(), config, document_id="guide"))
    text = "First paragraph.\n\nSecond paragraph."
    result = chunk_text(text, config, document_id="notes")
    assert same(result) == same(chunk_blocks(blocks_from_text(text), config, document_id="notes"))
    assert result.document_id == "notes" and result.chunks[0].block_ids == ["txt-1", "txt-2"]


def test_markdown_without_its_extra_says_how_to_install_and_plain_text_needs_none(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from longparser_client.converters.markdown import MarkdownNotInstalledError, markdown_parser

    monkeypatch.setitem(sys.modules, "markdown_it", None)  # what a producer without [markdown] has
    markdown_parser.cache_clear()
    try:
        needs = r"^reading Markdown needs markdown_it: pip install 'longparser-client\[markdown\]'$"
        with pytest.raises(MarkdownNotInstalledError, match=needs):
            blocks_from_markdown("# Title")
        assert [block["text"] for block in blocks_from_text("one\n\ntwo")] == ["one", "two"]
    finally:
        markdown_parser.cache_clear()
    assert issubclass(MarkdownNotInstalledError, ImportError)
