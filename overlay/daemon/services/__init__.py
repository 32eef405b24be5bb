"""The daemon's operations, by family, as the socket serves them: each
module contributes its ``OPERATIONS`` (wire name -> function) to the
dispatch table of ``service.Service``, and the HTTP API's routers
(overlay/network/http/routes) mirror the families.

- ``reservations``: reserve, modify, cancel, destroy, commit, abort, status, availnodes
- ``ggf``: seed 003's verbs (query, resquery, setres, resqandset)
- ``claims``: what a ResKey's holder does as the AR's owner
- ``identities``: who am I, bearer tokens and their revocation
- ``web``: the calendar page's sign-in
- ``reports``: the calendar, usage and accounting
- ``nodes``: every node with its state, slots, attributes and ARs now
- ``jobs``: the batch system's jobs as the backend lists them, and deleting one
- ``control``: stopping the daemon
"""
