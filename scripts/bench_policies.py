"""Benchmark of the policies plugin: what every policy type at once adds to
one reservation on a 1,000-node cluster.

Two in-process Managers on the native backend (local_host: false, a fake
clock), each on its own SQLite store with the same 1,000 existing ARs of 50
users: one whose configuration has a policies: section with node_state,
share (scope owner), usage, projects and limits, all set so that they
accept, and one without it. Each run reserves on one, then the other, and
destroys the AR again; the figure is the median with policies minus the
median without, for 1,000 nodes (every node hook asked for every
candidate), 900 nodes and 1 node, for the whole reserve() and for the time
in the core's calls of the policy hooks alone (plugins.first_refusal).
Target: at most 20 ms added for 1,000 nodes.

Run after scripts/install.sh:  /opt/plus-venv/bin/python scripts/bench_policies.py
(--profile prints cProfile's figures of the policies in one 1,000-node reservation).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from overlay import config as config_module
from overlay import plugins
from overlay.accounting import ReportingWriter
from overlay.manager import Caller, Manager
from overlay.model import Request
from overlay.store import Store
from overlay_native.simhosts import Clock

NODES = 1000
HOUR, DAY = 3600, 86400
NOW = 1_800_000_000
ADMIN = Caller(uid=0, user="root", groups=("root",), is_manager=True)
ALICE = Caller(uid=5001, user="alice", groups=("staff", "chem"), is_manager=False)

POLICIES = """\
policies:
  node-health:
    type: node_state
    max_load: 1.0
    max_running_jobs: 0
    min_idle: 10m
    deny: [unusableA, "gpu-*", "rack[7-9]-?"]
  fair-share:
    type: share
    near: 30m
    far: 2h
    max_lead: 7d
    max_duration: 2d
    groups:
      - {name: VIPs, members: [userA, userB, "@admins"], ratio: 100}
      - {name: Users, members: [userX, "@staff"], near: 100, far: 100}
    default: {near: 50, far: 30}
    scope: owner
  weekly-usage:
    type: usage
    period: 7d
    max_count: 100
    max_duration: 30d
    max_node_hours: 1000000
  projects:
    type: projects
    projects:
      proj1: {members: [userA, userB], nodes: [node0001, node0002]}
      proj2: {members: [userA, "@staff"], nodes: ["node*"]}
    others: deny
  site-limits:
    type: limits
    max_advance: 30d
    max_duration: 2d
    max_concurrent_per_user: 100
    max_concurrent_per_group: 10000
    node_hours_per_month: {chem: 10000000, "*": 10000000}
"""


def manager(work: Path, policies: bool, existing: int) -> Manager:
    """A manager on a fresh store with ``existing`` ARs, the policies
    configured (as plus_scheduler does) only after those are in."""
    work.mkdir()
    (work / "cluster.yaml").write_text(f"nodes:\n  - {{name: 'node[0001-{NODES:04d}]', slots: 8}}\n")
    (work / "plus.yaml").write_text("state_dir: state\nmax_expired: 1000000\n"
                                    "native: {cluster: cluster.yaml, local_host: false}\n"
                                    + (POLICIES if policies else ""))
    config = config_module.load(str(work / "plus.yaml"))
    clock = Clock(NOW)
    pm = plugins.plugin_manager()
    backend = plugins.build_backend(pm, "native", config, config.backend_options(), {"policies"})
    result = Manager(config, Store(config.store_url), backend, pm,
                     ReportingWriter(config.accounting_path), clock=clock)
    rng = random.Random(1)
    for index in range(existing):
        owner = Caller(uid=6000 + index % 50, user=f"user{index % 50}", groups=("staff",),
                       is_manager=False)
        start = NOW + DAY + rng.randrange(20 * DAY // HOUR) * HOUR
        result.reserve(owner, Request(start=start, end=start + rng.randint(1, 12) * HOUR,
                                      nodes=rng.randint(1, 8)))
    plugins.configure(pm, config)
    clock.now += HOUR                      # the nodes have been idle for an hour
    return result


class HookClock:
    """Time spent in plugins.first_refusal, the core's call of the policy
    hooks: the figure without the noise of the rest of a reservation."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.call = plugins.first_refusal
        plugins.first_refusal = self.timed

    def timed(self, *args, **kwargs):
        began = time.perf_counter()
        try:
            return self.call(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - began


def reserve_ms(target: Manager, nodes: int, hooks: HookClock) -> tuple[float, float]:
    """One reservation of ``nodes`` whole nodes an hour ahead, destroyed
    again: its milliseconds, and those of them in the policy hooks."""
    request = Request(start=target.now() + HOUR, end=target.now() + 3 * HOUR, nodes=nodes)
    hooks.seconds = 0.0
    began = time.perf_counter()
    ar = target.reserve(ALICE, request)
    elapsed = (time.perf_counter() - began) * 1000
    in_hooks = hooks.seconds * 1000
    target.destroy(ADMIN, ar.id, None)
    if len(ar.allocations) != nodes:
        raise SystemExit(f"reserved {len(ar.allocations)} of {nodes} nodes")
    return elapsed, in_hooks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=31, help="runs per figure (median)")
    parser.add_argument("--existing", type=int, default=1000, help="ARs in the store")
    parser.add_argument("--profile", action="store_true", help="profile one 1,000-node reservation")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="plus-bench-policies-"))
    try:
        with_policies = manager(work / "with", True, args.existing)
        without = manager(work / "without", False, args.existing)
        hooks = HookClock()
        print(f"{NODES} nodes, {args.existing} existing ARs, median of {args.runs} runs, ms "
              f"(Python {sys.version.split()[0]})")
        print(f"{'request':<11}{'without':>10}{'with':>10}{'added':>10}"
              f"{'in hooks:':>12}{'without':>10}{'with':>10}{'added':>10}")
        for nodes in (NODES, 900, 1):
            samples: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
            for _ in range(args.runs):
                samples[False].append(reserve_ms(without, nodes, hooks))
                samples[True].append(reserve_ms(with_policies, nodes, hooks))
            (plain, plain_hooks), (policed, policed_hooks) = (
                [statistics.median(column) for column in zip(*samples[key])] for key in (False, True))
            print(f"{nodes:>5} nodes{plain:>11.2f}{policed:>10.2f}{policed - plain:>10.2f}"
                  f"{'':>12}{plain_hooks:>10.2f}{policed_hooks:>10.2f}{policed_hooks - plain_hooks:>10.2f}")
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(reserve_ms, with_policies, NODES, hooks)
            pstats.Stats(profile).sort_stats("cumulative").print_stats("overlay_policies|first_refusal")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
