#!/usr/bin/env bash
# The main job on the embedded default: install the project, configure the
# native backend (this machine plus the simulated hosts of conf/cluster.yaml,
# SQLite in /var/lib/plus), and start plus_scheduler in the background.
# Run as root on a fresh Debian machine:   bash scripts/quickstart.sh
# Then, as any user:   plus_reserve -s now+1h -D 2h -n 2   and   plus_status
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
conf_dir=/etc/plus
export PLUS_CONF=$conf_dir/plus.yaml

bash "$repo/scripts/install.sh"

# Keep a site's own configuration; install the samples only where none exists.
mkdir -p "$conf_dir"
for file in plus.yaml cluster.yaml complexes.yaml; do
    [[ -e $conf_dir/$file ]] || install -m 0644 "$repo/conf/$file" "$conf_dir/$file"
done

setting() { sed -n "s/^$1:[[:space:]]*\([^[:space:]#]*\).*/\1/p" "$PLUS_CONF"; }
state_dir=$(setting state_dir)
mkdir -p "${state_dir:=/var/lib/plus}"
log=$(setting log)
case ${log:=stderr} in
    stderr|syslog) ;;
    /*) ;;
    *) log=$state_dir/$log ;;
esac
if plus_status >/dev/null 2>&1; then
    echo "plus_scheduler is already running"
else
    # Standard error holds only what is said before the log is open (a bad
    # setting), unless the log is stderr itself.
    nohup plus_scheduler >"$state_dir/plus_scheduler.stderr" 2>&1 </dev/null &
    for _ in $(seq 100); do
        plus_status >/dev/null 2>&1 && break
        sleep 0.1
    done
    plus_status >/dev/null || { tail "$state_dir/plus_scheduler.stderr" >&2; exit 1; }
    echo "plus_scheduler started (log: $log)"
fi
plus_availnodes -s now -e now+1h
cat <<TXT

Try, as any user:
  plus_reserve -s now+1h -D 2h -n 2 -p
  plus_status -n
  plus_availnodes -s now+1h -e now+3h
  plus_cancel -r <id>
  plus_web          # a one-time link to the reservations calendar: open it in a browser
Stop it with plus_schedkill (as root).
TXT
