"""Entry point of the Grid Engine backend: registers it like any third-party plugin."""

from __future__ import annotations

from overlay.api.plugin import hookimpl
from overlay_sge.backend import SgeBackend


@hookimpl
def plus_backends():
    return {"sge": SgeBackend.from_config}
