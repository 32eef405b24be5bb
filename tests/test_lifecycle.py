"""overlay/lifecycle.py: stopping while a reconcile pass runs."""

from __future__ import annotations

import threading
import time

from overlay.lifecycle import Lifecycle


class SlowLifecycle(Lifecycle):
    """A lifecycle whose second pass waits until the test lets it go."""

    def __init__(self) -> None:
        super().__init__(manager=None, interval=1)
        self.passes = 0
        self.inside = threading.Event()
        self.release = threading.Event()

    def tick(self):
        self.passes += 1
        if self.passes == 2:
            self.inside.set()
            self.release.wait(10)
        return int(time.time()) + 3600

    def next_due(self):
        return int(time.time()) + 3600


def test_stop_during_a_pass_waits_for_it_and_returns():
    """APScheduler's shutdown holds the lock add_job needs: a pass that aims
    the next date job after shutdown began would wait for ever."""
    lifecycle = SlowLifecycle()
    lifecycle.start()
    assert lifecycle.inside.wait(5), "the periodic pass did not run"
    stopper = threading.Thread(target=lifecycle.stop)
    stopper.start()
    time.sleep(0.2)                      # shutdown is now waiting for the pass
    lifecycle.release.set()
    stopper.join(5)
    assert not stopper.is_alive(), "stop() deadlocked with the pass it waited for"
