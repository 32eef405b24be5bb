"""The native backend: the built-in cluster (and, later, batch scheduler)."""
