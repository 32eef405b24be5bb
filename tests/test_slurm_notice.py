"""Notices on the real Slurm (issue 33): an AR's notice mail tells its
users the submit line of its backend, sbatch's, as plus_status -r does."""

from __future__ import annotations

import time

import pytest

from daemon_harness import Daemon
from slurm_testbed import clean, require
from test_mail import smtp  # noqa: F401 (a fixture: aiosmtpd on loopback)

ARS = r"R\d{1,3}$"
"""The reservations of a test daemon's ARs (a fresh store: ids from 1)."""


@pytest.fixture
def daemon(smtp):  # noqa: F811
    require()
    clean(ARS)
    d = Daemon("backend: slurm\nslurm: {conflict: requeue}\ntimezone: UTC\n"
               f"mail: {{host: 127.0.0.1, port: {smtp.port}}}\n").start()
    yield d
    d.cleanup()
    clean(ARS)


def test_the_notice_mail_gives_sbatchs_submit_line(daemon, smtp):  # noqa: F811
    view = daemon.reserve("plusu1", "-s", "now+8s", "-D", "1h", "-n", "1", "-N", "slurmy",
                          "--notify-start", "6s", "--notify-end", "none")
    deadline = time.monotonic() + 60
    while not smtp.envelopes:
        assert time.monotonic() < deadline, daemon.log.read_text()[-2000:]
        time.sleep(0.1)
    [mail] = smtp.mails(1)
    assert mail["Subject"] == f"Advance Reservation {view['id']} (slurmy) Starts in 6 seconds"
    body = mail.get_payload()
    assert f"get jobs ready for it: sbatch --reservation=R{view['id']} job.sh" in body
    assert f"plus_cancel -r {view['id']}" in body and "Times are in UTC." in body
    daemon.ok("plusu1", "plus_cancel", "-r", str(view["id"]))
