#!/usr/bin/env bash
# RabbitMQ 4.0 beside the machine's RabbitMQ 3.10, for the tests (docs/TESTING.md, "RabbitMQ 4").
#
# Debian bookworm ships RabbitMQ 3.10; trixie's rabbitmq-server 4.0.5 needs Erlang 27, whose
# binaries need a newer glibc than bookworm's, so it runs from a debootstrap chroot of trixie. The
# chroot shares the network; the node listens on 127.0.0.1:5673 with its own epmd (4370) and
# distribution port (25673), so it never meets the 3.10 node (5672, epmd 4369, 25672).
#
#   .ci/rabbitmq4.sh start     build the chroot if missing (~4 min, ~370 MB, once), start the node
#   .ci/rabbitmq4.sh stop      stop the node and its epmd
#   .ci/rabbitmq4.sh status    exit 0 when the node answers
#   .ci/rabbitmq4.sh ctl ARGS  rabbitmqctl ARGS against this node (what IDEM_RABBITMQCTL names)
#   .ci/rabbitmq4.sh env       the variables that point the tests at this node, for eval
#
# Environment: RABBITMQ4_ROOT (default /var/lib/rabbitmq4-chroot), RABBITMQ4_SUITE (trixie),
# RABBITMQ4_MIRROR (http://deb.debian.org/debian). Building the chroot needs root, debootstrap
# (installed with apt-get when missing) and the Debian mirror; without them `start` fails with one
# line saying which is missing.
set -euo pipefail

root=${RABBITMQ4_ROOT:-/var/lib/rabbitmq4-chroot}
suite=${RABBITMQ4_SUITE:-trixie}
mirror=${RABBITMQ4_MIRROR:-http://deb.debian.org/debian}
node=rabbit4@localhost
port=5673
self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
env4=(ERL_EPMD_PORT=4370 ERL_EPMD_ADDRESS=127.0.0.1 HOME=/var/lib/rabbitmq
      RABBITMQ_NODENAME=$node RABBITMQ_NODE_PORT=$port RABBITMQ_DIST_PORT=25673)

fail() { echo "[rabbitmq4] $*" >&2; exit 1; }
inroot() { chroot "$root" /usr/bin/env "${env4[@]}" "$@"; }
ready() { [ -f "$root/.idem-rabbitmq4-ready" ]; }

install_root() {
  ready && return
  [ "$(id -u)" = 0 ] || fail "cannot build the RabbitMQ 4 chroot at $root: this needs root (debootstrap, chroot, mount)"
  if ! command -v debootstrap >/dev/null; then
    echo "[rabbitmq4] installing debootstrap" >&2
    apt-get install -y -q debootstrap >/dev/null 2>&1 \
      || fail "cannot build the RabbitMQ 4 chroot: debootstrap is not installed and 'apt-get install -y debootstrap' failed"
  fi
  local partial="$root.partial" log="${TMPDIR:-/tmp}/rabbitmq4-debootstrap.log"
  rm -rf "$partial"
  mkdir -p "$(dirname "$root")"
  echo "[rabbitmq4] building the $suite chroot with rabbitmq-server at $root (once: ~4 min, ~370 MB; log $log)" >&2
  if ! debootstrap --variant=minbase --include=rabbitmq-server "$suite" "$partial" "$mirror" >"$log" 2>&1; then
    rm -rf "$partial"
    fail "cannot build the RabbitMQ 4 chroot: debootstrap $suite from $mirror failed (last lines of $log: $(tail -n 3 "$log" | tr '\n' ' '))"
  fi
  [ -x "$partial/usr/sbin/rabbitmq-server" ] || fail "the $suite chroot has no /usr/sbin/rabbitmq-server (see $log)"
  mkdir -p "$partial/etc/rabbitmq"
  # guest may connect from 127.0.0.1 only anyway: the listener is on the loopback interface
  printf 'listeners.tcp.default = 127.0.0.1:%s\nloopback_users = none\n' "$port" > "$partial/etc/rabbitmq/rabbitmq.conf"
  rm -rf "$root"
  mv "$partial" "$root"
  touch "$root/.idem-rabbitmq4-ready"
}

# rabbitmqctl is an Erlang VM of its own: on a loaded machine it needs more than a few seconds
up() { timeout $(( ${1:-10} + 30 )) chroot "$root" /usr/bin/env "${env4[@]}" \
  rabbitmqctl -n "$node" -q await_startup --timeout "${1:-10}" >/dev/null 2>&1; }

port_taken() { ss -ltnH "sport = :$port" 2>/dev/null | grep -q .; }

start() {
  install_root
  mountpoint -q "$root/proc" || mount -t proc proc "$root/proc" \
    || fail "cannot mount /proc in $root (chroot needs a privileged root)"
  if port_taken; then
    if up 60; then echo "[rabbitmq4] RabbitMQ $(inroot rabbitmqctl -n "$node" -q version) already running on 127.0.0.1:$port"; return; fi
    fail "127.0.0.1:$port is taken by another process, not this RabbitMQ 4 node: $(ss -ltnpH "sport = :$port" | head -n 1)"
  fi
  inroot bash -c 'mkdir -p /var/lib/rabbitmq /var/log/rabbitmq && chown -R rabbitmq:rabbitmq /var/lib/rabbitmq /var/log/rabbitmq && rabbitmq-server -detached' >/dev/null 2>&1 \
    || fail "rabbitmq-server -detached failed in $root (logs: $root/var/log/rabbitmq)"
  local deadline=$(( $(date +%s) + 180 ))
  until up 10; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "RabbitMQ 4 did not start within 3 min (logs: $root/var/log/rabbitmq)"
    sleep 2
  done
  echo "[rabbitmq4] RabbitMQ $(inroot rabbitmqctl -n "$node" -q version) on 127.0.0.1:$port"
}

stop() {
  [ -d "$root" ] || return 0
  inroot rabbitmqctl -n "$node" -q stop >/dev/null 2>&1 || true
  for _ in $(seq 1 10); do                           # the chroot's own epmd, on port 4370
    inroot epmd -kill >/dev/null 2>&1 && break; sleep 1
  done
  umount "$root/proc" 2>/dev/null || true
}

case "${1:-status}" in
  start) start ;;
  stop) stop ;;
  status) up 30 && echo running || { echo stopped; exit 1; } ;;
  ctl) shift; inroot rabbitmqctl -n "$node" "$@" ;;
  env)
    echo "export IDEM_RABBITMQ_URI='amqp://guest:guest@127.0.0.1:$port/%2F'"
    echo "export IDEM_RABBITMQCTL='$self ctl'" ;;
  *) echo "usage: $0 start|stop|status|ctl ARGS...|env" >&2; exit 2 ;;
esac
