"""The thin clients' option parser (overlay/cli/options.py): argparse's
reading of the words the commands take, one-line errors, help on demand."""

from __future__ import annotations

import pytest

from overlay.cli.options import OptionError, Parser


def number(text: str) -> int:
    if not text.isdigit():
        raise OptionError(f"-n: '{text}' is not a number")
    return int(text)


def parser() -> Parser:
    p = Parser("plus_x", "Test the parser.")
    p.add_argument("-T", action="store_true", dest="transactional", help="hold")
    p.add_argument("-p", action="store_true", help="print")
    p.add_argument("-n", metavar="count", type=number, required=True, help="how many")
    p.add_argument("-ne", metavar="expired", type=number, default=0)
    p.add_argument("-o", metavar="owner", nargs="?", const=(), help="per owner")
    p.add_argument("-s", metavar="start")
    group = p.add_mutually_exclusive_group()
    group.add_argument("-x", action="store_true")
    group.add_argument("--json", action="store_true")
    p.add_argument("jobs", nargs="*", metavar="job")
    return p


def parsed(*words: str) -> dict:
    return vars(parser().parse_args(list(words)))


def refusal(capsys, *words: str) -> str:
    with pytest.raises(SystemExit) as stop:
        parser().parse_args(list(words))
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and err.endswith(" (see plus_x -h)\n")
    return err.removeprefix("plus_x: ").removesuffix(" (see plus_x -h)\n")


def test_defaults_and_values():
    assert parsed("-n", "4") == {"transactional": False, "p": False, "n": 4, "ne": 0, "o": None,
                                 "s": None, "x": False, "json": False, "jobs": []}


@pytest.mark.parametrize("words,key,value", [
    (["-n4"], "n", 4), (["-n=4"], "n", 4), (["-n", "1", "-n", "7"], "n", 7),
    (["-n1", "-ne", "3"], "ne", 3), (["-n1", "-ne=3"], "ne", 3),
    (["-n1", "-Tp"], "transactional", True), (["-n1", "-Tp"], "p", True),
    (["-n1", "-o"], "o", ()), (["-n1", "-o", "-p"], "o", ()), (["-n1", "-o", "bob"], "o", "bob"),
    (["-n1", "-s", "-5"], "s", "-5"), (["-n1", "-s", "-"], "s", "-"),
    (["a", "-n1", "b"], "jobs", ["a", "b"]), (["-n1", "--", "-p", "c"], "jobs", ["-p", "c"]),
])
def test_words_are_read_as_argparse_reads_them(words, key, value):
    assert parsed(*words)[key] == value


@pytest.mark.parametrize("words,message", [
    ([], "the following arguments are required: -n"),
    (["-n", "x"], "-n: 'x' is not a number"),
    (["-n"], "argument -n: expected one argument"),
    (["-n", "-p"], "argument -n: expected one argument"),
    (["-n1", "-bogus"], "unrecognized arguments: -bogus"),
    (["-n1", "-p=yes"], "argument -p: ignored explicit argument 'yes'"),
    (["-n1", "-x", "--json"], "argument --json: not allowed with argument -x"),
    (["-n1", "-pz"], "unrecognized arguments: -pz"),
])
def test_errors_are_one_line_naming_the_option(capsys, words, message):
    assert refusal(capsys, *words) == message


def test_a_refused_word_is_quoted_shortened(capsys):
    assert refusal(capsys, "-n1", "-" + "z" * 500).startswith("unrecognized arguments: -zzz")
    assert len(refusal(capsys, "-n1", "-" + "z" * 500)) < 150


def test_help_lists_every_option_and_exits_0(capsys):
    with pytest.raises(SystemExit) as stop:
        parser().parse_args(["-h", "-n", "x"])
    out = capsys.readouterr().out
    assert stop.value.code == 0
    assert out.startswith("usage: plus_x [-h] [-T] [-p] -n count [-ne expired] [-o [owner]]")
    assert "  -n count              how many\n" in out and "[job ...]" in out


def test_options_lists_what_was_added():
    assert [o.option_strings for o in parser().options()][:3] == [["-h", "--help"], ["-T"], ["-p"]]
