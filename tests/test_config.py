"""overlay/daemon/config.py: the daemon's YAML configuration, validated key by key;
the commands' line reader must find the same socket as the daemon."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from overlay.daemon.config import Config, ConfigError, load
from overlay.placement.ordering import NODE_SORT_KEYS
from overlay.wire import protocol

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str, name: str = "plus.yaml") -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- valid files --------------------------------------------------------------------------

def test_empty_file_gives_the_defaults(tmp_path):
    config = load(write(tmp_path, ""))
    assert config.backend == "native"
    assert config.state_dir == protocol.DEFAULT_STATE_DIR
    assert config.socket == protocol.DEFAULT_SOCKET
    assert config.store == ""
    assert config.managers == ["root"]
    assert config.arusers == ["*"]
    assert config.max_advance_reservations == 0
    assert config.duration_offset == 60
    assert config.reconcile_interval == 30
    assert config.commit_timeout == 300
    assert config.expiry == 86400
    assert config.max_expired == 100
    assert config.node_order == ["NodeName"]
    assert config.sge_queues == []
    assert config.accounting_file == "reporting"
    assert config.plugins == []
    assert config.sections == {}
    assert config.socket_path == os.path.join(protocol.DEFAULT_STATE_DIR, protocol.DEFAULT_SOCKET)
    assert config.store_url == "sqlite:///" + os.path.join(protocol.DEFAULT_STATE_DIR, "plus.db")


def test_comment_only_file_gives_the_defaults(tmp_path):
    config = load(write(tmp_path, "# nothing set\n\n"))
    assert config.max_expired == 100 and config.managers == ["root"]


def test_a_full_valid_file(tmp_path):
    path = write(tmp_path, """\
backend: sge
state_dir: /srv/plus          # absolute
socket: ctl.sock
store: postgresql+psycopg://plus:pw@db/plus
managers: [root, admin]
arusers: ["*", "@staff", alice]
max_advance_reservations: 5
duration_offset: 0
reconcile_interval: 10
commit_timeout: 60
expiry: 0
max_expired: 7
node_order: [LowestLoadAverage, NodeName]
sge_queues: [all.q, big.q]
accounting_file: acct/reporting
plugins: [my_site.plugin]
sge:
  cell: default
""")
    config = load(path)
    assert config.backend == "sge"
    assert config.state_path == "/srv/plus"
    assert config.socket_path == "/srv/plus/ctl.sock"
    assert config.store_url == "postgresql+psycopg://plus:pw@db/plus"
    assert config.managers == ["root", "admin"]
    assert config.arusers == ["*", "@staff", "alice"]
    assert (config.max_advance_reservations, config.duration_offset, config.reconcile_interval,
            config.commit_timeout, config.expiry, config.max_expired) == (5, 0, 10, 60, 0, 7)
    assert config.node_order == ["LowestLoadAverage", "NodeName"]
    assert config.sge_queues == ["all.q", "big.q"]
    assert config.accounting_path == "/srv/plus/acct/reporting"
    assert config.plugins == ["my_site.plugin"]
    assert config.sections == {"sge": {"cell": "default"}}
    assert config.backend_options() == {"cell": "default"}


def test_the_shipped_configuration_loads():
    config = load(str(REPO / "conf" / "plus.yaml"))
    assert config.backend == "native"
    assert config.state_path == "/var/lib/plus"
    assert config.socket_path == "/var/lib/plus/plus.sock"
    assert config.backend_options() == {"cluster": "cluster.yaml", "local_host": True}
    assert config.relative("cluster.yaml") == str(REPO / "conf" / "cluster.yaml")


def test_node_order_may_be_a_single_key(tmp_path):
    config = load(write(tmp_path, "node_order: LargestPhysicalMemory\n"))
    assert config.node_order == ["LargestPhysicalMemory"]
    for key in NODE_SORT_KEYS:
        assert load(write(tmp_path, f"node_order: [{key}]\n")).node_order == [key]


def test_backend_options_default_to_empty(tmp_path):
    config = load(write(tmp_path, "backend: torque\nnative: {cluster: c.yaml}\n"))
    assert config.backend_options() == {}
    assert config.sections == {"native": {"cluster": "c.yaml"}}


# --- relative paths -----------------------------------------------------------------------

def test_relative_paths_resolve_from_the_files_folder(tmp_path):
    path = write(tmp_path, "state_dir: state\nsocket: plus.sock\nstore: db/plus.db\n"
                           "accounting_file: reporting\n", name="etc/plus.yaml")
    config = load(path)
    etc = tmp_path / "etc"
    assert config.state_path == str(etc / "state")
    assert config.socket_path == str(etc / "state" / "plus.sock")
    assert config.store_url == "sqlite:///" + str(etc / "state" / "db" / "plus.db")
    assert config.accounting_path == str(etc / "state" / "reporting")
    assert config.relative("cluster.yaml") == str(etc / "cluster.yaml")
    assert config.relative("/abs/cluster.yaml") == "/abs/cluster.yaml"


def test_relative_paths_do_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    write(tmp_path, "state_dir: ../var\nsocket: s.sock\n", name="etc/plus.yaml")
    monkeypatch.chdir(tmp_path)
    config = load("etc/plus.yaml")
    assert config.state_path == str(tmp_path / "var")
    assert config.socket_path == str(tmp_path / "var" / "s.sock")
    assert config.store_url == "sqlite:///" + str(tmp_path / "var" / "plus.db")


def test_absolute_socket_and_store(tmp_path):
    config = load(write(tmp_path, "state_dir: state\nsocket: /run/plus.sock\nstore: /data/p.db\n"))
    assert config.socket_path == "/run/plus.sock"
    assert config.store_url == "sqlite:////data/p.db"


def test_default_store_is_sqlite_in_the_state_dir(tmp_path):
    config = load(write(tmp_path, "state_dir: st\n"))
    assert config.store_url == "sqlite:///" + str(tmp_path / "st" / "plus.db")


# --- malformed files ----------------------------------------------------------------------

def load_error(tmp_path: Path, text: str, overrides=None) -> str:
    with pytest.raises(ConfigError) as info:
        load(write(tmp_path, text), overrides)
    return str(info.value)


@pytest.mark.parametrize("text,key", [
    ("max_advance_reservation: 5\n", "max_advance_reservation"),     # misspelt
    ("Backend: native\n", "Backend"),
    ("nativ: 5\n", "nativ"),                                          # scalar, not a section
    ("my-backend: {a: 1}\n", "my-backend"),                           # not an identifier
    ("managers: [root]\nreconcile: 30\n", "reconcile"),
])
def test_unknown_keys_are_refused(tmp_path, text, key):
    message = load_error(tmp_path, text)
    assert repr(key) in message
    assert "unknown setting" in message
    assert "max_advance_reservations" in message          # the known keys are listed


@pytest.mark.parametrize("key,value", [
    ("max_advance_reservations", "'5'"),
    ("max_advance_reservations", "true"),
    ("max_advance_reservations", "-1"),
    ("max_advance_reservations", "2.5"),
    ("duration_offset", "-60"),
    ("duration_offset", "1m"),
    ("reconcile_interval", "0"),
    ("reconcile_interval", "-5"),
    ("commit_timeout", "0"),
    ("commit_timeout", "null"),
    ("expiry", "1.5"),
    ("expiry", "-1"),
    ("max_expired", "-1"),
    ("max_expired", "[1]"),
    ("managers", "root"),
    ("managers", "[1, 2]"),
    ("managers", "['bad name']"),
    ("managers", "['@staff']"),          # groups only in arusers
    ("managers", "['*']"),               # '*' only in arusers
    ("arusers", "'*'"),
    ("arusers", "['@']"),
    ("arusers", "['bad user']"),
    ("arusers", "[alice, 3]"),
    ("arusers", "{alice: 1}"),
    ("node_order", "[Random]"),
    ("node_order", "nodename"),
    ("node_order", "[NodeName, 5]"),
    ("node_order", "5"),
    ("sge_queues", "[all q]"),
    ("sge_queues", "all.q"),
    ("plugins", "my.plugin"),
    ("backend", "''"),
    ("backend", "'   '"),
    ("backend", "5"),
    ("backend", "[native]"),
    ("state_dir", "''"),
    ("state_dir", "[/tmp/x]"),
    ("state_dir", "{a: b}"),
    ("state_dir", "null"),
    ("socket", "7"),
    ("store", "''"),
    ("accounting_file", "[]"),
    ("act_for", "[root, 'a b']"),
    ("min_uid", "0"),
    ("log", "''"),
    ("log_size", "100"),
    ("log_keep", "-1"),
])
def test_bad_values_name_the_key(tmp_path, key, value):
    message = load_error(tmp_path, f"{key}: {value}\n")
    assert message.startswith(f"{key}:")


def test_negative_counts_say_what_is_accepted(tmp_path):
    assert "0 or more" in load_error(tmp_path, "max_expired: -1\n")
    assert "1 or more" in load_error(tmp_path, "commit_timeout: 0\n")


def test_bad_node_order_lists_the_sort_keys(tmp_path):
    message = load_error(tmp_path, "node_order: [Fastest]\n")
    assert "'Fastest'" in message
    for key in NODE_SORT_KEYS:
        assert key in message


def test_bad_aruser_names_the_entry(tmp_path):
    message = load_error(tmp_path, "arusers: [alice, 'b c']\n")
    assert "'b c'" in message
    assert "@group" in message and "'*'" in message


@pytest.mark.parametrize("text", ["managers: [root\n", "a: b: c\n", "key: 'unterminated\n",
                                  "\tbackend: native\n"])
def test_invalid_yaml(tmp_path, text):
    message = load_error(tmp_path, text)
    assert "not valid YAML" in message
    assert "plus.yaml" in message


@pytest.mark.parametrize("text", ["- backend\n- native\n", "just text\n", "42\n"])
def test_top_level_must_be_a_mapping(tmp_path, text):
    message = load_error(tmp_path, text)
    assert "expected a mapping" in message
    assert "plus.yaml" in message


def test_missing_file(tmp_path):
    path = str(tmp_path / "nowhere.yaml")
    with pytest.raises(ConfigError) as info:
        load(path)
    assert "cannot read configuration" in str(info.value)
    assert path in str(info.value)


def test_a_folder_is_not_a_configuration(tmp_path):
    with pytest.raises(ConfigError, match="cannot read configuration"):
        load(str(tmp_path))


# --- the commands' view of state_dir and socket -------------------------------------------

@pytest.mark.parametrize("text", [
    "state_dir: >\n  /tmp/plus-state\n",                  # folded block scalar
    "state_dir: |\n  /tmp/plus-state\n",                  # literal block scalar
    "state_dir: >-\n  /tmp/plus-state\n",
    "state_dir: /tmp/plus\n  -state\n",                   # plain scalar over two lines
    "state_dir: \"/tmp/plus\n  -state\"\n",               # quoted scalar over two lines
    "state_dir: &dir /tmp/plus-state\n",                  # anchor
    "state_dir: !!str /tmp/plus-state\n",                 # tag
    "state_dir: \"/tmp/plus\\x2dstate\"\n",               # escape the reader keeps verbatim
    "{state_dir: /tmp/plus-state, socket: s.sock}\n",     # flow mapping
    "socket: >\n  other.sock\n",
    "socket: |-\n  other.sock\n",
])
def test_values_the_line_reader_sees_differently_are_refused(tmp_path, text):
    message = load_error(tmp_path, text)
    assert "state_dir and socket must be plain one-line scalars" in message


@pytest.mark.parametrize("text,state", [
    ("state_dir: /tmp/plus-state\n", "/tmp/plus-state"),
    ("state_dir: '/tmp/plus-state'   # quoted\n", "/tmp/plus-state"),
    ("state_dir: \"/tmp/plus-state\"\n", "/tmp/plus-state"),
    ("state_dir:   /tmp/plus-state   # spaced\n", "/tmp/plus-state"),
    ("state_dir: state\nsocket: 's.sock'\n", "state"),
])
def test_plain_values_are_accepted_and_agree_with_the_reader(tmp_path, text, state):
    path = write(tmp_path, text)
    config = load(path)
    assert config.state_dir == state
    assert protocol.client_socket_path(path) == config.socket_path


def test_overridden_state_dir_skips_the_reader_check(tmp_path):
    path = write(tmp_path, "state_dir: >\n  /tmp/plus-state\n")
    config = load(path, {"state_dir": "/srv/plus"})
    assert config.state_path == "/srv/plus"


# --- overrides ----------------------------------------------------------------------------

def test_overrides_replace_file_values(tmp_path):
    path = write(tmp_path, "backend: native\nmax_expired: 5\n")
    config = load(path, {"backend": "torque", "max_expired": 9, "store": "/abs/p.db",
                         "sge_queues": ["all.q"]})
    assert (config.backend, config.max_expired, config.sge_queues) == ("torque", 9, ["all.q"])
    assert config.store_url == "sqlite:////abs/p.db"


@pytest.mark.parametrize("overrides,key", [
    ({"max_expired": -1}, "max_expired"),
    ({"backend": ""}, "backend"),
    ({"store": 5}, "store"),
    ({"sge_queues": ["bad q"]}, "sge_queues"),
    ({"max_expired": "3"}, "max_expired"),
])
def test_overrides_are_validated(tmp_path, overrides, key):
    message = load_error(tmp_path, "backend: native\n", overrides)
    assert message.startswith(f"{key}:")


def test_unknown_override_is_refused(tmp_path):
    message = load_error(tmp_path, "", {"max_expire": 3})
    assert "'max_expire'" in message


def test_config_path_is_kept():
    config = Config(path="/etc/plus/plus.yaml")
    assert config.path == "/etc/plus/plus.yaml"
    assert config.relative("c.yaml") == "/etc/plus/c.yaml"


def test_a_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "plus.yaml"
    path.write_bytes(b"backend: native\nmanagers: [r\xf6ot]\n")
    with pytest.raises(ConfigError) as refused:
        load(str(path))
    assert str(refused.value) == f"{path}: not UTF-8 text; configuration must be YAML in UTF-8"


@pytest.mark.parametrize("section, message", [
    ("{oidc: {audience: api}}", "http.oidc.issuer: required"),
    ("{oidc: {issuer: 'https://idp.example'}}", "http.oidc.audience: required"),
    ("{oidc: {issuer: 'http://idp.example', audience: api}}",
     "http.oidc.issuer: expected an https:// URL (http:// only on loopback)"),
    ("{oidc: {issuer: 'https://idp.example', audience: api, algorithms: [HS256]}}",
     "http.oidc.algorithms: unknown setting"),
    ("{max_connections_per_client: 0}", "http.max_connections_per_client: expected a whole "
                                        "number from 1 to 65536"),
    ("{request_timeout: 0}", "http.request_timeout: expected a whole number of seconds"),
])
def test_the_http_section_names_a_bad_key(tmp_path, section, message):
    assert load_error(tmp_path, f"http: {section}\n").startswith(message)


def test_the_identity_provider_is_read_with_its_defaults(tmp_path):
    chosen = load(write(tmp_path, "http: {oidc: {issuer: 'https://idp.example/realms/hpc/', "
                                  "audience: plus, ca_cert: idp-ca.pem}}\n")).http.oidc
    assert (chosen.issuer, chosen.audience, chosen.user_claim, chosen.client_id) == (
        "https://idp.example/realms/hpc", "plus", "preferred_username", "")
    assert chosen.ca_cert == str(tmp_path / "idp-ca.pem")
    assert chosen.origin == "https://idp.example"
