"""The reporting outbox (issue 30, item 4), on SQLite and on PostgreSQL
(the ``store`` fixture of conftest.py): records go into the store with the
change that causes them, or not at all; the leader's drain appends them to
the reporting file in order, each once, also when a leader crashed
between appending a batch and taking it out of the outbox, before the
append, or inside it; a daemon that does not lead writes nothing."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from overlay.language.model import State
from overlay.persistence import outbox as outbox_module
from overlay.persistence.outbox import Outbox
from overlay.persistence.store import Conflict, Stale, Store
from overlay.reporting.accounting import (
    ReportingWriter,
    ar_acct_records,
    new_ar_records,
    record_line,
)
from overlay.reporting.drain import ReportingDrain
from overlay_native import acct, jobstore
from overlay_native.jobstore import JobStore
from test_native_scheduler import ALICE, SMALL, T, World
from test_store import CAPACITY, new_ar


class Crash(Exception):
    """The daemon died here."""


@pytest.fixture
def outbox(store):
    return Outbox(store.engine, store.url)


@pytest.fixture
def path(tmp_path):
    return tmp_path / "reporting"


def _drain(outbox: Outbox, path, fence=lambda: True) -> ReportingDrain:
    """A daemon's drain (a new one: the next leader's)."""
    return ReportingDrain(outbox, str(path), fence)


def _lines(path) -> list[str]:
    return path.read_text().splitlines(keepends=True) if path.exists() else []


def _records(outbox: Outbox, count: int, first: int = 0) -> list[str]:
    lines = [record_line(1000 + i, "acct", f"job{i}") for i in range(first, first + count)]
    outbox.add(lines)
    return lines


def test_records_go_with_their_change_and_are_written_once_in_order(store, outbox, path):
    made = store.create(new_ar(), CAPACITY, lambda ar: new_ar_records(600, ar))
    ended = replace(made, state=State.EXITED)
    store.save(ended, reports=ar_acct_records(700, ended))
    store.remove(ended, reports=[record_line(800, "ar_log", "gone")])
    drain = _drain(outbox, path)
    assert drain.drain() == 3
    assert _lines(path) == (new_ar_records(600, made) + ar_acct_records(700, ended)
                            + [record_line(800, "ar_log", "gone")])
    assert new_ar_records(600, made) == [f"600:new_ar:500:{made.id}:alice\n"]
    assert drain.drain() == 0 and len(_lines(path)) == 3
    assert outbox.look() == (None, [])


def test_a_refused_change_leaves_no_record(store, outbox, path):
    mine = store.create(new_ar(), CAPACITY)
    with pytest.raises(Conflict):                  # the node is full: refused under the lock
        store.create(new_ar(), CAPACITY, lambda ar: new_ar_records(600, ar))
    store.save(replace(mine, message="changed at another daemon"))
    with pytest.raises(Stale):
        store.save(replace(mine, state=State.DELETED), reports=ar_acct_records(700, mine))
    with pytest.raises(Stale):
        store.save(replace(mine, id=mine.id + 1), reports=["never\n"])
    assert outbox.look() == (None, [])
    assert _drain(outbox, path).drain() == 0 and _lines(path) == []


def test_batches_follow_each_other_in_order(outbox, path, monkeypatch):
    monkeypatch.setattr(outbox_module, "BATCH", 3)
    monkeypatch.setattr("overlay.reporting.drain.BATCH", 3)
    lines = _records(outbox, 7)
    assert _drain(outbox, path).drain() == 7
    assert _lines(path) == lines


def test_a_crash_between_append_and_delete_writes_nothing_twice(outbox, path, monkeypatch):
    first = _records(outbox, 3)
    monkeypatch.setattr(outbox, "done", _crash)     # appended and fsynced, then killed
    with pytest.raises(Crash):
        _drain(outbox, path)._drain()
    assert _lines(path) == first
    monkeypatch.undo()
    later = _records(outbox, 2, first=3)
    assert _drain(outbox, path).drain() == 2       # the next leader
    assert _lines(path) == first + later
    assert outbox.look() == (None, [])


def test_a_crash_before_the_append_loses_nothing(outbox, path, monkeypatch):
    path.write_text("0:acct:earlier\n")
    first = _records(outbox, 3)

    def noted_then_killed(writer, data, before=None):
        with open(writer.path, "ab") as handle:
            before(handle)
        raise Crash

    monkeypatch.setattr(ReportingWriter, "append", noted_then_killed)
    with pytest.raises(Crash):
        _drain(outbox, path)._drain()
    assert outbox.look()[0] is not None and _lines(path) == ["0:acct:earlier\n"]
    monkeypatch.undo()
    assert _drain(outbox, path).drain() == 3
    assert _lines(path) == ["0:acct:earlier\n"] + first


def test_a_crash_inside_the_write_is_completed(outbox, path, monkeypatch):
    first = _records(outbox, 3)

    def half_then_killed(writer, data, before=None):
        with open(writer.path, "ab") as handle:
            before(handle)
            handle.write(data[:len(data) // 2 + 3])
        raise Crash

    monkeypatch.setattr(ReportingWriter, "append", half_then_killed)
    with pytest.raises(Crash):
        _drain(outbox, path)._drain()
    monkeypatch.undo()
    _drain(outbox, path).drain()
    assert _lines(path) == first


def test_a_file_replaced_meanwhile_gets_the_batch_again_with_a_warning(outbox, path, monkeypatch,
                                                                       caplog):
    first = _records(outbox, 2)
    monkeypatch.setattr(outbox, "done", _crash)
    with pytest.raises(Crash):
        _drain(outbox, path)._drain()
    monkeypatch.undo()
    path.rename(path.with_name("reporting.old"))    # rotated before the next leader came
    _drain(outbox, path).drain()
    assert _lines(path) == first
    assert "was replaced or truncated" in caplog.text


def test_a_daemon_that_does_not_lead_writes_nothing(outbox, path):
    lines = _records(outbox, 2)
    standby = _drain(outbox, path, fence=lambda: False)
    assert standby.drain() == 0 and not path.exists()
    assert [line for _, line in outbox.look()[1]] == lines


def test_a_leader_that_loses_the_lease_between_note_and_append_writes_nothing(outbox, path):
    lines = _records(outbox, 2)
    answers = iter([True, False])                   # leads at the look, not at the append
    assert _drain(outbox, path, fence=lambda: next(answers)).drain() == 0
    assert _lines(path) == []
    assert _drain(outbox, path).drain() == 2 and _lines(path) == lines


@pytest.mark.parametrize("crash", ["inside the job's write", "after it"])
def test_a_native_jobs_end_and_its_acct_record_commit_together(store, outbox, path, tmp_path,
                                                                 monkeypatch, crash):
    """The native scheduler's leader dies while ending a job: inside the
    write that removes the job and puts its records (neither commits: the
    next leader accounts the job), or right after it (both did: the next
    leader finds no job to account). Either way the reporting file and the
    accounting file get one record each."""
    world = World(tmp_path, SMALL, url=store.url, reporting=True)
    job = world.submit(ALICE, "x", "10")
    world.at(T)
    world.clock.now = T + 10
    if crash == "after it":
        remove = JobStore.remove
        monkeypatch.setattr(JobStore, "remove", lambda *args: (remove(*args), _crash()))
    else:
        add = jobstore.add_reports_within
        monkeypatch.setattr(jobstore, "add_reports_within", lambda *args: (add(*args), _crash()))
    with pytest.raises(Crash):
        world.scheduler.poll()
    monkeypatch.undo()
    world.store.close()
    world.scheduler = world.new_scheduler()        # the next leader, under a new epoch
    world.scheduler.poll()
    world.store.close()
    _drain(outbox, path).drain()
    assert [line.split(":")[7] for line in _lines(path)] == [str(job)]     # job_number
    assert [record.job_number for record in world.accounting()] == [job]


def _crash(*_args) -> None:
    raise Crash


def test_each_target_has_its_own_file_order_and_noted_batch(store, outbox, path, tmp_path,
                                                              monkeypatch):
    """The native backend's accounting file drains from the same outbox:
    a batch of it noted by a leader that crashed after the append is
    settled by the next leader without a record twice, and neither holds
    up the reporting file's records."""
    accounting = Outbox(store.engine, store.url, acct.TARGET)
    accounting_path = tmp_path / "accounting"

    def accounting_drain() -> ReportingDrain:
        return ReportingDrain(accounting, str(accounting_path), header=acct.HEADER.encode())

    jobs = [f"all.q:a:staff:alice:job{i}\n" for i in range(3)]
    accounting.add(jobs[:2])
    reported = _records(outbox, 2)
    monkeypatch.setattr(accounting, "done", _crash)          # appended, then killed
    with pytest.raises(Crash):
        accounting_drain()._drain()
    monkeypatch.undo()
    assert accounting.look()[0] is not None and outbox.look()[0] is None
    assert _drain(outbox, path).drain() == 2 and _lines(path) == reported
    accounting.add(jobs[2:])
    assert accounting_drain().drain() == 1                   # the next leader
    assert _lines(accounting_path) == acct.HEADER.splitlines(keepends=True) + jobs
    assert accounting.look() == (None, []) and outbox.look() == (None, [])


def test_an_outbox_made_before_targets_keeps_its_records_for_the_reporting_file(tmp_path, path):
    """A store whose outbox has no target column (made before the
    accounting file drained from it) gains the column; records waiting in
    it go to the reporting file."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with sqlite3.connect(tmp_path / "old.db") as connection:
        connection.execute("CREATE TABLE report_outbox (seq INTEGER PRIMARY KEY, line VARCHAR NOT NULL)")
        connection.execute("INSERT INTO report_outbox (line) VALUES ('1:ar_log:waiting\n')")
    store = Store(url)
    outbox = Outbox(store.engine, url)
    outbox.add(["2:ar_log:new\n"])
    assert _drain(outbox, path).drain() == 2
    assert _lines(path) == ["1:ar_log:waiting\n", "2:ar_log:new\n"]
    store.close()
