"""The native backend: a batch system of its own (Grid Engine's resource
model and scheduler: complexes, resource reservation, backfilling, ARs),
running jobs on this machine or on hosts over SSH, with its commands
(plus_qsub, plus_qstat, ...) and a trace simulator."""
