"""Entry point of the Slurm backend: registers it like any third-party plugin."""

from __future__ import annotations

from overlay.api.plugin import hookimpl
from overlay_slurm.backend import SlurmBackend


@hookimpl
def plus_backends():
    return {"slurm": SlurmBackend.from_config}
