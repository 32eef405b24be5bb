"""Thin command-line clients; standard library only, so they start fast."""
