"""Placement: which nodes or slots an AR gets, in one room: the match
policies, and the planner they ask in a module of its own, as flux-sched
keeps its match policies apart from its planner.

- ``placer.py``: what the use cases ask (``Placer.nodes`` for PluS's node
  ARs, ``Placer.slots`` for qrsub's slot ARs), and the seam it hands a
  match policy.
- ``base.py``: what a match policy is given (``NodeQuestion``) and returns
  (allocations, or NoCapacity saying why not).
- ``first_fit.py``: the policy the site runs: the first nodes that fit, in
  NodeSortKey order, an AR's own nodes first.
- ``factory.py``: match policies by name (flux-sched's
  ``dfu_match_policy_factory``): where maintenance-aware and pack or spread
  placement will go.
- ``eligible.py``: the nodes that may hold a request (live, of the
  reservable queues, their static attributes), in NodeSortKey order.
- ``nesting.py``: ARs placed inside others (seed 003's ResAccess).
- ``planner.py``: the time x resource model the room asks (a ``Planner``
  per resource, a ``MultiPlanner`` over the nodes, after flux-sched's
  planner and planner_multi).
- ``ordering.py``: NodeSortKey and JobSortKey, which the native and TORQUE
  schedulers share.

Outside the room, on purpose: the store's capacity re-check
(``Store._check_capacity`` and ``_check_inside``), which runs under the
database's lock so that two daemons never grant the same slots; and the
native cluster's slot placement (``overlay_native.arplace``), plugin code
the room reaches through ``Backend.place_slots``.
"""
