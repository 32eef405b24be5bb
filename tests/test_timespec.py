"""overlay/language/timespec.py: the time and duration arguments users type, and the
qrstat-style formatting of times and durations (seed 000, 5.1.3.4.3).

Local-time parsing depends on TZ, so every test that needs it pins the zone
with the ``zone`` fixture (TZ plus time.tzset(), restored afterwards).
"""

from __future__ import annotations

import calendar
import time

import pytest

from overlay.language.limits import HORIZON, HORIZON_DAYS, MAX_ARGUMENT, MAX_DURATION
from overlay.language.timespec import (
    DURATION_FORMS,
    TIME_FORMS,
    TimeSpecError,
    bounded_time,
    duration_formatter,
    format_ctime,
    format_duration,
    format_iso,
    format_time,
    parse_duration,
    parse_time,
    time_formatter,
)

HOUR = 3600
DAY = 86400
TOKYO_OFFSET = 9 * HOUR


def utc(*fields: int) -> int:
    """Epoch seconds of a UTC calendar time (independent of the code under test)."""
    return calendar.timegm(tuple(fields) + (0,) * (6 - len(fields)))


# "now" for the tests: 2026-06-15 12:00:00 UTC, the same calendar year in every zone.
NOW = utc(2026, 6, 15, 12, 0, 0)




# --- Grid Engine form [[CC]YY]MMDDhhmm[.SS] -------------------------------------------

GE_CASES = [
    ("12011200", utc(2026, 12, 1, 12, 0, 0)),          # MMDDhhmm, year from now
    ("12011200.30", utc(2026, 12, 1, 12, 0, 30)),
    ("01020304", utc(2026, 1, 2, 3, 4, 0)),
    ("2612011200", utc(2026, 12, 1, 12, 0, 0)),        # YYMMDDhhmm
    ("2712011200.45", utc(2027, 12, 1, 12, 0, 45)),
    ("202712011200", utc(2027, 12, 1, 12, 0, 0)),      # CCYYMMDDhhmm
    ("203001312359.59", utc(2030, 1, 31, 23, 59, 59)),
    ("202402291200", utc(2024, 2, 29, 12, 0, 0)),      # leap day
]


@pytest.mark.parametrize("text,expected", GE_CASES)
def test_grid_engine_form_in_utc(zone, text, expected):
    zone("UTC")
    assert parse_time(text, now=NOW) == expected


@pytest.mark.parametrize("text,expected", GE_CASES)
def test_grid_engine_form_is_local_time_in_tokyo(zone, text, expected):
    zone("Asia/Tokyo")
    assert parse_time(text, now=NOW) == expected - TOKYO_OFFSET


def test_grid_engine_default_year_is_the_local_year_of_now(zone):
    # 2025-12-31 20:00 UTC is already 2026-01-01 05:00 in Tokyo.
    new_years_eve = utc(2025, 12, 31, 20, 0, 0)
    zone("UTC")
    assert parse_time("01011200", now=new_years_eve) == utc(2025, 1, 1, 12, 0, 0)
    zone("Asia/Tokyo")
    assert parse_time("01011200", now=new_years_eve) == utc(2026, 1, 1, 12, 0, 0) - TOKYO_OFFSET


def test_grid_engine_default_year_follows_now_not_the_clock(zone):
    zone("UTC")
    assert parse_time("07040900", now=utc(2031, 3, 1)) == utc(2031, 7, 4, 9, 0, 0)
    assert parse_time("07040900", now=utc(2019, 3, 1)) == utc(2019, 7, 4, 9, 0, 0)


# --- ISO 8601 ---------------------------------------------------------------------------

ISO_LOCAL_CASES = [
    ("2026-12-01T09:00", utc(2026, 12, 1, 9, 0, 0)),
    ("2026-12-01T09:00:30", utc(2026, 12, 1, 9, 0, 30)),
    ("2026-12-01 09:00", utc(2026, 12, 1, 9, 0, 0)),
    ("2026-12-01 09:00:30", utc(2026, 12, 1, 9, 0, 30)),
]


@pytest.mark.parametrize("text,expected", ISO_LOCAL_CASES)
def test_iso_without_zone_is_local_time(zone, text, expected):
    zone("UTC")
    assert parse_time(text, now=NOW) == expected
    zone("Asia/Tokyo")
    assert parse_time(text, now=NOW) == expected - TOKYO_OFFSET


ISO_ZONED_CASES = [
    ("2026-12-01T09:00Z", utc(2026, 12, 1, 9, 0, 0)),
    ("2026-12-01T09:00:30Z", utc(2026, 12, 1, 9, 0, 30)),
    ("2026-12-01 09:00Z", utc(2026, 12, 1, 9, 0, 0)),
    ("2026-12-01T09:00+09:00", utc(2026, 12, 1, 0, 0, 0)),
    ("2026-12-01T09:00:15+09:00", utc(2026, 12, 1, 0, 0, 15)),
    ("2026-12-01 09:00-05:30", utc(2026, 12, 1, 14, 30, 0)),
    ("2026-12-01T09:00+00:00", utc(2026, 12, 1, 9, 0, 0)),
]


@pytest.mark.parametrize("zone_name", ["UTC", "Asia/Tokyo"])
@pytest.mark.parametrize("text,expected", ISO_ZONED_CASES)
def test_iso_with_zone_ignores_the_local_zone(zone, zone_name, text, expected):
    zone(zone_name)
    assert parse_time(text, now=NOW) == expected


# --- relative times ---------------------------------------------------------------------

@pytest.mark.parametrize("text,offset", [
    ("now", 0),
    ("now+90s", 90),
    ("now+10m", 600),
    ("now+2h", 2 * HOUR),
    ("now+1d", DAY),
    ("now+1:30:00", 90 * 60),
    ("now+5:00", 300),
    ("now+45", 45),
    ("  now+10m  ", 600),
])
def test_relative_times_count_from_now(zone, text, offset):
    zone("Asia/Tokyo")  # relative times do not depend on the zone
    assert parse_time(text, now=NOW) == NOW + offset


def test_relative_time_truncates_a_fractional_now():
    assert parse_time("now", now=NOW + 0.9) == NOW
    assert parse_time("now+1m", now=NOW + 0.9) == NOW + 60


def test_now_without_argument_uses_the_clock():
    before = int(time.time())
    value = parse_time("now+10m")
    after = int(time.time())
    assert before + 600 <= value <= after + 600


# --- rejected times ---------------------------------------------------------------------

SYNTAX_ERRORS = ["tomorrow", "now-5m", "10x", "", "   ", "now+", "1201120", "1201120000000",
                 "12011200.3", "12011200.", "2026-12-01", "2026-12-01T9:00", "2026/12/01 09:00",
                 "2026-12-01T09:00+9", "12:00"]


@pytest.mark.parametrize("text", SYNTAX_ERRORS)
def test_malformed_times_name_the_accepted_forms(text):
    with pytest.raises(TimeSpecError) as info:
        parse_time(text, now=NOW)
    message = str(info.value)
    assert f"'{text}'" in message
    assert TIME_FORMS in message


def test_bad_offset_after_now_names_the_duration_forms():
    with pytest.raises(TimeSpecError) as info:
        parse_time("now+10x", now=NOW)
    message = str(info.value)
    assert "'now+10x'" in message
    assert DURATION_FORMS in message


# Well-formed digits that are no calendar time: month 13, 30 February, hour 24, ...
IMPOSSIBLE_DATES = ["13011200", "00011200", "02301200", "12012400", "12011260",
                    "12011200.60", "2602301200", "2026-02-30T10:00", "2026-13-01T10:00",
                    "2026-12-01T24:00", "2026-12-01T09:00:61"]


@pytest.mark.parametrize("text", IMPOSSIBLE_DATES)
def test_impossible_dates_are_rejected(zone, text):
    zone("UTC")
    with pytest.raises(TimeSpecError) as info:
        parse_time(text, now=NOW)
    assert f"'{text}'" in str(info.value)


@pytest.mark.parametrize("text", IMPOSSIBLE_DATES)
def test_impossible_dates_name_the_accepted_forms(zone, text):
    """parse_time promises 'raises TimeSpecError naming the forms' for every
    rejected time; an impossible date must not get only datetime's own text."""
    zone("UTC")
    with pytest.raises(TimeSpecError) as info:
        parse_time(text, now=NOW)
    assert TIME_FORMS in str(info.value)


def test_time_spec_error_is_a_value_error():
    assert issubclass(TimeSpecError, ValueError)


# --- durations --------------------------------------------------------------------------

@pytest.mark.parametrize("text,seconds", [
    ("2:00:00", 7200),
    ("1:30:00", 5400),
    ("24:0:10", 86410),
    ("0:0:1", 1),
    ("100:00:00", 360000),
    ("1:30", 90),          # m:s
    ("10:00", 600),
    ("90", 90),            # plain seconds
    ("3600", 3600),
    ("90s", 90),
    ("10m", 600),
    ("90m", 5400),
    ("2h", 7200),
    ("1d", 86400),
    ("7d", 7 * 86400),
    (" 5m ", 300),
])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["1:2:3:4", "10x", "", " ", "-5", "1.5h", "5 m", "h", "1:",
                                  ":30", "10M", "2H", "1w", "1h30m", "+5", "1::2"])
def test_malformed_durations_name_the_accepted_forms(text):
    with pytest.raises(TimeSpecError) as info:
        parse_duration(text)
    message = str(info.value)
    assert f"'{text}'" in message
    assert DURATION_FORMS in message


# --- bounds, digits and echo (issue 11) ---------------------------------------------------

@pytest.mark.parametrize("text", ["now+3000000d", "999912312359", "2036-06-13T00:00Z",
                                  f"now+{HORIZON + 1}"])
def test_times_beyond_the_horizon_are_refused_naming_option_and_bound(zone, text):
    zone("UTC")
    with pytest.raises(TimeSpecError) as info:
        parse_time(text, now=NOW, option="-s")
    assert str(info.value) == (f"-s: '{text}' is more than {HORIZON_DAYS} days ahead (the horizon); "
                               f"accepted are times up to {format_time(NOW + HORIZON)}")


def test_the_horizon_itself_is_accepted():
    assert parse_time(f"now+{HORIZON_DAYS}d", now=NOW) == NOW + HORIZON


@pytest.mark.parametrize("text", ["196912312359", "1969-12-31T23:59:59Z", "1900-01-01T00:00"])
def test_times_before_the_epoch_are_refused(zone, text):
    zone("UTC")
    with pytest.raises(TimeSpecError, match=rf"^-e: '{text}' is before the epoch"):
        parse_time(text, now=NOW, option="-e")
    assert parse_time("1970-01-01T00:00Z", now=NOW) == 0


def test_bounded_time_checks_a_time_given_as_a_number():
    assert bounded_time(NOW + HORIZON, NOW, "-s") == NOW + HORIZON
    with pytest.raises(TimeSpecError, match=rf"^-s: {NOW + HORIZON + 1} is more than "):
        bounded_time(NOW + HORIZON + 1, NOW, "-s")
    with pytest.raises(TimeSpecError, match="^-e: -1 is before the epoch"):
        bounded_time(-1, NOW, "-e")


def test_durations_are_at_most_the_longest_window():
    assert parse_duration(f"{HORIZON_DAYS}d") == MAX_DURATION
    for text in (str(MAX_DURATION + 1), "9" * 4000 + "d", "1:" + "9" * 30 + ":0"):
        with pytest.raises(TimeSpecError) as info:
            parse_duration(text, "-D")
        assert str(info.value).startswith(f"-D: the duration '{text[:20]}")
        assert f"longer than {HORIZON_DAYS} days" in str(info.value)


@pytest.mark.parametrize("text", ["\uff11\uff12\uff10\uff11\uff11\uff12\uff10\uff10",  # fullwidth 12011200
                                  "\u0662\u0660\u0662\u0666-12-01T09:00",                  # Arabic-Indic 2026
                                  "now+\u0661h", "2026-12-01T09:00+0\u0669:00"])
def test_times_take_ascii_digits_only(text):
    with pytest.raises(TimeSpecError, match="^invalid time .*accepted forms are|must be a duration"):
        parse_time(text, now=NOW)


@pytest.mark.parametrize("text", ["\u0661h", "\uff11:00", "\u09e7\u09e6"])
def test_durations_take_ascii_digits_only(text):
    with pytest.raises(TimeSpecError, match="accepted forms are"):
        parse_duration(text)


@pytest.mark.parametrize("parse", [lambda t: parse_time(t, now=NOW, option="-s"),
                                   lambda t: parse_duration(t, "-D")])
@pytest.mark.parametrize("text", ["1" * (MAX_ARGUMENT + 1), "now+" + "1" * 5000 + "s",
                                  "x" * 2 ** 17, "\x1b[2J" + "y" * 200])
def test_a_refused_argument_is_quoted_short_and_escaped(parse, text):
    with pytest.raises(TimeSpecError) as info:
        parse(text)
    message = str(info.value)
    assert len(message) < 400 and message.isprintable()
    if len(text) > MAX_ARGUMENT:
        assert f"longer than {MAX_ARGUMENT} characters" in message


def test_errors_name_the_option_when_given():
    with pytest.raises(TimeSpecError, match="^-a: invalid time 'soon'"):
        parse_time("soon", option="-a")
    with pytest.raises(TimeSpecError, match="^-D: invalid duration 'long'"):
        parse_duration("long", "-D")


# --- formatting -------------------------------------------------------------------------

@pytest.mark.parametrize("seconds,text", [
    (86410, "24:0:10"),       # seed 000's qrstat example
    (610, "0:10:10"),         # 12/14/2006 14:47:23 .. 14:57:33
    (0, "0:0:0"),
    (59, "0:0:59"),
    (60, "0:1:0"),
    (3600, "1:0:0"),
    (3661, "1:1:1"),
    (360000, "100:0:0"),
    (-5, "0:0:0"),
])
def test_format_duration_like_qrstat(seconds, text):
    assert format_duration(seconds) == text


def test_format_duration_round_trips_through_parse_duration():
    for seconds in (1, 59, 61, 3599, 3601, 86410, 999999):
        assert parse_duration(format_duration(seconds)) == seconds


def test_format_time_is_local_mm_dd_yyyy(zone):
    stamp = utc(2006, 12, 18, 10, 0, 0)
    zone("UTC")
    assert format_time(stamp) == "12/18/2006 10:00:00"
    assert format_time(utc(2026, 1, 5, 3, 4, 5)) == "01/05/2026 03:04:05"
    zone("Asia/Tokyo")
    assert format_time(stamp) == "12/18/2006 19:00:00"
    assert format_time(utc(2026, 12, 31, 20, 0, 0)) == "01/01/2027 05:00:00"


def test_format_ctime_is_local_like_qrstat_ar(zone):
    stamp = utc(2006, 12, 18, 10, 0, 0)
    zone("UTC")
    assert format_ctime(stamp) == "Mon Dec 18 10:00:00 2006"
    assert format_ctime(utc(2006, 12, 19, 10, 0, 10)) == "Tue Dec 19 10:00:10 2006"
    zone("Asia/Tokyo")
    assert format_ctime(stamp) == "Mon Dec 18 19:00:00 2006"
    assert format_ctime(utc(2006, 12, 18, 20, 0, 0)) == "Tue Dec 19 05:00:00 2006"


@pytest.mark.parametrize("zone_name", ["UTC", "Asia/Tokyo"])
def test_format_iso_is_utc_whatever_the_zone(zone, zone_name):
    zone(zone_name)
    assert format_iso(utc(2006, 12, 18, 10, 0, 0)) == "2006-12-18T10:00:00Z"
    assert format_iso(0) == "1970-01-01T00:00:00Z"
    assert parse_time(format_iso(NOW + 7), now=NOW) == NOW + 7


@pytest.mark.parametrize("zone_name", ["UTC", "Asia/Tokyo"])
def test_local_forms_round_trip(zone, zone_name):
    zone(zone_name)
    stamp = utc(2027, 3, 4, 5, 6, 7)
    local = time.localtime(stamp)
    ge = time.strftime("%Y%m%d%H%M.%S", local)
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", local)
    assert parse_time(ge, now=NOW) == stamp
    assert parse_time(iso, now=NOW) == stamp


@pytest.mark.parametrize("epoch", [2 ** 40, 253402300799, 10 ** 18, -5])
def test_a_time_beyond_what_calendars_hold_is_shown_not_fatal(epoch, zone):
    """An AR stored before times were bounded (year 10240) must not break
    every user's plus_status or plus_status -x."""
    zone("Asia/Tokyo")
    shown = (format_time(epoch), format_ctime(epoch), format_iso(epoch))
    assert shown[2] == ("9999-12-31T00:00:00Z" if epoch > 0 else "1970-01-01T00:00:00Z")
    assert all(text for text in shown)


@pytest.mark.parametrize("epoch,shown_as", [
    (0, 0), (-5, 0), (1_795_000_000, 1_795_000_000), (1_795_000_059, 1_795_000_059),
    (1_795_000_000.7, 1_795_000_000), (10 ** 13, 253_402_214_400)])
def test_a_listings_times_are_strftimes_clamped_to_year_9999(zone, epoch, shown_as):
    when = time_formatter()
    expected = time.strftime("%m/%d/%Y %H:%M:%S", time.localtime(shown_as))
    assert when(epoch) == when(epoch) == format_time(epoch) == expected


def test_a_listings_durations_are_format_durations():
    length = duration_formatter()
    for seconds in (0, 59, 3600, 3600, 90_061, -3):
        assert length(seconds) == format_duration(seconds)
