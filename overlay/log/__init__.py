"""The daemon's log: where it goes, and rate limits on what clients can cause."""
