#!/usr/bin/env bash
# OpenSSL 3 through pkcs11-provider, configured with docs/openssl-provider.cnf:
# public keys exported, signatures with Ed25519, P-256 and RSA-2048 token
# keys verified by plain OpenSSL, `req -x509` self-signed with each key on the
# token, and a TLS 1.3 `s_server` whose key stays in the token, reached by a
# plain `s_client`. Debian 12 does not package pkcs11-provider: where it is
# not installed the suite says so and skips (docs/consumers.md shows how to
# build it).
source "$(dirname "$0")/lib.sh"
moddir="$(openssl version -m | sed -n 's/^MODULESDIR: "\(.*\)"$/\1/p')"
if [ ! -f "$moddir/pkcs11.so" ]; then
  echo "skip $SUITE: pkcs11-provider is not installed ($moddir/pkcs11.so); Debian 12 does not package it: see docs/consumers.md, \"OpenSSL 3 (pkcs11-provider)\", to build it"
  exit 0
fi
T="provider"
new_token "$T" || { echo "cannot create token"; exit 1; }
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
printf '%s' "$USER_PIN" > "$WORK/pin"
chmod 600 "$WORK/pin"
sed -e "s|^pkcs11-module-path = .*|pkcs11-module-path = $MODULE|" \
    -e "s|^pkcs11-module-token-pin = .*|pkcs11-module-token-pin = file:$WORK/pin|" \
    "$ROOT/docs/openssl-provider.cnf" > "$WORK/openssl.cnf"
prov() { OPENSSL_CONF="$WORK/openssl.cnf" openssl "$@"; }
uri() { echo "pkcs11:token=$T;object=$1;type=$2"; }
P=(--token-label "$T" --login --pin "$USER_PIN")
check "the provider loads our module" bash -c "OPENSSL_CONF='$WORK/openssl.cnf' openssl list -providers | grep -qi pkcs11"
check "keypairgen Ed25519" p11 "${P[@]}" --keypairgen --key-type EC:edwards25519 --id 01 --label edkey
check "keypairgen EC P-256" p11 "${P[@]}" --keypairgen --key-type EC:prime256v1 --id 02 --label eckey
check "keypairgen RSA-2048" p11 "${P[@]}" --keypairgen --key-type RSA:2048 --id 03 --label rsakey
head -c 3000 /dev/urandom > "$WORK/data"

for key in edkey eckey rsakey; do
  check "$key: public key exported through the provider" \
    prov pkey -pubin -in "$(uri $key public)" -pubout -out "$WORK/$key.pub"
  if [ "$key" = edkey ]; then
    check "$key: pkeyutl -sign -rawin on the token, verified by plain openssl" bash -c "
      OPENSSL_CONF='$WORK/openssl.cnf' openssl pkeyutl -sign -rawin -inkey '$(uri $key private)' -in '$WORK/data' -out '$WORK/$key.sig' &&
      openssl pkeyutl -verify -rawin -pubin -inkey '$WORK/$key.pub' -in '$WORK/data' -sigfile '$WORK/$key.sig'"
  else
    check "$key: dgst -sign on the token, verified by plain openssl" bash -c "
      OPENSSL_CONF='$WORK/openssl.cnf' openssl dgst -sha256 -sign '$(uri $key private)' -out '$WORK/$key.sig' '$WORK/data' &&
      openssl dgst -sha256 -verify '$WORK/$key.pub' -signature '$WORK/$key.sig' '$WORK/data'"
    check_fails "$key: plain openssl rejects the signature on other data" \
      openssl dgst -sha256 -verify "$WORK/$key.pub" -signature "$WORK/$key.sig" "$WORK/pin"
  fi
  check "$key: req -x509 signed on the token; openssl verify accepts it" bash -c "
    OPENSSL_CONF='$WORK/openssl.cnf' openssl req -new -x509 -key '$(uri $key private)' -subj '/CN=localhost' -days 1 -out '$WORK/$key.crt' &&
    openssl verify -CAfile '$WORK/$key.crt' '$WORK/$key.crt' &&
    [ \"\$(openssl x509 -in '$WORK/$key.crt' -noout -pubkey)\" = \"\$(cat '$WORK/$key.pub')\" ]"
done

# TLS 1.3: s_server signs its handshakes with the token's P-256 key (the key
# never leaves the token); a plain s_client checks the certificate.
tls_handshake() {
  local port pid out
  for _ in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 20000))
    OPENSSL_CONF="$WORK/openssl.cnf" openssl s_server -accept "127.0.0.1:$port" -tls1_3 \
      -cert "$WORK/$1.crt" -key "$(uri "$1" private)" -naccept 1 -quiet > "$WORK/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 50); do
      if out="$(echo | openssl s_client -connect "127.0.0.1:$port" -tls1_3 -CAfile "$WORK/$1.crt" -verify_return_error -brief 2>&1)"; then
        wait "$pid" 2>/dev/null
        echo "$out"
        grep -q "Protocol version: TLSv1.3" <<<"$out" && grep -q "Verification: OK" <<<"$out"
        return
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    grep -qi "address in use" "$WORK/server.log" || { cat "$WORK/server.log"; return 1; }
  done
  return 1
}
check "TLS 1.3 s_server with the P-256 key on the token; s_client verifies" tls_handshake eckey
check "TLS 1.3 s_server with the RSA-2048 key on the token; s_client verifies" tls_handshake rsakey
check "TLS 1.3 s_server with the Ed25519 key on the token; s_client verifies" tls_handshake edkey
finish
