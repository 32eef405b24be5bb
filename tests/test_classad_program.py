"""reservable.ad programs node by node: PluS's variables, node records and
functions, the rewriting HTCondor's library needs, and refusal reasons."""

from __future__ import annotations

import logging

import pytest

from overlay.contract.policy import PolicyContext, Usage
from overlay.language.model import Allocation, Node, Request, Reservation, State
from overlay_classad.nodes import NodeAds
from overlay_classad.program import ClassAdError, Program
from overlay_classad.syntax import ClassAdSyntaxError

T0 = 1_800_000_000
HOUR = 3600


def nodes(count: int, **fields) -> tuple[Node, ...]:
    return tuple(Node(f"n{i:02d}", **fields) for i in range(1, count + 1))


def allocate(text: str, candidates: tuple[Node, ...], owner: str = "alice",
             start: int = T0 + HOUR, end: int = T0 + 2 * HOUR,
             context: PolicyContext | None = None, wanted: int | None = None):
    """The nodes the program lets one request take, in order, and the
    distinct refusal reasons, as the manager would ask."""
    context = context or PolicyContext(T0, candidates)
    evaluation = Program(text).evaluation(owner, start, end, context, NodeAds())
    chosen: list[Node] = []
    reasons: list[str] = []
    for node in candidates:
        reason = evaluation.refusal(node, tuple(chosen))
        if reason is None:
            chosen.append(node)
            if len(chosen) == wanted:
                break
        elif reason not in reasons:
            reasons.append(reason)
    return [n.name for n in chosen], reasons


def value_for_node(expression: str, node: Node, **kwargs):
    """What ``expression`` is for ``node``: the program keeps the nodes
    whose value equals the expected one (the test compares)."""
    return allocate(f"[PLUS_NODE_RESERVABLE = {expression};]", (node,), **kwargs)[0] == [node.name]


def test_node_record_members():
    node = Node("gpu7", slots=8, memory_mb=64000, ncpus=16, arch="lx-amd64", os="linux",
                alive=True, load=0.25, running_jobs=2, idle_since=0,
                properties={"gpu": "yes", "cuda": "12", "fast": "true", "ratio": "0.5", "name": "x"})
    checks = ['PLUS_CANDIDATE_NODE.name == "gpu7"', "PLUS_CANDIDATE_NODE.isAlive",
              "PLUS_CANDIDATE_NODE.loadavg == 0.25", "PLUS_CANDIDATE_NODE.nRunJobs == 2",
              "PLUS_CANDIDATE_NODE.nSlots == 8", "PLUS_CANDIDATE_NODE.nCPUs == 16",
              "PLUS_CANDIDATE_NODE.memory == 64000", 'PLUS_CANDIDATE_NODE.arch == "lx-amd64"',
              'PLUS_CANDIDATE_NODE.os == "linux"', "PLUS_CANDIDATE_NODE.idleTime == 0",
              'PLUS_CANDIDATE_NODE.gpu == "yes"', "PLUS_CANDIDATE_NODE.cuda == 12",
              "PLUS_CANDIDATE_NODE.fast == true", "PLUS_CANDIDATE_NODE.ratio == 0.5"]
    for check in checks:
        assert value_for_node(check, node), check
    assert not value_for_node("PLUS_CANDIDATE_NODE.nRunJobs == 0", node)
    assert not value_for_node("PLUS_CANDIDATE_NODE.isAlive", Node("down", alive=False))


def test_idle_time_counts_from_the_last_job():
    idle = Node("idle", idle_since=T0 - 600)
    assert value_for_node("PLUS_CANDIDATE_NODE.idleTime == 600", idle)
    assert value_for_node("PLUS_CANDIDATE_NODE.idleTime >= 600", idle)
    assert not value_for_node("PLUS_CANDIDATE_NODE.idleTime > 600", idle)


def test_owner_window_and_clock():
    node = Node("n")
    assert value_for_node('PLUS_RSV_OWNER == "bob"', node, owner="bob")
    assert value_for_node(f"PLUS_RSV_START == absTime({T0 + HOUR})", node)
    assert value_for_node("PLUS_RSV_END - PLUS_RSV_START == relTime(3600)", node)
    # time() is the request's clock, not the wall clock: simulations and tests hold
    assert value_for_node(f"time() == {T0}", node)
    assert value_for_node("PLUS_RSV_START - absTime(time()) == relTime(\"01:00:00\")", node)


def test_reltime_strings_work_in_time_arithmetic():
    """HTCondor makes relTime("...") a plain real, which it will not add to an
    absTime nor compare with a reltime; the plugin rewrites it to seconds."""
    node = Node("n")
    for text in ('"00:30:00"', '"30m"', '"1800"', "1800"):
        assert value_for_node(f"relTime({text}) == relTime(1800)", node), text
    assert value_for_node('absTime(time()) + relTime("7d") == absTime(time() + 7 * 86400)', node)
    assert value_for_node('PLUS_RSV_START - absTime(time()) <= relTime("1h")', node)


def test_a_bad_reltime_string_is_refused_at_reading():
    with pytest.raises(ClassAdSyntaxError, match=r'line 2: relTime\("soon"\) is not a time span'):
        Program('[\n a = relTime("soon");\n PLUS_NODE_RESERVABLE = true ]')


def test_linear_and_quadratic():
    node = Node("n")
    assert value_for_node("linear(5, 0, 10, 10, 30) == 20.0", node)
    assert value_for_node("linear(15, 0, 10, 10, 30) == 40.0", node)
    assert value_for_node("quadratic(5, 0, 10, 10, 30) == 15.0", node)
    assert value_for_node("quadratic(10, 0, 10, 10, 30) == 30.0", node)
    assert value_for_node('linear(relTime("01:15:00"), relTime("00:30:00"), 90, '
                          'relTime("02:00:00"), 50) == 70.0', node)
    assert value_for_node("isError(linear(1, 2, 3, 2, 5))", node)
    assert value_for_node('isError(linear("x", 0, 1, 2, 3))', node)
    assert value_for_node("LINEAR(linear(1, 0, 0, 1, 2), 0, 0, 4, 4) == 2.0", node)


class CountingContext(PolicyContext):
    """A context whose plus_rsvutil answers are fixed and counted."""

    def __init__(self, all_nodes, answer: Usage) -> None:
        super().__init__(T0, all_nodes)
        object.__setattr__(self, "calls", [])
        object.__setattr__(self, "answer", answer)

    def usage(self, owner: str, start: int, end: int) -> Usage:
        self.calls.append((owner, start, end))
        return self.answer


def test_plus_rsvutil_gives_count_reltime_and_node_hours_once_per_request():
    candidates = nodes(20)
    context = CountingContext(candidates, Usage(3, 7200, 12.5))
    text = ('[util = plus_rsvutil(PLUS_RSV_OWNER, absTime(time()) - relTime("7d"), '
            'absTime(time()) + relTime("7d"));'
            ' PLUS_NODE_RESERVABLE = util[0] == 3 && util[1] == relTime("02:00:00") '
            '&& util[2] == 12.5 && isReltime(util[1])]')
    chosen, _ = allocate(text, candidates, owner="bob", context=context)
    assert len(chosen) == 20
    assert context.calls == [("bob", T0 - 7 * 86400, T0 + 7 * 86400)]


def test_plus_rsvutil_per_node_when_its_arguments_name_the_node():
    candidates = nodes(3)
    context = CountingContext(candidates, Usage(0, 0, 0.0))
    text = ("[PLUS_NODE_RESERVABLE = plus_rsvutil(PLUS_CANDIDATE_NODE.name, PLUS_RSV_START, "
            "PLUS_RSV_END)[0] == 0]")
    assert len(allocate(text, candidates, context=context)[0]) == 3
    assert [c[0] for c in context.calls] == ["n01", "n02", "n03"]


def test_plus_rsvutil_over_real_reservations():
    candidates = nodes(4)

    def ar(ar_id: int, owner: str, start: int, hours: int, width: int) -> Reservation:
        request = Request(start=start, end=start + hours * HOUR, nodes=width)
        return Reservation(ar_id, owner, "g", request, State.WAITING, T0,
                           [Allocation(f"n{i:02d}", 1) for i in range(1, width + 1)])

    context = PolicyContext(T0, candidates, (ar(1, "bob", T0 + HOUR, 2, 2),
                                             ar(2, "bob", T0 + 10 * 86400, 1, 1),
                                             ar(3, "eve", T0 + HOUR, 5, 4)))
    text = ("[u = plus_rsvutil(PLUS_RSV_OWNER, absTime(time()), absTime(time()) + relTime(\"7d\"));"
            " PLUS_NODE_RESERVABLE = u[0] == 1 && u[1] == relTime(7200) && u[2] == 4.0]")
    assert len(allocate(text, candidates, owner="bob", context=context)[0]) == 4


def test_builtin_arity_and_place_are_checked_at_reading():
    with pytest.raises(ClassAdSyntaxError, match=r"line 3: linear\(\) takes 5 arguments, got 3"):
        Program("[\n a = 1;\n b = linear(1, 2, 3);\n PLUS_NODE_RESERVABLE = true]")
    with pytest.raises(ClassAdSyntaxError, match=r"line 1: plus_rsvutil\(\) may be used in the "
                                                 r"attributes of the top-level ClassAd only"):
        Program('[r = [u = plus_rsvutil("a", 0, 1)]; PLUS_NODE_RESERVABLE = true]')


def test_plus_node_reservable_must_be_defined():
    with pytest.raises(ClassAdError, match="PLUS_NODE_RESERVABLE is not defined"):
        Program("[PLUS_NODE_RESERVED = true]")


def test_the_last_definition_counts_as_in_htcondor(caplog):
    with caplog.at_level(logging.WARNING, "plus.classad"):
        chosen, _ = allocate("[a = false;\n A = true;\n PLUS_NODE_RESERVABLE = a]", nodes(1))
    assert chosen == ["n01"]
    assert "line 2: A redefines line 1" in caplog.text


def test_allocated_and_all_nodes_by_size_and_as_lists():
    candidates = (Node("a", arch="x86"), Node("b", arch="arm"), Node("c", arch="x86"),
                  Node("d", arch="x86"))
    half = "[PLUS_NODE_RESERVABLE = size(PLUS_ALLOCATED_NODES) < size(PLUS_ALL_NODES) / 2]"
    assert allocate(half, candidates)[0] == ["a", "b"]
    same_arch = ("[PLUS_NODE_RESERVABLE = size(PLUS_ALLOCATED_NODES) == 0 || "
                 "PLUS_ALLOCATED_NODES[0].arch == PLUS_CANDIDATE_NODE.arch]")
    assert allocate(same_arch, candidates)[0] == ["a", "c", "d"]
    last_of_all = '[PLUS_NODE_RESERVABLE = PLUS_ALL_NODES[3].name == "d"]'
    assert allocate(last_of_all, candidates)[0] == ["a", "b", "c", "d"]


def test_request_values_keep_their_type_when_set_once_per_request():
    """Attributes that do not depend on the node are worked out once per
    request; a reltime or absTime must stay one for the per-node part."""
    candidates = (Node("young", idle_since=T0 - 60), Node("old", idle_since=T0 - 7200))
    text = ('[lead = PLUS_RSV_START - absTime(time());\n'
            ' opens = PLUS_RSV_START;\n'
            ' PLUS_NODE_RESERVABLE = relTime(PLUS_CANDIDATE_NODE.idleTime) >= lead &&\n'
            '     opens > absTime(time()) + relTime(PLUS_CANDIDATE_NODE.idleTime) - relTime(7200)]')
    assert allocate(text, candidates)[0] == ["old"]


def test_refusals_say_which_conjunct_failed_and_the_values_it_read():
    candidates = (Node("busy", running_jobs=1), Node("loaded", load=0.9), Node("unusableA"),
                  Node("ok"))
    text = """[
        UnusableNodes = { "unusableA", "unusableB" };
        PLUS_NODE_RESERVABLE =
            (PLUS_CANDIDATE_NODE.nRunJobs == 0 &&
             PLUS_CANDIDATE_NODE.isAlive &&
             PLUS_CANDIDATE_NODE.loadavg <= 0.3 &&
             !member(PLUS_CANDIDATE_NODE.name, UnusableNodes));
    ]"""
    chosen, reasons = allocate(text, candidates)
    assert chosen == ["ok"]
    assert reasons == [
        "PLUS_NODE_RESERVABLE is false: (PLUS_CANDIDATE_NODE.nRunJobs == 0) is false",
        "PLUS_NODE_RESERVABLE is false: (PLUS_CANDIDATE_NODE.loadavg <= 0.3) is false",
        'PLUS_NODE_RESERVABLE is false: (!member(PLUS_CANDIDATE_NODE.name, UnusableNodes)) is '
        'false (UnusableNodes = {"unusableA", "unusableB"})']


def test_an_undefined_verdict_refuses_and_says_so():
    chosen, reasons = allocate("[PLUS_NODE_RESERVABLE = PLUS_CANDIDATE_NODE.nosuch > 1]", nodes(2))
    assert chosen == [] and reasons == [
        "PLUS_NODE_RESERVABLE = (PLUS_CANDIDATE_NODE.nosuch > 1) is undefined"]
    chosen, reasons = allocate('[limit = "x"; PLUS_NODE_RESERVABLE = 1 < limit]', nodes(1))
    assert chosen == [] and reasons == ['PLUS_NODE_RESERVABLE = (1 < limit) is error (limit = "x")']


def test_a_request_wide_verdict_is_worked_out_once():
    candidates = nodes(50)
    context = CountingContext(candidates, Usage(101, 0, 0.0))
    text = ("[util = plus_rsvutil(PLUS_RSV_OWNER, PLUS_RSV_START, PLUS_RSV_END);"
            " PLUS_NODE_RESERVABLE = util[0] <= 100]")
    chosen, reasons = allocate(text, candidates, context=context)
    assert chosen == [] and len(context.calls) == 1
    assert reasons == [
        "PLUS_NODE_RESERVABLE = (util[0] <= 100) is false (util = {101, relTime(0), 0})"]


def approval(text: str, nodes: int = 1, start: int = T0 + HOUR) -> str | None:
    context = PolicyContext(T0, ())
    return Program(text).evaluation("alice", start, start + HOUR, context, NodeAds(),
                                    nodes).approval()


def test_plus_approval_required_holds_a_request_for_a_manager():
    text = ('[PLUS_NODE_RESERVABLE = true; PLUS_APPROVAL_REQUIRED = PLUS_RSV_NODES > 8 || '
            '(PLUS_RSV_START - absTime(time())) > relTime("30d");]')
    assert approval(text, nodes=8) is None
    assert approval(text, nodes=9) == ('PLUS_APPROVAL_REQUIRED = ((PLUS_RSV_NODES > 8) || '
                                       '((PLUS_RSV_START - absTime(time())) > relTime("30d"))) is true')
    assert approval(text, start=T0 + 31 * 86400) is not None
    said = '[PLUS_NODE_RESERVABLE = true; PLUS_APPROVAL_REQUIRED = PLUS_RSV_NODES > 2 ? "big" : "";]'
    assert (approval(said, nodes=3), approval(said, nodes=2)) == ("big", None)
    assert approval("[PLUS_NODE_RESERVABLE = true;]", nodes=99) is None


def test_plus_approval_required_may_not_read_the_node():
    with pytest.raises(ClassAdSyntaxError, match="PLUS_APPROVAL_REQUIRED is asked once per request"):
        Program("[PLUS_NODE_RESERVABLE = true;\n"
                " PLUS_APPROVAL_REQUIRED = PLUS_CANDIDATE_NODE.nSlots > 4;]")
