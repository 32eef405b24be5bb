"""The reservations calendar in a real browser: Debian's Chromium, headless,
driven by Playwright, against a real daemon with the quickstart's cluster
and its HTTP API, signed in through plus_web's one-time link as real
users. Each state the tests reach is saved as a screenshot under
artifacts/web/ (CI keeps that folder)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx
import pytest

from daemon_harness import Daemon
from http_harness import auth, start_api, token

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


def signed_in(browser, daemon, user: str):
    """A page signed in as ``user`` through the link plus_web prints."""
    out = daemon.ok(user, "plus_web")
    link = re.search(r"https?://\S+", out).group(0)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(link)
    page.wait_for_selector("body[data-ready=yes]", timeout=15000)
    return page


def bars(page) -> dict[int, dict]:
    """The AR bars the page holds: per AR, its nodes, start, end and state class."""
    found: dict[int, dict] = {}
    for item in page.evaluate("view.items.get().filter(i => i.ar !== undefined)"):
        bar = found.setdefault(item["ar"], {"nodes": set(), "start": item["start"] // 1000,
                                            "end": item["end"] // 1000})
        bar["nodes"].add(item["group"])
        bar["state"] = re.search(r"state-(\w+)", item["className"]).group(1)
    return found


def reserve(daemon, user: str, *args: str) -> dict:
    return daemon.reserve(user, *args)


def test_the_page_shows_the_ars_as_plus_status_does(site, browser):
    daemon, _ = site
    mine = reserve(daemon, "plusu1", "-s", "now+1h", "-D", "2h", "-n", "2", "-N", "sim")
    theirs = reserve(daemon, "plusu2", "-s", "now+2h", "-D", "1h", "-n", "1")
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
    page.wait_for_function(f"document.getElementById('detail').dataset.ar == '{ar_id}'")


def test_only_the_owner_sees_the_owners_actions(site, browser):
    daemon, _ = site
    mine = reserve(daemon, "plusu1", "-s", "now+1h", "-D", "1h", "-n", "1", "-N", "mine")
    theirs = reserve(daemon, "plusu2", "-s", "now+3h", "-D", "1h", "-n", "1", "-N", "theirs")
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
    span = page.locator(".vis-item.vis-background.free").first.bounding_box()
    timeline = page.locator(".vis-panel.vis-center").bounding_box()
    left = max(span["x"], timeline["x"])
    page.mouse.click(left + 60, timeline["y"] + 20)
    page.wait_for_selector("#confirm:not([hidden])")
    page.locator("#book").click()
    page.wait_for_selector("#message.info")
    shot(page, "05-booked")
    booked = int(re.search(r"Booked: AR (\d+)", page.locator("#message").inner_text()).group(1))
    [ar] = daemon.status("-r", str(booked))
    assert (ar["owner"], len(ar["allocations"]), ar["end"] - ar["start"]) == ("plusu1", 2, 3600)
    page.wait_for_function(f"view.items.get().some(i => i.ar === {booked})")


def test_a_refused_booking_shows_the_policys_text(site, browser):
    daemon, _ = site
    page = signed_in(browser, daemon, "plusu1")
    free_starts(page, 1, 8)
    page.wait_for_selector("#message:not(.info):not([hidden])")
    text = page.locator("#message").inner_text()
    shot(page, "06-refused")
    assert "site-limits" in text, text
    assert daemon.status() == []


def test_a_drag_that_would_double_book_is_refused(site, browser):
    daemon, _ = site
    mine = reserve(daemon, "plusu1", "-s", "now+1h", "-D", "1h", "-n", "8")
    reserve(daemon, "plusu2", "-s", "now+3h", "-D", "1h", "-n", "8")
    page = signed_in(browser, daemon, "plusu1")
    bar = page.locator(f".vis-item.ar:has-text('#{mine['id']}')").first
    bar.click()
    handle = bar.locator(".vis-drag-right")
    box = handle.bounding_box()
    hour = page.locator(".vis-panel.vis-center").bounding_box()["width"] / 24
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + 2.5 * hour, box["y"] + box["height"] / 2, steps=10)
    page.mouse.up()
    page.wait_for_selector("#message:not(.info):not([hidden])")
    text = page.locator("#message").inner_text()
    shot(page, "07-double-booking-refused")
    assert text.startswith(f"AR {mine['id']} was not changed: "), text
    [after] = daemon.status("-r", str(mine["id"]))
    assert (after["start"], after["end"]) == (mine["start"], mine["end"])
    page.wait_for_function(f"view.items.get('ar{mine['id']}@node001').end.valueOf() === "
                           f"{mine['end'] * 1000}")


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
