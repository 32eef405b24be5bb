"""The seeded qrsub requests of the differential test (issue 28): each
independent request in a window of its own, so no decision depends on an
earlier placement, then a few capacity sequences sharing one window each,
where what the earlier requests took forces the later decisions.

A request knows whether it forces its placement: its queue list, host
request, queue type and PE leave one queue instance, or ask exactly the
slots of every instance left.
"""

from __future__ import annotations

import fnmatch
import random
import time
from dataclasses import dataclass, field

from qrdiff_cluster import HOSTGROUPS, HOSTS, PES, QUEUES, USERS, hosts_of

HOUR = 3600
QUEUE_LISTS = ("dqa.q", "dqb.q", "dqi.q", "dqa.q,dqb.q", "dq*", "*@dq3", "dqa.q@dq2",
               "dqb.q@@dqhi", "dqa.q@dq1,dqb.q@dq5", "dqi.q,dqb.q@dq6")
ACCESS_LISTS = ("plusu1", "plusu2,plusu3", "plusu3", "@dqacl", "@dqdeny", "nosuchuser")
BAD_OPTIONS = (("-pe", "dq_fill", "x"), ("-w", "q"), ("-now", "maybe"), ("-bogus",))
UNKNOWN_OBJECTS = (("-pe", "nosuch", "2"), ("-q", "nosuch.q"), ("-l", "nosuch=1"))


@dataclass
class QrsubRequest:
    number: int
    user: str
    options: list[str]
    start: int
    duration: int
    end_by_date: bool = False
    duration_text: str = ""
    sequence: str = ""
    forced: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.forced = forces_placement(self.options)

    def argv(self) -> list[str]:
        """The qrsub arguments, the same for both sides."""
        window = (["-e", _stamp(self.start + self.duration)] if self.end_by_date else
                  ["-d", self.duration_text or _hms(self.duration)])
        return ["-a", _stamp(self.start), *window, *self.options]

    def command(self) -> str:
        return f"{self.user}$ qrsub {' '.join(_quoted(a) for a in self.argv())}"


def _quoted(word: str) -> str:
    return f"'{word}'" if not word or any(c in word for c in " *@|") else word


def _stamp(epoch: int) -> str:
    return time.strftime("%Y%m%d%H%M.%S", time.localtime(epoch))


def _hms(seconds: int) -> str:
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def option(options: list[str], name: str) -> list[str]:
    """The words after the last ``name`` in ``options`` (empty if absent)."""
    for index in range(len(options) - 1, -1, -1):
        if options[index] == name:
            count = 2 if name == "-pe" else 1
            return options[index + 1:index + 1 + count]
    return []


def candidates(options: list[str]) -> list[tuple[str, str]]:
    """Queue instances (queue, host) a request may use, by its queue list,
    host request, queue type and PE (access lists and capacity aside)."""
    patterns = (option(options, "-q") or ["*"])[0].split(",")
    interactive = option(options, "-now") == ["y"]
    pe = option(options, "-pe")
    hosts = [value.split("=", 1)[1] for value in option(options, "-l")
             if value.startswith(("h=", "hostname="))]
    chosen = []
    for queue, settings in QUEUES.items():
        if ("INTERACTIVE" if interactive else "BATCH") not in settings["qtype"]:
            continue
        if pe and not any(fnmatch.fnmatchcase(p, pe[0]) for p in settings.get("pe_list", [])):
            continue
        for host in hosts_of(queue):
            if hosts and host not in hosts:
                continue
            if any(_matches(pattern, queue, host) for pattern in patterns):
                chosen.append((queue, host))
    return chosen


def _matches(pattern: str, queue: str, host: str) -> bool:
    queue_part, _, host_part = pattern.partition("@")
    if not fnmatch.fnmatchcase(queue, queue_part):
        return False
    if not host_part:
        return True
    if host_part.startswith("@"):
        return host in HOSTGROUPS.get(host_part, [])
    return fnmatch.fnmatchcase(host, host_part)


def forces_placement(options: list[str]) -> bool:
    """One instance left; or, each host left once, a fixed slot count equal
    to all their slots (no per-slot consumable), or to a fixed allocation
    rule's slots on every one of them."""
    left = candidates(options)
    if len(left) == 1:
        return True
    pe = option(options, "-pe")
    hosts = [host for _, host in left]
    if not pe or not pe[1].isdigit() or len(hosts) != len(set(hosts)):
        return False
    rule = PES.get(pe[0], {}).get("allocation_rule")
    if isinstance(rule, int) and int(pe[1]) == rule * len(hosts):
        return True
    return not option(options, "-l") and int(pe[1]) == sum(QUEUES[q]["slots"] for q, _ in left)


def _independent(rng: random.Random, number: int, start: int) -> QrsubRequest:
    options: list[str] = []
    pe = rng.random() < 0.5
    if pe:
        count = rng.randint(1, 8)
        slots = f"{count}-{count + rng.randint(1, 4)}" if rng.random() < 0.15 else str(count)
        options += ["-pe", rng.choice([*PES, "dq_s*"]), slots]
    if not pe or rng.random() < 0.6:        # all.q (BATCH INTERACTIVE, no PE) is out of bounds
        options += ["-q", rng.choice(QUEUE_LISTS)]
    resources = []
    if rng.random() < 0.3:
        resources.append(f"dqlic={rng.randint(0, 3)}")
    if rng.random() < 0.1:
        resources.append(f"h={rng.choice(list(HOSTS))}")
    if resources:
        options += ["-l", ",".join(resources)]
    if rng.random() < 0.3:
        options += ["-u", rng.choice(ACCESS_LISTS)]
    if rng.random() < 0.15:
        options += ["-now", "y"]
    if rng.random() < 0.1:
        options += ["-w", "v"]
    if rng.random() < 0.1:
        options += ["-N", "x+y" if rng.random() < 0.3 else f"run{number}"]
    if rng.random() < 0.05:
        options += ["-A", "bad account" if rng.random() < 0.5 else "proj1"]
    if rng.random() < 0.06:
        options += list(rng.choice(BAD_OPTIONS))
    if rng.random() < 0.06:
        options += list(rng.choice(UNKNOWN_OBJECTS))
    duration = rng.choice([30, 60, 1800, HOUR, 2 * HOUR]) if rng.random() < 0.05 else \
        rng.choice([1800, HOUR, 90 * 60, 2 * HOUR])
    return QrsubRequest(number, rng.choice(USERS), options, start, duration,
                        end_by_date=rng.random() < 0.3,
                        duration_text="1:0:x" if rng.random() < 0.02 else "")


CAPACITY_SEQUENCES: dict[str, list[tuple[str, list[str]]]] = {
    "interactive queue of one slot": [("plusu1", ["-now", "y", "-q", "dqi.q"])] * 2,
    "host consumable on one instance": [("plusu2", ["-q", "dqa.q@dq1", "-l", "dqlic=2"])] * 3,
    "whole hosts by $pe_slots": [("plusu1", ["-pe", "dq_slots", "4", "-q", "dqa.q"])] * 5,
    "$fill_up to the last slot": [("plusu2", ["-pe", "dq_fill", "10", "-q", "dqa.q"]),
                                  ("plusu1", ["-pe", "dq_fill", "6", "-q", "dqa.q"]),
                                  ("plusu2", ["-q", "dqa.q"])],
    "$round_robin over a hostgroup": [("plusu1", ["-pe", "dq_rr", "8", "-q", "dqb.q"]),
                                      ("plusu2", ["-q", "dqb.q"]),
                                      ("plusu1", ["-now", "y", "-q", "dqi.q"])],
    "consumable shared by a host's queues": [
        ("plusu1", ["-pe", "dq_slots", "4", "-q", "dqa.q@dq3", "-l", "dqlic=1"]),
        ("plusu2", ["-q", "dqb.q@dq3", "-l", "dqlic=1"]),
        ("plusu2", ["-q", "dqb.q@dq3"]),
        ("plusu1", ["-q", "dqb.q@dq3"]),
        ("plusu2", ["-q", "dqb.q@dq3"])],
    "fixed allocation rule": [("plusu1", ["-pe", "dq_two", "6", "-q", "dqa.q"]),
                              ("plusu2", ["-pe", "dq_two", "4", "-q", "dqa.q"]),
                              ("plusu1", ["-pe", "dq_two", "2", "-q", "dqa.q"])],
    "fixed allocation rule on two hosts": [
        ("plusu2", ["-pe", "dq_two", "4", "-q", "dqa.q@dq1,dqa.q@dq2"]),
        ("plusu2", ["-pe", "dq_two", "4", "-q", "dqa.q@dq1,dqa.q@dq2"]),
        ("plusu1", ["-pe", "dq_two", "2", "-q", "dqa.q@dq2"])],
}


def generate(seed: int, now: int, count: int = 110) -> list[QrsubRequest]:
    """``count`` independent requests, 3 h apart from a day ahead, then the
    capacity sequences, each in one window after them."""
    rng = random.Random(seed)
    base = (now // HOUR + 24) * HOUR
    requests = [_independent(rng, n, base + n * 3 * HOUR) for n in range(count)]
    start = base + count * 3 * HOUR
    for name, steps in CAPACITY_SEQUENCES.items():
        for user, options in steps:
            requests.append(QrsubRequest(len(requests), user, list(options), start, HOUR,
                                         sequence=name))
        start += 3 * HOUR
    return requests
