"""What a plugin may use inside plus_scheduler (see overlay.api)."""

from overlay.contract import settings
from overlay.contract.advice import Advice
from overlay.contract.backend import Backend, Holding, Inventory, Job, JobBar, ShownJob
from overlay.contract.batchjob import batch_job, qsub_words
from overlay.contract.hookspecs import hookimpl
from overlay.contract.policy import PolicyContext
from overlay.contract.settings import FLAG, Check, choice, read_section
from overlay.daemon.config import read_yaml
from overlay.events.jobs import (
                            JobEventWriter,
                            JobTransition,
                            create_job_event_tables,
                            end_fields,
                            job_fields,
                            put_job_events,
)
from overlay.kit import queuekit
from overlay.kit.batchcommands import BatchCommands
from overlay.kit.queuekit import OPEN_STATES, QueueBackend, Recent, busy_hosts, kept_shut
from overlay.kit.remote import (
                            USER_PATTERN,
                            CommandError,
                            LocalRunner,
                            Result,
                            Runner,
                            SshSettings,
                            parse_ssh,
                            runner_from_options,
)
from overlay.kit.statefile import save as save_state
from overlay.kit.users import DEFAULT_UID_MIN, groups_of, system_account, with_members
from overlay.language.limits import (
                            HORIZON,
                            MAX_ARGUMENT,
                            MAX_COUNT,
                            MAX_ENVIRONMENT,
                            MAX_ITEMS,
                            MAX_NAME,
                            MAX_PATTERN,
                            MAX_SCRIPT,
                            MAX_WORDS,
                            shown,
)
from overlay.language.matching import wildcard_match
from overlay.language.model import (
                            Allocation,
                            InvalidRequest,
                            NoCapacity,
                            Node,
                            PermissionDenied,
                            Request,
                            Reservation,
                            ReservationError,
                            State,
)
from overlay.language.request import (
                            DEFAULT_ACCOUNT,
                            MAX_SLOTS,
                            RequestError,
                            format_pe_range,
                            parse_memory_mb,
                            valid_name,
)
from overlay.language.timespec import DURATION_FORMS, TimeSpecError, format_ctime, parse_duration
from overlay.persistence.feed import ChangeFeed
from overlay.persistence.outbox import Outbox, create_outbox_tables
from overlay.persistence.outbox import add_within as add_reports_within
from overlay.persistence.store import (
                            REPORTING,
                            StoreError,
                            StoreUnavailable,
                            advance_counter,
                            channel_of,
                            create_tables,
                            database_errors,
                            make_engine,
                            next_id,
)
from overlay.placement.ordering import (
                            DEFAULT_JOB_ORDER,
                            ORDER_SETTINGS,
                            JobOrder,
                            OrderError,
                            order_jobs,
                            read_orders,
                            sort_nodes,
)
from overlay.placement.planner import INFINITY, Planner
from overlay.reporting.accounting import record_line
from overlay.reporting.drain import ReportingDrain

__all__ = [
    "Advice", "queuekit", "BatchCommands", "settings", "add_reports_within", "create_outbox_tables", "Outbox", "REPORTING",
    "ReportingDrain", "record_line", "Backend", "Holding", "Inventory", "Job",
    "JobBar", "ShownJob",
    "batch_job", "qsub_words", "read_yaml", "hookimpl", "HORIZON", "MAX_ARGUMENT", "MAX_COUNT",
    "MAX_ENVIRONMENT", "MAX_ITEMS", "MAX_NAME", "MAX_PATTERN", "MAX_SCRIPT", "MAX_WORDS", "shown",
    "wildcard_match", "Allocation", "InvalidRequest", "NoCapacity", "Node", "Request",
    "Reservation", "ReservationError", "State", "DEFAULT_JOB_ORDER", "ORDER_SETTINGS", "JobOrder",
    "OrderError", "order_jobs", "read_orders", "sort_nodes", "INFINITY", "Planner",
    "PolicyContext", "OPEN_STATES", "QueueBackend", "Recent", "busy_hosts", "kept_shut", "USER_PATTERN",
    "CommandError",
    "LocalRunner", "Result", "Runner", "SshSettings", "parse_ssh", "runner_from_options",
    "DEFAULT_ACCOUNT", "MAX_SLOTS", "RequestError", "format_pe_range", "parse_memory_mb",
    "valid_name", "save_state", "StoreError", "StoreUnavailable", "create_tables", "database_errors", "make_engine", "next_id",
    "ChangeFeed", "channel_of", "PermissionDenied", "advance_counter",
    "DURATION_FORMS", "TimeSpecError", "format_ctime", "parse_duration", "DEFAULT_UID_MIN",
    "groups_of", "system_account", "with_members", "FLAG", "Check", "choice", "read_section",
    "JobEventWriter", "JobTransition", "create_job_event_tables", "end_fields", "job_fields", "put_job_events",
]
