#!/usr/bin/env bash
# The project's test command: bash scripts/test.sh [pytest args]
# Sets up the test environment (scripts/test-env.sh, as root), then runs pytest
# from the repo root with the venv's Python and exits with pytest's status.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

t0=${EPOCHREALTIME//[.,]/}
source "$repo/scripts/test-env.sh"
us=$(( ${EPOCHREALTIME//[.,]/} - t0 ))
printf 'test-env: %-9s %3d.%02ds\n' total $((us / 1000000)) $((us % 1000000 / 10000)) >&2

cd "$repo"
status=0
"$PLUS_VENV/bin/python" -m pytest "$@" || status=$?
if ((status == 5)); then
    # Exit 5 is already a failure; say why, so a CI log with no tests is obvious.
    echo "test.sh: FAILED: pytest collected no tests" >&2
fi
exit "$status"
