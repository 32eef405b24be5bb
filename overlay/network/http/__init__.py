"""The overlay's network face: an HTTP API served by a companion process
that plus_scheduler starts and stops, holding no secret and no privilege:
it forwards each request, with the caller's bearer token, to the daemon's
socket, where the token is checked and the operation runs as for the
commands."""
