#!/usr/bin/env bash
# Interop with pkcs11-tool for the EC, RSA, AES and HMAC mechanisms; every
# result checked with OpenSSL.
source "$(dirname "$0")/lib.sh"
T="mech"
new_token "$T" || { echo "cannot create token"; exit 1; }
P=(--token-label "$T" --login --pin "$USER_PIN")
head -c 3000 /dev/urandom > "$WORK/data"
openssl dgst -sha256 -binary "$WORK/data" > "$WORK/data.sha256"

# Public key (PEM) of the key pair with id $1, read back from the token.
pubkey() { p11 --token-label "$T" --read-object --type pubkey --id "$1" -o "$WORK/pub-$1.der" >/dev/null 2>&1 && openssl pkey -pubin -inform DER -in "$WORK/pub-$1.der" -out "$WORK/pub-$1.pem"; }

# An EC public key (PEM) built from the CKA_EC_POINT pkcs11-tool lists
# (pkcs11-tool 0.23 cannot export P-384 keys itself, from any token): the
# SubjectPublicKeyInfo header of curve $2, then the point out of its DER
# OCTET STRING (P-521: long-form length 81 85).
ec_pubkey() {
  local id=$1 name=$2 point prefix
  # --list-objects lists every public key: take the point of the one with this ID.
  point=$(p11 --token-label "$T" --list-objects --type pubkey 2>/dev/null | awk -v id="$id" '/EC_POINT:/ {p = $2} /^ *ID:/ && $2 == id {print p; exit}')
  case "$name:$point" in
    prime256v1:0441*) prefix=3059301306072a8648ce3d020106082a8648ce3d030107034200; point=${point#0441} ;;
    secp384r1:0461*) prefix=3076301006072a8648ce3d020106052b81040022036200; point=${point#0461} ;;
    secp521r1:048185*) prefix=30819b301006072a8648ce3d020106052b8104002303818600; point=${point#048185} ;;
    secp256k1:0441*) prefix=3056301006072a8648ce3d020106052b8104000a034200; point=${point#0441} ;;
    *) return 1 ;;
  esac
  printf '%s%s' "$prefix" "$point" | xxd -r -p > "$WORK/pub-$id.der" && openssl pkey -pubin -inform DER -in "$WORK/pub-$id.der" -out "$WORK/pub-$id.pem"
}

## EC
for curve in prime256v1:02 secp384r1:03 secp521r1:04 secp256k1:05; do
  name=${curve%%:*}; id=${curve##*:}
  check "keypairgen EC:$name" p11 "${P[@]}" --keypairgen --key-type "EC:$name" --id "$id" --label "ec-$name"
  check "public key of EC:$name reads back" ec_pubkey "$id" "$name"
  check "ECDSA over a SHA-256 digest ($name), verified by openssl" bash -c "
    pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --sign -m ECDSA --id $id --signature-format openssl -i '$WORK/data.sha256' -o '$WORK/sig' &&
    openssl pkeyutl -verify -pubin -inkey '$WORK/pub-$id.pem' -in '$WORK/data.sha256' -sigfile '$WORK/sig'"
  # pkcs11-tool 0.23 --verify exits 0 either way: its verdict is the text.
  check "the token verifies that ECDSA signature ($name)" bash -c "
    pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --verify -m ECDSA --id $id --signature-format openssl -i '$WORK/data.sha256' --signature-file '$WORK/sig' 2>&1 | grep -qx 'Signature is valid'"
  check "the token rejects it for another digest ($name)" bash -c "
    head -c 32 /dev/zero > '$WORK/other.sha256' &&
    pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --verify -m ECDSA --id $id --signature-format openssl -i '$WORK/other.sha256' --signature-file '$WORK/sig' 2>&1 | grep -qx 'Invalid signature'"
  check "ECDSA-SHA256 ($name), verified by openssl" bash -c "
    pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --sign -m ECDSA-SHA256 --id $id --signature-format openssl -i '$WORK/data' -o '$WORK/sig' &&
    openssl dgst -sha256 -verify '$WORK/pub-$id.pem' -signature '$WORK/sig' '$WORK/data'"
  check_fails "openssl rejects the signature for other data ($name)" openssl dgst -sha256 -verify "$WORK/pub-$id.pem" -signature "$WORK/sig" "$WORK/data.sha256"
done

## X25519 (pkcs11-tool 0.23 makes Montgomery keys but cannot derive with
## them: its --derive parses only EC peer keys)
check "keypairgen EC:curve25519" p11 "${P[@]}" --keypairgen --key-type EC:curve25519 --id 06 --label x25519
check "X25519 public key reads back and parses in OpenSSL" bash -c "
  point=\$(pkcs11-tool --module '$MODULE' --token-label '$T' --list-objects --type pubkey 2>/dev/null | awk '/EC_POINT:/ {p = \$2} /^ *ID:/ && \$2 == \"06\" {print p; exit}') &&
  case \$point in 0420*) ;; *) exit 1 ;; esac &&
  printf '302a300506032b656e032100%s' \${point#0420} | xxd -r -p > '$WORK/x25519.der' &&
  openssl pkey -pubin -inform DER -in '$WORK/x25519.der' -text -noout | grep -q 'X25519 Public-Key'"

## RSA
check "keypairgen RSA:2048" p11 "${P[@]}" --keypairgen --key-type RSA:2048 --id 10 --label rsa
check "public key of RSA reads back" pubkey 10
for mech in SHA256-RSA-PKCS:sha256:pkcs1 RSA-PKCS-PSS:sha256:pss SHA256-RSA-PKCS-PSS:sha256:pss; do
  m=${mech%%:*}; rest=${mech#*:}; pad=${rest#*:}
  input="$WORK/data"; opts=""
  # pkcs11-tool takes hash and MGF options only for the raw PSS mechanism.
  [ "$m" = RSA-PKCS-PSS ] && { input="$WORK/data.sha256"; opts="--hash-algorithm SHA256 --mgf MGF1-SHA256"; }
  check "sign $m, verified by openssl" bash -c "
    pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --sign -m $m $opts --id 10 -i '$input' -o '$WORK/sig' &&
    if [ $pad = pss ]; then
      openssl pkeyutl -verify -pubin -inkey '$WORK/pub-10.pem' -in '$WORK/data.sha256' -sigfile '$WORK/sig' -pkeyopt digest:sha256 -pkeyopt rsa_padding_mode:pss -pkeyopt rsa_pss_saltlen:-1
    else
      openssl dgst -sha256 -verify '$WORK/pub-10.pem' -signature '$WORK/sig' '$WORK/data'
    fi"
done
check "sign RSA-PKCS over a DigestInfo, verified by openssl" bash -c "
  (printf '\x30\x31\x30\x0d\x06\x09\x60\x86\x48\x01\x65\x03\x04\x02\x01\x05\x00\x04\x20'; cat '$WORK/data.sha256') > '$WORK/digestinfo' &&
  pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --sign -m RSA-PKCS --id 10 -i '$WORK/digestinfo' -o '$WORK/sig' &&
  openssl dgst -sha256 -verify '$WORK/pub-10.pem' -signature '$WORK/sig' '$WORK/data'"
head -c 100 /dev/urandom > "$WORK/secret"
check "decrypt RSA-PKCS of what openssl encrypted" bash -c "
  openssl pkeyutl -encrypt -pubin -inkey '$WORK/pub-10.pem' -in '$WORK/secret' -out '$WORK/ct' &&
  pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --decrypt -m RSA-PKCS --id 10 -i '$WORK/ct' -o '$WORK/pt' && cmp '$WORK/secret' '$WORK/pt'"
for h in sha1:SHA-1:MGF1-SHA1 sha256:SHA256:MGF1-SHA256; do
  o=${h%%:*}; rest=${h#*:}; hash=${rest%%:*}; mgf=${rest#*:}
  check "decrypt RSA-PKCS-OAEP ($hash) of what openssl encrypted" bash -c "
    openssl pkeyutl -encrypt -pubin -inkey '$WORK/pub-10.pem' -in '$WORK/secret' -out '$WORK/ct' -pkeyopt rsa_padding_mode:oaep -pkeyopt rsa_oaep_md:$o -pkeyopt rsa_mgf1_md:$o &&
    pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --decrypt -m RSA-PKCS-OAEP --hash-algorithm $hash --mgf $mgf --id 10 -i '$WORK/ct' -o '$WORK/pt' && cmp '$WORK/secret' '$WORK/pt'"
done

## AES
check "keygen AES:32 (extractable)" p11 "${P[@]}" --keygen --key-type AES:32 --id 20 --label aes --extractable
check "AES-CBC-PAD round trip matches openssl enc" bash -c "
  key=\$(pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --read-object --type secrkey --id 20 | xxd -p | tr -d '\n') &&
  [ \${#key} -eq 64 ] &&
  iv=000102030405060708090a0b0c0d0e0f &&
  pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --encrypt -m AES-CBC-PAD --iv \$iv --id 20 -i '$WORK/data' -o '$WORK/ct' &&
  openssl enc -d -aes-256-cbc -K \$key -iv \$iv -in '$WORK/ct' -out '$WORK/pt' && cmp '$WORK/data' '$WORK/pt' &&
  openssl enc -aes-256-cbc -K \$key -iv \$iv -in '$WORK/data' -out '$WORK/ct2' && cmp '$WORK/ct' '$WORK/ct2' &&
  pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --decrypt -m AES-CBC-PAD --iv \$iv --id 20 -i '$WORK/ct2' -o '$WORK/pt2' && cmp '$WORK/data' '$WORK/pt2'"

## HMAC
check "keygen GENERIC:32 (extractable)" p11 "${P[@]}" --keygen --key-type GENERIC:32 --id 30 --label hmac --extractable
check "SHA256-HMAC equals openssl's HMAC" bash -c "
  key=\$(pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --read-object --type secrkey --id 30 | xxd -p | tr -d '\n') &&
  ours=\$(pkcs11-tool --module '$MODULE' --token-label '$T' --login --pin '$USER_PIN' --sign -m SHA256-HMAC --id 30 -i '$WORK/data' | xxd -p | tr -d '\n') &&
  theirs=\$(openssl dgst -sha256 -mac HMAC -macopt hexkey:\$key -r '$WORK/data' | cut -d' ' -f1) &&
  [ -n \"\$ours\" ] && [ \"\$ours\" = \"\$theirs\" ]"

check "pkcs11-tool --test --login with EC, RSA, AES and HMAC keys on the token" bash -c "pkcs11-tool --module '$MODULE' --token-label '$T' --test --login --pin '$USER_PIN' 2>&1 | tee /dev/stderr | tail -1 | grep -q 'No errors'"
finish
