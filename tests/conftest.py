"""Shared fixtures: a store URL on SQLite or on PostgreSQL, and a Store on it.

PostgreSQL tests need a running server named by PLUS_TEST_PG_URL, which the
project's test command (bash scripts/test.sh) sets up and exports. Each
PostgreSQL test gets its own freshly created schema, first (and only) in the
search_path of every connection made through its URL, so no test sees
another's rows; the schema is dropped afterwards.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import pwd
import shutil
import sys
import tempfile
import time
import tomllib
import uuid
from pathlib import Path

import pytest
from sqlalchemy import make_url

from overlay.persistence.store import Store

PG_URL_VARIABLE = "PLUS_TEST_PG_URL"


def _plugins_from_source() -> None:
    """Import the plugin packages (overlay_native = plugins/native, ...) from
    this tree, as pyproject.toml maps them, not from the installed copy."""
    repo = Path(__file__).resolve().parent.parent
    with open(repo / "pyproject.toml", "rb") as handle:
        folders = tomllib.load(handle)["tool"]["setuptools"]["package-dir"]
    for name, folder in folders.items():
        path = repo / folder
        spec = importlib.util.spec_from_file_location(
            name, path / "__init__.py", submodule_search_locations=[str(path)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


_plugins_from_source()

# Test files that use a service of which the machine has one and that they
# change: the Grid Engine qmaster and its hosts, and the test sshd (which
# test_remote restarts); and, apart, the Slurm cluster
# (scripts/test-slurm.sh). Run in parallel (scripts/test.sh: pytest-xdist),
# each group goes to one worker, its files one after the other, and the two
# groups may run beside each other; every other file goes whole to a worker,
# so its module fixtures (a daemon, a cluster) are made once.
ONE_AT_A_TIME = "grid-engine-and-sshd"
SHARED_SERVICE_FILES = {
    "test_sge.py", "test_sge_e2e.py", "test_slow_batch_system.py", "test_qrsub_differential.py",
    "test_torque.py", "test_remote.py", "test_native_daemon.py", "test_native_execution.py",
    "test_native_cluster.py", "test_slurm_ssh.py", "test_sge_lend.py",
}
SLURM_CLUSTER = "slurm-cluster"
SLURM_FILES = {"test_slurm_env.py", "test_slurm.py", "test_slurm_e2e.py", "test_slurm_notice.py",
               "test_slurm_maint.py", "test_slurm_lend.py"}
CLUSTER_LOCKS = {ONE_AT_A_TIME: "/run/lock/plus-tests-grid-engine.lock",
                 SLURM_CLUSTER: "/run/lock/plus-tests-slurm.lock"}
"""Held by a test file of a group while it runs, so that two runs of the
suite on one machine (a developer's and CI's, or a helper's) take turns on
the clusters rather than cleaning each other's ARs and jobs away."""


def _group(path: Path) -> str | None:
    if path.name in SHARED_SERVICE_FILES:
        return ONE_AT_A_TIME
    return SLURM_CLUSTER if path.name in SLURM_FILES else None


@pytest.fixture(scope="module", autouse=True)
def _cluster_turn(request: pytest.FixtureRequest):
    """The machine's cluster, this file's alone from its first test to its
    last (module fixtures such as a daemon span them)."""
    group = _group(Path(str(request.fspath)))
    if group is None:
        yield
        return
    with open(CLUSTER_LOCKS[group], "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Captured output and logs with undecodable bytes (tests feed them on
    purpose) escaped, as the daemon's own log does: a pytest-xdist worker
    sends reports as UTF-8 and stops on a lone surrogate."""
    outcome = yield
    report = outcome.get_result()
    report.sections = [(title, text.encode("utf-8", "backslashreplace").decode("utf-8"))
                       for title, text in report.sections]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """pytest-xdist's scheduler by scope (a scope goes whole to one worker),
    each test file a scope, the files of SHARED_SERVICE_FILES one scope
    together (the biggest, so it starts first) and those of SLURM_FILES
    another."""
    from xdist.scheduler import LoadScopeScheduling

    class SharedServicesTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return _group(Path(file)) or file

    return SharedServicesTogether(config, log)


def _pg_admin_connect(url: str):
    """A plain psycopg connection (autocommit) to the database of ``url``."""
    import psycopg

    parsed = make_url(url)
    return psycopg.connect(
        host=parsed.host or "127.0.0.1", port=parsed.port or 5432, user=parsed.username,
        password=parsed.password, dbname=parsed.database, connect_timeout=10, autocommit=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A URL for an empty store database: a SQLite file in tmp_path, or a
    fresh PostgreSQL schema of its own (dropped when the test ends)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'plus.db'}"
        return

    base = os.environ.get(PG_URL_VARIABLE)
    if not base:
        pytest.fail(f"{PG_URL_VARIABLE} is unset, so the PostgreSQL tests cannot run: run the "
                    "tests with the project's test command, bash scripts/test.sh, which starts "
                    f"PostgreSQL and sets {PG_URL_VARIABLE}", pytrace=False)
    schema = f"plus_test_{uuid.uuid4().hex[:12]}"
    with _pg_admin_connect(base) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with _pg_admin_connect(base) as conn:
            # A test that leaked an open transaction must not hang the run.
            conn.execute("SET lock_timeout = '10s'")
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def store(store_url):
    """A Store on ``store_url`` (its tables created), closed afterwards."""
    instance = Store(store_url)
    try:
        yield instance
    finally:
        instance.close()


@pytest.fixture
def work():
    """A folder plusu1 owns, for jobs' working directories and output files."""
    path = Path(tempfile.mkdtemp(prefix="plus-work-"))
    owner = pwd.getpwnam("plusu1")
    os.chown(path, owner.pw_uid, owner.pw_gid)
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@pytest.fixture
def zone(monkeypatch):
    """Set the local time zone for the test; restores the previous one after."""
    def set_zone(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()
    yield set_zone
    monkeypatch.undo()
    time.tzset()
