"""Complex attributes of the native scheduler: seed 002 (Grid Engine 6.0 complex
specification) and the parallel slot computation of seed 001, 4c."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from overlay.language.limits import MAX_ITEMS, MAX_PATTERN
from overlay_native.resources.complexes import (
    Complex,
    ComplexError,
    ComplexTable,
    Pattern,
    compare,
    parse_requests,
    parse_value,
)
from overlay_native.resources.matching import (
    CategoryCache,
    ResourceContainer,
    assign,
    category_key,
    consume,
    debit,
    mismatch,
    release,
    slots_fit,
    soft_violations,
)

ROOT = Path(__file__).resolve().parent.parent
G = 2 ** 30


def raises(message: str):
    return pytest.raises(ComplexError, match=f"^{re.escape(message)}$")


def table(*entries) -> ComplexTable:
    return ComplexTable(entries)


def cluster(tab: ComplexTable, queues: dict[str, dict]) -> tuple[ResourceContainer, dict]:
    """A global container, one host per queue instance, and the queues."""
    top = ResourceContainer(tab, "global", "global")
    made = {}
    for name, values in queues.items():
        host = ResourceContainer(tab, "host", f"h-{name}", top)
        queue = ResourceContainer(tab, "queue", f"{name}@h-{name}", host)
        for key, value in values.items():
            queue.set(key, value)
        made[name] = queue
    return top, made


# --- built-ins ---------------------------------------------------------------

def test_builtins_are_the_recorded_qconf_sc_without_plus_rsv():
    recorded = {}
    for line in (ROOT / "tests/data/sge/qconf-sc.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            recorded[line.split()[0]] = line.split()
    del recorded["plus_rsv"]                      # added by the sge backend, not built in
    builtins = {cx.name: cx for cx in ComplexTable()}
    assert builtins.keys() == recorded.keys()
    for name, (_, shortcut, ctype, relop, requestable, consumable, _default, urgency) \
            in recorded.items():
        cx = builtins[name]
        assert (cx.shortcut, cx.type, cx.relop, cx.requestable, cx.consumable, cx.urgency) == \
            (shortcut, ctype, relop, requestable, consumable, float(urgency))
        assert cx.default == (1.0 if name == "slots" else None)   # NONE, 0, 0:0:0: none


def test_the_recorded_plus_rsv_line_loads_as_an_entry():
    line = next(line for line in (ROOT / "tests/data/sge/qconf-sc.txt").read_text().splitlines()
                if line.startswith("plus_rsv"))
    assert table(line).find("plus_rsv") == Complex("plus_rsv", "plus_rsv", "STRING", "==",
                                                   "FORCED", "NO", None, 0.0)


def test_sample_configuration_loads():
    tab = ComplexTable.load(ROOT / "conf/complexes.yaml")
    assert tab.find("a").type == "RESTRING"
    assert tab.find("lic") == Complex("license", "lic", "INT", "<=", "YES", "YES", None, 100.0)
    assert tab.find("matlab").consumable == "JOB"
    assert tab.find("scr").default == G
    assert tab.find("plus_rsv").requestable == "FORCED"


def test_yaml_booleans_and_short_forms(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("- {name: lic, type: INT, relop: '<=', requestable: yes, consumable: yes}\n"
                    "- {name: hidden, type: DOUBLE, relop: '<=', requestable: no, consumable: j,"
                    " default: 0.5}\n"
                    "- {name: must, type: MEMORY, relop: '<=', requestable: f, consumable: y}\n")
    tab = ComplexTable.load(path)
    assert (tab.find("lic").requestable, tab.find("lic").consumable) == ("YES", "YES")
    assert tab.find("hidden") == Complex("hidden", "hidden", "DOUBLE", "<=", "NO", "JOB", 0.5)
    assert tab.find("must").requestable == "FORCED"


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: lic\n")
    with raises(f"{path}: complexes: expected a list of complexes (mappings or qconf -sc lines), "
                "got dict"):
        ComplexTable.load(path)
    path.write_text("")
    assert {cx.name for cx in ComplexTable.load(path)} == {cx.name for cx in ComplexTable()}


# --- seed 002, section 2: restrictions -----------------------------------------

def new(name="x", **keys):
    return {"name": name, **keys}


@pytest.mark.parametrize("entry,message", [
    (new("license", type="INT", relop="==", consumable="YES"),
     "complex 'license': a consumable must use relop <=, got '=='"),
    (new("lic", type="STRING", relop="==", consumable="YES"),
     "complex 'lic': only INT, DOUBLE, MEMORY and TIME can be consumable, got STRING"),
    (new("lic", type="BOOL", relop="==", consumable="JOB"),
     "complex 'lic': only INT, DOUBLE, MEMORY and TIME can be consumable, got BOOL"),
    (new("lic", type="INT", relop="<=", consumable="YES", requestable="NO"),
     "complex 'lic': a consumable that is not requestable needs a default"),
    (new("lic", type="INT", relop="<=", consumable="YES", requestable="FORCED", default=2),
     "complex 'lic': a FORCED consumable must not have a default, got '2'"),
    (new("lic", type="INT", relop="<=", consumable="YES", default=-1),
     "complex 'lic': a default cannot be negative, got '-1'"),
    (new("speed", type="INT", relop=">=", default=5),
     "complex 'speed': a default is only for consumables, got '5'"),
    (new("os", type="STRING", relop="==", default="linux"),
     "complex 'os': a default is only for consumables, got 'linux'"),
    (new("os", type="STRING", relop="<="),
     "complex 'os': a STRING complex accepts relop == or !=, got '<='"),
    (new("os", type="CSTRING", relop=">="),
     "complex 'os': a CSTRING complex accepts relop == or !=, got '>='"),
    (new("os", type="RESTRING", relop="<"),
     "complex 'os': a RESTRING complex accepts relop == or !=, got '<'"),
    (new("login", type="HOST", relop=">"),
     "complex 'login': a HOST complex accepts relop == or !=, got '>'"),
    (new("gpu", type="BOOL", relop="!="),
     "complex 'gpu': a BOOL complex accepts relop ==, got '!='"),
    (new("x", type="FLOAT", relop="<="),
     "complex 'x': unknown type 'FLOAT'; accepted: INT, DOUBLE, MEMORY, TIME, STRING, CSTRING, "
     "RESTRING, HOST, BOOL"),
    (new("x", type="INT", relop="=<"),
     "complex 'x': unknown relop '=<'; accepted: == != >= > <= <"),
    (new("x", type="INT", relop="EXCL"),
     "complex 'x': unknown relop 'EXCL'; accepted: == != >= > <= <"),
    (new("x", type="INT"), "complex 'x': a new complex needs relop"),
    (new("x", relop="<="), "complex 'x': a new complex needs type"),
    (new("x", type="INT", relop="<=", consumable="maybe"),
     "complex 'x': bad consumable 'maybe'; accepted: YES, NO, JOB"),
    (new("x", type="INT", relop="<=", requestable="sometimes"),
     "complex 'x': bad requestable 'sometimes'; accepted: YES, NO, FORCED"),
    (new("x", type="INT", relop="<=", urgency="high"),
     "complex 'x': urgency must be a number, got 'high'"),
    (new("x", type="INT", relop="<=", colour="red"),
     "complex 'x': unknown key 'colour'; accepted: name, shortcut, type, relop, requestable, "
     "consumable, default, urgency"),
    (new("x", type="MEMORY", relop="<=", consumable="YES", default="lots"),
     "complex 'x': default: bad MEMORY value 'lots'; accepted: a decimal, 0x hex or 0 octal "
     "number with an optional multiplier k K m M g G t T (k=1000, K=1024 ...), or INFINITY"),
    (new("a b", type="INT", relop="<="),
     "bad complex name 'a b'; accepted: 1-512 printable characters without spaces or "
     "/ : ' \\ [ ] { } | ( ) @ % , \""),
    ("x x INT <= YES",
     "complex line 'x x INT <= YES': expected 8 columns (name shortcut type relop requestable "
     "consumable default urgency), got 5"),
    (42, "complexes: an entry must be a mapping or a qconf -sc line, got 42"),
])
def test_restrictions(entry, message):
    with raises(message):
        table(entry)


@pytest.mark.parametrize("relop", ["==", "!=", ">=", ">", "<=", "<"])
@pytest.mark.parametrize("ctype", ["INT", "DOUBLE", "MEMORY", "TIME"])
def test_numbers_take_every_relop(ctype, relop):
    assert table(new("n", type=ctype, relop=relop)).find("n").relop == relop


def test_valid_consumables():
    tab = table(new("lic", type="INT", relop="<=", consumable="YES", requestable="FORCED"),
                new("scratch", type="MEMORY", relop="<=", consumable="YES", requestable="NO",
                    default="1G"),
                "cpu_h cpuh TIME <= YES JOB 1:0:0 0")
    assert tab.find("scratch").default == G
    assert tab.find("cpuh").default == 3600


@pytest.mark.parametrize("entries,message", [
    ((new("lic", type="INT", relop="<="), new("lic", type="INT", relop="<=")),
     "complex 'lic' is defined twice"),
    ((new("license", shortcut="a", type="INT", relop="<="),),
     "complex 'license': 'a' is already the name or shortcut of 'arch'; names and shortcuts "
     "must be unique"),
    ((new("s", type="INT", relop="<="),),          # slots' shortcut
     "complex 's': 's' is already the name or shortcut of 'slots'; names and shortcuts must "
     "be unique"),
    ((new("lic", type="INT", relop="<="), new("tokens", shortcut="lic", type="INT", relop="<=")),
     "complex 'tokens': 'lic' is already the name or shortcut of 'lic'; names and shortcuts "
     "must be unique"),
])
def test_names_and_shortcuts_are_unique(entries, message):
    with raises(message):
        ComplexTable(entries)


def test_builtin_types_stay_except_among_strings():
    with raises("complex 'slots': the type of a built-in complex cannot change (INT to DOUBLE); "
                "only STRING, CSTRING and RESTRING may be exchanged"):
        table(new("slots", type="DOUBLE"))
    with raises("complex 'hostname': the type of a built-in complex cannot change (HOST to "
                "STRING); only STRING, CSTRING and RESTRING may be exchanged"):
        table(new("hostname", type="STRING"))
    for ctype in ("CSTRING", "RESTRING", "STRING"):
        assert table(new("arch", type=ctype)).find("arch").type == ctype
    assert table(new("qname", type="RESTRING")).find("q").shortcut == "q"
    # every other aspect may change; keys left out keep the built-in's value
    slots = table(new("slots", urgency=10)).find("slots")
    assert (slots.consumable, slots.default, slots.urgency) == ("YES", 1.0, 10.0)
    assert table(new("mem_free", consumable="YES")).find("mf").consumable == "YES"


def test_builtins_cannot_be_deleted():
    tab = table(new("lic", type="INT", relop="<="))
    with raises("complex 'arch': a built-in complex cannot be deleted"):
        tab.remove("a")
    smaller = tab.remove("lic")
    with raises("unknown resource 'lic'"):
        smaller.find("lic")
    assert tab.find("lic").name == "lic"          # the original is unchanged


# --- values --------------------------------------------------------------------

MEMORY_ACCEPTED = ("a decimal, 0x hex or 0 octal number with an optional multiplier "
                   "k K m M g G t T (k=1000, K=1024 ...), or INFINITY")
TIME_ACCEPTED = "seconds (decimal, 0x hex or 0 octal), h:m:s with empty fields as 0 (1::1), or INFINITY"


@pytest.mark.parametrize("text,value", [
    ("512", 512), ("1k", 1000), ("1K", 1024), ("1m", 10 ** 6), ("1M", 2 ** 20),
    ("2g", 2 * 10 ** 9), ("2G", 2 * G), ("1t", 10 ** 12), ("1T", 2 ** 40), ("1.5G", 1.5 * G),
    ("0x10", 16), ("0x1K", 1024), ("010", 8), ("0", 0), ("0.5k", 500),
    ("INFINITY", math.inf), ("infinity", math.inf), (4096, 4096),
])
def test_memory(text, value):
    assert parse_value("MEMORY", text) == value


@pytest.mark.parametrize("text", ["1X", "1GB", "08", "-1G", "G", "1 G", "", "1e3", "0x"])
def test_bad_memory_names_the_value_and_the_accepted_forms(text):
    with raises(f"bad MEMORY value {text!r}; accepted: {MEMORY_ACCEPTED}"):
        parse_value("MEMORY", text)


@pytest.mark.parametrize("text,value", [
    ("1:0:1", 3601), ("1::1", 3601), ("::30", 30), ("0:0:0", 0), ("01:30:00", 5400),
    ("90", 90), ("0x10", 16), ("010", 8), ("INFINITY", math.inf), (3600, 3600),
])
def test_time(text, value):
    assert parse_value("TIME", text) == value


@pytest.mark.parametrize("text", ["1:30", "1:0:0:0", "1.5", "1h", "a:b:c", "-5", "1:-1:0"])
def test_bad_time(text):
    with raises(f"bad TIME value {text!r}; accepted: {TIME_ACCEPTED}"):
        parse_value("TIME", text)


@pytest.mark.parametrize("text,value", [
    ("true", 1), ("TRUE", 1), ("True", 1), ("1", 1), ("false", 0), ("FALSE", 0), ("0", 0),
    (True, 1), (False, 0),
])
def test_bool(text, value):
    assert parse_value("BOOL", text) == value


@pytest.mark.parametrize("text", ["yes", "t", "2", ""])
def test_bad_bool(text):
    with raises(f"bad BOOL value {text!r}; accepted: true, false, 1 or 0 (any case)"):
        parse_value("BOOL", text)


@pytest.mark.parametrize("ctype,text,value", [
    ("INT", "4", 4), ("INT", "-2", -2), ("INT", "INFINITY", math.inf), ("INT", 7, 7),
    ("DOUBLE", "1.5", 1.5), ("DOUBLE", "2e-3", 0.002), ("DOUBLE", ".5", 0.5),
    ("DOUBLE", "Infinity", math.inf), ("DOUBLE", 2.5, 2.5),
])
def test_numbers(ctype, text, value):
    assert parse_value(ctype, text) == value


@pytest.mark.parametrize("ctype,text,accepted", [
    ("INT", "4.5", "an integer such as 4 or -2, or INFINITY"),
    ("INT", "1k", "an integer such as 4 or -2, or INFINITY"),
    ("INT", 4.5, "an integer such as 4 or -2, or INFINITY"),
    ("DOUBLE", "nan", "a decimal number such as 1.5 or 2e-3, or INFINITY"),
    ("DOUBLE", "1,5", "a decimal number such as 1.5 or 2e-3, or INFINITY"),
    ("DOUBLE", float("nan"), "a decimal number such as 1.5 or 2e-3, or INFINITY"),
])
def test_bad_numbers(ctype, text, accepted):
    with raises(f"bad {ctype} value {str(text)!r}; accepted: {accepted}"):
        parse_value(ctype, text)


def test_strings_must_be_strings():
    assert parse_value("CSTRING", "Linux") == "Linux"
    with raises("bad STRING value 12; accepted: a non-empty string (quote it in YAML)"):
        parse_value("STRING", 12)
    with raises("bad HOST value ''; accepted: a non-empty string (quote it in YAML)"):
        parse_value("HOST", "")


# --- relop direction: requested <relop> offered -------------------------------

def builtin(name: str) -> Complex:
    return ComplexTable().find(name)


def test_relop_compares_the_request_with_the_offer():
    # complex(5): "the value requested by the user ... is compared against the
    # corresponding value configured for the considered queues"
    h_vmem = builtin("h_vmem")                             # <=
    assert compare(h_vmem, 2 * G, 4 * G)                   # -l h_vmem=2G, queue 4G
    assert not compare(h_vmem, 8 * G, 4 * G)
    mem_used = builtin("mem_used")                         # >=
    assert compare(mem_used, 1 * G, 0.5 * G)               # -l mu=1G: at most 1G used
    assert not compare(mem_used, 1 * G, 2 * G)
    assert compare(builtin("h_rt"), 3600, math.inf)        # an unlimited queue takes any h_rt


@pytest.mark.parametrize("relop,requested,offered,fits", [
    ("==", 4, 4, True), ("==", 4, 5, False), ("!=", 4, 5, True), ("!=", 4, 4, False),
    ("<=", 4, 5, True), ("<=", 5, 5, True), ("<=", 6, 5, False),
    ("<", 4, 5, True), ("<", 5, 5, False),
    (">=", 6, 5, True), (">=", 5, 5, True), (">=", 4, 5, False),
    (">", 6, 5, True), (">", 5, 5, False),
])
def test_every_relop(relop, requested, offered, fits):
    assert compare(Complex("n", "n", "INT", relop), requested, offered) is fits


def test_string_kinds():
    assert compare(builtin("arch"), "lx-amd64", "lx-amd64")
    assert not compare(builtin("arch"), "LX-AMD64", "lx-amd64")          # STRING: exact
    assert compare(Complex("os", "os", "CSTRING", "=="), "LINUX", "linux")
    assert compare(builtin("hostname"), "Node1", "node1")               # HOST ignores case
    assert compare(Complex("os", "os", "STRING", "!="), "linux", "solaris")
    assert not compare(Complex("os", "os", "CSTRING", "!="), "Linux", "linux")
    assert compare(Complex("os", "os", "RESTRING", "!="), Pattern("sol*"), "linux")


# --- RESTRING --------------------------------------------------------------------

@pytest.mark.parametrize("pattern,text,matches", [
    # seed 002's examples: | splits on the top level only, even inside [..]
    ("linux|solaris", "linux", True), ("linux|solaris", "solaris", True),
    ("linux|solaris", "linux|solaris", False), ("linux|solaris", "hpux", False),
    ("[linux|solaris]", "[linux", True), ("[linux|solaris]", "solaris]", True),
    ("[linux|solaris]", "linux", False), ("[linux|solaris]", "l", False),
    # complex(5)'s examples that stay within seed 002's syntax
    ("*x*|sol*", "lx-amd64", True), ("*x*|sol*", "sol-amd64", True), ("*x*|sol*", "hp-ux", True),
    ("*x*|sol*", "darwin", False),
    ("sol-x??", "sol-x86", True), ("sol-x??", "sol-x8", False), ("sol-x??", "sol-x864", False),
    ("lx2[246]-x86", "lx24-x86", True), ("lx2[246]-x86", "lx25-x86", False),
    ("lx2[4-6]-x86", "lx25-x86", True), ("lx2[4-6]-x86", "lx27-x86", False),
    ("lx2[24-6]-x86", "lx22-x86", True), ("lx2[24-6]-x86", "lx23-x86", False),
    ("lx2[24-6]-x86", "lx26-x86", True),
    # complex(5) reads lx2[4|6] as a set; seed 002's rule splits it: "lx2[4" or "6]-amd64"
    ("lx2[4|6]-amd64", "lx24-amd64", False), ("lx2[4|6]-amd64", "lx2[4", True),
    ("lx2[4|6]-amd64", "6]-amd64", True),
    # * any number of characters, ? exactly one
    ("lx*", "lx", True), ("*", "", True), ("a?", "a", False), ("a?c", "abc", True),
    ("*a*b", "xxaxxbxb", True), ("*a*b", "xxaxxbxc", False),
    # . is a dot; \ escapes; nothing of Python's re leaks through
    ("lx.86", "lx.86", True), ("lx.86", "lx-86", False),
    ("a\\*b", "a*b", True), ("a\\*b", "axb", False), ("a\\?", "a?", True), ("a\\?", "ab", False),
    ("a\\\\b", "a\\b", True), ("\\[x]", "[x]", True), ("\\[x]", "x", False),
    ("x+", "x+", True), ("x+", "xx", False), ("(a)", "(a)", True), ("a{2}", "aa", False),
    ("^a$", "^a$", True), ("^a$", "a", False),
    # sets: ranges, escapes, ^ and ! are members, a first ] is a member, unclosed [ is itself
    ("[a-c]x", "bx", True), ("[a-c]x", "dx", False), ("[^a]", "^", True), ("[^a]", "b", False),
    ("[!a]", "!", True), ("[!a]", "b", False), ("[]a]", "]", True), ("[a-]", "-", True),
    ("[\\]]", "]", True), ("[abc", "[abc", True), ("[abc", "a", False),
    ("Linux", "linux", False),
])
def test_restring(pattern, text, matches):
    assert Pattern(pattern).matches(text) is matches


def test_restring_requests_through_the_table():
    tab = table(new("arch", type="RESTRING"))
    top, queues = cluster(tab, {"q": {}})
    host = queues["q"].parent
    host.set("arch", "solaris", "load")
    assert mismatch(parse_requests(tab, 'arch="linux|solaris"'), queues["q"]) is None
    assert mismatch(parse_requests(tab, "a=lx*"), queues["q"]) == \
        'cannot run at host "h-q" because it offers only hl:arch=solaris'


# --- requests ------------------------------------------------------------------------

def test_parse_requests():
    tab = table(new("gpu", type="BOOL", relop="=="))
    requests = parse_requests(tab, "h_vmem=2G, a=lx-amd64,h_rt=1:0:0,gpu")
    assert {name: r.value for name, r in requests.items()} == \
        {"h_vmem": 2 * G, "arch": "lx-amd64", "h_rt": 3600, "gpu": 1}
    assert requests["arch"].complex.name == "arch" and requests["arch"].text == "lx-amd64"


@pytest.mark.parametrize("text,message", [
    ("xyz=1", "unknown resource 'xyz'"),
    ("la=1", "resource 'load_avg' is not requestable"),
    ("slots=2", "resource 'slots' cannot be requested with -l; use a parallel environment "
                "(-pe) instead"),
    ("h_vmem=1G,h_vmem=2G", "resource 'h_vmem' is requested twice"),
    ("arch=x,a=y", "resource 'arch' is requested twice"),
    ("arch", "resource 'arch' needs a value: arch=value"),
    ("h_vmem=1G,", "empty resource request in 'h_vmem=1G,'; accepted: name=value,..."),
    ("h_vmem=4X", f"resource 'h_vmem': bad MEMORY value '4X'; accepted: {MEMORY_ACCEPTED}"),
    ("lic=-1", "resource 'lic': a consumable request cannot be negative, got '-1'"),
])
def test_bad_requests(text, message):
    tab = table(new("lic", type="INT", relop="<=", consumable="YES"))
    with raises(message):
        parse_requests(tab, text)


@pytest.mark.parametrize("ctype,text", [
    ("INT", "\uff14"), ("DOUBLE", "\u0661.\u0665"), ("MEMORY", "\uff14G"),
    ("TIME", "\u0661:00:00"), ("TIME", "\u0663\u0666\u0660\u0660"),
])
def test_numbers_take_ascii_digits_only(ctype, text):
    with pytest.raises(ComplexError, match=f"^bad {ctype} value '{text}'; accepted: "):
        parse_value(ctype, text)


@pytest.mark.parametrize("ctype,text", [
    ("TIME", "9" * 5000 + "::"), ("MEMORY", "0x" + "f" * 300), ("TIME", "0" + "7" * 400),
    ("INT", "9" * 300),
])
def test_a_number_longer_than_max_pattern_is_a_complex_error(ctype, text):
    with pytest.raises(ComplexError) as info:
        parse_value(ctype, text)
    assert f"({len(text)} characters)" in str(info.value) and len(str(info.value)) < 400


def test_requests_are_bounded():
    tab = table()
    assert len(parse_requests(tab, "arch=" + "x" * MAX_PATTERN)) == 1
    with raises(f"resource 'arch': invalid value 'x{'x' * 79}... ({MAX_PATTERN + 1} characters)'; "
                f"accepted: printable text of at most {MAX_PATTERN} characters"):
        parse_requests(tab, "arch=" + "x" * (MAX_PATTERN + 1))
    with raises("resource 'arch': invalid value 'lx\\x1b[2J'; accepted: printable text of at "
                f"most {MAX_PATTERN} characters"):
        parse_requests(tab, "arch=lx\x1b[2J")
    with pytest.raises(ComplexError, match=f"has {MAX_ITEMS + 1} resource requests; at most "
                                           f"{MAX_ITEMS} are accepted$"):
        parse_requests(tab, ",".join(["h_rt=1"] * (MAX_ITEMS + 1)))


def test_an_unknown_resource_is_quoted_short():
    with pytest.raises(ComplexError) as info:
        parse_requests(table(), "\x00" + "x" * 2 ** 17 + "=1")
    assert len(str(info.value)) < 400 and str(info.value).isprintable()


# --- seed 002, examples E1 and E2 -------------------------------------------------------

def test_e1_fixed_values_are_per_slot():
    # j1 requests t01=10 with 4 slots; q1 has 5 slots and t01 <= 20. A fixed value is a
    # per slot attribute: each task needs t01 <= 20 (10 <= 20, not 4 x 10 <= 20).
    tab = table(new("t01", type="INT", relop="<="))
    _, queues = cluster(tab, {"q1": {"slots": 5, "t01": 20}})
    q1, j1 = queues["q1"], parse_requests(tab, "t01=10")
    assert mismatch(j1, q1, slots=4) is None
    plan = assign(j1, [q1], 4)
    assert plan == [(q1, 4)]
    consume(j1, plan)
    # "the configuration of q1 after j1 has started is slots = 1 and t01 <= 20"
    assert q1.available("slots") == 1
    assert mismatch(parse_requests(tab, "t01=20"), q1) is None
    assert mismatch(parse_requests(tab, "t01=21"), q1) == \
        'cannot run in queue "q1@h-q1" because it offers only qf:t01=20'
    assert mismatch(j1, q1, slots=2) == 'cannot run in queue "q1@h-q1" because it offers only qc:slots=1.000000'


def test_e2_consumables_are_debited_per_task():
    # j2 requests t02=20 with 4 slots; q2 offers 5 slots, q3 1, q4 3, each t02 <= 40.
    # Seed 002 calls t02 a "per job attribute" (a changeable value the job requests n
    # times); in Grid Engine 6.2+ terms it is consumable YES, debited per slot.
    # Two tasks go to q2 (t02 allows 40 / 20), one to q3 (one slot), one to q4.
    # The seed's result lines are mislabeled: "q1 offers 0 slots with t02 <= 20" is q3
    # (1 - 1 slots, 40 - 20) and "q3 offers 2 slots with t02 <= 20" is q4 (3 - 1 slots,
    # 40 - 20); their "(q2.t02 - 1*j2.t02)" means q3's and q4's own t02. So we assert
    # q2: 3 slots, t02 0; q3: 0 slots, t02 20; q4: 2 slots, t02 20.
    tab = table(new("t02", type="INT", relop="<=", consumable="YES"))
    _, queues = cluster(tab, {"q2": {"slots": 5, "t02": 40}, "q3": {"slots": 1, "t02": 40},
                              "q4": {"slots": 3, "t02": 40}})
    j2 = parse_requests(tab, "t02=20")
    assert [slots_fit(j2, queues[q], 4) for q in ("q2", "q3", "q4")] == [2, 1, 2]
    assert mismatch(j2, queues["q2"], slots=4) == \
        'cannot run in queue "q2@h-q2" because it offers only qc:t02=40.000000'
    plan = assign(j2, list(queues.values()), 4)
    assert [(q.name, n) for q, n in plan] == [("q2@h-q2", 2), ("q3@h-q3", 1), ("q4@h-q4", 1)]
    consume(j2, plan)
    assert {q: (queues[q].available("slots"), queues[q].available("t02")) for q in queues} == \
        {"q2": (3, 0), "q3": (0, 20), "q4": (2, 20)}
    release(j2, plan)
    assert {q: queues[q].available("t02") for q in queues} == {"q2": 40, "q3": 40, "q4": 40}


def test_e2_with_a_per_job_consumable():
    # The same queues with t02 consumable JOB: debited once, on the master queue only,
    # so it limits nothing but the master; all four tasks fit on q2.
    tab = table(new("t02", type="INT", relop="<=", consumable="JOB"))
    _, queues = cluster(tab, {"q2": {"slots": 5, "t02": 40}, "q3": {"slots": 1, "t02": 40}})
    j2 = parse_requests(tab, "t02=20")
    assert debit(j2["t02"], 4) == 20
    plan = assign(j2, list(queues.values()), 4)
    assert [(q.name, n) for q, n in plan] == [("q2@h-q2", 4)]
    consume(j2, plan)
    assert (queues["q2"].available("slots"), queues["q2"].available("t02")) == (1, 20)


def test_assign_counts_shared_levels_once():
    # a global per slot license of 3: q2 and q3 each allow 3 tasks, together only 3
    tab = table(new("lic", type="INT", relop="<=", consumable="YES"))
    top, queues = cluster(tab, {"q2": {"slots": 4}, "q3": {"slots": 4}})
    top.set("lic", 3)
    job = parse_requests(tab, "lic=1")
    assert slots_fit(job, top, 8) == 3
    assert assign(job, list(queues.values()), 4) is None
    plan = assign(job, list(queues.values()), 3)
    assert [n for _, n in plan] == [3]
    consume(job, plan)
    assert top.available("lic") == 0


def test_job_consumables_only_bind_the_master():
    tab = table(new("matlab", type="INT", relop="<=", consumable="JOB"))
    top, queues = cluster(tab, {"q2": {"slots": 2}, "q3": {"slots": 2}, "q4": {"slots": 2}})
    top.set("matlab", 1)
    job = parse_requests(tab, "matlab=1")
    plan = assign(job, [queues["q2"], queues["q3"]], 4)
    assert [n for _, n in plan] == [2, 2]
    consume(job, plan)
    assert top.available("matlab") == 0                    # once, not per task or queue
    assert slots_fit(job, top, 4) == 0                     # no master fits any more
    assert slots_fit(job, top, 4, master=False) == 4       # slave tasks need none
    assert mismatch(job, queues["q4"]) == "cannot run globally because it offers only gc:matlab=0.000000"
    assert mismatch(job, queues["q4"], master=False) is None
    assert assign(job, list(queues.values()), 1) is None


def test_debit():
    tab = table(new("lic", type="INT", relop="<=", consumable="YES"),
                new("matlab", type="INT", relop="<=", consumable="JOB"))
    job = parse_requests(tab, "lic=2,matlab=1,h_vmem=1G")
    assert (debit(job["lic"], 4), debit(job["matlab"], 4), debit(job["h_vmem"], 4)) == (8, 1, 0)


def test_defaults_are_consumed_where_managed():
    tab = table(new("scratch", type="MEMORY", relop="<=", consumable="YES", requestable="NO",
                    default="1G"))
    _, queues = cluster(tab, {"q": {"slots": 8}})
    host = queues["q"].parent
    host.set("scratch", "3G")
    job = parse_requests(tab, "h_rt=60")
    queues["q"].set("h_rt", "1:0:0", "limit")
    assert slots_fit(job, host, 8) == 3
    assert mismatch(job, queues["q"], slots=4) == \
        'cannot run at host "h-q" because it offers only hc:scratch=3221225472.000000'
    consume(job, [(queues["q"], 3)])
    assert (host.available("scratch"), queues["q"].available("slots")) == (0, 5)


# --- seed 002, sections 3 and 5: hierarchy and overriding ---------------------------------

def test_hierarchy_global_then_host_then_queue():
    tab = ComplexTable()
    top, queues = cluster(tab, {"q": {}})
    queue = queues["q"]
    top.set("h_vmem", "4G")
    queue.set("h_vmem", "2G", "limit")
    assert mismatch(parse_requests(tab, "h_vmem=1G"), queue) is None
    assert mismatch(parse_requests(tab, "h_vmem=3G"), queue) == \
        'cannot run in queue "q@h-q" because it offers only qf:h_vmem=2G'
    assert mismatch(parse_requests(tab, "h_vmem=5G"), queue) == \
        "cannot run globally because it offers only gf:h_vmem=4G"
    # missing on a level: the next one decides; missing everywhere: no match
    assert mismatch(parse_requests(tab, "q=q"), queue) is None
    assert mismatch(parse_requests(tab, "h=H-Q"), queue) is None
    assert mismatch(parse_requests(tab, "mf=1G"), queue) == \
        'cannot run in queue "q@h-q" because job requests unknown resource "mem_free"'
    # a queue's resource limits are INFINITY unless set (queue_conf(5))
    assert mismatch(parse_requests(tab, "h_rt=60"), queue) is None
    assert mismatch(parse_requests(tab, "h_rt=60"), queue.parent) is not None


def test_a_mismatch_aborts_even_if_a_lower_level_would_match():
    # load values are not bound by the overriding rule, so a lower level can say more
    tab = ComplexTable()
    _, queues = cluster(tab, {"q": {}})
    queue = queues["q"]
    queue.parent.set("mem_free", "1G", "load")
    queue.set("mem_free", "8G")
    assert mismatch(parse_requests(tab, "mf=2G"), queue) == \
        'cannot run at host "h-q" because it offers only hl:mem_free=1G'


def test_same_level_fixed_and_load():
    # seed 002, 3, example 2: custom / load report / result: 1G / 4G / 1G, 1G / 0.9G / 0.9G
    tab = ComplexTable()
    _, queues = cluster(tab, {"q": {}})
    host, queue = queues["q"].parent, queues["q"]
    host.set("mem_free", "1G")
    host.set("mem_free", "4G", "load")
    assert mismatch(parse_requests(tab, "mf=1G"), queue) is None
    assert mismatch(parse_requests(tab, "mf=1.5G"), queue) == \
        'cannot run at host "h-q" because it offers only hf:mem_free=1G'
    host.set("mem_free", "0.9G", "load")
    assert mismatch(parse_requests(tab, "mf=1G"), queue) == \
        'cannot run at host "h-q" because it offers only hl:mem_free=0.9G'
    # == and !=: the configured value overrides the load value on the same level
    host.set("arch", "lx-amd64", "load")
    host.set("arch", "linux")
    assert mismatch(parse_requests(tab, "a=linux"), queue) is None
    assert mismatch(parse_requests(tab, "a=lx-amd64"), queue) == \
        'cannot run at host "h-q" because it offers only hf:arch=linux'


def test_load_values_are_per_job():
    # seed 002, 1: load values (numbers) are per job: the request times the slots;
    # a fixed value overriding a load value becomes per job too
    tab = ComplexTable()
    top, queues = cluster(tab, {"q": {}})
    queue = queues["q"]
    queue.parent.set("mem_free", "4G", "load")
    job = parse_requests(tab, "mf=1G")
    assert mismatch(job, queue, slots=4) is None
    assert mismatch(job, queue, slots=5) == \
        'cannot run at host "h-q" because it offers only hl:mem_free=4G'
    queue.set("virtual_free", "4G")
    job = parse_requests(tab, "vf=1G")
    assert mismatch(job, queue, slots=5) is None          # fixed alone: per slot
    top.set("virtual_free", "100G", "load")
    assert mismatch(job, queue, slots=5) == \
        'cannot run in queue "q@h-q" because it offers only qf:virtual_free=4G'


def test_equality_attributes_are_overridden_on_the_same_level_only():
    tab = ComplexTable()
    _, queues = cluster(tab, {"q": {}})
    host, queue = queues["q"].parent, queues["q"]
    host.set("arch", "lx-amd64", "load")                  # seed 002, 3, example 1
    host.set("arch", "linux")                              # same level: allowed
    with raises("queue q@h-q: arch is already set on host h-q; an attribute with relop == can "
                "only be overridden on the same level"):
        queue.set("arch", "solaris")
    queue.set("num_proc", 4)
    with raises("host h-q: num_proc is already set on queue q@h-q; an attribute with relop == "
                "can only be overridden on the same level"):
        host.set("num_proc", 4, "load")
    with raises("global: hostname is already set on host h-q; an attribute with relop == can "
                "only be overridden on the same level"):
        host.parent.set("h", "h-q")


def test_ordered_attributes_only_get_more_restrictive_further_down():
    tab = table(new("speed", type="INT", relop=">="))
    top, queues = cluster(tab, {"q": {}})
    host, queue = queues["q"].parent, queues["q"]
    top.set("h_vmem", "4G")
    with raises("host h-q: h_vmem=8G is less restrictive than 4G on global; a lower level may "
                "only lower a <= attribute"):
        host.set("h_vmem", "8G")
    host.set("h_vmem", "4G")                               # equal is not less restrictive
    queue.set("h_vmem", "2G", "limit")
    with raises("queue q@h-q: h_vmem=2G is less restrictive than 1G on host h-q; a lower level "
                "may only lower a <= attribute"):
        host.set("h_vmem", "1G")                           # checked downwards too
    top.set("speed", 10)
    with raises("queue q@h-q: speed=5 is less restrictive than 10 on global; a lower level may "
                "only raise a >= attribute"):
        queue.set("speed", 5)
    queue.set("speed", 20)
    # consumable capacities are debited on every level, not overridden
    host.set("slots", 4)
    queue.set("slots", 8)
    # load values are measurements: a host reporting less than the queue's value is fine
    host.set("h_vmem", "1G", "load")


def test_kinds_per_level():
    tab = ComplexTable()
    _, queues = cluster(tab, {"q": {}})
    host, queue = queues["q"].parent, queues["q"]
    with raises("queue q@h-q: load_avg cannot be a load value; load values exist only on "
                "global and host level"):
        queue.set("load_avg", 1.0, "load")
    with raises("host h-q: h_rt cannot be a resource limit; limits exist only on queues, for "
                "s_rt h_rt s_cpu h_cpu s_fsize h_fsize s_data h_data s_stack h_stack s_core "
                "h_core s_rss h_rss s_vmem h_vmem"):
        host.set("h_rt", "1:0:0", "limit")
    with raises("queue q@h-q: arch cannot be a resource limit; limits exist only on queues, for "
                "s_rt h_rt s_cpu h_cpu s_fsize h_fsize s_data h_data s_stack h_stack s_core "
                "h_core s_rss h_rss s_vmem h_vmem"):
        queue.set("arch", "x", "limit")
    with raises("queue q@h-q: arch: unknown kind 'soft'; accepted: fixed, load, limit"):
        queue.set("arch", "x", "soft")
    with raises("queue q@h-q: unknown resource 'xyz'"):
        queue.set("xyz", 1)
    with raises(f"host h-q: h_vmem: bad MEMORY value '4X'; accepted: {MEMORY_ACCEPTED}"):
        host.set("h_vmem", "4X")
    with raises("host h-q: slots: a consumable amount cannot be negative, got '-1'"):
        host.set("slots", -1)
    with raises("host h-q: arch is not a consumable managed here"):
        host.available("arch")
    with raises("unknown level 'rack'; accepted: global, host, queue"):
        ResourceContainer(tab, "rack", "r1")
    with raises("host h2: the parent must be on a higher level, got queue q@h-q"):
        ResourceContainer(tab, "host", "h2", queue)


def test_forced_complexes():
    tab = table("plus_rsv  plus_rsv  STRING  ==  FORCED  NO  NONE  0")
    _, queues = cluster(tab, {"R123": {"plus_rsv": "R123"}, "all.q": {}})
    reserved, normal = queues["R123"], queues["all.q"]
    plain, ar_job = parse_requests(tab, "h=h-R123"), parse_requests(tab, "plus_rsv=R123")
    assert mismatch(plain, reserved) == \
        "does not request 'forced' resource \"plus_rsv\" of queue instance R123@h-R123"
    assert mismatch(ar_job, reserved) is None
    assert mismatch(ar_job, normal) == \
        'cannot run in queue "all.q@h-all.q" because job requests unknown resource "plus_rsv"'
    assert mismatch(parse_requests(tab, "plus_rsv=R124"), reserved) == \
        'cannot run in queue "R123@h-R123" because it offers only qf:plus_rsv=R123'


def test_soft_violations():
    tab = ComplexTable()
    _, queues = cluster(tab, {"q": {}})
    queues["q"].parent.set("arch", "lx-amd64", "load")
    soft = parse_requests(tab, "arch=lx-arm64,q=q,h_rt=60,mf=1G")
    assert soft_violations(soft, queues["q"]) == 2          # arch, and mem_free offered nowhere


# --- seed 002, result caching: job categories ---------------------------------------------

def test_category_keys():
    tab = ComplexTable()
    one = category_key(parse_requests(tab, "h_vmem=1G,a=lx-amd64"), user="alice")
    same = category_key(parse_requests(tab, "arch=lx-amd64,h_vmem=1024M"), user="alice")
    assert one == same and hash(one) == hash(same)
    assert one != category_key(parse_requests(tab, "h_vmem=1G,a=lx-amd64"), user="bob")
    assert one != category_key(parse_requests(tab, "h_vmem=2G,a=lx-amd64"), user="alice")
    assert one != category_key(parse_requests(tab, "h_vmem=1G,a=lx-amd64"),
                               soft=parse_requests(tab, "h_rt=60"), user="alice")
    assert category_key({}, pe=("mpi", 4), queues=["b.q", "a.q"]) == \
        category_key({}, pe=("mpi", 4), queues=["a.q", "b.q"])
    assert category_key({}, pe=("mpi", 4)) != category_key({}, pe=("mpi", 8))
    assert category_key({}, project="p1") != category_key({})


def test_category_cache():
    cache = CategoryCache()
    key = category_key(parse_requests(ComplexTable(), "h_vmem=1G"))
    cache.mark_unfit(key, "all.q@h1")
    assert cache.is_unfit(key, "all.q@h1") and not cache.is_unfit(key, "all.q@h2")
    calls = []
    for _ in range(3):
        assert cache.soft_violations(key, "all.q@h2", lambda: calls.append(1) or 2) == 2
    assert len(calls) == 1
    cache.clear()
    assert not cache.is_unfit(key, "all.q@h1")
