"""Nodes cleared ahead (issue 33): at a lead before an AR's start
(--clear-notice, else plus.yaml's clear_notice:) the owners of jobs still
running on its nodes past the start are told, a reservation.nodes_busy
event naming the jobs and a mail to each owner, once across a restart;
jobs that end before the start, or run elsewhere, are not named; bad leads
are refused storing nothing. The manager and lifecycle of tests/test_mail.py
with a clock moved by hand, the running jobs the backend reports set by the
test, a real SMTP server."""

from __future__ import annotations

import json

import pytest

from overlay.contract.backend import Job
from overlay.daemon import config as config_module
from overlay.events.catalog import NODES_BUSY
from overlay.language.leads import LeadError
from overlay.persistence.events import EventLog
from overlay.wire import codec
from test_mail import HOUR, T0, Env, smtp, text  # noqa: F401 (smtp: a fixture)
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
