"""/metrics: who may scrape it (http.metrics), what it counts, and a real
Prometheus (scripts/test-prometheus.sh) answering every query of the sample
Grafana dashboard (conf/grafana-dashboard.json) from a test daemon."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest

from http_harness import auth, start_api
from overlay.daemon.config import ConfigError, load
from overlay.language.model import Request, Reservation, State
from overlay.usecases.tally import Tally
from overlay.wire import protocol

REPO = Path(__file__).resolve().parents[1]
DASHBOARD = REPO / "conf" / "grafana-dashboard.json"
PROMETHEUS = "http://127.0.0.1:9391"
SCRAPERS = Path("/etc/plus-test/prometheus")
"""scripts/test-prometheus.sh: the bearer secret Prometheus sends, and the
folder of targets it scrapes every second."""


def _reserve(daemon, user: str, *args: str) -> None:
    daemon.ok(user, "plus_reserve", *args)


def _settings(extra: str = "") -> str:
    return "http: {address: {address}" + extra + "}\n"


def test_a_scrape_needs_the_metrics_secret_by_default():
    daemon, url = start_api(_settings())
    try:
        refused = httpx.get(url + "/metrics")
        assert refused.status_code == 401
        assert "metrics secret" in refused.json()["error"]
        assert refused.headers["WWW-Authenticate"] == "Bearer"
        assert httpx.get(url + "/metrics", headers=auth("0" * 64)).status_code == 401
        user_token = daemon.ok("plusu1", "plus_token").strip()
        assert httpx.get(url + "/metrics", headers=auth(user_token)).status_code == 401
        secret = (daemon.dir / "state" / "metrics.token").read_text().strip()
        assert oct((daemon.dir / "state" / "metrics.token").stat().st_mode & 0o777) == "0o600"
        scraped = httpx.get(url + "/metrics", headers=auth(secret))
        assert scraped.status_code == 200, scraped.text
        assert scraped.headers["content-type"].startswith("text/plain")
        assert "plus_leader 1.0" in scraped.text
        opened = daemon.conf.read_text().replace("http: {address:", "http: {metrics: open, address:")
        daemon.reread(opened, "http.metrics")
        assert httpx.get(url + "/metrics").status_code == 200
        daemon.reread(opened.replace("metrics: open", "metrics: off"), "http.metrics")
        off = httpx.get(url + "/metrics", headers=auth(secret))
        assert off.status_code == 403 and "http.metrics: off" in off.json()["error"]
        # on the socket, anyone on the host may ask (plus_status shows them every AR)
        reply = protocol.call(str(daemon.socket), "metrics", {})
        assert reply["ok"] and reply["data"]["leading"] is True
    finally:
        daemon.cleanup()


def test_a_bad_metrics_setting_is_named(tmp_path):
    path = tmp_path / "plus.yaml"
    path.write_text("http: {metrics: public}\n")
    with pytest.raises((ConfigError, ValueError), match="http.metrics: expected one of token, "
                                                       "open, off, got 'public'"):
        load(str(path))
    path.write_text("http: {metrics: off}\n")          # YAML's bare off is false
    assert load(str(path)).http.metrics == "off"


def test_counts_follow_the_ars_and_unknown_operations_are_other():
    daemon, url = start_api(_settings(", metrics: open"))
    try:
        _reserve(daemon, "plusu1", "-s", "now", "-D", "1h", "-n", "2")
        _reserve(daemon, "plusu2", "-s", "now+2h", "-D", "1h", "-n", "1")
        assert not daemon.run("plusu2", "plus_cancel", "-r", "1").returncode == 0
        for _ in range(3):
            assert not protocol.call(str(daemon.socket), "no-such-op-" + "x" * 50, {})["ok"]
        deadline = time.monotonic() + 60
        while True:     # AR 1's start is the lifecycle's to reach
            text = httpx.get(url + "/metrics").text
            if 'plus_ars{owner="plusu1",state="running"} 1.0' in text or \
                    time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert 'plus_ars{owner="plusu1",state="running"} 1.0' in text, text
        assert 'plus_ars{owner="plusu2",state="waiting"} 1.0' in text
        assert "plus_nodes_reserved 2.0" in text
        assert 'plus_ar_nodes{ar="1",owner="plusu1"} 2.0' in text
        assert 'plus_ar_busy_nodes{ar="1",owner="plusu1"} 0.0' in text
        assert 'plus_requests_total{operation="cancel",outcome="forbidden"} 1.0' in text
        assert 'plus_requests_total{operation="other",outcome="invalid"} 3.0' in text
        assert "no-such-op" not in text
        daemon.ok("plusu1", "plus_cancel", "-r", "1")
        text = httpx.get(url + "/metrics").text
        assert 'plus_ars{owner="plusu1",state="deleted"} 1.0' in text
        assert 'state="running"' not in text and "plus_nodes_reserved 0.0" in text
    finally:
        daemon.cleanup()


def _ar(ar_id: int, owner: str, state: State) -> Reservation:
    return Reservation(id=ar_id, owner=owner, group="g", state=state, submission_time=0,
                       request=Request(start=0, end=3600, nodes=1))


def test_the_tally_follows_each_change():
    tally = Tally([_ar(1, "a", State.WAITING), _ar(2, "a", State.WAITING)])
    assert tally.by_state_and_owner() == {("w", "a"): 2}
    tally.replace(_ar(1, "a", State.WAITING), _ar(1, "a", State.RUNNING))
    assert tally.by_state_and_owner() == {("w", "a"): 1, ("r", "a"): 1}
    assert [ar.id for ar in tally.in_window()] == [1]
    tally.replace(_ar(1, "a", State.RUNNING), None)
    tally.replace(None, _ar(3, "b", State.ERROR))
    assert tally.by_state_and_owner() == {("w", "a"): 1, ("E", "b"): 1}
    assert [ar.id for ar in tally.in_window()] == [3]


def _dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    panels = [*dashboard["panels"], *(inner for panel in dashboard["panels"]
                                      for inner in panel.get("panels", ()))]
    return [target["expr"] for panel in panels for target in panel.get("targets", ())]


def _ask(query: str) -> list:
    answer = httpx.get(PROMETHEUS + "/api/v1/query", params={"query": query}, timeout=10).json()
    assert answer["status"] == "success", (query, answer)
    return answer["data"]["result"]


def test_prometheus_answers_every_query_of_the_sample_dashboard():
    try:
        httpx.get(PROMETHEUS + "/-/ready", timeout=5).raise_for_status()
    except httpx.HTTPError as exc:
        pytest.fail(f"no Prometheus at {PROMETHEUS} ({exc}): run scripts/test-prometheus.sh")
    daemon, url = start_api(_settings(f", metrics_token: {SCRAPERS / 'metrics.token'}"))
    instance = url.removeprefix("http://")
    target = SCRAPERS / "targets" / f"{daemon.dir.name}.json"
    try:
        _reserve(daemon, "plusu1", "-s", "now", "-D", "1h", "-n", "2")
        _reserve(daemon, "plusu2", "-s", "now+2h", "-D", "1h", "-n", "1")
        assert daemon.run("plusu2", "plus_cancel", "-r", "1").returncode != 0
        target.write_text(json.dumps([{"targets": [instance]}]))
        queries = _dashboard_queries()
        assert len(queries) >= 12
        chosen = {"$instance": re.escape(instance).replace("\\", "\\\\"), "$__rate_interval": "1m"}
        deadline = time.monotonic() + 90
        while True:     # until two scrapes saw the running AR and the refusal (rates need two)
            empty = []
            for query in queries:
                asked = query
                for variable, value in chosen.items():
                    asked = asked.replace(variable, value)
                if not _ask(asked):
                    empty.append(asked)
            if not empty or time.monotonic() > deadline:
                break
            httpx.get(url + "/whoami")      # a request between scrapes, for the rates
            time.sleep(0.5)
        assert not empty, f"queries with no answer: {empty}"
        where = f'instance="{instance}"'
        assert _ask(f"plus_leader{{{where}}}")[0]["value"][1] == "1"
        assert _ask(f"plus_nodes_reserved{{{where}}}")[0]["value"][1] == "2"
        states = {row["metric"]["state"] for row in _ask(f"sum by (state) (plus_ars{{{where}}})")}
        assert {"running", "waiting"} <= states
        idle = _ask(f"plus_ar_nodes{{{where}}} and on (instance, ar) "
                    f"(plus_ar_busy_nodes{{{where}}} == 0)")
        assert [row["metric"]["ar"] for row in idle] == ["1"]
        refused = _ask(f'plus_requests_total{{{where}, outcome="forbidden"}}')
        assert [row["metric"]["operation"] for row in refused] == ["cancel"]
    finally:
        target.unlink(missing_ok=True)
        daemon.cleanup()
