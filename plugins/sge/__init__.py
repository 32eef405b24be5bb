"""Grid Engine backend: PluS queue-based mode (seed 004, 3.1)."""
