#!/usr/bin/env bash
# Interop with Java's SunPKCS11 provider (JDK 11+): java/P11Interop.java runs
# every case against a fresh token and checks each result with the JDK's own
# providers (SunEC, SunRsaSign, SunJCE, SUN); each "ok NAME" / "FAIL NAME:
# reason" line it prints becomes one check here.
# Debugging: P11_INTEROP_TRACE=1 prints stack traces; JAVA_OPTS is passed to
# java (e.g. JAVA_OPTS=-Djava.security.debug=sunpkcs11,pkcs11keystore).
source "$(dirname "$0")/lib.sh"
HERE="$(cd "$(dirname "$0")" && pwd)"
T="java"

command -v javac >/dev/null 2>&1 || { echo "java: javac not found (install default-jdk-headless)" >&2; exit 2; }

check "token for Java" new_token "$T"
check "javac P11Interop.java" javac -d "$WORK/classes" "$HERE/java/P11Interop.java"

# The slot that holds our token.
slot=$(slot_of "$T")
check "pkcs11-tool finds the token's slot" test -n "$slot"

# SunPKCS11 configuration: see docs/consumers.md.
cat > "$WORK/sunpkcs11.cfg" <<EOF
name = dalek
library = $MODULE
slot = ${slot:-0}
attributes(generate, CKO_PRIVATE_KEY, CKK_EC) = {
  CKA_DERIVE = true
}
attributes(generate, CKO_SECRET_KEY, CKK_GENERIC_SECRET) = {
  CKA_SENSITIVE = false
  CKA_EXTRACTABLE = true
}
attributes(generate, CKO_SECRET_KEY, CKK_SHA256_HMAC) = {
  CKA_SENSITIVE = false
  CKA_EXTRACTABLE = true
}
EOF

run_java() { java ${JAVA_OPTS:-} -cp "$WORK/classes" P11Interop "$WORK/sunpkcs11.cfg" "$@"; }

check_fails "KeyStore login with a wrong PIN is refused" run_java 0000 login
check "KeyStore login with the PIN" run_java "$USER_PIN" login

count_cases P11Interop 33 run_java "$USER_PIN"
finish
