#!/usr/bin/env bash
# The project's test command: bash scripts/test.sh [pytest args]
# Sets up the test environment (scripts/test-env.sh, as root), then runs ruff
# and pytest from the repo root with the venv's Python; exits with pytest's
# status, or 1 if only ruff found problems.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

t0=${EPOCHREALTIME//[.,]/}
source "$repo/scripts/test-env.sh"
us=$(( ${EPOCHREALTIME//[.,]/} - t0 ))
printf 'test-env: %-9s %3d.%02ds\n' total $((us / 1000000)) $((us % 1000000 / 10000)) >&2

cd "$repo"
status=0
# The linter first (pyflakes, import order, bugbear: pyproject.toml's [tool.ruff]);
# its findings fail the run, after the tests have run too.
lint=0
"$PLUS_VENV/bin/ruff" check --no-cache . || lint=$?
# Three workers (pytest-xdist) on two cores: most tests wait on daemons,
# batch systems and subprocesses, so a third keeps the cores busy (measured:
# 20 min with two, 15.5 with three, the CPUs still 20-30 % idle). Files that
# change a service the machine has one of go to one worker (tests/conftest.py's
# scheduler).
"$PLUS_VENV/bin/python" -m pytest -n "${PLUS_TEST_WORKERS:-3}" "$@" || status=$?
if ((status == 0 && lint != 0)); then
    echo "test.sh: FAILED: ruff check found problems (above)" >&2
    status=1
fi
if ((status == 5)); then
    # Exit 5 is already a failure; say why, so a CI log with no tests is obvious.
    echo "test.sh: FAILED: pytest collected no tests" >&2
fi
exit "$status"
