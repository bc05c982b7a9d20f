"""Markdown and plain text turned into LongParser blocks (the engine's input), on the producer side.

Markdown is parsed by `markdown-it-py <https://markdown-it-py.readthedocs.io>`_ (CommonMark)
with GFM pipe tables and strikethrough, and mdit-py-plugins for front matter, ``$``/``$$`` math
(``dollarmath``) and admonitions (``!!! note``, as MkDocs and Python-Markdown write them).
:func:`convert_markdown` walks markdown-it's block tokens in order and returns block dicts in
the wire shape (``longparser_client.schemas.blocks.Block``) with a :class:`MarkdownReport`;
:func:`convert_text` does the same for plain text. Both are pure (a string in, dicts out); a
producer passes them to the client (``text_converter=``), and the CLI and :mod:`adapters` call
them. The module belongs to the producer distribution (``loaders.markdown`` is its old name, the
same module). Markdown needs markdown-it-py and mdit-py-plugins, the
``pip install 'longparser-client[markdown]'`` extra (the worker installs it), imported on first
use, so plain text converts without them.

Mapping (markdown-it token -> block ``type``):

==============================================  ===============================================
``#`` .. ``######`` and setext headings         ``heading``, ``heading_level`` = 1..6
paragraph                                       ``paragraph``
list item (bullet or ordered, any depth)        ``list_item``; ``indent_level`` = enclosing
                                                lists (1: top level); ordered items start with
                                                their number (``"3. "``)
pipe table                                      ``table``: cells with their row and column, the
                                                header row flagged ``column_header``; ``text``
                                                empty (the cells hold it)
fenced and indented code                        ``code`` (``flags["code_language"]`` from the
                                                fence's info string)
``$$ ... $$`` display math                      ``equation``
block quote                                     its blocks, flagged ``blockquote`` (depth)
admonition                                      its title and body as paragraphs, flagged
                                                ``admonition`` (the kind: note, warning, ...)
HTML block                                      ``paragraph`` of its text (tags, comments,
                                                scripts and styles left out); none when it has
                                                no text
front matter, thematic break, link definitions  no block (front matter is returned in
                                                :attr:`MarkdownConversion.front_matter`)
==============================================  ===============================================

Decisions (and why):

* **Text is markdown-it's text**: inline markup is resolved (emphasis, links and escapes give
  their text, code spans their content, an image its alt text, ``$x$`` stays ``$x$``), soft
  line breaks become spaces, hard breaks and ``<br>`` newlines (spaces in a table cell), other
  inline HTML tags nothing. What is checked as "nothing lost" is
  markdown-it's own text: every inline text, code span and math token, every code and math
  block's lines, appear in the blocks (the real-file tests hold the converter to it).
* **Section paths** follow the heading tree (:mod:`longparser_client.schemas.headings`, the
  engine's rule):
  a heading of level n closes the open headings of level n or deeper; its own path includes
  itself. A heading inside a list item, quote or admonition is quoted material, not the
  document's structure: it becomes a paragraph (``flags["heading_level"]`` keeps its level).
* **A list item keeps what it holds**: its paragraphs, code and math are its text (joined by
  a blank line). A nested list's items are blocks of their own, one level deeper; what the
  item holds after its nested list becomes a ``list_item`` at the item's level flagged
  ``continued``. A table inside a list item is a table block of its own.
* **No pages are invented**: Markdown has none, so ``provenance.page_number`` is null (such
  chunks have ``page_numbers: []``). ``flags["lines"]`` gives the block's first and last line
  in the source (1-based), which is what a citation can point to instead.
* **Front matter** (YAML or TOML between ``---``/``+++`` lines) is metadata, not content: it
  yields no block and its ``title`` is not used; the raw front matter is returned for the
  caller. A page's ``#`` heading is its title in every site generator we know of, so taking
  the front matter's title as well would repeat it.
* **Block ids** are ``md-<ordinal>`` (``md-1`` is the first block; ``txt-<ordinal>`` for plain
  text): deterministic for the same input, so a resubmitted document gets the same chunk ids.
* **Plain text**: paragraphs at blank lines (a line holding only whitespace counts as blank);
  the lines inside a paragraph are kept as they are.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any

from longparser_client.schemas.headings import HeadingStack
from longparser_client.schemas.inputs import MARKDOWN_INSTALL_HINT

if TYPE_CHECKING:  # pragma: no cover - types only
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

__all__ = [
    "MARKDOWN_SUFFIXES",
    "TEXT_SUFFIXES",
    "MarkdownConversion",
    "MarkdownNotInstalledError",
    "MarkdownReport",
    "blocks_from_markdown",
    "blocks_from_text",
    "convert_markdown",
    "convert_text",
    "markdown_parser",
]

MARKDOWN_SUFFIXES = (".md", ".markdown")
TEXT_SUFFIXES = (".txt",)
MARKDOWN_EXTRACTOR = "markdown-it"
TEXT_EXTRACTOR = "text"
_BLANK_LINES = re.compile(r"\n[^\S\n]*\n\s*")
_HTML_SKIPPED_TAGS = frozenset({"script", "style"})
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)


class MarkdownNotInstalledError(ImportError):
    """markdown-it-py or mdit-py-plugins (the ``[markdown]`` extra) is not installed."""


@dataclass(slots=True)
class MarkdownReport:
    """What a conversion did.

    Attributes:
        blocks_by_type: blocks produced, by block type.
        skipped: source elements that produced no block, by reason (``front_matter``,
            ``thematic_break``, ``html_without_text``, ``empty_list_item``, ``empty_heading``).
        nested_headings: headings inside a list item, quote or admonition (made paragraphs).
    """

    blocks_by_type: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    nested_headings: int = 0


@dataclass(slots=True)
class MarkdownConversion:
    """Blocks (wire-shape dicts, reading order), the raw front matter and the report."""

    blocks: list[dict[str, Any]]
    front_matter: str | None
    report: MarkdownReport


@lru_cache(maxsize=1)
def markdown_parser() -> MarkdownIt:
    """The parser every conversion uses: CommonMark, GFM tables and strikethrough, front
    matter, dollar math and admonitions (one instance, built on first use).

    Raises:
        MarkdownNotInstalledError: (an ImportError) the ``[markdown]`` extra is not installed.
    """
    try:
        from markdown_it import MarkdownIt
        from mdit_py_plugins.admon import admon_plugin
        from mdit_py_plugins.dollarmath import dollarmath_plugin
        from mdit_py_plugins.front_matter import front_matter_plugin
    except ImportError as exc:
        raise MarkdownNotInstalledError(
            f"reading Markdown needs {exc.name}: {MARKDOWN_INSTALL_HINT}") from exc

    return (MarkdownIt("commonmark").enable(["table", "strikethrough"])
            .use(front_matter_plugin).use(dollarmath_plugin).use(admon_plugin))


def blocks_from_markdown(markdown: str, *, source_file: str | None = None) -> list[dict[str, Any]]:
    """Block dicts (wire shape, reading order) of a Markdown document (see the module doc)."""
    return convert_markdown(markdown, source_file=source_file).blocks


def blocks_from_text(text: str, *, source_file: str | None = None) -> list[dict[str, Any]]:
    """Block dicts of a plain-text document: one paragraph per run of lines between blank lines."""
    return convert_text(text, source_file=source_file).blocks


def convert_markdown(markdown: str, *, source_file: str | None = None) -> MarkdownConversion:
    """Convert a Markdown document into blocks plus the front matter and a report.

    Args:
        markdown: the document's text (a leading byte-order mark is ignored).
        source_file: ``provenance.source_file`` of every block.
    """
    builder = _Blocks("md", MARKDOWN_EXTRACTOR, source_file)
    walker = _MarkdownWalker(builder)
    walker.walk(markdown_parser().parse(markdown.removeprefix("\ufeff")))
    return MarkdownConversion(builder.blocks, walker.front_matter, builder.report())


def convert_text(text: str, *, source_file: str | None = None) -> MarkdownConversion:
    """Convert plain text into paragraph blocks (split at blank lines), with a report."""
    builder = _Blocks("txt", TEXT_EXTRACTOR, source_file)
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    start = 0
    line = 1
    for separator in [*_BLANK_LINES.finditer(text), None]:
        end = separator.start() if separator else len(text)
        paragraph = text[start:end]
        if paragraph.strip():
            leading = paragraph[: len(paragraph) - len(paragraph.lstrip())].count("\n")
            first = line + leading
            builder.add("paragraph", paragraph.strip(), (), first, first + paragraph.strip().count("\n"))
        if separator is not None:
            line += text[start : separator.end()].count("\n")
            start = separator.end()
    return MarkdownConversion(builder.blocks, None, builder.report())


# --- blocks --------------------------------------------------------------------------------


class _Blocks:
    """Collects the blocks of one conversion: ids, order, provenance, counts."""

    def __init__(self, prefix: str, extractor: str, source_file: str | None) -> None:
        self.prefix, self.extractor, self.source_file = prefix, extractor, source_file
        self.blocks: list[dict[str, Any]] = []
        self.skipped: Counter[str] = Counter()
        self.nested_headings = 0

    def add(
        self, kind: str, text: str, path: tuple[str, ...], first_line: int, last_line: int, *,
        flags: dict[str, Any] | None = None, heading_level: int | None = None, indent: int = 0,
        table: dict[str, Any] | None = None,
    ) -> None:
        ordinal = len(self.blocks) + 1
        self.blocks.append({
            "block_id": f"{self.prefix}-{ordinal}",
            "type": kind,
            "text": text,
            "order_index": ordinal - 1,
            "heading_level": heading_level,
            "indent_level": indent,
            "hierarchy_path": list(path),
            "provenance": {"source_file": self.source_file, "page_number": None, "bbox": None,
                           "extractor": self.extractor},
            "confidence": {"overall": 1.0},
            "flags": {**(flags or {}), "lines": [first_line, last_line]},
            "table": table,
        })

    def report(self) -> MarkdownReport:
        return MarkdownReport(dict(Counter(block["type"] for block in self.blocks)), dict(self.skipped),
                              self.nested_headings)


# --- Markdown ------------------------------------------------------------------------------


def inline_text(tokens: list[Token] | None, line_break: str = "\n") -> str:
    """The text of an inline token's children, markup resolved (see the module doc).

    ``line_break`` is what a hard break (or an inline ``<br>``) becomes: a newline, or a space
    inside a table cell, whose text is one line.
    """
    parts: list[str] = []
    for token in tokens or ():
        kind = token.type
        if kind == "text" or kind == "code_inline":
            parts.append(token.content)
        elif kind == "softbreak":
            parts.append(" ")
        elif kind == "hardbreak" or (kind == "html_inline" and _BR.fullmatch(token.content)):
            parts.append(line_break)
        elif kind == "math_inline":
            parts.append(f"${token.content}$")
        elif kind == "math_inline_double":
            parts.append(f"$${token.content}$$")
        elif kind == "image":
            parts.append(inline_text(token.children, line_break))
    return "".join(parts).strip()


class _HTMLText(HTMLParser):
    """The text of an HTML fragment: data outside scripts and styles; comments are not text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _HTML_SKIPPED_TAGS:
            self.skipping += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _HTML_SKIPPED_TAGS and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_text(html: str) -> str:
    """The text an HTML block shows, whitespace collapsed ("" when it shows none)."""
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    return " ".join("".join(parser.parts).split())


@dataclass(slots=True)
class _Item:
    """A list item being read: its text so far and where it stands."""

    marker: str  # "3." for an ordered item, "" for a bullet
    indent: int
    texts: list[str] = field(default_factory=list)
    first_line: int = 0
    last_line: int = 0
    continued: bool = False  # its text before a nested list was already emitted


class _MarkdownWalker:
    """One pass over markdown-it's block tokens in order (see the module doc)."""

    def __init__(self, blocks: _Blocks) -> None:
        self.out = blocks
        self.headings = HeadingStack()
        self.front_matter: str | None = None
        self.lists = 0  # enclosing lists
        self.items: list[_Item] = []  # enclosing list items, innermost last
        self.quotes = 0  # enclosing block quotes
        self.admonitions: list[str] = []  # kinds of the enclosing admonitions

    def walk(self, tokens: list[Token]) -> None:
        index = 0
        while index < len(tokens):
            index = self._token(tokens, index)

    def _token(self, tokens: list[Token], index: int) -> int:
        """Handle ``tokens[index]``; returns the index of the next token to handle."""
        token = tokens[index]
        kind = token.type
        if kind in ("paragraph_open", "heading_open", "admonition_title_open"):
            self._inline(token, tokens[index + 1])
            return index + 3  # open, inline, close
        if kind in ("bullet_list_open", "ordered_list_open"):
            self._flush_item()  # an item's text before its nested list
            self.lists += 1
        elif kind in ("bullet_list_close", "ordered_list_close"):
            self.lists -= 1
        elif kind == "list_item_open":
            marker = f"{token.info}{token.markup}" if token.info else ""
            first, _ = _lines(token)
            self.items.append(_Item(marker, self.lists, first_line=first, last_line=first))
        elif kind == "list_item_close":
            item = self.items[-1]
            if not item.texts and not item.continued:
                self.out.skipped["empty_list_item"] += 1
            self._flush_item()
            self.items.pop()
        elif kind in ("fence", "code_block"):
            language = token.info.strip().split(maxsplit=1)[0] if token.info.strip() else None
            self._content("code", token.content.rstrip("\n"), token,
                          {"code_language": language} if language else {})
        elif kind in ("math_block", "math_block_label"):
            flags = {"equation_label": token.info} if kind == "math_block_label" else {}
            self._content("equation", token.content.strip("\n"), token, flags)
        elif kind == "html_block":
            text = html_text(token.content)
            if text:
                self._content("paragraph", text, token, {"html": True})
            else:
                self.out.skipped["html_without_text"] += 1
        elif kind == "table_open":
            return self._table(tokens, index)
        elif kind == "blockquote_open":
            self.quotes += 1
        elif kind == "blockquote_close":
            self.quotes -= 1
        elif kind == "admonition_open":
            self.admonitions.append(str(token.meta.get("tag", "")) or "admonition")
        elif kind == "admonition_close":
            self.admonitions.pop()
        elif kind == "front_matter":
            self.front_matter = token.content
            self.out.skipped["front_matter"] += 1
        elif kind == "hr":
            self.out.skipped["thematic_break"] += 1
        return index + 1

    # content ----------------------------------------------------------------------------------

    def _flags(self, flags: dict[str, Any]) -> dict[str, Any]:
        if self.quotes:
            flags["blockquote"] = self.quotes
        if self.admonitions:
            flags["admonition"] = self.admonitions[-1]
        return flags

    def _inline(self, opening: Token, inline: Token) -> None:
        text = inline_text(inline.children)
        kind, flags, level = "paragraph", {}, None
        if opening.type == "heading_open":
            level = int(opening.tag[1:])
            if self.items or self.quotes or self.admonitions:
                self.out.nested_headings += 1
                flags["heading_level"] = level
                level = None
            elif not text:
                self.out.skipped["empty_heading"] += 1
                return
            else:
                kind = "heading"
        elif opening.type == "admonition_title_open":
            flags["admonition_title"] = True
        if kind == "heading":
            path = self.headings.heading(level, text)
            first, last = _lines(opening)
            self.out.add("heading", text, path, first, last, flags=self._flags(flags), heading_level=level)
            return
        self._content(kind, text, opening, flags)

    def _content(self, kind: str, text: str, token: Token, flags: dict[str, Any]) -> None:
        """A paragraph, code or math block: the enclosing list item's text, else a block."""
        first, last = _lines(token)
        if self.items:
            item = self.items[-1]
            if text:
                item.texts.append(text)
                if len(item.texts) == 1:
                    item.first_line = first
                item.last_line = max(item.last_line, last)
            return
        if text:
            self.out.add(kind, text, self.headings.path, first, last, flags=self._flags(flags))

    def _flush_item(self) -> None:
        """Emit the innermost list item's text so far (before a nested list, or at its end)."""
        if not self.items or not self.items[-1].texts:
            return
        item = self.items[-1]
        text = "\n\n".join(item.texts)
        if item.marker and not item.continued:
            text = f"{item.marker} {text}"
        flags: dict[str, Any] = {"marker": item.marker} if item.marker else {}
        if item.continued:
            flags["continued"] = True
        self.out.add("list_item", text, self.headings.path, item.first_line, item.last_line,
                     flags=self._flags(flags), indent=item.indent)
        item.texts = []
        item.continued = True

    def _table(self, tokens: list[Token], index: int) -> int:
        """A pipe table's cells; returns the index after ``table_close``."""
        self._flush_item()
        first, last = _lines(tokens[index])
        cells: list[dict[str, Any]] = []
        row, col, header = -1, 0, False
        index += 1
        while tokens[index].type != "table_close":
            token = tokens[index]
            if token.type == "thead_open":
                header = True
            elif token.type == "thead_close":
                header = False
            elif token.type == "tr_open":
                row, col = row + 1, 0
            elif token.type == "inline":
                cells.append({"row_index": row, "col_index": col, "row_span": 1, "col_span": 1,
                              "text": inline_text(token.children, " "), "column_header": header})
                col += 1
            index += 1
        n_cols = max((cell["col_index"] + 1 for cell in cells), default=0)
        table = {"n_rows": row + 1, "n_cols": n_cols, "cells": cells}
        indent = self.items[-1].indent if self.items else 0
        self.out.add("table", "", self.headings.path, first, last, flags=self._flags({}), table=table,
                     indent=indent)
        return index + 1


def _lines(token: Token) -> tuple[int, int]:
    """A block token's first and last source line, 1-based (markdown-it's map is 0-based, end
    exclusive)."""
    if not token.map:
        return 0, 0
    start, end = token.map
    return start + 1, max(start + 1, end)
