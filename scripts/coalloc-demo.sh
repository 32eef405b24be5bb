#!/usr/bin/env bash
# Three sites on this machine for trying co-allocation: plus_scheduler A, B
# and C, each with its own state folder, SQLite store, signing key and
# cluster of configuration-only nodes (no jobs run), and its HTTP API on
# 127.0.0.1:6831, 6832 and 6833. Run as root after scripts/quickstart.sh (or
# scripts/install.sh); USER is who will co-allocate: the script gets that
# user a token at each site and writes the sites file.
#
#   bash scripts/coalloc-demo.sh up USER     start the sites; print the sites file's path
#   bash scripts/coalloc-demo.sh down        stop them and remove /tmp/plus-demo
set -euo pipefail

demo=/tmp/plus-demo
action=${1:-}

stop_sites() {
    for site in A B C; do
        if [[ -S $demo/$site/plus.sock ]]; then
            PLUS_CONF=$demo/$site/plus.yaml plus_schedkill >/dev/null 2>&1 || true
        fi
    done
}

case $action in
up)
    user=${2:?give the user who will co-allocate: coalloc-demo.sh up USER}
    id "$user" >/dev/null
    stop_sites
    rm -rf "$demo"
    mkdir -p "$demo"
    chmod 755 "$demo"
    port=6831
    nodes=4
    for site in A B C; do
        mkdir -p "$demo/$site"
        cat >"$demo/$site/cluster.yaml" <<EOF
nodes:
  - {name: "${site,,}node[01-0$nodes]", slots: 8, exec: none}
EOF
        cat >"$demo/$site/plus.yaml" <<EOF
state_dir: .
arusers: ["*"]
commit_timeout: 120
http: {address: "127.0.0.1:$port"}
native: {cluster: cluster.yaml, local_host: false}
EOF
        PLUS_CONF=$demo/$site/plus.yaml nohup plus_scheduler -c "$demo/$site/plus.yaml" \
            >>"$demo/$site/plus_scheduler.log" 2>&1 </dev/null &
        port=$((port + 1))
        nodes=$((nodes + 2))
    done
    printf 'sites:\n' >"$demo/sites.yaml"
    port=6831
    for site in A B C; do
        for _ in $(seq 100); do
            PLUS_CONF=$demo/$site/plus.yaml plus_status >/dev/null 2>&1 && break
            sleep 0.1
        done
        runuser -u "$user" -- env PLUS_CONF="$demo/$site/plus.yaml" plus_token -l 1d \
            >"$demo/$site.token"
        chown "$user" "$demo/$site.token"
        chmod 600 "$demo/$site.token"
        printf '  %s: {url: "http://127.0.0.1:%s", token_file: %s/%s.token}\n' \
            "$site" "$port" "$demo" "$site" >>"$demo/sites.yaml"
        port=$((port + 1))
    done
    chmod 644 "$demo/sites.yaml"
    echo "$demo/sites.yaml"
    ;;
down)
    stop_sites
    rm -rf "$demo"
    ;;
*)
    echo "usage: coalloc-demo.sh up USER | down" >&2
    exit 2
    ;;
esac
