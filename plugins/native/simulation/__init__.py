"""Simulation: replaying a workload trace (SWF) through the scheduling pass
in virtual time (replay, swf, plus_simulate), and hosts that run jobs in
virtual time for benchmarks and tests (simhosts)."""
