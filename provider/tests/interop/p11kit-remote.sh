#!/usr/bin/env bash
# The token used from another process through p11-kit's RPC: `p11-kit
# server` exports it on a Unix socket, `p11-kit-client.so` is the module the
# consumer loads (here pkcs11-tool, as a container or another machine would
# with the socket forwarded). Checks what the installed p11-kit forwards:
# listing, login, key generation, raw ECDSA signing and verification, and
# that the objects made remotely are on the token. What Debian 12's p11-kit
# 0.24.1 does not forward is printed as notes, not asserted (a newer p11-kit
# forwards more): see docs/operations.md, "Using the token from elsewhere".
source "$(dirname "$0")/lib.sh"
T="remote"
client=$(find /usr/lib /usr/lib64 -name p11-kit-client.so 2>/dev/null | head -1)
if ! command -v p11-kit >/dev/null || [ -z "$client" ]; then
  echo "p11kit-remote: SKIPPED: p11-kit or p11-kit-client.so is not installed (Debian: p11-kit, p11-kit-modules)"
  exit 0
fi
new_token "$T" || { echo "cannot create token"; exit 1; }
sock="$WORK/p11-kit.sock"
p11-kit server -f --provider "$MODULE" -n "$sock" "pkcs11:token=$T" >"$WORK/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
check "p11-kit server listens on its socket" test -S "$sock"
export P11_KIT_SERVER_ADDRESS="unix:path=$sock"
remote() { timeout 60 pkcs11-tool --module "$client" "$@"; }
P=(--token-label "$T" --login --pin "$USER_PIN")
check "the client lists the token" bash -c "timeout 60 pkcs11-tool --module '$client' -L | grep -q 'token label *: $T'"
check "keypairgen EC P-256 through the client" remote "${P[@]}" --keypairgen --key-type EC:prime256v1 --id 01 --label k
check "keygen AES-256 through the client" remote "${P[@]}" --keygen --key-type AES:32 --id 02 --label a
echo "a message" > "$WORK/msg"
openssl dgst -sha256 -binary "$WORK/msg" > "$WORK/hash"
check "raw ECDSA signs through the client" remote "${P[@]}" --sign -m ECDSA --id 01 -i "$WORK/hash" -o "$WORK/sig"
check "the signature is 64 bytes" test "$(stat -c %s "$WORK/sig")" -eq 64
# pkcs11-tool exits 0 either way: its words tell.
verify() { remote "${P[@]}" --verify -m ECDSA --id 01 -i "$1" --signature-file "$WORK/sig" 2>&1; }
valid=$(verify "$WORK/hash")
check "and verifies through the client" grep -q 'Signature is valid' <<<"$valid"
other=$(verify "$WORK/msg")
check "another digest does not verify" grep -qi 'invalid' <<<"$other"
check_fails "a wrong PIN is refused through the client" remote --token-label "$T" --login --pin 0000 --list-objects
kill "$server" 2>/dev/null; wait "$server" 2>/dev/null
objects=$(p11 --token-label "$T" --login --pin "$USER_PIN" --list-objects 2>&1)
check "the EC key made remotely is on the token" grep -q 'label: *k' <<<"$objects"
check "the AES key made remotely is on the token" grep -q 'label: *a' <<<"$objects"
# What this p11-kit's RPC forwards beyond that, for the record.
p11-kit server -f --provider "$MODULE" -n "$sock" "pkcs11:token=$T" >"$WORK/server.log" 2>&1 &
server=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
for m in ECDSA-SHA256; do
  if remote "${P[@]}" --sign -m "$m" --id 01 -i "$WORK/msg" -o "$WORK/s2" >/dev/null 2>&1; then
    echo "note p11kit-remote: $m is forwarded by this p11-kit"
  else
    echo "note p11kit-remote: $m is not forwarded by this p11-kit"
  fi
done
finish
