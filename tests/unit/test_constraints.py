"""constraints.txt: the versions CI proved, which every install of the Makefile takes.

The Makefile's installs are read from ``make -n -B`` (the commands make would run, variables
expanded), so a new install line that forgets the constraints fails here however it is spelled.
The Dockerfile's installs are checked in test_docker_files.py.
"""

from __future__ import annotations

import shlex
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / "constraints.txt"
# The fleet's own dependency tree: what the worker and the producer run on.
FLEET = ("celery", "kombu", "redis", "billiard", "vine", "amqp", "click", "pydantic", "pydantic-core",
         "pydantic-settings", "tenacity", "packaging")


def pins() -> dict[str, str]:
    """``{canonical name: version}`` of constraints.txt; every line is ``name==version``."""
    found: dict[str, str] = {}
    for line in CONSTRAINTS.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        requirement = Requirement(line)
        (specifier,) = list(requirement.specifier)
        assert specifier.operator == "==" and not requirement.marker, line
        name = canonicalize_name(requirement.name)
        assert name not in found, f"{name} pinned twice"
        found[name] = specifier.version
    return found


def make_installs(*arguments: str, tmp_path: Path) -> list[list[str]]:
    """The ``pip install`` commands ``make`` would run for ``arguments`` on a fresh venv."""
    venv = tmp_path / "venv"
    done = subprocess.run(["make", "-n", "-B", f"VENV={venv}", *arguments], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    commands = [shlex.split(line) for line in done.stdout.splitlines() if line.strip()]
    return [c for c in commands if "pip" in c and "install" in c[c.index("pip"):]]


@pytest.mark.parametrize(("arguments", "last_install"), [
    # dev, torch, embeddings, every backend runtime: everything CI installs
    (["{venv}/.backends"], ".[dev,embeddings-cpu,onnx,openvino]"),
    (["embeddings", "ENCODER_BACKENDS=onnx openvino"], ".[dev,embeddings-cpu,onnx,openvino]"),
    (["{venv}/.adapters"], ".[dev,langchain,llamaindex]"),  # make test-adapters' extras
], ids=["backends", "exported-backends", "adapters"])
def test_every_install_of_the_makefile_takes_the_constraints(arguments: list[str], last_install: str,
                                                             tmp_path: Path) -> None:
    arguments = [a.format(venv=tmp_path / "venv") for a in arguments]
    installs = make_installs(*arguments, tmp_path=tmp_path)
    assert len(installs) >= 3 and installs[-1][-1] == last_install, installs
    for command in installs:
        assert "constraints.txt" in command and command[command.index("constraints.txt") - 1] in {
            "-c", "--constraint"}, command


def test_the_constraints_pin_the_tested_releases_and_leave_torch_to_torch_spec() -> None:
    pinned = pins()
    assert "torch" not in pinned  # the Makefile's TORCH_SPEC is torch's one pin
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    ranges = {canonicalize_name(r.name): r.specifier for r in map(Requirement, extras["worker"])}
    for name in ("celery", "kombu", "redis"):
        assert ranges[name].contains(pinned[name]), (name, pinned[name], ranges[name])


def test_this_environment_runs_the_pinned_fleet() -> None:
    pinned = pins()
    installed = {name: metadata.version(name) for name in FLEET}
    assert installed == {name: pinned[canonicalize_name(name)] for name in FLEET}
