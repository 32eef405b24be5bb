#!/usr/bin/env bash
# An sshd of the tests' own on 127.0.0.1:2222, for tests/test_remote.py and
# the backends' tests over SSH. Root may log in with the key
# /etc/plus-test/ssh/id_ed25519 and nothing else; the client side trusts it
# through /etc/plus-test/ssh/known_hosts. The system's ssh service is left
# alone. Run as root; idempotent; quiet unless it installs or fails.
set -euo pipefail
umask 022
export DEBIAN_FRONTEND=noninteractive
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PLUS_LOG_TAG=${PLUS_LOG_TAG:-test-sshd}
source "$repo/scripts/lib.sh"

[[ $EUID -eq 0 ]] || { echo "$PLUS_LOG_TAG: must run as root" >&2; exit 1; }

server=/etc/plus-test/sshd
client=/etc/plus-test/ssh
pidfile=/run/plus-test-sshd.pid
port=2222

# apt-get under no_fds: openssh-server's postinst may start the system sshd,
# which must not inherit our caller's lock (fd 9) nor its pipe (fd 3).
if [[ $(dpkg-query -W -f='${db:Status-Status}' openssh-server 2>/dev/null) != installed ]]; then
    echo "$PLUS_LOG_TAG: installing openssh-server" >&2
    no_fds apt-get -o DPkg::Lock::Timeout=600 update -qq
    no_fds apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
        openssh-server >/dev/null
fi

mkdir -p "$server" "$client"
mkdir -p -m 0755 /run/sshd    # privilege separation directory
[[ -f $server/ssh_host_ed25519_key ]] ||
    ssh-keygen -q -t ed25519 -N '' -C plus-test-sshd -f "$server/ssh_host_ed25519_key"
[[ -f $client/id_ed25519 ]] ||
    ssh-keygen -q -t ed25519 -N '' -C plus-test-client -f "$client/id_ed25519"
# Rewritten each run; sshd reads authorized_keys per login: no restart.
cp "$client/id_ed25519.pub" "$server/authorized_keys"
printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$server/ssh_host_ed25519_key.pub")" \
    >"$client/known_hosts"

# UsePAM no: key logins need nothing of the machine's PAM stack.
# MaxSessions stays at OpenSSH's default (10), as on a real master host.
config="# written by scripts/test-sshd.sh
ListenAddress 127.0.0.1
Port $port
HostKey $server/ssh_host_ed25519_key
PidFile $pidfile
AllowUsers root
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AuthorizedKeysFile $server/authorized_keys
UsePAM no
Subsystem sftp internal-sftp"
changed=no
if [[ ! -f $server/sshd_config || $(<"$server/sshd_config") != "$config" ]]; then
    printf '%s\n' "$config" >"$server/sshd_config"
    changed=yes
fi
/usr/sbin/sshd -t -f "$server/sshd_config"

# Alive and our sshd: a stale pid file may name another process, and a
# dead sshd may linger as a zombie (/proc/PID exists, its exe link does not).
alive() { [[ $1 =~ ^[0-9]+$ && $(readlink "/proc/$1/exe" 2>/dev/null) == /usr/sbin/sshd ]]; }
pid=$(cat "$pidfile" 2>/dev/null || true)
running=no
if alive "$pid"; then running=yes; fi
answering() {   # the SSH banner comes back on the port
    local banner
    banner=$(timeout 2 bash -c "exec 4<>/dev/tcp/127.0.0.1/$port && head -c 4 <&4" 2>/dev/null) &&
        [[ $banner == SSH- ]]
}

if [[ $running == yes ]] && { [[ $changed == yes ]] || ! answering; }; then
    kill "$pid"
    for _ in {1..50}; do alive "$pid" || break; sleep 0.1; done
    running=no
fi
if [[ $running == no ]]; then
    rm -f "$pidfile"
    no_fds /usr/sbin/sshd -f "$server/sshd_config"
    for _ in {1..50}; do answering && break; sleep 0.1; done
    answering || { echo "$PLUS_LOG_TAG: sshd does not answer on 127.0.0.1:$port" >&2; exit 1; }
fi
phase sshd
