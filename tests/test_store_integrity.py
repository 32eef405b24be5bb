"""The store as a site finds it: private files, damage found at start, one
daemon per SQLite store, times past 2038 on both databases, and a full disk."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import inspect, make_url, text

from daemon_harness import Daemon
from overlay.persistence.store import Store
from test_store import CAPACITY, new_ar


def _start_fails(daemon: Daemon) -> str:
    """plus_scheduler refuses to start: its one line of explanation."""
    daemon.start(wait=False)
    daemon.process.wait(timeout=60)
    assert daemon.process.returncode == 1
    assert not daemon.socket.exists(), "a stale socket was left"
    lines = daemon.log.read_text().strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture
def daemon():
    made = Daemon()
    yield made
    made.cleanup()


def test_the_store_files_are_readable_by_the_daemon_only(daemon):
    daemon.start()
    daemon.reserve("plusu1", "-s", "now+2h", "-D", "1h", "-n", "1")
    state = daemon.dir / "state"
    for name in ("plus.db", "plus.db-wal", "plus.db-shm"):
        assert (state / name).stat().st_mode & 0o777 == 0o600, name
    copy = subprocess.run(["runuser", "-u", "plusu2", "--", "cat", str(state / "plus.db")],
                          capture_output=True)
    assert copy.returncode != 0 and b"Permission denied" in copy.stderr


def test_a_store_made_readable_by_an_older_version_is_made_private(daemon):
    daemon.start()
    daemon.stop()
    database = daemon.dir / "state" / "plus.db"
    database.chmod(0o644)
    daemon.start()
    assert database.stat().st_mode & 0o777 == 0o600


def test_a_truncated_store_stops_the_start(daemon):
    (daemon.dir / "state").mkdir()
    (daemon.dir / "state" / "plus.db").write_bytes(b"")
    line = _start_fails(daemon)
    assert line.startswith("plus_scheduler: cannot start: the store ")
    assert "is empty (0 bytes)" in line


def _damage(database: Path, where: str) -> None:
    data = bytearray(database.read_bytes())
    page = 4096
    if where == "header":
        data[:100] = bytes(random.Random(1).randrange(256) for _ in range(100))
    else:
        pages = len(data) // page
        number = {"second page": 1, "middle page": pages // 2, "last page": pages - 1}[where]
        noise = random.Random(number)
        data[number * page:(number + 1) * page] = bytes(noise.randrange(256) for _ in range(page))
    database.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["header", "second page", "middle page", "last page"])
def test_a_damaged_store_stops_the_start(daemon, where):
    daemon.start()
    for hour in range(2, 60):
        daemon.reserve("plusu1", "-s", f"now+{hour}h", "-D", "1h", "-n", "2", "-N", f"ar{hour}")
    daemon.stop()
    database = daemon.dir / "state" / "plus.db"
    assert not (daemon.dir / "state" / "plus.db-wal").exists() or \
        (daemon.dir / "state" / "plus.db-wal").stat().st_size == 0
    _damage(database, where)
    daemon.log.write_text("")
    line = _start_fails(daemon)
    assert line.startswith("plus_scheduler: cannot start: the store ")
    assert "is damaged" in line and "SELECT" not in line


def test_a_second_daemon_on_one_sqlite_store_refuses_to_start(tmp_path):
    """(On PostgreSQL it serves as a standby: test_ha.py.)"""
    store_url = f"sqlite:///{tmp_path / 'shared.db'}"
    first, second = Daemon(store=store_url), Daemon(store=store_url)
    try:
        first.start()
        line = _start_fails(second)
        assert f"the store is in use by plus_scheduler pid {first.process.pid} on " in line
        assert "one plus_scheduler per store" in line
        assert first.run("plusu1", "plus_status").returncode == 0
        first.stop()
        second.log.write_text("")
        second.start()
        assert second.run("plusu1", "plus_status").returncode == 0
    finally:
        first.cleanup()
        second.cleanup()


def test_a_daemon_killed_hard_comes_back_at_once_on_its_own_store(store_url, tmp_path):
    if store_url.startswith("sqlite"):
        store_url = f"sqlite:///{tmp_path / 'own.db'}"
    daemon = Daemon(store=store_url)
    try:
        daemon.start()
        ar = daemon.reserve("plusu1", "-s", "now+2h", "-D", "1h", "-n", "1")
        daemon.kill9()
        daemon.start()
        assert [view["id"] for view in daemon.status()] == [ar["id"]]
    finally:
        daemon.cleanup()


def test_times_after_2038_are_stored_on_both_databases(store):
    far = 2 ** 31 + 86400
    ar = store.create(new_ar(start=far, end=far + 3600), CAPACITY)
    assert store.get(ar.id).end == far + 3600


def test_an_older_postgresql_store_gets_wide_time_columns(store_url):
    if store_url.startswith("sqlite"):
        pytest.skip("SQLite integers are 64-bit whatever the declared type")
    old = Store(store_url)
    with old.engine.begin() as connection:
        for table, column in (("reservation", "start_time"), ("allocation", "end_time"),
                              ("usage", "end_time")):
            connection.execute(text(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" TYPE INTEGER'))
    old.close()
    store = Store(store_url)
    try:
        far = 2 ** 31 + 86400
        ar = store.create(new_ar(start=far, end=far + 3600), CAPACITY)
        assert store.get(ar.id).start == far
    finally:
        store.close()


def test_an_older_store_gets_the_capacity_checks_index_and_it_is_used(store_url):
    """A store made before ix_allocation_node_end gets it when opened; on
    SQLite the capacity re-check's query then searches it, not a walk of
    every allocation (scripts/bench_repeat.py: whole-cluster series)."""
    old = Store(store_url)
    with old.engine.begin() as connection:
        connection.execute(text("DROP INDEX ix_allocation_node_end"))
    old.close()
    store = Store(store_url)
    try:
        names = {index["name"] for index in inspect(store.engine).get_indexes("allocation")}
        assert "ix_allocation_node_end" in names
        store.create(new_ar(start=10_000, end=20_000), CAPACITY)
        if store_url.startswith("sqlite"):
            with store.engine.connect() as connection:
                plan = connection.execute(text(
                    "EXPLAIN QUERY PLAN SELECT * FROM allocation WHERE node IN ('n1', 'n2') AND "
                    "start_time < 30000 AND end_time > 15000 AND held AND reservation_id != 0"
                )).fetchall()
            assert "ix_allocation_node_end" in str(plan), plan
    finally:
        store.close()


@pytest.fixture
def small_disk():
    """A daemon whose state directory is a 16 MiB tmpfs."""
    daemon = Daemon()
    state = daemon.dir / "state"
    state.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs", str(state)],
                   check=True)
    yield daemon
    daemon.stop()
    subprocess.run(["umount", "-l", str(state)], check=False)
    daemon.cleanup()


def _fill(disk: Path) -> Path:
    """Write a file until the disk has no byte left."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as handle:
        for size in (65536, 512, 1):
            try:
                while True:
                    handle.write(b"\0" * size)
            except OSError:
                pass
    return filler


def test_a_full_disk_refuses_changes_in_one_line_and_loses_nothing(small_disk):
    daemon = small_disk
    daemon.start()
    kept = daemon.reserve("plusu1", "-s", "now+2h", "-D", "1h", "-n", "1")
    filler = _fill(daemon.dir / "state")
    granted, refusals = [], []
    for hour in range(3, 40):
        result = daemon.run("plusu1", "plus_reserve", "--json", "-s", f"now+{hour}h",
                            "-D", "1h", "-n", "5")
        if result.returncode == 0:
            granted.append(json.loads(result.stdout)["id"])
        else:
            refusals.append(result.stderr)
            if len(refusals) == 3:
                break
    assert refusals, "the disk never filled"
    for refusal in refusals:
        assert refusal.startswith("plus_reserve: no space left in "), refusal
        assert len(refusal.strip().splitlines()) == 1 and "internal error" not in refusal
    cancel = daemon.run("plusu1", "plus_cancel", "-r", str(kept["id"]))
    shown = {view["id"]: view["state"] for view in daemon.status()}
    assert shown == {kept["id"]: "d" if cancel.returncode == 0 else "w",
                     **{ar_id: "w" for ar_id in granted}}
    filler.unlink()
    daemon.stop()
    daemon.start()
    assert {view["id"]: view["state"] for view in daemon.status()} == shown
    daemon.reserve("plusu1", "-s", "now+50h", "-D", "1h", "-n", "1")


def test_the_database_password_never_reaches_the_log_or_the_terminal(store_url):
    if store_url.startswith("sqlite"):
        pytest.skip("a SQLite store has no password")
    url = make_url(store_url)
    daemon = Daemon(store=store_url)
    wrong = Daemon(store=url.set(password="Wr0ngSecret").render_as_string(hide_password=False))
    try:
        daemon.start()
        daemon.stop()
        assert url.password and f":{url.password}@" not in daemon.log.read_text()
        line = _start_fails(wrong)
        assert line.startswith("plus_scheduler: cannot start: the store ")
        assert "Wr0ngSecret" not in line and "password authentication failed" in line
    finally:
        daemon.cleanup()
        wrong.cleanup()


def test_plus_scheduler_status_on_a_sqlite_store_and_without_a_daemon(daemon):
    absent = daemon.run("plusu1", "plus_scheduler", "--status")
    assert absent.returncode == 3 and "cannot reach plus_scheduler" in absent.stderr
    daemon.start()
    lines = daemon.ok("plusu1", "plus_scheduler", "--status").splitlines()
    assert lines[0].endswith(") leads")
    assert lines[1].endswith("(SQLite: one daemon per store)")
    assert lines[3].split()[1] == "leader" and lines[3].split()[0].endswith(
        f":{daemon.process.pid}")


def test_an_outside_reader_of_the_store_loses_none_of_the_daemons_writes(daemon):
    """The native backend opens an engine of its own on the open store: that
    must not drop the daemon's SQLite locks (a descriptor of the file opened
    and closed drops them all), or the first outside reader to close the
    store deletes the WAL the daemon still writes to, and what the daemon
    writes after is seen by no one else, and lost at its stop."""
    daemon.start()
    first = daemon.reserve("plusu1", "-s", "now+2h", "-D", "1h", "-n", "1")["id"]
    database = daemon.dir / "state" / "plus.db"
    read = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "print(*[r[0] for r in c.execute('SELECT id FROM reservation ORDER BY id')]); c.close()")
    assert subprocess.run([sys.executable, "-c", read, str(database)], capture_output=True,
                          text=True, check=True).stdout.split() == [str(first)]
    second = daemon.reserve("plusu1", "-s", "now+4h", "-D", "1h", "-n", "1")["id"]
    assert (daemon.dir / "state" / "plus.db-wal").exists()
    seen = subprocess.run([sys.executable, "-c", read, str(database)], capture_output=True,
                          text=True, check=True).stdout.split()
    assert seen == [str(first), str(second)]
