"""Per-package coverage floors, checked by ``make test`` on coverage's JSON report.

coverage.py gates only the total (``fail_under``); the service's packages differ too much in
size for one number to mean anything (the engine alone is half the statements). Each package
listed in ``[tool.coverage.run] source`` has a floor in ``[tool.longparser.coverage-floors]``
(pyproject.toml), set at the value measured when it was introduced: a change may raise a floor,
never lower it without saying why in its commit.

    python -m tests.coverage_floors var/coverage.json

prints one line per package and exits 1 naming each package under its floor (or without one).
"""

from __future__ import annotations

import json
import sys
import tomllib
from collections import defaultdict
from pathlib import Path, PurePath

ROOT = Path(__file__).resolve().parents[1]
# Folders of the repository's other distributions, whose packages sit one level down
# (client/longparser_client/).
DISTRIBUTION_FOLDERS = ("client",)


def configured(pyproject: Path = ROOT / "pyproject.toml") -> tuple[list[str], dict[str, float]]:
    """The measured packages (coverage's ``source``) and their floors."""
    tool = tomllib.loads(pyproject.read_text())["tool"]
    return list(tool["coverage"]["run"]["source"]), dict(tool["longparser"]["coverage-floors"])


def package_coverage(report: dict, packages: list[str]) -> dict[str, tuple[int, int]]:
    """``{package: (covered statements, statements)}`` from a coverage JSON report."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for path, data in report["files"].items():
        parts = PurePath(path).parts
        if parts[:1] and parts[0] in DISTRIBUTION_FOLDERS:
            parts = parts[1:]
        package = next((p for p in packages if p in parts[:1]), None)
        if package is None:
            continue
        summary = data["summary"]
        totals[package][0] += summary["covered_lines"]
        totals[package][1] += summary["num_statements"]
    return {package: (covered, statements) for package, (covered, statements) in totals.items()}


def problems(measured: dict[str, tuple[int, int]], packages: list[str],
             floors: dict[str, float]) -> list[str]:
    found = [f"{p}: no floor in [tool.longparser.coverage-floors]" for p in packages if p not in floors]
    found += [f"{p}: a floor for a package coverage does not measure" for p in floors
              if p not in packages]
    for package in packages:
        covered, statements = measured.get(package, (0, 0))
        percent = 100.0 * covered / statements if statements else 0.0
        if package in floors and percent < floors[package]:
            found.append(f"{package}: {percent:.1f}% < floor {floors[package]:g}%")
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.coverage_floors COVERAGE_JSON", file=sys.stderr)
        return 2
    packages, floors = configured()
    measured = package_coverage(json.loads(Path(args[0]).read_text()), packages)
    for package in packages:
        covered, statements = measured.get(package, (0, 0))
        percent = 100.0 * covered / statements if statements else 0.0
        print(f"coverage {package:<11} {percent:5.1f}% of {statements:5d} statements "
              f"(floor {floors.get(package, 0):g}%)")
    failed = problems(measured, packages, floors)
    for problem in failed:
        print(f"coverage below its floor: {problem}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
