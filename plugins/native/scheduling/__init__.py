"""Scheduling: the master that keeps the jobs (scheduler), the pass that
starts, reserves and backfills them (dispatch), its settings (schedconf),
Grid Engine's priorities, and the MONITOR schedule file."""
