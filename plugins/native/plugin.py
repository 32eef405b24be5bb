"""Entry point of the native backend: registers it, and the commands of its
batch system, like any third-party plugin."""

from __future__ import annotations

from overlay.api.plugin import hookimpl
from overlay_native.backend import NativeBackend


@hookimpl
def plus_backends():
    return {"native": NativeBackend.from_config}


@hookimpl
def plus_client_operations(backend, ar_status):
    return backend.operations(ar_status) if isinstance(backend, NativeBackend) else {}
