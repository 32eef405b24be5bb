#!/usr/bin/env bash
# Test environment for plus-overlay. Run as root; idempotent; safe to re-run.
#
#   source scripts/test-env.sh       # sets it up and exports PLUS_VENV, PLUS_TEST_PG_URL
#   bash scripts/test-env.sh         # sets it up and prints the export lines
#
# Through scripts/install.sh it installs the Debian packages it needs and
# (re)installs this repo NON-editable into a world-readable venv built on
# Debian's /usr/bin/python3 (the pyenv Python lives under /root, mode 700, which
# the test users cannot reach); then it creates the test users and starts a
# PostgreSQL that listens on 127.0.0.1 only.
# All set-up output goes to stderr, with one timing line per phase.

PLUS_VENV=${PLUS_VENV:-/opt/plus-venv}

_plus_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# 3>&1 first, so fd 3 is the capture; then stdout goes to stderr.
# Bounded: a set-up step that never ends fails here with a line, rather than
# holding CI until its own limit with nothing said.
if _plus_pg_port=$(PLUS_VENV=$PLUS_VENV timeout -k 10 1800 \
        bash "$_plus_repo/scripts/test-services.sh" 3>&1 1>&2); then
    export PLUS_VENV
    export PLUS_TEST_PG_URL="postgresql+psycopg://plus:plus@127.0.0.1:${_plus_pg_port}/plus_test"
    unset _plus_pg_port _plus_repo
    if ! (return 0 2>/dev/null); then    # executed, not sourced
        printf 'export PLUS_VENV=%q\nexport PLUS_TEST_PG_URL=%q\n' "$PLUS_VENV" "$PLUS_TEST_PG_URL"
    fi
else
    echo "test-env: set-up FAILED, or ran past 30 minutes (see above)" >&2
    return 1 2>/dev/null || exit 1
fi
