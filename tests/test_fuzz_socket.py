"""Property-based fuzzing of the socket protocol (issue 11): whatever a local
user sends, plus_scheduler either does the work or refuses it in one short
line, never with an internal error, and a refused request changes nothing.

In-process: the daemon's Service over a real Manager on the native backend
(test_manager.Env, whose clock stands at T0), fed the decoded requests a
hand-made client could send; and protocol.receive_message fed raw bytes.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import overlay
from overlay.daemon.config import Config
from overlay.daemon.services.service import Service
from overlay.language import limits
from overlay.language.model import ReservationError
from overlay.language.request import MAX_AR_ID, RequestError
from overlay.language.timespec import TimeSpecError
from overlay.usecases.manager import START_GRACE, Caller
from overlay.wire import codec, protocol
from test_manager import ADMIN, ALICE, BOB, HOUR, T0, Env

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

REFUSALS = (ReservationError, RequestError, TimeSpecError, codec.BadArguments,
            protocol.ProtocolError)
"""What daemon._reply_to turns into a refusal; anything else is an internal error."""
MAX_REFUSAL = 400
"""A refusal is one line a user reads: the commands' messages stay under this."""

CORE_OPS = ("reserve", "modify", "cancel", "destroy", "commit", "abort", "status",
            "availnodes", "ping", "shutdown")
ACCEPTED = {
    "reserve": ("start", "end", "nodes", "users", "slots_per_node", "memory_mb", "ncpus", "arch",
                "os", "attributes", "queues", "name", "hard_error", "mail_options", "mail_list",
                "transactional"),
    "modify": ("id", "start", "end", "duration", "nodes", "users", "transactional"),
    "cancel": ("id", "owner", "transactional"),
    "destroy": ("id", "owner", "transactional"),
    "commit": ("id",), "abort": ("id",),
    "status": ("id", "owner", "start", "end", "expired", "summary", "nodes"),
    "availnodes": ("start", "end"), "ping": (), "shutdown": (),
}
VALID = {
    "reserve": {"start": T0 + 5 * HOUR, "end": T0 + 6 * HOUR, "nodes": 1},
    "modify": {"id": 1, "end": T0 + 3 * HOUR},
    "cancel": {"id": 1}, "destroy": {"id": 3}, "commit": {"id": 2}, "abort": {"id": 2},
    "status": {}, "availnodes": {"start": T0, "end": T0 + HOUR}, "ping": {}, "shutdown": {},
}
"""One request per operation that the baseline world (_world) accepts from ALICE
(destroy of BOB's AR 3 and shutdown excepted: refused for her, done for ADMIN)."""

PYTHON_LEAKS = ("Traceback", 'File "', "NoneType", "object has no attribute", "not subscriptable",
                "unhashable type", "not supported between", "positional argument",
                "unexpected keyword", "int() ", "object is not", "Exceeds the limit")
EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]*(?:Error|Exception)\b")


def _internal_names() -> frozenset[str]:
    """The core's functions and methods with an underscore in their names
    (they read as code, not prose), minus the configuration's keys, which
    messages rightly name."""
    names = set()
    for path in Path(overlay.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "_" in node.name:
                names.add(node.name)
    return frozenset(names - {field.name for field in dataclasses.fields(Config)})


INTERNAL = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, sorted(_internal_names())))
                      + r")(?!\w)")

# -- values a JSON request can carry ------------------------------------------------

_JSON_INT_DIGITS = 4300
"""json.loads refuses longer integer literals (Python's int_max_str_digits)."""


def _huge(digits: int, negative: bool) -> int:
    return (-1 if negative else 1) * (10 ** digits - 1)


TIMES = st.one_of(
    st.integers(T0 - 2 * HOUR, T0 + 8 * HOUR),
    st.sampled_from([0, -1, T0 - START_GRACE - 1, T0 - START_GRACE, T0 + limits.HORIZON,
                     T0 + limits.HORIZON + 1, 2 ** 31 - 1, 2 ** 31, 2 ** 63 - 1, 2 ** 63, 2 ** 64]))
HUGE_INTEGERS = st.builds(_huge, st.sampled_from([20, 100, 400, 1000, _JSON_INT_DIGITS]),
                          st.booleans())
"""Up to the longest literal JSON carries; digit counts sampled, not drawn
bit by bit, so that a failing example shrinks in moments."""
INTEGERS = st.one_of(
    st.integers(-2 ** 70, 2 ** 70), TIMES, st.integers(-3, 8), HUGE_INTEGERS,
    st.sampled_from([MAX_AR_ID, MAX_AR_ID + 1, limits.MAX_COUNT, limits.MAX_COUNT + 1,
                     limits.MAX_MEMORY_MB + 1, limits.MAX_DURATION + 1, -2 ** 63, 2 ** 64]))
ODD_TEXTS = st.sampled_from([
    "", " ", "\x00", "a\x00b", "\n", "x\r\n5:forged", "\x1b[2J", "\u0663", "\uff11", "\U0001d7d9",
    "12\u0663", "\ud800", "a\udfff", "plusu1", "alice", "bob", "root", "@staff", "@nogroup",
    "*", "lx-*", "[", "gpu", "gpu=yes", "a,b", "bea", "n", "R1", "1", "-1", "1e3", "NaN",
    "a" * 65, "x" * 257, "y" * 5000, "z" * 200_000, "é" * 300])
TEXTS = st.one_of(ODD_TEXTS, st.text(max_size=40),
                  st.text(st.characters(exclude_categories=()), max_size=20))
SCALARS = st.one_of(st.none(), st.booleans(), INTEGERS, st.floats(), TEXTS)
KEYS = st.one_of(st.sampled_from(sorted({key for keys in ACCEPTED.values() for key in keys})),
                 TEXTS)
JSON_VALUES = st.recursive(
    SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                     st.dictionaries(KEYS, inner, max_size=5)),
    max_leaves=12)
FIELD_VALUES = st.one_of(
    INTEGERS, HUGE_INTEGERS, TEXTS, st.integers(0, 6), st.lists(TEXTS, max_size=4),
    st.lists(st.lists(TEXTS, max_size=3), max_size=3),
    st.integers(0, 300).map(lambda n: ["plusu1"] * n), JSON_VALUES)
STRING_LISTS = st.one_of(st.lists(TEXTS, max_size=4),
                         st.integers(0, 300).map(lambda n: ["plusu1"] * n))
KEY_VALUES = {
    **dict.fromkeys(("start", "end", "nodes", "slots_per_node", "memory_mb", "ncpus", "id",
                     "duration", "expired"), INTEGERS),
    **dict.fromkeys(("users", "queues", "mail_list"), STRING_LISTS),
    **dict.fromkeys(("arch", "os", "name", "mail_options", "owner"), TEXTS),
    **dict.fromkeys(("transactional", "hard_error", "summary"), st.booleans()),
    "attributes": st.lists(st.lists(TEXTS, max_size=3), max_size=3),
}
"""Values of each argument's own type, where the bounds and parsers are met."""
OPS = st.one_of(st.sampled_from(CORE_OPS), SCALARS, st.lists(TEXTS, max_size=2),
                st.sampled_from(["op_ping", "_views", "handle", "caller", "PING", "reserve ",
                                 "reserve\x00", "__init__", "__class__"]))
CALLERS = st.sampled_from([ALICE, BOB, ADMIN])


@st.composite
def generated_requests(draw: st.DrawFn) -> tuple[Any, Any]:
    """Any op with any arguments: mostly an object of known and unknown keys."""
    op = draw(OPS)
    args = draw(st.one_of(st.dictionaries(KEYS, FIELD_VALUES, max_size=7), JSON_VALUES))
    return op, args


@st.composite
def near_valid_requests(draw: st.DrawFn) -> tuple[str, dict]:
    """An accepted request with one argument (accepted or not) set to a generated value."""
    op = draw(st.sampled_from(CORE_OPS))
    own_key = draw(st.integers(0, 3)) > 0
    key = draw(st.sampled_from(ACCEPTED[op] or ("id",)) if own_key else KEYS)
    value = draw(KEY_VALUES.get(key, FIELD_VALUES) if own_key else FIELD_VALUES)
    return op, {**VALID[op], key: value}


@st.composite
def typed_requests(draw: st.DrawFn) -> tuple[str, dict]:
    """A core op with some of its own arguments, each of its type: past the
    type checks, into the bounds, the parsers and the manager."""
    op = draw(st.sampled_from(CORE_OPS))
    keys = draw(st.lists(st.sampled_from(ACCEPTED[op] or ("id",)), unique=True, max_size=6))
    return op, {key: draw(KEY_VALUES[key]) for key in keys}


REQUESTS = st.one_of(generated_requests(), near_valid_requests(), typed_requests())

# -- the world and the properties ---------------------------------------------------


def _world(folder: Path) -> tuple[Env, Service]:
    """A manager with four ARs: ALICE's waiting 1, pending 2 and cancelled 4, BOB's 3."""
    env = Env(folder)
    env.reserve(ALICE)
    env.reserve(ALICE, transactional=True, start=T0 + 2 * HOUR)
    env.reserve(BOB, start=T0 + 3 * HOUR)
    cancelled = env.reserve(ALICE, start=T0 + 4 * HOUR)
    env.manager.cancel(ALICE, cancelled.id, None)
    return env, Service(env.manager, lambda ars: None, lambda: None)


class Worlds:
    """The baseline world, built again only after a request changed it:
    most requests are refused and, as the properties check, leave it as it
    was, so examples stay cheap (and shrinking fast)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.built = 0
        self.current: tuple[Env, Service] | None = None

    def get(self) -> tuple[Env, Service]:
        if self.current is None:
            self.built += 1
            folder = self.root / f"world{self.built}"
            folder.mkdir()
            self.current = _world(folder)
        self.current[0].manager.refusals.clear()  # plus_modify's last refusal, kept in memory only
        return self.current

    def spoil(self) -> None:
        """The world was changed: the next example gets a new one."""
        if self.current is not None:
            env = self.current[0]
            env.backend.close()
            env.store.close()
            self.current = None


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worlds]:
    made = Worlds(tmp_path_factory.mktemp("worlds"))
    yield made
    made.spoil()


def _snapshot(env: Env) -> tuple:
    """What a request could change: the store's ARs and usage, and memory's ARs."""
    memory = copy.deepcopy(sorted(env.manager.ars.values(), key=lambda ar: ar.id))
    return env.store.load_all(), env.store.load_usage(0), memory


def _refusal_text(exc: Exception) -> str:
    """The error line daemon._reply_to sends for ``exc``."""
    if isinstance(exc, (codec.BadArguments, protocol.ProtocolError)):
        return f"bad request: {exc}"
    return str(exc)


def _check_refusal(message: str, op: Any, args: Any) -> None:
    """Short, and naming nothing of the code unless the request itself did."""
    assert len(message) <= MAX_REFUSAL, f"{len(message)} characters: {message[:300]}..."
    sent = f"{op!r} {args!r}"
    for leak in PYTHON_LEAKS:
        assert leak not in message or leak in sent, message
    for pattern in (EXCEPTION_NAME, INTERNAL):
        for found in pattern.findall(message):
            assert found in sent, f"{found!r} in {message!r}"


def _send(service: Service, env: Env, caller: Caller, op: Any, args: Any) -> bool:
    """One request as _reply_to runs it: done (its reply sendable as JSON)
    or refused with a clean message and nothing changed. True if done."""
    before = _snapshot(env)
    try:
        data = service.handle(caller, op, args or {})
    except REFUSALS as exc:
        _check_refusal(_refusal_text(exc), op, args)
        assert _snapshot(env) == before, f"refused {op!r} changed the store: {exc}"
        return False
    json.loads(protocol.encoded_message({"ok": True, "data": data}))   # as the daemon sends it
    return True


def _send_to(worlds: Worlds, caller: Caller, op: Any, args: Any) -> None:
    env, service = worlds.get()
    try:
        done = _send(service, env, caller, op, args)
    except BaseException:
        worlds.spoil()
        raise
    if done:
        worlds.spoil()


def _memory_agrees_with_store(env: Env) -> None:
    assert sorted(env.manager.ars.values(), key=lambda ar: ar.id) == env.store.load_all()


FUZZ = settings(max_examples=300, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(caller=CALLERS, request=generated_requests())
def test_generated_requests_are_done_or_cleanly_refused(worlds: Worlds, caller: Caller,
                                                        request: tuple) -> None:
    _send_to(worlds, caller, *request)


@FUZZ
@given(caller=CALLERS, request=near_valid_requests())
def test_near_valid_requests_are_done_or_cleanly_refused(worlds: Worlds, caller: Caller,
                                                         request: tuple) -> None:
    _send_to(worlds, caller, *request)


@FUZZ
@given(caller=CALLERS, request=typed_requests())
def test_well_typed_requests_are_done_or_cleanly_refused(worlds: Worlds, caller: Caller,
                                                         request: tuple) -> None:
    _send_to(worlds, caller, *request)


@settings(FUZZ, max_examples=60, phases=(Phase.explicit, Phase.generate))
@given(steps=st.lists(st.tuples(CALLERS, REQUESTS), min_size=2, max_size=6))
def test_request_sequences_keep_memory_and_store_agreed(worlds: Worlds, steps: list[tuple]) -> None:
    """Accepted requests change the world that later ones meet; after each,
    the manager's memory and the store still hold the same ARs. Not shrunk:
    every attempt builds a world, and shrinking a sequence takes minutes
    (the single-request tests above shrink what they find)."""
    worlds.spoil()
    env, service = worlds.get()
    try:
        for caller, (op, args) in steps:
            _send(service, env, caller, op, args)
            _memory_agrees_with_store(env)
    finally:
        worlds.spoil()


def test_the_baseline_requests_are_accepted(worlds: Worlds) -> None:
    """The near-valid requests start from requests the world really accepts
    (else they would only test one refusal)."""
    for op, args in VALID.items():
        env, service = worlds.get()
        caller = ADMIN if op in ("destroy", "shutdown") else ALICE
        assert _send(service, env, caller, op, dict(args)), op
        worlds.spoil()


# -- raw bytes on the socket --------------------------------------------------------


def _send_all(sock: socket.socket, payload: bytes) -> None:
    """The client's side: everything, then end of file; a receiver that has
    stopped reading makes it give up."""
    try:
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _receive(payload: bytes, limit: int) -> dict:
    reader, writer = socket.socketpair()
    sender = threading.Thread(target=_send_all, args=(writer, payload))
    sender.start()
    try:
        return protocol.receive_message(reader, limit, time.monotonic() + 10)
    finally:
        reader.close()
        sender.join()
        writer.close()


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value).encode() + b"\n"


PAYLOADS = st.one_of(
    st.binary(max_size=400),
    st.binary(max_size=200).map(lambda raw: raw + b"\n"),
    JSON_VALUES.map(_json_bytes),
    st.builds(lambda op, args: _json_bytes({"op": op, "args": args}), OPS, JSON_VALUES),
    st.builds(lambda text, codec: text.encode(codec, "surrogatepass") + b"\n",
              TEXTS.map(json.dumps), st.sampled_from(["utf-8", "utf-16", "utf-32", "utf-16-le"])),
    st.builds(lambda opener, depth: opener * depth + b"\n",
              st.sampled_from([b"[", b"{\"a\":", b"[{\"x\":"]), st.integers(1, 200_000)),
    st.integers(1, 10_000).map(lambda digits: b"{\"n\":" + b"9" * digits + b"}\n"),
    st.sampled_from([b"\n", b"{}\n{}\n", b"{}", b"{\"op\":\"ping\"}\nrest", b"\xff\xfe{\x00}\x00\n",
                     b"{\"a\":NaN}\n", b"[1]\n", b"\"\\ud800\"\n", b"{\"op\":\"\\ud800\"}\n"]))


@settings(FUZZ, max_examples=200)
@given(payload=PAYLOADS, limit=st.sampled_from([64, 4096, limits.MAX_MESSAGE]))
def test_receive_message_returns_an_object_or_raises_protocol_error(payload: bytes,
                                                                   limit: int) -> None:
    try:
        message = _receive(payload, limit)
    except protocol.ProtocolError:
        return
    assert isinstance(message, dict)
