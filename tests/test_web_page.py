"""The reservations calendar in a real browser: Debian's Chromium, headless,
driven by Playwright, against a real daemon with the quickstart's cluster
and its HTTP API, signed in through plus_web's one-time link as real
users. Each state the tests reach is saved as a screenshot under
artifacts/web/ (CI keeps that folder)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import httpx
import pytest

from daemon_harness import Daemon, job_daemon
from http_harness import answering, auth, free_port, start_api, token
from test_native_daemon import accounting, states, submit, wait_for

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parents[1] / "artifacts" / "web"
CONF = Path(__file__).parents[1] / "conf"
CLUSTER = (CONF / "cluster.yaml").read_text()
FILES = {"complexes.yaml": (CONF / "complexes.yaml").read_text()}
SETTINGS = """\
http: {address: {address}}
policies:
  site-limits: {type: limits, max_duration: 6h}
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


def new_page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(PATIENCE_MS)
    return page


def signed_in(browser, daemon, user: str):
    """A page signed in as ``user`` through the link plus_web prints."""
    out = daemon.ok(user, "plus_web")
    link = re.search(r"https?://\S+", out).group(0)
    page = new_page(browser)
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
    daemon, _ = site
    for ar in daemon.status():
        daemon.run("root", "plus_cancel", "-r", str(ar["id"]))


def click_bar(page, ar_id: int) -> None:
    page.locator(f".vis-item.ar:has-text('#{ar_id}')").first.click()
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
    page.locator("#cancel-ar").click()
    page.wait_for_selector("#message.info")
    assert daemon.status("-r", str(mine["id"]))[0]["state"] == "d"


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
    """A click about an hour into the first shaded span (the page shows a day)."""
    span = page.locator(".vis-item.vis-background.free").first.bounding_box()
    timeline = page.locator(".vis-panel.vis-center").bounding_box()
    page.mouse.click(max(span["x"], timeline["x"]) + 60, timeline["y"] + 20)
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
    bar = page.locator(f".vis-item.ar:has-text('#{ar_id}')").first
    bar.click()
    page.wait_for_selector(f"#detail:not([hidden])[data-ar='{ar_id}']")
    until(page, "view.timeline.props.lastWidth === view.timeline.dom.root.offsetWidth")
    box = bar.locator(".vis-drag-right").bounding_box()
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


def test_running_and_reserved_jobs_are_thin_bars_on_their_hosts(job_site, browser, work):
    daemon, _ = job_site
    running = submit(daemon, work, "-l", "h=web1,h_rt=3600", "-b", "y", "sleep", "300")
    wait_for(lambda: states(daemon).get(running) == "r", "the job to run")
    waiting = submit(daemon, work, "-R", "y", "-l", "h=web1,h_rt=1800", "-b", "y", "true",
                     user="plusu2")
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
    held = re.search(rf"^\s*{ar['id']} .* (\d+):(\d+):(\d+)\s+[\d.]+ web\d$", listed, re.M)
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
