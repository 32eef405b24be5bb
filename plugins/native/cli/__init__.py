"""The native batch system's commands (plus_qsub, plus_qstat, plus_qdel, plus_qacct, ...): thin clients, standard library only."""
