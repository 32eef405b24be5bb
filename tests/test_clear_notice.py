"""Nodes cleared ahead (issue 33): at a lead before an AR's start
(--clear-notice, else plus.yaml's clear_notice:) the owners of jobs still
running on its nodes past the start are told, a reservation.nodes_busy
event naming the jobs and a mail to each owner, once across a restart;
jobs that end before the start, or run elsewhere, are not named; bad leads
are refused storing nothing; plus_modify --clear-notice (and the HTTP
API's modify body's clear_notice) moves the leads, told at the new ones
and never twice at one. The manager and lifecycle of tests/test_mail.py
with a clock moved by hand, the running jobs the backend reports set by the
test, a real SMTP server."""

from __future__ import annotations

import json
import re

import pytest

from daemon_harness import Daemon
from overlay.cli import modify as modify_command
from overlay.contract.backend import Job
from overlay.daemon import config as config_module
from overlay.daemon.services.service import Service
from overlay.events.catalog import NODES_BUSY
from overlay.language.leads import LeadError
from overlay.language.request import RequestError
from overlay.persistence.events import EventLog
from overlay.wire import codec
from overlay.wire.codec import BadArguments
from test_mail import ALICE, HOUR, T0, Env, smtp, text  # noqa: F401 (smtp: a fixture)
from test_notice import mail_settings

MINUTE = 60


@pytest.fixture
def world(tmp_path, smtp):  # noqa: F811
    """Makes Envs on one store, whose backend reports ``jobs``: a second is the daemon restarted."""
    made: list[Env] = []

    def make(jobs: list[Job], settings: str = "", now: int = T0) -> Env:
        if made:
            made[-1].close()
        made.append(Env(tmp_path, mail_settings(smtp), settings))
        made[-1].now = now
        made[-1].manager.backend.running_jobs = lambda: list(jobs)
        return made[-1]
    yield make
    if made:
        made[-1].close()


def busy_events(env) -> list[dict]:
    return [json.loads(event.data) for event in EventLog(env.store).after(0, 100)
            if event.type == NODES_BUSY]


def test_owners_of_jobs_in_the_way_are_told_once_across_a_restart(world, smtp):  # noqa: F811
    start = T0 + 2 * HOUR
    jobs = [Job("41", "bob", ("n01",), None, start + HOUR, T0),      # overruns the start
            Job("42", "carol", ("n01",), None, start - MINUTE, T0),  # ends before it
            Job("43", "dave", ("n02",), None, None, T0),             # elsewhere
            Job("44", "plusu1", ("n01",), None, None, T0)]           # no limit at all
    env = world(jobs)
    ar = env.reserve(start=start, name="big", clear_notice=(HOUR,))
    assert ar.node_names == ["n01"]
    assert env.lifecycle.next_due() == start - HOUR
    env.tick_at(start - HOUR - 1)
    assert busy_events(env) == []
    env.tick_at(start - HOUR)
    [told] = busy_events(env)
    assert told["lead"] == HOUR and told["reservation"]["id"] == ar.id
    assert [(job["id"], job["owner"], job["nodes"]) for job in told["jobs"]] == [
        ("41", "bob", ["n01"]), ("44", "plusu1", ["n01"])]
    mails = smtp.mails(2)
    assert sorted(mail["To"] for mail in mails) == ["bob", "plusu1"]
    bobs = next(mail for mail in mails if mail["To"] == "bob")
    assert bobs["Subject"] == f"Advance Reservation {ar.id} (big) Nodes busy in 1 hour"
    assert "job 41 on n01" in text(bobs) and "job 44" not in text(bobs)
    env.tick_at(start - HOUR + 1)

    env = world(jobs, now=start - HOUR + 2)                # the restart
    env.tick_at(start - HOUR + 2)
    env.tick_at(start - 1)
    env.close()
    assert len(busy_events(env)) == 1 and len(smtp.envelopes) == 2   # none repeated


def test_the_sites_lead_serves_ars_without_their_own_and_no_jobs_no_event(world, smtp):  # noqa: F811
    start = T0 + 2 * HOUR
    env = world([Job("41", "bob", ("n01",), None, start + HOUR, T0)],
                settings="clear_notice: [1800]\n")
    ar = env.reserve(start=start)
    quiet = env.reserve(start=start, clear_notice=())         # none for this one
    assert (ar.node_names, quiet.node_names) == (["n01"], ["n02"])
    env.tick_at(start - 30 * MINUTE)
    assert [told["reservation"]["id"] for told in busy_events(env)] == [ar.id]
    env.manager.backend.running_jobs = lambda: []
    late = env.reserve(start=start + HOUR)                     # its lead comes with no job
    env.tick_at(start + 30 * MINUTE)
    assert [told["reservation"]["id"] for told in busy_events(env)] == [ar.id]
    assert env.manager.ars[late.id].node_names == ["n01"]
    assert len(smtp.mails(1)) == 1


def test_bad_leads_are_refused_naming_what_is_accepted(tmp_path):
    for value in (["1h"], [0], [31 * 86400], list(range(1, 6)), "x"):
        with pytest.raises(LeadError, match="--clear-notice: .*accepted: LEAD"):
            codec.reserve_request(codec.Arguments("reserve", {
                "start": T0 + HOUR, "end": T0 + 2 * HOUR, "nodes": 1,
                "clear_notice": value if isinstance(value, list) else [value]}, T0))
    conf = tmp_path / "plus.yaml"
    conf.write_text("clear_notice: [0]\n")
    with pytest.raises(config_module.ConfigError, match="clear_notice: the lead 0 s is out of range"):
        config_module.load(str(conf))


def test_a_modify_moves_the_leads_told_at_the_new_ones_and_never_twice(world, smtp):  # noqa: F811
    start = T0 + 3 * HOUR
    env = world([Job("41", "bob", ("n01",), None, start + HOUR, T0)])
    ar = env.reserve(start=start, clear_notice=(2 * HOUR,))
    service = Service(env.manager, lambda ars: None, lambda: None)
    env.now = T0 + 10 * MINUTE
    service.handle(ALICE, "modify", {"id": ar.id, "clear_notice": [HOUR]})
    assert env.store.get(ar.id).request.clear_notice == (HOUR,)
    env.tick_at(T0 + 10 * MINUTE)
    assert env.lifecycle.next_due() == start - HOUR
    env.tick_at(start - 2 * HOUR)                       # the old lead: no longer told
    assert busy_events(env) == []
    env.tick_at(start - HOUR)
    assert [told["lead"] for told in busy_events(env)] == [HOUR]
    env.now = start - HOUR + MINUTE                     # the lead told kept, one more added
    service.handle(ALICE, "modify", {"id": ar.id, "clear_notice": [HOUR, 10 * MINUTE]})
    env.tick_at(start - HOUR + MINUTE)
    assert [told["lead"] for told in busy_events(env)] == [HOUR]
    env.tick_at(start - 10 * MINUTE)
    env.tick_at(start - 1)
    env.close()
    assert [told["lead"] for told in busy_events(env)] == [HOUR, 10 * MINUTE]
    assert [mail["Subject"] for mail in smtp.mails(2)] == [
        f"Advance Reservation {ar.id} (none) Nodes busy in 1 hour",
        f"Advance Reservation {ar.id} (none) Nodes busy in 10 minutes"]


@pytest.mark.parametrize(("value", "message"), [
    ([0], "--clear-notice: the lead 0 s is out of range; accepted: LEAD"),
    ([31 * 86400], "--clear-notice: the lead 2678400 s is out of range"),
    ([60, 120, 180, 240, 300], "--clear-notice: 5 leads; accepted: LEAD"),
    (["1h"], "--clear-notice: expected a list of whole seconds, got ['1h']"),
    ("1h", "'clear_notice' must be a list of whole seconds")])
def test_a_bad_lead_in_a_modify_is_refused_and_stores_nothing(world, value, message):
    env = world([])
    ar = env.reserve(clear_notice=(HOUR,))
    service = Service(env.manager, lambda ars: None, lambda: None)
    with pytest.raises((RequestError, BadArguments, LeadError), match=re.escape(message)):
        service.handle(ALICE, "modify", {"id": ar.id, "clear_notice": value})
    assert env.store.get(ar.id).request == ar.request
    env.close()


def test_plus_modify_reads_its_clear_notice_as_plus_reserve_does(capsys):
    with pytest.raises(SystemExit) as refused:
        modify_command.main(["-r", "7", "--clear-notice", "1h,0"])
    assert refused.value.code == 2
    assert ("plus_modify: --clear-notice: the lead 0 s is out of range; accepted: LEAD"
            in capsys.readouterr().err)
    with pytest.raises(SystemExit):
        modify_command.main(["-r", "7"])
    assert "--clear-notice" in capsys.readouterr().err          # named among what it changes


def test_a_real_daemon_changes_an_ars_clear_notice_by_command():
    daemon = Daemon().start()
    try:
        made = daemon.reserve("plusu1", "-s", "now+2h", "-D", "1h", "-n", "1",
                              "--clear-notice", "1h")
        ar_id = str(made["id"])
        out = daemon.ok("plusu1", "plus_modify", "-r", ar_id, "--clear-notice", "30m,5m")
        assert out.strip() == f"Advance reservation {ar_id} has been modified"
        assert daemon.status("-r", ar_id)[0]["request"]["clear_notice"] == [1800, 300]
        refused = daemon.run("plusu1", "plus_modify", "-r", ar_id, "--clear-notice", "soon")
        assert refused.returncode == 2 and "accepted: LEAD" in refused.stderr
        daemon.ok("plusu1", "plus_modify", "-r", ar_id, "--clear-notice", "none")
        assert daemon.status("-r", ar_id)[0]["request"]["clear_notice"] == []
    finally:
        daemon.stop()
        daemon.cleanup()
