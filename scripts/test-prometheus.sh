#!/usr/bin/env bash
# A real Prometheus (Debian's package) for tests/test_metrics.py, on
# 127.0.0.1:9391, scraping every second the targets the tests write into
# /etc/plus-test/prometheus/targets/*.json (file-based discovery: a test
# adds its daemon's API there), with the bearer secret of
# /etc/plus-test/prometheus/metrics.token, which the test daemons name as
# http.metrics_token. Runs as the prometheus user; the system's prometheus
# service is left alone. Run as root; idempotent; quiet unless it installs
# or fails.
set -euo pipefail
umask 022
export DEBIAN_FRONTEND=noninteractive
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PLUS_LOG_TAG=${PLUS_LOG_TAG:-test-prometheus}
source "$repo/scripts/lib.sh"

[[ $EUID -eq 0 ]] || { echo "$PLUS_LOG_TAG: must run as root" >&2; exit 1; }

home=/etc/plus-test/prometheus
data=/var/lib/plus-test-prometheus
address=127.0.0.1:9391

# no_fds: the package's postinst may try to start the system service.
if [[ $(dpkg-query -W -f='${db:Status-Status}' prometheus 2>/dev/null) != installed ]]; then
    echo "$PLUS_LOG_TAG: installing prometheus" >&2
    no_fds apt-get -o DPkg::Lock::Timeout=600 update -qq
    no_fds apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
        prometheus >/dev/null
fi

mkdir -p "$home/targets" "$data"
chown prometheus: "$data"
if [[ ! -s $home/metrics.token ]]; then
    (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$home/metrics.token")
fi
chown prometheus: "$home/metrics.token"
chmod 0600 "$home/metrics.token"

config="# written by scripts/test-prometheus.sh
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: plus
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials_file: $home/metrics.token
    file_sd_configs:
      - files: ['$home/targets/*.json']
        refresh_interval: 1s"
changed=no
if [[ ! -f $home/prometheus.yml || $(<"$home/prometheus.yml") != "$config" ]]; then
    printf '%s\n' "$config" >"$home/prometheus.yml"
    changed=yes
fi
promtool check config "$home/prometheus.yml" >/dev/null

# Ours: the prometheus whose command line names this configuration.
ours() {
    local proc
    for proc in /proc/[0-9]*; do
        [[ $(readlink "$proc/exe" 2>/dev/null) == /usr/bin/prometheus ]] &&
            tr '\0' ' ' <"$proc/cmdline" 2>/dev/null | grep -qF -- "--config.file=$home/prometheus.yml " &&
            echo "${proc#/proc/}" && return 0
    done
    return 1
}
ready() { curl -sf --max-time 2 "http://$address/-/ready" >/dev/null 2>&1; }
if pid=$(ours); then
    [[ $changed == no ]] || kill -HUP "$pid"     # Prometheus re-reads its configuration
else
    # setsid -f forks the daemon off and returns at once. Not "&": a
    # background subshell would wait for Prometheus holding our inherited
    # descriptors, among them test-env.sh's capture pipe, which then
    # never ends (a fresh machine's CI run hung here).
    no_fds setsid -f setpriv --reuid=prometheus --regid=prometheus --init-groups \
        /usr/bin/prometheus --config.file="$home/prometheus.yml" --storage.tsdb.path="$data" \
        --storage.tsdb.retention.time=1d --web.listen-address="$address" \
        >>/var/log/plus-test-prometheus.log 2>&1
fi
for _ in {1..300}; do ready && break; sleep 0.1; done
ready || { echo "$PLUS_LOG_TAG: prometheus does not answer on $address" \
    "(/var/log/plus-test-prometheus.log)" >&2; exit 1; }
phase prometheus
