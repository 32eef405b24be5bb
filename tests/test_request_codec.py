"""One wire form for a Request: plus_reserve builds it, the socket (and
the HTTP API) decode it with the commands' checks, the views show it and
the store keeps it. What one side writes the others read back unchanged."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlay.language.model import Request, RequestKind
from overlay.language.request import RequestError, request_wire
from overlay.wire.codec import (
    REQUEST_FIELDS,
    Arguments,
    BadArguments,
    encode_request,
    reserve_request,
    stored_request,
)

NOW = int(time.time())
names = st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
requests = st.builds(
    Request,
    start=st.integers(NOW, NOW + 86400), end=st.integers(NOW + 86401, NOW + 2 * 86400),
    nodes=st.integers(1, 64),
    users=st.lists(names, max_size=3, unique=True).map(tuple),
    slots_per_node=st.none() | st.integers(1, 16), memory_mb=st.none() | st.integers(1, 1 << 20),
    ncpus=st.none() | st.integers(1, 64), arch=st.none() | st.sampled_from(["lx-amd64", "lx-*"]),
    os=st.none() | st.just("linux"),
    attributes=st.lists(st.tuples(names, names), max_size=3, unique_by=lambda p: p[0]).map(tuple),
    queues=st.lists(names.map(lambda n: n + ".q"), max_size=2, unique=True).map(tuple),
    name=st.just("") | names, hard_error=st.booleans(),
    mail_options=st.sampled_from(["", "n", "b", "be", "bea"]),
    mail_list=st.lists(names, max_size=2, unique=True).map(tuple))
slot_requests = st.builds(
    Request,
    start=st.integers(NOW, NOW + 86400), end=st.integers(NOW + 86401, NOW + 2 * 86400),
    nodes=st.just(0), users=st.lists(names, max_size=3, unique=True).map(tuple),
    queues=st.lists(names.map(lambda n: n + ".q"), max_size=2, unique=True).map(tuple),
    pe_range=st.tuples(st.integers(1, 8), st.integers(0, 8)).map(lambda r: ((r[0], sum(r)),)),
    master_queues=st.lists(names.map(lambda n: n + ".q"), max_size=1).map(tuple),
    ckpt=st.just("") | names, interactive=st.booleans(), account=st.just("") | names,
    kind=st.just(RequestKind.SLOTS)).flatmap(
    lambda r: st.sampled_from([r.with_changes(pe="mpi"), r.with_changes(alloc_rule="$fill_up")]))


def test_the_wire_names_are_the_requests_fields():
    assert REQUEST_FIELDS == tuple(field.name for field in dataclasses.fields(Request))


@settings(max_examples=200, deadline=None)
@given(requests)
def test_a_request_comes_back_unchanged_through_the_socket_and_the_store(request):
    wire = encode_request(request)
    assert list(wire) == list(REQUEST_FIELDS)
    assert json.loads(json.dumps(wire)) == wire                       # plain JSON values
    assert reserve_request(Arguments("reserve", json.loads(json.dumps(wire)), NOW)) == request
    assert stored_request(json.loads(json.dumps(wire))) == request
    fields = {name: getattr(request, name) for name in REQUEST_FIELDS}
    assert request_wire(**fields) == wire                              # as plus_reserve builds it


@settings(max_examples=100, deadline=None)
@given(slot_requests)
def test_a_request_for_slots_comes_back_with_its_kind(request):
    wire = encode_request(request)
    assert wire["kind"] == "slots" and wire["nodes"] == 0
    assert reserve_request(Arguments("reserve", json.loads(json.dumps(wire)), NOW)) == request
    assert stored_request(json.loads(json.dumps(wire))) == request


@pytest.mark.parametrize("nodes,kind", [(2, RequestKind.NODES), (0, RequestKind.SLOTS)])
def test_a_client_that_names_no_kind_gets_the_one_its_nodes_imply(nodes, kind):
    """plus_reserve and plus_qrsub send no kind: qrsub's request is 0 nodes."""
    wire = request_wire(start=NOW, end=NOW + 60, nodes=nodes)
    assert reserve_request(Arguments("reserve", wire, NOW)).kind is kind


def test_a_kind_that_disagrees_with_the_request_is_refused():
    wire = request_wire(start=NOW, end=NOW + 60, nodes=2)
    with pytest.raises(RequestError, match="-n: a request for slots .* names no nodes, got 2"):
        reserve_request(Arguments("reserve", {**wire, "kind": "slots"}, NOW))
    with pytest.raises(RequestError, match="-pe and -alloc ask for slots"):
        reserve_request(Arguments("reserve", {**wire, "nodes": 0, "kind": "nodes", "pe": "mpi",
                                              "pe_range": [[2, 2]]}, NOW))
    with pytest.raises(RequestError, match="kind: 'maintenance' is not a kind of request; "
                                           "accepted: nodes, slots"):
        reserve_request(Arguments("reserve", {**wire, "kind": "maintenance"}, NOW))


def test_a_row_stored_before_the_kind_existed_takes_the_kind_its_nodes_imply():
    old = {"start": NOW, "end": NOW + 60, "nodes": 0, "users": ["alice"], "pe": "mpi",
           "pe_range": [[2, 2]], "queues": ["all.q"]}
    assert stored_request(old).kind is RequestKind.SLOTS
    assert stored_request({**old, "nodes": 1, "pe": "", "pe_range": []}).kind is RequestKind.NODES


def test_a_row_stored_before_a_field_existed_takes_its_default():
    old = {"start": NOW, "end": NOW + 60, "nodes": 1, "slots_per_node": None, "memory_mb": None,
           "ncpus": None, "arch": None, "os": None, "attributes": [["gpu", "yes"]]}
    assert stored_request(old) == Request(NOW, NOW + 60, 1, attributes=(("gpu", "yes"),))


def test_a_client_gets_the_commands_checks_and_no_unknown_field():
    wire = request_wire(start=NOW, end=NOW + 60, nodes=1)
    with pytest.raises(RequestError, match="-N: "):
        reserve_request(Arguments("reserve", {**wire, "name": "1bad name"}, NOW))
    with pytest.raises(RequestError, match="-m: invalid mail options"):
        reserve_request(Arguments("reserve", {**wire, "mail_options": "x"}, NOW))
    with pytest.raises(Exception, match="unknown argument 'colour'"):
        arguments = Arguments("reserve", {**wire, "colour": "red"}, NOW)
        reserve_request(arguments)
        arguments.done()


def test_an_unknown_arguments_refusal_stays_short_whatever_its_name():
    """reserve accepts many arguments: their list and a long unknown name
    together must still be a short refusal (the fuzzer found 405 characters)."""
    wire = request_wire(start=NOW, end=NOW + 60, nodes=1)
    arguments = Arguments("reserve", {**wire, "x" * 257: 0}, NOW)
    reserve_request(arguments)
    with pytest.raises(BadArguments) as refused:
        arguments.done()
    message = str(refused.value)
    assert message.startswith("reserve: unknown argument '" + "x" * 32 + "... (257 characters)'; "
                              "accepted: account, alloc_rule, ")
    assert len(message) <= 380


def test_a_mistyped_argument_is_answered_with_the_closest_names_first():
    wire = request_wire(start=NOW, end=NOW + 60, nodes=1)
    arguments = Arguments("reserve", {**wire, "nodez": 2}, NOW)
    reserve_request(arguments)
    with pytest.raises(BadArguments) as refused:
        arguments.done()
    message = str(refused.value)
    assert message.startswith("reserve: unknown argument 'nodez'; did you mean nodes? "
                              "accepted: nodes, ")
    assert message.endswith(" more") and len(message) <= 380
