"""Every parser a user's text reaches, fuzzed (issue 11): overlay/language/timespec.py,
overlay/language/request.py, the native -l requests (overlay_native.resources.complexes) and
each command's command line. Whatever the text (NUL and other control
characters, other scripts' digits, lone surrogates from undecodable argv
bytes, strings far over every bound), a parser either returns a value
within the bounds of overlay.language.limits or raises its module's documented
error (TimeSpecError, RequestError, ComplexError; SystemExit 2 for a
command line), whose message is one printable line of bounded length.
Nothing else: no ValueError from int(), no OverflowError, no traceback."""

from __future__ import annotations

import contextlib
import io
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import commands_from_source as commands
from overlay.language.limits import (
    HORIZON,
    MAX_ADDRESS,
    MAX_ARGUMENT,
    MAX_COUNT,
    MAX_DURATION,
    MAX_ITEMS,
    MAX_MEMORY_MB,
    MAX_NAME,
    MAX_PATTERN,
    shown,
)
from overlay.language.request import (
    MAX_AR_ID,
    MAX_SLOTS,
    RequestError,
    parse_ar_id,
    parse_attribute_list,
    parse_int,
    parse_job_references,
    parse_mail_list,
    parse_mail_options,
    parse_memory_mb,
    parse_name,
    parse_name_list,
    parse_pattern,
    parse_pe_range,
    parse_queue_list,
    parse_yes_no,
    window_end,
)
from overlay.language.timespec import TimeSpecError, parse_duration, parse_time
from overlay_native.cli import qsub
from overlay_native.resources.complexes import (
    NUMERIC,
    TYPES,
    ComplexError,
    ComplexTable,
    Pattern,
    parse_requests,
    parse_value,
)

NOW = 1_800_000_000
FUZZ = settings(max_examples=200, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])
ECHO = len(shown("\U000f0000" * MAX_ARGUMENT * 2))
"""The longest quotation limits.shown() makes (an escaped cut of MAX_ECHO
characters, and its length)."""
LONGEST_MESSAGE = 2 * ECHO + 300
"""An error quotes at most two values (an entry and its list) in at most 300
characters of its own."""

PIECES = st.sampled_from(["now", "now+", "+", "-", ":", ".", ",", "=", "@", "@@", "R", "r", "T",
                          " ", "Z", "d", "h", "m", "s", "k", "K", "G", "*", "?", "[", "]",
                          "\n", "\t", "\x00", "\x1b[2J", "0", "1", "9", "12", "2026", "12011200",
                          "9999", "yes", "n", "bea", "infinity", "0x", '"', "|", "\u2028"])
TOKEN = st.one_of(PIECES, st.characters(categories=["Nd"]), st.characters(categories=["Cs"]),
                  st.text(max_size=3))
EDGES = st.sampled_from(["\n", "\x00", "\u2028", "\udcff"])
"""A trailing newline ($ lets it through), NUL, a Unicode line break, a byte
of argv that was not UTF-8."""
DIGIT_ZEROS = st.sampled_from([0x660, 0x966, 0xFF10, 0x1D7CE])
"""Arabic-Indic, Devanagari, fullwidth and mathematical bold digits."""


def foreign_digits(text: str, zero: int) -> str:
    return "".join(chr(zero + int(c)) if c in "0123456789" else c for c in text)


def text_like(*seeds: str) -> st.SearchStrategy[str]:
    """Arbitrary text, and the parser's own valid examples made hostile: with
    an edge character before or after, other scripts' digits, a thousand-digit
    number, hundreds of list entries, or repeated past every bound."""
    seed = st.sampled_from(seeds)
    return st.one_of(
        st.text(), st.lists(TOKEN, max_size=12).map("".join), seed,
        st.builds(str.__add__, seed, EDGES), st.builds(str.__add__, EDGES, seed),
        st.builds(foreign_digits, seed, DIGIT_ZEROS),
        st.builds(lambda s, n: s.replace("1", "1" + "9" * n, 1), seed, st.integers(5, 5000)),
        st.builds(lambda s, n: ",".join([s] * n), seed, st.integers(2, 300)),
        st.builds(lambda s, n: s * n, seed, st.integers(MAX_ARGUMENT // 4, 20_000)))


TIME_SEEDS = ("now", "now+1h", "now+1:30:00", "12011200", "2612011200.30", "202612011200",
              "2026-12-01T09:00", "2026-12-01 09:00:15+09:00", "2026-12-01T09:00Z")
DURATION_SEEDS = ("1:30:00", "10:00", "90", "90s", "10m", "2h", "1d")
TEXT = text_like(*TIME_SEEDS, *DURATION_SEEDS, "1", "R12", "4G", "alice", "a=1", "1-4")


def check_message(message: str) -> None:
    assert "\n" not in message and message.isprintable(), message
    assert len(message) <= LONGEST_MESSAGE, message


def outcome(parse, text, error):
    """What ``parse`` makes of ``text``: its value, or None when it raises
    ``error`` with a good message; anything else fails the test."""
    try:
        return parse(text)
    except error as exc:
        check_message(str(exc))
        return None


def numeric(text: str) -> bool:
    """Whether a number's text may have been accepted: its digits are ASCII."""
    return not any(c.isdigit() and not c.isascii() for c in text)


def is_name(text: str, limit: int = MAX_NAME) -> bool:
    return text.isascii() and text.isprintable() and 1 <= len(text) <= limit


# --- overlay/language/timespec.py --------------------------------------------------------------

@FUZZ
@given(text_like(*TIME_SEEDS))
def test_parse_time(text):
    value = outcome(lambda t: parse_time(t, now=NOW, option="-s"), text, TimeSpecError)
    assert value is None or 0 <= value <= NOW + HORIZON and numeric(text)


@FUZZ
@given(text_like(*DURATION_SEEDS))
def test_parse_duration(text):
    value = outcome(lambda t: parse_duration(t, "-D"), text, TimeSpecError)
    assert value is None or 0 <= value <= MAX_DURATION and numeric(text)


# --- overlay/language/request.py ---------------------------------------------------------------

@FUZZ
@given(text_like("512", "1.5G", "131072k", "1T", "0.5T"))
def test_parse_memory_mb(text):
    value = outcome(parse_memory_mb, text, RequestError)
    assert value is None or 1 <= value <= MAX_MEMORY_MB and numeric(text)


@FUZZ
@given(text_like("1", "R123", "r9999999", "0042"))
def test_parse_ar_id(text):
    value = outcome(parse_ar_id, text, RequestError)
    assert value is None or 1 <= value <= MAX_AR_ID and numeric(text)


@FUZZ
@given(text_like("1", "16", " 3 ", "-5", "9999999"),
       st.sampled_from([(1, MAX_COUNT), (0, MAX_COUNT), (-1023, 1024)]))
def test_parse_int(text, bounds):
    value = outcome(lambda t: parse_int(t, "-n", "the number of nodes", *bounds), text,
                    RequestError)
    assert value is None or bounds[0] <= value <= bounds[1] and numeric(text)


@FUZZ
@given(text_like("lx-amd64", "lx-*", "sol[ab]?"))
def test_parse_pattern(text):
    value = outcome(lambda t: parse_pattern(t, "-arch"), text, RequestError)
    assert value is None or value.isprintable() and 1 <= len(value) <= MAX_PATTERN


@FUZZ
@given(text_like("gpu=yes", "gpu=yes,rack=r*", " _x.y-z = 1 "))
def test_parse_attribute_list(text):
    pairs = outcome(parse_attribute_list, text, RequestError)
    assert pairs is None or 1 <= len(pairs) <= MAX_ITEMS and all(
        is_name(name) and value.isprintable() and 1 <= len(value) <= MAX_PATTERN
        for name, value in pairs)


@FUZZ
@given(text_like("alice", "_x.y-z", "R123"))
def test_parse_name(text):
    name = outcome(lambda t: parse_name(t, "-N"), text, RequestError)
    assert name is None or is_name(name)


@FUZZ
@given(text_like("alice", "bob,alice", "alice,@staff", "@staff"), st.booleans())
def test_parse_name_list(text, groups):
    names = outcome(lambda t: parse_name_list(t, "-U", groups), text, RequestError)
    assert names is None or 1 <= len(names) <= MAX_ITEMS and all(
        is_name(name.removeprefix("@") if groups else name) for name in names)


@FUZZ
@given(text_like("y", "yes", "No"))
def test_parse_yes_no(text):
    assert outcome(lambda t: parse_yes_no(t, "-he"), text, RequestError) in (True, False, None)


@FUZZ
@given(text_like("bea", "n", "ab"))
def test_parse_mail_options(text):
    letters = outcome(parse_mail_options, text, RequestError)
    assert letters is None or letters == "n" or letters and set(letters) <= set("bea")


@FUZZ
@given(text_like("alice", "bob@example.org", "a,b@c.d"))
def test_parse_mail_list(text):
    addresses = outcome(parse_mail_list, text, RequestError)
    assert addresses is None or 1 <= len(addresses) <= MAX_ITEMS and all(
        is_name(address, MAX_ADDRESS) for address in addresses)


@FUZZ
@given(text_like("4", "2-8", "-8", "4-", "1,3-16"))
def test_parse_pe_range(text):
    ranges = outcome(parse_pe_range, text, RequestError)
    assert ranges is None or 1 <= len(ranges) <= MAX_ITEMS and numeric(text) and all(
        1 <= first <= last <= MAX_SLOTS for first, last in ranges)


@FUZZ
@given(text_like("all.q", "big.q@node1", "*@node[12]", "q@@allhosts", "12", "build*"),
       st.sampled_from([lambda t: parse_queue_list(t, "-q"), parse_job_references]))
def test_wildcard_lists(text, parse):
    items = outcome(parse, text, RequestError)
    assert items is None or 1 <= len(items) <= MAX_ITEMS and all(
        is_name(item, MAX_PATTERN) for item in items)


TIMES = st.integers(0, NOW + HORIZON)


@FUZZ
@given(TIMES, st.one_of(st.none(), TIMES), st.one_of(st.none(), st.integers(-10, MAX_DURATION)))
def test_window_end(start, end, duration):
    final = outcome(lambda _: window_end(start, end, duration), None, RequestError)
    assert final is None or start < final <= start + MAX_DURATION


# --- overlay_native.resources.complexes ---------------------------------------------------------

TABLE = ComplexTable()


@FUZZ
@given(st.sampled_from(TYPES), text_like("1", "-2", "1.5e3", "4G", "0x1f", "017", "1:0:0", "1::1",
                                         "3600", "INFINITY", "true", "lx-amd64"))
def test_parse_value(ctype, text):
    value = outcome(lambda t: parse_value(ctype, t), text, ComplexError)
    if value is not None and ctype in NUMERIC:
        assert isinstance(value, float) and value == value and numeric(text)    # never NaN


@FUZZ
@given(text_like("h_rt=1:0:0", "h_vmem=2G,arch=lx-*", "a=lx|sol*", 'arch="x"', "mem_free=1G"))
def test_parse_requests(text):
    requests = outcome(lambda t: parse_requests(TABLE, t), text, ComplexError)
    assert requests is None or 1 <= len(requests) <= MAX_ITEMS and all(
        request.text.isprintable() and len(request.text) <= MAX_PATTERN
        for request in requests.values())


@FUZZ
@given(st.text(max_size=MAX_PATTERN), st.text(max_size=300))
def test_restring_patterns_match_anything_without_error(pattern, text):
    assert Pattern(pattern).matches(text) in (True, False)


# --- command lines ----------------------------------------------------------------------

def command_line(options: list[str]) -> st.SearchStrategy[list[str]]:
    """Argument lists mixing a command's options (alone, with =value or a
    value glued on) with arbitrary text."""
    option = st.sampled_from(options)
    word = st.one_of(option, TEXT, st.builds(lambda o, t: f"{o}={t}", option, TEXT),
                     st.builds(str.__add__, option, TEXT))
    return st.lists(word, max_size=8)


def run_parser(parse, argv: list[str]) -> tuple[object, int | None, str, str]:
    """(result, exit status or None, stdout, stderr) of ``parse(argv)``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            return parse(argv), None, out.getvalue(), err.getvalue()
        except SystemExit as stop:
            return None, stop.code, out.getvalue(), err.getvalue()


def check_usage_error(command: str, status: int | None, out: str, err: str) -> None:
    """Exit status 2 (1 for the qr commands) with one line on stderr, or 0
    having printed the help."""
    if status == 0:
        assert "usage" in out and err == ""
        return
    assert status == commands.USAGE_STATUS.get(command, 2), (status, err)
    line = err.removesuffix("\n")
    assert err.endswith("\n") and line.startswith(f"{command}: ")
    check_message(line)


def within_bounds(value: object) -> bool:
    """A parsed option: numbers between -1023 (qsub -p) and the horizon after
    now, text and lists no longer than an argument and a list may be."""
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return -1023 <= value <= time.time() + HORIZON
    if isinstance(value, (tuple, list)):
        return len(value) <= MAX_ITEMS and all(map(within_bounds, value))
    return isinstance(value, str) and len(value) <= MAX_ARGUMENT


@pytest.mark.parametrize("command", sorted(set(commands.ENTRY_POINTS) - commands.OWN_GRAMMAR))
def test_command_line(command):
    parser = commands.parser(command)
    options = [option for action in parser.options() for option in action.option_strings]

    @FUZZ
    @given(command_line(options))
    def parse(argv):
        namespace, status, out, err = run_parser(parser.parse_args, argv)
        if namespace is None:
            check_usage_error(command, status, out, err)
        else:
            assert err == "" and all(map(within_bounds, vars(namespace).values())), namespace
    parse()


def qsub_fields(argv: list[str]) -> dict:
    options, rest = qsub.split_options(argv)
    return qsub.submission(options, rest)


@FUZZ
@given(command_line(sorted(qsub._ARITY) + ["-help"]))
def test_qsub_command_line(argv):
    with contextlib.chdir("/"):
        job, status, out, err = run_parser(lambda a: outcome(qsub_fields, a, RequestError), argv)
    if status is not None:
        check_usage_error("plus_qsub", status, out, err)
    elif job is not None:
        assert all(within_bounds(job.get(key)) for key in ("priority", "start_after", "ar",
                                                            "pe_range", "queues", "hold_jids"))


@FUZZ
@given(text_like("-N x -l a=1", "-cwd", "-pe mpi 2-4", "-v 'A=1 2'"))
def test_qsub_script_lines(script):
    words, status, _, err = run_parser(qsub.embedded_options, "#$ " + script)
    assert words is not None or status == 2 and err.startswith("plus_qsub: ")
