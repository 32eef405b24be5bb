"""A reader of ClassAd files (HTCondor's "new" syntax) into a small tree.

HTCondor's library says only "Unable to parse string into a ClassAd." when
a file is wrong; a site editing reservable.ad at three in the morning needs
the line and what was expected there. This reader checks the file with that
precision, and gives the plugin a tree it can rewrite (PluS's built-in
functions) and print back for HTCondor's library to evaluate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterator


class ClassAdSyntaxError(ValueError):
    """The file is not a ClassAd; the text says the line and what was expected."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


# -- the tree -------------------------------------------------------------------

@dataclass(frozen=True)
class Literal:
    """A number, string, true, false, undefined or error, as written."""

    text: str


@dataclass(frozen=True)
class Ref:
    """An attribute reference; ``absolute`` for the ``.name`` form."""

    name: str
    absolute: bool = False


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple["Expr", ...]
    line: int


@dataclass(frozen=True)
class Unary:
    op: str
    operand: "Expr"


@dataclass(frozen=True)
class Binary:
    op: str
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class Conditional:
    """``test ? yes : no``, or with ``yes`` None the ``test ?: no`` form."""

    test: "Expr"
    yes: "Expr | None"
    no: "Expr"


@dataclass(frozen=True)
class Select:
    """``target.name``: an attribute of a record."""

    target: "Expr"
    name: str


@dataclass(frozen=True)
class Index:
    """``target[index]``: an element of a list (or attribute of a record)."""

    target: "Expr"
    index: "Expr"


@dataclass(frozen=True)
class ListExpr:
    items: tuple["Expr", ...]


@dataclass(frozen=True)
class Attribute:
    name: str
    value: "Expr"
    line: int


@dataclass(frozen=True)
class Record:
    attributes: tuple[Attribute, ...]


Expr = Literal | Ref | Call | Unary | Binary | Conditional | Select | Index | ListExpr | Record


# -- tokens ---------------------------------------------------------------------

@dataclass(frozen=True)
class Token:
    kind: str   # number, string, name, quoted (a 'quoted' attribute name), op, end
    text: str
    line: int


_OPERATORS = sorted(["=?=", "=!=", ">>>", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "?:",
                     "<", ">", "+", "-", "*", "/", "%", "!", "~", "&", "|", "^", "?", ":",
                     "=", ";", ",", ".", "(", ")", "[", "]", "{", "}"], key=len, reverse=True)
_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\f\v\u00a0]+) | (?P<newline>\n) |
    (?P<comment>//[^\n]*) | (?P<block>/\*.*?\*/) | (?P<open_block>/\*) |
    (?P<number>0[xX][0-9a-fA-F]+ | (?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?) |
    (?P<string>"(?:[^"\\\n]|\\.)*") | (?P<open_string>") |
    (?P<quoted>'(?:[^'\\\n]|\\.)*') | (?P<open_quoted>') |
    (?P<name>[A-Za-z_][A-Za-z0-9_]*) |
    (?P<op>""" + "|".join(re.escape(op) for op in _OPERATORS) + r""")
    """, re.VERBOSE | re.DOTALL)


def tokens(text: str) -> Iterator[Token]:
    """The tokens of ``text``, with their line numbers; comments dropped."""
    line, position = 1, 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ClassAdSyntaxError(line, f"unexpected character {text[position]!r}")
        kind, value = match.lastgroup, match.group()
        if kind == "open_block":
            raise ClassAdSyntaxError(line, "comment opened with /* is never closed with */")
        if kind in ("open_string", "open_quoted"):
            raise ClassAdSyntaxError(line, f"{value} ... {value} is not closed on the same line")
        if kind in ("number", "string", "quoted", "name", "op"):
            yield Token(kind, value, line)
        line += value.count("\n")
        position = match.end()
    yield Token("end", "", line)


# -- the parser -----------------------------------------------------------------

_KEYWORD_LITERALS = frozenset({"true", "false", "undefined", "error"})
_BINARY_LEVELS: tuple[tuple[str, ...], ...] = (
    ("||",), ("&&",), ("|",), ("^",), ("&",),
    ("==", "!=", "=?=", "=!=", "is", "isnt"),
    ("<", "<=", ">", ">="), ("<<", ">>", ">>>"), ("+", "-"), ("*", "/", "%"))


def _describe(token: Token) -> str:
    return "the end of the file" if token.kind == "end" else repr(token.text)


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = list(tokens(text))
        self.position = 0

    @property
    def token(self) -> Token:
        return self.tokens[self.position]

    def advance(self) -> Token:
        token = self.token
        self.position += 1
        return token

    def at(self, *ops: str) -> bool:
        token = self.token
        if token.kind == "op":
            return token.text in ops
        return token.kind == "name" and token.text.lower() in ops

    def expect(self, op: str, what: str) -> Token:
        if not self.at(op):
            raise ClassAdSyntaxError(self.token.line, f"expected {what}, found {_describe(self.token)}")
        return self.advance()

    # record := '[' (attribute (';' attribute)* ';'?)? ']'
    def record(self) -> Record:
        self.expect("[", "'[' opening a ClassAd")
        attributes: list[Attribute] = []
        while not self.at("]"):
            token = self.token
            if token.kind == "name":
                name = token.text
            elif token.kind == "quoted":
                name = token.text[1:-1]
            else:
                raise ClassAdSyntaxError(token.line, f"expected an attribute name or ']', "
                                                     f"found {_describe(token)}")
            self.advance()
            self.expect("=", f"'=' after the attribute name {name}")
            attributes.append(Attribute(name, self.expression(), token.line))
            if self.at(";"):
                self.advance()
            elif not self.at("]"):
                raise ClassAdSyntaxError(self.token.line, f"expected ';' or ']' after the value of "
                                                          f"{name}, found {_describe(self.token)}")
        self.advance()
        return Record(tuple(attributes))

    def expression(self) -> Expr:
        test = self.binary(0)
        if self.at("?:"):
            self.advance()
            return Conditional(test, None, self.expression())
        if self.at("?"):
            self.advance()
            yes = self.expression()
            self.expect(":", "':' of the conditional ?:")
            return Conditional(test, yes, self.expression())
        return test

    def binary(self, level: int) -> Expr:
        if level == len(_BINARY_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.at(*_BINARY_LEVELS[level]):
            op = self.advance().text.lower()
            left = Binary(op, left, self.binary(level + 1))
        return left

    def unary(self) -> Expr:
        if self.at("-", "+", "!", "~"):
            return Unary(self.advance().text, self.unary())
        return self.postfix()

    def postfix(self) -> Expr:
        expr = self.primary()
        while True:
            if self.at("."):
                self.advance()
                expr = Select(expr, self.name("an attribute name after '.'"))
            elif self.at("["):
                self.advance()
                index = self.expression()
                self.expect("]", "']' closing the subscript")
                expr = Index(expr, index)
            else:
                return expr

    def name(self, what: str) -> str:
        token = self.token
        if token.kind not in ("name", "quoted"):
            raise ClassAdSyntaxError(token.line, f"expected {what}, found {_describe(token)}")
        self.advance()
        return token.text if token.kind == "name" else token.text[1:-1]

    def primary(self) -> Expr:
        token = self.token
        if token.kind in ("number", "string"):
            self.advance()
            return Literal(token.text)
        if token.kind == "name" and token.text.lower() in _KEYWORD_LITERALS:
            self.advance()
            return Literal(token.text.lower())
        if token.kind in ("name", "quoted"):
            name = self.name("a name")
            if token.kind == "name" and self.at("("):
                return self.call(name, token.line)
            return Ref(name)
        if self.at("."):
            self.advance()
            return Ref(self.name("an attribute name after '.'"), absolute=True)
        if self.at("("):
            self.advance()
            expr = self.expression()
            self.expect(")", "')'")
            return expr
        if self.at("{"):
            return ListExpr(self.items("{", "}", "list"))
        if self.at("["):
            return self.record()
        raise ClassAdSyntaxError(token.line, f"expected a value (a number, string, name, "
                                             f"function call, list or record), found {_describe(token)}")

    def call(self, name: str, line: int) -> Call:
        return Call(name, self.items("(", ")", f"arguments of {name}()"), line)

    def items(self, opening: str, closing: str, what: str) -> tuple[Expr, ...]:
        self.expect(opening, f"'{opening}'")
        items: list[Expr] = []
        while not self.at(closing):
            items.append(self.expression())
            if self.at(","):
                self.advance()
            elif not self.at(closing):
                raise ClassAdSyntaxError(self.token.line, f"expected ',' or '{closing}' in the {what}, "
                                                          f"found {_describe(self.token)}")
        self.advance()
        return tuple(items)


def _whole(text: str, rule: Callable[[_Parser], Expr], what: str) -> Expr:
    parser = _Parser(text)
    result = rule(parser)
    if parser.token.kind != "end":
        raise ClassAdSyntaxError(parser.token.line, f"expected the end of the {what}, "
                                                    f"found {_describe(parser.token)}")
    return result


def parse_record(text: str) -> Record:
    """The ClassAd record a file holds (``[ name = expression; ... ]``)."""
    return _whole(text, _Parser.record, "file after the ClassAd's ']'")


def parse_expression(text: str) -> Expr:
    """One expression, as a command line or a test gives it."""
    return _whole(text, _Parser.expression, "expression")


# -- back to text -------------------------------------------------------------------

def unparse(expr: Expr) -> str:
    """ClassAd text of ``expr``; every operation in parentheses, so the
    meaning never depends on precedence."""
    match expr:
        case Literal(text):
            return text
        case Ref(name, absolute):
            return ("." if absolute else "") + quoted_name(name)
        case Call(name, args, _):
            return f"{name}({', '.join(unparse(a) for a in args)})"
        case Unary(op, operand):
            return f"({op}{unparse(operand)})"
        case Binary(op, left, right):
            return f"({unparse(left)} {op} {unparse(right)})"
        case Conditional(test, None, no):
            return f"({unparse(test)} ?: {unparse(no)})"
        case Conditional(test, yes, no):
            return f"({unparse(test)} ? {unparse(yes)} : {unparse(no)})"
        case Select(target, name):
            return f"{unparse(target)}.{quoted_name(name)}"
        case Index(target, index):
            return f"{unparse(target)}[{unparse(index)}]"
        case ListExpr(items):
            return "{" + ", ".join(unparse(i) for i in items) + "}"
        case Record(attributes):
            return "[" + "; ".join(f"{quoted_name(a.name)} = {unparse(a.value)}" for a in attributes) + "]"
    raise TypeError(f"not a ClassAd expression: {expr!r}")


def quoted_name(name: str) -> str:
    """An attribute name as ClassAd text: quoted unless a plain identifier."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name.lower() not in _KEYWORD_LITERALS \
            and name.lower() not in ("is", "isnt"):
        return name
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"
