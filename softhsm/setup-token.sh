#!/usr/bin/env bash
# Creates a SoftHSM2 token in DIR (never the system token directory) and
# prints the SOFTHSM2_CONF line to use it.
# Usage: softhsm/setup-token.sh DIR LABEL SO_PIN USER_PIN
set -euo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 DIR LABEL SO_PIN USER_PIN" >&2
  exit 2
fi
dir=$1 label=$2 so_pin=$3 user_pin=$4
here="$(cd "$(dirname "$0")" && pwd)"
command -v softhsm2-util >/dev/null || { echo "$0: softhsm2-util not found (apt-get install softhsm2)" >&2; exit 1; }
mkdir -p "$dir/tokens"
dir="$(cd "$dir" && pwd)"
sed "s|@TOKENDIR@|$dir/tokens|" "$here/softhsm2.conf.in" > "$dir/softhsm2.conf"
export SOFTHSM2_CONF="$dir/softhsm2.conf"
softhsm2-util --init-token --free --label "$label" --so-pin "$so_pin" --pin "$user_pin" >/dev/null
echo "export SOFTHSM2_CONF=$dir/softhsm2.conf"
