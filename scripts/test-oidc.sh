#!/usr/bin/env bash
# A real OpenID provider for the tests of the HTTP API's identities:
# node-oidc-provider (OpenID Certified) from the npm registry, into
# /opt/plus-oidc; tests/oidc_harness.py runs it with tests/oidc/provider.mjs.
# Run as root; idempotent.
set -euo pipefail
umask 022
PLUS_LOG_TAG=test-oidc PLUS_PHASE_TIMES=${PLUS_PHASE_TIMES:-yes}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

package=oidc-provider@8.8.1
prefix=/opt/plus-oidc
if [[ $(cat "$prefix/VERSION" 2>/dev/null) != "$package" ]]; then
    echo "test-oidc: installing $package into $prefix" >&2
    rm -rf "$prefix"
    mkdir -p "$prefix"
    (cd "$prefix" && npm init -y >/dev/null && no_fds npm install --silent --no-audit --no-fund "$package" >/dev/null)
    echo "$package" >"$prefix/VERSION"
fi
phase oidc
