"""ARCo for advance reservations (seed 000, 5.4 and Appendix 2): the
database model on SQLite and PostgreSQL, plus_dbwriter filling it from a
reporting file written by overlay.reporting.accounting.ReportingWriter and the
native scheduler's acct records, the seed's ARCo queries of 5.4.2 (the
Advanced ones as written on PostgreSQL, the Simple ones on both databases,
two of them corrected), and the native daemon writing acct records with
their AR number."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import time
from dataclasses import fields
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DataError

import commands_from_source as commands
from daemon_harness import job_daemon
from overlay.arco import dbwriter_cli, records, schema
from overlay.arco.dbwriter import DBWriter
from overlay.arco.loader import Loader
from overlay.language.model import Allocation, Request, Reservation, State
from overlay.persistence.store import make_engine
from overlay.reporting.accounting import (
    EVENT_MODIFIED,
    EVENT_START,
    EVENT_TERMINATED,
    ReportingWriter,
)
from overlay_native.acct import JobRecord

DAY, H = 86400, 3600
T0 = (int(time.time()) // DAY - 40) * DAY + 8 * H
"""08:00 UTC 40 days ago: inside the seed queries' last year, all jobs on one day."""

ACCOUNTING_PER_AR = """SELECT time, ar_number, cpu, mem, io FROM (SELECT date_trunc('month', start_time)::date AS time, ar_number, SUM(cpu) AS cpu, SUM(mem) AS mem, SUM(io) AS io FROM view_accounting WHERE start_time > (current_timestamp - interval '1 year') AND ar_number > 0 GROUP BY time, ar_number) AS tmp;"""  # noqa: E501
TIME_USAGE = """SELECT ar_number, job_duration, ar_duration, age(('1970-01-01'::date + ar_duration::interval)::timestamp, ('1970-01-01'::date + job_duration::interval)::timestamp) AS unused_time FROM view_ar_time_usage WHERE ar_number IN (SELECT ARL.ar_number FROM view_ar_log ARL WHERE event = 'TERMINATED');"""  # noqa: E501
JOBS_PER_AR = """SELECT ar_number AS ar_number, date_trunc('day', start_time) AS day, COUNT(job_number) AS jobs FROM view_job_times WHERE start_time > (current_timestamp - interval '1 year') AND ar_number > 0 GROUP BY day, ar_number;"""  # noqa: E501
"""The seed's three Advanced queries without late binding (5.4.2), as written."""
ATTRIBUTES_AS_WRITTEN = """SELECT "ar_number", "owner", "submission_time", "name", "account", "start_time", "end_time", "granted_pe", FROM (SELECT ar_number, owner, submission_time, name, account, start_time, end_time, granted_pe FROM view_ar_attribute) AS tmp WHERE "ar_number" = '';"""  # noqa: E501
BY_USER_AS_WRITTEN = """SELECT "ar_number", "submission_time" FROM(SELECT ar_number, ar_submission_time FROM sge_ar ) AS tmp WHERE "ar_owner" = '';"""  # noqa: E501
"""Two of the seed's Simple queries, which run on no database as written:
a comma before FROM, and a subquery that exposes neither column the outer
query names (submission_time, ar_owner)."""
ATTRIBUTES = """SELECT "ar_number", "owner", "submission_time", "name", "account", "start_time", "end_time", "granted_pe" FROM (SELECT ar_number, owner, submission_time, name, account, start_time, end_time, granted_pe FROM view_ar_attribute) AS tmp WHERE "ar_number" = '';"""  # noqa: E501
BY_USER = """SELECT "ar_number", "submission_time" FROM (SELECT ar_number, ar_submission_time AS submission_time, ar_owner FROM sge_ar) AS tmp WHERE "ar_owner" = '';"""  # noqa: E501
LOG = """SELECT "ar_number", "time", "event", "state", "message" FROM(SELECT ar_number, time, event, state, message FROM view_ar_log ) AS tmp WHERE "ar_number" = '';"""  # noqa: E501
"""The seed's three Simple queries as they run (README, ARCo): the first two
corrected, the log's as written. ARCo puts the late-bound value between
the quotes of ``= ''``."""


def make_ar(ar_id: int, owner: str, start: int, end: int, hosts: dict[str, int], submitted: int,
            name: str = "", account: str = "") -> Reservation:
    return Reservation(id=ar_id, owner=owner, group="staff",
                       request=Request(start=start, end=end, nodes=len(hosts), name=name),
                       state=State.WAITING, submission_time=submitted,
                       allocations=[Allocation(node, n) for node, n in hosts.items()],
                       account=account)


def job(number: int, owner: str, start: int, seconds: int, ar: Reservation | None = None,
        **usage) -> JobRecord:
    return JobRecord("all.q", "n1", "staff", owner, f"job{number}", number,
                     submission_time=start - 30 if start else T0, start_time=start,
                     end_time=start + seconds if start else 0, ru_wallclock=seconds,
                     arid=ar.id if ar else 0, ar_sub_time=ar.submission_time if ar else 0,
                     **usage)


def acct(writer: ReportingWriter, record: JobRecord) -> None:
    """The acct record as the native scheduler writes it."""
    writer.write(record.end_time or T0, "acct", *record.line().split(":"))


def submit(writer: ReportingWriter, ar: Reservation) -> None:
    writer.new_ar(ar.submission_time, ar)
    writer.ar_attribute(ar.submission_time, ar)


def terminate(writer: ReportingWriter, ar: Reservation, when: int,
              event: str = EVENT_TERMINATED) -> None:
    writer.ar_acct(when, ar)
    writer.ar_log(when, ar, event, "end time of AR reached")


AR1 = make_ar(1, "alice", T0, T0 + 2 * H, {"n1": 2, "n2": 2}, T0 - H, "sim", "proj")
AR2 = make_ar(2, "bob", T0, T0 + H, {"n3": 1}, T0 - H + 60)
AR3_OLD = make_ar(3, "carol", T0 - 30 * DAY, T0 - 30 * DAY + H, {"n1": 1}, T0 - 31 * DAY)
AR3 = make_ar(3, "dave", T0 + 2 * H, T0 + 5 * H, {"n4": 4}, T0 - 2 * H, "again")
JOBS = [job(101, "alice", T0 + 60, 600, AR1, cpu=10.5, mem=1.25, io=0.5),
        job(102, "alice", T0 + 700, 1200, AR1, cpu=20.0, mem=2.5, io=1.0),
        job(103, "dave", T0 + 3 * H, 900, AR3, cpu=5.0, mem=0.5, io=0.25),
        job(104, "alice", 0, 0, AR1, failed=26),          # never started
        job(105, "bob", T0 + 200, 100)]                     # in no AR


def reporting_file(path: Path) -> int:
    """The scenario's reporting file; how many records it holds."""
    writer = ReportingWriter(str(path))
    submit(writer, AR3_OLD)
    terminate(writer, AR3_OLD, AR3_OLD.end, "END TIME REACHED")     # an earlier PluS's words
    for ar in (AR1, AR2, AR3):
        submit(writer, ar)
    modified = make_ar(1, "alice", T0, T0 + 2 * H, {"n1": 2, "n2": 3}, T0 - H, "sim", "proj")
    writer.ar_attribute(T0 - 10, modified)
    writer.ar_log(T0 - 10, modified, EVENT_MODIFIED, "AR modified")
    writer.ar_log(T0, AR1, EVENT_START, "start time of AR reached")
    for record in JOBS:
        acct(writer, record)
    terminate(writer, modified, T0 + 2 * H)
    terminate(writer, AR2, T0 + H)
    written = len(path.read_text().splitlines())
    with open(path, "a") as handle:
        handle.write("this line is no record\n")
        handle.write(f"{T0}:ar_log:{T0}:{T0}\n")                            # fields missing
        handle.write(f"{T0}:acct:all.q:n1:staff\n")                          # fields missing
        handle.write(f"{T0}:new_ar:{T0}:99999999999:eve\n")                 # beyond integer
        handle.write(f"{T0}:host:n1:{T0}:X:load_avg=0.1\n")                  # not ARCo's
    return written


def rows(engine, sql: str) -> list[tuple]:
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(text(sql))]


def seconds(value) -> float | None:
    """A duration: PostgreSQL's interval, SQLite's seconds."""
    return value.total_seconds() if isinstance(value, dt.timedelta) else value


def stamp(engine, epoch: int):
    """A timestamp as the database gives it back (ddl.py: text on SQLite)."""
    moment = dt.datetime.fromtimestamp(epoch, dt.timezone.utc).replace(tzinfo=None)
    return moment if engine.dialect.name == "postgresql" else str(moment)


@pytest.fixture
def engine(store_url):
    made = make_engine(store_url)
    yield made
    made.dispose()


@pytest.fixture
def filled(engine, tmp_path, caplog):
    path = tmp_path / "reporting"
    expected = reporting_file(path)
    done = DBWriter(engine, str(path)).drain()
    return engine, path, expected, done


# --- the model --------------------------------------------------------------------------------

def test_the_model_is_installed_once(engine):
    assert schema.install(engine) == [0, 5]
    assert schema.install(engine) == []
    assert rows(engine, "SELECT v_id, v_version FROM sge_version ORDER BY v_id") == \
        [(0, "6.0"), (5, "6.2")]
    for view in ("view_accounting", "view_job_times", "view_ar_attribute", "view_ar_log",
                 "view_ar_usage", "view_ar_resource_usage", "view_ar_time_usage"):
        assert rows(engine, f"SELECT COUNT(*) FROM {view}") == [(0,)]


def test_the_accounting_layout_is_the_native_batch_systems():
    assert records.ACCT == [spec.name for spec in fields(JobRecord)]


# --- the dbwriter -----------------------------------------------------------------------------

def test_each_record_lands_in_its_table(filled, caplog):
    engine, path, expected, done = filled
    assert (done.records, done.skipped) == (expected, 4)
    warnings = [r.getMessage() for r in caplog.get_records("setup") if r.levelname == "WARNING"]
    assert len(warnings) == 4 and all(w.startswith(f"{path}:") for w in warnings)
    assert "99999999999" in warnings[3] and "2147483647" in warnings[3]
    assert rows(engine, "SELECT ar_id, ar_number, ar_owner, ar_submission_time FROM sge_ar "
                        "ORDER BY ar_id") == [
        (1, 3, "carol", stamp(engine, AR3_OLD.submission_time)),
        (2, 1, "alice", stamp(engine, T0 - H)), (3, 2, "bob", stamp(engine, T0 - H + 60)),
        (4, 3, "dave", stamp(engine, T0 - 2 * H))]
    assert rows(engine, "SELECT ar_number, owner, name, account, start_time, end_time, granted_pe "
                        "FROM view_ar_attribute ORDER BY submission_time") == [
        (3, "carol", "", "sge", stamp(engine, AR3_OLD.start), stamp(engine, AR3_OLD.end), "NONE"),
        (3, "dave", "again", "sge", stamp(engine, AR3.start), stamp(engine, AR3.end), "NONE"),
        (1, "alice", "sim", "proj", stamp(engine, T0), stamp(engine, T0 + 2 * H), "NONE"),
        (2, "bob", "", "sge", stamp(engine, T0), stamp(engine, T0 + H), "NONE")]
    assert rows(engine, "SELECT arru_parent, arru_variable, arru_value FROM "
                        "sge_ar_resource_usage ORDER BY arru_id") == [
        (1, "n1", "1"), (3, "n3", "1"), (4, "n4", "4"), (2, "n1", "2"), (2, "n2", "3")]
    assert rows(engine, "SELECT ar_number, variable, value FROM view_ar_resource_usage "
                        "ORDER BY ar_number, variable, value") == [
        (1, "n1", "2"), (1, "n2", "3"), (2, "n3", "1"), (3, "n1", "1"), (3, "n4", "4")]
    assert rows(engine, "SELECT event, state, message FROM view_ar_log WHERE ar_number = 1 "
                        "ORDER BY time") == [
        ("MODIFIED", "w", "AR modified"), ("START TIME REACHED", "w", "start time of AR reached"),
        ("TERMINATED", "w", "end time of AR reached")]
    assert rows(engine, "SELECT event FROM view_ar_log WHERE ar_number = 3") == [
        ("TERMINATED",)]                # the old AR 3's END TIME REACHED, in 8.1.9's word
    assert rows(engine, "SELECT ar_number, queue, hostname, slots FROM view_ar_usage "
                        "ORDER BY termination_time, hostname") == [
        (3, "R3", "n1", 1), (2, "R2", "n3", 1), (1, "R1", "n1", 2), (1, "R1", "n2", 3)]
    assert rows(engine, "SELECT j_job_number, j_owner, ju_ar_number, ju_failed, ju_ru_wallclock "
                        "FROM sge_job, sge_job_usage WHERE j_id = ju_parent ORDER BY j_id") == [
        (101, "alice", 1, 0, 600), (102, "alice", 1, 0, 1200), (103, "dave", 3, 0, 900),
        (104, "alice", 1, 26, 0), (105, "bob", 0, 0, 100)]


GRID_ENGINE_REPORTING = Path(__file__).parent / "data" / "sge819_reporting"
"""Son of Grid Engine 8.1.9's reporting file, copied from its qmaster here
after three qrsub ARs (-pe mpi 2 -l lic=2 -N arcotest -A proj1; -l
lic=1,h_rt=3600 -q all.q in 2030; -pe mpi 2 -l lic=1 -N withjob with a
job in it), each deleted with qrdel: its own record name ar_attr, an
empty granted PE and account sge where none was asked."""


def test_grid_engines_own_reporting_file_loads(engine):
    done = DBWriter(engine, str(GRID_ENGINE_REPORTING)).drain()
    assert (done.records, done.skipped) == (15, 0)
    assert rows(engine, "SELECT ar_number, owner, name, account, granted_pe FROM "
                        "view_ar_attribute ORDER BY ar_number") == [
        (72718, "plusu1", "arcotest", "proj1", "mpi"), (72720, "plusu1", "", "sge", ""),
        (72721, "plusu1", "withjob", "sge", "mpi")]
    assert rows(engine, "SELECT ar_number, variable, value FROM view_ar_resource_usage "
                        "ORDER BY ar_number, variable") == [
        (72718, "lic", "2"), (72720, "h_rt", "3600"), (72720, "lic", "1"), (72721, "lic", "1")]
    assert rows(engine, "SELECT ar_number, queue, hostname, slots FROM view_ar_usage "
                        "ORDER BY ar_number") == [
        (72718, "all.q", "vm", 2), (72720, "all.q", "vm", 1), (72721, "all.q", "vm", 2)]
    assert rows(engine, "SELECT job_number, ar_number, username FROM view_accounting") == \
        [(999, 72721, "plusu1")]


def test_the_views_answer(filled):
    engine = filled[0]
    accounted = rows(engine, 'SELECT job_number, ar_number, "group", username, wait_time, '
                             "job_duration, turnaround_time, wallclock_time, cpu FROM "
                             "view_accounting ORDER BY job_number")
    assert [(r[:4], *map(seconds, r[4:7]), *r[7:]) for r in accounted] == [
        ((101, 1, "staff", "alice"), 30, 600, 630, 600, 10.5),
        ((102, 1, "staff", "alice"), 30, 1200, 1230, 1200, 20.0),
        ((103, 3, "staff", "dave"), 30, 900, 930, 900, 5.0),
        ((105, 0, "staff", "bob"), 30, 100, 130, 100, 0.0)]          # 104 never started
    assert rows(engine, "SELECT job_number FROM view_job_times ORDER BY job_number") == \
        [(101,), (102,), (103,), (105,)]
    usage = rows(engine, "SELECT ar_number, job_duration, ar_duration FROM view_ar_time_usage "
                         "WHERE ar_number < 3 ORDER BY ar_number")
    assert [(n, seconds(jobs), seconds(ar)) for n, jobs, ar in usage] == \
        [(1, 1800, 2 * H), (2, None, H)]


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_the_seeds_queries_answer_on_postgresql(filled):
    """Their SQL is PostgreSQL's (date_trunc, ::interval, age): run as written."""
    engine = filled[0]
    with engine.connect() as connection:
        per_ar = {tuple(r) for r in connection.exec_driver_sql(ACCOUNTING_PER_AR)}
        usage = {tuple(r) for r in connection.exec_driver_sql(TIME_USAGE)}
        completed = {tuple(r) for r in connection.exec_driver_sql(JOBS_PER_AR)}
    day = dt.datetime.fromtimestamp(T0, dt.timezone.utc).replace(tzinfo=None, hour=0)
    assert per_ar == {(day.date().replace(day=1), 1, 30.5, 3.75, 1.5),
                      (day.date().replace(day=1), 3, 5.0, 0.5, 0.25)}
    assert usage == {(1, dt.timedelta(seconds=1800), dt.timedelta(hours=2),
                      dt.timedelta(hours=1, minutes=30)),
                     (2, None, dt.timedelta(hours=1), None),       # no jobs: no sum, no age
                     # AR 3 ended in an earlier PluS's words (END TIME REACHED), counted as
                     # TERMINATED; its number was used again, so both its ARs share job 103
                     (3, dt.timedelta(seconds=900), dt.timedelta(hours=1),
                      dt.timedelta(minutes=45)),
                     (3, dt.timedelta(seconds=900), dt.timedelta(hours=3),
                      dt.timedelta(hours=2, minutes=45))}
    assert completed == {(1, day, 2), (3, day, 1)}


def bound(sql: str, value: object) -> str:
    """A Simple query with its late-bound value, as ARCo fills it in."""
    return sql.replace("= ''", f"= '{value}'")


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
@pytest.mark.parametrize("query", [ATTRIBUTES_AS_WRITTEN, BY_USER_AS_WRITTEN])
def test_two_simple_queries_fail_as_the_seed_writes_them(filled, query):
    """On PostgreSQL, the seed's database (SQLite reads an unknown "name"
    as a string and answers the second one wrongly, without an error)."""
    engine = filled[0]
    with pytest.raises(Exception, match="syntax error|no such column|does not exist"):
        with engine.connect() as connection:
            connection.exec_driver_sql(bound(query, 1 if "view_ar" in query else "alice"))


def test_the_simple_queries_answer_corrected(filled):
    """Run on SQLite and PostgreSQL alike, with the late-bound value."""
    engine = filled[0]
    with engine.connect() as connection:
        attributes = [tuple(r) for r in connection.exec_driver_sql(bound(ATTRIBUTES, 1))]
        by_user = [tuple(r) for r in connection.exec_driver_sql(bound(BY_USER, "carol"))]
        log = [r[2] for r in connection.exec_driver_sql(bound(LOG, 2))]
    assert attributes == [(1, "alice", stamp(engine, T0 - H), "sim", "proj", stamp(engine, T0),
                           stamp(engine, T0 + 2 * H), "NONE")]
    assert by_user == [(3, stamp(engine, AR3_OLD.submission_time))]
    assert sorted(log) == ["TERMINATED"]


def test_a_restart_reads_only_the_new_lines(filled):
    engine, path, expected, _ = filled
    writer = ReportingWriter(str(path))
    ar = make_ar(4, "erin", T0 + DAY, T0 + DAY + H, {"n2": 1}, T0)
    submit(writer, ar)
    acct(writer, job(106, "erin", T0 + DAY + 60, 60, ar))
    done = DBWriter(engine, str(path)).drain()
    assert (done.records, done.skipped) == (3, 0)       # new_ar, ar_attribute, acct
    assert rows(engine, "SELECT COUNT(*) FROM sge_ar") == [(5,)]
    assert rows(engine, "SELECT COUNT(*) FROM sge_job_usage") == [(len(JOBS) + 1,)]
    assert DBWriter(engine, str(path)).drain().read == 0


@pytest.mark.parametrize("change", ["truncated", "rewritten", "rotated"])
def test_another_file_is_read_from_the_start(filled, change):
    engine, path, _, _ = filled
    if change == "rotated":
        path.rename(path.with_suffix(".1"))
    else:
        size = path.stat().st_size
        path.write_text("")
    writer = ReportingWriter(str(path))
    ar = make_ar(5, "frank", T0, T0 + H, {"n1": 1}, T0 - 60)
    submit(writer, ar)
    if change == "rewritten":          # beyond the old offset: only the first bytes tell
        while path.stat().st_size <= size:
            writer.ar_log(T0, ar, EVENT_START, "start time of AR reached")
    lines = len(path.read_text().splitlines())
    done = DBWriter(engine, str(path)).drain()
    assert (done.records, done.skipped) == (lines, 0)
    assert rows(engine, "SELECT ar_owner FROM sge_ar WHERE ar_number = 5") == [("frank",)]


def test_batches_are_bounded_and_a_long_line_is_skipped(engine, tmp_path, caplog):
    path = tmp_path / "reporting"
    expected = reporting_file(path)
    with open(path, "a") as handle:
        handle.write(f"{T0}:ar_log:" + "x" * 1000 + "\n")
        handle.write(f"{T0}:new_ar:{T0}:7:grace\n")
    writer = DBWriter(engine, str(path), batch_bytes=400)
    first = writer.batch()
    assert 0 < first.read <= 400 and not first.at_end
    rest = writer.drain()
    assert first.records + rest.records == expected + 1
    assert first.skipped + rest.skipped == 5
    assert any("longer than 400 bytes" in r.getMessage() for r in caplog.records)
    assert rows(engine, "SELECT ar_owner FROM sge_ar WHERE ar_number = 7") == [("grace",)]


def test_a_line_still_being_written_waits(engine, tmp_path):
    path = tmp_path / "reporting"
    path.write_text(f"{T0}:new_ar:{T0}:8:heidi\n{T0}:new_ar:{T0}:9:iv")
    writer = DBWriter(engine, str(path))
    assert writer.drain().records == 1
    with open(path, "a") as handle:
        handle.write("an\n")
    assert writer.drain().records == 1
    assert rows(engine, "SELECT ar_owner FROM sge_ar ORDER BY ar_id") == [("heidi",), ("ivan",)]


def test_a_record_the_database_refuses_costs_only_itself(engine, tmp_path, monkeypatch, caplog):
    path = tmp_path / "reporting"
    writer = ReportingWriter(str(path))
    submit(writer, AR1)
    writer.ar_log(T0, AR1, EVENT_START, "poison")
    terminate(writer, AR1, T0 + 2 * H)
    load = Loader.load

    def refusing(self, record):
        if record.values.get("message") == "poison":
            raise DataError("INSERT", {}, Exception("value out of range"))
        load(self, record)
    monkeypatch.setattr(Loader, "load", refusing)
    done = DBWriter(engine, str(path)).drain()
    assert (done.records, done.skipped) == (5, 1)
    assert any("the database refused the ar_log record: value out of range" in r.getMessage()
               for r in caplog.records)
    assert rows(engine, "SELECT COUNT(*) FROM sge_ar_log") == [(1,)]  # the end only


# --- plus_dbwriter ----------------------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    ([], "the following arguments are required: -url"),
    (["-url", "mysql://x/y"], "-url: 'mysql://x/y' is not a database URL; accepted: "
                              "sqlite:///path/to/arco.db or postgresql+psycopg://"),
    (["-url", "sqlite:///a.db", "-interval", "0"], "-interval: the interval in seconds must be "
                                                   "at least 1"),
    (["-url", "sqlite:///a.db", "-once", "-interval", "5"], "not allowed with"),
    (["-url", "sqlite:///a.db", "-reporting", ""], "-reporting: '' is not a file name"),
    (["-url", "sqlite:///a.db", "-bogus"], "unrecognized arguments: -bogus"),
])
def test_bad_options_are_one_line_and_exit_2(args, message, capsys):
    with pytest.raises(SystemExit) as stop:
        dbwriter_cli.main(args)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith("plus_dbwriter: ") and message in err, err


def run(*args: str, conf: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PLUS_CONF": str(conf or "/nonexistent/plus.yaml")}
    return subprocess.run(commands.argv("plus_dbwriter", *args), cwd=commands.REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_once_reads_the_daemons_reporting_file(tmp_path):
    (tmp_path / "plus.yaml").write_text("state_dir: state\naccounting_file: records\n")
    expected = reporting_file(tmp_path / "state" / "records")
    url = f"sqlite:///{tmp_path / 'arco.db'}"
    result = run("-url", url, "-once", conf=tmp_path / "plus.yaml")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{expected} records written, 4 lines skipped\n"
    assert len(result.stderr.splitlines()) == 4
    assert run("-url", url, "-once", conf=tmp_path / "plus.yaml").stdout == \
        "0 records written, 0 lines skipped\n"


@pytest.mark.parametrize("args,message", [
    (["-url", "postgresql+psycopg://arco:secret@127.0.0.1:1/arco", "-once", "-reporting", "r"],
     "plus_dbwriter: cannot use the database postgresql+psycopg://arco:***@127.0.0.1:1/arco: "),
    (["-url", "sqlite:///{tmp}/arco.db", "-once", "-reporting", "{tmp}/none"],
     "plus_dbwriter: cannot read {tmp}/none: No such file or directory"),
    (["-url", "sqlite:///{tmp}/arco.db", "-once"],
     "plus_dbwriter: cannot read configuration /nonexistent/plus.yaml: No such file or "
     "directory; give -reporting FILE, or set PLUS_CONF"),
])
def test_failures_are_one_line_and_exit_1(tmp_path, args, message):
    result = run(*[arg.format(tmp=tmp_path) for arg in args])
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(message.format(tmp=tmp_path)), result.stderr


def test_it_follows_the_file(tmp_path):
    path, url = tmp_path / "reporting", f"sqlite:///{tmp_path / 'arco.db'}"
    process = subprocess.Popen(commands.argv("plus_dbwriter", "-url", url, "-reporting",
                                             str(path), "-interval", "1"),
                               cwd=commands.REPO, stderr=subprocess.PIPE, text=True)
    try:
        assert "cannot read" in process.stderr.readline()       # no reporting file yet
        engine = make_engine(url)
        writer = ReportingWriter(str(path))
        for ar in (AR1, AR2):
            submit(writer, ar)
            deadline = time.monotonic() + 30
            while not rows_or_none(engine, f"SELECT 1 FROM sge_ar WHERE ar_number = {ar.id}"):
                assert time.monotonic() < deadline and process.poll() is None
                time.sleep(0.2)
        engine.dispose()
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert process.stderr.read().count("2 records written") == 2


def rows_or_none(engine, sql: str) -> list[tuple] | None:
    try:
        return rows(engine, sql)
    except Exception:            # the dbwriter has not made its tables yet
        return None


# --- the native daemon ------------------------------------------------------------------------

CLUSTER = """\
nodes:
  - {name: local1, ncpus: 2, exec: local}
queues: [{name: all.q, hostlist: [local1]}]
scheduler: {schedule_interval: 1}
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="jobs run as their owners: root only")
def test_a_job_in_an_ar_leaves_an_acct_record_with_its_ar_number(work):
    with job_daemon(CLUSTER) as daemon:
        ar = daemon.reserve("plusu1", "-s", "now+2s", "-D", "0:1:0", "-n", "1")["id"]
        submitted = daemon.run("plusu1", "plus_qsub", "-cwd", "-ar", str(ar), "-b", "y", "true",
                               cwd=str(work))
        assert submitted.returncode == 0, submitted.stderr
        job_id = submitted.stdout.split()[2]
        reporting = daemon.dir / "state" / "reporting"
        deadline = time.monotonic() + 60
        while not [line for line in (reporting.read_text() if reporting.exists() else "")
                   .splitlines() if ":acct:" in line]:     # the leader's drain makes the file
            assert time.monotonic() < deadline, "no acct record in the reporting file"
            time.sleep(0.2)
        line = next(line for line in reporting.read_text().splitlines() if ":acct:" in line)
        record = JobRecord.parse(line.split(":", 2)[2])
        assert (record.job_number, record.owner, record.arid) == (int(job_id), "plusu1", ar)
        url = f"sqlite:///{daemon.dir / 'arco.db'}"
        done = daemon.run("root", "plus_dbwriter", "-url", url, "-once")
        assert done.returncode == 0, done.stderr
        engine = make_engine(url)
        assert rows(engine, "SELECT ar_number, owner FROM view_ar_attribute") == [(ar, "plusu1")]
        assert rows(engine, "SELECT job_number, ar_number FROM view_accounting") == \
            [(int(job_id), ar)]
        engine.dispose()