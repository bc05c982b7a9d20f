"""``make run`` (``python -m cli.demo``) on both of its backends.

* embedded: the broker URL points at a loopback port where nothing listens, so the demo must
  fall back to its embedded Redis-protocol server, say so, and still print the summary;
* redis: the test Redis answers, so the demo must use it (under this session's key prefix).

The printed summary must equal the one of ``longparser chunk --summary`` on the same file: the
worker path changes where the engine runs, never what it returns.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import REPO_ROOT, SESSION_PREFIX, TestRedis, free_port

pytestmark = pytest.mark.integration

SAMPLE = REPO_ROOT / "examples" / "sample_document.json"
DEMO_TIMEOUT_S = 90  # the demo's own wait is bounded too (--timeout)


def _env(broker_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LONGPARSER_")}
    env.update({
        "LONGPARSER_BROKER_URL": broker_url, "LONGPARSER_RESULT_URL": broker_url,
        "LONGPARSER_KEY_PREFIX": f"{SESSION_PREFIX}-demo",
        "LONGPARSER_CELERY_KEY_PREFIX": f"{SESSION_PREFIX}-demo-celery:",
        "PYTHONUNBUFFERED": "1",
    })
    return env


def _run(argv: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in its own process group; on timeout the whole group is killed."""
    process = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=DEMO_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        out, err = process.communicate()
        pytest.fail(f"{argv} ran past {DEMO_TIMEOUT_S} s\nstdout:\n{out}\nstderr:\n{err}")
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def _summary_lines(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("document "))
    return lines[start:]


@pytest.fixture(scope="module")
def direct_summary(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """``longparser chunk --summary`` on the sample: what the demo must print."""
    done = _run([sys.executable, "-m", "cli", "chunk", str(SAMPLE), "--summary"],
                _env("redis://127.0.0.1:1/0"), tmp_path_factory.mktemp("cli"))
    assert done.returncode == 0, done.stderr
    return _summary_lines(done.stdout)


@pytest.mark.parametrize("backend", ["embedded", "redis"])
def test_make_run_prints_backend_and_summary(
    backend: str, test_redis: TestRedis, direct_summary: list[str], tmp_path: Path
) -> None:
    if backend == "embedded":
        dead_url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
        env, first = _env(dead_url), "backend: embedded fakeredis TCP server at redis://127.0.0.1:"
        why = f", payloads up to 2048 KiB (none answered at {dead_url}); nothing to install"
    else:
        env, first, why = _env(test_redis.url), f"backend: redis at {test_redis.url}", ""
    done = _run([sys.executable, "-m", "cli.demo", "--timeout", "60"], env, tmp_path)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    lines = done.stdout.splitlines()
    assert lines[0].startswith(first), lines[0]
    assert lines[0].endswith(why), lines[0]
    assert any(line.startswith("result: stored and fetched in ") for line in lines)
    assert _summary_lines(done.stdout) == direct_summary
    assert direct_summary[0].startswith("document sample-annual-report: 45 blocks in, ")
    printed_paths = [word.strip("(),") for word in (done.stdout + done.stderr).split() if "/var/" in word]
    assert all(Path(path).exists() for path in printed_paths), printed_paths  # no path to a deleted log
    [hint] = [line for line in lines if line.startswith("the command: ")]
    command = hint.split()[2]  # where make put longparser: it is not on PATH
    assert (REPO_ROOT / command).exists() and command.endswith("/bin/longparser"), hint
