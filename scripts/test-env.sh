#!/usr/bin/env bash
# Test environment for plus-overlay. Run as root; idempotent; safe to re-run.
#
#   source scripts/test-env.sh       # sets it up and exports PLUS_VENV, PLUS_TEST_PG_URL
#   bash scripts/test-env.sh         # sets it up and prints the export lines
#
# It installs the Debian packages it needs, (re)installs this repo NON-editable
# into a world-readable venv built on Debian's /usr/bin/python3 (the pyenv
# Python lives under /root, mode 700, which the test users cannot reach), creates
# the test users, and starts a PostgreSQL that listens on 127.0.0.1 only.
# All set-up output goes to stderr, with one timing line per phase.

PLUS_VENV=${PLUS_VENV:-/opt/plus-venv}

# The work runs in a subshell so that set -e and friends never leak into a
# shell that sources this file. It writes the PostgreSQL port to fd 3.
_plus_test_env() (
    set -euo pipefail
    umask 022    # everything created here must be readable by the test users
    export DEBIAN_FRONTEND=noninteractive
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

    [[ $EUID -eq 0 ]] || { echo "test-env: must run as root" >&2; exit 1; }

    # Two runs at once (CI and a developer, say) would fight over pip and apt.
    exec 9>/run/plus-test-env.lock
    flock 9

    t_last=${EPOCHREALTIME//[.,]/}
    phase() {   # phase NAME: print the time since the previous phase ended
        local now=${EPOCHREALTIME//[.,]/}
        local us=$((now - t_last))
        printf 'test-env: %-9s %3d.%02ds\n' "$1" $((us / 1000000)) $((us % 1000000 / 10000)) >&2
        t_last=$now
    }

    # Run a command with only fds 0-2 open. For whatever may start the server
    # (apt's postinst, pg_ctlcluster): it outlives us and must not hold the
    # lock (fd 9) nor a pipe whose reader waits for EOF (fd 3, or one a CI
    # runner passed down), or our caller would hang.
    no_fds() (
        for fd in /proc/$BASHPID/fd/*; do
            fd=${fd##*/}
            if ((fd > 2)); then eval "exec $fd>&-"; fi
        done
        exec "$@" </dev/null
    )

    # --- Debian packages: apt-get update only when something is missing (slow).
    # python3-dev is not needed: every dependency ships binary wheels.
    # runuser and setpriv come with util-linux, which is always installed.
    missing=()
    for pkg in python3-venv postgresql; do
        [[ $(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null) == installed ]] || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        echo "test-env: installing ${missing[*]}" >&2
        apt-get update -qq
        no_fds apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    phase packages

    # --- venv: rebuild it unless it is a working venv of /usr/bin/python3
    # (an older one made from the pyenv Python under /root looks fine to root
    # but is unusable for everyone else).
    if ! grep -qx 'home = /usr/bin' "$PLUS_VENV/pyvenv.cfg" 2>/dev/null ||
       ! "$PLUS_VENV/bin/python" -c '' 2>/dev/null; then
        if [[ -e $PLUS_VENV && ! -e $PLUS_VENV/pyvenv.cfg ]]; then
            echo "test-env: $PLUS_VENV exists and is not a venv; not touching it" >&2
            exit 1
        fi
        echo "test-env: creating venv $PLUS_VENV" >&2
        rm -rf "$PLUS_VENV"
        /usr/bin/python3 -m venv "$PLUS_VENV"
        # Only on creation: repeat runs should not pay for a network look-up.
        "$PLUS_VENV/bin/python" -m pip install --quiet --upgrade pip
    fi
    phase venv

    # --- the project itself. pip always rebuilds and reinstalls a local
    # directory, so the current code is what gets installed; dependencies
    # already satisfied are left alone. setuptools builds in-tree and would
    # copy stale files (deleted or renamed modules) from an old build/ into
    # the wheel, so that goes first.
    # -qq: errors only; this machine's pip.conf and setuptools' deprecation
    # notices would otherwise print dozens of warnings on every run.
    rm -rf "$repo/build"
    "$PLUS_VENV/bin/python" -m pip install -qq "$repo[test]"
    chmod -R a+rX "$PLUS_VENV"
    phase install

    # --- test users: plusu1, plusu2 in plusgrp; plusu3 not; plusmgr. No passwords.
    getent group plusgrp >/dev/null || groupadd plusgrp
    for u in plusu1 plusu2 plusu3 plusmgr; do
        id -u "$u" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$u"
    done
    for u in plusu1 plusu2; do
        [[ " $(id -nG "$u") " == *" plusgrp "* ]] || usermod -aG plusgrp "$u"
    done
    if [[ " $(id -nG plusu3) " == *" plusgrp "* ]]; then gpasswd -d plusu3 plusgrp >/dev/null; fi
    phase users

    # --- PostgreSQL: Debian's "main" cluster of the newest installed server.
    ver=$(ls -d /usr/lib/postgresql/*/bin/postgres | sort -V | tail -n1 | cut -d/ -f5)
    pg_lsclusters -h | awk -v v="$ver" '$1 == v && $2 == "main" {f=1} END {exit !f}' ||
        pg_createcluster "$ver" main >/dev/null
    printf "# written by scripts/test-env.sh: tests need no outside access\nlisten_addresses = '127.0.0.1'\n" \
        >"/etc/postgresql/$ver/main/conf.d/plus-test.conf"
    port=$(pg_conftool -s "$ver" main show port)
    # As the postgres user over the Unix socket (peer auth); cd / because the
    # caller's directory may be under /root, which postgres cannot enter.
    pg() { (cd / && runuser -u postgres -- psql -X -q -At -v ON_ERROR_STOP=1 -p "$port" "$@"); }
    pg_cluster() { no_fds pg_ctlcluster "$ver" main "$1"; }
    state=$(pg_lsclusters -h | awk -v v="$ver" '$1 == v && $2 == "main" {print $4}')
    if [[ $state != online* ]]; then
        pg_cluster start
    elif [[ $(pg -d postgres -c 'SHOW listen_addresses') != 127.0.0.1 ]]; then
        pg_cluster restart    # was started with other settings
    fi
    pg -d postgres <<'SQL'
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'plus') THEN CREATE ROLE plus; END IF;
END $$;
ALTER ROLE plus WITH LOGIN PASSWORD 'plus';
SELECT 'CREATE DATABASE plus_test OWNER plus'
    WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'plus_test') \gexec
ALTER DATABASE plus_test OWNER TO plus;
SQL
    # As owner, plus may CREATE SCHEMA in plus_test; on PostgreSQL 15+ the
    # public schema belongs to pg_database_owner, this grant covers older ones.
    pg -d plus_test -c 'GRANT ALL ON SCHEMA public TO plus'
    phase postgres

    echo "$port" >&3
)

# 3>&1 first, so fd 3 is the capture; then stdout goes to stderr.
if _plus_pg_port=$(_plus_test_env 3>&1 1>&2); then
    export PLUS_VENV
    export PLUS_TEST_PG_URL="postgresql+psycopg://plus:plus@127.0.0.1:${_plus_pg_port}/plus_test"
    unset _plus_pg_port
    unset -f _plus_test_env
    if ! (return 0 2>/dev/null); then    # executed, not sourced
        printf 'export PLUS_VENV=%q\nexport PLUS_TEST_PG_URL=%q\n' "$PLUS_VENV" "$PLUS_TEST_PG_URL"
    fi
else
    echo "test-env: set-up FAILED (see above)" >&2
    return 1 2>/dev/null || exit 1
fi
