"""The reader of ClassAd files: what it accepts means to HTCondor's library
what the original text means, and what it refuses it names by line."""

from __future__ import annotations

from pathlib import Path

import classad2
import pytest

from overlay_classad.syntax import ClassAdSyntaxError, parse_expression, parse_record, unparse

CONF = Path(__file__).resolve().parent.parent / "conf"
SAMPLES = sorted(CONF.glob("reservable.ad.sample*"))


def test_the_four_samples_ship():
    assert [p.name for p in SAMPLES] == [f"reservable.ad.sample{i}" for i in range(1, 5)]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_samples_read_back_as_htcondor_reads_them(path):
    record = parse_record(path.read_text())
    ours = classad2.ClassAd(unparse(record))
    theirs = classad2.ClassAd(path.read_text())
    assert sorted(ours.keys()) == sorted(theirs.keys())
    assert "PLUS_NODE_RESERVABLE" in ours


EXPRESSIONS = [
    "1 + 2 * 3 - 4 / 2 % 3",
    "-(2 - 5) * +3",
    "!(1 < 2) || 3 >= 3 && 4 != 5",
    "1 == 1.0 && 2 =?= 2 && 2 =!= 2.0",
    "2 is 2 && 2 isnt 2.0",
    "0x1F + 017 + 1.5e2 + .5",
    "7 & 3 | 8 ^ 1",
    "1 << 4 >> 2",
    "true ? \"yes\" : false ? \"no\" : \"never\"",
    "undefined ?: 42",
    "{1, {2, 3}, \"x\"}[1][0]",
    "[a = 1; b = [c = a + 1]].b.c",
    "[a = 2; 'odd name' = a * 3].'odd name'",
    "strcat(\"a\\\"b\", 'q' , toUpper(\"c\"))".replace("'q'", "\"q\""),
    "member(\"x\", {\"y\", \"x\"}) && SIZE({1, 2}) == 2",
    "TRUE && !FALSE && isUndefined(UNDEFINED) && isError(ERROR)",
    "real(relTime(90)) + int(3.7)",
]


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_expressions_keep_their_value(text):
    ours = classad2.ExprTree(unparse(parse_expression(text))).eval()
    theirs = classad2.ExprTree(text).eval()
    assert ours == theirs and type(ours) is type(theirs)


def test_comments_whitespace_and_the_web_copy_nbsp_are_skipped():
    text = "// a comment\n[\u00a0a = 1; /* block\n over lines */ b = a + 1 // tail\n]\n"
    record = parse_record(text)
    assert [(a.name, a.line) for a in record.attributes] == [("a", 2), ("b", 3)]
    assert classad2.ClassAd(unparse(record)).eval("b") == 2


def test_unparse_brackets_every_operation():
    assert unparse(parse_expression("a + b * c")) == "(a + (b * c))"
    assert unparse(parse_expression("(a + b) * c")) == "((a + b) * c)"
    assert unparse(parse_expression(".x.y[2]")) == ".x.y[2]"


ERRORS = [
    ("[\n a = 1\n b = 2\n]", 3, "expected ';' or ']' after the value of a, found 'b'"),
    ("[\n a = (1 + ]", 2, "expected a value (a number, string, name, function call, list or "
                          "record), found ']'"),
    ("[\n\n a = \"open]\n", 3, "\" ... \" is not closed on the same line"),
    ("a = 1", 1, "expected '[' opening a ClassAd, found 'a'"),
    ("[a = f(1,\n 2\n 3)]", 3, "expected ',' or ')' in the arguments of f(), found '3'"),
    ("[ /* never closed ]", 1, "comment opened with /* is never closed with */"),
    ("[a = 1;]\nextra", 2, "expected the end of the file after the ClassAd's ']', found 'extra'"),
    ("[a = 1 ? 2]", 1, "expected ':' of the conditional ?:, found ']'"),
    ("[a = x.]", 1, "expected an attribute name after '.', found ']'"),
    ("[a = {1, 2 3}]", 1, "expected ',' or '}' in the list, found '3'"),
    ("[a = 1 @ 2]", 1, "unexpected character '@'"),
    ("[a = 1", 1, "expected ';' or ']' after the value of a, found the end of the file"),
    ("[= 1]", 1, "expected an attribute name or ']', found '='"),
    ("[a 1]", 1, "expected '=' after the attribute name a, found '1'"),
    ("[a = x[1]", 1, "expected ';' or ']' after the value of a, found the end of the file"),
    ("[a = (1]", 1, "expected ')', found ']'"),
]


@pytest.mark.parametrize("text,line,message", ERRORS)
def test_errors_name_the_line_and_what_was_expected(text, line, message):
    with pytest.raises(ClassAdSyntaxError) as caught:
        parse_record(text)
    assert caught.value.line == line
    assert str(caught.value) == f"line {line}: {message}"


def test_what_we_refuse_htcondor_refuses_too_but_text_after_the_ad():
    """HTCondor reads the first ad and drops what follows; a second ad or a
    stray line in a policy file is a mistake to report, not to ignore."""
    for text, _, _ in ERRORS:
        if text.endswith("extra"):
            assert classad2.ClassAd(text).eval("a") == 1
            continue
        with pytest.raises(classad2.ClassAdException):
            classad2.ClassAd(text)
