#!/usr/bin/env bash
# The test users, idempotent (root): plusu1 and plusu2 in group plusgrp,
# plusu3 not in it, plusmgr. No passwords; uids from 1000 up, as Grid
# Engine's min_uid wants for job owners. alice and bob are the users of the
# TORQUE recordings (tests/data/torque), with the login shells they had there
# (their jobs record it as PBS_O_SHELL).
set -euo pipefail
getent group plusgrp >/dev/null || groupadd plusgrp
for u in plusu1 plusu2 plusu3 plusmgr; do
    id -u "$u" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$u"
done
for u in plusu1 plusu2; do
    [[ " $(id -nG "$u") " == *" plusgrp "* ]] || usermod -aG plusgrp "$u"
done
if [[ " $(id -nG plusu3) " == *" plusgrp "* ]]; then gpasswd -d plusu3 plusgrp >/dev/null; fi
for u in alice:/bin/sh bob:/bin/bash; do
    name=${u%%:*} shell=${u#*:}
    id -u "$name" >/dev/null 2>&1 || useradd --create-home --shell "$shell" "$name"
    [[ $(getent passwd "$name" | cut -d: -f7) == "$shell" ]] || usermod --shell "$shell" "$name"
done
