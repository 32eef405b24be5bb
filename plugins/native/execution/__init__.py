"""Execution: running jobs for real on this host or over SSH (runners), the
shepherd that runs one job on its host, and the execution hosts kept in
step with the cluster file (hosts)."""
