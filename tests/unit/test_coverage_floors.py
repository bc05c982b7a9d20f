"""tests/coverage_floors.py: per-package floors over coverage's JSON report (run by make test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import coverage_floors

REPORT = {"files": {
    "worker/transport.py": {"summary": {"covered_lines": 9, "num_statements": 10}},
    "worker/restore.py": {"summary": {"covered_lines": 10, "num_statements": 10}},
    "config/settings.py": {"summary": {"covered_lines": 5, "num_statements": 10}},
    "tests/unit/test_x.py": {"summary": {"covered_lines": 0, "num_statements": 10}},
}}


def test_packages_are_summed_over_their_files() -> None:
    measured = coverage_floors.package_coverage(REPORT, ["worker", "config", "cli"])
    assert measured == {"worker": (19, 20), "config": (5, 10)}


def test_the_producer_client_is_measured_in_its_own_folder() -> None:
    report = {"files": {
        "client/longparser_client/client.py": {"summary": {"covered_lines": 3, "num_statements": 4}},
        "client/longparser_client/schemas/blocks.py": {"summary": {"covered_lines": 4, "num_statements": 4}},
        "tasks/client.py": {"summary": {"covered_lines": 2, "num_statements": 2}},
    }}
    measured = coverage_floors.package_coverage(report, ["longparser_client", "tasks", "schemas"])
    assert measured == {"longparser_client": (7, 8), "tasks": (2, 2)}


def test_a_package_under_its_floor_or_without_one_is_named() -> None:
    measured = {"worker": (19, 20), "config": (5, 10)}
    assert coverage_floors.problems(measured, ["worker", "config"], {"worker": 95, "config": 50}) == []
    floors = {"worker": 96, "config": 50, "gone": 10}
    assert coverage_floors.problems(measured, ["worker", "config", "cli"], floors) == [
        "cli: no floor in [tool.longparser.coverage-floors]",
        "gone: a floor for a package coverage does not measure",
        "worker: 95.0% < floor 96%",
    ]


def test_every_measured_package_has_a_floor_and_the_gate_fails_under_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packages, floors = coverage_floors.configured()
    assert set(packages) == set(floors)
    report = tmp_path / "coverage.json"
    files = {f"{p}/m.py": {"summary": {"covered_lines": 1, "num_statements": 2}} for p in packages}
    report.write_text(json.dumps({"files": files}))
    assert coverage_floors.main([str(report)]) == 1
    assert "coverage below its floor: longparser: 50.0% < floor" in capsys.readouterr().err
