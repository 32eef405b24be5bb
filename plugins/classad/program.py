"""A reservable.ad made ready for HTCondor's ClassAd library, and its
evaluation for one request, node by node.

Rewriting (once, when the file is read):
  * ``relTime("7d")`` and other string forms become ``relTime(604800)``:
    the library turns a string reltime into a plain real, which it then
    refuses to add to an absTime or compare with a reltime (Error);
  * ``time()`` becomes the request's clock, so a simulated clock holds too;
  * calls of PluS's functions (``linear``, ``quadratic``, ``plus_rsvutil``)
    become attributes this module fills in (see ``functions``);
  * ``size(PLUS_ALLOCATED_NODES)`` and ``size(PLUS_ALL_NODES)`` become
    counts, so the lists are built only for files that look inside them.

Evaluation: attributes that do not depend on the candidate node (or on the
nodes allocated so far) are worked out once per request and set as values;
per node only the rest is evaluated. On a refusal the first conjunct of
PLUS_NODE_RESERVABLE that is not true says why.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any, Iterable

import classad2

from overlay.api.plugin import Node, PolicyContext
from overlay_classad import functions
from overlay_classad.nodes import NodeAds
from overlay_classad.syntax import (
    Attribute,
    Binary,
    Call,
    ClassAdSyntaxError,
    Conditional,
    Expr,
    Index,
    ListExpr,
    Literal,
    Record,
    Ref,
    Select,
    Unary,
    parse_record,
    quoted_name,
    unparse,
)

log = logging.getLogger("plus.classad")

RESERVABLE = "PLUS_NODE_RESERVABLE"
APPROVAL = "PLUS_APPROVAL_REQUIRED"
"""Optional, once per request: true (or a string, the reason) holds the AR
for a manager's approval (plus_approval_needed); it may not read the node."""
OWNER, START, END = "PLUS_RSV_OWNER", "PLUS_RSV_START", "PLUS_RSV_END"
NODES = "PLUS_RSV_NODES"
"""The request's node count (-n), for PLUS_APPROVAL_REQUIRED."""
CANDIDATE, ALLOCATED, ALL = "PLUS_CANDIDATE_NODE", "PLUS_ALLOCATED_NODES", "PLUS_ALL_NODES"
NOW = "plus__now"
ALLOCATED_COUNT, ALL_COUNT = "plus__allocated_count", "plus__all_count"
IMPURE = "plus__impure"
"""Stands for calls whose value may change from one evaluation to the next."""

_IMPURE_FUNCTIONS = frozenset({"random"})
_PER_NODE_ROOTS = frozenset({CANDIDATE.lower(), ALLOCATED.lower(), ALLOCATED_COUNT, IMPURE})
_MAX_SHOWN = 4


class ClassAdError(ValueError):
    """The file cannot serve as a reservability policy; the text says why."""


@dataclass(frozen=True)
class BuiltinCall:
    """One call of a PluS function: the attributes holding its arguments,
    and the attribute its value goes to."""

    name: str
    attribute: str
    arguments: tuple[str, ...]


class _Rewriter:
    def __init__(self) -> None:
        self.calls: list[BuiltinCall] = []
        self.added: list[Attribute] = []
        self.lists_used: set[str] = set()

    def expr(self, expr: Expr, nested: bool) -> Expr:
        match expr:
            case Call(name, args, line):
                return self.call(name, args, line, nested)
            case Ref(name, _) if name.lower() in (ALLOCATED.lower(), ALL.lower()):
                self.lists_used.add(name.lower())
                return expr
            case Unary(op, operand):
                return Unary(op, self.expr(operand, nested))
            case Binary(op, left, right):
                return Binary(op, self.expr(left, nested), self.expr(right, nested))
            case Conditional(test, yes, no):
                return Conditional(self.expr(test, nested),
                                   None if yes is None else self.expr(yes, nested),
                                   self.expr(no, nested))
            case Select(target, name):
                return Select(self.expr(target, nested), name)
            case Index(target, index):
                return Index(self.expr(target, nested), self.expr(index, nested))
            case ListExpr(items):
                return ListExpr(tuple(self.expr(i, nested) for i in items))
            case Record(attributes):
                return Record(tuple(Attribute(a.name, self.expr(a.value, True), a.line)
                                    for a in attributes))
        return expr

    def call(self, name: str, args: tuple[Expr, ...], line: int, nested: bool) -> Expr:
        lowered = name.lower()
        if lowered == "reltime" and len(args) == 1 and _is_string(args[0]):
            return Call(name, (Literal(_seconds(args[0].text, line)),), line)
        if lowered == "time" and not args:
            return Ref(NOW)
        if lowered == "size" and len(args) == 1 and isinstance(args[0], Ref) \
                and not args[0].absolute and args[0].name.lower() in (ALLOCATED.lower(), ALL.lower()):
            return Ref(ALLOCATED_COUNT if args[0].name.lower() == ALLOCATED.lower() else ALL_COUNT)
        if lowered not in functions.ARITY:
            return Call(name, tuple(self.expr(a, nested) for a in args), line)
        wanted = functions.ARITY[lowered]
        if len(args) != wanted:
            raise ClassAdSyntaxError(line, f"{name}() takes {wanted} arguments, got {len(args)}")
        if nested:
            raise ClassAdSyntaxError(line, f"{name}() may be used in the attributes of the "
                                           "top-level ClassAd only, not inside a nested record")
        rewritten = [self.expr(a, nested) for a in args]
        attribute = f"plus__call_{len(self.calls)}"
        names = tuple(f"{attribute}_arg_{i}" for i in range(wanted))
        self.added.extend(Attribute(n, a, line) for n, a in zip(names, rewritten, strict=True))
        self.calls.append(BuiltinCall(lowered, attribute, names))
        return Ref(attribute)


def _is_string(expr: Expr) -> bool:
    return isinstance(expr, Literal) and expr.text.startswith('"')


def _seconds(text: str, line: int) -> str:
    """The seconds of a relTime string, as HTCondor's own library reads it."""
    try:
        value = classad2.ExprTree(f"relTime({text})").eval()
    except classad2.ClassAdException:
        value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ClassAdSyntaxError(line, f"relTime({text}) is not a time span; accepted: "
                                       'relTime("[days+]hh:mm:ss"), relTime("7d"), relTime(1800)')
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def references(expr: Expr) -> tuple[str, ...]:
    """Names ``expr`` may read, lower-cased, in order of appearance, erring
    on the side of more: selected names count too (``my.x``, ``parent.x``
    reach attribute x)."""
    found: dict[str, None] = {}

    def walk(e: Expr) -> None:
        match e:
            case Ref(name, _):
                found[name.lower()] = None
            case Call(name, args, _):
                if name.lower() in _IMPURE_FUNCTIONS:
                    found[IMPURE] = None
                for a in args:
                    walk(a)
            case Unary(_, operand):
                walk(operand)
            case Binary(_, left, right):
                walk(left)
                walk(right)
            case Conditional(test, yes, no):
                for part in (test, yes, no):
                    if part is not None:
                        walk(part)
            case Select(target, name):
                walk(target)
                found[name.lower()] = None
            case Index(target, index):
                walk(target)
                walk(index)
            case ListExpr(items):
                for i in items:
                    walk(i)
            case Record(attributes):
                for a in attributes:
                    walk(a.value)
    walk(expr)
    return tuple(found)


def _conjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, Binary) and expr.op == "&&":
        return _conjuncts(expr.left) + _conjuncts(expr.right)
    return [expr]


@dataclass(frozen=True)
class _Check:
    """One conjunct of PLUS_NODE_RESERVABLE, to say why a node was refused."""

    text: str
    tree: classad2.ExprTree
    shown: tuple[str, ...]


class Program:
    """A parsed, rewritten and analysed reservable.ad."""

    def __init__(self, text: str) -> None:
        record = parse_record(text)
        latest: dict[str, Attribute] = {}
        for attribute in record.attributes:
            earlier = latest.get(attribute.name.lower())
            if earlier is not None:
                log.warning("line %d: %s redefines line %d; the last definition counts, as in "
                            "HTCondor", attribute.line, attribute.name, earlier.line)
            latest[attribute.name.lower()] = attribute
        if RESERVABLE.lower() not in latest:
            raise ClassAdError(f"{RESERVABLE} is not defined: it is the attribute that says "
                               "whether a node is reservable")
        rewriter = _Rewriter()
        own = [Attribute(a.name, rewriter.expr(a.value, False), a.line) for a in latest.values()]
        self.calls = tuple(rewriter.calls)
        self.lists_used = frozenset(rewriter.lists_used)
        attributes = own + rewriter.added
        read = {name for a in attributes for name in references(a.value)}
        self.counts_allocated = ALLOCATED_COUNT in read
        self.reads_idle_time = "idletime" in read
        self.ad = _library_ad(attributes)
        self.refs: dict[str, classad2.ExprTree] = {}
        depends = {a.name.lower(): set(references(a.value)) for a in attributes}
        for call in self.calls:
            depends[call.attribute] = set(call.arguments)
        self.per_node = _reaching(depends, _PER_NODE_ROOTS)
        self.reservable_per_node = RESERVABLE.lower() in self.per_node
        self.approval = latest.get(APPROVAL.lower())
        if APPROVAL.lower() in self.per_node:
            raise ClassAdSyntaxError(self.approval.line, f"{APPROVAL} is asked once per request: "
                                     f"it may not read {CANDIDATE} or {ALLOCATED}")
        self.node_calls = tuple(c for c in self.calls if c.attribute in self.per_node)
        self.request_calls = tuple(c for c in self.calls if c.attribute not in self.per_node)
        call_names = {c.attribute for c in self.calls}
        frontier = {name for per_node in self.per_node for name in depends.get(per_node, ())
                    if name in depends and name not in self.per_node and name not in call_names}
        self.frontier = {name: self.ad.lookup(name) for name in sorted(frontier)}
        self.reltime_tests = {name: classad2.ExprTree(f"isReltime({quoted_name(name)})")
                              for name in self.frontier}
        user_names = {a.name.lower(): a.name for a in own}
        original = latest[RESERVABLE.lower()].value
        rewritten = next(a.value for a in own if a.name.lower() == RESERVABLE.lower())
        self.checks = tuple(
            _Check(unparse(o), classad2.ExprTree(unparse(r)),
                   tuple(user_names[n] for n in references(o) if n in user_names))
            for o, r in zip(_conjuncts(original), _conjuncts(rewritten), strict=True))

    def value(self, name: str) -> Any:
        """The attribute's value in the ad; a compiled reference evaluates
        five times faster than ``ClassAd.eval(name)``."""
        ref = self.refs.get(name)
        if ref is None:
            ref = self.refs[name] = classad2.ExprTree(quoted_name(name))
        return ref.eval(scope=self.ad)

    def evaluation(self, owner: str, start: int, end: int, context: PolicyContext,
                   node_ads: NodeAds, nodes: int = 0) -> "Evaluation":
        return Evaluation(self, owner, start, end, context, node_ads, nodes)


def _library_ad(attributes: list[Attribute]) -> classad2.ClassAd:
    """The ClassAd HTCondor's library builds from the rewritten attributes;
    should it refuse what this reader accepted, the line of the culprit."""
    try:
        return classad2.ClassAd(unparse(Record(tuple(attributes))))
    except classad2.ClassAdException as exc:
        for attribute in attributes:
            try:
                classad2.ExprTree(unparse(attribute.value))
            except classad2.ClassAdException:
                raise ClassAdSyntaxError(attribute.line, f"HTCondor's ClassAd library cannot read "
                                                         f"the value of {attribute.name}") from None
        raise ClassAdError(f"HTCondor's ClassAd library cannot read the file: {exc}") from None


def _reaching(depends: dict[str, set[str]], roots: Iterable[str]) -> set[str]:
    """The attributes that read, directly or not, one of ``roots``."""
    reached = set(roots)
    changed = True
    while changed:
        changed = False
        for name, uses in depends.items():
            if name not in reached and uses & reached:
                reached.add(name)
                changed = True
    return reached - set(roots)


class Evaluation:
    """PLUS_NODE_RESERVABLE for the nodes of one request. The program's ad
    is set up for this request when made; evaluate one request at a time."""

    def __init__(self, program: Program, owner: str, start: int, end: int,
                 context: PolicyContext, node_ads: NodeAds, nodes: int = 0) -> None:
        self.program = program
        self.context = context
        self.node_ads = node_ads
        ad = program.ad
        for name, expr in program.frontier.items():
            ad[name] = expr
        ad[OWNER] = owner
        ad[START] = classad2.ExprTree(f"absTime({start})")
        ad[END] = classad2.ExprTree(f"absTime({end})")
        ad[NODES] = nodes
        ad[NOW] = context.now
        ad[ALL_COUNT] = len(context.all_nodes)
        if ALL.lower() in program.lists_used:
            ad[ALL] = [node_ads.ad(n, context.now) for n in context.all_nodes]
        self.builtins = {"linear": functions.linear, "quadratic": functions.quadratic,
                         "plus_rsvutil": functions.rsvutil(context)}
        self._run(program.request_calls)
        for name in program.frontier:
            value = _as_value(program, name)
            if value is not None:
                ad[name] = value
        self.verdict: str | None = None
        if not program.reservable_per_node:
            self.verdict = self._judge()

    def _run(self, calls: Iterable[BuiltinCall]) -> None:
        ad = self.program.ad
        for call in calls:
            result = self.builtins[call.name](*(self.program.value(a) for a in call.arguments))
            ad[call.attribute] = classad2.ExprTree("error") if result is None else result

    def approval(self) -> str | None:
        """Why a manager must approve the request (PLUS_APPROVAL_REQUIRED
        true, or a string saying why), or None."""
        attribute = self.program.approval
        if attribute is None:
            return None
        value = self.program.value(APPROVAL)
        if isinstance(value, str):
            return value or None
        return f"{APPROVAL} = {unparse(attribute.value)} is true" if value is True else None

    def refusal(self, node: Node, allocated: tuple[Node, ...]) -> str | None:
        """None if ``node`` is reservable after ``allocated``, else why not."""
        program = self.program
        if not program.reservable_per_node:
            return self.verdict
        ad = program.ad
        ad[CANDIDATE] = self.node_ads.ad(node, self.context.now if program.reads_idle_time else None)
        if program.counts_allocated:
            ad[ALLOCATED_COUNT] = len(allocated)
        if ALLOCATED.lower() in program.lists_used:
            ad[ALLOCATED] = [self.node_ads.ad(n, self.context.now) for n in allocated]
        self._run(program.node_calls)
        return self._judge()

    def _judge(self) -> str | None:
        """None if PLUS_NODE_RESERVABLE is true; else the first conjunct
        that is not, with the values of the file's attributes it reads."""
        ad = self.program.ad
        verdict = self.program.value(RESERVABLE)
        if verdict is True:
            return None
        checks = self.program.checks
        if len(checks) == 1:
            check = checks[0]
            reason = f"{RESERVABLE} = {check.text} is {show(verdict)}"
        else:
            failed = ((c, c.tree.eval(scope=ad)) for c in checks)
            check, value = next(((c, v) for c, v in failed if v is not True), (checks[-1], verdict))
            reason = f"{RESERVABLE} is {show(verdict)}: {check.text} is {show(value)}"
        if check.shown:
            reason += " (" + ", ".join(f"{name} = {show(self.program.value(name))}"
                                       for name in check.shown[:_MAX_SHOWN]) + ")"
        return reason


def _as_value(program: Program, name: str) -> Any:
    """The attribute's value for this request, ready to be set in its
    place, or None to keep the expression (lists and records)."""
    value = program.value(name)
    if isinstance(value, bool) or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        is_reltime = program.reltime_tests[name].eval(scope=program.ad) is True
        return classad2.ExprTree(f"relTime({value!r})") if is_reltime else value
    if isinstance(value, dt.datetime):
        return classad2.ExprTree(f"absTime({value.timestamp()!r})")
    if isinstance(value, classad2.Value):
        return classad2.ExprTree("error" if value == classad2.Value.Error else "undefined")
    return None


def show(value: Any) -> str:
    """A value as a message shows it: ClassAd's spelling, short."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, classad2.Value):
        return value.name.lower()
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, list):
        text = "{" + ", ".join(show(v) for v in value) + "}"
    else:
        text = str(value).strip()
    return text if len(text) <= 60 else text[:57] + "..."

