#!/usr/bin/env bash
# OpenSSL through the pkcs11 engine (libengine-pkcs11-openssl), configured
# with docs/openssl-pkcs11.cnf: signing with token keys (P-256, RSA-2048,
# P-521), verified by plain OpenSSL, and a self-signed certificate made
# with each key on the token.
source "$(dirname "$0")/lib.sh"
T="engine"
new_token "$T" || { echo "cannot create token"; exit 1; }
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
sed "s|^MODULE_PATH = .*|MODULE_PATH = $MODULE|" "$ROOT/docs/openssl-pkcs11.cnf" > "$WORK/openssl.cnf"
ENGINE_CONF="$WORK/openssl.cnf"
P=(--token-label "$T" --login --pin "$USER_PIN")
check "keypairgen EC P-256" p11 "${P[@]}" --keypairgen --key-type EC:prime256v1 --id 01 --label eckey
check "keypairgen RSA-2048" p11 "${P[@]}" --keypairgen --key-type RSA:2048 --id 02 --label rsakey
check "keypairgen EC P-521" p11 "${P[@]}" --keypairgen --key-type EC:secp521r1 --id 03 --label ec521key
head -c 5000 /dev/urandom > "$WORK/data"
openssl dgst -sha256 -binary "$WORK/data" > "$WORK/hash"

eng() { OPENSSL_CONF="$ENGINE_CONF" openssl "$@"; }
uri() { echo "pkcs11:token=$T;object=$1;type=private?pin-value=$USER_PIN"; }

for key in eckey rsakey ec521key; do
  check "export $key public key through the engine" bash -c "
    OPENSSL_CONF='$ENGINE_CONF' openssl pkey -engine pkcs11 -inform engine -in '$(uri $key)' -pubout -out '$WORK/$key.pub.pem'"
  check "pkeyutl -sign with $key through the engine, verified by plain openssl" bash -c "
    OPENSSL_CONF='$ENGINE_CONF' openssl pkeyutl -engine pkcs11 -keyform engine -inkey '$(uri $key)' -sign -pkeyopt digest:sha256 -in '$WORK/hash' -out '$WORK/$key.sig' &&
    openssl pkeyutl -verify -pubin -inkey '$WORK/$key.pub.pem' -pkeyopt digest:sha256 -in '$WORK/hash' -sigfile '$WORK/$key.sig'"
  check "dgst -sign with $key through the engine, verified by plain openssl" bash -c "
    OPENSSL_CONF='$ENGINE_CONF' openssl dgst -engine pkcs11 -keyform engine -sign '$(uri $key)' -sha256 -out '$WORK/$key.dsig' '$WORK/data' &&
    openssl dgst -sha256 -verify '$WORK/$key.pub.pem' -signature '$WORK/$key.dsig' '$WORK/data'"
  check_fails "plain openssl rejects the $key signature on other data" openssl dgst -sha256 -verify "$WORK/$key.pub.pem" -signature "$WORK/$key.dsig" "$WORK/hash"
  check "req -new -x509 with $key on the token; openssl verify accepts the self-signature" bash -c "
    OPENSSL_CONF='$ENGINE_CONF' openssl req -new -x509 -engine pkcs11 -keyform engine -key '$(uri $key)' -subj '/CN=dalek-$key' -days 1 -sha256 -out '$WORK/$key.crt' &&
    openssl verify -CAfile '$WORK/$key.crt' '$WORK/$key.crt' &&
    [ \"\$(openssl x509 -in '$WORK/$key.crt' -noout -pubkey)\" = \"\$(cat '$WORK/$key.pub.pem')\" ]"
done
finish
