"""The state a fresh double starts from: the recorded server at step 01 (queue
batch, the server settings of 'print server', nodes free with no properties)."""

from __future__ import annotations


def server_settings(server: str, next_job_number: int) -> dict[str, str]:
    """'print server' of step 01, in its order, for a server named ``server``."""
    return {
        "scheduling": "True",
        "acl_hosts": server,
        "managers": f"root@{server}",
        "operators": f"root@{server}",
        "default_queue": "batch",
        "log_events": "2047",
        "mail_from": "adm",
        "scheduler_iteration": "30",
        "node_check_rate": "150",
        "tcp_timeout": "300",
        "job_stat_rate": "300",
        "poll_jobs": "True",
        "down_on_error": "True",
        "mom_job_sync": "True",
        "keep_completed": "60",
        "next_job_number": str(next_job_number),
        "moab_array_compatible": "True",
        "nppcu": "1",
        "timeout_for_job_delete": "120",
        "timeout_for_job_requeue": "120",
        "note_append_on_error": "True",
    }


def node(np: int, now: float, reported: bool) -> dict:
    """A node record; ``reported`` means its mom has already reported in
    (a node present at start), otherwise it was just created by qmgr."""
    return {
        "np": np,
        "properties": [],
        "note": "",
        "offline": False,
        "mom_up": reported,
        "created_at": None if reported else now,
        "report_at": None,
        "status_time": now - 31 if reported else None,
        "status_jobs": "",
        "bugged": False,
    }


def state(server: str, nodes: tuple[tuple[str, int], ...], now: float, *,
          next_job_number: int, next_queue_rank: int, mom_report_delay: float,
          purge_delay: float, first_cycle_after: float | None, epilogue: float = 0.0) -> dict:
    """The whole initial state: the recorded server with ``nodes`` free."""
    settings = server_settings(server, next_job_number)
    return {
        "server_name": server,
        "offset": 0.0,
        "settings": {"mom_report_delay": mom_report_delay, "purge_delay": purge_delay,
                     "epilogue": epilogue},
        "server": settings,
        "next_queue_rank": next_queue_rank,
        "next_session": 3052,
        "next_cycle": now + (first_cycle_after if first_cycle_after is not None
                             else int(settings["scheduler_iteration"])),
        "queues": {
            "batch": {
                "attrs": {
                    "queue_type": "Execution",
                    "resources_default.nodes": "1",
                    "resources_default.walltime": "01:00:00",
                    "enabled": "True",
                    "started": "True",
                },
                "mtime": now - 720,
                "assigned_seen": True,
            },
        },
        "nodes": {name: node(np, now, reported=True) for name, np in nodes},
        "jobs": {},
        "faults": [],
    }
