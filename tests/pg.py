"""A real PostgreSQL with pgvector for the tests: the server ``pgserver`` (PyPI) bundles, started in
a temporary directory and reached through a unix socket there (no TCP port, so parallel runs and
other servers never collide).

As root (CI), pgserver runs PostgreSQL as a system user of its own (``pgserver``, created with
``useradd`` at first use), since PostgreSQL refuses to run as root; it makes the temporary
directory's parents traversable for that user. ``stop``/``start`` drive the bundled ``pg_ctl``
as that user, for the fault scenarios that restart the server mid-write.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit


@dataclass
class Postgres:
    """A running test server (``url`` for psycopg, ``pgdata`` its data directory)."""

    server: object  # pgserver.PostgresServer
    pgdata: Path

    @property
    def url(self) -> str:
        return self.server.get_uri()

    @property
    def socket_dir(self) -> str:
        return parse_qs(urlsplit(self.url).query)["host"][0]

    def _pg_ctl(self, *args: str) -> None:
        from pgserver._commands import pg_ctl

        pg_ctl(list(args), pgdata=self.pgdata, user=self.server.system_user, timeout=60)

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server (``immediate``: like a crash, connections cut, recovery at start)."""
        self._pg_ctl("-w", "-m", mode, "stop")

    def start(self) -> None:
        log = str(self.pgdata / "log")
        self._pg_ctl("-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", log, "start")

    def restart(self, outage_s: float = 0.0, mode: str = "immediate") -> None:
        """Stop, stay down ``outage_s`` seconds, start again."""
        self.stop(mode)
        time.sleep(outage_s)
        self.start()


@contextlib.contextmanager
def running_postgres() -> Iterator[Postgres]:
    """A fresh server in a temporary directory, stopped and deleted on exit."""
    import pgserver

    root = Path(tempfile.mkdtemp(prefix="lp-pg-"))
    server = pgserver.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        yield Postgres(server, root / "pgdata")
    finally:
        server.cleanup()
        with contextlib.suppress(OSError):
            root.rmdir()
