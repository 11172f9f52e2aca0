# Shared helpers for the interop scripts: a fresh token directory, the
# module path, and pass/fail counting. Source it; call `finish` at the end.
set -uo pipefail

MODULE="${DALEK_PKCS11_MODULE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/target/release/libdalek_pkcs11.so}"
[ -f "$MODULE" ] || { echo "interop: module not found at $MODULE (build with cargo build --release)" >&2; exit 2; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export DALEK_PKCS11_TOKEN_DIR="$WORK/tokens"
export DALEK_PKCS11_STORAGE=sqlite
unset DALEK_PKCS11_CONFIG
SO_PIN=87654321
USER_PIN=1234
PASSED=0
FAILED=0
SUITE="$(basename "$0" .sh)"

p11() { pkcs11-tool --module "$MODULE" "$@"; }

# use_tokens NAME: a token store of NAME's own: the directory
# $WORK/tokens-NAME or, when DALEK_PKCS11_INTEROP_POSTGRES names a
# PostgreSQL database (a connection URI; its password in PGPASSFILE), the
# schema interop_NAME of it, emptied first.
use_tokens() {
  export DALEK_PKCS11_TOKEN_DIR="$WORK/tokens-$1"
  if [ -n "${DALEK_PKCS11_INTEROP_POSTGRES:-}" ]; then
    local schema="interop_${1//[^a-zA-Z0-9]/_}"
    psql -X -q -v ON_ERROR_STOP=1 "$DALEK_PKCS11_INTEROP_POSTGRES" \
      -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema" >/dev/null
    export DALEK_PKCS11_STORAGE="$DALEK_PKCS11_INTEROP_POSTGRES?options=-csearch_path%3D$schema"
  fi
}

# check NAME COMMAND...: runs the command, counts the outcome.
check() {
  local name="$1"; shift
  local log="$WORK/last.log"
  if "$@" >"$log" 2>&1; then
    PASSED=$((PASSED + 1)); echo "ok   $SUITE: $name"
  else
    FAILED=$((FAILED + 1)); echo "FAIL $SUITE: $name"; sed 's/^/     | /' "$log" | tail -20
  fi
}

# check_fails NAME COMMAND...: the command must fail.
check_fails() {
  local name="$1"; shift
  if "$@" >"$WORK/last.log" 2>&1; then
    FAILED=$((FAILED + 1)); echo "FAIL $SUITE: $name (succeeded but must fail)"
  else
    PASSED=$((PASSED + 1)); echo "ok   $SUITE: $name"
  fi
}

# count_cases PROGRAM MIN_CASES COMMAND...: runs a test program that prints
# "ok NAME" or "FAIL NAME: reason" per case, turns each line into a check,
# and checks that it exited 0 after at least MIN_CASES cases.
count_cases() {
  local program="$1" min="$2"; shift 2
  local out="$WORK/$program.out" rc cases=0 line rest
  "$@" > "$out" 2>&1
  rc=$?
  while IFS= read -r line; do
    case "$line" in
      "ok "*) cases=$((cases + 1)); check "${line#ok }" true ;;
      "FAIL "*)
        cases=$((cases + 1)); rest="${line#FAIL }"
        check "${rest%%: *}" bash -c 'printf "%s\n" "$1"; false' _ "${rest#*: }" ;;
      *) printf '     | %s\n' "$line" ;;
    esac
  done < "$out"
  check "$program ran every case and exited 0 (exit $rc, $cases cases)" test "$rc" -eq 0 -a "$cases" -ge "$min"
}

finish() {
  echo "$SUITE: $PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}

# A token labelled $1 with the PINs above.
new_token() {
  p11 --init-token --slot-index 0 --label "$1" --so-pin "$SO_PIN" >/dev/null 2>&1 || return 1
  p11 --token-label "$1" --init-pin --login --login-type so --so-pin "$SO_PIN" --pin "$USER_PIN" >/dev/null 2>&1
}

# slot_of LABEL: the slot ID (decimal) of the token labelled LABEL, as
# pkcs11-tool -L lists it (slot IDs are not indexes: look them up by label).
slot_of() {
  local id
  id=$(p11 -L 2>/dev/null | awk -v t="$1" '
    /^Slot [0-9]+ \(0x[0-9a-fA-F]+\)/ { id = $3; gsub(/[()x:]/, "", id) }
    $1 == "token" && $2 == "label" && $4 == t { print id; exit }')
  [ -n "$id" ] && echo $((16#$id))
}

# SubjectPublicKeyInfo (DER) of an Ed25519 key from its CKA_EC_POINT hex (04 20 || point).
ed25519_spki() {
  local point="${1#0420}"
  printf '302a300506032b6570032100%s' "$point" | xxd -r -p
}
