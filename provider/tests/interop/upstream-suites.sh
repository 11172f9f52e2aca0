#!/usr/bin/env bash
# Runs the upstream test suites of two PKCS#11 consumers, unmodified,
# against the module:
#  - cryptoki: the integration tests (tests/*.rs) of the cryptoki crate at
#    the version in Cargo.lock, from the source cargo fetches from
#    crates.io, built with the Cargo.lock it ships (--locked). Each test
#    runs in a process of its own, so one that panics before C_Finalize
#    cannot fail the next; the token is set up as its CI sets up SoftHSM2.
#  - python-pkcs11: tests/ of its PyPI sdist, run with pytest (as its CI
#    does) against the PyPI wheel of the same version, in a venv.
# upstream/<suite>-expected.txt lists the tests allowed to fail or skip,
# each with its reason. A test that fails or skips but is not listed is a
# regression (the suite fails); a listed test that passes is reported so
# the list shrinks. Usage: upstream-suites.sh [cryptoki] [python-pkcs11]
# (both by default). The cargo target dir and the downloaded sdist are kept
# in $UPSTREAM_SUITES_DIR (default: target/upstream-suites/, or
# $CARGO_TARGET_DIR/upstream-suites/), so the second module build of one
# scripts/test run reuses them. UPSTREAM_SUITES_VERBOSE=1 prints the output
# of every failing test. With DALEK_PKCS11_INTEROP_POSTGRES (a PostgreSQL
# connection URI) the tokens are kept in that database (lib.sh `use_tokens`).
source "$(dirname "$0")/lib.sh"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
CACHE="${UPSTREAM_SUITES_DIR:-${CARGO_TARGET_DIR:-$ROOT/target}/upstream-suites}"
mkdir -p "$CACHE"

PY_PKCS11_VERSION=0.10.1   # as python.sh
PY_PKCS11_SDIST_SHA256=e0d7ccede3b3145a678d7c8c59b3c64dcebeb77c9146ad3394a4b1309c4ab2a2
# The test dependencies at the versions the sdist's uv.lock pins.
PY_TEST_DEPS=(pytest==9.1.1 parameterized==0.9.0 cryptography==50.0.1)

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(cryptoki python-pkcs11)

# compare NAME RESULTS EXPECTED: RESULTS has "PASS|FAIL|SKIP test" lines;
# EXPECTED has "test  reason" lines (# comments). Counts the outcome.
compare() {
  local name="$1" results="$2" expected="$3"
  local listed="$WORK/$name.listed"
  grep -v '^[[:space:]]*\(#\|$\)' "$expected" | awk '{print $1}' | sort -u > "$listed"
  local pass fail skip
  pass=$(grep -c '^PASS ' "$results")
  fail=$(grep -c '^FAIL ' "$results")
  skip=$(grep -c '^SKIP ' "$results")
  echo "$name: $pass passed, $fail failed, $skip skipped ($((pass + fail + skip)) tests)"
  local status test regressions=0 fixed=0
  while read -r status test; do
    if grep -qxF -- "$test" "$listed"; then
      [ "$status" = PASS ] && { fixed=$((fixed + 1)); echo "NOW PASSES $name: $test (remove it from $(basename "$expected"))"; }
    elif [ "$status" != PASS ]; then
      regressions=$((regressions + 1)); echo "REGRESSION $name: $test ($status) is not in $(basename "$expected")"
      if [ -f "$WORK/$name.logs/$test" ]; then
        tail -15 "$WORK/$name.logs/$test" | sed 's/^/     | /'
      fi
    fi
  done < "$results"
  # Listed tests that no longer exist (renamed upstream, or a new version).
  while read -r test; do
    grep -q " $test\$" "$results" || echo "NOTE $name: $test is listed but was not run"
  done < "$listed"
  check "$name: no test fails or skips that $(basename "$expected") does not list ($regressions regressions, $fixed listed tests now pass)" \
    test "$regressions" -eq 0
  if [ "${UPSTREAM_SUITES_VERBOSE:-0}" = 1 ]; then
    while read -r status test; do
      [ "$status" != PASS ] && [ -f "$WORK/$name.logs/$test" ] && { echo "---- $status $test"; tail -25 "$WORK/$name.logs/$test"; }
    done < "$results"
  fi
  return 0
}

run_cryptoki() {
  local start=$SECONDS meta version src target bins
  meta="$WORK/metadata.json"
  # cargo metadata fetches the crate from the registry like any build would.
  if ! (cd "$ROOT" && cargo metadata --locked --format-version 1 > "$meta"); then
    check "cargo metadata (locate the cryptoki crate source)" false; return
  fi
  read -r version src < <(python3 -c '
import json, os, sys
for p in json.load(open(sys.argv[1]))["packages"]:
    if p["name"] == "cryptoki":
        print(p["version"], os.path.dirname(p["manifest_path"]))' "$meta")
  local name="cryptoki-$version"
  if [ ! -f "$src/tests/common/mod.rs" ]; then
    check "$name: source with tests/ at $src" false; return
  fi
  # A clean copy each run: a build must not write into cargo's registry.
  rm -rf "$CACHE/cryptoki-src"
  cp -r "$src" "$CACHE/cryptoki-src"
  target="$CACHE/cryptoki-target"
  bins="$WORK/cryptoki-bins"
  (cd "$CACHE/cryptoki-src" && cargo test --locked --test '*' --no-run --target-dir "$target" \
    --message-format json > "$WORK/cryptoki-build.json" 2> "$WORK/cryptoki-build.log")
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["target"]["name"], m["executable"])' "$WORK/cryptoki-build.json" > "$bins"
  if [ ! -s "$bins" ]; then
    check "$name: build its tests (cargo test --locked --no-run)" bash -c 'tail -30 "$1"; false' _ "$WORK/cryptoki-build.log"
    return
  fi
  echo "$name: tests built in $((SECONDS - start)) s"

  # A token store of its own (the other suite's token would be slot 0).
  use_tokens cryptoki
  # The token its CI makes with softhsm2-util (tests/common/mod.rs: the
  # first slot with a token, these PINs; every test re-initialises it).
  p11 --init-token --slot-index 0 --label "Test Token" --so-pin abcdef654321 >/dev/null 2>&1 &&
    p11 --token-label "Test Token" --init-pin --login --login-type so --so-pin abcdef654321 \
      --pin fedcba123456 >/dev/null 2>&1 || { check "$name: token" false; return; }

  local results="$WORK/$name.results" bin tname test out rc
  : > "$results"
  mkdir -p "$WORK/$name.logs"
  while read -r tname bin; do
    while read -r test; do
      out="$WORK/$name.logs/$tname::$test"
      TEST_PKCS11_MODULE="$MODULE" RUST_BACKTRACE=0 timeout 300 "$bin" --exact "$test" \
        --test-threads 1 --nocapture > "$out" 2>&1
      rc=$?
      # Ignored upstream, or skipped by the test itself (it prints "SKIP:"
      # and returns when the module lacks a PKCS#11 3.2 function).
      if grep -q "^test $test \.\.\. ignored" "$out" || grep -q 'SKIP: ' "$out"; then
        echo "SKIP $tname::$test"
      elif [ "$rc" -eq 0 ] && grep -q '^test result: ok\. 1 passed' "$out"; then
        echo "PASS $tname::$test"
      else
        echo "FAIL $tname::$test"
      fi >> "$results"
    done < <("$bin" --list --format terse 2>/dev/null | sed -n 's/: test$//p')
  done < "$bins"
  echo "$name: tests ran in $((SECONDS - start)) s (build included)"
  compare "$name" "$results" "$HERE/upstream/cryptoki-expected.txt"
}

run_python_pkcs11() {
  local start=$SECONDS name="python-pkcs11-$PY_PKCS11_VERSION"
  local sdist="$CACHE/python-pkcs11/python_pkcs11-$PY_PKCS11_VERSION.tar.gz"
  check "$name: python3 -m venv" python3 -m venv "$WORK/venv" || return
  local py="$WORK/venv/bin/python"
  if [ ! -f "$sdist" ]; then
    # Only python-pkcs11 as source; pip still builds its metadata, with
    # wheels of its build requirements.
    check "$name: pip download its sdist" "$py" -m pip download --quiet --disable-pip-version-check \
      --no-deps --no-binary python-pkcs11 -d "$CACHE/python-pkcs11" "python-pkcs11==$PY_PKCS11_VERSION" || return
  fi
  check "$name: sdist sha256" bash -c 'echo "$1  $2" | sha256sum -c -' _ "$PY_PKCS11_SDIST_SHA256" "$sdist" || return
  check "$name: pip install python-pkcs11 (wheel) ${PY_TEST_DEPS[*]}" \
    "$py" -m pip install --quiet --disable-pip-version-check "python-pkcs11==$PY_PKCS11_VERSION" "${PY_TEST_DEPS[@]}" || return
  tar -xzf "$sdist" -C "$WORK"
  # Only tests/: from the sdist's root, its uncompiled pkcs11/ sources would
  # shadow the installed package.
  mkdir -p "$WORK/pyrun"
  cp -r "$WORK/python_pkcs11-$PY_PKCS11_VERSION/tests" "$WORK/pyrun/tests"

  # The token its CI makes with softhsm2-util (.github/workflows/tests.yml),
  # in a token store of its own.
  use_tokens python-pkcs11
  export PKCS11_MODULE="$MODULE" PKCS11_TOKEN_LABEL=TEST PKCS11_TOKEN_PIN=1234 PKCS11_TOKEN_SO_PIN=5678
  p11 --init-token --slot-index 0 --label TEST --so-pin 5678 >/dev/null 2>&1 &&
    p11 --token-label TEST --init-pin --login --login-type so --so-pin 5678 --pin 1234 >/dev/null 2>&1 ||
    { check "$name: token" false; return; }

  local xml="$WORK/pytest.xml" results="$WORK/$name.results"
  (cd "$WORK/pyrun" && timeout 600 "$py" -m pytest -p no:cacheprovider -q -rN --junitxml="$xml" \
    -o junit_logging=all tests) > "$WORK/pytest.log" 2>&1
  if [ ! -s "$xml" ]; then
    check "$name: pytest ran" bash -c 'tail -30 "$1"; false' _ "$WORK/pytest.log"; return
  fi
  mkdir -p "$WORK/$name.logs"
  "$py" - "$xml" "$WORK/$name.logs" > "$results" <<'EOF'
import os, sys, xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).iter("testcase"):
    cls = case.get("classname", "")
    cls = cls[len("tests."):] if cls.startswith("tests.") else cls
    name = cls + "." + case.get("name")
    status = "PASS"
    for child in case:
        if child.tag in ("failure", "error"):
            status = "FAIL"
        elif child.tag == "skipped" and status == "PASS":
            status = "SKIP"
        if child.tag in ("failure", "error", "skipped", "system-out", "system-err"):
            with open(os.path.join(sys.argv[2], name), "a") as log:
                log.write((child.get("message") or "") + "\n" + (child.text or "") + "\n")
    print(status, name)
EOF
  echo "$name: tests ran in $((SECONDS - start)) s"
  compare "$name" "$results" "$HERE/upstream/python-pkcs11-expected.txt"
}

for suite in "${suites[@]}"; do
  case "$suite" in
    cryptoki) run_cryptoki ;;
    python-pkcs11) run_python_pkcs11 ;;
    *) echo "upstream-suites: unknown suite $suite (cryptoki, python-pkcs11)" >&2; exit 2 ;;
  esac
done
finish
