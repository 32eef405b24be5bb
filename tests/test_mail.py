"""plugins/mail: Grid Engine's AR mails (qrsub -m b/e/a, -M), delivered by a
real SMTP server (aiosmtpd) on loopback to a manager built through the
plugin manager, as plus_scheduler builds it, with a clock moved by hand."""

from __future__ import annotations

import email
import logging
import socket
import textwrap
import time
from email.message import Message

import pytest
from aiosmtpd.controller import Controller

from overlay.contract import plugins
from overlay.daemon import config as config_module
from overlay.language.model import Request, State
from overlay.persistence.store import Store
from overlay.usecases.lifecycle import Lifecycle
from overlay.usecases.manager import Caller, Manager
from test_manager import drained_at_once

T0 = 1_800_000_000
HOUR = 3600
ALICE = Caller(uid=5001, user="alice", groups=("staff",), is_manager=False)
CLUSTER = """\
nodes:
  - {name: n01, slots: 4}
  - {name: n02, slots: 4, alive: %s}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s")
        time.sleep(0.01)



def text(mail: Message) -> str:
    """A mail's body as its reader sees it (a long line makes it quoted-printable)."""
    return mail.get_payload(decode=True).decode()

class Inbox:
    """aiosmtpd handler: keeps every envelope it is given."""

    def __init__(self) -> None:
        self.envelopes: list = []
        self.port = 0

    async def handle_DATA(self, server, session, envelope) -> str:
        self.envelopes.append(envelope)
        return "250 OK"

    def mails(self, count: int) -> list[Message]:
        """The first ``count`` mails, once that many have arrived."""
        wait_for(lambda: len(self.envelopes) >= count)
        return [email.message_from_bytes(e.content) for e in self.envelopes[:count]]

    def recipients(self) -> list[list[str]]:
        return [e.rcpt_tos for e in self.envelopes]


@pytest.fixture
def smtp():
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    inbox.port = controller.port
    yield inbox
    controller.stop()


class Env:
    """A manager on a two-node native cluster whose plugins were configured
    from a file with ``mail_settings`` under ``mail:``."""

    def __init__(self, tmp_path, mail_settings: str, settings: str = "") -> None:
        """``settings``: more top-level keys of plus.yaml."""
        self.cluster_file = tmp_path / "cluster.yaml"
        self.node_alive(True)
        conf = tmp_path / "plus.yaml"
        conf.write_text("state_dir: state\nnative: {cluster: cluster.yaml, local_host: false}\n"
                        + settings + "mail:\n"
                        + textwrap.indent(textwrap.dedent(mail_settings), "  "))
        config = config_module.load(str(conf))
        self.pm = plugins.plugin_manager()
        claimed = plugins.configure(self.pm, config)
        backend = plugins.build_backend(self.pm, "native", config, config.backend_options(), claimed)
        self.store = Store(config.store_url)
        self.now = T0
        self.manager = Manager(config, self.store, backend, self.pm,
                               drained_at_once(self.store, config), clock=lambda: self.now)
        self.lifecycle = Lifecycle(self.manager, config.reconcile_interval)
        self.notifier = self.pm.get_plugin("mail-notifier")

    def node_alive(self, alive: bool) -> None:
        """n02 up or down, as an administrator marks it in the cluster file."""
        self.cluster_file.write_text(CLUSTER % str(alive).lower())

    def reserve(self, nodes: int = 1, start: int = T0 + HOUR, hours: int = 1, **extra):
        request = Request(start=start, end=start + hours * HOUR, nodes=nodes, **extra)
        return self.manager.reserve(ALICE, request)

    def tick_at(self, now: int) -> None:
        self.now = now
        self.lifecycle.tick()

    def close(self) -> None:
        close_env(self.pm, self.store)


def close_env(pm, store: Store) -> None:
    """A test's Manager world ended: its mail sent (the notifier's thread
    stopped) and its store closed."""
    notifier = pm.get_plugin("mail-notifier")
    if notifier is not None:
        assert notifier.close(timeout=10)
    store.close()


@pytest.fixture
def make_env(tmp_path):
    made = []

    def make(settings: str) -> Env:
        made.append(Env(tmp_path, settings))
        return made[-1]
    yield make
    for env in made:
        env.close()


@pytest.fixture
def env(smtp, make_env):
    return make_env(f"host: 127.0.0.1\nport: {smtp.port}\nsender: plus@cluster.test\ntimeout: 5\n")


def test_the_plugin_is_found_through_its_entry_point():
    manager = plugins.plugin_manager()
    assert manager.get_plugin("mail").__name__ == "overlay_mail.plugin"


def test_a_replaced_notifier_sends_what_it_holds_and_stops(env, smtp):
    """SIGHUP re-read plus.yaml: the replaced plugin manager's Notifier
    delivers what is queued, and its thread ends."""
    ar = env.reserve(mail_options="b")
    env.tick_at(ar.start)
    env.pm.hook.plus_unconfigure()
    assert not env.notifier._worker.is_alive()
    assert len(smtp.mails(1)) == 1


def test_b_mails_the_owner_at_the_start_only(env, smtp):
    ar = env.reserve(mail_options="b", name="nightly")
    env.tick_at(ar.start)
    [mail] = smtp.mails(1)
    assert mail["Subject"] == f"Advance Reservation {ar.id} (nightly) Started"
    assert mail["From"] == "plus@cluster.test" and mail["To"] == "alice"
    body = text(mail)
    assert f"AR {ar.id} started" in body
    for line in ("owner      = alice", "nodes      = n01", "state      = r (running)"):
        assert line in body
    env.tick_at(ar.end)
    env.close()
    assert smtp.recipients() == [["alice"]]  # bare: the local MTA's user


def test_e_mails_at_the_end_and_when_deleted(env, smtp):
    ended = env.reserve(mail_options="e")
    cancelled = env.reserve(mail_options="e", name="spare")
    env.tick_at(ended.start)
    env.manager.cancel(ALICE, cancelled.id, None)
    env.tick_at(ended.end)
    subjects = [mail["Subject"] for mail in smtp.mails(2)]
    assert subjects == [f"Advance Reservation {cancelled.id} (spare) Deleted",
                        f"Advance Reservation {ended.id} (none) Finished"]
    env.close()
    assert len(smtp.envelopes) == 2


def test_a_mails_the_warning_before_the_start_and_the_recovery(env, smtp):
    """Grid Engine mails nothing for W; we mail it at once (a user told
    only at the start has lost the time to act), and not again as the
    start finds it still broken."""
    ar = env.reserve(nodes=2, mail_options="a")
    env.node_alive(False)
    env.tick_at(T0 + 60)
    assert env.manager.ars[ar.id].state == State.WARNING
    [warning] = smtp.mails(1)
    assert warning["Subject"] == f"Advance Reservation {ar.id} (none) Warning"
    body = text(warning)
    assert f"AR {ar.id} is in warning state (its start is ahead): reserved host(s) down: n02" \
        in body
    assert "state      = W (warning)" in body and f"plus_cancel -r {ar.id}" in body
    env.tick_at(ar.start)  # still broken at the start: E, no second mail
    assert env.manager.ars[ar.id].state == State.ERROR
    env.node_alive(True)
    env.tick_at(ar.start + 60)
    resolved = smtp.mails(2)[1]
    assert resolved["Subject"] == f"Advance Reservation {ar.id} (none) Error resolved"
    assert f"AR {ar.id} is satisfied again" in text(resolved)
    assert f"plus_qsub -ar {ar.id} job.sh" in text(resolved)
    env.close()
    assert len(smtp.envelopes) == 2


def test_a_mails_a_repair_before_the_start(env, smtp):
    ar = env.reserve(nodes=2, mail_options="a")
    env.node_alive(False)
    env.tick_at(T0 + 60)
    env.node_alive(True)
    env.tick_at(T0 + 120)
    assert env.manager.ars[ar.id].state == State.WAITING
    subjects = [mail["Subject"].rsplit(") ", 1)[1] for mail in smtp.mails(2)]
    assert subjects == ["Warning", "Error resolved"]
    env.close()
    assert len(smtp.envelopes) == 2


def test_a_start_into_error_mails_the_error_once(env, smtp):
    ar = env.reserve(nodes=2, mail_options="ba")
    env.node_alive(False)
    env.tick_at(ar.start)  # started and broken in one pass: both hooks are called
    env.close()
    subjects = [mail["Subject"] for mail in smtp.mails(2)]
    assert subjects == [f"Advance Reservation {ar.id} (none) Started",
                        f"Advance Reservation {ar.id} (none) Error"]
    assert len(smtp.envelopes) == 2


def test_an_error_while_running_is_mailed_once(env, smtp):
    ar = env.reserve(nodes=2, mail_options="bea")
    env.tick_at(ar.start)
    env.node_alive(False)
    env.tick_at(ar.start + 60)
    env.tick_at(ar.start + 120)  # still down: no second mail
    env.tick_at(ar.end)
    subjects = [mail["Subject"].rsplit(") ", 1)[1] for mail in smtp.mails(3)]
    assert subjects == ["Started", "Error", "Finished"]
    env.close()
    assert len(smtp.envelopes) == 3


@pytest.mark.parametrize("options", ["n", ""])
def test_n_or_no_options_mail_nothing(env, smtp, options):
    ar = env.reserve(nodes=2, mail_options=options, mail_list=("bob@example.org",))
    env.tick_at(ar.start)
    env.node_alive(False)
    env.tick_at(ar.start + 60)
    env.node_alive(True)
    env.tick_at(ar.start + 120)
    env.tick_at(ar.end)
    env.manager.cancel(ALICE, env.reserve(mail_options=options, start=ar.end + HOUR).id, None)
    env.close()
    assert smtp.envelopes == []


def test_the_m_list_replaces_the_owner_and_domain_completes_bare_names(smtp, make_env):
    env = make_env(f"host: 127.0.0.1\nport: {smtp.port}\ndomain: cluster.test\n")
    listed = env.reserve(mail_options="b", mail_list=("bob@example.org", "carol"))
    owner = env.reserve(mail_options="b")
    env.tick_at(listed.start)
    to = {mail["Subject"].split()[2]: mail["To"] for mail in smtp.mails(2)}
    assert to == {str(listed.id): "bob@example.org, carol@cluster.test",
                  str(owner.id): "alice@cluster.test"}
    assert sorted(smtp.recipients()) == [["alice@cluster.test"],
                                         ["bob@example.org", "carol@cluster.test"]]
    assert smtp.envelopes[0].mail_from == f"plus_scheduler@{socket.getfqdn()}"


def test_a_server_that_is_down_is_logged_and_the_daemon_goes_on(monkeypatch, make_env, caplog):
    from overlay_mail import notifier
    monkeypatch.setattr(notifier, "RETRY_DELAY", 0.01)
    env = make_env(f"host: 127.0.0.1\nport: {free_port()}\n")
    ar = env.reserve(mail_options="be")
    with caplog.at_level(logging.WARNING, logger="plus.mail"):
        env.tick_at(ar.start)
        env.tick_at(ar.end)
        assert env.notifier.close(timeout=10)
    assert env.manager.ars[ar.id].state == State.EXITED
    warnings = [r.getMessage() for r in caplog.records if r.name == "plus.mail"]
    assert len(warnings) == 4 and "failed, retrying" in warnings[0]
    assert f"Advance Reservation {ar.id} (none) Finished" in warnings[3]
    assert "dropped after a retry" in warnings[3]


def test_a_server_that_hangs_does_not_block_the_hooks(monkeypatch, make_env):
    from overlay_mail import notifier
    monkeypatch.setattr(notifier, "RETRY_DELAY", 0)
    with socket.socket() as silent:  # accepts connections, never greets
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        env = make_env(f"host: 127.0.0.1\nport: {silent.getsockname()[1]}\ntimeout: 2\n")
        ars = [env.reserve(mail_options="be") for _ in range(2)]
        began = time.monotonic()
        env.tick_at(ars[0].start)
        env.tick_at(ars[0].end)
        assert time.monotonic() - began < 1  # four mails queued, none waited for
        assert all(env.manager.ars[ar.id].state == State.EXITED for ar in ars)
        assert not env.notifier.close(timeout=0.1)  # still trying the first one


def test_defaults_and_disabled(make_env):
    env = make_env("{}\n")
    settings = env.notifier.settings
    assert (settings.host, settings.port, settings.timeout, settings.domain) == ("localhost", 25, 10, None)
    assert settings.sender == f"plus_scheduler@{socket.getfqdn()}"
    assert make_env("enabled: false\n").notifier is None  # the section is still claimed


@pytest.mark.parametrize("settings, message", [
    ("port: x", "mail.port: expected a port number 1-65535, got 'x'"),
    ("port: 0", "mail.port: expected a port number 1-65535, got 0"),
    ("port: true", "mail.port: expected a port number 1-65535, got True"),
    ("hostname: mx", "mail.hostname: unknown setting; known: host, port, sender, domain, timeout, enabled"),
    ("host: ''", "mail.host: expected a host name or address, got ''"),
    ("sender: plus", "mail.sender: expected an address user@host, got 'plus'"),
    ("domain: '@example.org'", "mail.domain: expected a domain name such as example.org, got '@example.org'"),
    ("timeout: 0", "mail.timeout: expected a number of seconds above 0, got 0"),
    ("timeout: soon", "mail.timeout: expected a number of seconds above 0, got 'soon'"),
    ("enabled: 'yes'", "mail.enabled: expected true or false, got 'yes'"),
])
def test_bad_settings_name_the_key_and_what_is_accepted(tmp_path, settings, message):
    conf = tmp_path / "plus.yaml"
    conf.write_text(f"state_dir: state\nmail:\n  {settings}\n")
    config = config_module.load(str(conf))
    with pytest.raises(plugins.PluginError) as refused:
        plugins.configure(plugins.plugin_manager(), config)
    assert str(refused.value) == f"{conf}: {message}"
