"""Benchmark of the reservability policies: what they add to one
reservation on a 1,000-node cluster.

In-process Managers on the native backend (local_host: false, a fake clock),
each on its own SQLite store with the same 1,000 existing ARs of 50 users:
one without policies; one with a policies: section using every ready policy
type (node_state, share with scope owner, usage, projects, limits), all set
so that they accept; and one per ClassAd sample of conf/ (classad: section,
the files unchanged, the owner userA). Runs alternate between the managers;
each reserves and destroys the AR again. Figures are medians: the whole
reserve(), what it adds over the manager without policies, and the time in
the core's calls of the policy hooks alone (PolicyHook.first_refusal), the
dependable figure on a noisy machine. Requests: 1,000 nodes and 900 nodes
(every node hook asked for every candidate) and 1 node; sample 4 grants
none of these node names, so its request is refused after every node was
asked. Target: at most 20 ms added for 1,000 nodes.

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

from calibration import python_speed
from overlay.contract import plugins
from overlay.daemon import config as config_module
from overlay.language.model import Request, ReservationError
from overlay.persistence.store import Store
from overlay.usecases.manager import Caller, Manager
from overlay_native.simulation.simhosts import Clock

NODES = 1000
HOUR, DAY = 3600, 86400
NOW = 1_800_000_000
CONF = Path(__file__).resolve().parent.parent / "conf"
ADMIN = Caller(uid=0, user="root", groups=("root",), is_manager=True)
ALICE = Caller(uid=5001, user="alice", groups=("staff", "chem"), is_manager=False)
USER_A = Caller(uid=5002, user="userA", groups=("staff",), is_manager=False)

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


def manager(work: Path, section: str, existing: int) -> Manager:
    """A manager on a fresh store with ``existing`` ARs, ``section`` of the
    configuration (the policies) taking effect, as when plus_scheduler
    starts on such a store, only after those are in."""
    work.mkdir()
    (work / "cluster.yaml").write_text(f"nodes:\n  - {{name: 'node[0001-{NODES:04d}]', slots: 8}}\n")
    base = "state_dir: state\nmax_expired: 1000000\nnative: {cluster: cluster.yaml, local_host: false}\n"
    (work / "plus.yaml").write_text(base)
    clock = Clock(NOW)
    config = config_module.load(str(work / "plus.yaml"))
    pm = plugins.plugin_manager()
    backend = plugins.build_backend(pm, "native", config, config.backend_options())
    result = Manager(config, Store(config.store_url), backend, pm, lambda: None, clock=clock)
    rng = random.Random(1)
    for index in range(existing):
        owner = Caller(uid=6000 + index % 50, user=f"user{index % 50}", groups=("staff",),
                       is_manager=False)
        start = NOW + DAY + rng.randrange(20 * DAY // HOUR) * HOUR
        result.reserve(owner, Request(start=start, end=start + rng.randint(1, 12) * HOUR,
                                      nodes=rng.randint(1, 8)))
    for sample in CONF.glob("reservable.ad.sample*"):
        shutil.copy(sample, work / sample.name)
    (work / "plus.yaml").write_text(base + section)
    plugins.configure(pm, config_module.load(str(work / "plus.yaml")))
    clock.now += HOUR                      # the nodes have been idle for an hour
    return result


class HookClock:
    """Time spent in PolicyHook.first_refusal, the core's call of the policy
    hooks: the figure without the noise of the rest of a reservation."""

    def __init__(self) -> None:
        self.seconds = 0.0
        call = plugins.PolicyHook.first_refusal
        clock = self

        def timed(hook: plugins.PolicyHook, **varying):
            began = time.perf_counter()
            try:
                return call(hook, **varying)
            finally:
                clock.seconds += time.perf_counter() - began
        plugins.PolicyHook.first_refusal = timed


def reserve_ms(target: Manager, owner: Caller, nodes: int, hooks: HookClock,
               refused: bool = False) -> tuple[float, float]:
    """One reservation of ``nodes`` whole nodes an hour ahead, destroyed
    again (or, with ``refused``, refused by the policy): its milliseconds,
    and those of them in the policy hooks."""
    request = Request(start=target.now() + HOUR, end=target.now() + 3 * HOUR, nodes=nodes)
    hooks.seconds = 0.0
    began = time.perf_counter()
    try:
        ar = target.reserve(owner, request)
    except ReservationError as exc:
        if not refused or "policy reservable.ad" not in str(exc):
            raise
        ar = None
    elapsed = (time.perf_counter() - began) * 1000
    in_hooks = hooks.seconds * 1000
    if ar is not None:
        target.destroy(ADMIN, ar.id, None)
        if refused or len(ar.allocations) != nodes:
            raise SystemExit(f"reserved {len(ar.allocations)} of {nodes} nodes")
    return elapsed, in_hooks


CASES = [("none", "", ALICE), ("policies: all five types", POLICIES, ALICE)] + [
    (f"reservable.ad.sample{n}", f"classad: {{file: reservable.ad.sample{n}}}\n", USER_A)
    for n in range(1, 5)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="runs per figure (median)")
    parser.add_argument("--existing", type=int, default=1000, help="ARs in the store")
    parser.add_argument("--profile", action="store_true", help="profile one 1,000-node reservation")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="plus-bench-policies-"))
    try:
        managers = [manager(work / f"case{i}", section, args.existing)
                    for i, (_, section, _) in enumerate(CASES)]
        hooks = HookClock()
        print(python_speed())
        print(f"{NODES} nodes, {args.existing} existing ARs, median of {args.runs} runs, ms "
              f"(Python {sys.version.split()[0]})")
        print(f"{'policies':<26}{'request':>11}{'reserve':>10}{'added':>10}{'in hooks':>10}")
        for nodes in (NODES, 900, 1):
            samples: list[list[tuple[float, float]]] = [[] for _ in CASES]
            for _ in range(args.runs):
                for index, (name, _, owner) in enumerate(CASES):
                    samples[index].append(reserve_ms(managers[index], owner, nodes, hooks,
                                                     refused=name.endswith("sample4")))
            medians = [[statistics.median(column) for column in zip(*case, strict=True)] for case in samples]
            for (name, _, _), (whole, in_hooks) in zip(CASES, medians, strict=True):
                added = whole - medians[0][0]
                print(f"{name:<26}{nodes:>6} nodes{whole:>10.2f}{added:>10.2f}{in_hooks:>10.2f}")
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(reserve_ms, managers[1], ALICE, NODES, hooks)
            pstats.Stats(profile).sort_stats("cumulative").print_stats("overlay_policies|first_refusal")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
