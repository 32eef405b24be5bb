"""The calendar page at 1,000 nodes and 10,000 ARs in headless Chromium
(issue 18): its first render (from navigation to the bars drawn: the page,
vis-timeline, the sign-in exchange, the first window's ARs) and a week's
scroll (the window moved a week on: the new window's ARs asked for and
drawn), at the day view and at the week view. Prints medians in ms and the
machine's speed.

Run as root after scripts/install.sh and with Debian's chromium installed
(scripts/test.sh installs it):
  /opt/plus-venv/bin/python scripts/bench_web.py [--ars 10000] [--runs 7]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import time

from playwright.sync_api import sync_playwright

from bench_core import BIN, NODES, Daemon
from bench_ggf import api_site
from calibration import python_speed

CHROMIUM = "/usr/bin/chromium"
WEEK = 7 * 86400
SCROLL = """async (days) => {
  const range = view.timeline.getWindow();
  const start = range.start.valueOf() + days * 86400000, end = range.end.valueOf() + days * 86400000;
  const began = performance.now();
  view.timeline.setWindow(start, end, {animation: false});
  while (!(view.loaded && view.loaded.start * 1000 <= start && view.loaded.end * 1000 >= end))
    await new Promise(resolve => setTimeout(resolve, 1));
  await new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  return performance.now() - began;
}"""
"""A scroll's time: until the new window's ARs are loaded and drawn (two
animation frames: the browser has painted). Between scrolls the page is
left to finish what it loads in the background, as a person's pause
between two scrolls would."""


IDLE = """async () => {
  while (view.loading > 0) await new Promise(resolve => setTimeout(resolve, 5));
  await new Promise(resolve => setTimeout(resolve, 50));
}"""


def sign_in_link(daemon: Daemon) -> str:
    out = subprocess.run([str(BIN / "plus_web")], env=daemon.env, capture_output=True, text=True,
                         check=True).stdout
    return re.search(r"https?://\S+", out).group(0)


def first_render(browser, daemon: Daemon) -> tuple[float, int, int]:
    """ms from navigation to the first window drawn; the bars drawn and held."""
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.goto(sign_in_link(daemon))
    try:
        page.wait_for_selector("body[data-ready=yes]", timeout=60000)
    except Exception:
        raise SystemExit("the page did not get ready: " +
                         page.locator("#message").inner_text()) from None
    page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    elapsed = page.evaluate("performance.now()")
    drawn = page.locator(".vis-item.ar").count()
    held = page.evaluate("view.ars.length")
    page.close()
    return elapsed, drawn, held


def scrolls(browser, daemon: Daemon, runs: int, zoom_days: int) -> list[float]:
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.goto(sign_in_link(daemon))
    page.wait_for_selector("body[data-ready=yes]", timeout=60000)
    if zoom_days != 1:
        page.locator(f"[data-zoom='{zoom_days * 86400}']").click()
        page.evaluate(SCROLL, 0)
    times = []
    for _ in range(runs):
        page.evaluate(IDLE)                  # a person's pause between scrolls
        times.append(page.evaluate(SCROLL, 7))
    page.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ars", type=int, default=10000, help="ARs stored")
    parser.add_argument("--runs", type=int, default=7, help="runs per figure (median)")
    args = parser.parse_args()
    print(python_speed(), flush=True)
    with api_site(args.ars, int(time.time())) as (daemon, _, _):
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            renders = [first_render(browser, daemon) for _ in range(args.runs)]
            day = scrolls(browser, daemon, args.runs, 1)
            week = scrolls(browser, daemon, args.runs, 7)
            browser.close()
    elapsed = statistics.median(r[0] for r in renders)
    print(f"{NODES} nodes, {args.ars} ARs; the page shows {renders[0][1]} bars of "
          f"{renders[0][2]} ARs loaded around the first day")
    print(f"first render (navigation to bars drawn)  {elapsed:7.0f} ms   target 1000 ms")
    print(f"a week's scroll, day view                {statistics.median(day):7.0f} ms   "
          "target 200 ms")
    print(f"a week's scroll, week view               {statistics.median(week):7.0f} ms   "
          "target 200 ms")


if __name__ == "__main__":
    main()
