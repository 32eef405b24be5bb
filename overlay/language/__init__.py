"""The language: ARs, requests, times and the bounds on what users send."""
