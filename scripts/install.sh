#!/usr/bin/env bash
# Install this project into a world-readable venv and put its commands on
# every user's PATH. Run as root; idempotent.
#
#   bash scripts/install.sh [extras]      e.g. bash scripts/install.sh test
#
# Optional settings, from the environment:
#   PLUS_VENV=DIR              the venv (default /opt/plus-venv)
#   PLUS_EXTRA_PACKAGES="..."  more Debian packages to install if missing
#   PLUS_LINK_COMMANDS=no      leave /usr/local/bin alone (scripts/test-env.sh)
#   PLUS_LOG_TAG=NAME          how messages on stderr begin (default "install")
#   PLUS_PHASE_TIMES=yes       a timing line on stderr after each phase
#
# Debian's /usr/bin/python3 is used (not a pyenv under /root, which other
# users cannot reach): the commands run as every user of the site.
set -euo pipefail
umask 022
export DEBIAN_FRONTEND=noninteractive
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PLUS_VENV=${PLUS_VENV:-/opt/plus-venv}
extras=${1:+[$1]}
PLUS_LOG_TAG=${PLUS_LOG_TAG:-install}
tag=$PLUS_LOG_TAG

[[ $EUID -eq 0 ]] || { echo "$tag: must run as root" >&2; exit 1; }

source "$repo/scripts/lib.sh"

# apt-get update only when a package is missing: it is the slow part.
missing=()
for pkg in python3-venv ${PLUS_EXTRA_PACKAGES:-}; do
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null) == installed ]] || missing+=("$pkg")
done
command -v npm >/dev/null || missing+=(npm)    # the calendar page's library, below
if ((${#missing[@]})); then
    echo "$tag: installing ${missing[*]}" >&2
    apt-get update -qq
    no_fds apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
phase packages

# Rebuild the venv unless it is a working venv of /usr/bin/python3 (an older
# one made from the pyenv Python under /root looks fine to root but is
# unusable for everyone else).
if ! grep -qx 'home = /usr/bin' "$PLUS_VENV/pyvenv.cfg" 2>/dev/null ||
   ! "$PLUS_VENV/bin/python" -c '' 2>/dev/null; then
    if [[ -e $PLUS_VENV && ! -e $PLUS_VENV/pyvenv.cfg ]]; then
        echo "$tag: $PLUS_VENV exists and is not a venv; not touching it" >&2
        exit 1
    fi
    echo "$tag: creating venv $PLUS_VENV" >&2
    rm -rf "$PLUS_VENV"
    /usr/bin/python3 -m venv "$PLUS_VENV"
    # Only on creation: repeat runs should not pay for a network look-up.
    "$PLUS_VENV/bin/python" -m pip install -qq --upgrade pip
fi
phase venv

# pip always rebuilds and reinstalls a local directory, so the current code is
# what gets installed; dependencies already satisfied are left alone.
# setuptools builds in-tree and would copy stale files (deleted or renamed
# modules) from an old build/ into the wheel, so that goes first.
# -qq (here and above): errors only; this machine's pip.conf and setuptools'
# deprecation notices would otherwise print dozens of warnings on every run.
rm -rf "$repo/build"
"$PLUS_VENV/bin/python" -m pip install -qq "$repo$extras"
# The thin clients start without Python's site module (overlay/cli/launchers.py).
"$PLUS_VENV/bin/python" -m overlay.cli.launchers >/dev/null

# The compiled client (client/plus_client.c; README "The compiled client"):
# built with the machine's cc into $PLUS_VENV/libexec/plus and installed
# under each served command's name in bin, the Python launchers moved beside
# it (the client runs them when no command server answers). No compiler: the
# launchers stay in bin and serve as before.
libexec=$PLUS_VENV/libexec/plus
rm -rf "$libexec"
if compiler=$(command -v cc || command -v gcc); then
    mkdir -p "$libexec"
    source_sha=$(sha256sum "$repo/client/plus_client.c" | cut -d' ' -f1)
    build=(-O2 -Wall -Wextra -DPLUS_LIBEXEC="\"$libexec\"" -DPLUS_CLIENT_SOURCE="\"$source_sha\""
           -o "$libexec/plus_client" "$repo/client/plus_client.c")
    # Static with musl where it is installed (Debian's musl-tools): glibc's
    # start asks the processor for its caches (cpuid, a trap to the
    # hypervisor on a virtual machine) at every exec, 0.42 ms of a 0.52 ms
    # start here, and musl's does not; else static where the C library's
    # archive is there (no dynamic loader at each start); else dynamic.
    { command -v musl-gcc >/dev/null &&
          musl-gcc "${build[@]}" -static -DPLUS_CLIENT_LIBC='"musl"' 2>/dev/null; } ||
        "$compiler" "${build[@]}" -static 2>/dev/null || "$compiler" "${build[@]}"
    for name in $("$PLUS_VENV/bin/python" -m overlay.cmdserver.served); do
        mv "$PLUS_VENV/bin/$name" "$libexec/$name"
        ln -s ../libexec/plus/plus_client "$PLUS_VENV/bin/$name"
    done
else
    echo "$tag: no C compiler (cc): the commands stay Python; install gcc for the compiled client" >&2
fi
chmod -R a+rX "$PLUS_VENV"

# npm_files PACKAGE@VERSION DIR FILE...: the package's FILEs (paths inside
# it) from the npm registry into DIR, flat, unless DIR/VERSION says they are
# there already. The pages load nothing from elsewhere, so they work offline.
npm_files() {
    local package=$1 dir=$2 unpack
    shift 2
    [[ $(cat "$dir/VERSION" 2>/dev/null) == "$package" ]] && return 0
    echo "$tag: installing $package into $dir" >&2
    unpack=$(mktemp -d)
    (cd "$unpack" && npm pack --silent "$package" >/dev/null 2>&1) ||
        { echo "$tag: npm pack $package failed" >&2; exit 1; }
    tar -xzf "$unpack"/*.tgz -C "$unpack" "${@/#/package/}"
    mkdir -p "$dir"
    install -m 0644 "${@/#/$unpack/package/}" "$dir"/
    echo "$package" >"$dir/VERSION"
    rm -rf "$unpack"
}

# The calendar page's timeline library: vis-timeline's standalone build
# (vis-data and its other dependencies inside), served by the HTTP API.
npm_files vis-timeline@8.5.4 "$PLUS_VENV/share/plus/web" \
    standalone/umd/vis-timeline-graph2d.min.js styles/vis-timeline-graph2d.min.css \
    LICENSE.md LICENSE.Apache-2.0.txt LICENSE.MIT.txt
# The API's browsable documentation (/docs): Swagger UI's prebuilt files.
npm_files swagger-ui-dist@5.35.0 "$PLUS_VENV/share/plus/docs" \
    swagger-ui-bundle.js swagger-ui.css LICENSE NOTICE
# The tests' accessibility check of the calendar page (tests/test_web_page.py
# injects it); not served by the API.
if [[ ${1:-} == *test* ]]; then
    npm_files axe-core@4.11.0 "$PLUS_VENV/share/plus/axe" axe.min.js LICENSE
fi
phase web

if [[ ${PLUS_LINK_COMMANDS:-yes} != no ]]; then
    for command in "$PLUS_VENV"/bin/plus_*; do
        ln -sf "$command" /usr/local/bin/
    done
fi
phase install
