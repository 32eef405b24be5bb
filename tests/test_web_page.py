"""The reservations calendar in a real browser: Debian's Chromium, headless,
driven by Playwright, against a real daemon with the quickstart's cluster
and its HTTP API, signed in through plus_web's one-time link as real
users. Each state the tests reach is saved as a screenshot under
artifacts/web/ (CI keeps that folder)."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import time
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from daemon_harness import VENV, Daemon, job_daemon
from http_harness import answering, auth, free_port, start_api, token
from test_native_daemon import accounting, states, submit, wait_for

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parents[1] / "artifacts" / "web"
CONF = Path(__file__).parents[1] / "conf"
CLUSTER = (CONF / "cluster.yaml").read_text()
FILES = {"complexes.yaml": (CONF / "complexes.yaml").read_text()}
SITE_ZONE = "Asia/Kolkata"
"""The site's zone: neither UTC (the machine's) nor the browsers' zone below."""
BROWSER_ZONE = "America/Los_Angeles"
SETTINGS = f"""\
http: {{address: {{address}}}}
timezone: {SITE_ZONE}
policies:
  site-limits: {{type: limits, max_duration: 6h}}
"""

JOB_CLUSTER = """\
nodes:
  - {name: "web[1-2]", ncpus: 1, exec: local}
scheduler: {schedule_interval: 1, max_reservation: 10}
"""
"""Two hosts whose jobs really run, and resource reservation (-R y) on."""

playwright = pytest.importorskip("playwright.sync_api", reason="the test command installs "
                                 "Playwright (bash scripts/test.sh)")


@pytest.fixture(scope="module")
def site():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: the test command installs Debian's chromium "
                    "(bash scripts/test.sh)")
    daemon, url = start_api(SETTINGS, cluster=CLUSTER, files=FILES)
    yield daemon, url
    daemon.cleanup()


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


PATIENCE_MS = 120_000
"""How long a wait on the page may last. Each wait ends once its condition
holds, so this fails only a page that never gets there, not a slow machine."""


OPEN: list = []
"""The tabs a test opened, closed after it: each holds an event stream, and
a user may hold four."""


def new_page(browser, **options):
    """A tab of its own (storage and all), in a zone that is not the site's;
    ``options``: Playwright's new_page options (viewport, color_scheme, ...)."""
    page = browser.new_page(**{"viewport": {"width": 1400, "height": 1000},
                               "timezone_id": BROWSER_ZONE, **options})
    page.set_default_timeout(PATIENCE_MS)
    OPEN.append(page)
    return page


def signed_in(browser, daemon, user: str, requests: list | None = None, **options):
    """A page signed in as ``user`` through the link plus_web prints; the
    requests it makes are appended to ``requests`` if given."""
    out = daemon.ok(user, "plus_web")
    link = re.search(r"https?://\S+", out).group(0)
    page = new_page(browser, **options)
    if requests is not None:
        page.on("request", lambda request: requests.append(request))
    page.goto(link)
    page.wait_for_selector("body[data-ready=yes]")
    return page


def until(page, predicate: str, timeout_ms: int = PATIENCE_MS) -> None:
    """Wait until the page's JavaScript ``predicate`` holds. Not Playwright's
    wait_for_function: its polling evaluates strings, which the page's
    Content-Security-Policy forbids."""
    page.evaluate(f"""async () => {{
      const deadline = performance.now() + {timeout_ms};
      while (!({predicate})) {{
        if (performance.now() > deadline) throw new Error("timed out waiting for " + {json.dumps(predicate)});
        await new Promise(resolve => setTimeout(resolve, 50));
      }}
    }}""")


def said(page, name: str, refused: bool = False) -> str:
    """The page's message once it shows (a refusal, else information),
    saved as the screenshot ``name``."""
    page.wait_for_selector("#message:not(.info):not([hidden])" if refused else "#message.info")
    shot(page, name)
    return page.locator("#message").inner_text()


def bars(page) -> dict[int, dict]:
    """The AR bars the page holds: per AR, its nodes, start, end and state class."""
    found: dict[int, dict] = {}
    for item in page.evaluate("view.items.get().filter(i => i.ar !== undefined)"):
        bar = found.setdefault(item["ar"], {"nodes": set(), "start": item["start"] // 1000,
                                            "end": item["end"] // 1000})
        bar["nodes"].add(item["group"])
        bar["state"] = re.search(r"state-(\w+)", item["className"]).group(1)
    return found


def test_the_page_shows_the_ars_as_plus_status_does(site, browser):
    daemon, _ = site
    mine = daemon.reserve("plusu1", "-s", "now+1h", "-D", "2h", "-n", "2", "-N", "sim")
    theirs = daemon.reserve("plusu2", "-s", "now+2h", "-D", "1h", "-n", "1")
    page = signed_in(browser, daemon, "plusu1")
    shot(page, "01-calendar")
    shown = bars(page)
    states = {"w": "waiting", "r": "running", "p": "pending", "W": "warning", "E": "error"}
    for ar in daemon.status():
        if ar["id"] not in (mine["id"], theirs["id"]):
            continue
        nodes = {a["node"] for a in ar["allocations"]}
        assert shown[ar["id"]]["nodes"] == nodes & set(page.evaluate("view.groups.getIds()"))
        assert (shown[ar["id"]]["start"], shown[ar["id"]]["end"]) == (ar["start"], ar["end"])
        assert shown[ar["id"]]["state"] == states[ar["state"]]
    assert page.locator(".vis-item.ar.mine").count() >= 1
    assert page.locator("#who").inner_text() == "plusu1"


@pytest.fixture(autouse=True)
def clean(site):
    yield
    while OPEN:
        page = OPEN.pop()
        if not page.is_closed():
            page.close()
    daemon, _ = site
    for ar in daemon.status():
        daemon.run("root", "plus_cancel", "-r", str(ar["id"]))


def bar(page, ar_id: int):
    """The AR's first bar (each bar carries its AR's id for the keyboard)."""
    return page.locator(f".vis-item.ar[data-ar='{ar_id}']").first


def click_bar(page, ar_id: int) -> None:
    bar(page, ar_id).click()
    page.wait_for_selector("#detail:not([hidden])")
    until(page, f"document.getElementById('detail').dataset.ar == '{ar_id}'")


def test_only_the_owner_sees_the_owners_actions(site, browser):
    daemon, _ = site
    mine = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1", "-N", "mine")
    theirs = daemon.reserve("plusu2", "-s", "now+3h", "-D", "1h", "-n", "1", "-N", "theirs")
    page = signed_in(browser, daemon, "plusu1")
    click_bar(page, theirs["id"])
    assert page.locator("#detail-owner-actions").is_hidden()
    fields = page.locator("#detail-fields").inner_text()
    assert "plusu2" in fields and theirs["allocations"][0]["node"] in fields
    shot(page, "02-another-users-ar")
    click_bar(page, mine["id"])
    assert page.locator("#detail-owner-actions").is_visible()
    shot(page, "03-own-ar")


def pending(daemon: Daemon, ar_id: int) -> str | None:
    """The AR's -T operation waiting for commit or abort, if any."""
    held = daemon.status("-r", str(ar_id))[0]["pending"]
    return held and held["operation"]


def test_a_cancel_is_confirmed_and_can_be_undone_while_the_ar_waits(site, browser):
    daemon, _ = site
    mine = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1", "-N", "undoable")
    page = signed_in(browser, daemon, "plusu1")
    click_bar(page, mine["id"])
    page.locator("#cancel-ar").click()
    page.wait_for_selector("#cancel-confirm:not([hidden])")
    shot(page, "13-cancel-asks-first")
    assert "undo it for 10 seconds" in page.locator("#cancel-confirm-text").inner_text()
    assert daemon.status("-r", str(mine["id"]))[0]["state"] == "w"      # one click does nothing
    page.locator("#cancel-no").click()
    assert page.locator("#cancel-confirm").is_hidden() and pending(daemon, mine["id"]) is None
    page.locator("#cancel-ar").click()
    page.locator("#cancel-yes").click()
    page.wait_for_selector("#undo:not([hidden])")
    shot(page, "14-cancel-can-be-undone")
    assert pending(daemon, mine["id"]) == "cancel"          # held (-T): nobody takes its nodes
    page.locator("#undo-button").click()
    assert "its cancel was undone" in said(page, "15-cancel-undone")
    after = daemon.status("-r", str(mine["id"]))[0]
    assert (after["state"], after["pending"], after["allocations"]) == \
        ("w", None, mine["allocations"])
    page.locator("#cancel-ar").click()
    page.locator("#cancel-yes").click()
    page.wait_for_selector("#undo:not([hidden])")
    page.wait_for_selector("#undo", state="hidden")          # the seconds pass: committed
    page.wait_for_selector("#message.info")
    assert page.locator("#message").inner_text() == f"AR {mine['id']} cancelled."
    assert daemon.status("-r", str(mine["id"]))[0]["state"] == "d"


def test_a_cancel_left_with_the_page_closed_is_committed(site, browser):
    daemon, _ = site
    mine = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    page = signed_in(browser, daemon, "plusu1")
    click_bar(page, mine["id"])
    page.locator("#cancel-ar").click()
    page.locator("#cancel-yes").click()
    page.wait_for_selector("#undo:not([hidden])")
    page.close(run_before_unload=True)
    wait_for(lambda: daemon.status("-r", str(mine["id"]))[0]["state"] == "d",
             "the cancel committed as the page went")


def test_a_running_ars_cancel_is_confirmed_and_says_it_cannot_be_undone(site, browser):
    daemon, _ = site
    running = daemon.reserve("plusu1", "-s", "now", "-D", "1h", "-n", "1")
    wait_for(lambda: daemon.status("-r", str(running["id"]))[0]["state"] == "r", "the AR to start")
    page = signed_in(browser, daemon, "plusu1")
    click_bar(page, running["id"])
    page.locator("#cancel-ar").click()
    assert "cannot be undone" in page.locator("#cancel-confirm-text").inner_text()
    page.locator("#cancel-yes").click()
    assert said(page, "16-running-cancelled") == f"AR {running['id']} cancelled."
    assert daemon.status("-r", str(running["id"]))[0]["state"] == "d"


def free_starts(page, nodes: int, hours: float) -> None:
    page.fill("#book-nodes", str(nodes))
    page.fill("#book-hours", str(hours))
    page.locator("#find").click()


def test_a_booking_made_by_clicking_a_free_span_appears_in_plus_status(site, browser):
    daemon, _ = site
    page = signed_in(browser, daemon, "plusu1")
    free_starts(page, 2, 1)
    page.wait_for_selector(".vis-item.vis-background.free")
    shot(page, "04-free-starts")
    click_in_first_free_span(page)
    assert "the daemon chooses the nodes" in page.locator("#confirm-text").inner_text()
    page.locator("#book").click()
    booked = int(re.search(r"Booked: AR (\d+)", said(page, "05-booked")).group(1))
    [ar] = daemon.status("-r", str(booked))
    assert (ar["owner"], len(ar["allocations"]), ar["end"] - ar["start"]) == ("plusu1", 2, 3600)
    until(page, f"view.items.get().some(i => i.ar === {booked})")


def test_a_refused_booking_shows_the_policys_text(site, browser):
    daemon, _ = site
    page = signed_in(browser, daemon, "plusu1")
    free_starts(page, 1, 8)
    text = said(page, "06-refused", refused=True)
    assert "site-limits" in text, text
    assert daemon.status() == []


def click_in_first_free_span(page) -> None:
    """A click about an hour into the first shaded span, in its node's row
    (the page shows a day), or on from there where no bar is (ended and
    cancelled ARs of earlier tests are drawn there too)."""
    span = page.locator(".vis-item.vis-background.free").first.bounding_box()
    timeline = page.locator(".vis-panel.vis-center").bounding_box()
    y = span["y"] + span["height"] / 2
    x = next(x for x in range(int(max(span["x"], timeline["x"])) + 60,
                              int(min(span["x"] + span["width"], timeline["x"] + timeline["width"])),
                              10)
             if not page.evaluate(f"document.elementFromPoint({x}, {y}).closest('.vis-item.ar, "
                                  f".vis-item.job')"))
    page.mouse.click(x, y)
    page.wait_for_selector("#confirm:not([hidden])")


def test_a_booking_taken_meanwhile_is_refused_and_the_spans_shaded_afresh(site, browser):
    daemon, _ = site
    page = signed_in(browser, daemon, "plusu1")
    free_starts(page, 8, 1)
    page.wait_for_selector(".vis-item.vis-background.free")
    click_in_first_free_span(page)
    taken = daemon.reserve("plusu2", "-s", "now+5m", "-D", "3h", "-n", "8")
    page.locator("#book").click()
    until(page, f"view.starts.length > 0 && "
                f"view.starts.every(([low]) => low >= {taken['end']})")
    text = page.locator("#message").inner_text()
    shot(page, "08-taken-meanwhile")
    assert page.locator("#message").get_attribute("class") == ""
    assert text.startswith("Not booked: ") and "of the 8 requested nodes" in text, text
    assert [ar["id"] for ar in daemon.status()] == [taken["id"]]


def drag_end(page, ar_id: int, hours: float) -> None:
    """Drag the right end of the AR's first bar by ``hours`` (the page shows a day).
    The click opens the AR's detail beside the timeline once the daemon has
    answered, narrowing it, and vis-timeline lays the bars out anew at its
    next resize check (each second): the handle is measured after both, or
    on a slow machine the drag misses it and no message ever comes."""
    handle = bar(page, ar_id)
    handle.click()
    page.wait_for_selector(f"#detail:not([hidden])[data-ar='{ar_id}']")
    until(page, "view.timeline.props.lastWidth === view.timeline.dom.root.offsetWidth")
    box = handle.locator(".vis-drag-right").bounding_box()
    hour = page.locator(".vis-panel.vis-center").bounding_box()["width"] / 24
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + hours * hour, box["y"] + box["height"] / 2,
                    steps=10)
    page.mouse.up()


def test_dragging_an_end_changes_the_window(site, browser):
    daemon, _ = site
    mine = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "2", "-N", "longer")
    page = signed_in(browser, daemon, "plusu1")
    drag_end(page, mine["id"], 1)
    text = said(page, "09-dragged")
    moved = re.fullmatch(rf"AR {mine['id']} now runs from (.+) to (.+)\.", text)
    assert moved, text
    fields = page.locator("#detail-fields").inner_text()       # the open detail follows
    assert f"start\n{moved.group(1)}\nend\n{moved.group(2)}\n" in fields + "\n", fields
    [after] = daemon.status("-r", str(mine["id"]))
    assert after["start"] == mine["start"]          # the end not dragged stays to the second
    assert 1800 < after["end"] - mine["end"] < 5400 and after["end"] % 60 == 0   # snapped
    for allocation in after["allocations"]:
        until(page, f"view.items.get('ar{mine['id']}@{allocation['node']}').end"
                    f".valueOf() === {after['end'] * 1000}")


def test_a_drag_that_would_double_book_is_refused(site, browser):
    daemon, _ = site
    mine = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "8")
    daemon.reserve("plusu2", "-s", "now+3h", "-D", "1h", "-n", "8")
    page = signed_in(browser, daemon, "plusu1")
    drag_end(page, mine["id"], 2.5)
    text = said(page, "07-double-booking-refused", refused=True)
    assert text.startswith(f"AR {mine['id']} was not changed: "), text
    [after] = daemon.status("-r", str(mine["id"]))
    assert (after["start"], after["end"]) == (mine["start"], mine["end"])
    until(page, f"view.items.get('ar{mine['id']}@node001').end.valueOf() === "
                f"{mine['end'] * 1000}")


def test_names_are_drawn_as_text_never_as_html(site, browser):
    """The daemon's name rules keep markup out of AR names; the page does
    not count on it: a row as /calendar could send one is drawn as text."""
    daemon, _ = site
    page = signed_in(browser, daemon, "plusu1")
    shown = page.evaluate("""() => {
      const now = Math.floor(Date.now() / 1000), node = view.groups.getIds()[0];
      view.ars = [[999, "<b id=forged>x</b>", "<i>someone</i>", "w", now + 3600, now + 7200, node]];
      draw();
      return [document.getElementById("forged") === null,
              document.querySelector(".vis-item.ar .vis-item-content").textContent];
    }""")
    assert shown == [True, "#999 <b id=forged>x</b>"]


DAY = 86400


@pytest.mark.parametrize("method, path, params, status, text", [
    ("GET", "/calendar", {"start": 2 * DAY, "end": DAY}, 400,
     "the window must end after it starts and span at most 400 days"),
    ("GET", "/calendar", {"start": DAY, "end": 402 * DAY}, 400, "span at most 400 days"),
    ("GET", "/calendar", {"start": -1, "end": DAY}, 422, "start"),
    ("GET", "/calendar", {"start": 0, "end": DAY, "since": 2 ** 63}, 422, "since"),
    ("GET", "/usage", {"start": 2 * DAY, "end": DAY}, 400,
     "the period's end must be later than its start"),
    ("GET", "/usage", {"start": 0, "end": DAY, "owner": "x" * 300}, 422, "owner"),
    ("POST", "/web/session", {"code": "short"}, 422, "code"),
    ("POST", "/web/session", {"code": "x" * 5000}, 422, "code"),
    ("POST", "/web/session", {"code": "x" * 40}, 401, "the sign-in link is not valid"),
    ("GET", "/web/vendor/plus.yaml", None, 404, "no page file plus.yaml"),
])
def test_the_pages_endpoints_refuse_bad_input_by_name(site, method, path, params, status, text):
    daemon, url = site
    before = daemon.status()
    headers = auth(token(daemon, "plusu1"))
    if method == "GET":
        refused = httpx.get(url + path, params=params, headers=headers)
    else:
        refused = httpx.post(url + path, json=params)
    assert refused.status_code == status, refused.text
    assert text in refused.text and "not installed" not in refused.text, refused.text
    assert daemon.status() == before


def test_the_sign_in_link_works_once_and_is_no_token(site):
    daemon, url = site
    code = re.search(r"#code=(\S+)", daemon.ok("plusu2", "plus_web")).group(1)
    assert httpx.get(url + "/whoami", headers=auth(code)).json()["error"] == \
        "a sign-in code is not a token: open the link plus_web printed in a browser"
    first = httpx.post(url + "/web/session", json={"code": code})
    assert first.status_code == 200 and first.json()["user"] == "plusu2"
    assert httpx.get(url + "/whoami", headers=auth(first.json()["token"])).json() == \
        {"user": "plusu2", "manager": False}
    again = httpx.post(url + "/web/session", json={"code": code})
    assert again.status_code == 401 and again.json()["error"] == \
        "the sign-in link was used already: run plus_web again for a new one"
    forged = httpx.post(url + "/web/session", json={"code": token(daemon, "plusu2")})
    assert forged.status_code == 401 and "does not carry a sign-in code" in forged.json()["error"]


def test_plus_web_says_when_the_api_is_off():
    daemon = Daemon()
    try:
        daemon.start()
        refused = daemon.run("plusu1", "plus_web")
        assert refused.returncode == 1 and refused.stderr.strip() == (
            "plus_web: the calendar page is served by the HTTP API, which is off here "
            "(http.address in plus.yaml)")
    finally:
        daemon.cleanup()


@pytest.fixture(scope="module")
def job_site():
    if os.geteuid() != 0:
        pytest.skip("jobs run as their owners: root only")
    port = free_port()
    with job_daemon(JOB_CLUSTER, settings=f"http: {{address: '127.0.0.1:{port}'}}\n") as daemon:
        yield daemon, answering(daemon, port)


def started(daemon: Daemon, job: str) -> int:
    """The job's start time as plus_qstat shows it."""
    out = daemon.ok("root", "plus_qstat", "-u", "*")
    fields = next(line.split() for line in out.splitlines()[2:] if line.split()[0] == job)
    return int(time.mktime(time.strptime(f"{fields[5]} {fields[6]}", "%m/%d/%Y %H:%M:%S")))


def _calendar_job(url: str, headers: dict, job: str) -> list | None:
    """The job's row in the calendar's window around now, as the page gets it."""
    now = int(time.time())
    answer = httpx.get(f"{url}/v1/calendar", params={"start": now - 3600, "end": now + 86400},
                       headers=headers)
    answer.raise_for_status()
    return next((row for row in answer.json()["jobs"] if str(row[0]) == job), None)


def test_running_and_reserved_jobs_are_thin_bars_on_their_hosts(job_site, browser, work):
    daemon, url = job_site
    running = submit(daemon, work, "-l", "h=web1,h_rt=3600", "-b", "y", "sleep", "300")
    wait_for(lambda: states(daemon).get(running) == "r", "the job to run")
    waiting = submit(daemon, work, "-R", "y", "-l", "h=web1,h_rt=1800", "-b", "y", "true",
                     user="plusu2")
    headers = auth(token(daemon, "plusu1"))
    wait_for(lambda: _calendar_job(url, headers, waiting) is not None,
             "the scheduler to plan the waiting job (jobs are not events: a page loaded "
             "before would draw its bar only at the next AR change)")
    page = signed_in(browser, daemon, "plusu1")
    until(page, f"view.items.get('job{waiting}@web1') !== null")
    run_bar = page.evaluate(f"view.items.get('job{running}@web1')")
    plan_bar = page.evaluate(f"view.items.get('job{waiting}@web1')")
    page.locator("[data-zoom='21600']").click()
    page.locator("#now").click()
    shot(page, "10-job-bars")
    assert (run_bar["className"], plan_bar["className"]) == ("job job-running", "job job-reserved")
    assert run_bar["start"] // 1000 == started(daemon, running)
    planned = 1000 * (1 + 3600)        # h_rt planned as the scheduler does, duration_offset 1
    assert run_bar["end"] - run_bar["start"] == planned and plan_bar["start"] >= run_bar["end"]
    assert plan_bar["end"] - plan_bar["start"] == 1000 * (1 + 1800)
    assert "plusu2" in plan_bar["title"] and page.evaluate("view.items.get().filter("
                                                          "i => i.group === 'web2').length") == 0
    job_height = page.locator(".vis-item.job-running").bounding_box()["height"]
    assert job_height < page.locator(".vis-labelset .vis-label").first.bounding_box()["height"] / 2
    daemon.ok("root", "plus_qdel", running, waiting)


def test_the_usage_chart_shows_reserved_and_used_node_hours(job_site, browser, work):
    daemon, _ = job_site
    ar = daemon.reserve("plusu1", "-s", "now", "-D", "1h", "-n", "1")
    wait_for(lambda: daemon.status("-r", str(ar["id"]))[0]["state"] == "r", "the AR to start")
    job = submit(daemon, work, "-ar", str(ar["id"]), "-b", "y", "sleep", "3")
    wallclock = int(re.match(r"\d+", accounting(daemon, job)["ru_wallclock"]).group(0))
    daemon.ok("plusu1", "plus_cancel", "-r", str(ar["id"]))
    wait_for(lambda: any(line.split(":")[1:5:3] == ["ar_acct", str(ar["id"])] for line in
                         (daemon.dir / "state" / "reporting").read_text().splitlines()),
             "the cancel's records in the reporting file (the leader appends them)")
    listed = daemon.ok("plusu1", "plus_account", "-l", "-d", "1")
    held = re.search(rf"^\s*{ar['id']} .* (\d+):(\d+):(\d+)\s+[\d.]+ web\d( [\d.]+){{3}}$",
                     listed, re.M)
    reserved = int(held.group(1)) * 3600 + int(held.group(2)) * 60 + int(held.group(3))
    page = signed_in(browser, daemon, "plusu1")
    page.locator("#usage-show").click()
    until(page, "view.usageChart !== null")
    shot(page, "11-usage")
    points = page.evaluate("JSON.parse(view.usageChart.dom.root.dataset.points)")
    shown = {group: sum(p["y"] for p in points if p["group"] == group)
             for group in ("reserved", "used")}
    assert abs(shown["reserved"] * 3600 - reserved) <= 1, (shown, listed)
    assert abs(shown["used"] * 3600 - wallclock) <= 1, (shown, wallclock)
    assert page.locator("#usage-owner").input_value() == "plusu1"
    assert page.locator("#usage-chart .vis-timeline").count() == 1


def test_the_apis_documentation_renders_offline_under_the_pages_policy(site, browser):
    """/docs is Swagger UI from the install: every request it makes stays on
    the API's origin, and it lists the operations of /openapi.json."""
    _, url = site
    page = new_page(browser)
    elsewhere: list[str] = []
    page.on("request", lambda request: None if request.url.startswith(url)
            else elsewhere.append(request.url))
    answer = page.goto(url + "/docs")
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    page.wait_for_selector(".opblock-summary-path[data-path='/v1/reservations']")
    paths = set(page.locator(".opblock-summary-path").evaluate_all(
        "nodes => nodes.map(n => n.dataset.path)"))
    assert {"/v1/whoami", "/v1/reservations/{ar_id}", "/v1/ggf/setres"} <= paths
    shot(page, "12-api-docs")
    assert elsewhere == []
    page.close()


def boxes_overlap(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def test_ars_sharing_a_node_by_slots_are_stacked_each_to_be_clicked(site, browser):
    daemon, _ = site
    first = daemon.reserve("plusu1", "-s", "now+1h", "-D", "2h", "-n", "1", "-sn", "2", "-N", "a")
    second = daemon.reserve("plusu2", "-s", "now+2h", "-D", "2h", "-n", "1", "-sn", "2", "-N", "b")
    node = first["allocations"][0]["node"]
    assert second["allocations"][0]["node"] == node, (first, second)
    page = signed_in(browser, daemon, "plusu1")
    shot(page, "17-stacked-slots")
    one, other = bar(page, first["id"]).bounding_box(), bar(page, second["id"]).bounding_box()
    assert not boxes_overlap(one, other), (one, other)
    for ar in (first, second):
        click_bar(page, ar["id"])
        assert page.locator("#detail-title").inner_text().startswith(f"AR {ar['id']} ")


def test_ended_and_cancelled_ars_are_drawn_and_the_legend_filters_by_state(site, browser):
    daemon, _ = site
    ended = daemon.reserve("plusu1", "-s", "now", "-D", "3s", "-n", "1", "-N", "short")
    cancelled = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1", "-N", "gone")
    daemon.ok("plusu1", "plus_cancel", "-r", str(cancelled["id"]))
    wait_for(lambda: daemon.status("-r", str(ended["id"]))[0]["state"] == "x", "the AR to end")
    page = signed_in(browser, daemon, "plusu1")
    page.locator("[data-zoom='21600']").click()
    page.locator("#now").click()
    shot(page, "18-ended-and-cancelled")
    shown = bars(page)
    assert (shown[ended["id"]]["state"], shown[cancelled["id"]]["state"]) == ("exited", "deleted")
    page.locator("#legend input[data-state='d']").uncheck()
    until(page, f"view.items.get('ar{cancelled['id']}@{cancelled['allocations'][0]['node']}') === null")
    assert ended["id"] in bars(page) and cancelled["id"] not in bars(page)
    click_bar(page, ended["id"])
    assert page.locator("#detail-owner-actions").is_hidden()


def local(seconds: int, zone: str) -> str:
    """The time as the page shows it in ``zone`` without the zone's name."""
    return dt.datetime.fromtimestamp(seconds, ZoneInfo(zone)).strftime("%H:%M")


def test_times_show_their_zone_the_sites_by_default_and_the_users_choice_stays(site, browser):
    daemon, url = site
    assert httpx.get(url + "/web/config").json()["timezone"] == SITE_ZONE
    mine = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1")
    page = signed_in(browser, daemon, "plusu1")
    assert page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone") == BROWSER_ZONE
    assert page.locator("#zone").input_value() == SITE_ZONE
    click_bar(page, mine["id"])
    fields = page.locator("#detail-fields").inner_text()
    assert f"{local(mine['start'], SITE_ZONE)} GMT+5:30" in fields, fields
    axis = page.evaluate("view.timeline.getWindow().start.valueOf()")
    assert page.evaluate(f"zoned({axis}).format('HH:mm')") == local(axis // 1000, SITE_ZONE)
    page.locator("#zone").select_option(BROWSER_ZONE)
    until(page, "document.getElementById('detail-fields').textContent.includes('PST') || "
                "document.getElementById('detail-fields').textContent.includes('PDT')")
    shot(page, "19-chosen-zone")
    fields = page.locator("#detail-fields").inner_text()
    assert local(mine["start"], BROWSER_ZONE) in fields, fields
    page.reload()
    page.wait_for_selector("body[data-ready=yes]")
    assert page.locator("#zone").input_value() == BROWSER_ZONE      # kept for this browser
    page.locator("#edit-end").wait_for(state="attached")


def test_rows_filter_by_node_property_and_bars_by_owner(site, browser):
    daemon, _ = site
    mine = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "8")
    theirs = daemon.reserve("plusu2", "-s", "now+3h", "-D", "1h", "-n", "1")
    page = signed_in(browser, daemon, "plusu1")
    page.fill("#property-filter", "gpu=yes")
    until(page, "view.groups.length === 2")
    assert sorted(page.evaluate("view.groups.getIds()")) == ["node005", "node006"]
    page.fill("#property-filter", "gpu")
    until(page, "view.groups.length === 2")
    page.fill("#property-filter", "gpu=no*")
    until(page, "view.groups.length === 0")
    assert page.locator("#node-page").inner_text() == "no nodes"
    page.fill("#property-filter", "")
    page.locator("#owner-filter").select_option("plusu2")
    until(page, "view.items.get().every(i => i.ar === undefined || i.label.includes(' of plusu2: '))")
    shot(page, "20-owner-filter")
    assert theirs["id"] in bars(page) and mine["id"] not in bars(page)


def test_an_ar_is_found_by_id_or_name_and_has_a_link(site, browser):
    daemon, url = site
    later = daemon.reserve("plusu2", "-s", "now+5h", "-D", "1h", "-n", "1", "-N", "findme")
    other = daemon.reserve("plusu2", "-s", "now+2h", "-D", "1h", "-n", "1", "-N", "another")
    page = signed_in(browser, daemon, "plusu1")
    page.fill("#search", "FINDme")
    page.press("#search", "Enter")
    page.wait_for_selector(f"#detail:not([hidden])[data-ar='{later['id']}']")
    assert page.evaluate("location.hash") == f"#ar={later['id']}"
    page.fill("#search", str(other["id"]))
    page.locator("#search-form button").click()
    page.wait_for_selector(f"#detail:not([hidden])[data-ar='{other['id']}']")
    shot(page, "21-found")
    page.fill("#search", "nothing-like-it")
    page.press("#search", "Enter")
    assert "No AR whose name holds \"nothing-like-it\"" in said(page, "22-not-found", refused=True)
    link = page.locator("#detail-link").get_attribute("href")
    page.goto(f"{url}/web/#ar={later['id']}")             # the link, in the same tab
    page.wait_for_selector("body[data-ready=yes]")
    page.wait_for_selector(f"#detail:not([hidden])[data-ar='{later['id']}']")
    assert link == f"#ar={other['id']}"
    page.evaluate(f"location.hash = '#ar={other['id']}'")
    page.wait_for_selector(f"#detail:not([hidden])[data-ar='{other['id']}']")


AXE = Path(VENV) / "share" / "plus" / "axe" / "axe.min.js"


def serious_violations(page) -> list[dict]:
    """axe-core's serious and critical findings on the page as it is (the
    page needs bypass_csp: axe is injected, never served)."""
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: scripts/install.sh test installs axe-core")
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("""async () => (await axe.run(document, {resultTypes: ["violations"]}))
      .violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                             nodes: v.nodes.slice(0, 3).map(n => n.target.join(" ") + ": " + n.failureSummary)}))""")
    return [v for v in found if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_bar_and_action_works_from_the_keyboard_and_axe_finds_nothing_serious(
        site, browser, scheme):
    daemon, _ = site
    mine = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "2", "-N", "keys")
    daemon.reserve("plusu2", "-s", "now+3h", "-D", "1h", "-n", "1")
    page = signed_in(browser, daemon, "plusu1", color_scheme=scheme, bypass_csp=True)
    until(page, "document.querySelectorAll('.vis-item.ar[role=button][tabindex=\"0\"]').length"
                " === document.querySelectorAll('.vis-item.ar').length")
    page.locator("#search").focus()
    for _ in range(200):                                # Tab on until a bar has the focus
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.dataset.ar !== undefined"):
            break
    assert page.evaluate("Number(document.activeElement.dataset.ar)") in bars(page)
    bar(page, mine["id"]).focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#detail:not([hidden])[data-ar='{mine['id']}']")
    label = bar(page, mine["id"]).get_attribute("aria-label")
    assert label.startswith(f"AR {mine['id']} keys of plusu1: waiting, ")
    end = dt.datetime.strptime(page.locator("#edit-end").input_value(), "%Y-%m-%dT%H:%M")
    page.locator("#edit-end").fill((end + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M"))
    page.locator("#edit-window").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("#message.info")
    after = daemon.status("-r", str(mine["id"]))[0]      # the site's zone has no DST
    assert (after["start"], after["end"]) == (mine["start"], mine["end"] // 60 * 60 + 3600)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert (background == "rgb(22, 24, 28)") == (scheme == "dark"), background
    shot(page, f"23-keyboard-{scheme}")
    assert serious_violations(page) == []
    page.locator("#cancel-ar").focus()
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "cancel-no"
    page.keyboard.press("Enter")
    assert page.locator("#cancel-confirm").is_hidden()


def test_on_a_phone_bars_stay_readable(site, browser):
    daemon, _ = site
    mine = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "1", "-N", "phone")
    page = signed_in(browser, daemon, "plusu1", viewport={"width": 390, "height": 844},
                     is_mobile=True, has_touch=True, device_scale_factor=2)
    shown = bar(page, mine["id"])
    shot(page, "24-phone")
    box = shown.bounding_box()
    font = shown.evaluate("b => parseFloat(getComputedStyle(b).fontSize)")
    clipped = shown.locator(".vis-item-overflow").evaluate("o => getComputedStyle(o).overflow")
    assert box["height"] >= 28 and font >= 14 and box["width"] >= 80, (box, font)  # an hour
    assert clipped == "visible"             # a name longer than its bar runs on, readable
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    click_bar(page, mine["id"])
    detail = page.locator("#detail").bounding_box()
    assert detail["y"] > page.locator("#timeline").bounding_box()["y"] and detail["width"] > 300
    shot(page, "24-phone")


def test_booking_with_slots_properties_users_and_a_name_on_a_nodes_free_row(site, browser):
    daemon, _ = site
    busy = daemon.reserve("plusu2", "-s", "now", "-D", "6h", "-n", "1", "-l", "gpu=yes")
    held = busy["allocations"][0]["node"]
    page = signed_in(browser, daemon, "plusu1")
    page.fill("#book-slots", "2")
    page.fill("#book-properties", "gpu=yes")
    page.fill("#book-users", "plusu2")
    page.fill("#book-name", "fromweb")
    free_starts(page, 1, 1)
    page.wait_for_selector(".vis-item.vis-background.free")
    shot(page, "25-free-per-node")
    shaded = page.evaluate("view.items.get().filter(i => i.className === 'free')"
                           ".map(i => [i.group, i.start])")
    assert {node for node, _ in shaded} == {"node005", "node006"}, shaded    # gpu=yes only
    assert all(start >= busy["end"] * 1000 for node, start in shaded if node == held), shaded
    click_in_first_free_span(page)
    confirm = page.locator("#confirm-text").inner_text()
    chosen = re.match(r"Book 1 node\(s\) on (node00[56]) from ", confirm)  # one node: the row's
    assert "as fromweb" in confirm and chosen, confirm
    page.locator("#book").click()
    booked = int(re.search(r"Booked: AR (\d+)", said(page, "26-booked-with-options")).group(1))
    [ar] = daemon.status("-r", str(booked))
    assert (ar["name"], ar["allocations"][0]["slots"]) == ("fromweb", 2)
    assert "plusu2" in ar["acl"] and ar["allocations"][0]["node"] == chosen.group(1)
    page.fill("#book-properties", "gpu")
    page.locator("#find").click()
    assert "Properties: \"gpu\" is not name=value" in said(page, "27-bad-property", refused=True)
    page.fill("#book-properties", "")
    page.fill("#book-name", "a;nodes=99")
    page.locator("#find").click()
    page.wait_for_selector("#message:has-text(\"';' is not accepted\")")


def live(page) -> None:
    """Wait until the page reads the event stream."""
    until(page, "document.getElementById('live').dataset.state === 'live'")


def listings(requests: list) -> list:
    return [r for r in requests if "/v1/calendar?" in r.url]


def test_changes_by_others_come_through_the_event_stream_not_a_poll(site, browser):
    """Another user's AR made on the socket and one's own made through the
    API are drawn without a poll: over a heartbeat of the stream (10 s of
    silence, in which the old poll asked twice) the page asks nothing; the
    daemon restarts, the page says live updates are lost, comes back with
    Last-Event-ID and goes on."""
    daemon, url = site
    requests: list = []
    page = signed_in(browser, daemon, "plusu1", requests)
    live(page)
    theirs = daemon.reserve("plusu2", "-s", "now+2h", "-D", "1h", "-n", "1", "-N", "elsewhere")
    until(page, f"view.items.get().some(i => i.ar === {theirs['id']})")
    now = int(time.time())
    mine = httpx.post(url + "/v1/reservations", headers=auth(token(daemon, "plusu1")),
                      json={"start": now + 3 * 3600, "end": now + 4 * 3600, "nodes": 2})
    assert mine.status_code == 201, mine.text
    until(page, f"view.items.get().some(i => i.ar === {mine.json()['id']})")
    shot(page, "28-live")
    beats = page.evaluate("view.live.beats")
    until(page, f"view.live.beats > {beats}")       # settled: a loaded machine lays out late,
    asked, beats = len(listings(requests)), page.evaluate("view.live.beats")  # and a new
    until(page, f"view.live.beats > {beats}")       # window is fetched then, rightly
    assert len(listings(requests)) == asked, [r.url for r in listings(requests)]
    assert asked <= 3 + page.evaluate("view.reloads"), [r.url for r in listings(requests)]
    last = page.evaluate("view.live.last")
    daemon.stop()
    until(page, "document.getElementById('live').dataset.state === 'lost'")
    assert page.locator("#live").inner_text().startswith("Live updates lost: trying again in ")
    shot(page, "29-live-lost")
    daemon.start()
    live(page)
    streams = [r for r in requests if "/v1/events" in r.url]
    assert streams[-1].headers.get("last-event-id") == last, [r.headers for r in streams]
    after = daemon.reserve("plusu2", "-s", "now+5h", "-D", "1h", "-n", "1", "-N", "after")
    until(page, f"view.items.get().some(i => i.ar === {after['id']})")
    shot(page, "30-live-again")


def test_a_daemon_without_the_stream_is_polled_and_the_page_says_so(site, browser):
    daemon, _ = site
    page = new_page(browser)
    page.route("**/v1/events?*", lambda route: route.fulfill(status=404, body="{}"))
    page.goto(re.search(r"https?://\S+", daemon.ok("plusu1", "plus_web")).group(0))
    page.wait_for_selector("body[data-ready=yes]")
    until(page, "document.getElementById('live').dataset.state === 'refused'")
    assert page.locator("#live").inner_text() == \
        "Updated every 5 s (this daemon has no event stream)"
    theirs = daemon.reserve("plusu2", "-s", "now+2h", "-D", "1h", "-n", "1")
    until(page, f"view.items.get().some(i => i.ar === {theirs['id']})")
    shot(page, "31-polled")


def test_a_running_ars_panel_shows_node_hours_so_far_and_follows_its_events(
        job_site, browser, work):
    """Reserved against used node-hours of a running AR with one job on one
    of its two nodes, as GET /v1/usage/{id} gives them, carried on each
    second; read again when an event names the AR; for its owner, its users
    and managers only."""
    daemon, url = job_site
    ar = daemon.reserve("plusu1", "-s", "now", "-D", "1h", "-n", "2", "-N", "busy")
    wait_for(lambda: daemon.status("-r", str(ar["id"]))[0]["state"] == "r", "the AR to start")
    job = submit(daemon, work, "-ar", str(ar["id"]), "-b", "y", "sleep", "300")
    wait_for(lambda: states(daemon).get(job) == "r", "the job to run")
    bearer = auth(token(daemon, "plusu1"))
    wait_for(lambda: httpx.get(url + f"/v1/usage/{ar['id']}", headers=bearer).json()["busy"] == 1,
             "the job in the inventory")
    page = signed_in(browser, daemon, "plusu1")
    click_bar(page, ar["id"])
    page.wait_for_selector("#ar-usage:not([hidden])")
    until(page, "Number(document.getElementById('ar-usage').dataset.used) > 0")
    answer = httpx.get(url + f"/v1/usage/{ar['id']}", headers=bearer).json()
    shown = page.evaluate("({...document.getElementById('ar-usage').dataset, "
                          "now: Date.now() / 1000})")
    assert (answer["nodes"], answer["busy"], answer["start"]) == (2, 1, ar["start"])
    assert abs(answer["reserved"] - 2 * (answer["now"] - ar["start"])) <= 2, answer
    assert 0 < answer["used"] <= answer["reserved"] / 2 + 2, answer
    for key, rate in (("reserved", 2), ("used", 1)):       # the page's, carried on to its now
        expected = answer[key] + rate * (shown["now"] - answer["now"])
        assert abs(int(shown[key]) - expected) <= 2 * rate + 1, (key, shown, answer)
    assert page.locator("#ar-usage-text").inner_text().endswith(
        "1 of 2 node(s) running its jobs now.")
    shot(page, "32-ar-usage")
    asked = page.evaluate("Number(document.getElementById('ar-usage').dataset.asked)")
    daemon.ok("plusu1", "plus_modify", "-r", str(ar["id"]), "-D", "2h")   # on the socket
    until(page, f"Number(document.getElementById('ar-usage').dataset.asked) > {asked}")
    assert page.evaluate("view.arUsage.answer.end") == ar["start"] + 7200
    refused = httpx.get(url + f"/v1/usage/{ar['id']}", headers=auth(token(daemon, "plusu2")))
    assert refused.status_code == 403 and "for its owner, the users its access list names" \
        in refused.text, refused.text
    other = signed_in(browser, daemon, "plusu2")
    click_bar(other, ar["id"])
    assert other.locator("#ar-usage").is_hidden()
    waiting = daemon.reserve("plusu1", "-s", "now+2h", "-D", "1h", "-n", "1")
    for ar_id, status, words in ((waiting["id"], 400, "is not in its window (state w)"),
                                 (9_999_999, 404, "9999999"), (0, 422, "ar_id")):
        answer = httpx.get(url + f"/v1/usage/{ar_id}", headers=bearer)
        assert answer.status_code == status and words in answer.text, answer.text
    daemon.ok("root", "plus_qdel", job)


def test_a_click_on_a_nodes_name_books_that_node(site, browser):
    """hostname= (h=, Grid Engine's built-in complex) names nodes in any
    request: the page's row choice, plus_reserve -l and SETRES alike."""
    daemon, url = site
    page = signed_in(browser, daemon, "plusu1")
    page.locator(".vis-labelset .vis-label[data-node='node003']").click()
    until(page, "view.booking !== null && view.starts.length > 0")
    assert page.locator("#book-properties").input_value() == "hostname=node003"
    assert page.locator("#book-nodes").input_value() == "1"
    shaded = page.evaluate("view.items.get().filter(i => i.className === 'free').map(i => i.group)")
    assert set(shaded) == {"node003"}, shaded
    shot(page, "33-node-chosen")
    click_in_first_free_span(page)
    assert page.locator("#confirm-text").inner_text().startswith("Book 1 node(s) on node003 from ")
    page.locator("#book").click()
    booked = int(re.search(r"Booked: AR (\d+)", said(page, "34-node-booked")).group(1))
    assert [a["node"] for a in daemon.status("-r", str(booked))[0]["allocations"]] == ["node003"]
    page.locator(".vis-labelset .vis-label[data-node='node004']").focus()    # the keyboard's way
    page.keyboard.press("Enter")
    until(page, "document.getElementById('book-properties').value === 'hostname=node004'")
    two = daemon.reserve("plusu2", "-s", "now+1h", "-D", "1h", "-n", "2", "-l",
                         "h=node001|node002")
    assert sorted(a["node"] for a in two["allocations"]) == ["node001", "node002"]
    ranged = daemon.reserve("plusu2", "-s", "now+1h", "-D", "1h", "-n", "1", "-l",
                            "hostname=node00[56]")
    assert ranged["allocations"][0]["node"] in ("node005", "node006")
    refused = daemon.run("plusu2", "plus_reserve", "-s", "now+1h", "-D", "1h", "-n", "1",
                         "-l", "h=nosuch")
    assert refused.returncode == 1 and "0 match the request" in refused.stderr, refused.stderr
    setres = httpx.post(url + "/v1/ggf/setres", headers=auth(token(daemon, "plusu2")),
                        json={"UserID": "plusu2", "TimeNeeded": "3600s",
                              "StartTime": str(int(time.time()) + 7200),
                              "ResourceList": "nodes=1;h=node006"})
    assert setres.status_code == 201, setres.text
    assert [a["node"] for a in setres.json()["reservation"]["allocations"]] == ["node006"]


@pytest.fixture(scope="module")
def approval_site():
    """A site whose policy holds ARs of more than one node for a manager."""
    daemon, url = start_api(SETTINGS + "  big: {type: approval, max_nodes: 1}\n", cluster=CLUSTER,
                            files=FILES)
    yield daemon, url
    daemon.cleanup()


def test_a_manager_sees_an_ar_awaiting_approval_marked_and_approves_or_denies_it(
        approval_site, browser):
    daemon, _ = approval_site
    first = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1h", "-n", "2", "-N", "asks")
    second = daemon.reserve("plusu1", "-s", "now+3h", "-D", "1h", "-n", "2", "-N", "asks-too")
    assert (first["state"], second["state"]) == ("h", "h")
    owner = signed_in(browser, daemon, "plusu1")
    assert bars(owner)[first["id"]]["state"] == "awaiting"
    click_bar(owner, first["id"])
    assert owner.locator("#detail-decision").is_hidden()
    held = owner.locator("#detail-fields").inner_text()
    assert "awaiting approval" in held and "none yet: it awaits a manager's approval" in held
    assert "submit jobs with" not in held and "plus_qsub" not in held
    page = signed_in(browser, daemon, "plusmgr")
    click_bar(page, first["id"])
    assert page.locator("#detail-decision").is_visible()
    assert "plus_qsub" not in page.locator("#detail-fields").inner_text()
    shot(page, "30-awaiting-approval")
    page.locator("#approve-ar").click()
    assert said(page, "31-approved") == f"AR {first['id']} approved (state w)."
    assert daemon.status("-r", str(first["id"]))[0]["state"] == "w"
    until(page, f"view.items.get('ar{first['id']}@{first['allocations'][0]['node']}')"
                ".className.includes('state-waiting')")
    click_bar(owner, first["id"])
    until(owner, "document.getElementById('detail-fields').innerText"
                 f".includes('plus_qsub -ar {first['id']}')")    # approved: how to use it
    click_bar(page, second["id"])
    page.fill("#deny-reason", "the room is closed that day")
    page.locator("#deny-ar").click()
    assert said(page, "32-denied") == f"AR {second['id']} denied (state d)."
    [denied] = daemon.status("-r", str(second["id"]))
    assert (denied["state"], denied["message"]) == ("d", "denied by plusmgr: the room is closed "
                                                         "that day")
def test_a_manager_books_maintenance_from_the_form_and_a_user_has_no_such_box(site, browser):
    """issue 33: the booking form's maintenance box, for managers only,
    books a maintenance AR (POST /reservations with maint), shown [M]."""
    daemon, _ = site
    user = signed_in(browser, daemon, "plusu1")
    assert not user.locator("#book-maint").is_visible()
    page = signed_in(browser, daemon, "plusmgr")
    assert page.locator("#book-maint").is_visible()
    page.locator(".vis-labelset .vis-label[data-node='node006']").click()
    until(page, "view.booking !== null && view.starts.length > 0")
    page.fill("#book-name", "fw")
    page.locator("#book-maint").check()
    click_in_first_free_span(page)
    page.locator("#book").click()
    booked = int(re.search(r"Booked for maintenance: AR (\d+)", said(page, "35-maint")).group(1))
    [ar] = daemon.status("-r", str(booked))
    assert ar["request"]["maint"] is True and ar["owner"] == "plusmgr"
    assert [a["node"] for a in ar["allocations"]] == ["node006"]
    until(page, f"view.items.get().some(i => i.ar === {booked})")
