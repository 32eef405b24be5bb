"""Whether a host is this machine's loopback: plain HTTP is served, and
spoken to, only there (the API, the identity provider, other sites)."""

from __future__ import annotations

import ipaddress


def loopback(host: str) -> bool:
    """``localhost``, or an address in 127.0.0.0/8 or ::1."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
