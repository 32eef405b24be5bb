"""plus_scheduler --status: which daemon leads, since when, and every
daemon serving the store with how far it is behind, asked of the running
daemon that PLUS_CONF (or -c) names, for an administrator at any hour."""

from __future__ import annotations

import sys
import time

from overlay.wire import protocol


def _when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch)) if epoch else "-"


def show(conf: str) -> int:
    """Print the answer; the commands' exit statuses (3: no daemon there)."""
    try:
        reply = protocol.call(protocol.client_socket_path(conf), "daemons", {}, timeout=30)
    except protocol.ProtocolError as exc:
        print(f"plus_scheduler: {exc}", file=sys.stderr)
        return protocol.EXIT_UNREACHABLE
    if not reply.get("ok"):
        print(f"plus_scheduler: {reply.get('error')}", file=sys.stderr)
        return protocol.EXIT_REFUSED
    data = reply["data"]
    leader = data.get("leader") or {}
    if data["leading"]:
        print(f"this daemon ({data['this']}) leads")
    else:
        print(f"this daemon ({data['this']}) stands by; "
              f"leading: {leader.get('host', '?')}:{leader.get('pid', '?')} "
              f"since {_when(leader.get('since'))}")
    print(f"store revision {data['revision']}"
          + ("" if data["shared"] else " (SQLite: one daemon per store)"))
    now = time.time()
    print(f"{'DAEMON':<32} {'ROLE':<8} {'SINCE':<19} {'LAG':>6} {'HEARD':>8}")
    for daemon in data["daemons"]:
        role = "leader" if daemon["leading"] else "standby"
        print(f"{daemon['name'][:32]:<32} {role:<8} {_when(daemon['since']):<19} "
              f"{daemon['lag']:>6} {max(0, now - daemon['heard_at']):>6.0f} s")
    return 0
