"""Processes the integration and fault suites start: each in a new session (its own process
group) with its output in a log file, and stopped by PID: SIGTERM to the leader (a worker's
warm shutdown), then SIGKILL of the whole group so no pool child outlives its test."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass
class ManagedProcess:
    """A process a suite started (see the module doc)."""

    name: str
    popen: subprocess.Popen
    log_path: Path
    extra: dict[str, Any] = field(default_factory=dict)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.popen.pid, sig)

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM the leader, wait up to ``grace_s``, then SIGKILL its whole group."""
        if self.alive():
            self.signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=grace_s)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)


def start_process(name: str, argv: list[str], log_dir: Path, *, env: dict[str, str] | None = None,
                  cwd: Path = REPO_ROOT) -> ManagedProcess:
    """Start ``argv`` in a new session, its output appended to ``log_dir/name.log``."""
    log_path = log_dir / f"{name}.log"
    with log_path.open("ab") as log:
        popen = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
    return ManagedProcess(name, popen, log_path)
