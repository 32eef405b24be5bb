"""Calendar feeds: the iCalendar a calendar client subscribes to, parsed
with the icalendar library; local times on each side of a DST change;
feed tokens made, listed and revoked (a wrong, revoked or other user's
token is one 404), at once at every daemon of a store; conditional GET;
bounded sizes."""

from __future__ import annotations

import datetime as dt
import time
import zoneinfo

import httpx
import icalendar
import pytest

from daemon_harness import Daemon
from http_harness import HOUR, answering, auth, conforms, free_port, start_api, token, window
from overlay.feeds import ical, selection
from overlay.feeds.calendar import LISTED_NODES, calendar
from overlay.language.model import Allocation, Request, Reservation, State

CLUSTER = """\
nodes:
  - {name: "n[01-30]", slots: 4, queues: [all.q]}
  - {name: zbig, slots: 16, queues: [all.q, big.q]}
"""


def _ar(ar_id: int, start: int, end: int, owner: str = "plusu1", state: State = State.WAITING,
        nodes: int = 1) -> Reservation:
    return Reservation(id=ar_id, owner=owner, group="plusgrp",
                       request=Request(start=start, end=end, nodes=nodes, name=f"ar{ar_id}"),
                       state=state, submission_time=start - HOUR,
                       allocations=[Allocation(f"n{i:02d}", 1) for i in range(1, nodes + 1)],
                       revision=ar_id, changed=start - HOUR)


def _events(text: str) -> dict[str, icalendar.Event]:
    return {str(event["SUMMARY"]).split()[0]: event
            for event in icalendar.Calendar.from_ical(text).walk("VEVENT")}


def _next_change(zone: zoneinfo.ZoneInfo, after: int) -> int:
    """The first second after ``after`` at which ``zone``'s offset changes."""
    return next(at for at, before, later in ical.transitions(zone, after, after + 400 * 86400)
                if before[0] != later[0])


# --- the text, without a daemon ---------------------------------------------------------

def test_lines_are_folded_at_75_octets_without_splitting_a_character_and_text_is_escaped():
    folded = ical.line("SUMMARY", ical.text("Zürich; a, b\\c\nnext\x07" + "é" * 80))
    rows = folded.removesuffix("\r\n").split("\r\n")
    assert all(len(row.encode()) <= 75 for row in rows) and len(rows) > 2
    assert all(row.startswith(" ") for row in rows[1:])
    unfolded = "".join([rows[0], *(row[1:] for row in rows[1:])])
    assert unfolded == "SUMMARY:Zürich\\; a\\, b\\\\c\\nnext " + "é" * 80
    assert icalendar.Event.from_ical(
        f"BEGIN:VEVENT\r\n{folded}END:VEVENT\r\n")["SUMMARY"] == "Zürich; a, b\\c\nnext " + "é" * 80


@pytest.mark.parametrize("zone_name", ["Europe/Berlin", "America/New_York"])
def test_local_times_are_right_on_each_side_of_a_dst_change(zone_name):
    """A window at 10:00 local on the day before and the day after the
    zone's next change of offset: DTSTART says 10:00 in the zone, at the
    right instant, whether the zone is read by its name or from the feed's
    own VTIMEZONE."""
    zone = zoneinfo.ZoneInfo(zone_name)
    change = _next_change(zone, int(time.time()))
    day = dt.datetime.fromtimestamp(change, zone).date()
    starts = {name: int(dt.datetime.combine(day + dt.timedelta(days=shift), dt.time(10),
                                            zone).timestamp())
              for name, shift in (("R1", -1), ("R2", 1))}
    assert starts["R2"] - starts["R1"] != 2 * 86400          # the change lies between them
    ars = [_ar(int(name[1:]), start, start + 2 * HOUR) for name, start in starts.items()]
    text = calendar("test", ars, zone_name, "plus.example.org", "https://plus.example.org/web/",
                    int(time.time()))
    parsed = icalendar.Calendar.from_ical(text)
    (vtimezone,) = parsed.walk("VTIMEZONE")
    own_zone = vtimezone.to_tz(lookup_tzid=False)
    for name, event in _events(text).items():
        begins = event.decoded("DTSTART")
        assert (begins.hour, begins.minute) == (10, 0) and begins.tzinfo is not None
        assert int(begins.timestamp()) == starts[name]
        assert int(begins.replace(tzinfo=own_zone).timestamp()) == starts[name]
        assert int(event.decoded("DTEND").timestamp()) == starts[name] + 2 * HOUR


def test_state_maps_to_status_and_an_event_stays_small_however_many_nodes():
    now = int(time.time())
    ars = [_ar(1, now, now + HOUR, nodes=30), _ar(2, now, now + HOUR, state=State.DELETED),
           _ar(3, now, now + HOUR, state=State.PENDING), _ar(4, now, now + HOUR, state=State.ERROR)]
    events = _events(calendar("t", ars, "UTC", "h", "http://h/web/", now))
    assert [str(events[f"R{i}"]["STATUS"]) for i in range(1, 5)] == \
        ["CONFIRMED", "CANCELLED", "TENTATIVE", "TENTATIVE"]
    assert str(events["R1"]["LOCATION"]).endswith(f"and {30 - LISTED_NODES} more")
    assert len(str(events["R1"]["LOCATION"])) < 200


def test_a_feed_holds_at_most_max_events_the_first_by_start():
    now = int(time.time())
    ars = [_ar(i, now + i * HOUR, now + i * HOUR + 60) for i in range(selection.MAX_EVENTS + 5, 0, -1)]
    shown, total = selection.bounded(ars)
    assert total == selection.MAX_EVENTS + 5 and len(shown) == selection.MAX_EVENTS
    assert [ar.id for ar in shown[:3]] == [1, 2, 3] and shown[-1].id == selection.MAX_EVENTS
    text = calendar("t", shown, "Europe/Berlin", "h", "http://h/web/", now)
    assert len(text.encode()) < 2 ** 20 * 3                 # a few MiB at most


# --- a daemon's feeds ------------------------------------------------------------------

@pytest.fixture(scope="module")
def api():
    daemon, url = start_api("http: {address: {address}, trusted_principals: [plusmgr]}\n"
                            "timezone: America/New_York\n", cluster=CLUSTER)
    yield daemon, url
    daemon.cleanup()


def _feed_token(daemon: Daemon, user: str) -> str:
    return daemon.ok(user, "plus_feed", "-c").splitlines()[0]


def _feed(url: str, path: str, feed_token: str, **headers) -> httpx.Response:
    return httpx.get(url + path, params={"token": feed_token}, headers=headers)


def test_a_users_feed_shows_their_ars_and_follows_each_change(api):
    daemon, url = api
    mine = auth(token(daemon, "plusu1"))
    feed_token = _feed_token(daemon, "plusu1")
    made = httpx.post(url + "/reservations", headers=mine,
                      json={**window(3), "nodes": 2, "name": "feedme"}).json()
    other = httpx.post(url + "/reservations", headers=auth(token(daemon, "plusu2")),
                       json={**window(3), "nodes": 1, "users": ["plusu1"]}).json()
    third = httpx.post(url + "/reservations", headers=auth(token(daemon, "plusu2")),
                       json={**window(3), "nodes": 1}).json()
    first = _feed(url, "/feeds/users/plusu1.ics", feed_token)
    assert first.status_code == 200 and first.headers["content-type"].startswith("text/calendar")
    events = _events(first.text)
    assert {f"R{made['id']}", f"R{other['id']}"} <= set(events) and f"R{third['id']}" not in events
    event = events[f"R{made['id']}"]
    assert str(event["SUMMARY"]) == f"R{made['id']} feedme"
    assert str(event["STATUS"]) == "CONFIRMED"
    assert all(a["node"] in str(event["LOCATION"]) for a in made["allocations"])
    assert str(event["URL"]).endswith(f"/web/#ar={made['id']}")
    assert str(event["UID"]) == f"R{made['id']}-{made['submission_time']}@127.0.0.1"
    assert int(event.decoded("DTSTART").timestamp()) == made["start"]
    assert str(event.decoded("DTSTART").tzinfo) in ("America/New_York", "EST")
    unchanged = _feed(url, "/feeds/users/plusu1.ics", feed_token,
                      **{"If-None-Match": first.headers["etag"]})
    assert unchanged.status_code == 304 and unchanged.headers["etag"] == first.headers["etag"]
    assert unchanged.content == b""
    httpx.patch(url + f"/reservations/{made['id']}", headers=mine,
                json={"duration": 2 * HOUR}).raise_for_status()
    moved = _feed(url, "/feeds/users/plusu1.ics", feed_token,
                  **{"If-None-Match": first.headers["etag"]})
    assert moved.status_code == 200 and moved.headers["etag"] != first.headers["etag"]
    after = _events(moved.text)[f"R{made['id']}"]
    assert int(after.decoded("DTEND").timestamp()) == made["start"] + 2 * HOUR
    assert after["SEQUENCE"] > event["SEQUENCE"] and str(after["UID"]) == str(event["UID"])
    httpx.post(url + f"/reservations/{made['id']}/cancel", headers=mine).raise_for_status()
    cancelled = _events(_feed(url, "/feeds/users/plusu1.ics", feed_token).text)
    assert str(cancelled[f"R{made['id']}"]["STATUS"]) == "CANCELLED"


def test_a_queues_feed_shows_the_ars_on_its_hosts(api):
    daemon, url = api
    mine = auth(token(daemon, "plusu2"))
    on_big = httpx.post(url + "/reservations", headers=mine,
                        json={**window(20), "nodes": 31}).json()
    elsewhere = httpx.post(url + "/reservations", headers=mine,
                           json={**window(30), "nodes": 1}).json()
    assert "zbig" in [a["node"] for a in on_big["allocations"]]
    assert "zbig" not in [a["node"] for a in elsewhere["allocations"]]
    events = _events(_feed(url, "/feeds/queues/big.q.ics", _feed_token(daemon, "plusu3")).text)
    assert f"R{on_big['id']}" in events and f"R{elsewhere['id']}" not in events
    assert "more" in str(events[f"R{on_big['id']}"]["LOCATION"])
    unknown = _feed(url, "/feeds/queues/none.q.ics", _feed_token(daemon, "plusu3"))
    assert unknown.status_code == 404 and "queue none.q has no hosts" in unknown.json()["error"]


def test_a_wrong_revoked_or_other_users_token_gets_the_same_404(api):
    daemon, url = api
    feed_token = _feed_token(daemon, "plusu1")
    assert _feed(url, "/feeds/users/plusu1.ics", feed_token).status_code == 200
    token_id = feed_token.split(".")[1]
    wrong = feed_token[:-4] + ("AAAA" if not feed_token.endswith("AAAA") else "BBBB")
    other = _feed(url, "/feeds/users/plusu2.ics", feed_token)
    daemon.ok("plusu1", "plus_feed", "-R", token_id)
    answers = [_feed(url, "/feeds/users/plusu1.ics", text) for text in
               (wrong, feed_token, "pf1.0000000000000000." + "A" * 43, "nonsense")] + [other]
    assert [answer.status_code for answer in answers] == [404] * 5
    assert len({answer.text for answer in answers}) == 1
    assert "no such feed" in answers[0].json()["error"]
    assert httpx.get(url + "/feeds/users/plusu1.ics").status_code == 422     # no token at all


def test_feed_tokens_are_made_listed_and_revoked_with_ones_own_identity_and_bounded(api):
    daemon, url = api
    mine = auth(token(daemon, "plusu3"))
    document = httpx.get(url + "/openapi.json").json()
    made = httpx.post(url + "/feeds/tokens", headers=mine, json={"label": "laptop"})
    assert made.status_code == 201, made.text
    conforms(document, "POST", "/v1/feeds/tokens", made)
    body = made.json()
    assert body["feeds"]["user"] == f"{url}/feeds/users/plusu3.ics?token={body['token']}"
    assert httpx.get(body["feeds"]["user"]).status_code == 200
    listing = httpx.get(url + "/feeds/tokens", headers=mine)
    conforms(document, "GET", "/v1/feeds/tokens", listing)
    listed = listing.json()
    assert {"id": body["id"], "owner": "plusu3", "label": "laptop",
            "created": body["created"]} in listed
    assert all("token" not in held and "digest" not in held for held in listed)
    assert body["id"] in daemon.ok("plusu3", "plus_feed", "-l")
    gone = httpx.delete(url + f"/feeds/tokens/{body['id']}", headers=mine)
    assert gone.status_code == 200 and httpx.get(body["feeds"]["user"]).status_code == 404
    conforms(document, "DELETE", "/v1/feeds/tokens/{token_id}", gone)
    assert httpx.delete(url + f"/feeds/tokens/{body['id']}", headers=mine).status_code == 404
    acting = httpx.post(url + "/feeds/tokens", headers=auth(token(daemon, "plusmgr")),
                        params={"user": "plusu3"}, json={})
    assert acting.status_code == 403 and "own identity" in acting.json()["error"]
    bad = httpx.post(url + "/feeds/tokens", headers=mine, json={"label": "x" * 65})
    assert bad.status_code == 422 and "label" in bad.json()["error"]
    refused = daemon.run("plusu3", "plus_feed", "-R", "nothex")
    assert refused.returncode == 2 and "accepted: the 16 hexadecimal digits" in refused.stderr
    other = daemon.run("plusu3", "plus_feed", "-l", "-o", "plusu1")
    assert other.returncode == 1 and "only a manager" in other.stderr
    held = len(httpx.get(url + "/feeds/tokens", headers=mine).json())
    answers = [httpx.post(url + "/feeds/tokens", headers=mine, json={}).status_code
               for _ in range(11 - held)]
    assert answers[-1] == 409 and set(answers[:-1]) == {201}
    assert "the most allowed" in httpx.post(url + "/feeds/tokens", headers=mine,
                                            json={}).json()["error"]


def test_the_zone_is_a_live_setting_checked_by_name(api):
    daemon, url = api
    text = daemon.conf.read_text()
    daemon.reread(text.replace("America/New_York", "Mars/Olympus"), "timezone")
    daemon.reread(text.replace("America/New_York", "Europe/Berlin"), "timezone")
    feed = _feed(url, "/feeds/users/plusu1.ics", _feed_token(daemon, "plusu1")).text
    assert "TZID:Europe/Berlin" in feed and "X-WR-TIMEZONE:Europe/Berlin" in feed
    daemon.reread(text, "timezone")


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_a_token_revoked_at_one_daemon_is_refused_at_once_by_the_other(store_url):
    ports = [free_port(), free_port()]
    daemons = [Daemon(f"http: {{address: '127.0.0.1:{port}'}}\n", store=store_url)
               for port in ports]
    try:
        for daemon in daemons:
            daemon.start()
        urls = [answering(daemon, port) for daemon, port in zip(daemons, ports, strict=True)]
        feed_token = _feed_token(daemons[0], "plusu1")
        assert [_feed(url, "/feeds/users/plusu1.ics", feed_token).status_code
                for url in urls] == [200, 200]
        daemons[1].ok("plusu1", "plus_feed", "-R", feed_token.split(".")[1])
        assert [_feed(url, "/feeds/users/plusu1.ics", feed_token).status_code
                for url in urls] == [404, 404]
    finally:
        for daemon in daemons:
            daemon.cleanup()


def test_the_maintenance_feed_shows_the_sites_maintenance_ars_only(api):
    daemon, url = api
    maint = httpx.post(url + "/reservations", headers=auth(token(daemon, "plusmgr")),
                       json={**window(40), "nodes": 1, "maint": True, "name": "fw"}).json()
    assert maint["request"]["maint"] is True
    ordinary = httpx.post(url + "/reservations", headers=auth(token(daemon, "plusu1")),
                          json={**window(40), "nodes": 1}).json()
    refused = httpx.post(url + "/reservations", headers=auth(token(daemon, "plusu1")),
                         json={**window(41), "nodes": 1, "maint": True})
    assert refused.status_code == 403 and "--maint: plusu1 is not a manager" in refused.text
    answer = _feed(url, "/feeds/maintenance.ics", _feed_token(daemon, "plusmgr"))
    assert answer.status_code == 200
    events = icalendar.Calendar.from_ical(answer.text).walk("VEVENT")
    assert [str(event["SUMMARY"]) for event in events] == [f"Maintenance R{maint['id']} fw"]
    assert str(events[0]["CATEGORIES"].to_ical(), "ascii") == "MAINTENANCE"
    assert f"R{ordinary['id']}" not in answer.text
    shown = daemon.ok("plusu1", "plus_status", "-r", str(maint["id"]))
    assert "maintenance:                yes" in shown
    assert "[M]fw" in daemon.ok("plusu1", "plus_status")
