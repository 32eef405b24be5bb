"""Write checked records (overlay.arco.records) into the ARCo tables, on
one connection, inside the caller's transaction.

An AR is one sge_ar row per submission: its records name it by AR number
and submission time, so a number the daemon hands out again after its ids
wrapped starts a new row, and a record whose new_ar came before the file
was rotated finds its row (or, if that record never reached the database,
makes one without an owner). An AR has one sge_ar_attribute row, and its
sge_ar_resource_usage rows, as its latest ar_attribute record (written at
its submission and at each modification) says: the appendix's
view_ar_time_usage joins the attributes with the jobs, and a row per
modification would count each job again (the changes themselves are in
sge_ar_log, event MODIFIED). A job is one sge_job row per job number,
task, PE task and submission time, with one sge_job_usage row per acct
record. The ids are the next after the largest in each table: one
dbwriter writes at a time (overlay.arco.schema.lock).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Connection, text

from overlay.arco.records import Record

_EPOCH = dt.datetime(1970, 1, 1)

_AR = text("SELECT ar_id FROM sge_ar WHERE ar_number = :number AND "
           "ar_submission_time = :submitted ORDER BY ar_id DESC LIMIT 1")
_NEW_AR = text("INSERT INTO sge_ar (ar_id, ar_number, ar_owner, ar_submission_time) "
               "VALUES (:id, :number, :owner, :submitted)")
_OWNER = text("UPDATE sge_ar SET ar_owner = :owner WHERE ar_id = :id")
_ATTRIBUTE = text(
    "INSERT INTO sge_ar_attribute (ara_id, ara_parent, ara_curr_time, ara_name, ara_account, "
    "ara_start_time, ara_end_time, ara_granted_pe) VALUES (:id, :parent, :time, :name, :account, "
    ":start, :end, :pe)")
_ATTRIBUTE_AGAIN = text(
    "UPDATE sge_ar_attribute SET ara_curr_time = :time, ara_name = :name, ara_account = :account, "
    "ara_start_time = :start, ara_end_time = :end, ara_granted_pe = :pe WHERE ara_parent = :parent")
_NO_RESOURCES = text("DELETE FROM sge_ar_resource_usage WHERE arru_parent = :parent")
_RESOURCE = text("INSERT INTO sge_ar_resource_usage (arru_id, arru_parent, arru_variable, "
                 "arru_value) VALUES (:id, :parent, :variable, :value)")
_LOG = text("INSERT INTO sge_ar_log (arl_id, arl_parent, arl_time, arl_event, arl_state, "
            "arl_host, arl_message) VALUES (:id, :parent, :time, :event, :state, NULL, :message)")
_USAGE = text("INSERT INTO sge_ar_usage (aru_id, aru_parent, aru_termination_time, aru_qname, "
              "aru_hostname, aru_slots) VALUES (:id, :parent, :time, :qname, :hostname, :slots)")
_JOB = text("SELECT j_id FROM sge_job WHERE j_job_number = :job_number AND "
            "j_task_number = :task_number AND j_pe_taskid = :pe_taskid AND "
            "j_submission_time = :submission_time ORDER BY j_id DESC LIMIT 1")
_NEW_JOB = text(
    "INSERT INTO sge_job (j_id, j_job_number, j_task_number, j_pe_taskid, j_job_name, j_group, "
    "j_owner, j_account, j_priority, j_submission_time, j_project, j_department) VALUES (:id, "
    ":job_number, :task_number, :pe_taskid, :job_name, :group, :owner, :account, :priority, "
    ":submission_time, :project, :department)")
JOB_USAGE = {
    "ju_qname": "qname", "ju_hostname": "hostname", "ju_start_time": "start_time",
    "ju_end_time": "end_time", "ju_failed": "failed", "ju_exit_status": "exit_status",
    "ju_granted_pe": "granted_pe", "ju_slots": "slots", "ju_ru_wallclock": "ru_wallclock",
    "ju_ru_utime": "ru_utime", "ju_ru_stime": "ru_stime", "ju_ru_maxrss": "ru_maxrss",
    "ju_ru_ixrss": "ru_ixrss", "ju_ru_issmrss": "ru_ismrss", "ju_ru_idrss": "ru_idrss",
    "ju_ru_isrss": "ru_isrss", "ju_ru_minflt": "ru_minflt", "ju_ru_majflt": "ru_majflt",
    "ju_ru_nswap": "ru_nswap", "ju_ru_inblock": "ru_inblock", "ju_ru_outblock": "ru_oublock",
    "ju_ru_msgsnd": "ru_msgsnd", "ju_ru_msgrcv": "ru_msgrcv", "ju_ru_nsignals": "ru_nsignals",
    "ju_ru_nvcsw": "ru_nvcsw", "ju_ru_nivcsw": "ru_nivcsw", "ju_cpu": "cpu", "ju_mem": "mem",
    "ju_io": "io", "ju_iow": "iow", "ju_maxvmem": "maxvmem", "ju_ar_number": "arid"}
"""sge_job_usage's columns and the accounting(5) field each comes from
(Grid Engine's dbwriter maps them so); ju_curr_time is the record's time."""
_TIMES = {"start_time", "end_time", "submission_time"}
_USAGE_ROW = text(f"INSERT INTO sge_job_usage (ju_id, ju_parent, ju_curr_time, "
                  f"{', '.join(JOB_USAGE)}) VALUES (:id, :parent, :time, "
                  f"{', '.join(':' + field for field in JOB_USAGE.values())})")


class Loader:
    """Writes records on ``connection``; its ids and parents are cached for
    one transaction (``forget`` after a record was rolled back)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.sqlite = connection.dialect.name == "sqlite"
        self._next: dict[str, int] = {}
        self._ars: dict[tuple[int, int], int] = {}
        self._jobs: dict[tuple, int] = {}

    def forget(self) -> None:
        self._ars.clear()
        self._jobs.clear()

    def load(self, record: Record) -> None:
        getattr(self, "_" + record.kind)(record.time, record.values)

    def stamp(self, epoch: int) -> object:
        """A timestamp column's value: UTC, as text on SQLite (ddl.py)."""
        moment = _EPOCH + dt.timedelta(seconds=epoch)
        return moment.strftime("%Y-%m-%d %H:%M:%S") if self.sqlite else moment

    def _id(self, table: str, column: str) -> int:
        if table not in self._next:
            largest = self.connection.execute(text(f"SELECT MAX({column}) FROM {table}")).scalar()
            self._next[table] = (largest or 0) + 1
        self._next[table] += 1
        return self._next[table] - 1

    def _ar(self, values: dict, owner: str | None = None) -> int:
        """The sge_ar row of the AR the record names, made if missing; a
        new_ar record sets its owner."""
        key = (values["ar_number"], values["submission_time"])
        ar_id = self._ars.get(key)
        if ar_id is None:
            ar_id = self.connection.execute(_AR, {"number": key[0],
                                                  "submitted": self.stamp(key[1])}).scalar()
        if ar_id is None:
            ar_id = self._id("sge_ar", "ar_id")
            self.connection.execute(_NEW_AR, {"id": ar_id, "number": key[0], "owner": owner,
                                              "submitted": self.stamp(key[1])})
        elif owner is not None:
            self.connection.execute(_OWNER, {"id": ar_id, "owner": owner})
        self._ars[key] = ar_id
        return ar_id

    def _new_ar(self, time: int, values: dict) -> None:
        self._ar(values, values["owner"])

    def _ar_attribute(self, time: int, values: dict) -> None:
        """The AR's attributes and granted resources, replacing those of an
        earlier ar_attribute record (a modification)."""
        parent = self._ar(values)
        row = {"parent": parent, "time": self.stamp(values["event_time"]), "name": values["name"],
               "account": values["account"], "start": self.stamp(values["start_time"]),
               "end": self.stamp(values["end_time"]), "pe": values["granted_pe"]}
        if self.connection.execute(_ATTRIBUTE_AGAIN, row).rowcount == 0:
            self.connection.execute(_ATTRIBUTE, {**row, "id": self._id("sge_ar_attribute",
                                                                        "ara_id")})
        self.connection.execute(_NO_RESOURCES, {"parent": parent})
        for variable, value in values["granted_resources"]:
            self.connection.execute(_RESOURCE, {
                "id": self._id("sge_ar_resource_usage", "arru_id"), "parent": parent,
                "variable": variable, "value": value})

    def _ar_log(self, time: int, values: dict) -> None:
        self.connection.execute(_LOG, {
            "id": self._id("sge_ar_log", "arl_id"), "parent": self._ar(values),
            "time": self.stamp(values["state_change_time"]), "event": values["event"],
            "state": values["state"], "message": values["message"]})

    def _ar_acct(self, time: int, values: dict) -> None:
        self.connection.execute(_USAGE, {
            "id": self._id("sge_ar_usage", "aru_id"), "parent": self._ar(values),
            "time": self.stamp(values["termination_time"]), "qname": values["qname"],
            "hostname": values["hostname"], "slots": values["slots"]})

    def _acct(self, time: int, values: dict) -> None:
        """The job's sge_job row (made at its first acct record) and a usage row."""
        row = {name: self.stamp(value) if name in _TIMES else value
               for name, value in values.items()}
        key = tuple(row[name] for name in ("job_number", "task_number", "pe_taskid",
                                           "submission_time"))
        parent = self._jobs.get(key)
        if parent is None:
            parent = self.connection.execute(_JOB, row).scalar()
        if parent is None:
            parent = self._id("sge_job", "j_id")
            self.connection.execute(_NEW_JOB, {**row, "id": parent})
        self._jobs[key] = parent
        self.connection.execute(_USAGE_ROW, {**row, "id": self._id("sge_job_usage", "ju_id"),
                                             "parent": parent, "time": self.stamp(time)})
