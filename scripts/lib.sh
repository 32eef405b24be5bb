# Shell helpers shared by the set-up scripts; source it, then set
# PLUS_LOG_TAG (how messages begin) and PLUS_PHASE_TIMES=yes (timing lines).

t_last=${EPOCHREALTIME//[.,]/}
phase() {   # phase NAME: print the time since the previous phase ended
    [[ ${PLUS_PHASE_TIMES:-} == yes ]] || return 0
    local now=${EPOCHREALTIME//[.,]/}
    local us=$((now - t_last))
    printf '%s: %-9s %3d.%02ds\n' "${PLUS_LOG_TAG:-setup}" "$1" $((us / 1000000)) $((us % 1000000 / 10000)) >&2
    t_last=$now
}

# Run a command with only fds 0-2 open. For whatever may start a server
# (apt's postinst or pg_ctlcluster starting PostgreSQL): it outlives us and
# must not hold a lock nor a pipe whose reader waits for EOF (one of ours,
# or one a CI runner passed down), or our caller would hang.
no_fds() (
    for fd in /proc/$BASHPID/fd/*; do
        fd=${fd##*/}
        if ((fd > 2)); then eval "exec $fd>&-"; fi
    done
    exec "$@" </dev/null
)
