"""Recurring ARs (issue 33, plus_reserve --repeat): an RFC 5545 rule in the
site's zone whose local start stays across daylight-saving changes both
ways (Europe/Berlin, America/New_York) while the UTC instant moves;
exceptions; occurrences granted ahead to the depth and each later one as
the depth moves on, across a restart and between two daemons racing on one
store, never twice and never skipped; a refused occurrence told by an
event, a mail and the series' listing; modify and cancel of one
occurrence or the series; bad rules and dates refused, storing nothing.
On SQLite and PostgreSQL (the store_url fixture).

The manager and lifecycle run in this process with a clock moved by hand
(as tests/test_mail.py), mailing a real SMTP server (aiosmtpd)."""

from __future__ import annotations

import datetime as dt
import json
import textwrap
import time
import zoneinfo
from itertools import takewhile

import pytest
from icalendar import Calendar

from overlay.cli import views
from overlay.contract import plugins
from overlay.daemon import config as config_module
from overlay.daemon.services.feeds import _series_of
from overlay.daemon.services.service import Service
from overlay.events.catalog import OCCURRENCE_REFUSED
from overlay.feeds.calendar import calendar
from overlay.language.model import InvalidRequest, LimitExceeded, Request, State
from overlay.language.recurrence import Recurrence
from overlay.language.request import RequestError
from overlay.language.timespec import format_ctime
from overlay.persistence.events import EventLog
from overlay.persistence.series import SeriesMoved, SeriesRow, SeriesStore
from overlay.persistence.store import ReservationRow, Store
from overlay.usecases import series as series_cases
from overlay.usecases.lifecycle import Lifecycle
from overlay.usecases.manager import Caller, Manager
from overlay.usecases.series import SeriesCases
from test_mail import close_env, smtp  # noqa: F401 (a fixture)
from test_manager import drained_at_once

HOUR, DAY = 3600, 86400
ALICE = Caller(uid=5001, user="alice", groups=("staff",), is_manager=False)
BOB = Caller(uid=5002, user="bob", groups=("staff",), is_manager=False)
ROOT = Caller(uid=0, user="root", groups=(), is_manager=True)
CLUSTER = """\
nodes:
  - {name: n01, slots: 4}
  - {name: n02, slots: 4}
"""
WEEKDAYS = "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"


def epoch(zone: str, *fields: int) -> int:
    return int(dt.datetime(*fields, tzinfo=zoneinfo.ZoneInfo(zone)).timestamp())


def local(zone: str, at: int) -> str:
    return dt.datetime.fromtimestamp(at, zoneinfo.ZoneInfo(zone)).strftime("%a %Y-%m-%d %H:%M")


class Env:
    """A manager, lifecycle and series on a two-node native cluster, on
    ``store_url``, with a clock moved by hand; a second Env on the same
    store is the daemon restarted (or another daemon)."""

    def __init__(self, tmp_path, store_url: str, zone: str, now: int, extra: str = "") -> None:
        (tmp_path / "cluster.yaml").write_text(CLUSTER)
        conf = tmp_path / "plus.yaml"
        conf.write_text(f"state_dir: state\nstore: '{store_url}'\ntimezone: {zone}\n"
                        "native: {cluster: cluster.yaml, local_host: false}\n"
                        "repeat: {depth: 3d, max_series: 3}\nexpiry: 2592000\n" + extra)
        config = config_module.load(str(conf))
        self.pm = plugins.plugin_manager()
        claimed = plugins.configure(self.pm, config)
        backend = plugins.build_backend(self.pm, "native", config, config.backend_options(),
                                        claimed)
        self.store = Store(config.store_url)
        self.now = now
        self.manager = Manager(config, self.store, backend, self.pm,
                               drained_at_once(self.store, config), clock=lambda: self.now)
        self.manager.refresh_nodes(publish=True)      # as the leader's pass does (PostgreSQL)
        self.series = SeriesCases(self.manager, SeriesStore(self.store))
        self.lifecycle = Lifecycle(self.manager, config.reconcile_interval)
        self.lifecycle.series = self.series
        self.zone = zone

    def reserve(self, start: int, hours: int = 3, rule: str = WEEKDAYS, exceptions=(),
                caller: Caller = ALICE, nodes: int = 1, **extra):
        request = Request(start=start, end=start + hours * HOUR, nodes=nodes, **extra)
        series, granted = self.series.reserve(caller, request, rule, exceptions)
        self.lifecycle.notice(granted)
        return series, granted

    def tick_at(self, now: int) -> None:
        self.now = now
        self.lifecycle.tick()

    def starts(self, series_id: int) -> list[int]:
        return [ar.start for ar in self.series.occurrences(series_id)]

    def close(self) -> None:
        close_env(self.pm, self.store)


@pytest.fixture
def world(tmp_path, store_url):
    made: list[Env] = []

    def make(zone: str, now: int, extra: str = "mail: {enabled: false}\n") -> Env:
        made.append(Env(tmp_path, store_url, zone, now, extra))
        return made[-1]
    yield make
    for env in made:
        env.close()


def rows(store: Store, table) -> int:
    with store.session() as session:
        return len(session.exec(table.__table__.select()).all())


# -- the rule, in the site's zone ----------------------------------------------------

@pytest.mark.parametrize("zone, before, after", [
    ("Europe/Berlin", (2027, 3, 25), (2027, 3, 29)),          # spring forward, 28 March
    ("Europe/Berlin", (2027, 10, 28), (2027, 11, 1)),         # fall back, 31 October
    ("America/New_York", (2027, 3, 11), (2027, 3, 15)),       # spring forward, 14 March
    ("America/New_York", (2027, 11, 4), (2027, 11, 8)),       # fall back, 7 November
])
def test_a_daily_rule_keeps_its_local_start_across_a_dst_change_and_its_utc_instant_moves(
        world, zone, before, after):
    first = epoch(zone, *before, 9)
    env = world(zone, first - DAY)
    series, granted = env.reserve(first, rule="FREQ=DAILY;COUNT=6")
    for day in range(4):                  # the depth (3 days) moves on to the last ones
        env.tick_at(first + day * DAY - 2 * HOUR)
    starts = env.starts(series.id)
    assert len(starts) == 6 and granted[0].series == series.id
    assert {local(zone, at)[-5:] for at in starts} == {"09:00"}
    gaps = {b - a for a, b in zip(starts, starts[1:], strict=False)}
    assert gaps == {DAY, DAY - HOUR} or gaps == {DAY, DAY + HOUR}   # one day of 23 or 25 h
    assert local(zone, starts[-1]).startswith(
        dt.date(*after).strftime("%a %Y-%m-%d")) or starts[-1] > epoch(zone, *after, 0)


def test_weekdays_leave_out_the_weekend_and_the_exceptions():
    zone = "Europe/Berlin"
    first = epoch(zone, 2027, 3, 22, 9)           # a Monday
    rule = Recurrence(WEEKDAYS + ";COUNT=10", first, zone, ("2027-03-24", "2027-03-30T09:00"))
    shown = [local(zone, at) for at in rule.starts()]
    assert shown == ["Mon 2027-03-22 09:00", "Tue 2027-03-23 09:00", "Thu 2027-03-25 09:00",
                     "Fri 2027-03-26 09:00", "Mon 2027-03-29 09:00", "Wed 2027-03-31 09:00",
                     "Thu 2027-04-01 09:00", "Fri 2027-04-02 09:00"]   # COUNT counts the left out
    assert rule.next_start(epoch(zone, 2027, 3, 26, 9)) == epoch(zone, 2027, 3, 29, 9)


def test_until_in_utc_and_bysetpos_are_read_as_rfc_5545_says():
    zone = "America/New_York"
    first = epoch(zone, 2027, 1, 4, 9)
    last_friday = Recurrence("FREQ=MONTHLY;BYDAY=FR;BYSETPOS=-1;UNTIL=20270401T000000Z", first,
                             zone)
    assert [local(zone, at) for at in last_friday.starts()] == [
        "Fri 2027-01-29 09:00", "Fri 2027-02-26 09:00", "Fri 2027-03-26 09:00"]


# -- granted ahead, and as the depth moves on ---------------------------------------------

def test_the_depth_moves_on_across_a_restart_with_no_duplicate_and_no_gap(world):
    zone = "Europe/Berlin"
    first = epoch(zone, 2027, 3, 22, 9)
    env = world(zone, first - HOUR)
    series, granted = env.reserve(first)
    # within 3 days of now: Mon, Tue, Wed (Thursday 09:00 is 3 days and an hour ahead)
    assert [local(zone, ar.start) for ar in granted] == [
        "Mon 2027-03-22 09:00", "Tue 2027-03-23 09:00", "Wed 2027-03-24 09:00"]
    assert env.lifecycle.next_due() <= epoch(zone, 2027, 3, 22, 9)   # its first end, or Thursday's due
    env.tick_at(epoch(zone, 2027, 3, 23, 10))
    env.close()
    again = world(zone, epoch(zone, 2027, 3, 26, 12))     # restarted three days later
    again.tick_at(again.now)
    again.tick_at(epoch(zone, 2027, 3, 27, 12))
    expected = list(takewhile(lambda at: at <= epoch(zone, 2027, 3, 30, 12),
                              Recurrence(WEEKDAYS, first, zone).starts()))
    assert again.starts(series.id) == expected            # each once, none missed
    stored = again.series.table.get(series.id)
    assert stored.handled == stored.granted == len(expected) and stored.refused == ()
    assert stored.next_start == epoch(zone, 2027, 3, 31, 9)


def test_two_daemons_extending_one_series_grant_each_occurrence_once(world):
    zone = "UTC"
    first = epoch(zone, 2027, 5, 3, 9)
    one = world(zone, first - HOUR)
    series, _ = one.reserve(first, rule="FREQ=DAILY")
    other = world(zone, first - HOUR)
    for env in (one, other):
        env.now = first + 2 * DAY
    assert len(one.series.extend(series.id)) == 3          # days 3, 4 and 5
    assert other.series.extend(series.id) == []           # its cursor moved: nothing twice
    other.manager.catch_up()
    assert other.starts(series.id) == [first + day * DAY for day in range(6)]
    stale = other.series.table.get(series.id)          # read, then a modify of the series wins
    one.series.modify(ALICE, series.id, 2 * HOUR, None, None, None, None, None)
    with pytest.raises(SeriesMoved):
        other.series.table.write(other.series.table.stepped(
            stale, other.series.table.following(stale, handled=stale.handled + 1)))
    assert one.series.table.get(series.id).duration == 2 * HOUR      # the change is not lost


def test_a_refused_occurrence_is_told_by_event_and_mail_and_listed(world, smtp):  # noqa: F811
    zone = "Europe/Berlin"
    first = epoch(zone, 2027, 3, 22, 9)
    env = world(zone, first - HOUR, textwrap.dedent(f"""\
        mail: {{host: 127.0.0.1, port: {smtp.port}, sender: plus@cluster.test, timeout: 5}}
        """))
    series, granted = env.reserve(first, nodes=2, name="standup", users=("bob",))
    assert len(granted) == 3
    thursday = epoch(zone, 2027, 3, 25, 9)
    env.manager.reserve(BOB, Request(start=thursday, end=thursday + HOUR, nodes=1))
    env.tick_at(epoch(zone, 2027, 3, 22, 10))             # Thursday comes within the depth
    stored = env.series.table.get(series.id)
    assert [start for start, _ in stored.refused] == [thursday]
    assert "node" in stored.refused[0][1]
    assert stored.next_start == epoch(zone, 2027, 3, 26, 9)     # the next one is not skipped
    events = [event for event in EventLog(env.store).after(0, 1000)
              if event.type == OCCURRENCE_REFUSED]
    assert len(events) == 1 and events[0].owner == "alice"
    data = json.loads(events[0].data)
    assert data["series"]["id"] == series.id and data["start"] == thursday
    [mail] = smtp.mails(1)
    assert mail["Subject"] == f"Advance Reservation series {series.id} (standup) Occurrence refused"
    assert "2027-03-25 09:00:00 CET" in mail.get_payload()
    env.tick_at(epoch(zone, 2027, 3, 22, 11))             # told once
    assert len([e for e in EventLog(env.store).after(0, 1000) if e.type == OCCURRENCE_REFUSED]) == 1


# -- modify and cancel ------------------------------------------------------------------

def test_modify_and_cancel_one_occurrence_or_the_series(world, monkeypatch):
    zone = "America/New_York"
    first = epoch(zone, 2027, 3, 15, 9)
    env = world(zone, first - HOUR)
    series, granted = env.reserve(first)
    one, two, three = granted
    env.manager.modify(ALICE, two.id, None, None, 2 * HOUR, None, None)
    assert env.manager.ars[two.id].request.duration == 2 * HOUR
    assert env.manager.ars[three.id].request.duration == 3 * HOUR
    env.manager.cancel(ALICE, one.id, None)
    assert env.series.table.get(series.id).state == "active"
    env.now = first + HOUR                                  # the first would be running now
    _, changed, refused = env.series.modify(ALICE, series.id, HOUR, 2, None, None, None, None)
    assert sorted(ar.id for ar in changed) == [two.id, three.id] and refused == []
    assert env.series.table.get(series.id).request.nodes == 2
    env.tick_at(first + 2 * HOUR)
    later = [ar for ar in env.series.occurrences(series.id) if ar.id not in (one.id, two.id,
                                                                             three.id)]
    assert later and all(ar.request.nodes == 2 and ar.request.duration == HOUR for ar in later)
    with pytest.raises(Exception, match="belongs to alice"):
        env.series.cancel(BOB, series.id)
    monkeypatch.setattr(series_cases, "_AT_ONCE", 1)     # the command cancels one itself
    stopped, cancelled = env.series.cancel(ALICE, series.id)
    assert stopped.state == "cancelled" and len(cancelled) == 1
    assert stopped.next_due is not None                  # the leader cancels the others
    env.lifecycle.notice(cancelled)
    env.tick_at(env.now + 1)
    assert env.series.table.get(series.id).next_due is None
    assert all(ar.state == State.DELETED for ar in env.series.occurrences(series.id))
    handled = stopped.handled
    env.tick_at(first + 6 * DAY)
    assert env.series.table.get(series.id).handled == handled    # none granted after


def test_a_series_cancel_skips_an_occurrence_another_thread_ended_meanwhile(world):
    """The command cancels a series while the leader's pass (which the
    series' new due time wakes) cancels its occurrences too: an occurrence
    the other ended between the listing and the cancel is skipped, not an
    error (CI saw plus_cancel -series fail "AR 3 has already ended")."""
    zone = "UTC"
    first = epoch(zone, 2027, 5, 3, 9)
    env = world(zone, first - HOUR)
    series, (one, two, three) = env.reserve(first)
    listed = env.series.occurrences

    def listed_then_ended_by_the_leader(series_id: int) -> list:
        found = listed(series_id)
        env.manager.cancel(ALICE, two.id, None)
        return found
    env.series.occurrences = listed_then_ended_by_the_leader
    stopped, cancelled = env.series.cancel(ALICE, series.id)
    assert stopped.state == "cancelled"
    assert sorted(ar.id for ar in cancelled) == [one.id, three.id]
    assert all(env.manager.ars[ar.id].state == State.DELETED for ar in (one, two, three))


# -- bad input, and bounds -----------------------------------------------------------------

@pytest.mark.parametrize("rule, exceptions, said", [
    ("FREQ=FORTNIGHTLY", (), "needs FREQ=YEARLY|MONTHLY|WEEKLY|DAILY|HOURLY"),
    ("FREQ=MINUTELY", (), "needs FREQ="),
    ("FREQ=DAILY;BYDAY=XX", (), "is not a rule"),
    ("FREQ=DAILY;COUNT=0", (), "COUNT that is not a whole number from 1"),
    ("FREQ=DAILY;COUNT=2;UNTIL=20270101T000000Z", (), "both COUNT and UNTIL"),
    ("FREQ=DAILY\nDTSTART:20270101", (), "not one line"),
    ("FREQ=DAILY;" + "BYHOUR=9;" * 80, (), "at most 512"),
    ("FREQ=HOURLY", (), "would overlap"),
    ("FREQ=DAILY;UNTIL=20200101T000000Z", (), "gives no occurrence"),
    ("FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=30", (), "gives no occurrence"),   # not up to 9999
    (WEEKDAYS, ("2027-13-01",), "is not a date or local start time"),
    (WEEKDAYS, ("tomorrow",), "accepted: dates YYYY-MM-DD"),
    (WEEKDAYS, tuple(f"2027-04-{d:02d}" for d in range(1, 29)) * 3, "at most 64"),
])
def test_bad_rules_and_dates_are_refused_naming_what_is_accepted_and_store_nothing(
        world, rule, exceptions, said):
    zone = "Europe/Berlin"
    first = epoch(zone, 2027, 3, 22, 9)
    env = world(zone, first - HOUR)
    with pytest.raises((RequestError, InvalidRequest)) as refused:
        env.reserve(first, rule=rule, exceptions=exceptions)
    assert said in str(refused.value)
    assert "\n" not in str(refused.value)
    assert rows(env.store, SeriesRow) == 0 and rows(env.store, ReservationRow) == 0


def test_a_first_occurrence_without_nodes_stores_no_series(world):
    zone = "UTC"
    first = epoch(zone, 2027, 5, 3, 9)
    env = world(zone, first - HOUR)
    with pytest.raises(Exception, match="node"):
        env.reserve(first, nodes=3)
    assert rows(env.store, SeriesRow) == 0 and rows(env.store, ReservationRow) == 0


def test_series_per_user_are_bounded_and_an_endless_rule_grants_only_the_depth(world):
    zone = "UTC"
    first = epoch(zone, 2027, 5, 3, 9)
    env = world(zone, first - HOUR)
    for hour in range(3):
        _, granted = env.reserve(first + hour * HOUR, hours=1, rule="FREQ=DAILY")
        assert len(granted) == 3                     # endless: the depth (3 days) only
    with pytest.raises(LimitExceeded, match="repeat.max_series"):
        env.reserve(first + 5 * HOUR, hours=1, rule="FREQ=DAILY")
    assert rows(env.store, SeriesRow) == 3


def test_the_socket_operations_reserve_list_modify_and_cancel_a_series(world):
    zone = "Europe/Berlin"
    first = epoch(zone, 2027, 3, 22, 9)
    env = world(zone, first - HOUR)
    service = Service(env.manager, env.lifecycle.notice, lambda: None, series=env.series)
    made = service.handle(ALICE, "reserve", {
        "start": first, "end": first + 3 * HOUR, "nodes": 1, "repeat": "rrule:" + WEEKDAYS,
        "except": ["2027-03-23"]})
    series = made["series_made"]
    assert made["series"] == series["id"] and series["rule"] == WEEKDAYS
    assert [o["start"] for o in series["occurrences"]] == [first, first + 2 * DAY]
    [listed] = service.handle(ALICE, "series_status", {})
    assert listed["id"] == series["id"] and listed["exceptions"] == ["2027-03-23"]
    assert service.handle(BOB, "series_status", {}) == []
    with pytest.raises(RequestError, match="give --repeat too"):
        service.handle(ALICE, "reserve", {"start": first, "end": first + HOUR, "nodes": 1,
                                          "except": ["2027-03-23"]})
    with pytest.raises(RequestError, match="a series' times come from its rule"):
        service.handle(ALICE, "series_modify", {"series": series["id"], "start": first + HOUR})
    changed = service.handle(ALICE, "series_modify", {"series": series["id"], "duration": HOUR})
    assert len(changed["modified"]) == 2
    done = service.handle(ALICE, "series_cancel", {"series": series["id"]})
    assert done["state"] == "cancelled" and len(done["cancelled"]) == 2


class Unwalked(dict):
    """The Manager's ARs, which a listing of series may look up by id but
    never walk."""

    def _walked(self, *args):
        raise AssertionError("the listing walked every AR in memory")

    values = items = keys = __iter__ = _walked


def walked_occurrences(env: Env, series_id: int) -> list:
    """A series' occurrences as a walk over every AR finds them (what the
    listing did before its index)."""
    return sorted((ar for ar in dict.values(env.manager.ars) if ar.series == series_id),
                  key=lambda ar: (ar.start, ar.id))


def test_a_listing_of_series_finds_the_occurrences_a_walk_would_without_walking(world):
    zone = "UTC"
    first = epoch(zone, 2027, 5, 3, 9)
    env = world(zone, first - HOUR)
    service = Service(env.manager, env.lifecycle.notice, lambda: None, series=env.series)
    daily, granted = env.reserve(first, hours=1, rule="FREQ=DAILY")
    weekly, _ = env.reserve(first + 2 * HOUR, hours=1, rule="FREQ=WEEKLY;COUNT=2",
                            caller=BOB)
    env.manager.reserve(ALICE, Request(start=first + 4 * HOUR, end=first + 5 * HOUR, nodes=1))
    env.manager.cancel(ALICE, granted[0].id, None)
    env.manager.destroy(ALICE, granted[1].id, None)           # gone from memory
    env.tick_at(first + DAY + HOUR)                           # the depth moves on: more granted
    other = world(zone, env.now)                              # another daemon's memory
    env.manager.modify(ALICE, granted[2].id, None, None, 2 * HOUR, None, None)
    other.manager.catch_up()
    for daemon in (env, other):
        expected = {ids: [ar.id for ar in walked_occurrences(daemon, ids)]
                    for ids in (daily.id, weekly.id, 99)}
        assert expected[daily.id] and expected[weekly.id] and not expected[99]
        assert granted[1].id not in expected[daily.id]
        walking, daemon.manager.ars = daemon.manager.ars, Unwalked(daemon.manager.ars)
        try:
            found = {ids: [ar.id for ar in daemon.series.occurrences(ids)] for ids in expected}
            listed = Service(daemon.manager, daemon.lifecycle.notice, lambda: None,
                             series=daemon.series).handle(ROOT, "series_status", {})
        finally:
            daemon.manager.ars = walking
        assert found == expected
        assert {view["id"]: [o["id"] for o in view["occurrences"]] for view in listed} == {
            daily.id: expected[daily.id], weekly.id: expected[weekly.id]}
    assert service.handle(ALICE, "series_status", {})[0]["occurrences"][0]["state"] == "d"


def test_the_users_feed_carries_the_series_as_one_event_with_rrule_and_exdate(world):
    zone = "America/New_York"
    first = epoch(zone, 2027, 3, 8, 9)                   # a Monday; DST starts on the 14th
    env = world(zone, first - HOUR)
    series, granted = env.reserve(first, rule=WEEKDAYS + ";UNTIL=20270331T235959Z",
                                  exceptions=("2027-03-10",), name="lab")
    env.manager.cancel(ALICE, granted[1].id, None)        # Tuesday's occurrence
    single = env.manager.reserve(ALICE, Request(start=first + 7 * HOUR, end=first + 8 * HOUR,
                                                nodes=1))
    context = Service(env.manager, env.lifecycle.notice, lambda: None,
                      series=env.series).context
    ars = env.manager.status(expired=100)
    made = _series_of(context, ars)
    shown = [ar for ar in ars if ar.series is None]
    body = calendar("t", shown, zone, "cluster.test", "https://cluster.test/web/", env.now, made)
    parsed = Calendar.from_ical(body)
    events = [c for c in parsed.walk("VEVENT")]
    assert len(events) == 2                               # the single AR, and the series
    [recurring] = [e for e in events if "RRULE" in e]
    assert recurring["RRULE"]["UNTIL"][0] == dt.datetime(2027, 3, 31, 23, 59, 59,
                                                         tzinfo=dt.timezone.utc)
    assert recurring["DTSTART"].dt == dt.datetime(2027, 3, 8, 9, tzinfo=zoneinfo.ZoneInfo(zone))
    excluded = sorted(d.dt for exdate in ([recurring["EXDATE"]] if not isinstance(
        recurring["EXDATE"], list) else recurring["EXDATE"]) for d in exdate.dts)
    assert [d.strftime("%Y-%m-%d %H:%M") for d in excluded] == ["2027-03-09 09:00",
                                                                "2027-03-10 09:00"]
    assert "BEGIN:VTIMEZONE" in body and "TZID:America/New_York" in body
    assert single.series is None


def test_the_answer_says_when_the_next_occurrence_is_granted():
    """From its due time on, or by the leader's next passes when that time
    has already come (a depth longer than the gap to it): never a due time
    in the past as if it were to be waited for."""
    now = int(time.time())
    made = {"id": 4, "granted": 1, "refused": [], "occurrences": [{"id": 9, "start": now}],
            "next_start": now + 86400}
    later = views.series_granted({**made, "next_due": now + 3600})
    assert later.endswith(f"granted from {format_ctime(now + 3600)} on")
    due = views.series_granted({**made, "next_due": now - 3600})
    assert due.endswith("granted by the leader's next passes (within the depth already)")
    assert due.startswith("Your advance reservation series 4 has been granted: 1 occurrence(s)")
