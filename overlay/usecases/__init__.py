"""The use cases: what the commands ask of ARs, nodes' activity, and time's passing."""
