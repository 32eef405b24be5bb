"""Entry point of the native backend: registers it like any third-party plugin."""

from __future__ import annotations

from overlay.hookspecs import hookimpl
from overlay_native.backend import NativeBackend


@hookimpl
def plus_backends():
    return {"native": NativeBackend.from_config}
