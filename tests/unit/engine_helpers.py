"""Helpers shared by the engine's unit tests: structure-only runs, chunk views, table dicts.

Structure-only runs switch overlap, merging and the equation detector off unless a test turns
them on, so structural tests do not depend on the detector's heuristics.
Token arithmetic (the word estimate): ``n`` words -> ``int(n * 1.33)`` tokens, e.g. 10 -> 13,
20 -> 26, 40 -> 53.
"""

from __future__ import annotations

from typing import Any

from longparser import Resources, chunk_blocks
from schemas import ChunkResult
from tests.unit.conftest import words

__all__ = ["PEOPLE", "PEOPLE_RECORDS", "STRUCTURE_BASE", "run_engine", "table_dict", "view", "words"]


# Structure-only defaults: no overlap, no merging, no detector, unless a test says otherwise.
STRUCTURE_BASE: dict[str, Any] = {"overlap_blocks": 0, "min_tokens": 0, "detect_equations": False}


def run_engine(blocks: list[Any], resources: Resources | None = None, **config: Any) -> ChunkResult:
    """Chunk ``blocks`` (document ``doc-1``) with :data:`STRUCTURE_BASE` overridden by ``config``."""
    return chunk_blocks(blocks, {**STRUCTURE_BASE, **config}, resources, document_id="doc-1")


def view(result: ChunkResult) -> list[tuple[str, str, list[str], list[int]]]:
    """(type, text, block_ids, pages) per chunk."""
    return [(c.chunk_type, c.text, c.block_ids, c.page_numbers) for c in result.chunks]


def table_dict(rows: list[list[str]], *, flag_header: bool = False) -> dict[str, Any]:
    """A structured table dict; row 0 is the header row (flagged ``column_header`` on request)."""
    cells = [
        {"row_index": r, "col_index": c, "text": text, "column_header": flag_header and r == 0}
        for r, row in enumerate(rows)
        for c, text in enumerate(row)
    ]
    return {"n_rows": len(rows), "n_cols": len(rows[0]), "cells": cells}


PEOPLE = [
    ["Name", "Year", "Field"],
    ["Ada", "1843", "Math"],
    ["Alan", "1936", "CS"],
    ["Grace", "", "Navy"],
    ["Edsger", "1968", "CS"],
    ["Barbara", "1974", "CS"],
]


# PEOPLE's data rows as row records (the "row_record" table format).
PEOPLE_RECORDS = [
    "Row 1: Name=Ada; Year=1843; Field=Math",
    "Row 2: Name=Alan; Year=1936; Field=CS",
    "Row 3: Name=Grace; Year=; Field=Navy",
    "Row 4: Name=Edsger; Year=1968; Field=CS",
    "Row 5: Name=Barbara; Year=1974; Field=CS",
]
