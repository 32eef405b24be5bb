"""The Slurm backend: each AR is a Slurm reservation R<id> (overlay_slurm.backend)."""
