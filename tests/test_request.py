"""overlay/language/request.py: memory sizes, counts, AR ids, time windows, -l lists,
names, access lists and which nodes satisfy a request (seed 004 plus_reserve,
seed 000 qrsub windows, seed 002 matching)."""

from __future__ import annotations

import calendar

import pytest

from overlay.language.limits import (
    HORIZON_DAYS,
    MAX_ADDRESS,
    MAX_COUNT,
    MAX_DURATION,
    MAX_ITEMS,
    MAX_MEMORY_MB,
    MAX_NAME,
    MAX_PATTERN,
)
from overlay.language.model import Node, Request
from overlay.language.request import (
    MAX_AR_ID,
    MEMORY_FORMS,
    RequestError,
    access_list,
    parse_ar_id,
    parse_attribute_list,
    parse_int,
    parse_job_references,
    parse_mail_list,
    parse_mail_options,
    parse_memory_mb,
    parse_name,
    parse_name_list,
    parse_object_name,
    parse_pattern,
    parse_pe_range,
    parse_queue_list,
    parse_yes_no,
    window_end,
)
from overlay.placement.eligible import node_satisfies

# --- parse_memory_mb ----------------------------------------------------------------------


@pytest.mark.parametrize("text,megabytes", [
    ("512", 512),            # plain numbers are MB, as in PluS
    ("1", 1),
    ("32768", 32768),
    (" 64 ", 64),
    ("1024K", 1),            # K = 1024 bytes
    ("2048K", 2),
    ("1048576K", 1024),
    ("131072k", 125),        # k = 1000 bytes: 131 072 000 B = 125 MiB
    ("262144k", 250),
    ("1M", 1),               # M = 1024^2
    ("3M", 3),
    ("16384m", 15625),       # m = 1000^2: 16 384 000 000 B = 15 625 MiB
    ("1G", 1024),            # G = 1024^3
    ("4G", 4096),
    ("1.5G", 1536),
    ("32G", 32768),
    ("2048g", 1953125),      # g = 1000^3
    ("1T", 1048576),         # T = 1024^4
    ("0.5T", 524288),
    ("256t", 244140625),     # t = 1000^4
])
def test_memory_sizes(text, megabytes):
    assert parse_memory_mb(text) == megabytes


def test_lower_case_multipliers_are_powers_of_1000():
    assert parse_memory_mb("4g") < parse_memory_mb("4G")
    # 4 000 000 000 B = 3814.7 MiB and 10 000 000 B = 9.5 MiB, to a whole MiB either way
    assert parse_memory_mb("4g") in (3814, 3815)
    assert parse_memory_mb("10m") in (9, 10)


@pytest.mark.parametrize("text", ["", " ", "G", "4GB", "4 G", "-1", "-1G", "1e3", "0x10",
                                  "4P", "four", "1,5G", "1.G", ".5G"])
def test_malformed_memory_sizes_name_the_forms_and_option(text):
    with pytest.raises(RequestError) as info:
        parse_memory_mb(text, option="-mem")
    message = str(info.value)
    assert message.startswith("-mem:")
    assert f"'{text}'" in message
    assert MEMORY_FORMS in message


@pytest.mark.parametrize("text", ["0", "0G", "0.0", "000"])
def test_zero_memory_is_refused(text):
    with pytest.raises(RequestError, match="must be positive"):
        parse_memory_mb(text)


def test_memory_error_names_the_given_option():
    with pytest.raises(RequestError, match=r"^cluster\.yaml: memory:"):
        parse_memory_mb("lots", option="cluster.yaml: memory")


def test_memory_below_one_megabyte_is_not_called_non_positive():
    """512K is a positive size: it must not be refused as 'must be positive'
    (int() truncates it to 0 MB). Either round up to 1 MB or say it is too small."""
    try:
        value = parse_memory_mb("512K")
    except RequestError as exc:
        assert "must be positive" not in str(exc)
    else:
        assert value == 1


# --- parse_int ---------------------------------------------------------------------------

@pytest.mark.parametrize("text,value", [("1", 1), ("16", 16), (" 3 ", 3), ("007", 7)])
def test_positive_ints(text, value):
    assert parse_int(text, "-n", "the number of nodes") == value


@pytest.mark.parametrize("text,fragment", [
    ("0", "must be at least 1, got 0"),
    ("-2", "must be at least 1, got -2"),
    ("1.5", "must be a whole number from 1 to 9999999, got '1.5'"),
    ("two", "must be a whole number from 1 to 9999999, got 'two'"),
    ("", "must be a whole number from 1 to 9999999, got ''"),
])
def test_positive_int_errors_name_option_and_what(text, fragment):
    with pytest.raises(RequestError) as info:
        parse_int(text, "-n", "the number of nodes")
    message = str(info.value)
    assert message.startswith("-n: the number of nodes ")
    assert fragment in message


# --- parse_ar_id --------------------------------------------------------------------------

@pytest.mark.parametrize("text,value", [("R123", 123), ("r123", 123), ("123", 123), ("1", 1),
                                        ("R9999999", 9_999_999), ("0042", 42)])
def test_ar_ids(text, value):
    assert parse_ar_id(text) == value


@pytest.mark.parametrize("text", ["", "R", "0", "R0", "10000000", "R10000000", "-1", "R-1",
                                  "12a", "RR1", "1.0", " 1", "x1"])
def test_bad_ar_ids(text):
    with pytest.raises(RequestError) as info:
        parse_ar_id(text)
    message = str(info.value)
    assert f"'{text}'" in message
    assert "123 or R123" in message and str(MAX_AR_ID) in message


def test_ar_id_limit_is_grid_engines():
    assert MAX_AR_ID == 9_999_999


# --- window_end (seed 000, 5.2.2.1.1) -----------------------------------------------------

def test_window_from_start_and_end():
    assert window_end(1000, 4600, None) == 4600


def test_window_from_start_and_duration():
    assert window_end(1000, None, 3600) == 4600


def test_window_with_agreeing_end_and_duration():
    assert window_end(1000, 4600, 3600) == 4600


@pytest.mark.parametrize("end,duration", [(4600, 7200), (4600, 3599), (4601, 3600)])
def test_dissonant_window_is_rejected(end, duration):
    # seed 000: start 12:00, end 13:00 and a duration of 2 hours is rejected
    with pytest.raises(RequestError, match="dissonant"):
        window_end(1000, end, duration)


def test_missing_end_is_rejected():
    with pytest.raises(RequestError, match="needs an end") as info:
        window_end(1000, None, None)
    assert "-e" in str(info.value) and "-D" in str(info.value)


@pytest.mark.parametrize("duration", [0, -1, -3600])
def test_non_positive_duration_is_rejected(duration):
    with pytest.raises(RequestError, match="duration must be positive"):
        window_end(1000, None, duration)


@pytest.mark.parametrize("duration", [0, -60])
def test_non_positive_duration_is_rejected_even_with_a_matching_end(duration):
    with pytest.raises(RequestError, match="duration must be positive"):
        window_end(1000, 1000 + duration, duration)


@pytest.mark.parametrize("end", [1000, 999, 0])
def test_end_not_after_start_is_rejected(end):
    with pytest.raises(RequestError, match="later than the start"):
        window_end(1000, end, None)


# --- parse_attribute_list -----------------------------------------------------------------

def test_attribute_list():
    assert parse_attribute_list("gpu=yes") == (("gpu", "yes"),)
    assert parse_attribute_list("gpu=yes,rack=r1") == (("gpu", "yes"), ("rack", "r1"))
    assert parse_attribute_list(" gpu = yes , rack=r* ") == (("gpu", "yes"), ("rack", "r*"))
    assert parse_attribute_list("arch=lx-amd64,_x.y-z=1") == (("arch", "lx-amd64"), ("_x.y-z", "1"))


@pytest.mark.parametrize("text,item", [
    ("gpu", "gpu"),
    ("gpu=", "gpu="),
    ("=yes", "=yes"),
    ("gpu=yes,", ""),
    ("gpu=yes,,rack=1", ""),
    ("1gpu=yes", "1gpu=yes"),
    ("g pu=yes", "g pu=yes"),
    ("", ""),
])
def test_attribute_list_errors(text, item):
    with pytest.raises(RequestError) as info:
        parse_attribute_list(text, option="-l")
    message = str(info.value)
    assert message.startswith("-l:")
    assert f"'{item}'" in message
    assert "attr=value[,attr=value...]" in message


# --- parse_name / parse_name_list ----------------------------------------------------------

@pytest.mark.parametrize("text", ["alice", "job_1", "_x", "a.b-c", "R123"])
def test_valid_names(text):
    assert parse_name(text, "-N") == text


@pytest.mark.parametrize("text", ["", "1abc", "-x", ".x", "a b", "a,b", "a:b", "@grp", "a/b"])
def test_invalid_names(text):
    with pytest.raises(RequestError) as info:
        parse_name(text, "-N")
    assert str(info.value).startswith("-N: invalid name ")
    assert f"'{text}'" in str(info.value)


def test_name_list_keeps_order_and_drops_duplicates():
    assert parse_name_list("bob,alice,bob, carol", "-U") == ("bob", "alice", "carol")
    assert parse_name_list("all.q", "-sgeq") == ("all.q",)


def test_name_list_with_groups():
    assert parse_name_list("alice,@staff,@staff,bob", "-U", groups=True) == ("alice", "@staff", "bob")


@pytest.mark.parametrize("text,groups,item,form", [
    ("alice,@staff", False, "@staff", "name[,name...]"),
    ("alice,,bob", False, "", "name[,name...]"),
    ("alice,", True, "", "user[,@group,...]"),
    ("@", True, "@", "user[,@group,...]"),
    ("@@x", True, "@@x", "user[,@group,...]"),
    ("alice,1bob", True, "1bob", "user[,@group,...]"),
    ("", True, "", "user[,@group,...]"),
])
def test_name_list_errors(text, groups, item, form):
    with pytest.raises(RequestError) as info:
        parse_name_list(text, "-U", groups=groups)
    message = str(info.value)
    assert message.startswith("-U: invalid name ")
    assert f"'{item}'" in message
    assert form in message


# --- access_list --------------------------------------------------------------------------

def test_access_list_puts_the_owner_first():
    assert access_list("alice", ()) == ("alice",)
    assert access_list("alice", ("bob", "carol")) == ("alice", "bob", "carol")
    assert access_list("alice", ("bob", "alice", "carol")) == ("alice", "bob", "carol")
    assert access_list("alice", ("alice",)) == ("alice",)
    assert access_list("alice", ("@staff",)) == ("alice", "@staff")


def test_access_list_has_no_duplicates():
    """The daemon passes the users of a JSON request straight through; the
    AR's access list must still name each user once."""
    assert access_list("alice", ("bob", "bob", "alice", "alice")) == ("alice", "bob")


# --- node_satisfies -----------------------------------------------------------------------

NODE = Node(name="node001", slots=8, memory_mb=32768, ncpus=8, arch="lx-amd64", os="linux",
            properties={"gpu": "yes", "rack": "r12", "cores": 8}, queues=("all.q", "big.q"))


def req(**changes) -> Request:
    return Request(start=0, end=3600, nodes=1).with_changes(**changes)


def test_a_plain_request_fits_any_node():
    assert node_satisfies(NODE, req())
    assert node_satisfies(Node(name="bare"), req())


@pytest.mark.parametrize("changes,expected", [
    ({"slots_per_node": 1}, True),
    ({"slots_per_node": 8}, True),
    ({"slots_per_node": 9}, False),
    ({"memory_mb": 32768}, True),
    ({"memory_mb": 1}, True),
    ({"memory_mb": 32769}, False),
    ({"ncpus": 8}, True),
    ({"ncpus": 9}, False),
    ({"arch": "lx-amd64"}, True),
    ({"arch": "lx-*"}, True),
    ({"arch": "*amd64"}, True),
    ({"arch": "lx-amd6?"}, True),
    ({"arch": "lx-arm64"}, False),
    ({"arch": "LX-AMD64"}, False),     # case-sensitive
    ({"arch": "lx"}, False),           # whole-value match
    ({"os": "linux"}, True),
    ({"os": "lin*"}, True),
    ({"os": "solaris"}, False),
    ({"queues": ("all.q",)}, True),
    ({"queues": ("big.q",)}, True),
    ({"queues": ("b*",)}, True),
    ({"queues": ("gpu.q",)}, False),
    ({"queues": ("gpu.q", "big.q")}, True),   # any of the listed queues
    ({"queues": ("all",)}, False),
    ({"attributes": (("gpu", "yes"),)}, True),
    ({"attributes": (("gpu", "no"),)}, False),
    ({"attributes": (("rack", "r1*"),)}, True),
    ({"attributes": (("rack", "r1"),)}, False),
    ({"attributes": (("cores", "8"),)}, True),          # non-string property
    ({"attributes": (("fpga", "*"),)}, False),          # missing property
    ({"attributes": (("gpu", "yes"), ("rack", "r12"))}, True),
    ({"attributes": (("gpu", "yes"), ("rack", "r13"))}, False),   # every one must match
    ({"slots_per_node": 4, "memory_mb": 16384, "arch": "lx-*", "queues": ("big.q",),
      "attributes": (("gpu", "yes"),)}, True),
    ({"slots_per_node": 4, "memory_mb": 16384, "arch": "lx-*", "queues": ("big.q",),
      "attributes": (("gpu", "no"),)}, False),
])
def test_node_satisfies_each_filter(changes, expected):
    assert node_satisfies(NODE, req(**changes)) is expected


def test_queue_filter_refuses_a_node_without_queues():
    assert not node_satisfies(Node(name="n", slots=8), req(queues=("*",)))
    assert node_satisfies(Node(name="n", slots=8), req(queues=()))


def test_arch_and_os_filters_against_empty_node_values():
    bare = Node(name="n")
    assert not node_satisfies(bare, req(arch="lx-*"))
    assert node_satisfies(bare, req(arch="*"))
    assert not node_satisfies(bare, req(os="linux"))


# --- -he, -m, -M (qrsub's error handling and mail options) ------------------------------------

@pytest.mark.parametrize("text,value", [("y", True), ("yes", True), ("YES", True), ("n", False),
                                        ("no", False), (" No ", False)])
def test_yes_no(text, value):
    assert parse_yes_no(text, "-he") is value


@pytest.mark.parametrize("text", ["", "ye", "true", "1", "nope"])
def test_bad_yes_no_names_option_and_forms(text):
    with pytest.raises(RequestError, match=r"^-he: expected y\[es\] or n\[o\], got"):
        parse_yes_no(text, "-he")


@pytest.mark.parametrize("text,value", [("a", "a"), ("eab", "bea"), ("bb", "b"), ("n", "n"),
                                        ("nn", "n")])
def test_mail_options_are_normalised(text, value):
    assert parse_mail_options(text) == value


@pytest.mark.parametrize("text", ["", "x", "bn", "na", "b e", "B"])
def test_bad_mail_options(text):
    with pytest.raises(RequestError, match=r"^-m: invalid mail options .*b \(begin\).*n \(no mail\)"):
        parse_mail_options(text)


def test_mail_list():
    assert parse_mail_list("alice,bob@example.org, alice") == ("alice", "bob@example.org")


@pytest.mark.parametrize("text", ["", "a b", "bob@", "@host", "a,,b", "bob@-x.org", "x;rm"])
def test_bad_mail_list(text):
    with pytest.raises(RequestError, match=r"^-M: invalid mail address .*user\[@host\]"):
        parse_mail_list(text)


# -- qsub's -pe ranges, -q queue lists, -hold_jid job lists ---------------------------

from overlay.language.request import MAX_SLOTS, format_pe_range  # noqa: E402


@pytest.mark.parametrize("text,ranges", [
    ("4", ((4, 4),)), ("2-8", ((2, 8),)), ("-8", ((1, 8),)), ("4-", ((4, MAX_SLOTS),)),
    ("8,2-4", ((2, 4), (8, 8))), ("2-4,3-6,7", ((2, 7),)), (" 1 , 3 ", ((1, 1), (3, 3))),
])
def test_pe_ranges(text, ranges):
    assert parse_pe_range(text) == ranges


@pytest.mark.parametrize("text", ["", "-", "a", "0", "4-2", "1-2-3", "2,,3", "0-4", "1-99999999"])
def test_bad_pe_ranges_name_the_forms(text):
    with pytest.raises(RequestError, match=r"^-pe: invalid slot range"):
        parse_pe_range(text)


def test_pe_ranges_print_as_grid_engine_writes_them():
    assert format_pe_range(((2, 4), (8, 8), (16, MAX_SLOTS))) == "2-4,8,16-"
    assert format_pe_range(((3, 4),)) == "3,4"


def test_queue_lists():
    assert parse_queue_list("all.q,big.q@node1,*@node[12],q@@allhosts,all.q", "-q") == \
        ("all.q", "big.q@node1", "*@node[12]", "q@@allhosts")
    for bad in ("", "all q", "q@", "a,b;c"):
        with pytest.raises(RequestError, match=r"^-masterq: invalid queue"):
            parse_queue_list(bad, "-masterq")


def test_job_references():
    assert parse_job_references("12,build*,12") == ("12", "build*")
    with pytest.raises(RequestError, match=r"^-hold_jid: invalid job 'a b'"):
        parse_job_references("a b")


# --- bounds, digits, trailing newlines and echo (issue 11) --------------------------------

def test_counts_are_bounded():
    assert parse_int(str(MAX_COUNT), "-n", "the number of nodes") == MAX_COUNT
    with pytest.raises(RequestError, match=rf"^-n: the number of nodes must be at most {MAX_COUNT}, "
                                           rf"got {MAX_COUNT + 1}$"):
        parse_int(str(MAX_COUNT + 1), "-n", "the number of nodes")
    assert parse_int("0", "-ne", "numShowExpired", least=0) == 0
    assert parse_int("-1023", "-p", "the priority", -1023, 1024) == -1023


def test_memory_is_bounded():
    assert parse_memory_mb(f"{MAX_MEMORY_MB}") == MAX_MEMORY_MB
    with pytest.raises(RequestError, match=rf"^-mem: memory size '2048T' is more than {MAX_MEMORY_MB} MB"):
        parse_memory_mb("2048T")


def test_names_are_bounded():
    assert parse_name("a" * MAX_NAME, "-N") == "a" * MAX_NAME
    with pytest.raises(RequestError, match=rf"^-N: invalid name 'a+': use 1 to {MAX_NAME} letters"):
        parse_name("a" * (MAX_NAME + 1), "-N")
    with pytest.raises(RequestError, match="^-U: invalid name '@a+'"):
        parse_name_list("alice,@" + "a" * (MAX_NAME + 1), "-U", groups=True)


def test_patterns_are_bounded_and_printable():
    assert parse_pattern("lx-*" + "a" * (MAX_PATTERN - 4), "-arch") == "lx-*" + "a" * (MAX_PATTERN - 4)
    for text in ("", "a" * (MAX_PATTERN + 1), "lx\tamd64", "x\n"):
        with pytest.raises(RequestError, match=rf"^-arch: invalid pattern .*1 to {MAX_PATTERN} "):
            parse_pattern(text, "-arch")
    for value in ("a" * (MAX_PATTERN + 1), "y\nes"):
        with pytest.raises(RequestError, match=rf"^-l: invalid resource 'gpu=.*value printable "
                                               rf"text of at most {MAX_PATTERN} "):
            parse_attribute_list("gpu=" + value)
    with pytest.raises(RequestError, match="^-l: invalid resource 'g+=1'"):
        parse_attribute_list("g" * (MAX_NAME + 1) + "=1")


def test_addresses_are_bounded():
    local = "a" * (MAX_ADDRESS - 9)
    assert parse_mail_list(f"{local}@host.org") == (f"{local}@host.org",)
    with pytest.raises(RequestError, match=rf"^-M: invalid mail address .*at most {MAX_ADDRESS} "):
        parse_mail_list(f"a{local}@host.org")


@pytest.mark.parametrize("parse,item", [
    (lambda t: parse_name_list(t, "-U", groups=True), "u"),
    (lambda t: parse_name_list(t, "-sgeq"), "all.q"),
    (parse_mail_list, "bob@example.org"),
    (parse_attribute_list, "gpu=yes"),
    (lambda t: parse_queue_list(t, "-q"), "all.q"),
    (parse_job_references, "12"),
    (parse_pe_range, "4"),
])
def test_lists_hold_at_most_max_items_entries(parse, item):
    assert parse(",".join([item] * MAX_ITEMS))
    with pytest.raises(RequestError, match=rf"has {MAX_ITEMS + 1} entries; at most {MAX_ITEMS} are "
                                           "accepted$"):
        parse(",".join([item] * (MAX_ITEMS + 1)))


@pytest.mark.parametrize("parse,text", [
    (lambda t: parse_int(t, "-n", "the number of nodes"), "\uff11"),        # fullwidth 1
    (lambda t: parse_int(t, "-n", "the number of nodes"), "1_000"),          # int() takes it
    (parse_ar_id, "\u0661"),                                                # Arabic-Indic 1
    (parse_ar_id, "R\uff11\uff12"),
    (parse_memory_mb, "\uff14G"),
    (parse_pe_range, "\u0662-\u0664"),
])
def test_numbers_take_ascii_digits_only(parse, text):
    with pytest.raises(RequestError, match=f"'{text}'"):
        parse(text)


@pytest.mark.parametrize("text", ["alice\n", "alice\nbob", "\nalice"])
def test_a_name_with_a_newline_is_refused(text):
    """The name pattern once ended in $, which lets one trailing newline through."""
    with pytest.raises(RequestError, match=r"^-o: invalid name '.*\\n"):
        parse_name(text, "-o")


@pytest.mark.parametrize("parse,text", [
    (lambda t: parse_name_list(t, "-sgeq"), "all.q\n"), (parse_mail_list, "bob,alice\r"),
    (parse_attribute_list, "gpu=yes\n"), (lambda t: parse_queue_list(t, "-q"), "\nall.q"),
    (parse_job_references, "12\n"), (parse_pe_range, "4\n"),
])
def test_a_list_entry_with_a_line_break_is_refused_not_stripped(parse, text):
    """Blanks around entries go (alice, bob); a line break would go unseen."""
    with pytest.raises(RequestError, match=r"^-\w+: invalid .*\\[rn]"):
        parse(text)


HUGE = "x" * 2 ** 17


@pytest.mark.parametrize("parse", [
    parse_memory_mb, parse_ar_id, parse_attribute_list, parse_mail_options, parse_mail_list,
    parse_pe_range, parse_job_references,
    lambda t: parse_int(t, "-n", "the number of nodes"),
    lambda t: parse_int("9" * 5000, "-n", "the number of nodes"),
    lambda t: parse_name(t, "-N"), lambda t: parse_name_list(t, "-U", groups=True),
    lambda t: parse_yes_no(t, "-he"), lambda t: parse_pattern(t, "-arch"),
    lambda t: parse_queue_list(t, "-q"), lambda t: parse_name("\x1b[2J" + t, "-N"),
], ids=lambda f: getattr(f, "__name__", "parser"))
def test_a_refused_value_is_quoted_short_and_escaped(parse):
    with pytest.raises(RequestError) as info:
        parse(HUGE)
    message = str(info.value)
    assert len(message) < 400 and message.isprintable(), message


def test_a_dissonant_window_shows_times_as_users_type_them(zone):
    zone("Asia/Tokyo")
    start = calendar.timegm((2026, 12, 1, 0, 0, 0))           # 09:00 in Tokyo
    with pytest.raises(RequestError) as info:
        window_end(start, start + 7200, 3600)
    assert str(info.value) == ("dissonant time window: the start 12/01/2026 09:00:00 plus the "
                               "duration 1:0:0 is 12/01/2026 10:00:00, not the end 12/01/2026 "
                               "11:00:00; give -e or -D, or values that agree")


def test_a_window_is_at_most_max_duration_long():
    assert window_end(1000, None, MAX_DURATION) == 1000 + MAX_DURATION
    with pytest.raises(RequestError, match=f"is longer than {HORIZON_DAYS} days; accepted are "
                                           f"windows up to {HORIZON_DAYS}d$"):
        window_end(1000, 1001 + MAX_DURATION, None)


@pytest.mark.parametrize("text", ["x+y", "a(b", "a,b", "a[b", "a'b", "proj_1.x-y", "a" * MAX_NAME])
def test_grid_engine_names_take_any_ascii_printing_text_but_a_few(text):
    """sge_types(5): a name is ASCII printing characters but / : @ \\ * ?."""
    assert parse_object_name(text, "-N", "AR name", digit_start=False) == text


@pytest.mark.parametrize("text, why", [
    ("", "accepted are 1 to"), ("a b", "without blanks"), ("a:b", "/ : @"), ("a/b", "/ : @"),
    ("a@b", "/ : @"), ("a\\b", "/ : @"), ("a*", "/ : @"), ("a?", "/ : @"), ("a\nb", "ASCII"),
    ("é", "ASCII"), ("a" * (MAX_NAME + 1), f"1 to {MAX_NAME}"), ("1ab", "may not start with a digit")])
def test_grid_engine_names_refused_say_what_is_accepted(text, why):
    with pytest.raises(RequestError, match=r"^-N: invalid AR name ") as info:
        parse_object_name(text, "-N", "AR name", digit_start=False)
    assert why in str(info.value)
