"""What the commands of seed 003's verbs share: their positional arguments
in the seed's order, where an optional one sits between required ones
(told apart by form: a ResAccess is R<id>[,R<id>...]), and the way to the
site: the local socket, or another site's HTTP API (--site URL --token
FILE), the latter through the standard library only."""

from __future__ import annotations

import time

from overlay.cli import common
from overlay.language.limits import shown
from overlay.language.request import RequestError
from overlay.language.timespec import TimeSpecError
from overlay.network import ggf
from overlay.wire.protocol import EXIT_UNREACHABLE, EXIT_USAGE

TYPE_CHECKING = False       # typing costs a command 3 ms to import
if TYPE_CHECKING:
    from typing import Callable, NoReturn


def parser(prog: str, description: str) -> common.Parser:
    """A verb's command: its words, then where to ask and how to print."""
    p = common.Parser(prog, description)
    p.add_argument("words", nargs="+", metavar="argument")
    p.add_argument("--site", metavar="URL", help="another site's HTTP API "
                        "(https://host:6830); default: this host's plus_scheduler")
    p.add_argument("--token", metavar="FILE", help="with --site: a file holding the bearer "
                        "token (plus_token's output at that site)")
    p.add_argument("--json", action="store_true", help="print JSON, for scripts")
    return p


OPTIONAL = ("TimeSpec", "ResAccess")
"""The words the seed puts in braces."""


def split(prog: str, words: list[str], middle: tuple[str, ...]) -> dict:
    """``UserID TimeNeeded middle... ResourceList``: the words by name;
    ``middle`` names those between in order, of which OPTIONAL ones may be
    left out."""
    required = [name for name in middle if name not in OPTIONAL]
    if not 3 + len(required) <= len(words) <= 3 + len(middle):
        shape = " ".join("{" + name + "}" if name in OPTIONAL else name for name in middle)
        fail_usage(prog, f"expected UserID TimeNeeded {shape} ResourceList, got {len(words)} "
                         "argument(s)")
    named = {"UserID": words[0], "TimeNeeded": words[1], "ResourceList": words[-1]}
    for word in words[2:-1]:
        kind = "ResAccess" if "ResAccess" in middle and _is_res_access(word) else next(
            (name for name in middle if name != "ResAccess" and name not in named), "ResAccess")
        if kind in named:
            fail_usage(prog, f"{kind} is given twice ('{shown(word)}')")
        named[kind] = word
    missing = [name for name in required if name not in named]
    if missing:
        fail_usage(prog, f"{missing[0]} is missing")
    return named


def _is_res_access(word: str) -> bool:
    return all(item[:1] in "Rr" and item[1:].isdigit() for item in word.split(","))


def fail_usage(prog: str, message: str) -> None:
    common.fail(prog, message, EXIT_USAGE)


def ask(prog: str, args, verb: str, named: dict, arguments: Callable[[dict, int], dict],
        answer: Callable[[dict], dict], on_refusal: Callable[[str, int], NoReturn] | None = None) -> dict:
    """The verb's answer in the seed's words: from another site's API with
    --site, else from this host's daemon, the words turned into its
    arguments by ``arguments`` and its reply into the answer by ``answer``
    (the functions the API uses too)."""
    if args.site:
        return remote(prog, args.site, args.token, verb, named, on_refusal)
    try:
        checked = arguments(named, int(time.time()))
    except (RequestError, TimeSpecError) as exc:
        fail_usage(prog, str(exc))
    return answer(common.call(prog, verb, checked, on_refusal=on_refusal,
                              acting_for=named["UserID"]))


def remote(prog: str, site: str, token_file: str | None, verb: str, body: dict,
           on_refusal: Callable[[str, int], NoReturn] | None = None) -> dict:
    """POST ``body`` to ``site``/ggf/``verb``; on refusal print its reason
    and exit with the command's status the site sent, or hand both to
    ``on_refusal``."""
    import json
    import urllib.error
    import urllib.request
    if not token_file:
        fail_usage(prog, "--site needs --token FILE (a token from plus_token at that site)")
    try:
        with open(token_file, encoding="utf-8") as handle:
            token = handle.read().strip()
    except OSError as exc:
        common.fail(prog, f"--token: cannot read {shown(token_file)} ({exc.strerror})", EXIT_USAGE)
    request = urllib.request.Request(
        site.rstrip("/") + f"/ggf/{verb}", data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        try:
            refusal = json.load(exc)
        except ValueError:
            refusal = {}
        message = f"{site}: {refusal.get('error') or exc.reason}"
        status = refusal.get("status") if isinstance(refusal.get("status"), int) else 1
        if on_refusal is not None:
            on_refusal(message, status)
        common.fail(prog, message, status)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        common.fail(prog, f"cannot reach {shown(site)}: {getattr(exc, 'reason', exc)}",
                    EXIT_UNREACHABLE)


def reserving(prog: str, args, verb: str, middle: tuple[str, ...],
              arguments: Callable[[dict, int], dict]) -> int:
    """SETRES and RESQANDSET: reserve, print SuccessOrNot and the rest of
    the seed's answer on one line (or --json). A site that refuses (no
    capacity, a policy, a limit) answers SuccessOrNot false with its reason
    as OtherInfo, and the command exits with the refusal's status; bad
    words are a usage error."""
    named = split(prog, args.words, middle)

    def refused(message: str, status: int) -> NoReturn:
        if status == EXIT_USAGE:
            fail_usage(prog, message)
        if args.json:
            common.print_json({"SuccessOrNot": False, "OtherInfo": message})
        else:
            print(f"false {message}")
        raise SystemExit(status)

    answer = ask(prog, args, verb, named, arguments,
                 lambda view: ggf.reservation_answer(verb, view), refused)
    if args.json:
        common.print_json(answer)
    else:
        print(" ".join(["true", *(str(answer[key]) for key in ("StartTime", "ResKey", "OtherInfo")
                                  if key in answer)]))
    return 0
