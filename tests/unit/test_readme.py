"""The README says what the code does: its snippets run, its synopsis names every option, and
what it tells a newcomer (where the command is, which Redis the tests use, how to reach the
compose fleet from the host) matches the code and the docker files.

The producer snippet needs a worker: tests/integration/test_worker_fleet.py runs it as written.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import build_parser
from config.settings import Settings
from lpeval.main import build_parser as build_lpeval_parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BENCHMARK_PAGE = (ROOT / "docs" / "retrieval-benchmark.md").read_text(encoding="utf-8")
SAMPLE = ROOT / "examples" / "sample_document.json"


def section(text: str, title: str) -> str:
    """The text of the section ``## title`` of a page, up to the next section."""
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


def readme_section(title: str) -> str:
    """The text of the README section ``## title``, up to the next section."""
    return section(README, title)


def code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def undefined_names(snippet: str) -> set[str]:
    """Names a snippet reads but never binds (assigns, imports, defines) and Python does not
    provide: what a reader pasting it would get a NameError for."""
    tree = ast.parse(snippet)
    bound: set[str] = set(dir(builtins))
    loaded: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store | ast.Del) else loaded).add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return loaded - bound


def test_every_python_snippet_of_the_readme_defines_what_it_uses() -> None:
    snippets = code_blocks(README, "python")
    assert len(snippets) >= 3
    assert undefined_names("result = chunk_blocks(blocks)") == {"chunk_blocks", "blocks"}  # the check checks
    assert {index: undefined_names(snippet) for index, snippet in enumerate(snippets)} == {
        index: set() for index in range(len(snippets))}


def test_the_sample_is_the_dump_shape_the_docs_name_it() -> None:
    sample = json.loads(SAMPLE.read_text(encoding="utf-8"))
    assert set(sample) == {"metadata", "pages"} and all("blocks" in page for page in sample["pages"])
    assert "`examples/sample_document.json`" in README
    assert "| LongParser Document dump (`examples/sample_document.json`) |" in (
        ROOT / "docs" / "inputs.md").read_text(encoding="utf-8")


def test_the_library_snippet_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    [snippet] = code_blocks(readme_section("The engine as a library"), "python")
    monkeypatch.chdir(ROOT)  # the README's paths are the repository's
    namespace: dict[str, Any] = {}
    exec(compile(snippet, "README.md", "exec"), namespace)  # the README's own code, as a reader runs it
    assert namespace["request"].document_id == "sample-annual-report"  # the dump's own id
    assert namespace["result"].chunks
    assert max(chunk.token_count for chunk in namespace["strict"].chunks) <= 256


def test_the_inputs_page_snippet_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = (ROOT / "docs" / "inputs.md").read_text(encoding="utf-8")
    snippet = next(block for block in code_blocks(page, "python") if "parse_input" in block)
    shutil.copy(SAMPLE, tmp_path / "report.json")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(snippet, "docs/inputs.md", "exec"), namespace)
    assert namespace["result"].document_id == "sample-annual-report"


def _options(parser: Any) -> list[tuple[str, ...]]:
    """Each option's spellings (``("-c", "--config")``), help left out."""
    return [tuple(action.option_strings) for action in parser._actions
            if action.option_strings and "--help" not in action.option_strings]


def test_the_synopsis_names_every_option_of_every_command() -> None:
    # longparser's synopsis is the README's; lpeval's (not installed) the benchmark page's
    [synopsis] = code_blocks(readme_section("Command line"), "bash")
    [lpeval] = code_blocks(section(BENCHMARK_PAGE, "Command line"), "bash")
    joined = (synopsis + lpeval).replace("\n                    ", " ").replace("\n              ", " ")
    lines = joined.splitlines()
    config_flags = next(line for line in lines if line.startswith("CONFIG FLAGS:"))
    programs = [("longparser", build_parser()), ("python -m lpeval", build_lpeval_parser())]
    commands = [(program, command, parser) for program, top in programs
                for command, parser in next(a for a in top._actions if a.choices).choices.items()]
    for program, command, parser in commands:
        [line] = [line for line in lines if line.startswith(f"{program} {command} ")]
        if "[CONFIG FLAGS]" in line:
            line += " " + config_flags
        missing = [spellings for spellings in _options(parser)
                   if not any(f"[{option} " in line or f"[{option}]" in line or f" {option} " in line
                              for option in spellings)]  # a required option is written without brackets
        assert not missing, f"README synopsis of {command} lacks {missing}"


def test_the_readme_says_where_make_put_the_command() -> None:
    assert "`.venv/bin/longparser`" in README and "`. .venv/bin/activate`" in README
    assert (Path(sys.executable).parent / "longparser").exists()  # the suite runs from that venv


def test_compose_publishes_redis_where_the_default_urls_point() -> None:
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text(encoding="utf-8"))
    [published] = compose["services"]["redis"]["ports"]
    host, port, container = re.fullmatch(r"([\d.]+):\$\{REDIS_HOST_PORT:-(\d+)\}:(\d+)", published).groups()
    assert (host, container) == ("127.0.0.1", "6379")  # loopback only: this Redis has no password
    default = Settings(_env_file=None)
    assert default.broker_url == default.result_url == f"redis://{host}:{port}/0"
    fleet = readme_section("Running the fleet")
    assert f"`{host}:{port}`" in fleet and "`REDIS_HOST_PORT`" in fleet
    assert ".venv/bin/longparser submit examples/sample_document.json --wait" in fleet


def test_the_suite_uses_a_redis_it_starts_unless_one_is_named() -> None:
    from tests.integration.conftest import TEST_REDIS_ENV, choose_redis

    assert choose_redis(None, "/usr/bin/redis-server") == "redis-server"  # never the machine's own
    assert choose_redis(None, None) == "embedded"
    assert choose_redis("redis://cache:6379", "/usr/bin/redis-server") == "configured"
    assert f"`{TEST_REDIS_ENV}`" in README


def _mib(value: int) -> str:
    assert value % (1024 * 1024) == 0
    return f"{value // (1024 * 1024)} MiB"


def test_the_producers_page_gives_each_size_limit_its_own_default() -> None:
    page = (ROOT / "docs" / "producers.md").read_text(encoding="utf-8")
    default = Settings(_env_file=None)
    rows = {row.split("|")[3].strip(): row.split("|")[2].strip() for row in page.splitlines()
            if row.startswith("| largest ")}
    assert rows == {"`LONGPARSER_MAX_INLINE_BYTES`": f"{_mib(default.max_inline_bytes)} of request JSON",
                    "`LONGPARSER_MAX_PAYLOAD_BYTES`": f"{_mib(default.max_payload_bytes)} of request JSON"}


def test_the_inputs_page_counts_the_shapes_it_lists() -> None:
    page = (ROOT / "docs" / "inputs.md").read_text(encoding="utf-8")
    table = page[page.index("| input | shape | document id |"):].split("\n\n")[0].splitlines()[2:]
    words = {4: "four", 5: "five", 6: "six", 7: "seven"}
    said = re.findall(r"\b(four|five|six|seven) shapes\b", page)
    assert said and set(said) == {words[len(table)]}, (said, len(table))
