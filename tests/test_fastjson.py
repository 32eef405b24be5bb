"""overlay.wire.fastjson reads and writes what the json package does, with its
errors, for the socket protocol (it exists to keep json's import cost off
the commands' start)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlay.wire import fastjson

FUZZ = settings(max_examples=300, deadline=None, database=None)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@FUZZ
@given(VALUES)
def test_it_writes_and_reads_what_json_does(value):
    text = fastjson.dumps(value)
    assert text == json.dumps(value, separators=(",", ":"))
    assert fastjson.loads(text) == json.loads(text)
    assert fastjson.loads(f" \n{text}\r\n".encode()) == json.loads(text)


def _error(loads, text):
    try:
        loads(text)
    except ValueError as exc:
        return type(exc), str(exc)
    return None


@FUZZ
@given(st.text(alphabet='{}[]",:0123456789.eE+-truefalsn \\\n', max_size=30))
def test_it_refuses_what_json_refuses_with_the_same_message(text):
    assert _error(fastjson.loads, text) == _error(json.loads, text)


@pytest.mark.parametrize("text", ["", "  ", "[1,]", '{"a":}', "{}x", "NaN", '"\\ud800"'])
def test_edge_cases_match_json(text):
    assert _error(fastjson.loads, text) == _error(json.loads, text)
    if _error(json.loads, text) is None:
        assert repr(fastjson.loads(text)) == repr(json.loads(text))


def test_bytes_must_be_utf_8():
    with pytest.raises(UnicodeDecodeError):
        fastjson.loads(b'"\xff"')


def test_only_json_types_are_written():
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        fastjson.dumps({"a": {1}})
