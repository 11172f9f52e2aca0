#!/usr/bin/env python3
"""Generates tls-exporter-python.txt: RFC 5705 keying-material exporter
values (TLS 1.2 PRF, RFC 5246 §5, and the TLS 1.0/1.1 PRF, RFC 2246 §5)
computed independently of the module with Python's stdlib hmac/hashlib,
and checked against `openssl kdf TLS1-PRF` when the openssl command is
installed.

RFC 5705 §4: with a context, PRF(master, label, client_random ||
server_random || context_value_length || context_value), the length a
2-byte big-endian integer; without one, PRF(master, label, client_random ||
server_random). A context of length zero differs from no context.

CK_TLS_KDF_PARAMS has no presence flag, so the module appends
pContextData as given: a caller passes the 2-byte length and the value
(`context` below, hex) for "context present", nothing (NULL, 0) for
"no context". `context_value` is the RFC's context_value, for the record.

Run: python3 provider/tests/vectors/gen_tls_exporter_python.py > provider/tests/vectors/tls-exporter-python.txt
The inputs are fixed (derived from a counter with SHA-256), so the output
is reproducible.
"""
import hashlib
import hmac
import shutil
import subprocess

PRFS = {"SHA256": "sha256", "SHA384": "sha384", "SHA512": "sha512", "TLS_PRF": None}
OPENSSL = {"SHA256": "SHA2-256", "SHA384": "SHA2-384", "SHA512": "SHA2-512",
           "TLS_PRF": "MD5-SHA1"}


def p_hash(h, secret, seed, n):
    out, a = b"", seed
    while len(out) < n:
        a = hmac.new(secret, a, h).digest()
        out += hmac.new(secret, a + seed, h).digest()
    return out[:n]


def prf(name, secret, seed, n):
    if PRFS[name] is None:
        half = (len(secret) + 1) // 2
        md5 = p_hash(hashlib.md5, secret[:half], seed, n)
        sha = p_hash(hashlib.sha1, secret[len(secret) - half:], seed, n)
        return bytes(x ^ y for x, y in zip(md5, sha))
    return p_hash(getattr(hashlib, PRFS[name]), secret, seed, n)


def openssl(name, secret, seed, n):
    if shutil.which("openssl") is None:
        return None
    out = subprocess.run(
        ["openssl", "kdf", "-keylen", str(n), "-kdfopt", "digest:" + OPENSSL[name],
         "-kdfopt", "hexsecret:" + secret.hex(), "-kdfopt", "hexseed:" + seed.hex(),
         "TLS1-PRF"], check=True, capture_output=True, text=True).stdout
    return bytes.fromhex(out.strip().replace(":", ""))


def fixed(tag, n):
    out, i = b"", 0
    while len(out) < n:
        out += hashlib.sha256(("%s %d" % (tag, i)).encode()).digest()
        i += 1
    return out[:n]


print("\n".join(("# " + l).rstrip() for l in __doc__.strip().split("\n")))
print("# Record: prf, secret (the master secret, a readable base key), label,")
print("# client, server, context (pContextData; absent = NULL), out.")
print()
CASES = [
    ("present", b"hello"),
    ("present, empty", b""),
    ("present, 300 bytes", fixed("ctx", 300)),
    ("absent", None),
]
for name in PRFS:
    for i, (what, ctx) in enumerate(CASES):
        secret = fixed("master %s %d" % (name, i), 48)
        client, server = fixed("client %s %d" % (name, i), 32), fixed("server %s %d" % (name, i), 32)
        label = b"EXPORTER-Test-" + name.encode()
        n = 20 + 13 * i
        context = None if ctx is None else len(ctx).to_bytes(2, "big") + ctx
        seed = label + client + server + (context or b"")
        out = prf(name, secret, seed, n)
        check = openssl(name, secret, seed, n)
        assert check is None or check == out, (name, what)
        print("name = %s context %s" % (name, what))
        print("prf = %s" % name)
        print("secret = %s" % secret.hex())
        print("label = %s" % label.hex())
        print("client = %s" % client.hex())
        print("server = %s" % server.hex())
        if context is not None:
            print(("context_value = %s" % ctx.hex()).rstrip())
            print("context = %s" % context.hex())
        print("out = %s" % out.hex())
        print()
