"""A PostgreSQL server of the test's own, to restart and to cut off
(Debian's PostgreSQL 15 binaries, run as the postgres user on a free port
and a temporary data folder): the shared test server on 5432 is never
restarted. Used by tests/test_ha_faults.py and scripts/ha_chaos.py."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

BIN = Path("/usr/lib/postgresql/15/bin")
USER, PASSWORD, DATABASE = "plus", "plus", "plus"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PrivatePostgres:
    """One server: ``start``, ``stop`` and ``start`` again (a restart with
    the clients' connections gone meanwhile), ``remove`` at the end.
    ``addresses`` it listens on besides 127.0.0.1 (a test host's link),
    ``clients`` the addresses it takes clients from besides 127.0.0.1."""

    def __init__(self, addresses: tuple[str, ...] = (), clients: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.addresses = ("127.0.0.1", *addresses)
        self.dir = Path(tempfile.mkdtemp(prefix="plus-pg-"))
        self.data = self.dir / "data"
        owner = pwd.getpwnam("postgres")
        os.chown(self.dir, owner.pw_uid, owner.pw_gid)
        self._as_postgres(BIN / "initdb", "-D", self.data, "-U", "postgres", "-E", "UTF8",
                          "--auth-local=peer", "--auth-host=scram-sha-256")
        with open(self.data / "pg_hba.conf", "a") as hba:
            hba.write("".join(f"host all all {address}/32 scram-sha-256\n"
                              for address in clients))

    def url(self, address: str = "127.0.0.1") -> str:
        """The store URL (SQLAlchemy's form) of the database, reached at ``address``."""
        return f"postgresql+psycopg://{USER}:{PASSWORD}@{address}:{self.port}/{DATABASE}"

    def start(self) -> None:
        self._as_postgres(BIN / "pg_ctl", "-D", self.data, "-l", self.dir / "server.log", "-w",
                          "-t", "120", "start", "-o",
                          f"-p {self.port} -k {self.dir} "
                          f"-c listen_addresses={','.join(self.addresses)} "
                          "-c fsync=off -c max_connections=200")
        if not self._psql("SELECT 1 FROM pg_roles WHERE rolname = 'plus'").strip():
            self._psql(f"CREATE ROLE {USER} LOGIN PASSWORD '{PASSWORD}'")
            self._psql(f"CREATE DATABASE {DATABASE} OWNER {USER}")

    def stop(self) -> None:
        """A fast shutdown: every client's session ends at once."""
        self._as_postgres(BIN / "pg_ctl", "-D", self.data, "-w", "-t", "120", "-m", "fast",
                          "stop")

    def terminate(self, where: str) -> int:
        """End the sessions of the database's clients matching the SQL
        condition ``where`` on pg_stat_activity; how many."""
        ended = self._psql(f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                           f"WHERE datname = '{DATABASE}' AND pid <> pg_backend_pid() "
                           f"AND ({where})")
        return int(ended.strip() or 0)

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _psql(self, sql: str) -> str:
        return self._as_postgres(BIN / "psql", "-h", self.dir, "-p", str(self.port), "-d",
                                 "postgres", "-XAtqc", sql)

    def _as_postgres(self, *argv) -> str:
        done = subprocess.run(["runuser", "-u", "postgres", "--", *map(str, argv)],
                              capture_output=True, text=True, cwd="/", timeout=180)
        if done.returncode != 0:
            raise RuntimeError(f"{Path(str(argv[0])).name} failed: {done.stderr or done.stdout}")
        return done.stdout

