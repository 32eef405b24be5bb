#!/usr/bin/env bash
# A one-host Son of Grid Engine test cluster on this machine (Debian's
# gridengine 8.1.9 packages): qmaster and execd on this host, queue all.q on
# @allhosts with 2 slots, a scheduler tuned for fast tests, and the test
# users in "arusers". Run as root; idempotent, non-interactive, safe to re-run
# (also after the daemons died: it starts whatever does not answer).
#
#   bash scripts/sge-setup.sh
#
# More execution hosts on this machine: scripts/sge-hosts.sh up.
# Optional settings, from the environment:
#   PLUS_LOG_TAG=NAME          how messages on stderr begin (default "sge-setup")
#   PLUS_PHASE_TIMES=yes       a timing line on stderr after each phase
#
# The Debian packages put qsub & co. in /usr/bin (a wrapper that sets
# SGE_ROOT=/var/lib/gridengine, SGE_CELL=default): every user can run them
# without any profile.
set -euo pipefail
umask 022
export DEBIAN_FRONTEND=noninteractive
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PLUS_LOG_TAG=${PLUS_LOG_TAG:-sge-setup}
tag=$PLUS_LOG_TAG
source "$repo/scripts/lib.sh"

die() { echo "$tag: $*" >&2; exit 1; }
# has LINE TEXT: whether TEXT has that line (no "cmd | grep -q": with
# pipefail, grep's early exit may fail the pipe)
has() { grep -qxF -- "$1" <<<"$2"; }
# quiet COMMAND...: its output only if it fails (qconf says "added ..." on stderr)
quiet() {
    local out
    out=$("$@" 2>&1) || { printf '%s\n' "$out" >&2; return 1; }
}
[[ $EUID -eq 0 ]] || die "must run as root"

export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
common=$SGE_ROOT/$SGE_CELL/common
spool=/var/spool/gridengine
host=$(hostname)
queue=all.q
slots=2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
apt=(apt-get -o DPkg::Lock::Timeout=600)

# --- test users (scripts/test-services.sh makes them first; this is for a
# stand-alone run)
bash "$repo/scripts/test-users.sh"
phase users

# --- packages. Our host name must resolve before anything starts.
getent hosts "$host" >/dev/null || echo "127.0.1.1 $host" >>/etc/hosts
pkgs=(gridengine-master gridengine-exec gridengine-client)
missing=()
for pkg in "${pkgs[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null) == installed ]] || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "$tag: installing ${missing[*]}" >&2
    # The postinsts read these: create cell "default" with us as master.
    debconf-set-selections <<EOF
gridengine-common shared/gridengineconfig boolean true
gridengine-common shared/gridenginecell string $SGE_CELL
gridengine-common shared/gridenginemaster string $host
EOF
    "${apt[@]}" update -qq
    # The postinsts may start sge_qmaster and sge_execd: no_fds.
    no_fds "${apt[@]}" install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi
# The postinsts make the cell only on a first install (not after a remove
# without purge, nor with shared/gridengineconfig false): do it ourselves.
if [[ ! -e $common/bootstrap ]]; then
    install -d -o sgeadmin -g sgeadmin -m 755 "$SGE_ROOT" "$SGE_ROOT/$SGE_CELL" "$common"
    install -m 644 -o sgeadmin -g sgeadmin /usr/share/gridengine/default-bootstrap "$common/bootstrap"
fi
if [[ ! -e $spool/spooldb/sge ]]; then
    install -d -o sgeadmin -g sgeadmin -m 755 "$spool/qmaster" "$spool/qmaster/job_scripts" "$spool/spooldb" "$spool/execd"
    runuser -u sgeadmin -- /usr/share/gridengine/scripts/init_cluster \
        "$SGE_ROOT" "$SGE_CELL" "$spool/spooldb" sgeadmin >/dev/null
fi
phase packages

# --- the host-name trap. Clients on this host connect from our IP, which the
# qmaster resolves back to the first name /etc/hosts gives that IP
# ("localhost" for 127.0.0.1), not an admin host: "access denied". The other
# names of our IP become aliases of ours (host_aliases, read by every daemon
# and command at start: a change needs a restart of both daemons).
restart=no
ip=$(getent hosts "$host" | awk '{print $1; exit}')
aliases=$(awk -v ip="$ip" -v h="$host" '
    $1 == ip { for (i = 2; i <= NF; i++) if ($i != h && !seen[$i]++) printf " %s", $i }' /etc/hosts)
if [[ -n $aliases ]]; then
    echo "$host$aliases" >"$tmp/host_aliases"
    if ! cmp -s "$tmp/host_aliases" "$common/host_aliases"; then
        install -m 644 -o sgeadmin -g sgeadmin "$tmp/host_aliases" "$common/host_aliases"
        restart=yes
    fi
elif [[ -e $common/host_aliases ]]; then
    rm -f "$common/host_aliases"
    restart=yes
fi
if [[ $(cat "$common/act_qmaster" 2>/dev/null) != "$host" ]]; then
    echo "$host" >"$tmp/act_qmaster"
    install -m 644 -o sgeadmin -g sgeadmin "$tmp/act_qmaster" "$common/act_qmaster"
    restart=yes
fi

# --- daemons: start what does not answer. The init scripts look for pid
# files in /var/run while the daemons write them to their spool dirs, so
# qping decides, and we start the daemons ourselves, with no_fds. A daemon
# told to stop (a kill, qconf -km) answers qping for some seconds more and
# holds its port: wait for its end before starting another.
answers() { qping -info "$host" "$1" "$2" 1 >/dev/null 2>&1; }
qmaster_pid=$spool/qmaster/qmaster.pid
# The execd spools under the name our IP resolves back to (the first name on
# its first /etc/hosts line: "localhost" for 127.0.0.1).
execd_pid=$spool/execd/$(getent hosts "$ip" | awk '{print $2; exit}')/execd.pid
# alive PIDFILE NAME: whether the process of the pid file runs
alive() {
    local pid
    pid=$(cat "$1" 2>/dev/null) && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$2" ]]
}
# stop PIDFILE NAME: stop it (if it runs) and wait until it is gone
stop() {
    alive "$1" "$2" || return 0
    kill "$(cat "$1")" 2>/dev/null || true
    for _ in {1..150}; do
        alive "$1" "$2" || return 0
        sleep 0.2
    done
    kill -9 "$(cat "$1")" 2>/dev/null || true
    sleep 0.5
}
# start PIDFILE NAME: start it once the previous one (if any) is gone
start() {
    for _ in {1..150}; do
        alive "$1" "$2" || break
        sleep 0.2
    done
    stop "$1" "$2"    # still there after 30 s: hung
    echo "$tag: starting $2" >&2
    no_fds "/usr/sbin/$2"
}
if [[ $restart == yes ]]; then
    stop "$execd_pid" sge_execd
    stop "$qmaster_pid" sge_qmaster
fi
answers 6444 qmaster || start "$qmaster_pid" sge_qmaster
started=0
for ((i = 1; i <= 120; i++)); do
    qconf -sh >/dev/null 2>&1 && break
    # it answered qping, but was shutting down
    if ((i - started >= 10)) && ! alive "$qmaster_pid" sge_qmaster; then
        start "$qmaster_pid" sge_qmaster
        started=$i
    fi
    sleep 0.5
done
qconf -sh >/dev/null 2>&1 || die "sge_qmaster does not answer (see $spool/qmaster/messages)"
phase daemons

# --- hosts (-ah and -as only when missing: they complain either way)
has "$host" "$(qconf -sh 2>/dev/null)" || quiet qconf -ah "$host"
has "$host" "$(qconf -ss 2>/dev/null)" || quiet qconf -as "$host"
if ! qconf -se "$host" >/dev/null 2>&1; then
    printf '%s\n' "hostname $host" "load_scaling NONE" "complex_values NONE" \
        "user_lists NONE" "xuser_lists NONE" "projects NONE" "xprojects NONE" \
        "usage_scaling NONE" "report_variables NONE" >"$tmp/exechost"
    # an execd that just started may have registered itself meanwhile
    quiet qconf -Ae "$tmp/exechost" || qconf -se "$host" >/dev/null
fi

# dump FILE qconf-args...: a qconf listing with its continuation lines joined
dump() {
    local file=$1
    shift
    qconf "$@" | sed -e ':a' -e '/\\$/{N; s/[[:space:]]*\\\n[[:space:]]*/ /; ba' -e '}' >"$file"
}
# set_params FILE NAME VALUE...: set "NAME VALUE" lines of a dump, and drop
# lines whose name is no attribute name (left by a bad edit)
set_params() {
    local file=$1
    shift
    awk '/^#/ || $1 ~ /^[a-z_]+$/' "$file" >"$file.new"
    mv "$file.new" "$file"
    while (($#)); do
        awk -v k="$1" -v v="$2" '
            $1 == k { print k, v; done = 1; next } { print }
            END { if (!done) print k, v }' "$file" >"$file.new"
        mv "$file.new" "$file"
        shift 2
    done
}
# changed OLD NEW: whether two dumps differ (spacing aside)
changed() { ! diff -qwB <(grep -v '^#' "$1") <(grep -v '^#' "$2") >/dev/null; }

# Global configuration: a dead execd shows "u" after 30 s; load reports
# (and with them the kill of jobs deleted with qdel -f or rescheduled) every
# 10 s; accounting written at once, for qacct.
dump "$tmp/global" -sconf global
cp "$tmp/global" "$tmp/global.new"
set_params "$tmp/global.new" load_report_time 00:00:10 max_unheard 00:00:30 \
    reporting_params "accounting=true reporting=false flush_time=00:00:15 joblog=false sharelog=00:00:00 accounting_flush_time=00:00:00"
if changed "$tmp/global" "$tmp/global.new"; then
    mv "$tmp/global.new" "$tmp/global"    # the file's name is the configuration's
    quiet qconf -Mconf "$tmp/global"
fi

# Scheduler: a pass 1 s after a submit or a job end, else every 4 s; the
# reasons why jobs wait kept for qstat -j; max_reservation above 0 so that it
# looks ahead at queue calendars (the sge backend's "conflict: avoid").
dump "$tmp/sconf" -ssconf
cp "$tmp/sconf" "$tmp/sconf.new"
set_params "$tmp/sconf.new" schedule_interval 0:0:4 flush_submit_sec 1 flush_finish_sec 1 \
    schedd_job_info true max_reservation 10
if changed "$tmp/sconf" "$tmp/sconf.new"; then
    quiet qconf -Msconf "$tmp/sconf.new"
fi

# @allhosts, with us in it (sge-hosts.sh adds node1..N: keep them).
if qconf -shgrp @allhosts >"$tmp/hgrp" 2>/dev/null; then
    has "$host" "$(awk '$1 == "hostlist" { $1 = "" } { gsub(/\\/, ""); for (i = 1; i <= NF; i++) print $i }' "$tmp/hgrp")" ||
        quiet qconf -aattr hostgroup hostlist "$host" @allhosts
else
    printf 'group_name @allhosts\nhostlist %s\n' "$host" >"$tmp/hgrp"
    quiet qconf -Ahgrp "$tmp/hgrp"
fi

# all.q. -Aq wants every attribute, so let qconf -aq fill in its template
# through a scripted EDITOR (the template's pe_list "make smp mpi" names PEs
# that do not exist here).
settings=(hostlist @allhosts slots "$slots" pe_list NONE load_thresholds NONE rerun FALSE)
if ! qconf -sq "$queue" >/dev/null 2>&1; then
    {
        echo '#!/bin/sh'
        printf 'sed -i'
        for ((i = 0; i < ${#settings[@]}; i += 2)); do
            printf ' -e "s/^%s .*/%s %s/"' "${settings[i]}" "${settings[i]}" "${settings[i + 1]}"
        done
        echo ' "$1"'
    } >"$tmp/editor"
    chmod +x "$tmp/editor"
    EDITOR=$tmp/editor quiet qconf -aq "$queue"
else
    qconf -sq "$queue" >"$tmp/queue"
    for ((i = 0; i < ${#settings[@]}; i += 2)); do
        awk -v k="${settings[i]}" -v v="${settings[i + 1]}" '$1 == k && $2 == v && NF == 2 { f = 1 } END { exit !f }' "$tmp/queue" ||
            quiet qconf -rattr queue "${settings[i]}" "${settings[i + 1]}" "$queue"
    done
fi

# Who may make native advance reservations (qrsub): userset arusers.
entries=$(qconf -su arusers | awk '$1 == "entries" { $1 = ""; print } /^ / { print }' | tr -d '\\' | tr ', ' '\n\n')
for u in plusu1 plusu2 plusu3 plusmgr; do
    has "$u" "$entries" || quiet qconf -au "$u" arusers
done
phase config

# --- our execd (after the configuration: it registers as an exec host).
if answers 6445 execd; then
    sleep 0.2    # one told to stop may answer for a moment more
    answers 6445 execd || start "$execd_pid" sge_execd
else
    start "$execd_pid" sge_execd
fi

# --- smoke test: a job of a test user on this host, submitted from /tmp
# as the tests will (runuser keeps root's HOME, which plusu1 cannot read),
# waited for: -sync y returns the job's exit status. The first job waits for
# the execd's first load report. Not while all.q here is suspended, disabled
# or in error (a reservation left over by an interrupted test, say).
state=$(qstat -f -q "$queue@$host" | awk -v q="$queue@$host" '$1 == q { print $6 }')
if [[ $state == *[sdSCE]* ]]; then
    echo "$tag: $queue@$host is in state \"$state\": no smoke test (qmod -e/-usq/-c $queue@$host)" >&2
elif ! out=$(cd /tmp && runuser -u plusu1 -- \
        timeout 120 qsub -sync y -b y -l "h=$host" -o /dev/null -j y -N plus-smoke true 2>&1); then
    echo "$out" >&2
    qstat -f -u '*' >&2 || true
    die "smoke test FAILED: a job of plusu1 did not run"
fi
phase smoke
