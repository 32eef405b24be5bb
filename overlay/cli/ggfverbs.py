"""What the commands of seed 003's verbs share: their positional arguments
in the seed's order, where an optional one sits between required ones
(told apart by form: a ResAccess is R<id>[,R<id>...]), and the way to the
site: the local socket, or another site's HTTP API (--site URL --token
FILE), the latter through the standard library only."""

from __future__ import annotations

from overlay.cli import common
from overlay.limits import shown
from overlay.protocol import EXIT_UNREACHABLE, EXIT_USAGE


def add_site_options(parser: common.Parser) -> None:
    parser.add_argument("--site", metavar="URL", help="another site's HTTP API "
                        "(https://host:6830); default: this host's plus_scheduler")
    parser.add_argument("--token", metavar="FILE", help="with --site: a file holding the bearer "
                        "token (plus_token's output at that site)")
    parser.add_argument("--json", action="store_true", help="print JSON, for scripts")


def split(prog: str, words: list[str], optional: tuple[str, ...]) -> dict:
    """``UserID TimeNeeded {optional...} ResourceList``: the words by name;
    ``optional`` names the optional ones in order ("TimeSpec", "ResAccess")."""
    if len(words) < 3 or len(words) > 3 + len(optional):
        fail_usage(prog, f"expected UserID TimeNeeded {' '.join('{' + o + '}' for o in optional)} "
                         f"ResourceList, got {len(words)} argument(s)")
    named = {"UserID": words[0], "TimeNeeded": words[1], "ResourceList": words[-1]}
    for word in words[2:-1]:
        kind = "ResAccess" if "ResAccess" in optional and _is_res_access(word) else optional[0]
        if kind in named:
            fail_usage(prog, f"{kind} is given twice ('{shown(word)}')")
        named[kind] = word
    return named


def _is_res_access(word: str) -> bool:
    return all(item[:1] in "Rr" and item[1:].isdigit() for item in word.split(","))


def fail_usage(prog: str, message: str) -> None:
    common.fail(prog, message, EXIT_USAGE)


def remote(prog: str, site: str, token_file: str | None, verb: str, body: dict) -> dict:
    """POST ``body`` to ``site``/ggf/``verb``; on refusal print its reason
    and exit with the command's status the site sent."""
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
        common.fail(prog, f"{site}: {refusal.get('error') or exc.reason}",
                    int(refusal.get("status", 1)) if isinstance(refusal.get("status"), int) else 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        common.fail(prog, f"cannot reach {shown(site)}: {getattr(exc, 'reason', exc)}",
                    EXIT_UNREACHABLE)
