"""After each TORQUE test, what it left on the server goes, by TORQUE's own
commands (as on a real, shared server: a test that stops the daemon while
its AR is live leaves the AR's queue and node property behind, and the next
test would meet them): the AR queues and their jobs, the AR properties on
the nodes, the nodes our notes took offline, and every job still there."""

from __future__ import annotations

import re
import time

from overlay.kit.remote import LocalRunner
from overlay_torque.torque import QueueBusy, Torque

AR_NAME = re.compile(r"R\d+")
OUR_NOTE = re.compile(r"(reserved for R\d+|R\d+ active)")


def scrub(bin_dir: str, keep_property: str = "plus") -> None:
    torque = Torque(LocalRunner({}), bin_dir)
    torque.delete_jobs(job.id for job in torque.jobs() if job.state != "C")
    for queue in torque.queues():
        if AR_NAME.fullmatch(queue):
            _delete_queue(torque, queue)
    for node in torque.nodes():
        ours = [prop for prop in node.properties if AR_NAME.fullmatch(prop)]
        if ours and set(node.properties) <= set(ours):
            torque.add_property(node.name, keep_property)
        for prop in ours:
            torque.remove_property(node.name, prop)
        if OUR_NOTE.fullmatch(node.note):
            torque.clear_offline([node.name])


def leftovers(bin_dir: str) -> list[str]:
    """What an AR could have left: its queues and node properties."""
    torque = Torque(LocalRunner({}), bin_dir)
    return sorted([f"queue {queue}" for queue in torque.queues() if AR_NAME.fullmatch(queue)]
                  + [f"property {prop} on {node.name}" for node in torque.nodes()
                     for prop in node.properties if AR_NAME.fullmatch(prop)])


def _delete_queue(torque: Torque, queue: str) -> None:
    """TORQUE keeps a deleted job a moment: retry while the queue is busy."""
    deadline = time.monotonic() + 15
    while True:
        try:
            torque.delete_queue(queue)
            return
        except QueueBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
            torque.delete_jobs(torque.select(queue))
