"""The fault suite runs only when asked for (``make test-faults`` sets LONGPARSER_FAULTS=1).

Its scenarios start and kill real ``redis-server`` and worker processes and take minutes, so the
default ``make test`` leaves them out (deselected, never reported as passed or skipped). The
table rows of every scenario are printed again at the end of the run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.faults.harness import RESULTS_FILE_ENV, Report, Row, record, workspace
from tests.faults.hostile import HostileRow

FAULTS_DIR = Path(__file__).parent
ENABLE_ENV = "LONGPARSER_FAULTS"
_ROWS: list[str] = []
_HOSTILE_ROWS: list[str] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(ENABLE_ENV) == "1":
        return
    mine = [item for item in items if FAULTS_DIR in Path(str(item.fspath)).parents]
    if mine:
        config.hook.pytest_deselected(items=mine)
        items[:] = [item for item in items if item not in mine]


@pytest.fixture
def space(request: pytest.FixtureRequest) -> Iterator[tuple[Path, Path]]:
    """A temporary directory for Redis data and process logs; logs are attached on failure."""
    with workspace() as (base, logs):
        yield base, logs
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            keep = os.environ.get("LONGPARSER_FAULTS_KEEP_LOGS")
            if keep:
                shutil.copytree(logs, Path(keep) / request.node.name, dirs_exist_ok=True)
            for path in sorted(logs.glob("*.log")):
                tail = "\n".join(path.read_text(errors="replace").splitlines()[-60:])
                report.sections.append((f"log {path.name}", tail))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]


@pytest.fixture
def report() -> Iterator[Report]:
    """``report(row)``: print and record a scenario's row now, and put it in the final table."""
    rows: list[str] = []

    def add(row: Row) -> None:
        record(row)
        rows.append(row.line())

    yield add
    _ROWS.extend(rows)


@pytest.fixture
def hostile_report() -> Iterator[Callable[[HostileRow], None]]:
    """``hostile_report(row)``: print a hostile-message scenario's row now and table it at the end."""

    def add(row: HostileRow) -> None:
        print(f"\nHOSTILE TABLE ROW {row.line()}", flush=True)
        _HOSTILE_ROWS.append(row.line())

    yield add


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _HOSTILE_ROWS:
        terminalreporter.write_line("")
        terminalreporter.write_line("| hostile message | size | parent RSS growth | child RSS growth | "
                                    "deliveries | record | code: notes |")
        terminalreporter.write_line("|---|---|---|---|---|---|---|")
        for row in _HOSTILE_ROWS:
            terminalreporter.write_line(row)
    if _ROWS:
        terminalreporter.write_line("")
        terminalreporter.write_line("| scenario | submitted | stored | processed more than once | "
                                    "s from Redis back to last stored | notes |")
        terminalreporter.write_line("|---|---|---|---|---|---|")
        for row in _ROWS:
            terminalreporter.write_line(row)
        target = os.environ.get(RESULTS_FILE_ENV)
        if target:
            terminalreporter.write_line(f"(rows also in {target})")
