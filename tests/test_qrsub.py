"""plus_qrsub, plus_qrstat and plus_qrdel as real users against a real
daemon on the native backend (seed 000 5.1.3, Son of Grid Engine 8.1.9's
qrsub(1), qrstat(1), qrdel(1)): the seed's examples, every switch, the
xuser_lists rule, bad input of each switch, the defaults files, XML valid
against the seed's qrstat schema as it stands."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import xmlschema

from daemon_harness import Daemon

DATA = Path(__file__).parent / "data"
SEED = Path(__file__).parents[2] / "shared" / "seeds" / "000_dbdef7503eeeb47c.txt"
CLUSTER = """\
nodes:
  - {name: "host[1-3]", slots: 4, memory: 16G, ncpus: 4, arch: lx-amd64, os: linux, queues: [all.q]}
  - {name: arm1, slots: 8, memory: 64G, ncpus: 8, arch: lx-arm64, os: linux,
     queues: [all.q, int.q]}
userlists:
  denied: [plusu3]
  team: [plusu2, plusu3]
complexes:
  - {name: license, shortcut: lic, type: INT, relop: "<=", requestable: YES, consumable: YES,
     default: 0}
global:
  complex_values: {license: 4}
queues:
  - {name: all.q, slots: 4, qtype: [BATCH], pe_list: [alloc_pe_slots, mpi],
     xuser_lists: [denied], ckpt_list: [blcr]}
  - {name: int.q, hostlist: [arm1], slots: 2, qtype: [INTERACTIVE]}
  - {name: team.q, hostlist: [arm1], slots: 1, qtype: [BATCH], user_lists: [team]}
pes:
  - {name: alloc_pe_slots, slots: 64, allocation_rule: $pe_slots}
  - {name: mpi, slots: 64, allocation_rule: $round_robin}
"""


@pytest.fixture(scope="module")
def daemon():
    d = Daemon(settings="max_advance_reservations: 40\n", cluster=CLUSTER).start()
    yield d
    d.cleanup()


@pytest.fixture(autouse=True)
def clean(daemon):
    yield
    daemon.run("root", "plus_qrdel", "-u", "*")


def at(hours: float = 1) -> str:
    """A start time in qrsub's [[CC]YY]MMDDhhmm form."""
    return time.strftime("%Y%m%d%H%M", time.localtime(time.time() + hours * 3600))


def qrsub(daemon, *args: str, user: str = "plusu1", env: dict | None = None):
    return daemon.run(user, "plus_qrsub", *args, env=env)


def granted(daemon, *args: str, user: str = "plusu1") -> dict:
    result = qrsub(daemon, "--json", *args, user=user)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def instances(view: dict) -> dict[str, int]:
    return {f"{a['queue']}@{a['node']}": a["slots"] for a in view["allocations"]}


def test_seed_examples_reserve_a_slot_of_all_q_on_one_of_three_hosts(daemon):
    first = granted(daemon, "-q", "all.q", "-l", "h=host1|host2|host3", "-u", "plusu1",
                    "-a", at(), "-d", "1:0:0")
    second = granted(daemon, "-q", "*@host1,*@host2,*@host3", "-u", "plusu1", "-a", at(),
                     "-d", "1:0:0")
    for view in (first, second):
        (where, slots), = instances(view).items()
        assert where in ("all.q@host1", "all.q@host2", "all.q@host3") and slots == 1
        assert view["granted_pe"] == ""


def test_seed_example_four_slots_of_a_pe_on_one_host_of_an_arch(daemon):
    view = granted(daemon, "-pe", "alloc_pe_slots", "4", "-l", "arch=lx-arm64", "-u", "plusu1",
                   "-a", at(), "-d", "1:0:0")
    assert instances(view) == {"all.q@arm1": 4} and view["granted_pe"] == "alloc_pe_slots"
    out = daemon.ok("plusu1", "plus_qrstat", "-ar", str(view["id"]))
    assert "granted_slots_list             all.q@arm1=4" in out
    assert "granted_parallel_environment   alloc_pe_slots slots 4" in out


def test_the_grant_prints_qrsubs_line_and_verify_reserves_nothing(daemon):
    result = qrsub(daemon, "-a", at(), "-d", "1:0:0", "-N", "first")
    assert result.returncode == 0
    assert result.stdout.startswith("Your advance reservation ") and \
        result.stdout.rstrip().endswith(" has been granted")
    before = daemon.status()
    result = qrsub(daemon, "-a", at(), "-d", "1:0:0", "-w", "v")
    assert (result.returncode, result.stdout) == (0, "verification: found suitable queue(s)\n")
    assert daemon.status() == before


def test_round_robin_pe_spreads_and_consumables_are_held_over_the_window(daemon):
    view = granted(daemon, "-pe", "mpi", "6", "-l", "lic=0", "-a", at(), "-d", "1:0:0")
    assert sum(instances(view).values()) == 6 and len(view["allocations"]) >= 2
    licensed = granted(daemon, "-l", "lic=3", "-a", at(), "-d", "2:0:0")
    assert sum(instances(licensed).values()) == 1
    refused = qrsub(daemon, "-l", "lic=2", "-a", at(1.5), "-d", "1:0:0")   # 3 of 4 are held
    assert refused.returncode == 1 and "no suitable queues" in refused.stderr
    granted(daemon, "-l", "lic=2", "-a", at(3), "-d", "1:0:0")             # after that window


def test_alloc_now_ckpt_masterq_and_account(daemon):
    view = granted(daemon, "-alloc", "2", "4", "-a", at(), "-d", "1:0:0")
    assert sorted(instances(view).values()) == [2, 2]
    interactive = granted(daemon, "-now", "y", "-a", at(), "-d", "1:0:0")
    assert list(instances(interactive)) == ["int.q@arm1"]
    checkpointed = granted(daemon, "-ckpt", "blcr", "-A", "proj_x", "-m", "be", "-M",
                           "plusu1@localhost", "-he", "y", "-a", at(), "-d", "1:0:0")
    assert all(q.startswith("all.q@") for q in instances(checkpointed))
    assert checkpointed["account"] == "proj_x"
    master = granted(daemon, "-pe", "mpi", "2", "-masterq", "all.q@host3", "-a", at(),
                     "-d", "1:0:0")
    assert master["allocations"][0]["node"] == "host3"
    detail = daemon.ok("plusu1", "plus_qrstat", "-ar", str(checkpointed["id"]))
    for line in ("account                        proj_x", "error_handling                 true",
                 "checkpoint_name                blcr", "mail_options                   be",
                 "mail_list                      plusu1@localhost"):
        assert line in detail


def test_u_at_name_is_an_access_list_checked_by_name_and_shown_as_given(daemon):
    """qrsub(1): -u [username|@access_list]; 8.1.9 checks an @entry against
    the queues' user_lists and xuser_lists by its name, and acl_list shows
    only what -u gave."""
    view = granted(daemon, "-u", "@team", "-q", "team.q", "-a", at(), "-d", "1:0:0",
                   user="plusu2")
    assert list(instances(view)) == ["team.q@arm1"]
    detail = daemon.ok("plusu2", "plus_qrstat", "-ar", str(view["id"]))
    assert "acl_list                       @team\n" in detail + "\n"
    assert "acl_list" not in daemon.ok("plusu1", "plus_qrstat", "-ar", str(granted(
        daemon, "-a", at(), "-d", "1:0:0")["id"]))
    refused = qrsub(daemon, "-u", "@denied", "-q", "all.q", "-a", at(), "-d", "1:0:0")
    assert refused.returncode == 1 and \
        'has no permission for cluster queue "all.q"' in refused.stderr
    interactive = granted(daemon, "-u", "@denied", "-now", "y", "-a", at(), "-d", "1:0:0")
    assert list(instances(interactive)) == ["int.q@arm1"]
    # a member of the access list may submit into the AR, one outside it may not
    job = daemon.run("plusu3", "plus_qsub", "-ar", str(view["id"]), "-b", "y", "true")
    assert job.returncode == 0, job.stderr
    outsider = daemon.run("plusu1", "plus_qsub", "-ar", str(view["id"]), "-b", "y", "true")
    assert outsider.returncode != 0 and "is not in the access list" in outsider.stderr


def test_the_access_list_alone_is_checked_when_u_gives_one(daemon):
    """8.1.9 checks the acl_list -u gave, not the owner beside it: plusu1
    may reserve team.q (user_lists team) for @team, or for plusu2 alone."""
    for users in ("@team", "plusu2"):
        view = granted(daemon, "-u", users, "-q", "team.q", "-a", at(), "-d", "0:10:0")
        assert list(instances(view)) == ["team.q@arm1"]
        daemon.ok("plusu1", "plus_qrdel", str(view["id"]))
    alone = qrsub(daemon, "-q", "team.q", "-a", at(), "-d", "0:10:0")
    assert alone.returncode == 1 and 'no permission for cluster queue "team.q"' in alone.stderr


def test_xuser_lists_every_user_of_the_access_list_must_be_allowed(daemon):
    before = daemon.status()
    result = qrsub(daemon, "-u", "plusu1,plusu3", "-q", "all.q", "-a", at(), "-d", "1:0:0")
    assert result.returncode == 1
    assert 'has no permission for cluster queue "all.q" (user plusu3 of the access list)' \
        in result.stderr
    assert daemon.status() == before
    view = granted(daemon, "-u", "plusu1,plusu3", "-now", "y", "-a", at(), "-d", "1:0:0")
    assert list(instances(view)) == ["int.q@arm1"]     # int.q denies no one


@pytest.mark.parametrize("args, message", [
    (["-a", "99999", "-d", "1:0:0"], "-a: invalid time '99999'"),
    (["-a", at()], "missing value for end time or duration"),
    (["-d", "1:0:x"], "-d: invalid duration '1:0:x'"),
    (["-d", "1:0:0", "-e", "0101"], "-e: invalid time"),
    (["-d", "1:0:0", "-A", "a:b"], "-A: invalid account string 'a:b'"),
    (["-d", "1:0:0", "-ckpt", "nock"],
     'job rejected: the requested checkpointing environment "nock" does not exist'),
    (["-d", "1:0:0", "-he", "maybe"], "-he: expected y[es] or n[o], got 'maybe'"),
    (["-d", "1:0:0", "-l", "nosuch=1"], "nosuch"),
    (["-d", "1:0:0", "-l", "=1"], "-l: invalid resource"),
    (["-d", "1:0:0", "-m", "x"], "-m: invalid mail options 'x'"),
    (["-d", "1:0:0", "-M", "a b"], "-M: invalid mail address 'a b'"),
    (["-d", "1:0:0", "-masterq", "all.q"], "-masterq is only for parallel jobs (with -pe)"),
    (["-d", "1:0:0", "-now", "later"], "-now: expected y[es] or n[o]"),
    (["-d", "1:0:0", "-N", "1bad"], "-N: invalid AR name '1bad': it may not start with a digit"),
    (["-d", "1:0:0", "-N", "a/b"], "-N: invalid AR name 'a/b'"),
    (["-d", "1:0:0", "-A", "bad account"], "-A: invalid account string 'bad account'"),
    (["-d", "1:0:0", "-u", "@plusgrp"], 'Userset "plusgrp" does not exist'),
    (["-d", "1:0:0", "-w", "x"], "-w: invalid validation level 'x'"),
    (["-d", "1:0:0", "-pe", "nope", "2"],
     'job rejected: the requested parallel environment "nope" does not exist'),
    (["-d", "1:0:0", "-pe", "mpi"], "-pe: expected two words"),
    (["-d", "1:0:0", "-pe", "mpi", "4-2"], "-pe: invalid slot range '4-2'"),
    (["-d", "1:0:0", "-alloc", "$best", "2"], "-alloc: invalid allocation rule '$best'"),
    (["-d", "1:0:0", "-alloc", "2", "4", "-pe", "mpi", "2"], "-pe and -alloc"),
    (["-d", "1:0:0", "-q", "all.q@@"], "-q: invalid queue 'all.q@@'"),
    (["-d", "1:0:0", "-q", "nosuch.q"],
     'Job was rejected because job requests unknown queue "nosuch.q" (-q)'),
    (["-d", "1:0:0", "-u", "nosuchuser"], "-u: nosuchuser is not known as a user"),
    (["-d", "1:0:0", "-bogus"], "unrecognized arguments: -bogus"),
    (["-d", "0"], "-d: the duration must be positive"),
    (["-a", "203001010000", "-e", "203001010100", "-d", "2:0:0"], "give -e or -d, or values"),
    (["-d", "1:0:0", "-pe", "mpi", "100"], "no suitable queues"),
])
def test_bad_input_is_one_line_exit_1_and_nothing_stored(daemon, args, message):
    before = daemon.status()
    result = qrsub(daemon, *args)
    assert result.returncode == 1, result
    assert message in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert result.stdout == "" and daemon.status() == before


def test_max_advance_reservations_exits_25(daemon):
    made = [granted(daemon, "-a", at(5 + i), "-d", "0:10:0")["id"] for i in range(40)]
    result = qrsub(daemon, "-a", at(), "-d", "1:0:0")
    assert result.returncode == 25 and "max_advance_reservations (40)" in result.stderr
    daemon.ok("plusu1", "plus_qrdel", ",".join(map(str, made)))


def test_defaults_files_site_then_user_then_command_line(daemon):
    site = daemon.conf.parent / "sge_ar_request"
    home = daemon.dir / "home"
    home.mkdir(exist_ok=True)
    (home / ".sge_ar_request").write_text("# plusu1's defaults\n-N from_user -A user_acct\n")
    site.write_text("-d 1:0:0 -N from_site -A site_acct -m e\n")
    try:
        view = granted_env(daemon, {"HOME": str(home)}, "-a", at(), "-A", "cmd_acct")
        assert (view["name"], view["account"]) == ("from_user", "cmd_acct")
        assert view["duration"] == 3600 and view["request"]["mail_options"] == "e"
        site.write_text("-d 1:0:x\n")
        result = qrsub(daemon, "-a", at(), env={"HOME": str(home)})
        assert result.returncode == 1 and f"{site}: -d: invalid duration" in result.stderr
    finally:
        site.unlink()


def granted_env(daemon, env: dict, *args: str) -> dict:
    result = qrsub(daemon, "--json", *args, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_qrstat_table_users_names_patterns_and_explain(daemon):
    mine = granted(daemon, "-N", "proj_a", "-a", at(), "-d", "1:0:0")
    other = granted(daemon, "-N", "proj_b", "-a", at(), "-d", "1:0:0", user="plusu2")
    table = daemon.ok("plusu1", "plus_qrstat").splitlines()
    assert table[0] == ("ar-id   name       owner        state start at             end at"
                        "               duration") and table[1] == "-" * 90
    assert [line.split()[0] for line in table[2:]] == [str(mine["id"])]    # -u $user by default
    everyone = daemon.ok("plusu1", "plus_qrstat", "-u", "*")
    assert str(other["id"]) in everyone and str(mine["id"]) in everyone
    assert daemon.ok("plusu1", "plus_qrstat", "-u", "$user") == "\n".join(table) + "\n"
    assert str(other["id"]) in daemon.ok("plusu1", "plus_qrstat", "-u", "plusu2")
    detail = daemon.ok("plusu1", "plus_qrstat", "-ar", "proj_*")
    assert detail.count("-" * 80) == 2 and "name                           proj_b" in detail
    missing = daemon.run("plusu1", "plus_qrstat", "-ar", "nosuch,99999")
    assert missing.returncode == 1
    assert missing.stdout == "Following advance reservations do not exist:\nnosuch, 99999\n"
    many = daemon.run("plusu1", "plus_qrstat", "-ar", ",".join(f"p{i}*" for i in range(17)))
    assert many.returncode == 1 and "-ar: 17 name patterns; at most 16 are accepted" in many.stderr
    explain = daemon.ok("plusu1", "plus_qrstat", "-explain")
    assert explain.splitlines()[2].split()[0] == str(mine["id"])


def test_qrstat_xml_is_valid_against_the_seeds_schema_unchanged(daemon):
    if SEED.exists():
        text = SEED.read_text()
        appendix = text[text.index("Appendix - Appendix #3 - qrstat XML schema"):]
        assert (DATA / "seed000_qrstat.xsd").read_text().strip() == \
            appendix[appendix.index("<?xml"):].strip()
    schema = xmlschema.XMLSchema(str(DATA / "seed000_qrstat_document.xsd"))
    granted(daemon, "-pe", "mpi", "2", "-l", "lic=1", "-N", "x1", "-ckpt", "blcr", "-M",
            "plusu1@localhost,plusu2", "-u", "plusu2", "-A", "acct", "-a", at(), "-d", "1:0:0")
    granted(daemon, "-a", at(), "-d", "0:30:0")
    daemon.reserve("plusu1", "-s", "now+2h", "-D", "1h", "-n", "1")    # PluS's node AR too
    for args in (["-xml"], ["-xml", "-u", "*"], ["-xml", "-ar", "x1"]):
        document = daemon.ok("plusu1", "plus_qrstat", *args)
        schema.validate(document)
        assert "<ar_summary>" in document


def test_qrdel_by_name_and_ids_with_qrdels_messages(daemon):
    a = granted(daemon, "-N", "gone", "-a", at(), "-d", "1:0:0")["id"]
    b = granted(daemon, "-a", at(), "-d", "1:0:0")["id"]
    c = granted(daemon, "-a", at(), "-d", "1:0:0")["id"]
    theirs = granted(daemon, "-N", "theirs", "-a", at(), "-d", "1:0:0", user="plusu2")["id"]
    out = daemon.ok("plusu1", "plus_qrdel", "gone", f"{b},{c}")
    assert out.splitlines() == [f"plusu1 has deleted advance_reservation {n}" for n in (a, b, c)]
    refused = daemon.run("plusu1", "plus_qrdel", str(theirs))
    assert refused.returncode == 1 and refused.stderr.strip() == (
        "plus_qrdel: plusu1 - you do not have the necessary privileges to delete the "
        f'advance_reservation "{theirs}"')
    missing = daemon.run("plusu1", "plus_qrdel", "theirs")     # names: the caller's own ARs
    assert missing.returncode == 1 and 'advance_reservation "theirs" does not exist' \
        in missing.stderr
    assert daemon.ok("plusmgr", "plus_qrdel", "-u", "plusu2") == \
        f"plusmgr has deleted advance_reservation {theirs}\n"
    usage = daemon.run("plusu1", "plus_qrdel")
    assert usage.returncode == 1 and "give AR ids or names" in usage.stderr


def test_reporting_records_are_grid_engines(daemon):
    """As Grid Engine 8.1.9 writes them for the same qrsub (tests/data/
    sge819_reporting): the granted PE and the -l requests in ar_attribute,
    the account sge where -A was not given, one ar_acct per queue instance."""
    pe = granted(daemon, "-pe", "mpi", "2", "-l", "lic=1", "-N", "recorded", "-A", "proj1",
                 "-a", at(), "-d", "1:0:0")
    plain = granted(daemon, "-q", "all.q", "-l", "lic=1,h_rt=3600", "-a", at(), "-d", "0:10:0")
    daemon.ok("plusu1", "plus_qrdel", str(pe["id"]), str(plain["id"]))
    path = daemon.dir / "state" / "reporting"
    deadline = time.monotonic() + 60               # the leader appends them on its own thread
    while not any(line.split(":")[1] == "ar_acct" and line.split(":")[4] == str(plain["id"])
                  for line in path.read_text().splitlines()):
        assert time.monotonic() < deadline, "the qrdel's records never reached the file"
        time.sleep(0.1)
    records = [line.split(":")[1:] for line in path.read_text().splitlines()]

    def fields(kind: str, ar: dict) -> list[list[str]]:
        return [r[1:] for r in records if r[0] == kind and r[3] == str(ar["id"])]

    assert [f[3:] for f in fields("ar_attribute", pe)] == [
        ["recorded", "proj1", str(pe["start"]), str(pe["end"]), "mpi", "license=1"]]
    assert [f[3:] for f in fields("ar_attribute", plain)] == [
        ["", "sge", str(plain["start"]), str(plain["end"]), "", "license=1,h_rt=3600"]]
    assert sorted(f[3:] for f in fields("ar_acct", pe)) == sorted(
        [a["queue"], a["node"], str(a["slots"])] for a in pe["allocations"])
    assert [f[3] for f in fields("ar_acct", plain)] == ["all.q"]


def test_plus_modify_replaces_a_qrsub_ar_in_the_schedulers_model(daemon):
    """A new window or access list is placed again, as a new AR would be,
    beside everything but the AR itself; its shape (slots) stays."""
    ar = granted(daemon, "-l", "lic=3", "-a", at(1), "-d", "1:0:0")
    later = granted(daemon, "-l", "lic=2", "-a", at(3), "-d", "1:0:0")
    overlapping = daemon.run("plusu1", "plus_modify", "-r", str(ar["id"]), "-D", "2:30:00")
    assert overlapping.returncode == 1 and "no suitable queues" in overlapping.stderr
    assert daemon.status("-r", str(ar["id"]))[0]["end"] == ar["end"]      # nothing changed
    daemon.ok("plusu1", "plus_modify", "-r", str(ar["id"]), "-D", "1:30:00")
    moved = daemon.ok("plusu1", "plus_modify", "-r", str(ar["id"]), "-s", at(5))
    assert moved == f"Advance reservation {ar['id']} has been modified\n"
    [view] = daemon.status("-r", str(ar["id"]))
    assert (view["end"] - view["start"], view["request"]["attributes"]) == (5400, [["license", "3"]])
    assert sum(instances(view).values()) == 1
    stranger = daemon.run("plusu1", "plus_modify", "-r", str(ar["id"]), "-U", "plusu1,plusu3")
    assert stranger.returncode == 1 and \
        'has no permission for cluster queue "all.q" (user plusu3 of the access list)' \
        in stranger.stderr
    for args, message in ((("-n", "2"), "-n: AR {} reserves slots (plus_qrsub), not nodes"),
                          (("-T", "-D", "2:0:0"), "-T: AR {} reserves slots (plus_qrsub)")):
        refused = daemon.run("plusu1", "plus_modify", "-r", str(ar["id"]), *args)
        assert refused.returncode == 1 and message.format(ar["id"]) in refused.stderr
    [after] = daemon.status("-r", str(ar["id"]))
    assert [after[k] for k in ("start", "end", "acl", "allocations")] == \
        [view[k] for k in ("start", "end", "acl", "allocations")]
    assert daemon.status("-r", str(later["id"]))[0]["allocations"] == later["allocations"]


def test_plus_status_explain_and_every_owner(daemon):
    view = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    listed = daemon.ok("plusu2", "plus_status", "-o", "*")
    assert str(view["id"]) in listed
    explain = daemon.run("plusu1", "plus_status", "-explain")
    assert explain.returncode == 0 and str(view["id"]) in explain.stdout


def test_names_accounts_and_short_windows_as_8_1_9_takes_them(daemon):
    """sge_types(5): an ar_name or account_name is any ASCII printing text
    but / : @ \\ * ? (x+y is one); 8.1.9 grants a window no longer than
    DURATION_OFFSET (its jobs then cannot run: seed 000, 5.1.3.1)."""
    view = granted(daemon, "-N", "x+y", "-A", "grp(1)", "-a", at(), "-d", "30")
    assert (view["name"], view["account"], view["end"] - view["start"]) == ("x+y", "grp(1)", 30)
    assert daemon.ok("plusu1", "plus_qrstat", "-ar", "x+y").count("x+y") == 1


def test_without_a_the_window_starts_at_the_daemons_now_and_keeps_its_length(daemon):
    """A client whose clock read lags the daemon's (a loaded machine) sends
    a start a few seconds back: 8.1.9's qmaster sets start and end itself,
    so -d 1:0:0 stays 01:00:00 (it was 00:59:59: the start moved, the end
    stayed)."""
    code = ("import json, sys, time; from overlay.wire import protocol\n"
            "now = int(time.time()) - 5\n"
            "reply = protocol.call(sys.argv[1], 'reserve', {'start': now, 'end': now + 3600, "
            "'nodes': 0, 'start_now': True})\n"
            "print(json.dumps(reply))\n")
    result = daemon.run("plusu1", "python", "-c", code, str(daemon.socket))
    reply = json.loads(result.stdout)
    assert reply["ok"], reply
    view = reply["data"]
    assert view["end"] - view["start"] == 3600 and view["start"] >= time.time() - 2
    shown = granted(daemon, "-d", "1:0:0")
    assert shown["end"] - shown["start"] == 3600


def test_w_v_prints_8_1_9s_lines_and_w_e_undoes_a_defaults_files_w_v(daemon):
    """-w v: 'found possible assignment with N slots' for a PE request, the
    scheduler's reasons then 'verification: no suitable queues' and status
    1 on failure, all on stdout; -w e on the command line undoes -w v in
    ~/.sge_ar_request (it was dropped as the default, nothing was reserved)."""
    result = qrsub(daemon, "-w", "v", "-pe", "mpi", "4", "-a", at(), "-d", "1:0:0")
    assert (result.returncode, result.stdout) == \
        (0, "verification: found possible assignment with 4 slots\n")
    result = qrsub(daemon, "-w", "v", "-l", "arch=sparc", "-a", at(), "-d", "1:0:0")
    lines = result.stdout.splitlines()
    assert result.returncode == 1 and lines[-1] == "verification: no suitable queues"
    assert any("offers only hl:arch=" in line for line in lines[:-1]), lines
    home = daemon.dir / "home_wv"
    home.mkdir(exist_ok=True)
    (home / ".sge_ar_request").write_text("-w v\n")
    view = granted_env(daemon, {"HOME": str(home)}, "-w", "e", "-a", at(), "-d", "1:0:0")
    assert view["id"] > 0 and any(ar["id"] == view["id"] for ar in daemon.status())


def test_a_refusal_names_what_decided_first(daemon):
    """plusu3 may not use all.q (xuser_lists): an AR for plusu3 in -q all.q
    is refused saying so before the instances it did not ask for; a PE's
    shortfall over the window is named."""
    result = qrsub(daemon, "-u", "plusu3", "-q", "all.q", "-a", at(), "-d", "1:0:0")
    assert result.returncode == 1 and 'no permission for cluster queue "all.q"' in result.stderr, \
        result.stderr
    assert result.stderr.index('has no permission for cluster queue "all.q"') < \
        result.stderr.index("not contained in its hard queue list"), result.stderr
    granted(daemon, "-pe", "mpi", "10", "-a", at(2), "-d", "1:0:0")
    refused = qrsub(daemon, "-pe", "mpi", "10", "-a", at(2), "-d", "1:0:0")
    assert refused.returncode == 1
    assert 'cannot run in PE "mpi" because it only offers' in refused.stderr, refused.stderr


def test_qrstat_ar_shows_what_8_1_9_shows_and_reads_sge_qrstat_files(daemon):
    """granted_parallel_environment names the requested slot range, -l
    under the complexes' full names joined by ', ', usage errors exit 1
    (qrstat and qrdel alike), ~/.sge_qrstat is read before the command line."""
    view = granted(daemon, "-pe", "mpi", "2-6", "-l", "arch=lx-amd64,lic=0", "-a", at(),
                   "-d", "1:0:0")
    detail = daemon.ok("plusu1", "plus_qrstat", "-ar", str(view["id"]))
    assert "granted_parallel_environment   mpi slots 2-6\n" in detail
    pattern = granted(daemon, "-pe", "mp*", "2", "-a", at(), "-d", "1:0:0")
    assert "granted_parallel_environment   mp* slots 2\n" in \
        daemon.ok("plusu1", "plus_qrstat", "-ar", str(pattern["id"]))
    assert "resource_list                  arch=lx-amd64, license=0\n" in detail
    for command in ("plus_qrstat", "plus_qrdel"):
        usage = daemon.run("plusu1", command, "-bogus")
        assert usage.returncode == 1 and "unrecognized arguments: -bogus" in usage.stderr
    home = daemon.dir / "home_qrstat"
    home.mkdir(exist_ok=True)
    (home / ".sge_qrstat").write_text("# plusu1's defaults\n-u plusu2\n")
    theirs = granted(daemon, "-N", "theirs_q", "-a", at(), "-d", "1:0:0", user="plusu2")
    table = daemon.run("plusu1", "plus_qrstat", env={"HOME": str(home)})
    assert table.returncode == 0 and str(theirs["id"]) in table.stdout
    assert str(view["id"]) not in table.stdout.split()
    mine = daemon.run("plusu1", "plus_qrstat", "-u", "plusu1", env={"HOME": str(home)})
    assert str(view["id"]) in mine.stdout.split()
