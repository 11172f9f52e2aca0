#!/usr/bin/env bash
# opencryptoki's soft token (swtok), for benchmarking a token nobody here wrote.
#
#   tokens/opencryptoki.sh up DIR     start pkcsslotd (unless it runs already),
#                                     initialise the soft token, write DIR/env
#                                     (MODULE, LABEL, PIN, SO_PIN) and print it
#   tokens/opencryptoki.sh down DIR   restore the soft token's data directory and
#                                     stop pkcsslotd if `up` started it
#
# opencryptoki 3.8 (Debian 12) has its paths compiled in: the configuration
# /etc/opencryptoki/opencryptoki.conf (the installed one has the soft token,
# libpkcs11_sw.so), the token data /var/lib/opencryptoki/swtok and the
# daemon's socket in /var/run. So this token is machine-wide: `up` saves the
# soft token's data directory into DIR and `down` puts it back, and `up`
# refuses a soft token initialised with another label unless
# OCK_TOKEN_FORCE=1. Needs root or the pkcs11 group.
# Package: opencryptoki (scripts/install-deps tokens).
set -euo pipefail

usage() { echo "usage: $0 up|down DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1 dir=$2
label=${OCK_TOKEN_LABEL:-hsm-bench-ock}
pin=${OCK_TOKEN_PIN:-12341234}       # opencryptoki: 4 to 8 characters
so_pin=${OCK_TOKEN_SO_PIN:-12345678}
conf=/etc/opencryptoki/opencryptoki.conf
data=/var/lib/opencryptoki/swtok
pidfile=/var/run/pkcsslotd.pid
shm=/dev/shm/var.lib.opencryptoki.swtok

running_pid() { # the pid of a running pkcsslotd, if any
  local p
  [ -f "$pidfile" ] || return 1
  p=$(cat "$pidfile")
  [ -n "$p" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = pkcsslotd ] && echo "$p"
}

down() {
  local p
  if [ -f "$dir/started" ] && p=$(running_pid); then
    kill "$p" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$dir/started"
  if [ -d "$dir/swtok.orig" ]; then
    rm -rf "$data"
    cp -a "$dir/swtok.orig" "$data"
    rm -rf "$dir/swtok.orig"
    # The token's shared-memory copy (made by the library) goes with it.
    rm -f "$shm"
    if [ -f "$dir/shm.orig" ]; then mv "$dir/shm.orig" "$shm"; fi
    # Other segments the library made (one per configured token it loaded).
    local f
    for f in /dev/shm/var.lib.opencryptoki.*; do
      [ -e "$f" ] || continue
      grep -qxF "$f" "$dir/shm.list" 2>/dev/null || rm -f "$f"
    done
    rm -f "$dir/shm.list"
  fi
}

module_path() {
  local m
  for m in /usr/lib/"$(uname -m)"-linux-gnu/pkcs11/libopencryptoki.so \
           /usr/lib/"$(uname -m)"-linux-gnu/opencryptoki/libopencryptoki.so \
           /usr/lib64/opencryptoki/libopencryptoki.so /usr/lib/opencryptoki/libopencryptoki.so; do
    [ -f "$m" ] && { echo "$m"; return 0; }
  done
  return 1
}

up() {
  local m slot current
  for t in pkcsslotd pkcsconf; do
    command -v "$t" >/dev/null || { echo "$0: $t not found (scripts/install-deps tokens)" >&2; exit 3; }
  done
  m=$(module_path) || { echo "$0: libopencryptoki.so not found (scripts/install-deps tokens)" >&2; exit 3; }
  [ -f "$conf" ] || { echo "$0: $conf not found" >&2; exit 3; }
  # The slot whose stdll is the soft token.
  slot=$(awk '/^[[:space:]]*slot[[:space:]]+[0-9]+/ {s=$2} /stdll[[:space:]]*=[[:space:]]*libpkcs11_sw\.so/ {print s; exit}' "$conf")
  [ -n "$slot" ] || { echo "$0: $conf has no soft token slot (stdll = libpkcs11_sw.so)" >&2; exit 3; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  # Saved before anything touches the token (down puts them back).
  if [ ! -d "$dir/swtok.orig" ]; then
    cp -a "$data" "$dir/swtok.orig"
    if [ -f "$shm" ]; then cp -a "$shm" "$dir/shm.orig"; fi
    ls -d /dev/shm/var.lib.opencryptoki.* >"$dir/shm.list" 2>/dev/null || true
  fi

  if ! running_pid >/dev/null; then
    pkcsslotd
    touch "$dir/started"
    for _ in $(seq 30); do running_pid >/dev/null && break; sleep 0.1; done
  fi
  current=$(pkcsconf -c "$slot" -t 2>/dev/null | awk -F': ' '/Label:/ {sub(/[[:space:]]+$/, "", $2); print $2; exit}')
  if [ -n "$current" ] && [ "$current" != "IBM OS PKCS#11" ] && [ "$current" != "$label" ] \
     && [ "${OCK_TOKEN_FORCE:-0}" != 1 ]; then
    echo "$0: the soft token (slot $slot) is in use with label '$current'; not re-initialising it (OCK_TOKEN_FORCE=1 to do so)" >&2
    down
    exit 1
  fi

  # A fresh token: C_InitToken with the SO PIN (the factory SO PIN 87654321 on a
  # new token; ours after a previous run), then the user PIN, changed once
  # because opencryptoki refuses a user PIN still in its initial state.
  local old_so tries=(87654321 "$so_pin")
  [ "$current" != "$label" ] || tries=("$so_pin" 87654321)
  for old_so in "${tries[@]}"; do
    echo "$label" | pkcsconf -c "$slot" -I -S "$old_so" >/dev/null 2>&1 && break
    old_so=
  done
  [ -n "$old_so" ] || { echo "$0: pkcsconf -I failed (SO PIN neither the factory one nor ours)" >&2; down; exit 1; }
  if [ "$old_so" != "$so_pin" ]; then
    pkcsconf -c "$slot" -P -S "$old_so" -n "$so_pin" >/dev/null
  fi
  pkcsconf -c "$slot" -u -S "$so_pin" -n 11111111 >/dev/null
  pkcsconf -c "$slot" -p -U 11111111 -n "$pin" >/dev/null

  cat >"$dir/env" <<EOF
MODULE=$m
LABEL=$label
PIN=$pin
SO_PIN=$so_pin
SLOT=$slot
EOF
  cat "$dir/env"
}

case $cmd in
  up) up ;;
  down) down ;;
  *) usage ;;
esac
