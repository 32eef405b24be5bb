"""Notices before an AR's start and end (issue 33): each lead's mail and
event once, across a restart; none for a lead already past when the
window was set; -m n mails nothing but the events are told; the site's
defaults; bad leads refused saying what is accepted, storing nothing.

The manager and lifecycle run in this process with a clock moved by hand
(as tests/test_mail.py), mailing a real SMTP server (aiosmtpd); the last
test runs a real plus_scheduler and the installed commands."""

from __future__ import annotations

import json
import re
import time

import pytest

from daemon_harness import Daemon
from overlay.daemon import config as config_module
from overlay.daemon.services.service import Service
from overlay.events.catalog import ENDING_SOON, STARTING_SOON
from overlay.language.leads import LeadError, parse_leads
from overlay.language.model import State
from overlay.language.request import RequestError
from overlay.persistence.events import EventLog
from overlay.wire.codec import BadArguments
from test_mail import ALICE, HOUR, T0, Env, smtp  # noqa: F401 (smtp: a fixture)

BERLIN = "timezone: Europe/Berlin\n"
MINUTE = 60


def mail_settings(inbox) -> str:
    return f"host: 127.0.0.1\nport: {inbox.port}\nsender: plus@cluster.test\ntimeout: 5\n"


def told(store, ar_id: int) -> list[tuple[str, int, bool]]:
    """The AR's notice events: type, lead, whether its users were told."""
    found = []
    for event in EventLog(store).after(0, 1000):
        data = json.loads(event.data)
        if event.ar_id == ar_id and event.type in (STARTING_SOON, ENDING_SOON):
            found.append((event.type, data["lead"], data.get("notice", False)))
    return found


@pytest.fixture
def world(tmp_path, smtp):  # noqa: F811
    """Makes Envs on one store: a second is the daemon restarted."""
    made: list[Env] = []

    def make(settings: str = BERLIN, now: int = T0) -> Env:
        if made:
            made[-1].close()
        made.append(Env(tmp_path, mail_settings(smtp), settings))
        made[-1].now = now
        return made[-1]
    yield make
    if made:
        made[-1].close()


def test_each_lead_mails_and_tells_once_and_a_restart_between_leads_neither_repeats_nor_loses(
        world, smtp):  # noqa: F811
    env = world()
    ar = env.reserve(start=T0 + 2 * HOUR, hours=2, name="dft", users=("bob",),
                     notify_start=(HOUR, 10 * MINUTE), notify_end=(30 * MINUTE,))
    start, end = ar.start, ar.end
    assert env.lifecycle.next_due() == start - HOUR
    env.tick_at(start - HOUR)
    [first] = smtp.mails(1)
    assert first["Subject"] == f"Advance Reservation {ar.id} (dft) Starts in 1 hour"
    assert first["To"] == "alice, bob"                 # the owner and the AR's users
    body = first.get_payload()
    # 1_800_007_200 is 2027-01-15 10:00 UTC: 11:00 in Berlin
    assert f"AR {ar.id} starts in 1 hour, at 2027-01-15 11:00:00 CET" in body
    assert "end time   = 2027-01-15 13:00:00 CET" in body and "Times are in Europe/Berlin." in body
    assert f"plus_qsub -ar {ar.id} job.sh" in body     # the native backend's submit line
    assert f"plus_cancel -r {ar.id}" in body and f"plus_modify -r {ar.id} -s" in body
    env.tick_at(start - HOUR + 1)

    env = world(now=start - HOUR + 2)                  # the restart, between two leads
    env.tick_at(start - HOUR + 2)
    env.tick_at(start - 10 * MINUTE)
    env.tick_at(start)
    env.tick_at(end - 30 * MINUTE)
    env.tick_at(end)
    env.close()
    subjects = [mail["Subject"].rsplit(") ", 1)[1] for mail in smtp.mails(3)]
    assert subjects == ["Starts in 1 hour", "Starts in 10 minutes", "Ends in 30 minutes"]
    assert len(smtp.envelopes) == 3                    # none repeated
    ending = smtp.mails(3)[2].get_payload()
    assert f"plus_modify -r {ar.id} -e 2027-01-15T14:00+01:00" in ending   # an hour more
    # the site's ending_soon leads are events only, for streams; those after the last
    # tick before the end fell due with the end, and are not told
    assert told(env.store, ar.id) == [
        (STARTING_SOON, HOUR, True), (STARTING_SOON, 10 * MINUTE, True),
        (ENDING_SOON, HOUR, False), (ENDING_SOON, 30 * MINUTE, True)]


def test_a_lead_already_past_when_the_window_is_set_is_not_given(world, smtp):  # noqa: F811
    env = world()
    soon = env.reserve(start=T0 + 30 * MINUTE, notify_start=(HOUR, 10 * MINUTE),
                       notify_end=(2 * HOUR,))
    moved = env.reserve(start=T0 + 3 * HOUR, notify_start=(HOUR,))
    env.tick_at(T0 + 20 * MINUTE)
    env.tick_at(soon.start)
    # 1 h before the start was past when it was made; 2 h before the end lies before the
    # start; the site's 1 h ending-soon lead is told (to streams) at the start
    assert told(env.store, soon.id) == [(STARTING_SOON, 10 * MINUTE, True),
                                        (ENDING_SOON, HOUR, False)]
    env.manager.modify(ALICE, moved.id, T0 + 90 * MINUTE, None, None, None, None)
    env.tick_at(T0 + 30 * MINUTE)        # its lead falls the second it moved: given
    env.now = T0 + 40 * MINUTE
    env.manager.modify(ALICE, moved.id, T0 + 80 * MINUTE, None, None, None, None)
    env.tick_at(T0 + 80 * MINUTE)        # the new start's lead was past at the move: none
    assert env.manager.ars[moved.id].state == State.RUNNING
    assert [t for t in told(env.store, moved.id) if t[0] == STARTING_SOON] == \
        [(STARTING_SOON, HOUR, True)]
    env.close()
    assert len(smtp.envelopes) == 2


def test_m_n_mails_nothing_but_the_events_are_told(world, smtp):  # noqa: F811
    env = world()
    quiet = env.reserve(mail_options="n", notify_start=(10 * MINUTE,), notify_end=(10 * MINUTE,))
    loud = env.reserve(mail_options="", notify_start=(10 * MINUTE,), notify_end=(10 * MINUTE,))
    for now in (quiet.start - 10 * MINUTE, quiet.start, quiet.end - 10 * MINUTE, quiet.end):
        env.tick_at(now)
    env.close()
    for ar in (quiet, loud):
        assert [(kind, lead) for kind, lead, asked in told(env.store, ar.id) if asked] == [
            (STARTING_SOON, 10 * MINUTE), (ENDING_SOON, 10 * MINUTE)]
    assert {mail["Subject"].split()[2] for mail in smtp.mails(2)} == {str(loud.id)}
    assert len(smtp.envelopes) == 2


def test_the_sites_defaults_and_none(world, smtp):  # noqa: F811
    env = world(BERLIN + "notice: {start: [1800], end: [600]}\n")
    default = env.reserve()
    none = env.reserve(notify_start=(), notify_end=())
    for now in (default.start - 1800, default.start, default.end - 600, default.end):
        env.tick_at(now)
    env.close()
    assert [(k, lead) for k, lead, asked in told(env.store, default.id) if asked] == [
        (STARTING_SOON, 1800), (ENDING_SOON, 600)]
    assert [t for t in told(env.store, none.id) if t[2]] == []
    assert len(smtp.envelopes) == 2


@pytest.mark.parametrize(("args", "message"), [
    ({"notify_start": [0]}, "--notify-start: the lead 0 s is out of range; accepted: LEAD"),
    ({"notify_end": [2_592_001]}, "--notify-end: the lead 2592001 s is out of range"),
    ({"notify_start": [60, 120, 180, 240, 300]}, "--notify-start: 5 leads; accepted: LEAD"),
    ({"notify_end": ["1h"]}, "--notify-end: expected a list of whole seconds, got ['1h']"),
    ({"notify_end": "1h"}, "'notify_end' must be a list of whole seconds"),
    ({"notify_start": [True]}, "expected a list of whole seconds"),
])
def test_bad_leads_are_refused_saying_what_is_accepted_and_store_nothing(world, args, message):
    env = world()
    service = Service(env.manager, lambda ars: None, lambda: None)
    request = {"start": T0 + HOUR, "end": T0 + 2 * HOUR, "nodes": 1, **args}
    with pytest.raises((RequestError, BadArguments), match=re.escape(message)):
        service.handle(ALICE, "reserve", request)
    assert env.store.load_all() == []
    ar = env.reserve()
    with pytest.raises((RequestError, BadArguments), match=re.escape(message)):
        service.handle(ALICE, "modify", {"id": ar.id, **args})
    assert env.store.get(ar.id).request == ar.request


@pytest.mark.parametrize(("text", "message"), [
    ("0", "the lead 0 s is out of range"),
    ("5x", "invalid lead '5x'"), ("1h,", "invalid lead ''"), ("1,2,3,4,5", "5 leads"),
    ("31d", "the lead 2678400 s is out of range"),
])
def test_the_commands_read_of_leads(text, message):
    with pytest.raises(LeadError, match="accepted: LEAD") as refused:
        parse_leads(text, "--notify-end")
    assert message in str(refused.value) and str(refused.value).startswith("--notify-end: ")
    assert parse_leads("1h, 90s,1:00:00", "-x") == (3600, 90)
    assert parse_leads("none", "-x") == ()


@pytest.mark.parametrize("value", ["{start: [0]}", "{begin: [60]}", "[60]", "{end: [1, 2, 3, 4, 5]}"])
def test_bad_site_notice_stops_the_daemon_naming_the_key(tmp_path, value):
    conf = tmp_path / "plus.yaml"
    conf.write_text(f"notice: {value}\n")
    with pytest.raises(config_module.ConfigError, match=r"^notice: expected a mapping of start "
                                                        r"and end, each a list of at most 4"):
        config_module.load(str(conf))


def test_a_real_daemon_mails_short_leads_and_refuses_bad_ones(smtp):  # noqa: F811
    daemon = Daemon(f"timezone: UTC\nmail: {{host: 127.0.0.1, port: {smtp.port}}}\n")
    daemon.start()
    try:
        bad = daemon.run("plusu1", "plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1",
                         "--notify-start", "2h,0")
        assert bad.returncode == 2
        assert "plus_reserve: --notify-start: the lead 0 s is out of range; accepted: LEAD" \
            in bad.stderr
        assert daemon.status() == []
        made = daemon.reserve("plusu1", "-s", "now+6", "-D", "8", "-n", "1",
                              "--notify-start", "4s", "--notify-end", "0:0:3")
        shown = daemon.status("-r", str(made["id"]))[0]["request"]
        assert (shown["notify_start"], shown["notify_end"]) == ([4], [3])
        deadline = time.monotonic() + 60                 # in real time: about 11 s
        while len(smtp.envelopes) < 2:
            assert time.monotonic() < deadline, daemon.log.read_text()[-2000:]
            time.sleep(0.1)
        subjects = [mail["Subject"] for mail in smtp.mails(2)]
        assert subjects == [f"Advance Reservation {made['id']} (none) Starts in 4 seconds",
                            f"Advance Reservation {made['id']} (none) Ends in 3 seconds"]
        assert smtp.recipients()[0] == ["plusu1"]
        while daemon.status("-r", str(made["id"]))[0]["state"] != "x":
            assert time.monotonic() < deadline, "the AR did not end"
            time.sleep(0.2)
        changed = daemon.run("plusu1", "plus_modify", "-r", str(made["id"]), "--notify-end", "1w")
        assert changed.returncode == 2 and "--notify-end: invalid lead '1w'" in changed.stderr
    finally:
        daemon.stop()
        daemon.cleanup()
    assert len(smtp.envelopes) == 2
