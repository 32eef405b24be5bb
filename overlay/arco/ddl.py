"""The ARCo database model in PostgreSQL's SQL: Grid Engine's job tables
(the part of its 6.0 model that the accounting views read) and seed 000's
Appendix 2 (model version 5, "6.2": the AR tables, ju_ar_number and the
views), as (description, SQL) items. overlay.arco.schema translates them
for SQLite.

The appendix's text is kept as written, with one exception: its ``DROP
VIEW`` items read ``DROP VIEW IF EXISTS``, since a database this overlay
creates never had Grid Engine 6.0's views. ``j_group AS group`` stays
unquoted: PostgreSQL takes any keyword, reserved or not, as a column label
after AS (checked on PostgreSQL 15); SQLite does not, and gets it quoted.
"""

from __future__ import annotations

VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS sge_version (
   v_id integer,
   v_version text,
   v_time timestamp,
   PRIMARY KEY (v_id)
)"""
"""Grid Engine's record of the model versions installed, made before any version."""

JOBS = [
    ("Create table sge_job", """
     CREATE TABLE sge_job (
        j_id bigint,
        j_job_number integer,
        j_task_number integer,
        j_pe_taskid text,
        j_job_name text,
        j_group text,
        j_owner text,
        j_account text,
        j_priority integer,
        j_submission_time timestamp,
        j_project text,
        j_department text,
        PRIMARY KEY (j_id)
     )"""),
    ("Create index sge_job_idx0",
     "CREATE INDEX sge_job_idx0 ON sge_job (j_job_number, j_task_number, j_pe_taskid)"),
    ("Create table sge_job_usage", """
     CREATE TABLE sge_job_usage (
        ju_id bigint,
        ju_parent bigint,
        ju_curr_time timestamp,
        ju_qname text,
        ju_hostname text,
        ju_start_time timestamp,
        ju_end_time timestamp,
        ju_failed integer,
        ju_exit_status integer,
        ju_granted_pe text,
        ju_slots integer,
        ju_ru_wallclock integer,
        ju_ru_utime double precision,
        ju_ru_stime double precision,
        ju_ru_maxrss integer,
        ju_ru_ixrss integer,
        ju_ru_issmrss integer,
        ju_ru_idrss integer,
        ju_ru_isrss integer,
        ju_ru_minflt integer,
        ju_ru_majflt integer,
        ju_ru_nswap integer,
        ju_ru_inblock integer,
        ju_ru_outblock integer,
        ju_ru_msgsnd integer,
        ju_ru_msgrcv integer,
        ju_ru_nsignals integer,
        ju_ru_nvcsw integer,
        ju_ru_nivcsw integer,
        ju_cpu double precision,
        ju_mem double precision,
        ju_io double precision,
        ju_iow double precision,
        ju_maxvmem double precision,
        PRIMARY KEY (ju_id),
        FOREIGN KEY (ju_parent) REFERENCES sge_job (j_id)
     )"""),
    ("Create index sge_job_usage_idx0",
     "CREATE INDEX sge_job_usage_idx0 ON sge_job_usage (ju_parent)"),
    ("Update version table", """
     INSERT INTO sge_version (v_id, v_version, v_time)
                 VALUES(0, '6.0', current_timestamp)"""),
]
"""Model version 0: sge_job and sge_job_usage with the columns of an acct
record, as Grid Engine's dbwriter names them (its later versions 1 to 4
add tables for records this overlay does not write)."""

AR = [
    ("Create table sge_ar", """
     CREATE TABLE sge_ar (
        ar_id integer,
        ar_number integer,
        ar_owner text,
        ar_submission_time timestamp,
        PRIMARY KEY (ar_id)
     )"""),
    ("Create index sge_ar_idx0", "CREATE INDEX sge_ar_idx0 ON sge_ar (ar_number)"),
    ("Create index sge_ar_idx1", "CREATE INDEX sge_ar_idx1 ON sge_ar (ar_owner)"),
    ("Create table sge_ar_attribute", """
     CREATE TABLE sge_ar_attribute (
        ara_id integer,
        ara_parent integer,
        ara_curr_time timestamp,
        ara_name text,
        ara_account text,
        ara_start_time timestamp,
        ara_end_time timestamp,
        ara_granted_pe text,
        PRIMARY KEY (ara_id),
        FOREIGN KEY (ara_parent) REFERENCES sge_ar (ar_id)
     )"""),
    ("Create index sge_ar_attribute_idx0",
     "CREATE INDEX sge_ar_attribute_idx0 ON sge_ar_attribute (ara_end_time)"),
    ("Create table sge_ar_usage", """
     CREATE TABLE sge_ar_usage (
        aru_id integer,
        aru_parent integer,
        aru_termination_time timestamp,
        aru_qname text,
        aru_hostname text,
        aru_slots integer,
        PRIMARY KEY (aru_id),
        FOREIGN KEY (aru_parent) REFERENCES sge_ar (ar_id)
     )"""),
    ("Create table sge_ar_log", """
     CREATE TABLE sge_ar_log (
        arl_id integer,
        arl_parent integer,
        arl_time timestamp,
        arl_event text,
        arl_state text,
        arl_host text,
        arl_message text,
        PRIMARY KEY (arl_id),
        FOREIGN KEY (arl_parent) REFERENCES sge_ar (ar_id)
     )"""),
    ("Create index sge_ar_log_idx0",
     "CREATE INDEX sge_ar_log_idx0 ON sge_ar_log (arl_event)"),
    ("Create table sge_ar_resource_usage", """
     CREATE TABLE sge_ar_resource_usage (
         arru_id integer,
         arru_parent integer,
         arru_variable text,
         arru_value text,
         PRIMARY KEY (arru_id),
         FOREIGN KEY (arru_parent) REFERENCES sge_ar (ar_id)
     )"""),
    ("Adds the column ar_number to sge_job_usage table",
     "ALTER TABLE sge_job_usage ADD COLUMN ju_ar_number integer DEFAULT 0"),
    ("Create index on column ar_number",
     "CREATE INDEX sge_job_usage_idx1 ON sge_job_usage (ju_ar_number)"),
    ("Drop view view_job_times", "DROP VIEW IF EXISTS view_job_times"),
    ("Drop view view_accounting", "DROP VIEW IF EXISTS view_accounting"),
    ("Create updated view view_accounting", """
     CREATE VIEW view_accounting AS
        SELECT j_job_number AS job_number, j_task_number AS task_number,
               j_pe_taskid AS pe_taskid,
               j_job_name AS name, j_group AS group, j_owner AS username,
               j_account AS account,
               j_project AS project, j_department AS department,
               j_submission_time AS submission_time,
               ju_ar_number AS ar_number,
               ju_start_time AS start_time, ju_end_time as end_time,
               (ju_start_time - j_submission_time)::interval AS wait_time,
               (ju_end_time - j_submission_time)::interval AS turnaround_time,
               (ju_end_time - ju_start_time)::interval AS job_duration,
               ju_ru_wallclock AS wallclock_time,
               ju_cpu AS cpu, ju_mem AS mem, ju_io AS io, ju_iow AS iow,
               ju_maxvmem AS maxvmem
        FROM sge_job, sge_job_usage
        WHERE j_id = ju_parent
          AND j_submission_time > '1970-01-02'
          AND ju_start_time >= j_submission_time"""),
    ("Update view view_job_times", """
     CREATE OR REPLACE VIEW view_job_times AS
                  SELECT * FROM view_accounting
                  WHERE pe_taskid = 'NONE'"""),
    ("Create view view_ar_attribute", """
     CREATE VIEW view_ar_attribute AS
        SELECT ar_number AS ar_number,
               ar_owner AS owner,
               ar_submission_time AS submission_time,
               ara_name AS name,
               ara_account AS account,
               ara_start_time AS start_time,
               ara_end_time AS end_time,
               ara_granted_pe AS granted_pe
        FROM sge_ar, sge_ar_attribute
        WHERE ar_id = ara_parent"""),
    ("Create view view_ar_log", """
     CREATE VIEW view_ar_log AS
        SELECT ar_number AS ar_number,
               arl_time AS time,
               arl_event AS event,
               arl_state AS state,
               arl_message AS message
        FROM sge_ar, sge_ar_log
        WHERE ar_id = arl_parent"""),
    ("Create view view_ar_usage", """
     CREATE VIEW view_ar_usage AS
        SELECT ar_number AS ar_number,
               aru_termination_time AS termination_time,
               aru_qname AS queue,
               aru_hostname AS hostname,
               aru_slots AS slots
         FROM sge_ar, sge_ar_usage
         WHERE ar_id = aru_parent"""),
    ("Create view view_ar_resource_usage", """
     CREATE VIEW view_ar_resource_usage AS
        SELECT ar_number AS ar_number,
               arru_variable AS variable,
               arru_value AS value
        FROM sge_ar, sge_ar_resource_usage
        WHERE ar_id = arru_parent"""),
    ("Create view view_ar_time_usage", """
     CREATE VIEW view_ar_time_usage AS
        SELECT ART.ar_number AS ar_number,
               SUM(job_duration)::interval AS job_duration,
               (ART.end_time - ART.start_time)::interval AS ar_duration
        FROM view_ar_attribute ART LEFT OUTER JOIN view_accounting ACC
        ON (ART.ar_number = ACC.ar_number)
        GROUP BY ART.ar_number, ar_duration ORDER BY ART.ar_number"""),
    ("Update version table", """
     INSERT INTO sge_version (v_id, v_version, v_time)
                 VALUES(5, '6.2', current_timestamp)"""),
]
"""Model version 5 ("6.2"): seed 000, Appendix 2, item by item."""
