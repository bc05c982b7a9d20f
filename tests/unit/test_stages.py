"""The engine's stages are one ordered list (``longparser.pipeline.STAGES``) that the layout,
the modules' docstrings and docs/chunking.md agree with."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from longparser.pipeline import SHARED, STAGES

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "longparser"


def _first_line(module: str) -> str:
    doc = importlib.import_module(f"longparser.{module}").__doc__ or ""
    return doc.strip().splitlines()[0]


def test_every_engine_module_is_in_one_stage_or_shared() -> None:
    listed = [m for stage in STAGES for m in stage.modules] + list(SHARED)
    modules = sorted(p.stem for p in ENGINE.glob("*.py") if p.stem not in {"__init__", "pipeline"})
    assert sorted(listed) == modules  # each once, none missing, none that does not exist


def _stage_modules() -> list:
    return [
        pytest.param(number, module, id=module)
        for number, stage in enumerate(STAGES, 1) for module in stage.modules
    ]


@pytest.mark.parametrize(("number", "module"), _stage_modules())
def test_a_stage_number_in_a_docstring_is_its_place_in_the_list(number: int, module: str) -> None:
    """A module's docstring names its stage's number or none; a stage's first module names it."""
    stage = next(s for s in STAGES if module in s.modules)
    claimed = re.match(r"Stages? (\d+)\b", _first_line(module))
    if module == stage.modules[0]:
        assert claimed is not None, f"{module}.py: its docstring should open with 'Stage {number}:'"
    assert claimed is None or int(claimed.group(1)) == number, _first_line(module)


@pytest.mark.parametrize("module", SHARED)
def test_a_shared_module_claims_no_stage(module: str) -> None:
    assert not _first_line(module).startswith("Stage")


def test_chunking_md_renders_the_list() -> None:
    text = (ROOT / "docs" / "chunking.md").read_text(encoding="utf-8")
    rows = [f"| {number} | {stage.name} | {', '.join(f'`{m}.py`' for m in stage.modules)} | {stage.does} |"
            for number, stage in enumerate(STAGES, 1)]
    table = "| # | stage | modules | what |\n|---|---|---|---|\n" + "\n".join(rows) + "\n"
    assert table in text
    shared = "every stage uses: " + ", ".join(f"`{m}.py`" for m in SHARED) + ")"
    assert shared in " ".join(text.split())
