"""The ``classad:`` section: reading the file at start (mistakes stop the
daemon with the line), reading it again when it changes, and refusals as
users and administrators see them through the real daemon and commands."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from daemon_harness import Daemon
from overlay.contract import plugins
from overlay.daemon import config as config_module
from overlay.language.model import ReservationError
from test_manager import ADMIN, ALICE, HOUR, T0, Env

ONLY_N01 = '[PLUS_NODE_RESERVABLE = PLUS_CANDIDATE_NODE.name == "n01"]\n'


def configure(tmp_path, section: str):
    conf = tmp_path / "plus.yaml"
    conf.write_text("native: {cluster: cluster.yaml, local_host: false}\n" + section)
    return plugins.configure(plugins.plugin_manager(), config_module.load(str(conf)))


@pytest.mark.parametrize("section,message", [
    ("classad: {files: x.ad}\n", "classad.files: unknown setting; known: file"),
    ("classad: {}\n", "classad.file: missing; expected the path of a PluS reservable.ad file"),
    ("classad: {file: ''}\n", "classad.file: expected the path of a PluS reservable.ad file"),
    ("classad: {file: 12}\n", "classad.file: expected the path of a PluS reservable.ad file"),
    ("classad: {file: missing.ad}\n", "cannot read the ClassAd policy /"),
])
def test_section_errors_name_the_key(tmp_path, section, message):
    with pytest.raises(plugins.PluginError, match="plus.yaml: " + message.replace("(", r"\(")):
        configure(tmp_path, section)


def test_a_syntax_error_stops_the_start_with_file_and_line(tmp_path):
    (tmp_path / "reservable.ad").write_text("[\n  a = 1;\n  PLUS_NODE_RESERVABLE = (a > 0\n]\n")
    with pytest.raises(plugins.PluginError) as caught:
        configure(tmp_path, "classad: {file: reservable.ad}\n")
    assert str(caught.value) == (f"{tmp_path}/plus.yaml: {tmp_path}/reservable.ad: line 4: "
                                 "expected ')', found ']'")


def test_a_binary_file_is_refused_clearly(tmp_path):
    (tmp_path / "reservable.ad").write_bytes(b"[a = \xff]")
    with pytest.raises(plugins.PluginError, match="reservable.ad: not UTF-8 text"):
        configure(tmp_path, "classad: {file: reservable.ad}\n")


def test_without_htcondor_the_message_says_what_to_install(tmp_path, monkeypatch):
    (tmp_path / "reservable.ad").write_text(ONLY_N01)
    monkeypatch.setitem(sys.modules, "overlay_classad.policy", None)
    with pytest.raises(plugins.PluginError, match=r"pip install 'plus-overlay\[classad\]'"):
        configure(tmp_path, "classad: {file: reservable.ad}\n")


def test_without_the_section_nothing_is_refused(tmp_path):
    env = Env(tmp_path)
    assert len(env.reserve(nodes=5).allocations) == 5


def test_the_file_is_read_again_when_it_changes_and_a_broken_edit_keeps_the_last(tmp_path, caplog):
    policy = tmp_path / "reservable.ad"
    policy.write_text(ONLY_N01)
    env = Env(tmp_path, "classad: {file: reservable.ad}\n")
    assert env.reserve(nodes=1).node_names == ["n01"]
    with pytest.raises(ReservationError, match=r'policy reservable.ad: PLUS_NODE_RESERVABLE = '
                                               r'\(PLUS_CANDIDATE_NODE.name == "n01"\) is false'):
        env.reserve(nodes=1)
    policy.write_text('[PLUS_NODE_RESERVABLE = PLUS_CANDIDATE_NODE.name != "big"]\n')
    os.utime(policy, (T0, T0))
    assert env.reserve(nodes=1).node_names == ["n02"]
    policy.write_text("[PLUS_NODE_RESERVABLE = \n")
    os.utime(policy, (T0 + 1, T0 + 1))
    assert env.reserve(nodes=1).node_names == ["n03"]
    assert "keeping the previous ClassAd policy" in caplog.text
    assert "line 2: expected a value" in caplog.text


@pytest.fixture
def daemon():
    d = Daemon("classad: {file: reservable.ad}\n")
    (d.dir / "reservable.ad").write_text(textwrap.dedent("""\
        // at most two nodes per request, never "big"
        [
          PLUS_NODE_RESERVABLE = size(PLUS_ALLOCATED_NODES) < 2 &&
                                 PLUS_CANDIDATE_NODE.name != "big";
        ]
        """))
    d.start()
    yield d
    d.cleanup()


def test_plus_reserve_prints_the_refusal_and_plus_status_keeps_a_refused_modify(daemon):
    refused = daemon.run("plusu1", "plus_reserve", "-s", "now+1h", "-D", "1:00:00", "-n", "3")
    assert refused.returncode == 1
    assert "only 2 of the 3 requested nodes" in refused.stderr
    assert ("policy reservable.ad: PLUS_NODE_RESERVABLE is false: "
            "(PLUS_CANDIDATE_NODE.name != \"big\") is false (1 nodes)") in refused.stderr
    assert "(size(PLUS_ALLOCATED_NODES) < 2) is false (2 nodes)" in refused.stderr
    ar = daemon.reserve("plusu1", "-s", "now+1h", "-D", "1:00:00", "-n", "2")
    assert [a["node"] for a in ar["allocations"]] == ["n01", "n02"]
    modify = daemon.run("plusu1", "plus_modify", "-r", str(ar["id"]), "-n", "3")
    assert modify.returncode == 1 and "policy reservable.ad" in modify.stderr
    detail = daemon.ok("plusu1", "plus_status", "-r", str(ar["id"]))
    [line] = [x for x in detail.splitlines() if x.startswith("last_refusal:")]
    assert "modify: only 2 of the 3 requested nodes" in line and "policy reservable.ad" in line
    assert "<last_refusal " in daemon.ok("plusu1", "plus_status", "-r", str(ar["id"]), "-x")
    daemon.ok("plusu1", "plus_modify", "-r", str(ar["id"]), "-D", "2:00:00")
    assert "last_refusal" not in daemon.ok("plusu1", "plus_status", "-r", str(ar["id"]))


def test_a_malformed_policy_file_stops_the_daemon_with_the_line():
    daemon = Daemon("classad: {file: reservable.ad}\n")
    try:
        (daemon.dir / "reservable.ad").write_text("[\n  PLUS_NODE_RESERVABLE = linear(1, 2);\n]\n")
        result = daemon.run("root", "plus_scheduler")
        assert result.returncode == 1
        assert result.stderr.strip().endswith(
            "reservable.ad: line 2: linear() takes 5 arguments, got 2")
    finally:
        daemon.cleanup()


def test_a_managers_modify_is_judged_as_the_owners(tmp_path):
    (tmp_path / "reservable.ad").write_text('[PLUS_NODE_RESERVABLE = PLUS_RSV_OWNER == "alice"]\n')
    env = Env(tmp_path, "classad: {file: reservable.ad}\n")
    ar = env.reserve(ALICE, nodes=1)
    with pytest.raises(ReservationError):
        env.manager.reserve(ADMIN, env.request(start=T0 + 5 * HOUR))
    assert env.manager.modify(ADMIN, ar.id, None, None, 2 * HOUR, 2, None).request.nodes == 2
