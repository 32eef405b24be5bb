"""Entry point of the TORQUE backend: registers it like any third-party plugin."""

from __future__ import annotations

from overlay.api.plugin import hookimpl
from overlay_torque.backend import TorqueBackend


@hookimpl
def plus_backends():
    return {"torque": TorqueBackend.from_config}
