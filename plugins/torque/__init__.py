"""TORQUE backend: a queue per AR, node properties, PluS's self-scheduling mode (seed 004, 3.2-3.3)."""
