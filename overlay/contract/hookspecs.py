"""Every extension point of the overlay, in one file, one docstring each.

Plugins implement these with ``@overlay.contract.hookspecs.hookimpl`` and register
through the ``plus_overlay`` entry point group; built-in plugins do exactly
the same. Arguments are passed by keyword and a plugin may accept any
subset of them.
"""

from __future__ import annotations

import pluggy

PROJECT = "plus_overlay"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -- start-up -------------------------------------------------------------------

@hookspec
def plus_configure(config, plugin_manager):
    """plus_scheduler is starting with ``config`` (``overlay.daemon.config.Config``),
    or re-reading plus.yaml (SIGHUP) on a fresh ``plugin_manager`` that
    replaces the running one only if every plugin accepts its section.
    Read and check your section (``config.sections.get(name)``), raising
    ValueError with a message that names the key; register objects that
    implement further hooks with ``plugin_manager.register``. Return the
    names of the top-level sections you read: any other mapping that no
    backend claims is an error, so typos stop the daemon."""


@hookspec
def plus_unconfigure():
    """The objects registered by plus_configure were replaced (SIGHUP
    re-read plus.yaml): release what they hold, such as threads. Called
    on the replaced plugin manager, after the new one took over."""


# -- backends -----------------------------------------------------------------

@hookspec
def plus_backends():
    """Return a mapping of backend name to a factory ``f(config, options)``
    that builds an ``overlay.contract.backend.Backend`` (the backend interface:
    nodes, running jobs, prepare, activate, teardown, release, health).
    ``options`` is the configuration section named after the backend."""


@hookspec
def plus_client_operations(backend, ar_status):
    """Return a mapping of operation name to ``f(caller, args)`` for commands
    of your own: plus_scheduler serves them on its socket as it serves its
    own (``caller`` has the ``user``, ``groups``, ``uid`` and ``is_manager``
    the socket's peer credentials gave, ``args`` is the JSON object the
    client sent; the return value goes back as JSON). Refuse by raising
    ``ReservationError`` (exit status 1, or the subclass's) or
    ``RequestError`` (exit status 2), both in ``overlay.api.plugin``.
    ``backend`` is the running backend, ``ar_status(ar_id)`` the core's
    answer about an AR (plus_status -r: a list of Reservations): the
    native backend serves plus_qsub, plus_qstat and plus_qdel this way."""


# -- policy ---------------------------------------------------------------------

@hookspec
def plus_validate_request(request, owner, groups, operation, context):
    """Check a reservation request before any planning (limits, windows,
    quotas). Return None (or True) to accept, or a string saying why it is
    refused: the user reads "policy <your plugin's name>: <string>".

    ``request`` is an ``overlay.language.model.Request`` (start, end, duration, nodes,
    slots_per_node, users...); ``owner`` the user the AR belongs to and
    ``groups`` their group names, primary first; ``operation`` "reserve" or
    "modify"; ``context`` an ``overlay.contract.policy.PolicyContext``: ``now``,
    ``all_nodes``, ``reservations`` (what counts as use: the ARs there are,
    a cancelled one as far as it ran, and those that ended within
    ``usage_history``; for a modify, not the AR being changed),
    ``usage(owner, start, end)`` (PluS's plus_rsvutil over them: count,
    seconds, node-hours) and ``cache``, a dict that lives for this one
    request."""


@hookspec
def plus_approval_needed(request, owner, groups, operation, context):
    """May this request, which every plus_validate_request accepted, be
    granted only once a manager approves it (large ARs, long lead times,
    beyond a quota)? Return None (or False) if not, or a string saying
    why it must wait: the AR is then held in state h, its nodes kept from
    other ARs and nothing done on the batch system, until plus_approve,
    plus_deny or approval_timeout decides; the managers read "policy
    <your plugin's name>: <string>". A manager's own request, and a
    manager's change of any AR, is never held. The arguments are as for
    plus_validate_request."""


@hookspec
def plus_node_reservable(node, request, owner, groups, allocated, context):
    """PluS's PLUS_NODE_RESERVABLE: may ``owner`` reserve ``node`` for
    ``request``? Called for each free candidate in allocation order, with the
    nodes ``allocated`` so far to this request. ``node`` is an
    ``overlay.language.model.Node``: name, alive, load, running_jobs, idle_since
    (epoch seconds, 0 if busy or unknown), slots, memory_mb, ncpus, arch, os,
    properties. ``groups`` and ``context`` are as for
    plus_validate_request; keep per-request figures in ``context.cache``,
    this is called up to once per node. Return False or a string (why) to
    refuse, True or None to allow."""


@hookspec(firstresult=True)
def plus_node_order(nodes, request, owner, groups, context):
    """Return the candidate nodes in the order they should be allocated
    (a subset drops the others), or None to keep the configured NodeSortKey
    order. The first answer wins; the arguments are as for
    plus_node_reservable."""


# -- lifecycle events -----------------------------------------------------------
# Each has ``advice``, an ``overlay.contract.advice.Advice``: the site's zone
# and how jobs are submitted into the AR, for what a message tells its users.
# These run under the use cases' lock, once, on the daemon that made the
# change (the leader, for what the clock causes): queue work, never wait.

@hookspec
def plus_reservation_granted(reservation, advice):
    """An AR was granted (committed, for -T)."""


@hookspec
def plus_reservation_starting_soon(reservation, lead, advice):
    """An AR starts in ``lead`` seconds: one of its notice leads before its
    start (``notify_start``, else plus.yaml's ``notice: start``) came."""


@hookspec
def plus_reservation_nodes_busy(reservation, lead, jobs, advice):
    """An AR starts in ``lead`` seconds (one of its clear-notice leads) and
    ``jobs`` still run on its nodes past its start: each a mapping of
    ``id``, ``owner``, ``nodes`` (the AR's it runs on) and ``limit_end``
    (when its run time limit ends, None for none). At the start the
    backend's conflict policy acts on those still there."""


@hookspec
def plus_reservation_started(reservation, advice):
    """An AR's window opened."""


@hookspec
def plus_reservation_ending_soon(reservation, lead, advice):
    """An AR ends in ``lead`` seconds: one of its notice leads before its
    end (``notify_end``, else plus.yaml's ``notice: end``) came."""


@hookspec
def plus_reservation_ended(reservation, advice):
    """An AR's window closed."""


@hookspec
def plus_reservation_released(reservation, why, advice):
    """An open AR ended early, freeing its nodes: idle for its idle_release,
    its jobs done (--release-when-done), or ended by its owner; ``why``
    says which."""


@hookspec
def plus_reservation_cancelled(reservation, advice):
    """An AR was cancelled (plus_cancel) or destroyed (plus_destroy)."""


@hookspec
def plus_reservation_error(reservation, reason, advice):
    """An AR entered W or E (``reason`` says why) or, with reason None, left it."""


@hookspec
def plus_reservation_approval_requested(reservation, reason, managers, advice):
    """An AR waits in state h for a manager's approval (``reason``: the
    policy's answer); ``managers`` are plus.yaml's, whom to ask."""


@hookspec
def plus_reservation_approved(reservation, approver, advice):
    """A manager (``approver``) approved an AR that waited in state h: it
    is granted now (plus_reservation_granted follows)."""


@hookspec
def plus_reservation_denied(reservation, reason, advice):
    """An AR that waited in state h will not be granted: a manager denied
    it, or no one decided within approval_timeout (``reason`` says which,
    and why)."""


@hookspec
def plus_reservation_repaired(reservation, replaced, advice):
    """An AR whose nodes went down got free ones in their place and left W
    or E (self-repair): ``replaced`` maps each node replaced to its
    replacement."""


@hookspec
def plus_reservation_occurrence_refused(reservation, series, reason, advice):
    """An occurrence of a recurring series (plus_reserve --repeat) could
    not be granted: ``reservation`` is the AR it would have been (id 0,
    its window and request), ``series`` the series' id, ``reason`` why
    (no nodes free, a policy's refusal)."""
