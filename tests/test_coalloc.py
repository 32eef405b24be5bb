"""Co-allocation across three real plus_scheduler daemons on loopback, each
with its own state, store, cluster and signing key, and the coordinator as
a real process run by a real user: the happy path, the coordinator killed
with SIGKILL after each of its steps and then recovered (all sites end with
the AR committed, or none with any AR or pending operation), and bad input."""

from __future__ import annotations

import contextlib
import email.utils
import glob
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Callable

import pytest

from daemon_harness import BIN, Daemon
from http_harness import HOUR, free_port, secret_file, start_api, token
from overlay.coalloc import sites as sites_file
from overlay.coalloc.coordinator import Coordinator, intersect
from overlay.coalloc.log import Log
from overlay.coalloc.sites import Site
from overlay.language.limits import shown
from overlay.language.request import RequestError

SITES = ("A", "B", "C")
USER = "plusu1"


@pytest.fixture(scope="module")
def world():
    daemons = {name: start_api("http: {address: {address}}\n") for name in SITES}
    folder = Path(tempfile.mkdtemp(prefix="plus-coalloc-"))
    os.chmod(folder, 0o777)
    lines = ["sites:"]
    for name, (daemon, url) in daemons.items():
        token_file = secret_file(folder / f"{name}.token", token(daemon, USER, "-l", "6h"), USER)
        lines.append(f"  {name}: {{url: '{url}', token_file: '{token_file}'}}")
    (folder / "sites.yaml").write_text("\n".join(lines) + "\n")
    yield daemons, folder
    for daemon, _ in daemons.values():
        daemon.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


def coreserve(world, *args: str, env: dict | None = None):
    daemons, folder = world
    daemon = daemons["A"][0]
    return daemon.run(USER, "plus_coreserve", "--sites", str(folder / "sites.yaml"),
                      "--log", str(folder / "coalloc.db"), *args, env=env)


def held(world, coalloc_id: str) -> dict[str, list[dict]]:
    """Each site's ARs (any state) made for this co-allocation."""
    daemons, _ = world
    return {name: [ar for ar in daemon.status("-ne", "1000")
                   if (ar.get("idempotency_key") or "").startswith(coalloc_id + ".")]
            for name, (daemon, _) in daemons.items()}


def with_site(folder: Path, name: str, daemon, url: str) -> Path:
    """A sites file with the world's sites and one more, ``name``, at ``url``."""
    token_file = secret_file(folder / f"{name}.token", token(daemon, USER, "-l", "1h"), USER)
    sites = folder / f"sites-{name}.yaml"
    sites.write_text((folder / "sites.yaml").read_text()
                     + f"  {name}: {{url: '{url}', token_file: '{token_file}'}}\n")
    return sites


def wait_for_api(url: str) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(url + "/openapi.json", timeout=2).read()
            return
        except OSError:
            assert time.monotonic() < deadline, f"{url} did not come back"
            time.sleep(0.2)


def clean(world) -> None:
    for daemon, _ in world[0].values():
        for ar in daemon.status():
            if ar["pending"]:
                daemon.ok("root", "plus_abort", "-r", str(ar["id"]))
        daemon.run("root", "plus_destroy", "-o", USER)


def test_two_and_three_sites_get_one_common_window(world):
    for sites in (("A", "B"), SITES):
        result = coreserve(world, "-D", "1h", "-s", "now+2h", "--json",
                           *(word for name in sites for word in ("--site", f"{name}:nodes=2")))
        assert result.returncode == 0, result.stderr
        coalloc = json.loads(result.stdout)
        assert coalloc["state"] == "committed" and set(coalloc["sites"]) == set(sites)
        for name, ars in held(world, coalloc["id"]).items():
            if name not in sites:
                assert ars == []
                continue
            (ar,) = ars
            assert ar["pending"] is None and ar["state"] == "w"
            assert (ar["start"], ar["end"]) == (coalloc["start"], coalloc["end"])
            assert coalloc["sites"][name]["reskey"].startswith(f"plus1.{ar['id']}.")
    clean(world)


def test_the_common_window_starts_after_what_one_site_has_booked(world):
    daemons, _ = world
    start = (int(time.time()) // HOUR + 3) * HOUR
    at = time.strftime("%Y%m%d%H%M", time.localtime(start))
    busy = daemons["B"][0].reserve("plusu2", "-s", at, "-D", "2h", "-n", "5")
    result = coreserve(world, "-D", "1h", "-s", at, "--json", "--site", "A:nodes=1",
                       "--site", "B:nodes=1")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["start"] == start + 2 * HOUR
    daemons["B"][0].ok("root", "plus_destroy", "-r", str(busy["id"]))
    clean(world)


@pytest.mark.parametrize("kill_after", range(1, 9))
def test_a_coordinator_killed_after_any_step_recovers_to_all_or_nothing(world, kill_after):
    result = coreserve(world, "-D", "1h", "-s", "now+5h", "--json", "--site", "A:nodes=1",
                       "--site", "B:nodes=2", env={"PLUS_COALLOC_KILL_AFTER": str(kill_after)})
    assert result.returncode == 128 + 9, (result.returncode, result.stdout, result.stderr)  # runuser says how
    recovered = coreserve(world, "--recover", "--json")
    assert recovered.returncode == 0, recovered.stderr
    coalloc = json.loads(recovered.stdout) if recovered.stdout.strip() else None
    if coalloc is None:                      # killed after the log said committed
        return clean(world)
    ars = held(world, coalloc["id"])
    live = {name: [ar for ar in found if ar["state"] in ("p", "w", "r")]
            for name, found in ars.items() if name in ("A", "B")}
    if coalloc["state"] == "committed":
        assert all(len(found) == 1 and found[0]["pending"] is None for found in live.values())
    else:
        assert coalloc["state"] == "aborted" and live == {"A": [], "B": []}, (coalloc, live)
    clean(world)


@pytest.mark.parametrize("args, message", [
    (["--site", "A:nodes=1"], "give -D duration and at least one --site"),
    (["-D", "1h", "--site", "A"], "--site: expected NAME:RESOURCES"),
    (["-D", "1h", "--site", "A:ppn=2"], "ResourceList: nodes=N is required"),
    (["-D", "1h", "--site", "Z:nodes=1"], "site Z is not in the sites file"),
    (["-D", "1h", "--site", "A:nodes=1", "--site", "A:nodes=2"], "each site may be named once"),
    (["-D", "1h", "-s", "now+2h", "-E", "now+2h", "--site", "A:nodes=1"], "leaves no room"),
    (["-D", "soon", "--site", "A:nodes=1"], "-D: "),
])
def test_bad_input_is_one_line_and_reserves_nothing(world, args, message):
    before = {name: daemon.status() for name, (daemon, _) in world[0].items()}
    result = coreserve(world, *args)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert message in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    assert {name: daemon.status() for name, (daemon, _) in world[0].items()} == before


def test_two_coordinators_racing_for_the_same_nodes_never_both_get_a_window(world):
    daemons, folder = world
    daemon = daemons["A"][0]
    argv = [str(BIN / "plus_coreserve"), "--sites", str(folder / "sites.yaml"), "-D", "1h",
            "-s", "now+8h", "-E", "now+10h", "--json", "--site", "A:nodes=5", "--site", "B:nodes=5"]
    racing = [subprocess.Popen(["runuser", "-u", USER, "--", "env", f"PLUS_CONF={daemon.conf}",
                                *argv, "--log", str(folder / f"race{i}.db")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for i in range(2)]
    outcomes = [process.communicate(timeout=120) + (process.returncode,) for process in racing]
    won = [json.loads(out) for out, _, status in outcomes if status == 0]
    assert all(status in (0, 1) for _, _, status in outcomes), outcomes
    assert won, outcomes                                        # the window has room for one
    windows = sorted((c["start"], c["end"]) for c in won)
    assert all(a[1] <= b[0] for a, b in zip(windows, windows[1:], strict=False)), windows
    for name in ("A", "B"):
        ars = [ar for ar in daemons[name][0].status() if ar["owner"] == USER]
        assert all(ar["pending"] is None for ar in ars) and len(ars) == len(won)
    clean(world)


@pytest.mark.parametrize("how", ["stopped", "killed"])
def test_a_site_stopped_or_killed_between_prepare_and_commit_ends_all_or_nothing(world, how):
    """Site S is stopped (SIGSTOP) or killed (SIGKILL) after the prepare,
    then back: with the decision logged, the coordinator commits it when it
    is back; without, the rest is aborted and S's own commit_timeout drops
    its pending part. S's commit_timeout is an hour, so that a slow machine
    never sees it lapse before the commit; the test makes it lapse itself
    (SIGHUP with commit_timeout 1) where that is what it checks."""
    daemons, folder = world
    extra, url = start_api("http: {address: {address}}\ncommit_timeout: 3600\n")
    try:
        sites = with_site(folder, "S", extra, url)
        args = ("--sites", str(sites))
        for decided in (True, False):
            killed = coreserve(world, *args, "-D", "1h", "-s", "now+12h", "--json",
                               "--site", "A:nodes=1", "--site", "S:nodes=1",
                               env={"PLUS_COALLOC_KILL_AFTER": "5" if decided else "4"})
            assert killed.returncode == 137, killed.stderr
            if how == "stopped":
                os.kill(extra.process.pid, signal.SIGSTOP)
            else:
                extra.kill9()
            try:                                # a stopped S never answers: its timeout lapses
                stuck = coreserve(world, *args, "--timeout", "5", "--recover", "--json")
            finally:
                if how == "stopped":
                    os.kill(extra.process.pid, signal.SIGCONT)
                else:
                    extra.start()
                    wait_for_api(url)
            if decided:
                assert stuck.returncode == 3 and "run plus_coreserve --recover" in stuck.stderr
                back = coreserve(world, *args, "--recover", "--json")
                assert back.returncode == 0 and json.loads(back.stdout)["state"] == "committed"
                assert [ar["pending"] for ar in extra.status() if ar["owner"] == USER] == [None]
            else:
                assert stuck.returncode == 0 and json.loads(stuck.stdout)["state"] == "aborted"
                assert [ar for ar in daemons["A"][0].status() if ar["owner"] == USER] == []
                assert extra.status() != []                       # until its commit_timeout
                hour = extra.conf.read_text()
                extra.reread(hour.replace("commit_timeout: 3600", "commit_timeout: 1"),
                             "commit_timeout 3600 -> 1")
                deadline = time.monotonic() + 120
                while extra.status() and time.monotonic() < deadline:
                    time.sleep(0.5)
                assert extra.status() == []
                extra.reread(hour, "commit_timeout 1 -> 3600")
            clean(world)
            extra.run("root", "plus_destroy", "-o", USER)
    finally:
        extra.cleanup()


def test_a_co_allocation_is_moved_cancelled_and_shown_as_one(world):
    made = coreserve(world, "-D", "1h", "-s", "now+20h", "--json", "--site", "A:nodes=1",
                     "--site", "C:nodes=3")
    coalloc = json.loads(made.stdout)
    later = coalloc["start"] + 2 * HOUR
    daemons, folder = world
    common = ("--sites", str(folder / "sites.yaml"), "--log", str(folder / "coalloc.db"))
    at = time.strftime("%Y%m%d%H%M.%S", time.localtime(later))
    moved = daemons["A"][0].run(USER, "plus_comodify", *common, "-s", at, "--json", coalloc["id"])
    assert moved.returncode == 0, moved.stderr
    assert json.loads(moved.stdout)["start"] == later
    for ars in (found for name, found in held(world, coalloc["id"]).items() if name in "AC"):
        assert [(ar["start"], ar["pending"]) for ar in ars] == [(later, None)]
    busy = daemons["C"][0].reserve("plusu2", "-s", time.strftime(
        "%Y%m%d%H%M", time.localtime(later + 4 * HOUR)), "-D", "2h", "-n", "5")
    refused = daemons["A"][0].run(USER, "plus_comodify", *common, "-s", time.strftime(
        "%Y%m%d%H%M", time.localtime(later + 4 * HOUR)), coalloc["id"])
    assert refused.returncode == 1 and "stays where it was" in refused.stderr
    for ars in (found for name, found in held(world, coalloc["id"]).items() if name in "AC"):
        assert [(ar["start"], ar["pending"]) for ar in ars] == [(later, None)]
    status = daemons["A"][0].run(USER, "plus_costatus", *common, coalloc["id"])
    assert status.returncode == 0 and "is committed" in status.stdout and "now state w" in status.stdout
    assert "its ResKeys were shown once, by the plus_coreserve that made it" in status.stdout
    cancelled = daemons["A"][0].run(USER, "plus_cocancel", *common, "--json", coalloc["id"])
    assert json.loads(cancelled.stdout)["state"] == "cancelled"
    shown_again = [daemons["A"][0].run(USER, "plus_costatus", *common, *json_flag, *coalloc_id)
                   for json_flag in ((), ("--json",)) for coalloc_id in ((), (coalloc["id"],))]
    for output in [moved.stdout, status.stdout, cancelled.stdout,
                   *(result.stdout for result in shown_again)]:
        assert not any(site["reskey"] in output for site in coalloc["sites"].values()), output
    assert {s["state"] for s in json.loads(cancelled.stdout)["sites"].values()} == {"cancelled"}
    listed = daemons["A"][0].run(USER, "plus_costatus", *common)
    assert any(line.split()[:2] == [coalloc["id"], "cancelled"] for line in listed.stdout.splitlines())
    for ars in held(world, coalloc["id"]).values():
        assert all(ar["state"] == "d" for ar in ars)
    daemons["C"][0].ok("root", "plus_destroy", "-r", str(busy["id"]))
    clean(world)


def test_a_site_whose_clock_is_ahead_gets_the_same_window(world):
    """Site F's clock runs 10 minutes ahead (libfaketime, preloaded: the
    faketime wrapper's semaphores outlive a killed daemon, and one left by
    an earlier process of the same pid refuses the next): the common start
    comes from every site's own RESQUERY, and lies the skew ahead of F's
    clock (its answers' Date), so F never sees it in the past and both
    sites hold the same epoch window."""
    daemons, folder = world
    port = free_port()
    ahead = Daemon(f"http: {{address: '127.0.0.1:{port}'}}\n")
    (library,) = glob.glob("/usr/lib/*/faketime/libfaketime.so.1")
    ahead.start(wrapper=("env", f"LD_PRELOAD={library}", "FAKETIME=+600s"))
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for_api(url)
        sites = with_site(folder, "F", ahead, url)
        result = coreserve(world, "--sites", str(sites), "-D", "1h", "--json",
                           "--site", "A:nodes=1", "--site", "F:nodes=1")
        assert result.returncode == 0, result.stderr
        coalloc = json.loads(result.stdout)
        assert coalloc["start"] >= time.time() + 590                 # F's now, not ours
        (mine,) = [ar for ar in ahead.status() if ar["owner"] == USER]
        assert (mine["start"], mine["pending"]) == (coalloc["start"], None)
        clean(world)
    finally:
        ahead.cleanup()


@contextlib.contextmanager
def hostile_site(answer: Callable[[http.server.BaseHTTPRequestHandler, threading.Event], None]):
    """A server posing as a site, its URL: ``answer(handler, stopping)``
    answers each request (``handler.body`` holds what was sent)."""
    stopping = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self) -> None:
            self.body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                answer(self, stopping)
            except OSError:
                pass                                # the coordinator hung up

        do_GET = do_POST = do_PATCH = answer

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stopping.set()
        server.shutdown()
        server.server_close()


def reply(handler, status: int, body: bytes, headers: dict | None = None) -> None:
    handler.send_response(status)
    for name, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def html(handler, _) -> None:
    """200 and not JSON, ended by closing the connection (HTTP/1.0, no length)."""
    handler.send_response(200)
    handler.end_headers()
    handler.wfile.write(b"<html>hello</html>")


def unreachable() -> str:
    """A loopback URL where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.mark.parametrize("fault, kind", [("token", "401"), ("garbage", "is not the API's JSON"),
                                         ("stopped", "no answer within 1 s"),
                                         ("down", "unreachable")])
def test_a_faulty_site_leaves_nothing_anywhere(world, fault, kind):
    daemons, folder = world
    sites = (folder / "sites.yaml").read_text()
    with contextlib.ExitStack() as undo:
        if fault == "token":
            secret_file(folder / "bad.token", "not-a-token", USER)
            sites = sites.replace(str(folder / "B.token"), str(folder / "bad.token"))
        elif fault == "garbage":
            sites = sites.replace(daemons["B"][1], undo.enter_context(hostile_site(html)))
        elif fault == "down":
            sites = sites.replace(daemons["B"][1], unreachable())
        elif fault == "stopped":
            os.kill(daemons["B"][0].process.pid, signal.SIGSTOP)
            undo.callback(os.kill, daemons["B"][0].process.pid, signal.SIGCONT)
        (folder / "faulty.yaml").write_text(sites)
        result = coreserve(world, "--sites", str(folder / "faulty.yaml"), "--timeout", "1",
                           "-D", "1h", "-s", "now+30h", "--site", "A:nodes=1", "--site", "B:nodes=1")
    assert result.returncode == 3 and "site B: " in result.stderr and kind in result.stderr, \
        result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert [ar for ar in daemons["A"][0].status() if ar["owner"] == USER] == []
    deadline = time.monotonic() + 20
    while daemons["B"][0].status() and time.monotonic() < deadline:   # a stopped site catches up
        time.sleep(0.5)
    clean(world)
    assert daemons["B"][0].status() == []


def test_bad_sites_files_are_one_line(world):
    _, folder = world
    token_file = secret_file(folder / "T.token", "a-token", USER)
    for text, message in (("sites: 3\n", "needs a 'sites:' mapping"),
                          ("sites: {A: {url: 'ftp://x', token_file: TOKEN}}\n",
                           "url 'ftp://x' must be http:// or https:// with a host"),
                          ("sites: {A: {url: 'https://x', token_file: /nonexistent}}\n",
                           "cannot read token_file /nonexistent"),
                          ("sites: {A: {url: 'https://x', token_file: TOKEN, pw: 1}}\n",
                           "unknown key 'pw'"),
                          ("[unclosed\n", "not valid YAML: expected ',' or ']'")):
        (folder / "bad.yaml").write_text(text.replace("TOKEN", token_file))
        os.chmod(folder / "bad.yaml", 0o644)
        result = coreserve(world, "--sites", str(folder / "bad.yaml"), "-D", "1h",
                           "--site", "A:nodes=1")
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert len(result.stderr.splitlines()) == 1


def test_a_sites_file_that_would_give_the_token_away_is_refused(tmp_path):
    """A token file others may read or change (refused as ssh refuses such
    a private key), one that is not a token line, plain http:// off this
    host, a CA file missing or not PEM: each is named, with what is wrong."""
    token_file = secret_file(tmp_path / "T.token", "a-token", USER)
    opened = {}
    for mode in (0o644, 0o620):                     # world-readable, group-writable
        opened[mode] = secret_file(tmp_path / f"open-{mode:o}.token", "a-token", USER)
        os.chmod(opened[mode], mode)
    two_lines = secret_file(tmp_path / "two-lines.token", "a-token\nX-Injected: yes", USER)
    for entry, message in (
            *(({"url": "https://x", "token_file": path},
               f"token_file {shown(path)}: the token is open to others (mode {mode:04o}); "
               f"like ssh with a private key, it is used only when its owner alone may read "
               f"it: chmod 600 {shown(path)}") for mode, path in opened.items()),
            ({"url": "https://x", "token_file": two_lines},
             f"token_file {shown(two_lines)} holds no token (one line of printable characters"),
            ({"url": "http://a.example.org:6830", "token_file": token_file},
             "url 'http://a.example.org:6830' would send the token in clear off this host; "
             "accepted: https://, or http:// to loopback (127.0.0.0/8, ::1, localhost)"),
            ({"url": "https://x", "token_file": token_file, "ca_cert": "/nonexistent"},
             "cannot read ca_cert /nonexistent (No such file or directory)"),
            ({"url": "https://x", "token_file": token_file, "ca_cert": token_file},
             f"ca_cert {shown(token_file)} holds no PEM certificate")):
        (tmp_path / "sites.yaml").write_text(json.dumps({"sites": {"A": entry}}))
        with pytest.raises(RequestError) as refused:
            sites_file.load(str(tmp_path / "sites.yaml"))
        assert str(refused.value).startswith(f"sites file, site A: {message}"), refused.value
    for url in ("http://127.0.0.1:6830", "http://[::1]:6830", "http://localhost:6830"):
        (tmp_path / "sites.yaml").write_text(json.dumps(
            {"sites": {"A": {"url": url, "token_file": token_file}}}))
        assert sites_file.load(str(tmp_path / "sites.yaml"))["A"].token == "a-token"


def test_a_log_that_cannot_be_used_is_named_with_what_is_wrong(world):
    daemons, folder = world
    foreign = folder / "foreign.db"
    secret_file(foreign, "", "plusu2")
    secret_file(folder / "text.db", "not a database", USER)
    for log, message in ((foreign, f"--log: {foreign}: Permission denied"),
                         ("/root/coalloc.db", "--log: /root/coalloc.db: Permission denied"),
                         (folder / "text.db", f"--log: the store sqlite:///{folder}/text.db failed "
                                              "(file is not a database)")):
        result = daemons["A"][0].run(USER, "plus_costatus", "--sites", str(folder / "sites.yaml"),
                                     "--log", str(log))
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert len(result.stderr.splitlines()) == 1


def test_when_a_site_loses_the_common_start_the_next_one_is_found(world, tmp_path):
    """The library in this process: once the common start is chosen (and
    logged), someone takes it at site B; B refuses it, the coordinator
    aborts what it holds, queries again and commits at the next one."""
    daemons, folder = world
    sites = {name: Site(name, url, (folder / f"{name}.token").read_text().strip(), USER)
             for name, (_, url) in daemons.items() if name in "AB"}
    taken = []

    def take(step: int) -> None:
        if step == 2 and not taken:                   # the first start is logged, not prepared
            start = log.load(log.all()[-1]).start
            taken.append(daemons["B"][0].reserve("plusu2", "-s", time.strftime(
                "%Y%m%d%H%M.%S", time.localtime(start)), "-D", "30m", "-n", "5"))

    log = Log(f"sqlite:///{tmp_path}/coalloc.db")
    coordinator = Coordinator(sites, log, on_step=take)
    earliest = (int(time.time()) // HOUR + 40) * HOUR
    coalloc = coordinator.reserve(HOUR, earliest, earliest + 6 * HOUR,
                                  {"A": "nodes=1", "B": "nodes=1"})
    assert coalloc.state == "committed" and coalloc.attempt == 2
    assert coalloc.start == taken[0]["end"]                       # right after what was taken
    for name, ars in held(world, coalloc.id).items():
        if name in "AB":
            assert [(ar["state"], ar["pending"], ar["start"]) for ar in ars] == \
                [("w", None, coalloc.start)]                # the first attempt's part is gone
    log.close()
    daemons["B"][0].ok("root", "plus_destroy", "-r", str(taken[0]["id"]))
    clean(world)


def free_everywhere(handler) -> bool:
    """Answer a RESQUERY as a site where every start is free; False for
    any other request."""
    if handler.path != "/ggf/resquery":
        return False
    earliest, latest = map(int, json.loads(handler.body)["TimeSpec"].split(","))
    reply(handler, 200, json.dumps({"ranges": [{"STime": earliest, "EndSTime": latest}]}).encode())
    return True


def drip(handler, stopping: threading.Event) -> None:
    """An answer one byte every 0.2 s, for ever: each read gets a byte well
    within the timeout, the answer never ends."""
    if not free_everywhere(handler):
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
        while not stopping.wait(0.2):
            handler.wfile.write(b" ")
            handler.wfile.flush()


def nested(handler, _) -> None:
    if not free_everywhere(handler):
        reply(handler, 200, b"[" * 100_000 + b"]" * 100_000)


def many_ranges(handler, _) -> None:
    earliest, _ = map(int, json.loads(handler.body)["TimeSpec"].split(","))
    reply(handler, 200, json.dumps({"ranges": [{"STime": earliest + 10 * i, "EndSTime":
                                                earliest + 10 * i + 5}
                                               for i in range(100_001)]}).encode())


def far_ahead(handler, _) -> None:
    """A site whose clock (its answers' Date) runs two hours ahead."""
    handler.date_time_string = lambda *_: email.utils.formatdate(time.time() + 7200, usegmt=True)
    free_everywhere(handler)


@pytest.mark.parametrize("behaviour, message", [
    (drip, "site H: no answer within 2 s"),
    (far_ahead, "s ahead of ours (at most 3600 s are taken): set its clock right"),
    (nested, "site H: answered something that is not the API's JSON (nested too deeply)"),
    (many_ranges, "site H: answered RESQUERY with 100001 ranges; at most 100000 are taken"),
])
def test_a_hostile_site_is_cut_off_and_the_honest_sites_parts_aborted(world, behaviour, message):
    """Site H answers RESQUERY well, then drips its answer to the prepare
    or answers it nested 100,000 deep (or answers RESQUERY with too many
    ranges): the coordinator gives up on H within --timeout for each whole
    call, and A's pending part is aborted."""
    daemons, folder = world
    with hostile_site(behaviour) as url:
        sites = with_site(folder, "H", daemons["A"][0], url)
        result = coreserve(world, "--sites", str(sites), "--timeout", "2", "-D", "1h",
                           "-s", "now+60h", "--site", "A:nodes=1", "--site", "H:nodes=1")
    assert result.returncode == 3 and message in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert [ar for ar in daemons["A"][0].status() if ar["owner"] == USER] == []


def test_a_redirect_is_not_followed_and_the_token_stays_with_the_site(world):
    daemons, folder = world
    stolen = []

    def thief(handler, _) -> None:
        stolen.append(handler.headers.get("Authorization"))
        reply(handler, 200, b"{}")

    with hostile_site(thief) as elsewhere:
        def redirect(handler, _) -> None:
            if not free_everywhere(handler):
                reply(handler, 302, b"", {"Location": elsewhere + handler.path})
        with hostile_site(redirect) as url:
            sites = with_site(folder, "H", daemons["A"][0], url)
            result = coreserve(world, "--sites", str(sites), "--timeout", "2", "-D", "1h",
                               "-s", "now+62h", "--site", "A:nodes=1", "--site", "H:nodes=1")
    assert result.returncode == 3, result.stderr
    assert f"site H: answered 302 redirecting to '{elsewhere}/ggf/setres'; no redirect is " \
           "followed" in result.stderr
    assert stolen == []
    assert [ar for ar in daemons["A"][0].status() if ar["owner"] == USER] == []


@pytest.mark.parametrize("finish", ["recover", "retry"])
def test_a_cancel_that_cannot_reach_a_site_says_which_and_is_finished_later(world, finish):
    """B is down when the co-allocation is cancelled: plus_cocancel cancels
    A's part, exits 3 naming B, and the decision stays in the log, so that
    plus_coreserve --recover (or plus_cocancel again) cancels B's part once
    B answers."""
    daemons, folder = world
    made = coreserve(world, "-D", "1h", "-s", "now+64h", "--json", "--site", "A:nodes=1",
                     "--site", "B:nodes=1")
    coalloc_id = json.loads(made.stdout)["id"]
    (folder / "b-down.yaml").write_text((folder / "sites.yaml").read_text().replace(
        daemons["B"][1], unreachable()))
    log = ("--log", str(folder / "coalloc.db"))
    missed = daemons["A"][0].run(USER, "plus_cocancel", "--sites", str(folder / "b-down.yaml"),
                                 *log, coalloc_id)
    assert missed.returncode == 3 and missed.stdout == "", missed.stderr
    assert f"co-allocation {coalloc_id} is not cancelled at B, where its part stays booked " \
           "(site B: unreachable" in missed.stderr
    assert {name: [ar["state"] for ar in ars] for name, ars in held(world, coalloc_id).items()} \
        == {"A": ["d"], "B": ["w"], "C": []}
    if finish == "recover":
        finished = coreserve(world, "--recover", "--json")
    else:
        finished = daemons["A"][0].run(USER, "plus_cocancel", "--sites",
                                       str(folder / "sites.yaml"), *log, "--json", coalloc_id)
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout)["state"] == "cancelled"
    assert {name: [ar["state"] for ar in ars] for name, ars in held(world, coalloc_id).items()} \
        == {"A": ["d"], "B": ["d"], "C": []}
    clean(world)


def test_intersect_merges_each_sites_ranges_and_scales_linearly():
    """Ranges in any order, overlapping within a site, are merged first;
    two sites of 70,000 ranges each are intersected in well under a second
    (pairing every range with every other took minutes), in a process of
    its own so that a slow one is stopped."""
    assert intersect([[(20, 30), (0, 10), (5, 15)], [(12, 25)]]) == [(12, 15), (20, 25)]
    assert intersect([[(5, 15), (0, 10)], [(0, 20)]]) == [(0, 15)]
    assert intersect([[(0, 4), (5, 9)], [(3, 6)]]) == [(3, 6)]
    assert intersect([[(0, 10)], [(11, 20)]]) == []
    probe = ("import time\nfrom overlay.coalloc.coordinator import intersect\n"
             "a = [(10 * i, 10 * i + 5) for i in range(70_000)]\n"
             "b = [(10 * i + 3, 10 * i + 8) for i in range(70_000)]\n"
             "start = time.perf_counter()\nfound = intersect([a, b])\n"
             "print(len(found), time.perf_counter() - start)\n")
    result = subprocess.run([str(BIN / "python"), "-c", probe], capture_output=True, text=True,
                            timeout=30)
    count, seconds = result.stdout.split()
    assert int(count) == 70_000 and float(seconds) < 5, result.stderr
