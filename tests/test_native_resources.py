"""The cluster's time x resource model (overlay_native.resources.timeline) under the
scheduling pass: seed 001's examples on real hosts and queues, seed 002's
E1 and E2 as the scheduler places them, the PE allocation rules, the AR
rules of seed 000 5.3, and the reasons qstat -j shows."""

from __future__ import annotations

import textwrap

import pytest

from overlay_native.jobs import Placement, Submission
from overlay_native.resources.cluster import load_cluster
from overlay_native.resources.timeline import ClusterResources, Debit
from overlay_native.resources.window import ReservedWindow
from overlay_native.scheduling.dispatch import Policy, dispatch
from overlay_native.submit import SubmitError, check_reservation, make_job, verify


def cluster(tmp_path, text: str):
    path = tmp_path / "cluster.yaml"
    path.write_text(textwrap.dedent(text))
    return load_cluster(str(path), False)[0]


def job(config, job_id, owner="alice", groups=("staff",), **options):
    options.setdefault("command", ("job.sh",))
    return make_job(config, job_id, owner, groups, 0, Submission(**options), is_manager=True)


def model(config, now=0, offset=0, **kwargs) -> ClusterResources:
    return ClusterResources(config, now, offset, **kwargs)


def started(decisions):
    return {job.id: placement.tasks for job, placement in decisions.started}


def reserved(decisions):
    return {job.id: (start, placement.tasks) for job, start, placement in decisions.reserved}


# -- seed 001 -------------------------------------------------------------------------------

ONE_HOST = """\
nodes: [{name: h, slots: 2, exec: none}]
pes: [{name: smp, slots: 8}]
queues: [{name: all.q, hostlist: [h], slots: 2, pe_list: [smp]}]
"""


def test_seed_001_starvation_example(tmp_path):
    """A (both slots, -R y) would starve behind the B(i) stream; with one
    reservation A starts when B1 ends, and only C, short enough to end
    before that, is backfilled."""
    config = cluster(tmp_path, ONE_HOST)
    b1 = job(config, 1, hard="h_rt=10")
    a = job(config, 2, hard="h_rt=10", pe="smp", pe_range=((2, 2),), reserve=True)
    b2 = job(config, 3, hard="h_rt=10")
    c = job(config, 4, hard="h_rt=5")

    def running_b1():
        resources = model(config, now=10)
        resources.book_running([(b1, Placement((("all.q", "h", 1),), None, 10, 10), 5)])
        return resources
    starving = dispatch([a, b2, c], running_b1(), 10, Policy(0))
    assert started(starving) == {3: (("all.q", "h", 1),)} and not starving.reserved
    easy = dispatch([a, b2, c], running_b1(), 10, Policy(1))
    assert started(easy) == {4: (("all.q", "h", 1),)}
    assert reserved(easy) == {2: (15, (("all.q", "h", 2),))}


LICENSES = """\
complexes: [{name: license, type: INT, relop: "<=", consumable: YES, urgency: 100}]
global: {complex_values: {license: 5}}
nodes: [{name: carc, exec: none}, {name: bilbur, exec: none}, {name: es-ergb01-01, exec: none}]
queues: [{name: all.q, slots: 1, hostlist: [carc, bilbur, es-ergb01-01]}]
scheduler: {max_reservation: 10, queue_sort_method: seqno}
"""


def test_seed_001_license_example_first_pass(tmp_path):
    config = cluster(tmp_path, LICENSES)
    l4 = job(config, 3127, hard="h_rt=30,license=4", reserve=True, priority=100)
    l5 = job(config, 3128, hard="h_rt=30,license=5", reserve=True)
    l1 = job(config, 3129, hard="h_rt=31,license=1", reserve=True)
    now = 1077903416
    resources = model(config, now=now)
    decisions = dispatch([l4, l5, l1], resources, now, Policy(10))
    assert list(started(decisions)) == [3127]
    assert {j: start for j, (start, _) in reserved(decisions).items()} == \
        {3128: now + 30, 3129: now + 60}      # L1 (31 s) cannot end before L5's reservation
    (_, placement), = decisions.started
    assert resources.debits(l4, placement) == [Debit("G", "global", "license", 4.0),
                                              Debit("Q", placement.tasks[0][0] + "@" +
                                                    placement.tasks[0][1], "slots", 1.0)]


# -- seed 002: E1 and E2 as the scheduler places them ---------------------------------------------

def test_e1_fixed_values_are_per_slot(tmp_path):
    config = cluster(tmp_path, """\
        complexes: [{name: t01, type: INT, relop: "<="}]
        nodes: [{name: h, exec: none}]
        pes: [{name: pe, slots: 99, allocation_rule: $fill_up}]
        queues: [{name: q1, hostlist: [h], slots: 5, pe_list: [pe], complex_values: {t01: 20}}]
        """)
    resources = model(config)
    j1 = job(config, 1, hard="t01=10", pe="pe", pe_range=((4, 4),))
    assert resources.start_now(j1, 0).tasks == (("q1", "h", 4),)
    too_much = job(config, 2, hard="t01=21", pe="pe", pe_range=((1, 1),))
    assert resources.start_now(too_much, 0) is None
    assert resources.reasons[2][0] == \
        '(-l t01=21) cannot run in queue "q1@h" because it offers only qf:t01=20'


def test_e2_consumables_are_debited_per_task(tmp_path):
    config = cluster(tmp_path, """\
        complexes: [{name: t02, type: INT, relop: "<=", consumable: YES}]
        nodes: [{name: h, exec: none}]
        pes: [{name: pe, slots: 99, allocation_rule: $fill_up}]
        queues:
          - {name: q2, hostlist: [h], slots: 5, seq_no: 2, pe_list: [pe], complex_values: {t02: 40}}
          - {name: q3, hostlist: [h], slots: 1, seq_no: 3, pe_list: [pe], complex_values: {t02: 40}}
          - {name: q4, hostlist: [h], slots: 3, seq_no: 4, pe_list: [pe], complex_values: {t02: 40}}
        scheduler: {queue_sort_method: seqno}
        """)
    resources = model(config)
    j2 = job(config, 1, hard="t02=20", pe="pe", pe_range=((4, 4),))
    placement = resources.start_now(j2, 0)
    assert placement.tasks == (("q2", "h", 2), ("q3", "h", 1), ("q4", "h", 1))
    resources.book(j2, placement, 0)
    more = job(config, 2, hard="t02=20", pe="pe", pe_range=((1, 99),))
    assert resources.start_now(more, 0).tasks == (("q4", "h", 1),)   # q2 and q3 hold no t02 left


# -- parallel environments --------------------------------------------------------------------------

FOUR_HOSTS = """\
nodes: [{{name: "h[1-4]", ncpus: 4, exec: none}}]
pes:
  - {{name: {name}, slots: {slots}, allocation_rule: {rule}}}
  - {{name: other, slots: 2, allocation_rule: $fill_up}}
queues: [{{name: all.q, hostlist: ["h[1-4]"], pe_list: [{name}, other]}}]
scheduler: {{queue_sort_method: seqno}}
"""


@pytest.mark.parametrize("rule,ranges,tasks", [
    ("$pe_slots", ((2, 8),), (("h1", 4),)),
    ("$fill_up", ((6, 6),), (("h1", 4), ("h2", 2))),
    ("$round_robin", ((6, 6),), (("h1", 2), ("h2", 2), ("h3", 1), ("h4", 1))),
    ("2", ((1, 7),), (("h1", 2), ("h2", 2), ("h3", 2))),
    ("$fill_up", ((1, 3), (20, 30)), (("h1", 3),)),
])
def test_allocation_rules_and_ranges(tmp_path, rule, ranges, tasks):
    config = cluster(tmp_path, FOUR_HOSTS.format(name="par", slots=64, rule=rule))
    placement = model(config).start_now(job(config, 1, pe="par", pe_range=ranges), 0)
    assert [(host, n) for _, host, n in placement.tasks] == list(tasks)
    assert placement.pe == "par"


def test_the_pe_slot_limit_and_the_largest_of_several_pes(tmp_path):
    config = cluster(tmp_path, FOUR_HOSTS.format(name="par", slots=3, rule="$fill_up"))
    resources = model(config)
    assert resources.start_now(job(config, 1, pe="par", pe_range=((2, 8),)), 0).slots == 3
    chosen = resources.start_now(job(config, 2, pe="*", pe_range=((1, 8),)), 0)
    assert (chosen.pe, chosen.slots) == ("par", 3)      # 'other' offers only 2
    resources.book(job(config, 3, pe="par", pe_range=((3, 3),)),
                   Placement((("all.q", "h1", 3),), "par", None, 100), 0)
    assert resources.start_now(job(config, 4, pe="par", pe_range=((1, 1),)), 0) is None
    assert resources.reasons[4] == ['cannot run in PE "par" because it only offers 0 slots']


def test_masterq_puts_the_first_task_there(tmp_path):
    config = cluster(tmp_path, """\
        nodes: [{name: "h[1-2]", ncpus: 2, exec: none}]
        pes: [{name: mpi, slots: 8, allocation_rule: $round_robin}]
        queues:
          - {name: all.q, hostlist: ["h[1-2]"], pe_list: [mpi]}
          - {name: master.q, hostlist: [h2], slots: 1, seq_no: 9, pe_list: [mpi]}
        scheduler: {queue_sort_method: seqno}
        """)
    placement = model(config).start_now(
        job(config, 1, pe="mpi", pe_range=((3, 3),), master_queues=("master.q",)), 0)
    assert placement.master == ("master.q", "h2") and placement.slots == 3


def test_job_consumables_bind_the_master_only(tmp_path):
    config = cluster(tmp_path, """\
        complexes: [{name: matlab, type: INT, relop: "<=", consumable: JOB}]
        nodes: [{name: h1, ncpus: 2, exec: none, complex_values: {matlab: 1}},
                {name: h2, ncpus: 2, exec: none, complex_values: {matlab: 0}}]
        pes: [{name: mpi, slots: 8, allocation_rule: $fill_up}]
        queues: [{name: all.q, hostlist: [h1, h2], pe_list: [mpi]}]
        scheduler: {queue_sort_method: seqno}
        """)
    resources = model(config)
    first = job(config, 1, hard="matlab=1", pe="mpi", pe_range=((4, 4),))
    placement = resources.start_now(first, 0)
    assert placement.tasks == (("all.q", "h1", 2), ("all.q", "h2", 2))
    assert Debit("H", "h1", "matlab", 1.0) in resources.debits(first, placement)
    assert Debit("H", "h2", "matlab", 1.0) not in resources.debits(first, placement)


# -- sequential jobs: order, soft requests, queue lists, access, reasons ------------------------------

TWO_QUEUES = """\
userlists: {staff: ["@staff"]}
nodes:
  - {name: fast, ncpus: 2, arch: lx-amd64, exec: none, load: 1.5}
  - {name: slow, ncpus: 2, arch: lx-arm64, exec: none, load: 0.2}
queues:
  - {name: all.q, hostlist: [fast, slow], seq_no: 1}
  - {name: staff.q, hostlist: [fast, slow], seq_no: 2, user_lists: [staff], disabled: [slow]}
"""


def test_queue_sort_methods(tmp_path):
    config = cluster(tmp_path, TWO_QUEUES)
    assert model(config).start_now(job(config, 1), 0).master == ("all.q", "slow")    # load
    config = cluster(tmp_path, TWO_QUEUES + "scheduler: {NodeSortKey: [NodeName]}\n")
    assert model(config).start_now(job(config, 1), 0).master == ("all.q", "fast")


def test_soft_requests_choose_among_the_fitting_queues(tmp_path):
    config = cluster(tmp_path, TWO_QUEUES)
    placement = model(config).start_now(job(config, 1, soft="arch=lx-amd64"), 0)
    assert placement.master == ("all.q", "fast")


def test_static_reasons(tmp_path):
    config = cluster(tmp_path, TWO_QUEUES)
    resources = model(config)
    assert resources.start_now(job(config, 1, hard="arch=sol-sparc64"), 0) is None
    assert resources.reasons[1] == [
        '(-l arch=sol-sparc64) cannot run at host "slow" because it offers only hl:arch=lx-arm64',
        'queue instance "staff.q@slow" dropped because it is disabled',
        '(-l arch=sol-sparc64) cannot run at host "fast" because it offers only hl:arch=lx-amd64',
        '(-l arch=sol-sparc64) cannot run at host "fast" because it offers only hl:arch=lx-amd64']
    assert resources.start_now(job(config, 2, groups=("guests",), queues=("staff.q",)), 0) is None
    assert resources.reasons[2] == [
        'cannot run in queue "all.q@slow" because it is not contained in its hard queue list (-q)',
        'queue instance "staff.q@slow" dropped because it is disabled',
        'cannot run in queue "all.q@fast" because it is not contained in its hard queue list (-q)',
        'has no permission for cluster queue "staff.q"']
    assert resources.start_now(job(config, 3, queues=("staff.q",)), 0).master == ("staff.q", "fast")


def test_full_queues_and_reservations_in_the_reasons(tmp_path):
    config = cluster(tmp_path, """\
        complexes: [{name: lic, type: INT, relop: "<=", consumable: YES}]
        global: {complex_values: {lic: 1}}
        nodes: [{name: a, ncpus: 1, exec: none}, {name: b, ncpus: 1, exec: none}]
        scheduler: {queue_sort_method: seqno, NodeSortKey: [NodeName]}
        """)
    resources = model(config, now=0)
    running = job(config, 1, hard="h_rt=100")
    resources.book_running([(running, Placement((("all.q", "a", 1),), None, 100, 100), 0)])
    licensed = job(config, 2, hard="h_rt=100,lic=1", reserve=True)
    assert dispatch([licensed], resources, 0, Policy(1)).started        # on b, now
    later = job(config, 3, hard="h_rt=10,lic=1")
    assert resources.start_now(later, 0) is None
    assert resources.reasons[3] == [
        'queue instance "all.q@a" dropped because it is full',
        'queue instance "all.q@b" dropped because it is full']
    resources = model(config, now=0)
    resources.book(licensed, Placement((("all.q", "b", 1),), None, 100, 100), 50)   # reserved
    assert resources.start_now(later, 0).master == ("all.q", "a")                 # ends at 10
    too_long = job(config, 4, hard="h_rt=60,lic=1")
    assert resources.start_now(too_long, 0) is None
    assert resources.reasons[4][0] == ('(-l h_rt=60,lic=1) cannot run globally because it offers '
                                       'only gc:lic=0.000000 due to a reservation')


# -- advance reservations (seed 000, 5.3) ------------------------------------------------------------

AR_HOSTS = """\
nodes: [{name: h1, ncpus: 2, exec: none}, {name: h2, ncpus: 2, exec: none}]
scheduler: {queue_sort_method: seqno, NodeSortKey: [NodeName], max_reservation: 5}
"""


def ar(state="w", slots=None, users=("alice",), hard_error=False):
    return ReservedWindow(7, 100, 200, slots or {"h1": 2}, users, state, hard_error)


def test_jobs_outside_the_ar_keep_off_its_slots(tmp_path):
    config = cluster(tmp_path, AR_HOSTS)
    resources = model(config, now=50, offset=10, reservations=[ar()])
    no_limit = job(config, 1)
    assert resources.start_now(no_limit, 50).master == ("all.q", "h2")
    resources.book(no_limit, resources.start_now(no_limit, 50), 50)
    resources.book(no_limit, Placement((("all.q", "h2", 1),), None, None, float("inf")), 50)
    assert resources.start_now(job(config, 2), 50) is None
    assert resources.reasons[2][0] == ('(-l NONE) cannot run in queue "all.q@h1" because it offers '
                                       'only qc:slots=0.000000 due to a reservation')
    assert resources.start_now(job(config, 3, hard="h_rt=40"), 50).master == ("all.q", "h1")
    assert resources.start_now(job(config, 4, hard="h_rt=41"), 50) is None    # 41 + 10 > 50
    assert resources.reasons[4][0] == ('(-l h_rt=41) cannot run in queue "all.q@h1" because it '
                                       'offers only qc:slots=0.000000 due to a reservation')


def test_a_job_without_h_rt_takes_the_slots_an_ar_leaves_on_its_host(tmp_path):
    """Grid Engine 8.1.9 on a 2-slot all.q@node3 with a 1-slot AR: a job
    without h_rt runs on the other slot, before and beside the AR's job;
    only the AR's slot is out of its way for good."""
    config = cluster(tmp_path, AR_HOSTS)
    before = model(config, now=50, reservations=[ar(slots={"h1": 1})])
    endless = job(config, 1, hard="h=h1")
    placement = before.start_now(endless, 50)
    assert placement.master == ("all.q", "h1")
    before.book(endless, placement, 50)
    assert before.start_now(job(config, 2, hard="h=h1"), 50) is None
    assert '(-l hostname=h1) cannot run in queue "all.q@h1" because it offers only ' \
        'qc:slots=0.000000 due to a reservation' in before.reasons[2]
    during = model(config, now=120, offset=10, reservations=[ar("r", slots={"h1": 1})])
    inside = job(config, 3, ar=7)
    during.book_running([(inside, during.start_now(inside, 120), 120)])
    assert during.start_now(job(config, 4, hard="h=h1"), 120).master == ("all.q", "h1")
    assert verify(config, job(config, 5, hard="h=h1"), 50, 0, {7: ar(slots={"h1": 1})}) == []
    assert '(-l hostname=h1) cannot run in queue "all.q@h1" because it offers only ' \
        'qc:slots=0.000000 due to a reservation' in verify(config, job(config, 6, hard="h=h1"),
                                                          50, 0, {7: ar()})


def test_ar_jobs_run_only_inside_their_ar(tmp_path):
    config = cluster(tmp_path, AR_HOSTS)
    waiting = model(config, now=50, offset=10, reservations=[ar("w")])
    inside = job(config, 1, ar=7, reserve=True)
    assert waiting.start_now(inside, 50) is None
    assert waiting.reasons[1] == ['cannot run in queue "all.q@h2" because it is not reserved by '
                                  'advance reservation 7',
                                  "cannot run because advance reservation 7 has not started"]
    start, placement = waiting.earliest(inside, 50)
    assert (start, placement.master, placement.h_rt) == (100, ("all.q", "h1"), 90)
    running = model(config, now=120, offset=10, reservations=[ar("r", slots={"h1": 1})])
    placement = running.start_now(inside, 120)
    assert (placement.master, placement.h_rt, placement.duration) == (("all.q", "h1"), 70, 80)
    running.book(inside, placement, 120)
    assert running.start_now(job(config, 2, ar=7, hard="h_rt=10"), 120) is None   # AR's 1 slot used
    too_long = job(config, 3, ar=7, hard="h_rt=71")
    fresh = model(config, now=120, offset=10, reservations=[ar("r")])
    assert fresh.start_now(too_long, 120) is None
    assert fresh.reasons[3][-1] == ("cannot run because its h_rt (71 s) reaches beyond the end of "
                                    "advance reservation 7 minus DURATION_OFFSET (10 s)")
    assert fresh.start_now(job(config, 4, ar=7, hard="h_rt=70"), 120).h_rt == 70


def test_ar_errors_and_access(tmp_path):
    config = cluster(tmp_path, AR_HOSTS)
    hard = model(config, now=120, reservations=[ar("E", hard_error=True)])
    assert hard.start_now(job(config, 1, ar=7), 120) is None
    assert hard.reasons[1][-1] == ("cannot run because advance reservation 7 is in error state "
                                   "(E, hard error handling)")
    soft = model(config, now=120, reservations=[ar("E")])
    assert soft.start_now(job(config, 1, ar=7), 120).master == ("all.q", "h1")
    stranger = model(config, now=120, reservations=[ar("r")])
    assert stranger.start_now(job(config, 2, owner="bob", groups=("bob",), ar=7), 120) is None
    assert "has no permission for advance reservation 7" in stranger.reasons[2]
    group = model(config, now=120, reservations=[ar("r", users=("alice", "@staff"))])
    assert group.start_now(job(config, 3, owner="carol", ar=7), 120) is not None


def test_submission_checks_against_the_ar(tmp_path):
    config = cluster(tmp_path, AR_HOSTS)
    window = ar("w")
    check_reservation(job(config, 1, ar=7, hard="h_rt=90"), window, 50, 10)
    with pytest.raises(SubmitError, match=r"h_rt 91 s exceeds what advance reservation 7 leaves "
                                          r"a job \(90 s"):
        check_reservation(job(config, 1, ar=7, hard="h_rt=91"), window, 50, 10)
    with pytest.raises(SubmitError, match="h_rt 61 s exceeds .* \\(60 s"):
        check_reservation(job(config, 1, ar=7, hard="h_rt=61"), window, 130, 10)
    with pytest.raises(SubmitError, match="bob is not in the access list of advance reservation 7"):
        check_reservation(job(config, 1, owner="bob", groups=(), ar=7), window, 50, 10)
    with pytest.raises(SubmitError, match="advance reservation 7 does not exist"):
        check_reservation(job(config, 1, ar=7), None, 50, 10)


# -- submission and verification -----------------------------------------------------------------------

def test_verification_against_an_empty_cluster(tmp_path):
    config = cluster(tmp_path, TWO_QUEUES)
    assert verify(config, job(config, 1, hard="arch=lx-arm64"), 0, 0, {}) == []
    assert verify(config, job(config, 2, hard="arch=sol*"), 0, 0, {})[0] == \
        '(-l arch=sol*) cannot run at host "slow" because it offers only hl:arch=lx-arm64'
    windows = {7: ReservedWindow(7, 100, 200, {"slow": 2}, ("alice",))}
    assert verify(config, job(config, 3, ar=7, hard="arch=lx-amd64"), 0, 0, windows)[:1] == \
        ['(-l arch=lx-amd64) cannot run at host "slow" because it offers only hl:arch=lx-arm64']
    assert verify(config, job(config, 4, ar=7), 0, 0, windows) == []


@pytest.mark.parametrize("options,message", [
    ({"hard": "xyz=1"}, "-l xyz=1: unknown resource 'xyz'"),
    ({"soft": "h_vmem=lots"}, "-soft -l h_vmem=lots: resource 'h_vmem': bad MEMORY value"),
    ({"pe": "mpi", "pe_range": ((2, 2),)}, 'the requested parallel environment "mpi" does not exist'),
    ({"queues": ("nosuch.q",)}, 'job requests unknown queue "nosuch.q" \\(-q\\)'),
    ({"priority": 2000}, "-p 2000: a priority is -1023 to 1024"),
    ({"verify": "x"}, "-w: expected e, w, n or v"),
    ({"master_queues": ("all.q",)}, "-masterq is only for parallel jobs"),
])
def test_bad_submissions_are_refused_with_the_reason(tmp_path, options, message):
    config = cluster(tmp_path, TWO_QUEUES)
    with pytest.raises(SubmitError, match=message):
        job(config, 1, **options)


def test_only_managers_raise_priority(tmp_path):
    config = cluster(tmp_path, TWO_QUEUES)
    with pytest.raises(SubmitError, match="only managers may raise a job's priority above 0"):
        make_job(config, 1, "alice", (), 0, Submission(("x",), priority=1))
    assert make_job(config, 1, "alice", (), 0, Submission(("x",), priority=-5)).submission.priority == -5


def test_exhausted_when_no_instance_has_a_free_slot(tmp_path):
    config = cluster(tmp_path, ONE_HOST)
    resources = model(config)
    assert not resources.exhausted(0)
    resources.book(job(config, 1), Placement((("all.q", "h", 2),), None, None, 100), 0)
    assert resources.exhausted(0) and not resources.exhausted(100)


def test_reported_load_values_void_only_the_matching_that_used_them(tmp_path):
    from overlay_native.resources.timeline import Baseline
    config = cluster(tmp_path, AR_HOSTS)
    baseline = Baseline()
    model(config, reservations=(), baseline=baseline, reports={"h1": {"mem_free": 2 ** 30}})
    memory, plain = job(config, 1, hard="mem_free=512M"), job(config, 2, hard="h_rt=10")
    first = model(config, baseline=baseline, reports={"h1": {"mem_free": 2 ** 30}})
    assert first.start_now(memory, 0).master == ("all.q", "h1")
    assert first.start_now(plain, 0).master == ("all.q", "h1")
    assert len(baseline.mismatches) == 2
    again = model(config, baseline=baseline, reports={"h1": {"mem_free": 2 ** 28}})
    assert len(baseline.mismatches) == 1                  # mem_free changed: its entry went
    assert again.start_now(memory, 0) is None
    assert "hl:mem_free=268435456" in again.reasons[1][0]
