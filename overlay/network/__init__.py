"""The network face: the HTTP API, tokens, the identity provider, ResKeys, seed 003's words."""
