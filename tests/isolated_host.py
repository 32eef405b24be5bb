"""A "host" for a daemon under test: a network namespace whose one link
(a veth pair) leads to this machine, as scripts/sge-hosts.sh makes the
Grid Engine test hosts. A daemon run in it (``wrapper``) reaches the
store's server only over that link, at ``here``; ``cut`` takes the link
down (packets are lost, nobody is told: a cable pulled, or the host
powered off), ``mend`` brings it back. Its Unix socket stays reachable,
as a file. Used by tests/test_ha_faults.py and scripts/ha_chaos.py."""

from __future__ import annotations

import os
import subprocess


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, timeout=30)


class IsolatedHost:
    def __init__(self, index: int) -> None:
        tag = f"{os.getpid() % 10000}x{index}"
        self.name = f"plusha{tag}"
        self.link = f"vp{tag}"          # this machine's end (15 characters at most)
        net = f"10.{202 + index}.{os.getpid() % 250}"
        self.here, self.there = f"{net}.1", f"{net}.2"
        _ip("netns", "add", self.name)
        try:
            _ip("link", "add", self.link, "type", "veth", "peer", "name", "eth0",
                "netns", self.name)
            _ip("addr", "add", f"{self.here}/30", "dev", self.link)
            _ip("link", "set", self.link, "up")
            for argv in (("addr", "add", f"{self.there}/30", "dev", "eth0"),
                         ("link", "set", "eth0", "up"), ("link", "set", "lo", "up")):
                _ip("-n", self.name, *argv)
        except Exception:
            self.remove()
            raise

    @property
    def wrapper(self) -> tuple[str, ...]:
        """The argv prefix that runs a command on this host."""
        return ("ip", "netns", "exec", self.name)

    def cut(self) -> None:
        _ip("link", "set", self.link, "down")

    def mend(self) -> None:
        _ip("link", "set", self.link, "up")

    def remove(self) -> None:
        """The namespace and its link (ip netns del kills nothing: stop its daemon first)."""
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", self.link], capture_output=True, timeout=30)
