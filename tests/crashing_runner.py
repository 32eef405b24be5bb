"""A runner that stops after a budget of commands: a daemon killed between
any two of a backend's commands, for the backends' convergence tests."""

from __future__ import annotations

from overlay.kit.remote import CommandError, LocalRunner


class CrashingRunner(LocalRunner):
    """Runs ``budget`` commands, then fails every one: a daemon killed there."""

    def __init__(self, env, budget: int) -> None:
        super().__init__(env)
        self.budget = budget

    def run(self, argv, **kwargs):
        if self.budget <= 0:
            raise CommandError("local: simulated crash")
        self.budget -= 1
        return super().run(argv, **kwargs)
