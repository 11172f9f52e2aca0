#!/usr/bin/env bash
# GnuTLS's p11tool against the module: listing, and --test-sign (which signs
# with the token key and verifies with GnuTLS against the public key).
source "$(dirname "$0")/lib.sh"
T="gnutls"
new_token "$T" || { echo "cannot create token"; exit 1; }
export GNUTLS_PIN="$USER_PIN"
P=(--token-label "$T" --login --pin "$USER_PIN")
check "keypairgen EC P-256" p11 "${P[@]}" --keypairgen --key-type EC:prime256v1 --id 01 --label ec
check "keypairgen RSA-2048" p11 "${P[@]}" --keypairgen --key-type RSA:2048 --id 02 --label rsa
check "p11tool --list-all shows both public keys" bash -c "
  out=\$(p11tool --provider '$MODULE' --list-all 'pkcs11:token=$T') &&
  echo \"\$out\" | grep -q 'ECDSA-SECP256R1' && echo \"\$out\" | grep -q 'RSA-2048'"
check "p11tool --login --list-privkeys shows both private keys" bash -c "
  [ \$(p11tool --provider '$MODULE' --login --list-privkeys 'pkcs11:token=$T' | grep -c 'type=private') -eq 2 ]"
check "p11tool --list-mechanisms lists ECDSA" bash -c "p11tool --provider '$MODULE' --list-mechanisms 'pkcs11:token=$T' | grep -q CKM_ECDSA"
for key in ec rsa; do
  check "p11tool --test-sign with the $key key" bash -c "
    p11tool --provider '$MODULE' --login --test-sign 'pkcs11:token=$T;object=$key' 2>&1 | tee /dev/stderr | grep -q 'Verifying against public key in the token... ok'"
done
check_fails "p11tool --test-sign with a wrong PIN" env GNUTLS_PIN=0000 p11tool --provider "$MODULE" --login --test-sign "pkcs11:token=$T;object=ec"
finish
