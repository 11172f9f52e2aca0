#!/usr/bin/env bash
# Interop with python-pkcs11 (PyPI): python/interop.py runs every case
# against a fresh token and checks each result with an independent
# implementation (the `cryptography` package, hashlib, hmac); each
# "ok NAME" / "FAIL NAME: reason" line it prints becomes one check here.
# The venv lives in the temporary directory; only pip's own cache is kept.
# Debugging: P11_INTEROP_TRACE=1 prints tracebacks.
source "$(dirname "$0")/lib.sh"
HERE="$(cd "$(dirname "$0")" && pwd)"
T="python"
PY_PKCS11_VERSION=0.10.1      # manylinux wheels for CPython 3.10-3.13
CRYPTOGRAPHY_VERSION=50.0.1   # abi3 manylinux wheels; OpenSSL with ML-DSA and ML-KEM

check "token for python-pkcs11" new_token "$T"
check "python3 -m venv" python3 -m venv "$WORK/venv"
PY="$WORK/venv/bin/python"
check "pip install python-pkcs11==$PY_PKCS11_VERSION cryptography==$CRYPTOGRAPHY_VERSION" \
  "$PY" -m pip install --quiet --disable-pip-version-check \
    "python-pkcs11==$PY_PKCS11_VERSION" "cryptography==$CRYPTOGRAPHY_VERSION"

run_py() { "$PY" "$HERE/python/interop.py" "$MODULE" "$T" "$@"; }

check_fails "login with a wrong PIN is refused" run_py 0000 login
check "login with the PIN" run_py "$USER_PIN" login

count_cases interop.py 46 run_py "$USER_PIN"
finish
