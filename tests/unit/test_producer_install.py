"""The producer's install and imports cannot collide: ``longparser_client`` (client/, its own
distribution) runs inside an upload service that has its own ``config``, ``tasks`` and
``schemas`` packages, without the engine, the worker or torch, and converts Markdown, plain text
and DoclingDocuments there with its own converters; the worker's old module names are the same
module objects as the client's; the Celery and kombu internals a producer relies on are checked
at its first use.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kombu.transport import redis as kombu_redis

import longparser_client
from longparser_client import celery_compat
from longparser_client.settings import Settings
from tests.unit.test_readme import README, code_blocks

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "client"
# The worker distribution's top-level packages (the root pyproject's package list).
WORKER_PACKAGES = ("longparser", "loaders", "worker", "cli", "adapters", "tasks", "schemas", "config",
                   "service")
ALIAS_MARK = "sys.modules[__name__] = _module"


def producer_snippets() -> list[str]:
    """The README's Python snippets an upload service runs (those importing the client)."""
    return [snippet for snippet in code_blocks(README, "python") if "longparser_client" in snippet
            and "from longparser import" not in snippet]


def snippet_imports(snippet: str) -> str:
    """The snippet's import statements, as written."""
    tree = ast.parse(snippet)
    return "\n".join(ast.get_source_segment(snippet, node) or "" for node in tree.body
                     if isinstance(node, ast.Import | ast.ImportFrom))


def upload_service(root: Path) -> Path:
    """A service with packages of its own named like the worker's (common in Celery apps)."""
    for package in ("config", "tasks", "schemas", "service"):
        (root / package).mkdir()
        (root / package / "__init__.py").write_text(f"OWNER = 'upload-service {package}'\n")
    (root / "config" / "settings.py").write_text("DEBUG = True\n")
    (root / "tasks" / "client.py").write_text("raise ImportError('the service has no client here')\n")
    return root


def run_in_service(service: Path, code: str) -> dict:
    """Run ``code`` with the service's folder first on the path and the client's folder after it,
    the repository root left off (what a service with longparser-client installed sees)."""
    paths = [str(service), str(CLIENT)]
    report = textwrap.dedent(f"""
        import json
        worker_modules = sorted(name for name, module in sys.modules.items()
                                if name.split(".")[0] in {WORKER_PACKAGES!r}
                                and not (getattr(module, "__file__", "") or "").startswith({str(service)!r}))
        owners = {{name: sys.modules[name].OWNER for name in ("config", "tasks", "schemas")
                  if name in sys.modules}}
        print(json.dumps({{"worker_modules": worker_modules, "torch": "torch" in sys.modules,
                          "owners": owners}}))
    """)
    program = f"import sys\nsys.path[:0] = {paths!r}\n{code}\n{report}"
    done = subprocess.run([sys.executable, "-I", "-c", program], cwd=service, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_readme_has_producer_snippets_that_import_only_the_client() -> None:
    snippets = producer_snippets()
    assert len(snippets) >= 2  # the producer and the completion-events consumer
    for snippet in snippets:
        modules = {node.module if isinstance(node, ast.ImportFrom) else alias.name
                   for node in ast.walk(ast.parse(snippet)) if isinstance(node, ast.Import | ast.ImportFrom)
                   for alias in node.names}
        assert {module.split(".")[0] for module in modules} == {"longparser_client"}, modules


@pytest.mark.parametrize("index", range(2))
def test_the_readme_producer_snippets_run_inside_a_service_with_its_own_packages(
        tmp_path: Path, index: int) -> None:
    snippet = producer_snippets()[index]
    code = snippet_imports(snippet) + textwrap.dedent("""
        import config, schemas, tasks  # the service's own, imported beside the client
        import longparser_client
        from longparser_client import Producer, get_settings
        producer = Producer(get_settings())  # the Celery app and the store, no connection yet
        producer.close()
        assert longparser_client.ChunkRequest.__module__ == "longparser_client.schemas.requests"
    """)
    seen = run_in_service(upload_service(tmp_path), code)
    assert seen["owners"] == {"config": "upload-service config", "tasks": "upload-service tasks",
                              "schemas": "upload-service schemas"}
    assert seen["worker_modules"] == []  # nothing of the engine, the worker or its old names
    assert seen["torch"] is False


def test_a_producer_converts_markdown_text_and_docling_inside_a_service_with_its_own_packages(
        tmp_path: Path) -> None:
    docling_file = ROOT / "tests" / "fixtures" / "docling" / "2206.01062.docling.json"
    code = textwrap.dedent(f"""
        import json
        import config, schemas, tasks  # the service's own, imported beside the client
        from longparser_client import ChunkRequest, parse_input
        from longparser_client.converters.markdown import blocks_from_markdown, blocks_from_text

        markdown = "# Turbines\\n\\nTurbine 3 was overhauled in May.\\n\\n- blades\\n- gearbox\\n"
        notes = parse_input(markdown, document_id="notes", text_converter=blocks_from_markdown)
        assert isinstance(notes, ChunkRequest)
        assert [b.type for b in notes.blocks] == ["heading", "paragraph", "list_item", "list_item"]
        assert [b.hierarchy_path for b in notes.blocks] == [["Turbines"]] * 4
        memo = parse_input("First paragraph.\\n\\nSecond one.", document_id="memo",
                           text_converter=blocks_from_text)
        assert [b.text for b in memo.blocks] == ["First paragraph.", "Second one."]
        # neither converter needs the engine's numerical stack
        assert "numpy" not in sys.modules and "tokenizers" not in sys.modules, "numerical stack"

        from longparser_client.converters.docling import blocks_from_docling
        document = json.load(open({str(docling_file)!r}, encoding="utf-8"))
        paper = parse_input(document, docling=blocks_from_docling)
        assert paper.document_id and len(paper.blocks) > 50, len(paper.blocks)
    """)
    seen = run_in_service(upload_service(tmp_path), code)
    assert seen["owners"] == {"config": "upload-service config", "tasks": "upload-service tasks",
                              "schemas": "upload-service schemas"}
    assert seen["worker_modules"] == []  # neither the engine nor loaders.markdown / loaders.docling
    assert seen["torch"] is False


def test_the_install_hints_name_extras_the_client_declares() -> None:
    import tomllib

    from longparser_client.schemas.inputs import DOCLING_INSTALL_HINT, MARKDOWN_INSTALL_HINT

    extras = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for hint, extra, parser in ((MARKDOWN_INSTALL_HINT, "markdown", "markdown-it-py"),
                                (DOCLING_INSTALL_HINT, "docling", "docling-core")):
        assert hint == f"pip install 'longparser-client[{extra}]'"
        assert any(requirement.startswith(parser) for requirement in extras[extra]), extras[extra]


def test_without_the_client_on_the_path_the_service_s_names_are_what_a_producer_would_get(
        tmp_path: Path) -> None:
    """The check checks: the old README's import, inside such a service, fails."""
    service = upload_service(tmp_path)
    code = f"import sys; sys.path[:0] = [{str(service)!r}]; from schemas import ChunkingConfig"
    done = subprocess.run([sys.executable, "-I", "-c", code], cwd=service, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 1
    assert "cannot import name 'ChunkingConfig' from 'schemas'" in done.stderr


def old_names() -> list[tuple[str, str]]:
    """``(old module name, client module name)`` of every module the worker keeps an old name for."""
    found = []
    for path in sorted(ROOT.glob("*/*.py")):
        text = path.read_text(encoding="utf-8")
        if ALIAS_MARK in text:
            package, name = ast.parse(text).body[2].module, ast.parse(text).body[2].names[0].name
            found.append((f"{path.parent.name}.{path.stem}", f"{package}.{name}"))
    return found


def test_each_old_name_is_the_client_s_module_object() -> None:
    import importlib

    pairs = old_names()
    assert ("tasks.client", "longparser_client.client") in pairs
    assert ("config.settings", "longparser_client.settings") in pairs
    assert ("schemas.blocks", "longparser_client.schemas.blocks") in pairs
    assert ("service.keys", "longparser_client.service.keys") in pairs
    assert ("loaders.markdown", "longparser_client.converters.markdown") in pairs
    assert ("loaders.docling", "longparser_client.converters.docling") in pairs
    assert ("schemas.headings", "longparser_client.schemas.headings") in pairs
    for old, new in pairs:
        assert importlib.import_module(old) is importlib.import_module(new), old


def test_monkeypatching_through_an_old_name_reaches_the_real_module(monkeypatch: pytest.MonkeyPatch) -> None:
    import longparser_client.client as real
    import tasks.client

    monkeypatch.setattr(tasks.client, "DEFAULT_TIMEOUT_FOR_TEST", 1, raising=False)
    assert real.DEFAULT_TIMEOUT_FOR_TEST == 1


def test_monkeypatching_a_converter_through_its_old_name_reaches_the_one_the_client_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import loaders
    import loaders.markdown
    from longparser_client.converters import markdown

    assert loaders.markdown is markdown and loaders.markdown.HeadingStack is markdown.HeadingStack
    monkeypatch.setattr(loaders.markdown, "TEXT_EXTRACTOR", "patched-through-the-old-name")
    assert markdown.blocks_from_text("x")[0]["provenance"]["extractor"] == "patched-through-the-old-name"


def test_the_package_exports_what_the_snippets_use() -> None:
    from longparser_client.client import Producer
    from longparser_client.service.events import EventConsumer

    assert longparser_client.Producer is Producer and longparser_client.EventConsumer is EventConsumer
    assert set(longparser_client.__all__) <= set(dir(longparser_client))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = longparser_client.Nope


def test_a_kombu_with_another_key_layout_stops_the_producer_in_one_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from longparser_client.client import Producer

    monkeypatch.setattr(kombu_redis.Channel, "sep", "::")
    celery_compat.check_producer.cache_clear()
    try:
        with pytest.raises(celery_compat.ProducerIncompatible) as refused:
            Producer(Settings())
    finally:
        celery_compat.check_producer.cache_clear()
    message = str(refused.value)
    assert "\n" not in message
    assert ("kombu.transport.redis.Channel.sep is '::', not '\\x06\\x16' as service/keys.py copies it"
            in message)


def test_a_celery_without_decode_result_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from celery.backends import base

    monkeypatch.delattr(base.Backend, "decode_result")
    assert celery_compat.internal_problems(celery_compat.PRODUCER_INTERNALS) == [
        "celery.backends.base.Backend.decode_result is missing"]


def test_the_installed_celery_and_kombu_serve_the_producer() -> None:
    celery_compat.check_producer.cache_clear()
    assert celery_compat.internal_problems(celery_compat.PRODUCER_INTERNALS) == []
    celery_compat.check_producer()


def test_the_worker_checks_the_producer_s_internals_too() -> None:
    from worker import celery_compat as worker_compat

    assert all(internal in worker_compat.INTERNALS for internal in celery_compat.PRODUCER_INTERNALS)


def test_the_client_distribution_declares_its_package_and_the_worker_depends_on_it() -> None:
    import tomllib

    client = tomllib.loads((CLIENT / "pyproject.toml").read_text())
    worker = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert client["project"]["name"] == "longparser-client"
    assert client["tool"]["setuptools"]["packages"]["find"]["include"] == ["longparser_client*"]
    version = client["project"]["version"]
    # the worker's distribution gets the Markdown converter's parser and, with [docling], docling-core
    # through the client's extras: one declaration of each
    assert f"longparser-client[markdown]=={version}" in worker["project"]["dependencies"]
    assert worker["project"]["optional-dependencies"]["docling"] == [f"longparser-client[docling]=={version}"]
    makefile = (ROOT / "Makefile").read_text()
    assert "$(PIP_INSTALL) -e ./client -e '.[dev]'" in makefile
