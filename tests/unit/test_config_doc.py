"""docs/config.md's table of fields is generated from ChunkingConfig's field descriptions
(``python -m docs.config_doc``), so the reference cannot drift from the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs.config_doc import BEGIN, CONFIG_DOC, END, fields_table, main, rendered
from schemas.config import ChunkingConfig


def test_docs_config_md_holds_the_generated_table() -> None:
    document = CONFIG_DOC.read_text(encoding="utf-8")
    assert f"{BEGIN}\n{fields_table()}\n{END}" in document
    assert rendered(document) == document


def test_every_field_has_a_description_and_a_row() -> None:
    table = fields_table()
    for name, field in ChunkingConfig.model_fields.items():
        assert field.description, f"{name} has no description"
        assert f"| `{name}` |" in table
    assert table.count("\n") == 1 + len(ChunkingConfig.model_fields)  # header, rule, one row each


def test_a_row_says_default_limits_and_meaning() -> None:
    rows = {line.split(" | ")[0]: line for line in fields_table().splitlines()}
    assert rows["| `max_tokens`"].startswith("| `max_tokens` | 512 | 1-100000 | packing target")
    assert rows["| `min_tokens`"].startswith("| `min_tokens` | 100 | >= 0 | below `max_tokens`; unset: 100")
    assert rows["| `table_chunk_format`"].startswith(
        "| `table_chunk_format` | `row_record` | `row_record`, `pipe`, `markdown`, `labelled` |")
    assert "`Ada \\| 1843`" in rows["| `table_chunk_format`"]  # a | inside a cell is escaped
    assert rows["| `fit`"].startswith("| `fit` | none | | the recommended settings")


def test_check_fails_on_an_edited_table_and_write_restores_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tmp_path / "config.md"
    original = CONFIG_DOC.read_text(encoding="utf-8")
    doc.write_text(original.replace("packing target", "packing goal", 1), encoding="utf-8")
    assert main(["--check", "--doc", str(doc)]) == 1
    assert "python -m docs.config_doc --write" in capsys.readouterr().err
    assert main(["--write", "--doc", str(doc)]) == 0
    assert doc.read_text(encoding="utf-8") == original
    assert main(["--check", "--doc", str(doc)]) == 0


def test_a_document_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="has no generated table"):
        rendered("# Chunking config\n\n| field | default |\n")
