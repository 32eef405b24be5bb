"""The reservations calendar in a real browser: Debian's Chromium, headless,
driven by Playwright, against a real daemon with the quickstart's cluster
and its HTTP API, signed in through plus_web's one-time link as real
users. Each state the tests reach is saved as a screenshot under
artifacts/web/ (CI keeps that folder)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from http_harness import start_api

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
