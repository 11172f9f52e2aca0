#!/usr/bin/env bash
# Interop with OpenSC's pkcs11-tool, every result checked by an independent
# implementation (OpenSSL, coreutils).
source "$(dirname "$0")/lib.sh"
T="interop"
P=(--token-label "$T")

check "init-token in the free slot" p11 --init-token --slot-index 0 --label "$T" --so-pin "$SO_PIN"
check "init-pin as SO" p11 "${P[@]}" --init-pin --login --login-type so --so-pin "$SO_PIN" --pin "$USER_PIN"
check "a new free slot appears" bash -c "pkcs11-tool --module '$MODULE' -L | grep -q 'uninitialized'"
check "token flags" bash -c "pkcs11-tool --module '$MODULE' -L | grep -q 'PIN initialized'"
check_fails "login with a wrong PIN" p11 "${P[@]}" --login --pin 9999 --list-objects
check "login" p11 "${P[@]}" --login --pin "$USER_PIN" --list-objects
check "keypairgen EC:edwards25519" p11 "${P[@]}" --login --pin "$USER_PIN" --keypairgen --key-type EC:edwards25519 --label ed --id 01

printf 'interop message %.0s' {1..20} > "$WORK/msg"
check "sign EDDSA" p11 "${P[@]}" --login --pin "$USER_PIN" --sign --mechanism EDDSA --id 01 -i "$WORK/msg" -o "$WORK/sig"
point=$(p11 "${P[@]}" --list-objects --type pubkey 2>/dev/null | awk '/EC_POINT:/ {print $2; exit}')
ed25519_spki "$point" > "$WORK/pub.der"
check "public key read back parses in OpenSSL" openssl pkey -pubin -inform DER -in "$WORK/pub.der" -noout
check "openssl verifies the signature" openssl pkeyutl -verify -pubin -keyform DER -inkey "$WORK/pub.der" -rawin -in "$WORK/msg" -sigfile "$WORK/sig"
check "pkcs11-tool --read-object exports the same key" bash -c "
  pkcs11-tool --module '$MODULE' --token-label '$T' --read-object --type pubkey --id 01 -o '$WORK/pub.pem' &&
  openssl pkey -pubin -in '$WORK/pub.pem' -outform DER -out '$WORK/pub2.der' && cmp '$WORK/pub.der' '$WORK/pub2.der'"
printf 'tampered' >> "$WORK/msg"
check_fails "openssl rejects it for another message" openssl pkeyutl -verify -pubin -keyform DER -inkey "$WORK/pub.der" -rawin -in "$WORK/msg" -sigfile "$WORK/sig"

head -c 100000 /dev/urandom > "$WORK/data"
for alg in SHA256:sha256 SHA384:sha384 SHA512:sha512 SHA-1:sha1 SHA224:sha224; do
  mech=${alg%%:*}; tool=${alg##*:}
  check "hash $mech equals ${tool}sum" bash -c "
    ours=\$(pkcs11-tool --module '$MODULE' --token-label '$T' --hash -m $mech -i '$WORK/data' | xxd -p | tr -d '\n')
    theirs=\$(${tool}sum '$WORK/data' | cut -d' ' -f1)
    [ \"\$ours\" = \"\$theirs\" ]"
done

check "generate-random returns the bytes asked for" bash -c "
  pkcs11-tool --module '$MODULE' --token-label '$T' --generate-random 64 -o '$WORK/rnd' && [ \$(stat -c %s '$WORK/rnd') -eq 64 ]
  pkcs11-tool --module '$MODULE' --token-label '$T' --generate-random 64 -o '$WORK/rnd2' && ! cmp -s '$WORK/rnd' '$WORK/rnd2'"
check "a second process lists the key" bash -c "pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --list-objects | grep -q 'label:      ed'"
check "private key invisible without login" bash -c "! pkcs11-tool --module '$MODULE' --token-label '$T' --list-objects | grep -q 'Private Key Object'"
check "private key material stays sensitive" bash -c "pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --list-objects --type privkey | grep -q 'never extractable'"
check "pkcs11-tool --test --login" bash -c "pkcs11-tool --module '$MODULE' --token-label '$T' --test --login --pin '$USER_PIN' 2>&1 | tee /dev/stderr | tail -1 | grep -q 'No errors'"
check "change user PIN" p11 "${P[@]}" --login --pin "$USER_PIN" --change-pin --new-pin 5678
check "login with the new PIN" p11 "${P[@]}" --login --pin 5678 --list-objects
check "delete the key pair" bash -c "pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin 5678 --delete-object --type privkey --id 01 && ! pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin 5678 --list-objects --type privkey | grep -q ed"
finish
