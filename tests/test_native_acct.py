"""Job accounting: records in accounting(5) format and qacct's views of them,
compared byte for byte with a real SoGE 8.1.9 (tests/data/sge: its
accounting file and what its qacct printed for it, TZ=UTC)."""

from __future__ import annotations

from pathlib import Path

import pytest

from overlay.api.plugin import Outbox, ReportingDrain
from overlay_native import acct
from overlay_native.jobstore import JobStore

DATA = Path(__file__).parent / "data" / "sge"


@pytest.fixture(autouse=True)
def utc(zone):
    zone("UTC")


def records() -> list[acct.JobRecord]:
    return list(acct.read(str(DATA / "accounting")))


def expected(name: str) -> str:
    return (DATA / name).read_text().rstrip("\n")


def test_records_read_and_write_back_unchanged():
    lines = [line for line in (DATA / "accounting").read_text().splitlines()
             if len(line) > 1 and not line.startswith("#")]
    assert [record.line() for record in records()] == lines
    ar_job = next(r for r in records() if r.job_number == 52)
    assert (ar_job.arid, ar_job.ar_sub_time, ar_job.category) == (1, 1795378911, "-ar 1")


@pytest.mark.parametrize("job", [26, 29, 38, 50, 51, 52, 55])
def test_job_listing_is_qaccts(job):
    record = next(r for r in records() if r.job_number == job)
    assert acct.detail(record) == expected(f"qacct-j{job}.txt")


def test_totals_are_qaccts():
    assert acct.total(records()) == expected("qacct.txt")


@pytest.mark.parametrize("by,name", [("owner", "o"), ("group", "g"), ("host", "h"),
                                     ("queue", "q"), ("ar", "ar")])
def test_groupings_are_qaccts(by, name):
    assert acct.grouped(records(), by) == expected(f"qacct-{name}.txt")


@pytest.mark.parametrize("by,only,name", [("ar", "1", "ar1"), ("owner", "plusu2", "o-plusu2")])
def test_one_group_is_qaccts(by, only, name):
    assert acct.grouped(records(), by, only) == expected(f"qacct-{name}.txt")


def test_the_leaders_drain_starts_the_file_with_the_header_and_appends_whole_records(tmp_path):
    """Records reach the accounting file from the store's outbox (where a
    job's end puts them): a new file starts with Grid Engine's comment
    lines, once; a record's fields stay on one line."""
    url = f"sqlite:///{tmp_path / 'plus.db'}"
    store = JobStore(url)
    outbox = Outbox(store.engine, url, acct.TARGET)
    drain = ReportingDrain(outbox, str(tmp_path / "sub" / "accounting"),
                           header=acct.HEADER.encode())
    record = acct.JobRecord("all.q", "h1", "staff", "alice", "job:1\nx", 7, ru_utime=0.5,
                            category="-l h_rt=10")
    for _ in range(2):
        outbox.add([record.line() + "\n"])
        assert drain.drain() == 1
    Outbox(store.engine, url).add(["1:new_ar:for the reporting file\n"])   # another target's
    assert drain.drain() == 0
    store.close()
    text = (tmp_path / "sub" / "accounting").read_text()
    assert text.startswith(acct.HEADER) and text.count(acct.HEADER) == 1
    lines = text[len(acct.HEADER):].splitlines()
    assert len(lines) == 2 and lines[0].split(":")[4] == "job;1 x"
    assert acct.JobRecord.parse(lines[0]).ru_utime == 0.5


def test_a_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "accounting"
    path.write_text("\n" + records()[0].line() + "\nnot:a:record\n")
    with pytest.raises(ValueError, match=r"accounting:3: not an accounting record: expected 45 "
                                         r"fields, found 3"):
        list(acct.read(str(path)))


def test_a_malformed_line_can_be_skipped_and_an_infinite_figure_is_malformed(tmp_path):
    """plus_qacct goes on past a bad line (as qacct: 'ignoring invalid
    entry'), so one forged or damaged record cannot hide everyone's jobs."""
    good = records()[0].line()
    fields = good.split(":")
    fields[36] = "inf"  # a float field: ru_* and cpu figures must be finite
    path = tmp_path / "accounting"
    path.write_text(good + "\n" + ":".join(fields) + "\nnot:a:record\n" + good + "\n")
    errors = []
    assert len(list(acct.read(str(path), errors.append))) == 2
    assert [str(e).split(": ", 1)[0] for e in errors] == [f"{path}:2", f"{path}:3"]
    assert "is not a finite number" in str(errors[0])
