"""Persistence: the store of ARs, and the lease that keeps one daemon per store."""
