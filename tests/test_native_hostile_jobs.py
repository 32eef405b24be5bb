"""Issue 11 on the native batch system: nothing one job carries stalls it.
A submission that could never be exec'd (NUL bytes, names with '=', bytes
that are no text, absurd sizes) is refused with one line naming the field;
a job that cannot start all the same (or one stored before these checks,
or a damaged record) waits in Eqw saying why while the other jobs run."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from sqlmodel import Session

from overlay.language.limits import (
    MAX_ARGUMENT,
    MAX_COUNT,
    MAX_ENVIRONMENT,
    MAX_NAME,
    MAX_SCRIPT,
    MAX_WORDS,
)
from overlay.language.request import RequestError
from overlay_native import acct
from overlay_native.execution.runners import ExecutionError
from overlay_native.jobs import Submission
from overlay_native.jobstore import JobRow
from overlay_native.service import submission_from
from overlay_native.submit import SubmitError, job_name
from test_native_scheduler import ALICE, SMALL, T, World

BINARY = {"command": ["sleep", "10"], "binary": True}
NEVER_RUN = [
    ({**BINARY, "command": ["echo", "a\0b"]}, "the command: expected text without NUL bytes"),
    ({**BINARY, "command": ["x" * (MAX_ARGUMENT + 1)]}, f"at most {MAX_ARGUMENT} characters"),
    ({**BINARY, "command": ["x"] * (MAX_WORDS + 1)}, f"command: expected a list of at most {MAX_WORDS}"),
    ({"command": [], "script": "true\n", "script_path": "/tmp/a\0b"},
     "the script's path: expected text without NUL bytes"),
    ({"command": [], "script": "\ud800"}, "the script: expected text read from a file"),
    ({"command": [], "script": "#" * (MAX_SCRIPT + 1)}, f"at most {MAX_SCRIPT} are accepted"),
    ({**BINARY, "cwd": "/tmp/\0"}, "-cwd/-wd: expected text without NUL bytes"),
    ({**BINARY, "shell": "/bin/sh\0"}, "-S: expected text without NUL bytes"),
    ({**BINARY, "stdout": "out\0"}, "-o: expected text without NUL bytes"),
    ({**BINARY, "stderr": "err\0"}, "-e: expected text without NUL bytes"),
    ({**BINARY, "env": {"A": "x\0y"}}, "-v A: invalid value 'x\\x00y'; accepted: text without NUL"),
    ({**BINARY, "env": {"A\0": "x"}}, "-v: invalid variable name 'A\\x00'"),
    ({**BINARY, "env": {"A=B": "x"}}, "env: expected a mapping of variable names (without '=')"),
    ({**BINARY, "env": {"A": "x" * MAX_ENVIRONMENT}}, f"at most {MAX_ENVIRONMENT} are accepted"),
    ({**BINARY, "name": "n" * (MAX_NAME + 1)}, f"-N: expected printable text of at most {MAX_NAME}"),
    ({**BINARY, "account": "a\nforged:line"}, "-A: expected printable text"),
    ({**BINARY, "hard": "arch=a\rb"}, "-l: expected printable text"),
    ({**BINARY, "queues": ["all.q\n"]}, "-q: expected printable text"),
    ({**BINARY, "pe": "mpi", "pe_range": [[0, 0]]}, "-pe: slot ranges: expected ascending ranges"),
    ({**BINARY, "pe": "mpi", "pe_range": [[5, 2]]}, "-pe: slot ranges"),
    ({**BINARY, "pe": "mpi", "pe_range": [[1, MAX_COUNT + 1]]}, "-pe: slot ranges"),
    ({**BINARY, "ar": 0}, f"-ar: expected an AR id of 1 to {MAX_COUNT}"),
    ({**BINARY, "start_after": T + 10 ** 12}, "-a: "),
]


@pytest.mark.parametrize("args, message", NEVER_RUN, ids=[m for _, m in NEVER_RUN])
def test_what_can_never_run_is_refused_at_submission(tmp_path, args, message):
    world = World(tmp_path, SMALL)
    with pytest.raises((SubmitError, RequestError)) as refused:
        world.scheduler.submit(ALICE, submission_from(args))
    text = str(refused.value)
    assert message in text and "\n" not in text and len(text) < 300
    assert world.scheduler.jobs == {} and list(world.store.load()) == []


def test_a_job_that_cannot_start_waits_in_eqw_while_the_others_run(tmp_path):
    """A job (say, stored before the checks) that makes its start fail with
    ValueError ("embedded null byte"), OSError, anything: Eqw, the reason in
    plus_qstat -j, and the same pass starts the next job."""
    world = World(tmp_path, SMALL)
    bad = world.submit(ALICE, "x", "100")
    good = world.submit(ALICE, "x", "100")
    job = world.scheduler.jobs[bad]
    job.submission = replace(job.submission, env={"A": "x\0y"})
    world.at(T)
    assert (world.state(bad), world.state(good)) == ("Eqw", "r")
    assert "env: invalid variable 'A'" in world.scheduler.jobs[bad].error
    later = world.submit(ALICE, "x", "100")
    world.at(T + 1)
    assert world.state(later) == "r"


@pytest.mark.parametrize("failure", [
    ValueError("embedded null byte"), OSError(7, "Argument list too long"), KeyError("queue"),
    ExecutionError("cannot start job: /home/\udcff: No such file or directory")],
    ids=["ValueError", "OSError", "KeyError", "undecodable reason"])
def test_any_failure_to_start_one_job_stops_only_that_job(tmp_path, monkeypatch, failure):
    world = World(tmp_path, SMALL)
    bad = world.submit(ALICE, "x", "100")
    good = world.submit(ALICE, "x", "100")
    start = world.hosts.start

    def failing(host, spec, epoch):
        if spec.id == str(bad):
            raise failure
        start(host, spec, epoch)
    monkeypatch.setattr(world.hosts, "start", failing)
    world.at(T)
    assert (world.state(bad), world.state(good)) == ("Eqw", "r")
    error = world.scheduler.jobs[bad].error
    assert error.isprintable() and str(failure)[:10] in error
    world.store.close()
    world.scheduler = world.new_scheduler()
    assert world.state(bad) == "Eqw" and world.scheduler.jobs[bad].error == error


def stored_row(world: World, job_id: int, **fields) -> None:
    with Session(world.store.engine) as session, session.begin():
        row = session.get(JobRow, job_id)
        for name, value in fields.items():
            setattr(row, name, value)


def test_a_job_stored_before_the_checks_waits_in_eqw_after_a_restart(tmp_path):
    world = World(tmp_path, SMALL)
    old = world.submit(ALICE, "x", "100")
    good = world.submit(ALICE, "x", "100")
    job = world.scheduler.jobs[old]
    world.store.save(replace(job, submission=replace(job.submission, env={"A": "x\0y"})))
    world.store.close()
    world.scheduler = world.new_scheduler()
    assert world.state(old) == "Eqw"
    assert world.scheduler.jobs[old].error == \
        "after a restart: -v A: invalid value 'x\\x00y'; accepted: text without NUL bytes"
    world.at(T)
    assert (world.state(old), world.state(good)) == ("Eqw", "r")
    assert world.scheduler.delete(ALICE, [str(old)]) == [f"alice has deleted job {old}"]


@pytest.mark.parametrize("damage", [
    {"submission": "{not json"}, {"state": "zz"},
    {"submission": json.dumps({"command": [], "colour": "red"})},
    {"placement": json.dumps({"no": "tasks"}), "state": "r"}],
    ids=["not JSON", "unknown state", "unknown field", "broken placement"])
def test_a_record_that_cannot_be_read_does_not_stop_a_restart(tmp_path, damage):
    world = World(tmp_path, SMALL)
    broken = world.submit(ALICE, "x", "100")
    good = world.submit(ALICE, "x", "100")
    stored_row(world, broken, **damage)
    world.store.close()
    world.scheduler = world.new_scheduler()
    assert world.state(broken) == "Eqw" and world.state(good) == "qw"
    assert world.scheduler.jobs[broken].error.startswith("its stored record cannot be read: ")
    world.at(T)
    assert world.state(good) == "r"
    assert world.scheduler.delete(ALICE, [str(broken)]) == [f"alice has deleted job {broken}"]


def test_names_from_strange_file_names_keep_the_accounting_whole(tmp_path):
    """A script's file name with a line break or bytes that are not UTF-8
    names the job printably, and its accounting record stays one line."""
    assert job_name(Submission((), script="true", script_path="/tmp/a\rb\udcff.sh")) == "a_b_.sh"
    world = World(tmp_path, SMALL)
    job = world.submit(ALICE, "x", "5", script="true", script_path="/tmp/a\nb\udcff.sh")
    world.at(T)
    world.at(T + 5)
    (record,) = world.accounting()
    assert (record.job_number, record.job_name) == (job, "a_b_.sh")


def test_an_accounting_record_is_one_line_whatever_it_holds(tmp_path):
    line = acct.JobRecord("all.q", "a", "staff", "alice", "a\rb\udcffc", 1,
                          category="-l arch=x\x0by").line()
    (tmp_path / "accounting").write_text(acct.HEADER + line + "\n")
    (record,) = acct.read(str(tmp_path / "accounting"))
    assert (record.job_name, record.category) == ("a b c", "-l arch=x y")
