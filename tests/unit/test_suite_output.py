"""What a run of the suite says about itself: the line naming the integration tests' Redis
appears in runs that have integration or fault tests, and only there (``make test-adapters``
starts no redis-server, so it must not say it does)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import runs_redis_tests

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("paths", "expected"), [
    (["tests"], True),
    (["."], True),
    (["tests/integration/test_events.py::test_x"], True),
    (["tests/faults"], True),
    (["tests/unit", "tests/adapters"], False),
    (["tests/adapters/test_langchain.py"], False),
])
def test_runs_redis_tests(paths: list[str], expected: bool) -> None:
    assert runs_redis_tests(paths, ROOT) is expected


def _collect(path: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pytest", path, "--collect-only", "--no-cov",
                           "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=env)
    return done.stdout + done.stderr


def test_the_adapters_run_names_no_redis_and_an_integration_run_does() -> None:
    assert "integration redis:" not in _collect("tests/adapters")
    assert _collect("tests/integration/test_events.py").count("integration redis:") == 2  # first and last
