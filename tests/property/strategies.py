"""Hypothesis strategies: block streams in LongParser's dump shape, and valid chunking configs.

The streams are built to reach every stage: all block types, runs of list items after a
lead-in, paragraphs that read like equations (and their lead-ins), tables with ragged cells
(missing cells, spans, empty texts, header flags, the ``r0``/``c0`` aliases, wide tables),
empty / whitespace / separator texts, unicode (Greek and math, CJK, RTL, emoji, combining
marks) and huge paragraphs; boxes in either origin, or none. Block ids are unique; pages are
non-decreasing with an occasional jump back (extractors do emit that), so the engine's own
sorting is exercised.
"""

from __future__ import annotations

import random
from typing import Any, get_args

from hypothesis import strategies as st

from schemas.blocks import BlockType

BLOCK_TYPES: tuple[str, ...] = get_args(BlockType)
# Text weights: prose dominates, every odd case stays frequent enough to be hit in ~150 examples.
_WORDS_TEXT = (
    "the data model shows results alpha beta report section table value Ada 1843 x_i f(x) = "
    "σ(Wx + b) ∑ ∫ ∂L/∂w ≤ ≥ ± αβγ 数据 模型 報告 مرحبا שלום 🙂 🚀 é e\u0301 n\u0303 – — … 3.14 -7 "
    "p<0.05 d1 d2 :"
)
WORDS = tuple(_WORDS_TEXT.split())
SEPARATORS = ("----------", "______", "· · · · ·", "══════", "•••", " - - - ", "=", ".")
PATHS = (
    (),
    ("Intro",),
    ("Intro", "Scope"),
    ("Results",),
    ("Results", "Tables", "Wide"),
    ("Δ σύνοψη", "数据"),
)


_SPACES = (" ", " ", " ", "  ", "\n", "\t", " \n ")


@st.composite
def prose(draw: st.DrawFn, max_words: int = 60) -> str:
    """Words joined by varied whitespace (spaces, tabs, newlines, runs).

    The word count is drawn (so failures shrink to short texts); the words come from a seeded
    ``random.Random``: drawing each word through Hypothesis made generation dominate the run.
    """
    n_words = draw(st.integers(min_value=1, max_value=max_words))
    rng = random.Random(draw(st.integers(min_value=0, max_value=2**32 - 1)))
    return "".join(rng.choice(WORDS) + rng.choice(_SPACES) for _ in range(n_words)).rstrip(" ")


def huge_paragraph(n_words: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(n_words))


texts = st.one_of(
    prose(),
    prose(max_words=6),
    st.sampled_from(["", " ", "\n", "  \t ", "\u00a0", "\u3000"]),
    st.sampled_from(SEPARATORS),
    st.sampled_from(["η = P / (ρ · g · Q · H)", "f(x) = α x_i + β", "E = mc²", "The cost is given by:"]),
    st.integers(min_value=300, max_value=3000).map(huge_paragraph),
    st.text(min_size=0, max_size=40),
)


def _cell_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.2:
        return rng.choice(["", " ", "\n"])
    if roll < 0.4:
        return rng.choice(["12", "-3.5", "2024-01-31", "3.5%", "$1,200", "1/5/2024"])
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) + rng.choice(["", " ", "\n"])


@st.composite
def table_cells(draw: st.DrawFn) -> dict[str, Any]:
    """A table: ragged grid (cells missing, out of range), spans, empty texts, headers. Two cells
    at one position are refused at validation (test_tables), so none is generated.

    Shape and features are drawn; the cell contents come from a seeded ``random.Random``
    (per-cell draws were most of the run time).
    """
    n_rows = draw(st.integers(min_value=0, max_value=12))
    n_cols = draw(st.sampled_from([0, 1, 2, 3, 5, 8, 30]))
    header_flags, aliases, odd_cells = draw(st.booleans()), draw(st.booleans()), draw(st.booleans())
    rng = random.Random(draw(st.integers(min_value=0, max_value=2**32 - 1)))
    names = ("r0", "c0", "rspan", "cspan") if aliases else ("row_index", "col_index", "row_span", "col_span")
    cells = []
    for row in range(n_rows):
        for col in range(n_cols):
            if rng.random() < 0.1:
                continue  # missing cell
            cell: dict[str, Any] = {"text": _cell_text(rng), names[0]: row, names[1]: col}
            if rng.random() < 0.07:
                cell[names[2]], cell[names[3]] = rng.randint(1, 3), rng.randint(1, 3)
            if header_flags and row == 0:
                cell["column_header"] = True
            cells.append(cell)
    if cells and odd_cells:
        # Out-of-range coordinates: extractors produce them.
        cells.append({"row_index": n_rows + 1, "col_index": n_cols + 2, "text": _cell_text(rng)})
    declared_rows = draw(st.sampled_from([n_rows, 0, n_rows + 2]))
    return {"n_rows": declared_rows, "n_cols": n_cols, "cells": cells}


_COORDS = st.floats(min_value=0.0, max_value=1000.0, allow_nan=False, allow_infinity=False)


@st.composite
def bboxes(draw: st.DrawFn) -> dict[str, Any] | None:
    """A block's box: none, LongParser's top-left (origin absent or named) or a PDF's bottom-left
    (``y0`` the top, above ``y1``); corners as drawn, so some arrive swapped."""
    kind = draw(st.sampled_from(["none", "top-left", "named", "bottom-left"]))
    if kind == "none":
        return None
    box = {"x0": draw(_COORDS), "y0": draw(_COORDS), "x1": draw(_COORDS), "y1": draw(_COORDS)}
    if kind != "top-left":
        box["coord_origin"] = "BOTTOMLEFT" if kind == "bottom-left" else "TOPLEFT"
    return box


@st.composite
def block_dicts(draw: st.DrawFn, index: int, page: int, path: tuple[str, ...]) -> dict[str, Any]:
    kind = draw(st.sampled_from(BLOCK_TYPES))
    table = None
    if kind == "table":
        table = draw(st.one_of(st.none(), table_cells()))
    return {
        "block_id": f"b{index}",
        "type": kind,
        "text": draw(texts),
        "order_index": index,
        "heading_level": draw(st.sampled_from([None, 1, 2, 3])) if kind == "heading" else None,
        "indent_level": 0,
        "hierarchy_path": list(path),
        "provenance": {"source_file": "doc.pdf", "page_number": page, "bbox": draw(bboxes())},
        "confidence": {"overall": draw(st.floats(min_value=0.0, max_value=1.0))},
        "table": table,
        "flags": draw(st.sampled_from([None, [], ["ocr"]])),
    }


@st.composite
def list_run(draw: st.DrawFn, start: int, page: int, path: tuple[str, ...]) -> list[dict[str, Any]]:
    """A lead-in paragraph ending in ':' followed by 1-12 list items."""
    lead = draw(block_dicts(start, page, path))
    lead.update(type="paragraph", text=draw(prose(max_words=20)) + ":")
    items = []
    for k in range(draw(st.integers(min_value=1, max_value=12))):
        item = draw(block_dicts(start + 1 + k, page, path))
        item.update(type="list_item", text="• " + draw(st.one_of(prose(max_words=40), st.just(""))))
        items.append(item)
    return [lead, *items]


@st.composite
def block_streams(draw: st.DrawFn, max_blocks: int = 40) -> list[dict[str, Any]]:
    """A document's blocks in reading order, unique ids ``b0, b1, ...``."""
    target = draw(st.integers(min_value=0, max_value=max_blocks))
    blocks: list[dict[str, Any]] = []
    page, path = 1, draw(st.sampled_from(PATHS))
    while len(blocks) < target:
        if draw(st.integers(min_value=0, max_value=5)) == 0:
            page = max(0, page + draw(st.sampled_from([1, 1, 1, 2, -1])))
        if draw(st.integers(min_value=0, max_value=4)) == 0:
            path = draw(st.sampled_from(PATHS))
        if draw(st.integers(min_value=0, max_value=7)) == 0:
            blocks.extend(draw(list_run(len(blocks), page, path)))
        else:
            blocks.append(draw(block_dicts(len(blocks), page, path)))
    return blocks


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    """Any valid ChunkingConfig (as the dict a request carries), small budgets favoured."""
    max_tokens = draw(
        st.one_of(st.integers(min_value=1, max_value=60), st.integers(min_value=61, max_value=2000))
    )
    return {
        "max_tokens": max_tokens,
        "min_tokens": draw(st.integers(min_value=0, max_value=max_tokens - 1)),
        "overlap_blocks": draw(st.integers(min_value=0, max_value=3)),
        "table_rows_per_chunk": draw(st.integers(min_value=1, max_value=20)),
        "table_chunk_format": draw(st.sampled_from(["row_record", "pipe", "labelled", "markdown"])),
        "generate_schema_chunks": draw(st.booleans()),
        "wide_table_col_threshold": draw(st.integers(min_value=1, max_value=30)),
        "detect_equations": draw(st.booleans()),
        "exclude_headers_footers": draw(st.booleans()),
        "use_semantic_chunking": draw(st.booleans()),
        "semantic_threshold": draw(st.floats(min_value=0.0, max_value=1.0)),
        "heading_context": draw(st.booleans()),
        "breadcrumb_repeats_heading": draw(st.booleans()),
    }
