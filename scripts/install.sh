#!/usr/bin/env bash
# Install this project into a world-readable venv and put its commands on
# every user's PATH. Run as root; idempotent.
#
#   bash scripts/install.sh [extras]      e.g. bash scripts/install.sh test
#
# Debian's /usr/bin/python3 is used (not a pyenv under /root, which other
# users cannot reach): the commands run as every user of the site.
set -euo pipefail
umask 022
export DEBIAN_FRONTEND=noninteractive
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PLUS_VENV=${PLUS_VENV:-/opt/plus-venv}
extras=${1:+[$1]}

[[ $EUID -eq 0 ]] || { echo "install: must run as root" >&2; exit 1; }

# apt-get update only when a package is missing: it is the slow part.
missing=()
for pkg in python3-venv ${PLUS_EXTRA_PACKAGES:-}; do
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null) == installed ]] || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "install: installing ${missing[*]}" >&2
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Rebuild the venv unless it is a working venv of /usr/bin/python3.
if ! grep -qx 'home = /usr/bin' "$PLUS_VENV/pyvenv.cfg" 2>/dev/null ||
   ! "$PLUS_VENV/bin/python" -c '' 2>/dev/null; then
    if [[ -e $PLUS_VENV && ! -e $PLUS_VENV/pyvenv.cfg ]]; then
        echo "install: $PLUS_VENV exists and is not a venv; not touching it" >&2
        exit 1
    fi
    echo "install: creating venv $PLUS_VENV" >&2
    rm -rf "$PLUS_VENV"
    /usr/bin/python3 -m venv "$PLUS_VENV"
    "$PLUS_VENV/bin/python" -m pip install --quiet --upgrade pip
fi

# pip rebuilds a local directory every time, so the current code is what is
# installed; a stale build/ would smuggle deleted modules into the wheel.
rm -rf "$repo/build"
"$PLUS_VENV/bin/python" -m pip install --quiet "$repo$extras"
chmod -R a+rX "$PLUS_VENV"

for command in "$PLUS_VENV"/bin/plus_*; do
    ln -sf "$command" /usr/local/bin/
done
