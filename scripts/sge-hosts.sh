#!/usr/bin/env bash
# More Grid Engine execution hosts on this one machine, for tests: node1..nodeN,
# each a sge_execd in a network and UTS namespace of its own, on a private
# bridge (sgebr0, 10.200.0.0/24; this host is 10.200.0.254 there, nodeI is
# 10.200.0.1I), in @allhosts and so in all.q. Jobs really run "on" them.
# Run as root, after scripts/sge-setup.sh; idempotent, safe to re-run (also
# after a reboot, or when execds died: it starts whatever does not answer).
#
#   bash scripts/sge-hosts.sh up [N]      N = 3 (at most 9)
#   bash scripts/sge-hosts.sh down [N]    remove all that "up" made
#
# Optional settings, from the environment:
#   PLUS_LOG_TAG=NAME          how messages on stderr begin (default "sge-hosts")
#   PLUS_PHASE_TIMES=yes       a timing line on stderr after each phase
#
# Traps handled here:
# - the names go into /etc/hosts before an execd first makes contact: the
#   qmaster caches a failed reverse lookup of a client IP for a minute or two
#   ("access denied: client IP resolved to host name """);
# - all execds share one PID namespace and find their jobs' processes by
#   an additional group id from gid_range; the default range is the same on
#   every host, so a qdel on one node killed jobs on another: each node gets
#   a range of its own (2I000-2I099);
# - every node reports this machine's CPUs, memory and load.
set -euo pipefail
umask 022
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PLUS_LOG_TAG=${PLUS_LOG_TAG:-sge-hosts}
tag=$PLUS_LOG_TAG
source "$repo/scripts/lib.sh"

die() { echo "$tag: $*" >&2; exit 1; }
usage() { die "usage: sge-hosts.sh up|down [N]   (N = 1..9, default 3)"; }
# has LINE TEXT: whether TEXT has that line (no "cmd | grep -q": with
# pipefail, grep's early exit may fail the pipe)
has() { grep -qxF -- "$1" <<<"$2"; }
# quiet COMMAND...: its output only if it fails (qconf says "added ..." on stderr)
quiet() {
    local out
    out=$("$@" 2>&1) || { printf '%s\n' "$out" >&2; return 1; }
}
[[ $EUID -eq 0 ]] || die "must run as root"
(($# >= 1 && $# <= 2)) || usage
action=$1
n=${2:-3}
[[ $action == up || $action == down ]] || usage
[[ $n =~ ^[1-9]$ ]] || usage

export SGE_ROOT=/var/lib/gridengine SGE_CELL=default
common=$SGE_ROOT/$SGE_CELL/common
spool=/var/spool/gridengine/execd
bridge=sgebr0
net=10.200.0
nodes=()
for ((i = 1; i <= n; i++)); do nodes+=("node$i"); done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

[[ -s $common/act_qmaster ]] || die "no Grid Engine cell: run scripts/sge-setup.sh first"
master=$(cat "$common/act_qmaster")
qconf -sh >/dev/null 2>&1 || die "sge_qmaster does not answer: run scripts/sge-setup.sh first"

# in_node NODE COMMAND...: run it in the node's network namespace, where /etc/hosts
# is /etc/netns/NODE/hosts (ip netns exec bind-mounts it)
in_node() { local node=$1; shift; ip netns exec "$node" "$@"; }
# From here, not from the node's namespace: there a client still has our
# host name (the UTS namespace is the execd's alone) but the node's address,
# and the execd denies it access.
execd_answers() { qping -info "$1" 6445 execd 1 >/dev/null 2>&1; }
# execd_alive NODE: whether the process of the node's execd pid file runs
# (a stale pid file, after a reboot, may name any process)
execd_alive() {
    local pid
    pid=$(cat "$spool/$1/execd.pid" 2>/dev/null) &&
        [[ $(cat "/proc/$pid/comm" 2>/dev/null) == sge_execd ]] &&
        [[ $(ip netns identify "$pid" 2>/dev/null) == "$1" ]]
}
# the hosts a listing names ("hostlist a b \" continued on the next lines)
hostlist() { awk '$1 == "hostlist" { $1 = "" } { gsub(/\\/, ""); print }' | tr ' ' '\n' | grep -v '^$' || true; }

up() {
    # 1. names first, in this host's /etc/hosts (also after a reboot, when
    #    they are there already).
    local i node ip
    for ((i = 1; i <= n; i++)); do
        node=node$i ip=$net.1$i
        if [[ $(grep -E "[[:space:]]$node([[:space:]]|\$)" /etc/hosts) != "$ip $node" ]]; then
            sed -i -E "/[[:space:]]$node([[:space:]]|\$)/d" /etc/hosts
            echo "$ip $node" >>/etc/hosts
        fi
    done

    # 2. the bridge; this host is $net.254 on it
    if ! ip link show "$bridge" >/dev/null 2>&1; then
        ip link add "$bridge" type bridge
    fi
    [[ $(ip -4 addr show dev "$bridge") == *" $net.254/24 "* ]] || ip addr add "$net.254/24" dev "$bridge"
    ip link set "$bridge" up

    # 3. a namespace per node, with a veth pair to the bridge
    for ((i = 1; i <= n; i++)); do
        node=node$i
        if [[ ! -e /run/netns/$node ]] || ! ip link show "vh-$node" >/dev/null 2>&1; then
            ip netns del "$node" 2>/dev/null || true
            ip link del "vh-$node" 2>/dev/null || true
            ip netns add "$node"
            ip link add "vh-$node" type veth peer name eth0 netns "$node"
            in_node "$node" ip addr add "$net.1$i/24" dev eth0
            in_node "$node" ip link set eth0 up
            in_node "$node" ip link set lo up
        fi
        ip link set "vh-$node" master "$bridge"
        ip link set "vh-$node" up
        # in the node, our name is our address on the bridge
        mkdir -p "/etc/netns/$node"
        {
            echo "127.0.0.1 localhost"
            echo "$net.254 $master"
            for ((j = 1; j <= n; j++)); do echo "$net.1$j node$j"; done
        } >"$tmp/hosts"
        cmp -s "$tmp/hosts" "/etc/netns/$node/hosts" || install -m 644 "$tmp/hosts" "/etc/netns/$node/hosts"
    done
    phase network

    # 4. Grid Engine: admin host, exec host, own gid_range, in @allhosts
    local admins execs confs group
    admins=$(qconf -sh 2>/dev/null || true)
    execs=$(qconf -sel 2>/dev/null || true)
    confs=$(qconf -sconfl 2>/dev/null || true)
    group=$(qconf -shgrp @allhosts | hostlist)
    for ((i = 1; i <= n; i++)); do
        node=node$i
        has "$node" "$admins" || quiet qconf -ah "$node"
        if ! has "$node" "$execs"; then
            printf '%s\n' "hostname $node" "load_scaling NONE" "complex_values NONE" \
                "user_lists NONE" "xuser_lists NONE" "projects NONE" "xprojects NONE" \
                "usage_scaling NONE" "report_variables NONE" >"$tmp/exechost"
            quiet qconf -Ae "$tmp/exechost"
        fi
        echo "gid_range 2${i}000-2${i}099" >"$tmp/$node"    # the file's name is the host's
        if ! has "$node" "$confs"; then
            quiet qconf -Aconf "$tmp/$node"
        elif [[ $(qconf -sconf "$node" | awk '$1 == "gid_range" { print $2 }') != "2${i}000-2${i}099" ]]; then
            quiet qconf -Mconf "$tmp/$node"
            # a running execd would keep the old range
            if execd_answers "$node"; then quiet qconf -ke "$node" || true; sleep 1; fi
        fi
        has "$node" "$group" || quiet qconf -aattr hostgroup hostlist "$node" @allhosts
    done
    phase config

    # 5. the execds: started in the node's namespaces with the node's name
    #    (they spool to $spool/nodeI). One told to stop answers no more but
    #    may hold on for a moment: wait for its end first.
    for ((i = 1; i <= n; i++)); do
        node=node$i
        execd_answers "$node" && continue
        for _ in {1..50}; do
            execd_alive "$node" || break
            sleep 0.2
        done
        if execd_alive "$node"; then kill -9 "$(cat "$spool/$node/execd.pid")" 2>/dev/null || true; fi
        echo "$tag: starting sge_execd on $node" >&2
        no_fds ip netns exec "$node" unshare --uts sh -c "hostname $node && exec /usr/sbin/sge_execd"
    done

    # 6. wait until every node has reported a load
    local waiting reporting
    for _ in {1..120}; do
        reporting=$(qhost | awk 'NR > 2 && $7 != "-" { print $1 }')
        waiting=
        for node in "${nodes[@]}"; do
            has "$node" "$reporting" || waiting+=" $node"
        done
        [[ -z $waiting ]] && break
        sleep 0.5
    done
    if [[ -n $waiting ]]; then
        qhost >&2 || true
        die "no load report after 60 s from:$waiting (see $spool/NODE/messages, /var/spool/gridengine/qmaster/messages)"
    fi
    phase execds

    # 7. smoke test: a job of a test user placed on node2 (else on another
    #    node whose all.q is not suspended, disabled or in error: a
    #    reservation left over by an interrupted test may hold some)
    local target='' out got state
    for node in node2 "${nodes[@]}"; do
        state=$(qstat -f -q "all.q@$node" | awk -v q="all.q@$node" '$1 == q { print $6 }')
        if [[ $state != *[sdSCE]* ]]; then target=$node; break; fi
    done
    if [[ -z $target ]]; then
        echo "$tag: all.q is suspended, disabled or in error on every node: no smoke test" >&2
        return
    fi
    out=$(runuser -u plusu1 -- mktemp /tmp/sge-hosts-smoke.XXXXXX)
    if ! got=$(cd /tmp && runuser -u plusu1 -- \
            timeout 120 qsub -sync y -b y -l "h=$target" -o "$out" -j y -N plus-smoke hostname 2>&1) ||
       [[ $(cat "$out") != "$target" ]]; then
        echo "$got" >&2
        cat "$out" >&2
        rm -f "$out"
        die "smoke test FAILED: a job of plusu1 did not run on $target"
    fi
    rm -f "$out"
    phase smoke
}

down() {
    local node jobs groups g pids
    groups=$(qconf -shgrpl 2>/dev/null || true)
    for node in "${nodes[@]}"; do
        # jobs there first: an exec host with jobs cannot go
        jobs=$(qstat -u '*' -s rs 2>/dev/null | awk -v h="$node" '$8 ~ "@" h "$" { print $1 }')
        [[ -z $jobs ]] || quiet qdel -f $jobs || true
        if [[ -e /run/netns/$node ]]; then
            # the execd, its shepherds and their jobs (ip netns del kills nothing)
            quiet qconf -ke "$node" || true
            pids=$(ip netns pids "$node" 2>/dev/null || true)
            [[ -z $pids ]] || kill -9 $pids 2>/dev/null || true
        fi
        for g in $groups; do
            has "$node" "$(qconf -shgrp "$g" | hostlist)" || continue
            quiet qconf -dattr hostgroup hostlist "$node" "$g" || true
        done
        if qconf -se "$node" >/dev/null 2>&1; then quiet qconf -de "$node" || true; fi
        if has "$node" "$(qconf -sh 2>/dev/null)"; then quiet qconf -dh "$node" || true; fi
        if has "$node" "$(qconf -sconfl 2>/dev/null)"; then quiet qconf -dconf "$node" || true; fi
        ip netns del "$node" 2>/dev/null || true
        ip link del "vh-$node" 2>/dev/null || true
        rm -rf "/etc/netns/$node" "${spool:?}/$node"
        rmdir /etc/netns 2>/dev/null || true
        sed -i -E "/[[:space:]]$node([[:space:]]|\$)/d" /etc/hosts
    done
    # the bridge, once no node of ours is left on it
    if ip link show "$bridge" >/dev/null 2>&1 && [[ -z $(ls "/sys/class/net/$bridge/brif" 2>/dev/null) ]]; then
        ip link del "$bridge"
    fi
    phase down
}

"$action"
