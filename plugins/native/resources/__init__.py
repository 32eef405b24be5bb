"""Resources and matching: the cluster file (cluster), complex attributes
(complexes), matching requests to global, host and queue (matching), and
the cluster's time x resource model a pass books on (timeline)."""
