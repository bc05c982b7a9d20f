"""Suite-wide policy: network refused, real-model tests opt-in (deselected, never skipped).

* Every test runs with network sockets refused (pytest-socket). Integration tests under
  ``tests/integration/`` and the fault suite under ``tests/faults/`` may reach loopback only
  (the test Redis, worker processes, Flower, the suite's own redis-server processes); a
  real-model test there reaches no socket at all unless it is also marked ``integration``.
* Tests marked ``real_embeddings`` are *deselected* unless ``--run-real-embeddings`` is given,
  tests marked ``framework_adapters`` unless ``--run-adapters`` is, and tests marked
  ``node_producer`` unless ``--run-node`` is; with the flag, a missing prerequisite fails the
  test (the fixtures raise, they do not skip).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_socket import disable_socket, socket_allow_hosts

LOOPBACK = ["127.0.0.1", "localhost", "::1"]
INTEGRATION_DIR = Path(__file__).parent / "integration"
FAULTS_DIR = Path(__file__).parent / "faults"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-real-embeddings",
        action="store_true",
        default=False,
        help="run the real-model suite (pinned all-MiniLM-L6-v2 on the CPU); missing "
        "prerequisites fail the run",
    )
    parser.addoption(
        "--run-adapters",
        action="store_true",
        default=False,
        help="run the framework adapters' suite against the real LangChain and LlamaIndex "
        "packages (the [langchain] and [llamaindex] extras); a missing package fails the run",
    )
    parser.addoption(
        "--run-node",
        action="store_true",
        default=False,
        help="run the Node.js producer test (tests/node: celery-node and ioredis, installed by npm ci); "
        "a missing node or package fails the run",
    )
    parser.addoption(
        "--real-device",
        default="cpu",
        help="torch device the real-model suite loads the model on (default cpu, the production "
        "setting; e.g. cuda for a one-off measurement on a GPU machine)",
    )
    parser.addoption(
        "--encoder-backend",
        action="append",
        default=None,
        metavar="NAME",
        help="encoder backend the real-model suite runs with (repeatable: torch, onnx, onnx-int8, "
        "openvino); a backend named here that cannot load fails. Default: torch and every backend "
        "whose runtime is installed (docs/encoders.md)",
    )


# Opt-in marker -> the flag that selects it.
OPT_IN = {"real_embeddings": "--run-real-embeddings", "framework_adapters": "--run-adapters",
          "node_producer": "--run-node"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    left_out = {marker for marker, flag in OPT_IN.items() if not config.getoption(flag)}
    if not left_out:
        return
    selected, deselected = [], []
    for item in items:
        opted_out = any(item.get_closest_marker(marker) for marker in left_out)
        (deselected if opted_out else selected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def _is_integration(item: pytest.Item) -> bool:
    parents = Path(str(item.fspath)).parents
    return INTEGRATION_DIR in parents or FAULTS_DIR in parents


def pytest_runtest_setup(item: pytest.Item) -> None:
    # A real-model test reaches no socket (the model loads offline), unless it is also marked
    # integration: it then talks to the suite's Redis and worker processes, on loopback only.
    marked = {mark.name for mark in item.iter_markers()}
    if _is_integration(item) and ("real_embeddings" not in marked or "integration" in marked):
        socket_allow_hosts(LOOPBACK, allow_unix_socket=True)
    else:
        disable_socket(allow_unix_socket=True)


def runs_redis_tests(paths: list[str], cwd: Path) -> bool:
    """Whether a run of ``paths`` (pytest's arguments) may collect integration or fault tests,
    the only ones that use the suite's Redis: ``tests`` and ``tests/integration/x.py`` do,
    ``tests/unit`` and ``tests/adapters`` do not."""
    for argument in paths:
        path = (cwd / argument.split("::")[0]).resolve()
        if any(path == d or path in d.parents or d in path.parents for d in (INTEGRATION_DIR, FAULTS_DIR)):
            return True
    return False


def pytest_report_header(config: pytest.Config) -> str | None:
    """Which Redis the integration tests use (the choice lives in tests/integration/conftest.py),
    in a run that has such tests: a line naming a redis-server that never starts misleads.

    Declared here because pytest only asks root-level conftests for the header.
    """
    from tests.integration.conftest import describe_redis_choice

    return describe_redis_choice() if runs_redis_tests(config.args, config.invocation_params.dir) else None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The same line at the end of the run, where a reader of the output looks last."""
    from tests.integration.conftest import describe_redis_choice

    config = terminalreporter.config
    if runs_redis_tests(config.args, config.invocation_params.dir):
        terminalreporter.write_line(describe_redis_choice())


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL with pgvector for the session (tests/pg.py); a few seconds to start.
    Tests isolate themselves by collection (table) name."""
    from tests.pg import running_postgres

    with running_postgres() as server:
        yield server
