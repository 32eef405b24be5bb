"""qmgr's request syntax, as qmgr.c parses it: 'operation object [name]
[attr[.resource] op value, ...]', abbreviations allowed, errors reported with
qmgr's own messages and caret."""

from __future__ import annotations

OPERATIONS = ("create", "delete", "set", "unset", "list", "print", "active", "help",
              "quit", "exit")
OBJECTS = ("server", "queue", "node")


class SyntaxProblem(Exception):
    """A request qmgr refuses before contacting the server; the text is what
    it prints on stderr."""


class Request:
    """One parsed request; ``attributes`` are (name, resource, op, value)."""

    __slots__ = ("attributes", "name", "object", "operation")

    def __init__(self, operation: str, object_: str, name: str | None,
                 attributes: list[tuple[str, str | None, str, str]]):
        self.operation, self.object, self.name = operation, object_, name
        self.attributes = attributes


def _is_oper(text: str, i: int) -> bool:
    return text[i:i + 1] == "=" or text[i:i + 2] in ("+=", "-=")


def _caret(request: str, position: int) -> str:
    return f"{request}\n{' ' * position}^\n"


def _word(text: str, i: int) -> tuple[str, int]:
    while i < len(text) and text[i].isspace():
        i += 1
    start = i
    while i < len(text) and not text[i].isspace() and not _is_oper(text, i):
        i += 1
    return text[start:i], i


def _expand(word: str, choices: tuple[str, ...]) -> str | None:
    return next((choice for choice in choices if word and choice.startswith(word)), None)


def parse(request: str, attribute_names: dict[str, set[str]]) -> Request:
    """``attribute_names`` maps an object type to its attribute names: a third
    word that is one of them starts the attribute list instead of naming an
    object ('set server scheduling=true')."""
    command, i = _word(request, 0)
    operation = _expand(command, OPERATIONS)
    if operation is None:
        raise SyntaxProblem(f"qmgr: Illegal operation: {command}\n"
                            "Try 'help' if you are having trouble.\n")
    if operation in ("help", "active", "quit", "exit"):
        return Request(operation, "", None, [])
    kind, i = _word(request, i)
    if not kind:
        raise SyntaxProblem("qmgr: No object type given\n")
    object_ = _expand(kind, OBJECTS)
    if object_ is None:
        raise SyntaxProblem(f"qmgr: Illegal object type: {kind}.\n")
    name, after_name = _word(request, i)
    if name and name.split(".")[0] not in attribute_names[object_]:
        i = after_name
    else:
        name = None
    attributes = _attributes(request, i, operation)
    if operation in ("set", "unset") and not attributes:
        raise SyntaxProblem("qmgr: Syntax error - attribute required for operation\n"
                            + _caret(request, i))
    return Request(operation, object_, name or None, attributes)


def _attributes(text: str, i: int, operation: str) -> list[tuple[str, str | None, str, str]]:
    """(name, resource, op, value) items of qmgr's attributes() routine."""
    def fail(position: int) -> SyntaxProblem:
        return SyntaxProblem("qmgr: Syntax error - cannot locate attribute\n"
                             + _caret(text, position))

    def skip(j: int) -> int:
        while j < len(text) and text[j].isspace():
            j += 1
        return j

    items = []
    i = skip(i)
    if i >= len(text):
        return items
    while True:
        i = skip(i)
        start = i
        while (i < len(text) and text[i] not in ".," and not _is_oper(text, i)
               and not text[i].isspace()):
            i += 1
        if i == start:
            raise fail(i)
        name, resource = text[start:i], None
        if text[i:i + 1] == ".":
            i += 1
            start = i
            while i < len(text) and not text[i].isspace() and not _is_oper(text, i):
                i += 1
            if i == start:
                raise fail(i)
            resource = text[start:i]
        i = skip(i)
        if i >= len(text):
            if operation in ("create", "set"):
                raise fail(i)
            items.append((name, resource, "=", ""))
            return items
        if text[i] == ",":
            items.append((name, resource, "=", ""))
        else:
            if text[i] == "=":
                op, i = "=", i + 1
            elif text[i:i + 2] in ("+=", "-="):
                op, i = text[i:i + 2], i + 2
            else:
                raise fail(i)
            if operation == "unset":
                raise fail(i)
            i = skip(i)
            if i >= len(text):
                raise fail(i)
            if text[i] in "\"'":
                quote = text[i]
                end = text.find(quote, i + 1)
                if end < 0:
                    raise fail(i + 1)
                value, i = text[i + 1:end], end + 1
            else:
                start = i
                while i < len(text) and not text[i].isspace() and text[i] != ",":
                    i += 1
                value = text[start:i]
            items.append((name, resource, op, value))
        i = skip(i)
        if i >= len(text):
            return items
        if text[i] != ",":
            raise fail(i)
        i += 1
