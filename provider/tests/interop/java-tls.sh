#!/usr/bin/env bash
# A real TLS 1.2 handshake: Java's JSSE as the client with its TLS PRF work
# (CKM_TLS12_MASTER_KEY_DERIVE[_DH], CKM_TLS12_KEY_AND_MAC_DERIVE, CKM_TLS_MAC)
# and the ECDHE key agreement done by the token through SunPKCS11, against
# `openssl s_server -rev` (java/TlsClient.java; docs/consumers.md, "TLS 1.2
# with JSSE"). One JVM per cipher suite:
#   ECDHE-ECDSA-AES128-GCM-SHA256, ECDHE-ECDSA-AES256-GCM-SHA384 (SHA-384 PRF),
#   ECDHE-ECDSA-AES128-SHA256 (CBC: MAC keys), AES128-GCM-SHA256 (RSA key
#   exchange: CKM_TLS12_MASTER_KEY_DERIVE on an imported pre-master),
# then under DALEK_PKCS11_KEY_POLICY=strict the CBC suite (must pass) and
# the ECDHE GCM suite (must fail: strict never returns IVs from a master
# secret no caller knows, docs/SECURITY.md "What strict breaks"), and a
# negative control: with the extended master secret, which only SunJCE
# implements, the handshake must fail.
# Proof that the token did the work, per run:
#  - the pre-master, master secret and traffic keys are sensitive, so no
#    software provider can take over (TlsClient checks SunJCE refuses the
#    token's pre-master, and that SunTls12* come from SunPKCS11);
#  - OpenSC's pkcs11-spy, loaded by SunPKCS11 in front of the module (through
#    p11-delay-shim, which keeps two calls the spy would crash on from it), logs
#    C_DeriveKey with the TLS 1.2 mechanisms and C_SignInit with CKM_TLS_MAC
#    (0x3e4) twice (client and server Finished);
#  - the module's debug log names the same calls with the client random,
#    which must equal the CLIENT_RANDOM of s_server's key log.
# JAVA_TLS_LOGS=DIR keeps each run's logs (spy, module, s_server, key log).
for tool in java javac keytool openssl; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "skip java-tls: $tool not found (install default-jdk-headless and openssl)"
    exit 0
  }
done
source "$(dirname "$0")/lib.sh"
HERE="$(cd "$(dirname "$0")" && pwd)"
T="java-tls"
SPY="${PKCS11_SPY:-/usr/lib/x86_64-linux-gnu/pkcs11-spy.so}"
EXPORTS="--add-exports=java.base/sun.security.internal.spec=ALL-UNNAMED"

check "token for Java TLS" new_token "$T"
check "javac TlsClient.java" javac "$EXPORTS" -d "$WORK/classes" "$HERE/java/TlsClient.java"
slot=$(slot_of "$T")
check "pkcs11-tool finds the token's slot" test -n "$slot"
check "pkcs11-spy is installed ($SPY)" test -f "$SPY"
# p11-delay-shim, built with the workspace (scripts/build) next to the
# default module; P11_DELAY_SHIM names it elsewhere.
REPO="$(cd "$HERE/../../.." && pwd)"
SHIM="${P11_DELAY_SHIM:-}"
for c in "$(dirname "$MODULE")/libp11_delay_shim.so" "$REPO/target/release/libp11_delay_shim.so"; do
  [ -z "$SHIM" ] && [ -f "$c" ] && SHIM="$c"
done
check "p11-delay-shim is built (scripts/build; or set P11_DELAY_SHIM)" test -n "$SHIM"

# The mechanisms JSSE needs (pkcs11-tool names them mechtype-0x... : OpenSC
# knows only the pre-1.2 TLS names).
p11 --slot "${slot:-0}" -M > "$WORK/mechanisms.txt" 2>&1
has_mechanism() { grep -Eiq "^ *mechtype-0x$1," "$WORK/mechanisms.txt"; }
for m in 3E0 3E1 3E2 3E4; do
  check "the token lists mechanism 0x$m" has_mechanism "$m"
done

# Server certificates (P-256; RSA 2048 only for the RSA key exchange) and
# the client's trust store: certificate checks stay in SUN/SunEC.
check "EC P-256 server certificate" openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
  -nodes -keyout "$WORK/ec.key" -out "$WORK/ec.crt" -subj /CN=localhost -days 1
check "RSA 2048 server certificate" openssl req -x509 -newkey rsa:2048 \
  -nodes -keyout "$WORK/rsa.key" -out "$WORK/rsa.crt" -subj /CN=localhost -days 1
for c in ec rsa; do
  check "trust store takes the $c certificate" keytool -importcert -noprompt -storetype PKCS12 \
    -storepass changeit -keystore "$WORK/trust.p12" -alias "$c" -file "$WORK/$c.crt"
done

# SunPKCS11 loads p11-delay-shim, which loads the spy (P11_DELAY_SHIM_MODULE),
# which loads the module (PKCS11SPY). The shim (P11_DELAY_SHIM_SPY_GUARD)
# only keeps two things from the spy that would crash it, and the JVM: a
# NULL phKey in C_DeriveKey (the key-and-MAC derive), and JDK's first,
# 2.40-layout CK_GCM_PARAMS (refused as the module refuses it). Only what the
# handshake needs is enabled (and the PKCS11 KeyStore, to log in), so nothing
# else moves into the token. The ECDH pre-master is made sensitive (the
# token's default for a derived key is not), so the master secret and the
# traffic keys inherit it: part of the proof, and what makes the master
# secret one no caller knows (the IV rule of strict).
# Pre-masters and masters get one attribute set (SunPKCS11 has one per key
# type): the TLS mechanisms only, so no HMAC under a pre-master computes its
# master secret (docs/SECURITY.md, "Derived keys") and the master stays one
# no caller knows. CK_ULONGs in host (little-endian) order; SunPKCS11 reads
# 0h values as a signed big integer, so the first byte stays below 0x80:
# EXTENDED_MASTER_KEY_DERIVE(_DH) 0x56 0x57, MASTER_KEY_DERIVE 0x3e0,
# KEY_AND_MAC_DERIVE 0x3e1, MASTER_KEY_DERIVE_DH 0x3e2, TLS_MAC 0x3e4.
TLS_ONLY=0h
for m in 5600000000000000 5700000000000000 e003000000000000 e103000000000000 \
  e203000000000000 e403000000000000; do
  TLS_ONLY=$TLS_ONLY$m
done
cat > "$WORK/tls.cfg" <<EOF
name = dalek-tls
library = $SHIM
slot = ${slot:-0}
enabledMechanisms = {
  CKM_EC_KEY_PAIR_GEN
  CKM_ECDH1_DERIVE
  CKM_TLS12_MASTER_KEY_DERIVE
  CKM_TLS12_MASTER_KEY_DERIVE_DH
  CKM_TLS12_KEY_AND_MAC_DERIVE
  CKM_TLS_MAC
  CKM_AES_GCM
  CKM_AES_CBC
  CKM_SHA256_HMAC
  CKM_SHA384_HMAC
  KeyStore
}
attributes(generate, CKO_PRIVATE_KEY, CKK_EC) = {
  CKA_DERIVE = true
}
attributes(generate, CKO_SECRET_KEY, CKK_GENERIC_SECRET) = {
  CKA_DERIVE = true
  CKA_SENSITIVE = true
  CKA_ALLOWED_MECHANISMS = $TLS_ONLY
}
attributes(import, CKO_SECRET_KEY, CKK_GENERIC_SECRET) = {
  CKA_DERIVE = true
  CKA_SENSITIVE = true
  CKA_ALLOWED_MECHANISMS = $TLS_ONLY
}
EOF

# The debug line of the module for CALL with mechanism MECH (hex, lower case).
module_lines() { grep -E "$1 mechanism 0x$2( |$)" "$3" || true; }

# run_tls NAME OPENSSL_CIPHER JSSE_SUITE CERT POLICY EXPECT(pass|fail) MASTER_MECH [EMS]
# EMS=true lets JSSE negotiate the extended master secret (RFC 7627).
run_tls() {
  local name="$1" cipher="$2" suite="$3" cert="$4" policy="$5" expect="$6" master="$7"
  local ems="${8:-false}"
  local d="$WORK/$name" port="" i server
  mkdir -p "$d"
  timeout 180 openssl s_server -accept 127.0.0.1:0 -tls1_2 -cert "$WORK/$cert.crt" \
    -key "$WORK/$cert.key" -cipher "$cipher" -groups P-256 -naccept 1 -rev \
    -keylogfile "$d/keys.log" > "$d/server.log" 2>&1 < /dev/null &
  server=$!
  for i in $(seq 100); do
    port=$(sed -n 's/^ACCEPT 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$d/server.log" 2>/dev/null)
    [ -n "$port" ] && break
    sleep 0.1
  done
  check "$name: s_server listens" test -n "$port"
  count_cases "TlsClient-$name" 5 env P11_DELAY_SHIM_MODULE="$SPY" P11_DELAY_SHIM_SPY_GUARD=1 \
    PKCS11SPY="$MODULE" PKCS11SPY_OUTPUT="$d/spy.log" DALEK_PKCS11_LOG=debug DALEK_PKCS11_LOG_FILE="$d/p11.log" DALEK_PKCS11_KEY_POLICY="$policy" \
    timeout 180 java ${JAVA_OPTS:-} "$EXPORTS" -XX:ErrorFile="$d/hs_err.log" -Djdk.tls.useExtendedMasterSecret="$ems" \
    -Djdk.tls.namedGroups=secp256r1 -Djdk.tls.client.protocols=TLSv1.2 \
    -cp "$WORK/classes" TlsClient "$WORK/tls.cfg" "$USER_PIN" "$WORK/trust.p12" "${port:-1}" \
    "$suite" "$expect"
  kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null
  [ -n "${JAVA_TLS_LOGS:-}" ] && mkdir -p "$JAVA_TLS_LOGS" && cp -r "$d" "$JAVA_TLS_LOGS/"

  local master_lines keymat_lines mac_lines
  master_lines=$(module_lines C_DeriveKey "$master" "$d/p11.log")
  keymat_lines=$(module_lines C_DeriveKey 3e1 "$d/p11.log")
  mac_lines=$(module_lines C_SignInit 3e4 "$d/p11.log")
  if [ "$ems" = true ]; then
    # Negative control: only SunJCE has SunTlsExtendedMasterSecret, and it
    # cannot read the token's sensitive pre-master, so no software path
    # completes the handshake and the token makes no master secret.
    check "$name: SunJCE refused the sensitive pre-master (Key format must be RAW)" \
      grep -q 'Key format must be RAW' "$WORK/TlsClient-$name.out"
    check "$name: module log: no master secret derive" test -z "$master_lines"
    return
  fi
  if [ "$expect" = fail ]; then
    # strict: the master secret is made, the key block is refused because
    # JSSE asks for the GCM implicit IVs.
    check "$name: module log: the master secret derive (0x$master) succeeded" \
      grep -q -- '-> CKR_OK' <<< "$master_lines"
    check "$name: module log: key-and-MAC derive with iv_bits 32 refused with CKR_MECHANISM_PARAM_INVALID" \
      grep -q 'iv_bits 32 .*-> CKR_MECHANISM_PARAM_INVALID' <<< "$keymat_lines"
    check "$name: module log: no key-and-MAC derive succeeded" \
      bash -c '! grep -q -- "-> CKR_OK" <<< "$1"' _ "$keymat_lines"
    return
  fi

  # The handshake's client random, from the server's key log (NSS format).
  local cr
  cr=$(awk '$1 == "CLIENT_RANDOM" { print tolower($2); exit }' "$d/keys.log" 2>/dev/null)
  check "$name: s_server's key log has the CLIENT_RANDOM" test -n "$cr"
  cr=${cr:-missing}
  check "$name: module log: master secret derive (0x$master) with this handshake's client random -> CKR_OK" \
    grep -q "client_random $cr -> CKR_OK" <<< "$master_lines"
  check "$name: module log: key-and-MAC derive (0x3e1) with this handshake's client random -> CKR_OK" \
    grep -q "client_random $cr -> CKR_OK" <<< "$keymat_lines"
  check "$name: module log: C_SignInit CKM_TLS_MAC for the client Finished" \
    grep -q 'side client -> CKR_OK' <<< "$mac_lines"
  check "$name: module log: C_SignInit CKM_TLS_MAC for the server Finished" \
    grep -q 'side server -> CKR_OK' <<< "$mac_lines"
  case "$suite" in
    *_GCM_*) check "$name: key block with 32-bit implicit IVs and no MAC keys" \
      grep -q 'mac_bits 0 .* iv_bits 32 ' <<< "$keymat_lines" ;;
    *_CBC_SHA256) check "$name: key block with 256-bit MAC keys and no IVs" \
      grep -q 'mac_bits 256 .* iv_bits 0 ' <<< "$keymat_lines"
      check "$name: spy: record MACs by the token (C_SignInit CKM_SHA256_HMAC)" \
        spy_has C_SignInit CKM_SHA256_HMAC "$d/spy.log" 1 ;;
  esac
  # The spy's own trace (it knows no TLS 1.2 mechanism name: "Unknown
  # Mechanism (000003e2)" or similar, so match the number).
  check "$name: spy: C_DeriveKey with the master secret mechanism 0x$master" \
    spy_has C_DeriveKey "$(hex_mech "$master")" "$d/spy.log" 1
  check "$name: spy: C_DeriveKey with CKM_TLS12_KEY_AND_MAC_DERIVE (0x3e1)" \
    spy_has C_DeriveKey "$(hex_mech 3e1)" "$d/spy.log" 1
  check "$name: spy: C_SignInit with CKM_TLS_MAC (0x3e4) twice" \
    spy_has C_SignInit "$(hex_mech 3e4)" "$d/spy.log" 2
  [ "$master" = 3e2 ] && check "$name: spy: C_DeriveKey with CKM_ECDH1_DERIVE (the pre-master)" \
    spy_has C_DeriveKey CKM_ECDH1_DERIVE "$d/spy.log" 1
}

# The spy's rendering of an unnamed mechanism number: (000003e2).
hex_mech() { echo "[^0-9a-f]0*$1([^0-9a-f]|\$)"; }

# spy_has CALL MECHANISM_REGEX LOG MIN: at least MIN CALL entries of the
# spy log whose mechanism matches.
spy_has() {
  local n
  n=$(awk -v call="$1" -v mech="$2" '
    /^[0-9]+: C_/ { in_call = ($2 == call) }
    in_call && /pMechanism->type/ && tolower($0) ~ tolower(mech) { n++; in_call = 0 }
    END { print n + 0 }' "$3")
  echo "$1 $2: $n entries"
  [ "$n" -ge "$4" ]
}

run_tls ecdhe-aes128-gcm ECDHE-ECDSA-AES128-GCM-SHA256 TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 ec default pass 3e2
run_tls ecdhe-aes256-gcm ECDHE-ECDSA-AES256-GCM-SHA384 TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 ec default pass 3e2
run_tls ecdhe-aes128-cbc ECDHE-ECDSA-AES128-SHA256 TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256 ec default pass 3e2
run_tls rsa-aes128-gcm AES128-GCM-SHA256 TLS_RSA_WITH_AES_128_GCM_SHA256 rsa default pass 3e0
run_tls strict-ecdhe-aes128-cbc ECDHE-ECDSA-AES128-SHA256 TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256 ec strict pass 3e2
run_tls strict-ecdhe-aes128-gcm ECDHE-ECDSA-AES128-GCM-SHA256 TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 ec strict fail 3e2
run_tls ems-ecdhe-aes128-gcm ECDHE-ECDSA-AES128-GCM-SHA256 TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 ec default fail 3e2 true
finish
