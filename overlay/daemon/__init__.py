"""plus_scheduler: its wiring, configuration, socket server and operations."""
