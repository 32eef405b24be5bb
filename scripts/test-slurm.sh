#!/usr/bin/env bash
# A real Slurm for the tests of the Slurm backend: Debian 12's slurm-wlm
# (22.05) with munge, a cluster of its own ("plustest"): slurmctld and four
# slurmd, the nodes snode1..snode4 (4 cores and 1000 MB each, whatever this
# machine has), in the partitions "debug" (all, the default) and "pair"
# (snode3, snode4); no slurmdbd. Jobs really run, as the user who submits.
# Run as root; idempotent; quiet unless it installs, starts a daemon or
# fails; safe after a reboot (daemons dead, pid files stale: daemons are
# found by their command line, not by pid files).
#
# Why all four slurmd on this machine (slurmd -N snodeI, a port each) and
# not each in a network namespace as scripts/sge-hosts.sh does for Grid
# Engine: Debian's Slurm is built with multiple-slurmd support
# ("scontrol show config" says MULTIPLE_SLURMD = Yes), so several slurmd
# share one host name and address with a port of their own, and a job's
# steps find their node by name (SLURMD_NODENAME). No bridge, no addresses,
# no /etc/hosts entries, nothing that a reboot or the Grid Engine hosts'
# network can break; srun's connections back to the submitting shell stay
# on 127.0.0.1. Tracking by proctrack/linuxproc needs no cgroups.
#
# Timings are short so that tests are quick: the schedulers run every
# second, a killed job gets 2 s between SIGTERM and SIGKILL, and a node
# whose slurmd is gone is DOWN after 30 s.
#
# Files: /etc/slurm/slurm.conf (the clients' default: plain sbatch, squeue,
# scontrol work for every user); state and slurmd spools in
# /var/lib/plus-test-slurm; logs in /var/log/plus-test-slurm; pid files in
# /run/plus-test-slurm.
set -euo pipefail
umask 022
export DEBIAN_FRONTEND=noninteractive
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PLUS_LOG_TAG=${PLUS_LOG_TAG:-test-slurm}
tag=$PLUS_LOG_TAG
source "$repo/scripts/lib.sh"

die() { echo "$tag: $*" >&2; exit 1; }
[[ $EUID -eq 0 ]] || die "must run as root"

conf=/etc/slurm/slurm.conf
lib=/var/lib/plus-test-slurm
logs=/var/log/plus-test-slurm
run=/run/plus-test-slurm
nodes=(snode1 snode2 snode3 snode4)
ctld_port=6817
first_slurmd_port=6818    # snodeI listens on 6818 + I

# --- packages. no_fds: the postinsts may try to start the system services.
missing=()
for package in slurm-wlm munge; do
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null) == installed ]] ||
        missing+=("$package")
done
if ((${#missing[@]})); then
    echo "$tag: installing ${missing[*]}" >&2
    no_fds apt-get -o DPkg::Lock::Timeout=600 update -qq
    no_fds apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi
phase packages

# our_pid EXE [ARG...]: the pid of the process started here as "EXE ARG..."
# (found by its command line: after a reboot a stale pid file may name any
# process). EXE is what alternatives point at (slurmd is slurmd-wlm).
our_pid() {
    local exe want proc
    exe=$(readlink -f "$1")
    want=$(printf '%s\n' "$@")
    for proc in /proc/[0-9]*; do
        [[ $(readlink "$proc/exe" 2>/dev/null) == "$exe" ]] &&
            [[ $(tr '\0' '\n' <"$proc/cmdline" 2>/dev/null) == "$want" ]] || continue
        echo "${proc#/proc/}"
        return 0
    done
    return 1
}
# stop PID...: SIGTERM to all, then wait (bounded) for their ends (a
# zombie has ended: PID 1 may be slow to reap it)
stop() {
    local pid alive
    kill "$@" 2>/dev/null || true
    for _ in {1..100}; do
        alive=()
        for pid in "$@"; do
            [[ $(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) == [^Z]* ]] && alive+=("$pid")
        done
        ((${#alive[@]})) || return 0
        sleep 0.1
    done
    kill -9 "${alive[@]}" 2>/dev/null || true
}

# --- munge: a key if none, munged running as munge
if [[ ! -s /etc/munge/munge.key ]]; then
    (umask 077; head -c 1024 /dev/urandom >/etc/munge/munge.key)
fi
chown munge: /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge
munge_answers() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }
if ! munge_answers; then
    echo "$tag: starting munged" >&2
    # --force: a socket left by a munged that died (or by a reboot) is
    # removed; munged forks itself off (no_fds: it holds none of ours)
    no_fds setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged --force
    for _ in {1..100}; do munge_answers && break; sleep 0.1; done
    munge_answers || die "munged does not answer (see /var/log/munge/munged.log)"
fi
phase munge

# --- slurm.conf
host=$(hostname -s)
config="# written by scripts/test-slurm.sh: the test cluster (snode1..snode4 on this machine)
ClusterName=plustest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
JobSubmitPlugins=lua
SchedulerParameters=sched_interval=1,bf_interval=1,bf_resolution=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=1
SlurmdParameters=config_overrides
MessageTimeout=5
TCPTimeout=2
KillWait=2
SlurmdTimeout=30
MinJobAge=300
ResvOverRun=0
StateSaveLocation=$lib/state
SlurmdSpoolDir=$lib/spool/%n
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd-%n.pid
SlurmctldLogFile=$logs/slurmctld.log
SlurmdLogFile=$logs/slurmd-%n.log"
for ((i = 1; i <= ${#nodes[@]}; i++)); do
    features=fast
    ((i <= 2)) || features=big
    config+="
NodeName=snode$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((first_slurmd_port + i)) CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=1000 Features=$features State=UNKNOWN"
done
config+="
PartitionName=debug Nodes=snode[1-4] Default=YES DefaultTime=30 MaxTime=INFINITE PriorityTier=2 PreemptMode=OFF State=UP
PartitionName=pair Nodes=snode[3-4] DefaultTime=10 MaxTime=1:00:00 PriorityTier=2 PreemptMode=OFF State=UP
PartitionName=lend Nodes=snode[1-4] DefaultTime=10 MaxTime=INFINITE PriorityTier=1 PreemptMode=REQUEUE State=UP"
changed=no
if [[ ! -f $conf || $(<"$conf") != "$config" ]]; then
    mkdir -p "${conf%/*}"
    printf '%s\n' "$config" >"$conf"
    changed=yes
fi
# the lending rule (job_submit/lua, read anew by slurmctld when it changes)
lua=${conf%/*}/job_submit.lua
if [[ ! -f $lua ]] || ! cmp -s "$repo/scripts/slurm-job-submit.lua" "$lua"; then
    install -m 0644 "$repo/scripts/slurm-job-submit.lua" "$lua"
fi
install -d -o slurm -g slurm -m 0755 "$lib" "$lib/state" "$logs" "$run"
install -d -m 0755 "$lib/spool"

# --- the daemons: restarted when the configuration changed (nodes and
# ports are read at start only), else started when not running
ctld_pid() { our_pid /usr/sbin/slurmctld; }
slurmd_pid() { our_pid /usr/sbin/slurmd -N "$1"; }
if [[ $changed == yes ]]; then
    pids=()
    for node in "${nodes[@]}"; do
        if pid=$(slurmd_pid "$node"); then pids+=("$pid"); fi
    done
    if pid=$(ctld_pid); then pids+=("$pid"); fi
    ((${#pids[@]} == 0)) || stop "${pids[@]}"
fi
started=no
if ! ctld_pid >/dev/null; then
    echo "$tag: starting slurmctld" >&2
    # slurmctld forks itself off; no_fds: it holds none of our descriptors
    (cd / && no_fds /usr/sbin/slurmctld) || die "slurmctld did not start (see $logs/slurmctld.log)"
    started=yes
fi
for _ in {1..100}; do scontrol ping 2>/dev/null | grep -q 'is UP' && break; sleep 0.1; done
scontrol ping 2>/dev/null | grep -q 'is UP' || die "slurmctld does not answer (see $logs/slurmctld.log)"
for node in "${nodes[@]}"; do
    slurmd_pid "$node" >/dev/null && continue
    echo "$tag: starting slurmd for $node" >&2
    (cd / && no_fds /usr/sbin/slurmd -N "$node") || die "slurmd for $node did not start (see $logs/slurmd-$node.log)"
    started=yes
done
phase daemons

# --- every node up: a node left DOWN or DRAINED (by an interrupted test,
# or still marked not responding from before a reboot) is resumed once its
# slurmd answers. Up means idle, or busy with jobs or a reservation.
node_states() { sinfo -h -N -p debug -o '%N %T' 2>/dev/null; }
waiting=
for ((try = 0; try < 300; try++)); do
    waiting=
    while read -r node state; do
        case $state in
            idle | allocated | mixed | reserved | completing) ;;
            *\*) waiting+=" $node($state)" ;;     # not responding (yet)
            down | drained | draining | drain | fail | failing)
                waiting+=" $node($state)"
                scontrol update nodename="$node" state=resume 2>/dev/null || true ;;
            *) waiting+=" $node($state)" ;;
        esac
    done < <(node_states)
    [[ -z $waiting ]] && (($(node_states | wc -l) == ${#nodes[@]})) && break
    sleep 0.2
done
if [[ -n $waiting ]]; then
    sinfo -N >&2 || true
    die "nodes not up after 60 s:$waiting (see $logs/slurmctld.log and $logs/slurmd-NODE.log)"
fi
phase nodes

# --- after a start: a job of a test user runs on an idle node, as that user
[[ $started == yes ]] || exit 0
target=$(sinfo -h -N -p debug -t idle -o '%N' | head -n1)
[[ -n $target ]] || { echo "$tag: no idle node: no smoke test" >&2; exit 0; }
if ! got=$(cd /tmp && runuser -u plusu1 -- timeout 60 srun -w "$target" -t 1 \
        sh -c 'echo "$(id -un) $SLURMD_NODENAME"' 2>&1) || [[ $got != "plusu1 $target" ]]; then
    echo "$got" >&2
    die "smoke test FAILED: srun of plusu1 on $target (see $logs/slurmd-$target.log)"
fi
phase smoke
