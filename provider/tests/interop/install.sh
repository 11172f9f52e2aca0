#!/usr/bin/env bash
# scripts/install registers the module with p11-kit: p11-kit and GnuTLS find
# it without a path; --uninstall removes it again. Uses a staging root unless
# running as root in CI, where it installs for real and uninstalls after.
source "$(dirname "$0")/lib.sh"
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
if [ "$(id -u)" -ne 0 ] || [ -e /usr/share/p11-kit/modules/dalek-pkcs11.module ]; then
  export DESTDIR="$WORK/root"
fi
check "scripts/install" "$ROOT/scripts/install"
check "module file points at the installed library" bash -c "
  grep -q '^module: /usr/local/lib/dalek-pkcs11/libdalek_pkcs11.so' '${DESTDIR:-}/usr/share/p11-kit/modules/dalek-pkcs11.module' &&
  [ -x '${DESTDIR:-}/usr/local/lib/dalek-pkcs11/libdalek_pkcs11.so' ] && [ -x '${DESTDIR:-}/usr/local/bin/hsm-bench' ] &&
  [ -x '${DESTDIR:-}/usr/local/bin/dalek-pkcs11-util' ] &&
  grep -q log_level '${DESTDIR:-}/etc/dalek-pkcs11/config.toml'"
if [ -z "${DESTDIR:-}" ]; then
  new_token "p11kit" || true
  check "p11-kit lists the module" bash -c "p11-kit list-modules | grep -q 'dalek-pkcs11'"
  check "p11tool finds the token without a module path" bash -c "p11tool --list-tokens | grep -q 'Label: p11kit'"
fi
check "scripts/install --uninstall" "$ROOT/scripts/install" --uninstall
check "uninstall removed the files" bash -c "
  [ ! -e '${DESTDIR:-}/usr/share/p11-kit/modules/dalek-pkcs11.module' ] && [ ! -e '${DESTDIR:-}/usr/local/lib/dalek-pkcs11/libdalek_pkcs11.so' ] &&
  [ ! -e '${DESTDIR:-}/usr/local/bin/dalek-pkcs11-util' ] && [ ! -e '${DESTDIR:-}/etc/dalek-pkcs11/config.toml' ]"
finish
