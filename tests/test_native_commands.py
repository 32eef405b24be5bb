"""The native commands' parsing (plus_qsub's option grammar and #$ lines,
plus_qacct on a file) and the daemon's checks of what a client sends."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from overlay.language.limits import MAX_ENVIRONMENT, MAX_NAME, MAX_SCRIPT
from overlay.language.request import RequestError
from overlay_native.cli import qacct, qsub
from overlay_native.service import submission_from

DATA = Path(__file__).parent / "data" / "sge"


def fields(argv: list[str]) -> dict:
    options, rest = qsub.split_options(argv)
    return qsub.submission(options, rest)


def test_hard_and_soft_requests_follow_their_switch():
    job = fields(["-l", "a=1", "-soft", "-l", "b=2", "-l", "c=3", "-hard", "-l", "d=4", "x.sh"])
    assert (job["hard"], job["soft"]) == ("a=1,d=4", "b=2,c=3")


def test_options_end_at_the_script():
    options, rest = qsub.split_options(["-N", "x", "job.sh", "-l", "a=1"])
    assert options == [("-N", ["x"])] and rest == ["job.sh", "-l", "a=1"]


def test_every_option_lands_in_its_field(monkeypatch, tmp_path):
    monkeypatch.setenv("FOO", "bar")
    monkeypatch.chdir(tmp_path)
    job = fields(["-pe", "mpi*", "2-8", "-q", "all.q,big.q@n1", "-q", "all.q", "-masterq", "m.q",
                  "-R", "y", "-ar", "R7", "-p", "-5", "-N", "name", "-now", "yes", "-a", "now+1h",
                  "-hold_jid", "1,build", "-w", "v", "-b", "n", "-cwd", "-o", "out", "-e", "err",
                  "-j", "y", "-S", "/bin/bash", "-v", "FOO,X=1", "-A", "proj", "-h", "x.sh"])
    assert job["pe"] == "mpi*" and job["pe_range"] == [[2, 8]]
    assert job["queues"] == ["all.q", "big.q@n1"] and job["master_queues"] == ["m.q"]
    assert (job["reserve"], job["ar"], job["priority"], job["name"], job["now"]) == \
        (True, 7, -5, "name", True)
    assert job["hold_jids"] == ["1", "build"] and job["verify"] == "v" and job["hold"]
    assert (job["cwd"], job["stdout"], job["stderr"], job["merge"], job["shell"]) == \
        (str(tmp_path), "out", "err", True, "/bin/bash")
    assert job["env"] == {"FOO": "bar", "X": "1"} and job["account"] == "proj"
    assert isinstance(job["start_after"], int)


@pytest.mark.parametrize("argv,message", [
    (["-pe", "mpi", "0"], "-pe: invalid slot range '0'"),
    (["-R", "maybe"], "-R: expected y[es] or n[o], got 'maybe'"),
    (["-ar", "x"], "invalid reservation id 'x'"),
    (["-p", "high"], "-p: the priority must be a whole number from -1023 to 1024, got 'high'"),
    (["-w", "x"], "-w: expected e, w, n or v, got 'x'"),
    (["-a", "soon"], "-a: "),
    (["-S", "bash"], "-S: expected an absolute path, got 'bash'"),
    (["-v", "1X=2"], "-v: invalid variable name '1X'"),
    (["-wd", "/no/such/dir"], "-wd: /no/such/dir is not a directory"),
    (["-q", "a b"], "-q: invalid queue 'a b'"),
    (["-v", "\u00e9=1"], "-v: invalid variable name '\u00e9'"),
    (["-v", "X\u0661=1"], "-v: invalid variable name 'X\u0661'"),
    (["-p", "\uff15"], "-p: the priority must be a whole number"),
    (["-N", "n" * (MAX_NAME + 1)], f"-N: the name '{'n' * (MAX_NAME + 1)}' is longer than {MAX_NAME}"),
])
def test_bad_options_say_what_is_wrong(argv, message):
    with pytest.raises(RequestError, match=message.replace("[", r"\[").replace("]", r"\]")
                       .replace("(", r"\(").replace(")", r"\)")):
        fields(argv + ["x.sh"])


def test_a_directory_with_a_nul_byte_is_no_directory():
    """expanduser raises ValueError on a NUL byte (a #$ line may hold one)."""
    with pytest.raises(RequestError, match=r"^-wd: ~a\\x00b is not a directory$"):
        fields(["-wd", "~a\x00b", "x.sh"])


def test_the_script_and_the_environment_are_bounded(tmp_path, monkeypatch, capsys):
    script = tmp_path / "big.sh"
    script.write_bytes(b"#" * (MAX_SCRIPT + 1))
    with pytest.raises(SystemExit) as stop:
        qsub.main([str(script)])
    assert stop.value.code == 2
    assert capsys.readouterr().err == (f"plus_qsub: the script is larger than {MAX_SCRIPT} bytes; "
                                       f"at most {MAX_SCRIPT} are accepted (see plus_qsub -help)\n")
    monkeypatch.setenv("HUGE", "x" * MAX_ENVIRONMENT)
    with pytest.raises(SystemExit) as stop:
        qsub.main(["-v", "HUGE", "-b", "y", "true"])
    assert stop.value.code == 2
    assert re.match(r"plus_qsub: -v, -V: the environment passed is \d+ bytes; at most "
                    rf"{MAX_ENVIRONMENT} are accepted", capsys.readouterr().err)


def test_unknown_options_and_missing_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as stop:
        qsub.split_options(["-foo", "x.sh"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == "plus_qsub: unknown option -foo (see plus_qsub -help)\n"


def test_script_lines_come_first_and_the_command_line_wins():
    script = "#!/bin/sh\n#$ -N inscript -l a=1\n#$ -cwd\necho hi\n#$ -R y\n"
    embedded = qsub.embedded_options(script)
    assert embedded == ["-N", "inscript", "-l", "a=1", "-cwd", "-R", "y"]
    options, _ = qsub.split_options(embedded)
    given, rest = qsub.split_options(["-N", "given", "-l", "b=2", "x.sh"])
    job = qsub.submission(options + given, rest)
    assert job["name"] == "given" and job["hard"] == "a=1,b=2" and job["reserve"]


def test_the_daemon_checks_every_field_a_client_sends():
    good = {"command": ["x"], "hard": "h_rt=10", "pe_range": [[2, 4]], "env": {"A": "1"}}
    assert submission_from(good).pe_range == ((2, 4),)
    for bad, message in [({**good, "priority": "5"}, "priority: expected a whole number, got '5'"),
                         ({**good, "cwd": "relative"}, "cwd: expected an absolute path"),
                         ({**good, "env": {"A=B": "1"}}, "env: expected a mapping"),
                         ({**good, "pe_range": [[1]]}, "pe_range: expected a list of"),
                         ({**good, "owner": "root"}, "unknown field 'owner'"),
                         ({"hard": "x=1"}, "a script or a command")]:
        with pytest.raises(RequestError, match=message):
            submission_from(bad)


def test_plus_qacct_reads_the_file_itself(capsys, zone):
    zone("UTC")
    assert qacct.main(["-f", str(DATA / "accounting"), "-o"]) == 0
    assert capsys.readouterr().out == (DATA / "qacct-o.txt").read_text()
    assert qacct.main(["-f", str(DATA / "accounting"), "-j", "26"]) == 0
    assert capsys.readouterr().out == (DATA / "qacct-j26.txt").read_text()
    assert qacct.main(["-f", str(DATA / "accounting"), "-j", "999999"]) == 1
    assert capsys.readouterr().err == "error: job id 999999 not found\n"
    assert qacct.main(["-f", str(DATA / "accounting"), "-b", "203001010000"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].split()[0] == "0"      # nothing started after
    with pytest.raises(SystemExit) as stop:
        qacct.main(["-f", str(DATA / "accounting"), "-o", "-h"])
    assert stop.value.code == 2
    with pytest.raises(SystemExit):
        qacct.main(["-f", "/no/such/file"])
    assert "can't open accounting file /no/such/file" in capsys.readouterr().err


def test_json_of_a_submission_round_trips():
    spec = submission_from({"command": ["a"], "script": "x", "pe": "mpi", "pe_range": [[1, 2]]})
    assert json.loads(spec.encoded)["pe_range"] == [[1, 2]]


def test_plus_qacct_goes_on_past_malformed_lines_and_names_the_first_five(capsys, tmp_path):
    path = tmp_path / "accounting"
    good = (DATA / "accounting").read_text().splitlines()[-1]
    path.write_text("\n".join([good] + [f"bad:{n}" for n in range(7)]) + "\n")
    assert qacct.main(["-f", str(path), "-j", good.split(":")[5]]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"plus_qacct: error: ignoring {path}:2: not an accounting record: expected 45 fields, found 2"
    assert len(err) == 6 and err[5] == "plus_qacct: error: ignoring 2 more malformed lines"
