"""Checks that scripts/test-env.sh set up what the other tests rely on.

Each test fails if a part of the set-up is missing: PostgreSQL, the test users
and groups, or a venv whose installed `overlay` non-root users can import.
Run them with `bash scripts/test.sh tests/test_environment.py`.
"""

import grp
import hashlib
import os
import pwd
import subprocess
import tomllib
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PG_URL = os.environ.get("PLUS_TEST_PG_URL")
VENV = Path(os.environ.get("PLUS_VENV", "/opt/plus-venv"))
GROUP = "plusgrp"
MEMBERS = ["plusu1", "plusu2"]
NON_MEMBERS = ["plusu3", "plusmgr"]

needs_pg = pytest.mark.skipif(
    not PG_URL, reason="PLUS_TEST_PG_URL is unset: run the tests with bash scripts/test.sh"
)
needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="runuser needs root; the tests run as root via scripts/test.sh"
)


def _connect():
    import psycopg

    # SQLAlchemy's "postgresql+psycopg://" names the driver; libpq wants "postgresql://".
    conninfo = PG_URL.replace("postgresql+psycopg://", "postgresql://", 1)
    return psycopg.connect(conninfo, connect_timeout=10, autocommit=True)


@needs_pg
def test_postgres_can_create_and_drop_schema_and_table():
    schema = f"env_probe_{uuid.uuid4().hex[:8]}"
    with _connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        try:
            conn.execute(f"CREATE TABLE {schema}.t (id serial PRIMARY KEY, note text)")
            conn.execute(f"INSERT INTO {schema}.t (note) VALUES ('hello')")
            assert conn.execute(f"SELECT note FROM {schema}.t").fetchall() == [("hello",)]
            conn.execute(f"DROP TABLE {schema}.t")
        finally:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@needs_pg
def test_postgres_listens_on_localhost_only():
    with _connect() as conn:
        assert conn.execute("SHOW listen_addresses").fetchone()[0] == "127.0.0.1"


@pytest.mark.parametrize("user", MEMBERS + NON_MEMBERS)
def test_user_exists_with_home_and_bash(user):
    pw = pwd.getpwnam(user)  # KeyError if missing
    assert pw.pw_shell == "/bin/bash"
    assert Path(pw.pw_dir).is_dir(), f"{user} has no home directory {pw.pw_dir}"


def _groups(user):
    pw = pwd.getpwnam(user)
    return {grp.getgrgid(g).gr_name for g in os.getgrouplist(user, pw.pw_gid)}


@pytest.mark.parametrize("user", MEMBERS)
def test_member_of_plusgrp(user):
    assert GROUP in _groups(user)


def test_plusu3_not_member_of_plusgrp():
    grp.getgrnam(GROUP)  # KeyError if the group is missing
    assert GROUP not in _groups("plusu3")


@needs_root
def test_non_root_user_imports_installed_overlay():
    # -I and cwd=/ so that only the installed copy can be found, never the source tree.
    result = subprocess.run(
        ["runuser", "-u", "plusu1", "--", str(VENV / "bin/python"), "-I", "-c",
         "import overlay; print(overlay.__file__)"],
        cwd="/", capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).resolve().is_relative_to(VENV.resolve())


def _site_packages():
    (site,) = VENV.glob("lib/python3*/site-packages")
    return site


def test_installed_package_matches_source_tree():
    """The venv holds the current code: no missing, changed or stale modules.

    Fails after a source edit until scripts/test.sh (re)installs the package.
    """
    setuptools_cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dir = setuptools_cfg.get("package-dir", {})
    site = _site_packages()
    for package in setuptools_cfg["packages"]:
        top, _, rest = package.partition(".")
        src = REPO / package_dir.get(top, top) / rest.replace(".", "/")
        dst = site / package.replace(".", "/")
        src_files = {p.name: p.read_bytes() for p in src.glob("*.py")}
        dst_files = {p.name: p.read_bytes() for p in dst.glob("*.py")}
        assert sorted(dst_files) == sorted(src_files), f"{package}: installed modules differ"
        changed = [n for n in src_files if src_files[n] != dst_files[n]]
        assert not changed, f"{package}: installed copy is out of date: {changed}"


LIBEXEC = VENV / "libexec" / "plus"
CLIENT = LIBEXEC / "plus_client"
needs_client = pytest.mark.skipif(not CLIENT.exists(), reason="no compiled client installed "
                                  "(no C compiler when scripts/install.sh ran)")


@needs_client
def test_the_installed_commands_are_the_client_and_the_launchers_beside_it():
    for name in _served():
        assert os.path.realpath(VENV / "bin" / name) == str(CLIENT), name
        assert (LIBEXEC / name).read_text().splitlines()[1].startswith("# overlay.cli.launchers")
    assert not (VENV / "bin" / "plus_scheduler").is_symlink()


@needs_client
def test_the_installed_client_is_built_from_this_source():
    digest = hashlib.sha256((REPO / "client" / "plus_client.c").read_bytes()).hexdigest()
    assert f"plus_client source sha256 {digest}".encode() in CLIENT.read_bytes()


@needs_client
def test_the_installed_client_is_static_and_built_with_musl():
    """musl's start costs a fifth of glibc's on this virtual machine (scripts/install.sh)."""
    binary = CLIENT.read_bytes()
    assert b"plus_client built with musl" in binary
    assert b"ld-linux" not in binary               # no interpreter: linked statically


def _served() -> list[str]:
    from overlay.cmdserver import served
    return served.names()
