"""A batch system's commands as a backend calls them: through a Runner
(here or over SSH), from a directory of the site's choosing, bounded in
time, each failure raised as the backend's own error naming the command,
where it ran and what it answered, and a server that cannot be reached
said as such (its commands print their own words for it)."""

from __future__ import annotations

import re

from overlay.kit.remote import CommandError, Result, Runner


class BatchCommands:
    """What a backend's command wrapper shares (Grid Engine's, TORQUE's,
    Slurm's); a subclass names its ``error``, its ``server`` as messages
    call it, and the ``unreachable`` words of its commands."""

    error: type[Exception] = CommandError
    server = "the batch system"
    unreachable = re.compile(r"(?!)")
    #: Where the unreachable words are looked for: in the output of a failed
    #: command (False), or on standard error whatever the status (True: a
    #: command that exits 0 when its server refused, as TORQUE's pbsnodes).
    unreachable_on_stderr = False

    def __init__(self, runner: Runner, bin_dir: str = "", timeout: float = 60) -> None:
        self.runner = runner
        self.bin_dir = bin_dir.rstrip("/")
        self.timeout = timeout

    def run(self, argv: list[str], as_user: str | None = None, stdin: str | None = None) -> Result:
        """``argv`` (its command from ``bin_dir`` if set) as ``as_user``."""
        command = [f"{self.bin_dir}/{argv[0]}" if self.bin_dir else argv[0], *argv[1:]]
        try:
            result = self.runner.run(command, as_user=as_user, stdin=stdin, timeout=self.timeout)
        except CommandError as exc:
            raise self.error(str(exc)) from None
        said = result.stderr if self.unreachable_on_stderr else \
            (result.text if result.status != 0 else "")
        if self.unreachable.search(said):
            raise self.error(f"{self.server} unreachable ({self.runner.where}): "
                             f"{said.strip().splitlines()[-1]}")
        return result

    def checked(self, argv: list[str], as_user: str | None = None,
                stdin: str | None = None) -> Result:
        """As ``run``, and a non-zero status is the backend's error."""
        result = self.run(argv, as_user, stdin)
        if result.status != 0:
            raise self.error(f"{' '.join(argv)} failed ({result.status}) on "
                             f"{self.runner.where}: {result.text.strip()}")
        return result
