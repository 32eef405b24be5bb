"""The ClassAd policy: PluS's PLUS_NODE_RESERVABLE from a reservable.ad file,
and, if the file defines it, PLUS_APPROVAL_REQUIRED (once per request).

The file is read when the daemon starts (a mistake stops it, with the line)
and read again whenever it changes; a broken edit is logged and the last
good version stays in force, so a typo never opens or closes the cluster.
"""

from __future__ import annotations

import logging
import os
import threading

from overlay.api.plugin import Node, PolicyContext, Request, hookimpl
from overlay_classad.nodes import NodeAds
from overlay_classad.program import ClassAdError, Evaluation, Program

log = logging.getLogger("plus.classad")


def load_program(path: str) -> Program:
    """The file's program; ClassAdError (the path and line first) if it cannot serve."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ClassAdError(f"cannot read the ClassAd policy {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ClassAdError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        return Program(text)
    except ValueError as exc:
        raise ClassAdError(f"{path}: {exc}") from None


class ClassAdPolicy:
    """Implements plus_node_reservable with the file's PLUS_NODE_RESERVABLE."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.stamp = self._stamp()
        self.program = load_program(path)
        self.node_ads = NodeAds()

    def _stamp(self) -> tuple[int, int] | None:
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return (info.st_mtime_ns, info.st_size)

    def _reload_if_changed(self) -> None:
        stamp = self._stamp()
        if stamp == self.stamp:
            return
        self.stamp = stamp
        try:
            self.program = load_program(self.path)
        except ClassAdError as exc:
            log.error("keeping the previous ClassAd policy: %s", exc)
            return
        log.info("ClassAd policy %s read again", self.path)

    def _evaluation(self, request: Request, owner: str, context: PolicyContext) -> Evaluation:
        """The request's evaluation, made once (under ``lock``)."""
        evaluation: Evaluation | None = context.cache.get(self)
        if evaluation is None:
            self._reload_if_changed()
            evaluation = self.program.evaluation(owner, request.start, request.end, context,
                                                 self.node_ads, request.nodes)
            context.cache[self] = evaluation
        return evaluation

    @hookimpl
    def plus_approval_needed(self, request: Request, owner: str,
                             context: PolicyContext) -> str | None:
        with self.lock:
            return self._evaluation(request, owner, context).approval()

    @hookimpl
    def plus_node_reservable(self, node: Node, request: Request, owner: str,
                             allocated: tuple[Node, ...], context: PolicyContext) -> str | None:
        with self.lock:
            return self._evaluation(request, owner, context).refusal(node, allocated)
