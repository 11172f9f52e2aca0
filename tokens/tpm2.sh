#!/usr/bin/env bash
# A tpm2-pkcs11 token over a software TPM, for benchmarking a token nobody here
# wrote. Everything lives in DIR: swtpm's state, a private session D-Bus,
# tpm2-abrmd on it (talking to swtpm directly runs out of TPM object memory),
# and the tpm2-pkcs11 store.
#
#   tokens/tpm2.sh up DIR     start swtpm, dbus-daemon and tpm2-abrmd, make a
#                             token; write DIR/env (shell assignments to source:
#                             MODULE, LABEL, PIN, SO_PIN and the variables the
#                             module needs) and print it
#   tokens/tpm2.sh down DIR   stop the daemons started by `up` (by their pids)
#
# Packages: swtpm swtpm-tools tpm2-tools libtpm2-pkcs11-1 libtpm2-pkcs11-tools
# tpm2-abrmd libtss2-tcti-tabrmd0 dbus (scripts/install-deps tokens).
set -euo pipefail

usage() { echo "usage: $0 up|down DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1 dir=$2
label=${TPM2_TOKEN_LABEL:-hsm-bench-tpm}
pin=${TPM2_TOKEN_PIN:-123456}
so_pin=${TPM2_TOKEN_SO_PIN:-12345678}

stop_pid() { # FILE: end the process whose pid FILE holds, if still running
  local f=$1 p
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill "$p" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  fi
  rm -f "$f"
}

down() {
  stop_pid "$dir/abrmd.pid"
  stop_pid "$dir/swtpm.pid"
  stop_pid "$dir/dbus.pid"
}

module_path() {
  local m
  for m in /usr/lib/x86_64-linux-gnu/pkcs11/libtpm2_pkcs11.so \
           /usr/lib/"$(uname -m)"-linux-gnu/pkcs11/libtpm2_pkcs11.so \
           /usr/lib/"$(uname -m)"-linux-gnu/libtpm2_pkcs11.so.1 \
           /usr/lib64/pkcs11/libtpm2_pkcs11.so /usr/lib/pkcs11/libtpm2_pkcs11.so; do
    [ -f "$m" ] && { echo "$m"; return 0; }
  done
  return 1
}

up() {
  local t m port bus i
  for t in swtpm tpm2-abrmd tpm2_ptool tpm2_getrandom dbus-daemon; do
    command -v "$t" >/dev/null || { echo "$0: $t not found (scripts/install-deps tokens)" >&2; exit 3; }
  done
  m=$(module_path) || { echo "$0: libtpm2_pkcs11.so not found (scripts/install-deps tokens)" >&2; exit 3; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  down # a previous `up` in DIR
  rm -rf "$dir/state" "$dir/store"
  mkdir -p "$dir/state" "$dir/store"

  # swtpm on a free loopback port pair (the control port is port+1).
  for i in 1 2 3 4 5 6 7 8 9 10; do
    port=$((20000 + (RANDOM % 20000) * 2))
    if swtpm socket --tpm2 --tpmstate dir="$dir/state" \
        --server type=tcp,port=$port,bindaddr=127.0.0.1 \
        --ctrl type=tcp,port=$((port + 1)),bindaddr=127.0.0.1 \
        --flags not-need-init,startup-clear --daemon \
        --pid file="$dir/swtpm.pid" --log file="$dir/swtpm.log" 2>>"$dir/swtpm.log"; then
      break
    fi
    port=
  done
  [ -n "$port" ] || { echo "$0: swtpm did not start (see $dir/swtpm.log)" >&2; exit 1; }

  # A private session bus, then the access broker on it. tpm2-pkcs11 keeps
  # every key it generates loaded until C_Finalize (C_DestroyObject does not
  # flush it), so a key generation op would exceed abrmd's default of 27
  # transient objects per client after a dozen key pairs (CKR_GENERAL_ERROR).
  dbus-daemon --session --fork --print-address=3 --print-pid=4 3>"$dir/dbus.addr" 4>"$dir/dbus.pid"
  bus=$(head -n1 "$dir/dbus.addr")
  DBUS_SESSION_BUS_ADDRESS=$bus setsid tpm2-abrmd --session --allow-root --flush-all \
    --max-transients="${TPM2_MAX_TRANSIENTS:-100}" \
    --tcti="swtpm:host=127.0.0.1,port=$port" >"$dir/abrmd.log" 2>&1 </dev/null &
  echo $! >"$dir/abrmd.pid"

  export DBUS_SESSION_BUS_ADDRESS=$bus TPM2TOOLS_TCTI=tabrmd:bus_type=session \
    TPM2_PKCS11_TCTI=tabrmd:bus_type=session TPM2_PKCS11_STORE=$dir/store
  for i in $(seq 50); do
    tpm2_getrandom 4 >/dev/null 2>&1 && break
    [ "$i" -lt 50 ] || { echo "$0: tpm2-abrmd is not answering (see $dir/abrmd.log)" >&2; down; exit 1; }
    sleep 0.1
  done
  tpm2_ptool init --path "$dir/store" >"$dir/ptool.log"
  tpm2_ptool addtoken --pid 1 --label "$label" --sopin "$so_pin" --userpin "$pin" \
    --path "$dir/store" >>"$dir/ptool.log"

  cat >"$dir/env" <<EOF
MODULE=$m
LABEL=$label
PIN=$pin
SO_PIN=$so_pin
export DBUS_SESSION_BUS_ADDRESS='$bus'
export TPM2_PKCS11_TCTI=tabrmd:bus_type=session
export TPM2_PKCS11_STORE=$dir/store
export TPM2TOOLS_TCTI=tabrmd:bus_type=session
EOF
  cat "$dir/env"
}

case $cmd in
  up) up ;;
  down) down ;;
  *) usage ;;
esac
