"""The Markdown input on real files (tests/fixtures/markdown/, sources and licences in SOURCES.md).

Each file is converted and chunked twice: with the defaults, and with the settings recommended
for a 256-token model (strict, the pinned model's tokenizer, pipe tables, heading context).
For every file and both settings:

* nothing is lost, checked against markdown-it's own text: every inline text, code span and
  math token, every line of a code or math block, every HTML block's text appears in the
  chunks (whitespace collapsed; a token cut by a strict maximum is found across the chunk
  sequence);
* section paths follow the heading tree, computed here independently of the converter (from
  markdown-it's heading tokens: the nearest earlier heading of a lower level is the parent);
* every table becomes table chunks (its id in a ``table`` chunk, and in a ``table_schema``
  chunk when schemas are on);
* a code block stays whole in one chunk, or (strict) is cut only at line ends;
* ids are deterministic, and no chunk has a page.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from loaders.tokenizer import load_model_counter
from longparser import Resources, chunk_blocks
from longparser.tokens import count
from longparser_client.converters.markdown import convert_markdown, html_text, markdown_parser
from schemas import ChunkResult

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "markdown"
FILES = sorted(CORPUS.glob("*/*.md"))
RECOMMENDED_256 = {"max_tokens": 256, "min_tokens": 50, "strict_max_tokens": True, "token_counter": "model",
                   "overlap_max_share": 0.05, "table_chunk_format": "pipe", "heading_context": True}
SETTINGS = {"default": None, "recommended-256": RECOMMENDED_256}
_TEXT_TOKENS = frozenset({"text", "code_inline", "math_inline", "math_inline_double"})
_BLOCK_CONTENT = frozenset({"fence", "code_block", "math_block", "math_block_label"})


def _collapse(text: str) -> str:
    return " ".join(text.split())


def source_texts(markdown: str) -> list[str]:
    """markdown-it's own text of a document: what "nothing lost" is checked against."""
    texts: list[str] = []
    for token in markdown_parser().parse(markdown):
        if token.type == "inline":
            pending = list(token.children or [])
            while pending:
                child = pending.pop(0)
                if child.type in _TEXT_TOKENS and child.content.strip():
                    texts.append(child.content)
                pending[0:0] = child.children or []
        elif token.type in _BLOCK_CONTENT:
            texts.extend(line for line in token.content.splitlines() if line.strip())
        elif token.type == "html_block" and html_text(token.content):
            texts.append(html_text(token.content))
    return texts


def expected_paths(markdown: str) -> dict[int, list[str]]:
    """Heading line (1-based) -> its path, from markdown-it's top-level heading tokens."""
    tokens = markdown_parser().parse(markdown)
    headings: list[tuple[int, int, str]] = []  # (line, level, title)
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0:
            title = _collapse("".join(c.content for c in tokens[index + 1].children or []
                                      if c.type in _TEXT_TOKENS or c.type == "image"))
            if token.map and title:
                headings.append((token.map[0] + 1, int(token.tag[1:]), title))
    paths: dict[int, list[str]] = {}
    for position, (line, level, title) in enumerate(headings):
        parent = next((h for h in reversed(headings[:position]) if h[1] < level), None)
        paths[line] = [*paths[parent[0]], title] if parent else [title]
    return paths


@cache
def _counter() -> Any:
    return load_model_counter()


@cache
def _converted(path: Path) -> Any:
    return convert_markdown(path.read_text(encoding="utf-8"), source_file=path.name)


@cache
def _chunked(path: Path, setting: str) -> ChunkResult:
    resources = Resources(model_counter=_counter()) if setting != "default" else None
    return chunk_blocks(_converted(path).blocks, SETTINGS[setting], resources, document_id=path.stem)


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


CASES = [pytest.param(path, setting, id=f"{_id(path)}-{setting}") for path in FILES for setting in SETTINGS]


def test_the_corpus_is_real_and_documented():
    assert len(FILES) >= 20
    sources = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    for path in FILES:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert f"| `{_id(path)}` |" in sources and digest in sources, _id(path)
        assert (path.parent / "LICENSE").is_file()
    blocks = [b for path in FILES for b in _converted(path).blocks]
    kinds = {b["type"] for b in blocks}
    assert {"heading", "paragraph", "list_item", "table", "code", "equation"} <= kinds
    assert sum(bool(_converted(path).front_matter) for path in FILES) >= 3


@pytest.mark.parametrize(("path", "setting"), CASES)
def test_nothing_lost(path: Path, setting: str):
    result = _chunked(path, setting)
    chunks = [_collapse(chunk.text) for chunk in result.chunks]
    stream = " ".join(chunks)
    lost = [text for text in source_texts(path.read_text(encoding="utf-8"))
            if _collapse(text) not in stream]
    assert lost == []
    if setting == "default":  # no maximum: a token is never cut, so it is inside one chunk
        whole = [text for text in source_texts(path.read_text(encoding="utf-8"))
                 if not any(_collapse(text) in chunk for chunk in chunks)]
        assert whole == []


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_section_paths_follow_the_heading_tree(path: Path):
    conversion = _converted(path)
    expected = expected_paths(path.read_text(encoding="utf-8"))
    current: list[str] = []
    headings = 0
    for block in conversion.blocks:
        if block["type"] == "heading":
            current = expected[block["flags"]["lines"][0]]
            headings += 1
        assert block["hierarchy_path"] == current, block["block_id"]
    assert headings == len(expected)
    for setting in SETTINGS:
        paths = {b["block_id"]: b["hierarchy_path"] for b in conversion.blocks}
        for chunk in _chunked(path, setting).chunks:
            assert chunk.section_path in [paths[i] for i in chunk.block_ids], chunk.chunk_id


@pytest.mark.parametrize(("path", "setting"), CASES)
def test_tables_become_table_chunks(path: Path, setting: str):
    result = _chunked(path, setting)
    tables = [b["block_id"] for b in _converted(path).blocks if b["type"] == "table"]
    for table in tables:
        kinds = {c.chunk_type for c in result.chunks if table in c.block_ids}
        assert "table" in kinds and "table_schema" in kinds, table
    assert sum(c.chunk_type == "table" for c in result.chunks) >= len(tables)


@pytest.mark.parametrize(("path", "setting"), CASES)
def test_code_stays_whole_or_is_cut_at_line_ends(path: Path, setting: str):
    result = _chunked(path, setting)
    for block in _converted(path).blocks:
        if block["type"] != "code":
            continue
        code = block["text"]
        parts = [p for c in result.chunks for p in c.metadata.get("block_parts", [])
                 if p["block_id"] == block["block_id"]]
        if not parts:
            assert any(code.strip() in c.text for c in result.chunks if block["block_id"] in c.block_ids)
            continue
        for part in parts:  # each piece starts at a line start and ends at a line end
            start, end = part["start"], part["end"]
            starts_line = start == len(code) - len(code.lstrip()) or code[start - 1] == "\n"
            ends_line = end == len(code.rstrip()) or re.match(r"[^\S\n]*\n", code[end:]) is not None
            if starts_line and ends_line:
                continue
            # only a line too long for a piece may be cut inside (the strict maximum wins)
            line = code[code.rfind("\n", 0, start) + 1 : (code.find("\n", end) + 1 or len(code) + 1) - 1]
            assert count(_counter(), line) > RECOMMENDED_256["max_tokens"] // 2, (block["block_id"], part)


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_ids_are_deterministic_and_no_page_is_invented(path: Path):
    again = convert_markdown(path.read_text(encoding="utf-8"), source_file=path.name)
    assert again.blocks == _converted(path).blocks
    first = _chunked(path, "recommended-256")
    second = chunk_blocks(again.blocks, RECOMMENDED_256, Resources(model_counter=_counter()),
                          document_id=path.stem)
    assert [c.chunk_id for c in second.chunks] == [c.chunk_id for c in first.chunks]
    assert all(c.page_numbers == [] for c in first.chunks)
    assert all(c.token_count <= 256 for c in first.chunks)


def test_every_converted_block_carries_its_text():
    # a block without text is refused (schemas.blocks.Block.text): the converter always writes it
    blocks = [block for path in FILES for block in _converted(path).blocks]
    assert all(isinstance(block.get("text"), str) for block in blocks)
