"""plus_qsub: submit a batch job to the native batch system, with qsub's options.

    plus_qsub [options] [script [args...]]     (no script: read it from stdin)

Options end at the first word that is not one (the script, or with -b y the
command); -hard and -soft switch where the -l requests that follow go.
Lines of the script starting with #$ hold options too (as qsub reads them);
the command line comes after them and so wins. Standard library only.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import sys
from typing import Any, NoReturn

from overlay.api.commands import (
    EXIT_REFUSED,
    EXIT_USAGE,
    TIME_FORMS,
    RequestError,
    TimeSpecError,
    check_length,
    common,
    limits,
    parse_ar_id,
    parse_int,
    parse_job_references,
    parse_pe_range,
    parse_queue_list,
    parse_time,
    parse_yes_no,
)

PROG = "plus_qsub"
PREFIX = "#$"
_ARITY = {"-a": 1, "-A": 1, "-ar": 1, "-b": 1, "-cwd": 0, "-e": 1, "-h": 0, "-hard": 0,
          "-hold_jid": 1, "-j": 1, "-l": 1, "-masterq": 1, "-N": 1, "-now": 1, "-o": 1, "-p": 1,
          "-pe": 2, "-preemptible": 1, "-q": 1, "-R": 1, "-S": 1, "-soft": 0, "-v": 1, "-V": 0, "-w": 1, "-wd": 1,
          "--reskey": 1}
PREEMPT_MODES = ("requeue", "kill")    # the daemon checks them again (overlay_native.submit)
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HELP = f"""usage: {PROG} [options] [script [args...]]   (no script: read from stdin)

Submit a batch job to the native batch system (plus_scheduler), as qsub does.

  -a date_time        not before this time ({TIME_FORMS})
  -A account          account string for accounting
  -ar ar_id           run inside this advance reservation (implies -w e)
  -b y|n              the command is a binary, not a script (default n)
  -cwd                run in the current directory (default: your home)
  -wd dir             run in dir
  -e path, -o path    standard error and output (default NAME.eID, NAME.oID)
  -j y|n              merge standard error into standard output
  -h                  hold the job until plus_qrls releases it
  -hold_jid job,...   wait until these jobs (ids or names) have ended
  -l res=val,...      resources (after -soft: wished for, not required)
  -hard, -soft        whether the -l requests that follow are required (default -hard)
  -masterq queues     queues for the master task of a parallel job
  -N name             job name (default: the script's file name)
  -now y|n            start now or not at all (default n)
  -p priority         -1023 to 1024 (above 0: managers only)
  -pe pe range        parallel environment and slots: 4, 2-8, -8, 4-
  -preemptible requeue|kill
                      may also run on a running AR's idle slots, and is then
                      requeued (or killed) when the AR's own jobs want them
  -q queues           queues, queue@host, queue@@hostgroup (wildcards allowed)
  -R y|n              reserve resources for the job (default n)
  -S shell            run the script with this shell
  -v var[=val],...    pass these environment variables
  -V                  pass the whole environment
  -w e|w|n|v          verify: e refuse, w warn, n don't (default), v only verify
  --reskey file       submit into the AR whose ResKey (from plus_setres or
                      plus_resqandset) the file holds, as the AR's owner; the
                      key itself is never sent, only a signed one-time claim
  -help               this help

Exit status: 0 submitted (or verified), 1 refused, 2 bad command line, 3
plus_scheduler unreachable. The daemon is found through PLUS_CONF."""


def usage_error(message: str) -> NoReturn:
    common.fail(PROG, f"{message} (see {PROG} -help)", EXIT_USAGE)


def embedded_options(script: str) -> list[str]:
    """qsub options on the script's lines that start with #$."""
    words: list[str] = []
    for number, line in enumerate(script.splitlines(), 1):
        if line.startswith(PREFIX):
            try:
                words += shlex.split(line[len(PREFIX):])
            except ValueError as error:
                usage_error(f"script line {number}: {error}")
    return words


def split_options(argv: list[str]) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """(option, arguments) pairs in order, and the rest (script and its arguments)."""
    options, index = [], 0
    while index < len(argv) and argv[index].startswith("-") and argv[index] != "-":
        name = argv[index]
        if name in ("-help", "--help"):
            print(HELP)
            sys.exit(0)
        if name not in _ARITY:
            usage_error(f"unknown option {limits.shown(name)}")
        count = _ARITY[name]
        values = [check_length(value, name, "argument")
                  for value in argv[index + 1:index + 1 + count]]
        if len(values) < count:
            usage_error(f"{name} needs {count} argument{'s' if count > 1 else ''}")
        options.append((name, values))
        index += 1 + count
    return options, argv[index:]


def _yes(option: str, text: str) -> bool:
    return parse_yes_no(text, option)


def _absolute(option: str, path: str) -> str:
    """An existing directory, made absolute (expanduser refuses a NUL byte
    with ValueError; isdir just says no)."""
    full = os.path.abspath(os.path.expanduser(path)) if "\0" not in path else path
    if not os.path.isdir(full):
        raise RequestError(f"{option}: {limits.shown(full)} is not a directory")
    return full


def _variables(text: str) -> dict[str, str]:
    """-v var[=value],...: without a value, this environment's."""
    found = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not _VARIABLE.fullmatch(name):
            raise RequestError(f"-v: invalid variable name '{limits.shown(name)}' in "
                               f"'{limits.shown(text)}': accepted are letters, digits and _, "
                               "not starting with a digit")
        found[name] = value if sep else os.environ.get(name, "")
    return found


def submission(options: list[tuple[str, list[str]]], rest: list[str]) -> dict[str, Any]:
    """The job's fields from its options and the script or command."""
    job: dict[str, Any] = {"hard": "", "soft": "", "queues": [], "master_queues": [],
                           "hold_jids": [], "env": {}}
    soft = False
    for name, values in options:
        value = values[0] if values else ""
        if name in ("-hard", "-soft"):
            soft = name == "-soft"
        elif name == "-l":
            key = "soft" if soft else "hard"
            job[key] = ",".join(filter(None, (job[key], value)))
        elif name == "-pe":
            job["pe"], job["pe_range"] = value, [list(r) for r in parse_pe_range(values[1])]
        elif name in ("-q", "-masterq"):
            key = "queues" if name == "-q" else "master_queues"
            job[key] = list(dict.fromkeys(job[key] + list(parse_queue_list(value, name))))
        elif name == "-hold_jid":
            job["hold_jids"] += list(parse_job_references(value))
        elif name == "-a":
            try:
                job["start_after"] = parse_time(value, option=name)
            except TimeSpecError as error:
                raise RequestError(str(error)) from None
        elif name == "-ar":
            job["ar"] = parse_ar_id(value, name)
        elif name == "-p":
            job["priority"] = parse_int(value, name, "the priority", -1023, 1024)
        elif name in ("-R", "-now", "-b", "-j"):
            job[{"-R": "reserve", "-now": "now", "-b": "binary", "-j": "merge"}[name]] = \
                _yes(name, value)
        elif name == "-w":
            if value not in ("e", "w", "n", "v"):
                raise RequestError(f"-w: expected e, w, n or v, got '{limits.shown(value)}'")
            job["verify"] = value
        elif name == "-cwd":
            job["cwd"] = os.getcwd()
        elif name == "-wd":
            job["cwd"] = _absolute(name, value)
        elif name in ("-o", "-e", "-N", "-A", "-S"):
            if not value:
                raise RequestError(f"{name}: needs a value")
            if name in ("-N", "-A"):
                check_length(value, name, "the name", limits.MAX_NAME)
            job[{"-o": "stdout", "-e": "stderr", "-N": "name", "-A": "account",
                 "-S": "shell"}[name]] = value
        elif name == "-v":
            job["env"].update(_variables(value))
        elif name == "-V":
            job["env"].update({k: v for k, v in os.environ.items() if k and "=" not in k})
        elif name == "-h":
            job["hold"] = True
        elif name == "-preemptible":
            if value not in PREEMPT_MODES:
                raise RequestError(f"-preemptible: expected {' or '.join(PREEMPT_MODES)}, got "
                                   f"'{limits.shown(value)}'")
            job["preemptible"] = value
        elif name == "--reskey":
            raise RequestError("--reskey is taken on the command line only, not from #$ lines")
    if job.get("shell") and not job["shell"].startswith("/"):
        raise RequestError(f"-S: expected an absolute path, got '{limits.shown(job['shell'])}'")
    return job


def checked_environment(env: dict[str, str]) -> dict[str, str]:
    """The job's environment, unless it is larger than MAX_ENVIRONMENT bytes."""
    size = sum(len(f"{k}={v}".encode("utf-8", "surrogateescape")) for k, v in env.items())
    if size > limits.MAX_ENVIRONMENT:
        raise RequestError(f"-v, -V: the environment passed is {size} bytes; at most "
                           f"{limits.MAX_ENVIRONMENT} are accepted")
    return env


def read_script(source: str | int) -> str:
    """A job script from a path or a file descriptor (0: standard input),
    bytes that are not UTF-8 kept as they are; at most MAX_SCRIPT bytes."""
    with open(source, encoding="utf-8", errors="surrogateescape",
              closefd=isinstance(source, str)) as handle:
        script = handle.read(limits.MAX_SCRIPT + 1)
    if len(script.encode("utf-8", "surrogateescape")) > limits.MAX_SCRIPT:
        raise RequestError(f"the script is larger than {limits.MAX_SCRIPT} bytes; at most "
                           f"{limits.MAX_SCRIPT} are accepted")
    return script


def origin() -> dict[str, str]:
    """SGE_O_* of the submission, as qsub passes them."""
    values = {"SGE_O_HOME": os.environ.get("HOME", ""), "SGE_O_PATH": os.environ.get("PATH", ""),
              "SGE_O_SHELL": os.environ.get("SHELL", ""), "SGE_O_WORKDIR": os.getcwd(),
              "SGE_O_HOST": socket.gethostname()}
    values["SGE_O_LOGNAME"] = os.environ.get("LOGNAME") or os.environ.get("USER", "")
    return {key: value for key, value in values.items() if value}


@common.command(PROG)
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        options, rest = split_options(argv)
        keys = [values[0] for name, values in options if name == "--reskey"]
        options = [(name, values) for name, values in options if name != "--reskey"]
        if len(keys) > 1:
            usage_error("--reskey is given twice")
        binary = any(name == "-b" and _yes(name, values[0]) for name, values in options)
        script, script_path = None, ""
        if not binary:
            script_path = rest[0] if rest else ""
            try:
                if script_path and script_path != "-":
                    script = read_script(script_path)
                    script_path = os.path.abspath(script_path)
                else:
                    script = read_script(sys.stdin.fileno())
            except OSError as error:
                common.fail(PROG, f"Unable to read script file because of error: error opening "
                                  f"{limits.shown(script_path)}: {error.strerror}", EXIT_REFUSED)
            embedded, _ = split_options(embedded_options(script))
            options = embedded + options
        elif not rest:
            usage_error("-b y needs a command")
        job = submission(options, rest)
        job["env"] = checked_environment({**origin(), **job["env"]})
    except RequestError as error:
        usage_error(str(error))
    job.update(script=script, script_path=script_path, binary=binary,
               command=rest if binary else rest[1:], submit_host=socket.gethostname())
    if job.get("now"):
        print("Waiting for immediate job to be scheduled.\n")
    reply = call(job) if not keys else claim(keys[0], job)
    if "verified" in reply:
        print("\n".join(reply["reasons"] + ["verification: " + (
            "found suitable queue(s)" if reply["verified"] else "no suitable queues")]))
        return 0 if reply["verified"] else EXIT_REFUSED
    for warning in reply.get("warnings") or ():
        print(warning, file=sys.stderr)
    verb = "scheduled" if job.get("now") else "submitted"
    print(f'Your job {reply["id"]} ("{reply["name"]}") has been {verb}')
    return 0


def call(job: dict, op: str = "job_submit") -> dict:
    """Submit (``op``: job_submit, or claim with a claim's arguments); a
    refusal is printed as qsub prints it."""
    def refused(message: str, status: int) -> NoReturn:
        if status != EXIT_REFUSED:
            common.fail(PROG, message, status)
        print(f"Unable to run job: {message}\nExiting.", file=sys.stderr)
        sys.exit(status)
    return common.call(PROG, op, job, on_refusal=refused)


def claim(path: str, job: dict) -> dict:
    """Submit with a claim signed with the ResKey in ``path`` (overlay.network.reskey)."""
    claimed = common.claim(PROG, path, "submit", job)
    if job.get("ar") not in (None, claimed["id"]):
        usage_error(f"-ar {job['ar']} is not the AR of the ResKey ({claimed['id']}); leave -ar out")
    return call(claimed, "claim")


if __name__ == "__main__":
    sys.exit(main())
