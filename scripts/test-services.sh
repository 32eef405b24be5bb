#!/usr/bin/env bash
# The work of scripts/test-env.sh, in a process of its own so that set -e
# holds even when the caller tests its status (bash ignores errexit inside
# a function or subshell called from an if or || list). Writes the
# PostgreSQL port to fd 3; everything else goes to stderr.
set -euo pipefail
umask 022    # everything created here must be readable by the test users
export DEBIAN_FRONTEND=noninteractive
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

[[ $EUID -eq 0 ]] || { echo "test-env: must run as root" >&2; exit 1; }

# Two runs at once (CI and a developer, say) would fight over pip and apt.
exec 9>/run/plus-test-env.lock
flock 9

PLUS_LOG_TAG=test-env PLUS_PHASE_TIMES=yes
source "$repo/scripts/lib.sh"

# --- Debian packages, venv and the project itself: scripts/install.sh,
# as for a site, with [test] extras and the PostgreSQL server packages; it
# prints the packages, venv and install timing lines. Runs apt-get install
# (which may start PostgreSQL) under its own no_fds. It needs neither the
# port pipe (fd 3) nor the lock (fd 9; we keep holding it); the commands
# stay out of /usr/local/bin: the tests use the venv's bin directly.
# python3-dev is not needed: every dependency ships binary wheels.
# runuser and setpriv come with util-linux, which is always installed.
# GNU time: scripts/bench_core.py reads commands' peak memory with it.
# faketime: a co-allocation test runs a site whose clock is ahead.
# musl-tools: the compiled client is built with musl (scripts/install.sh).
PLUS_VENV=$PLUS_VENV PLUS_EXTRA_PACKAGES="postgresql time faketime chromium fonts-dejavu-core gcc libc6-dev musl-tools locales" PLUS_LINK_COMMANDS=no \
    PLUS_LOG_TAG=test-env PLUS_PHASE_TIMES=yes \
    bash "$repo/scripts/install.sh" test 3>&- 9>&- ||
    exit    # explicit: set -e is ignored here, as we run inside an "if" below
t_last=${EPOCHREALTIME//[.,]/}    # install.sh timed its own phases

# --- test users: plusu1, plusu2 in plusgrp; plusu3 not; plusmgr. No passwords.
bash "$repo/scripts/test-users.sh"
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

# --- a real Grid Engine: qmaster and execd on this host, and three more
# execution hosts node1..node3 in network namespaces (each times itself)
bash "$repo/scripts/sge-setup.sh"
bash "$repo/scripts/sge-hosts.sh" up

# --- a real sshd on 127.0.0.1:2222 for the SSH runner (keys in /etc/plus-test)
bash "$repo/scripts/test-sshd.sh"

# --- a real OpenID provider's package for the tests of the API's identities
bash "$repo/scripts/test-oidc.sh"

# --- a real Prometheus on 127.0.0.1:9391 scraping the test daemons' /metrics
bash "$repo/scripts/test-prometheus.sh"

# --- a real Slurm (slurmctld, slurmd for snode1..snode4) for the Slurm backend
bash "$repo/scripts/test-slurm.sh"

echo "$port" >&3
