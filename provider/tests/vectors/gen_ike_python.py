#!/usr/bin/env python3
"""Generates ike-python-hmac.txt: IKE derivation vectors computed
independently of the module with Python's stdlib hmac/hashlib (OpenSSL-backed),
from the formulas of RFC 2409 (§5, Appendix B) and RFC 7296 (§2.13, §2.14).

CKM_IKE1_EXTENDED_DERIVE has no published vector, so its expected values
come from here; the other mechanisms get vectors for the SHA-2 and SHA-3
PRFs (the CAVP set is SHA-1 only) and nonces longer than the HMAC block
(RFC 2104: such a key is hashed first).

Run: python3 provider/tests/vectors/gen_ike_python.py > provider/tests/vectors/ike-python-hmac.txt
The inputs are fixed (derived from a counter with SHA-256), so the output
is reproducible.
"""
import hashlib
import hmac

HASHES = {
    "SHA1": "sha1",
    "SHA224": "sha224",
    "SHA256": "sha256",
    "SHA384": "sha384",
    "SHA512": "sha512",
    "SHA512_224": "sha512_224",
    "SHA512_256": "sha512_256",
    "SHA3_224": "sha3_224",
    "SHA3_256": "sha3_256",
    "SHA3_384": "sha3_384",
    "SHA3_512": "sha3_512",
}

_counter = 0


def data(n):
    """n deterministic pseudo-random bytes."""
    global _counter
    out = b""
    while len(out) < n:
        _counter += 1
        out += hashlib.sha256(b"ike-vector-%d" % _counter).digest()
    return out[:n]


def prf(h, key, msg):
    return hmac.new(key, msg, HASHES[h]).digest()


def prf_plus(h, key, s, n):
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = prf(h, key, t + s + bytes([i]))
        out += t
        i += 1
    return out[:n]


def ike1_extended(h, key, fixed, n):
    k = prf(h, key, fixed if fixed else b"\x00")
    out = k
    while len(out) < n:
        k = prf(h, key, k + fixed)
        out += k
    return out[:n]


def record(name, fields):
    print("name = " + name)
    for k, v in fields:
        print("%s = %s" % (k, v.hex() if isinstance(v, bytes) else v))
    print()


print(__doc__.strip().replace("\n", "\n# ").join(["# ", ""]))
print("# Record format: as in ike-cavp-sp800-135.txt.")
print()

for h in HASHES:
    hlen = hashlib.new(HASHES[h]).digest_size
    base, ni, nr, new = data(32), data(16), data(16), data(96)
    record("%s IKE_PRF datakey" % h, [("mech", "IKE_PRF"), ("prf", h), ("mode", "datakey"),
           ("base", base), ("ni", ni), ("nr", nr), ("out", prf(h, ni + nr, base))])
    record("%s IKE_PRF rekey" % h, [("mech", "IKE_PRF"), ("prf", h), ("mode", "rekey"),
           ("base", base), ("key", new), ("ni", ni), ("nr", nr), ("out", prf(h, base, new + ni + nr))])
    record("%s IKE_PRF plain (short output)" % h, [("mech", "IKE_PRF"), ("prf", h), ("mode", "plain"),
           ("base", base), ("ni", ni), ("nr", nr), ("out", prf(h, base, ni + nr)[:16])])
    # Nonces of 100 bytes each: Ni | Nr (200 bytes) is longer than every
    # HMAC block here (64, 128, 144, 136, 104 or 72 bytes), so it is hashed first.
    lni, lnr = data(100), data(100)
    record("%s IKE_PRF datakey, long nonces" % h, [("mech", "IKE_PRF"), ("prf", h), ("mode", "datakey"),
           ("base", base), ("ni", lni), ("nr", lnr), ("out", prf(h, lni + lnr, base))])
    gxy, prev, ckyi, ckyr = data(128), data(hlen), data(8), data(8)
    record("%s IKE1_PRF no prev" % h, [("mech", "IKE1_PRF"), ("prf", h), ("base", base), ("gxy", gxy),
           ("ckyi", ckyi), ("ckyr", ckyr), ("n", 0), ("out", prf(h, base, gxy + ckyi + ckyr + b"\x00"))])
    record("%s IKE1_PRF prev" % h, [("mech", "IKE1_PRF"), ("prf", h), ("base", base), ("prev", prev),
           ("gxy", gxy), ("ckyi", ckyi), ("ckyr", ckyr), ("n", 2),
           ("out", prf(h, base, prev + gxy + ckyi + ckyr + b"\x02"))])
    extra = data(40)
    n = 3 * hlen + 5
    for label, g, e in [("gxy+extra", gxy, extra), ("gxy", gxy, b""), ("extra", b"", extra), ("neither", b"", b"")]:
        fields = [("mech", "IKE1_EXTENDED"), ("prf", h), ("base", base)]
        if g:
            fields.append(("gxy", g))
        if e:
            fields.append(("extra", e))
        fields.append(("out", ike1_extended(h, base, g + e, n)))
        record("%s IKE1_EXTENDED %s" % (h, label), fields)
    seed, seedkey = data(48), data(64)
    record("%s IKE2_PRF_PLUS seed data" % h, [("mech", "IKE2_PRF_PLUS"), ("prf", h), ("base", base),
           ("seed", seed), ("out", prf_plus(h, base, seed, n))])
    record("%s IKE2_PRF_PLUS seed key + data" % h, [("mech", "IKE2_PRF_PLUS"), ("prf", h), ("base", base),
           ("seedkey", seedkey), ("seed", seed), ("out", prf_plus(h, base, seedkey + seed, n))])
    record("%s IKE2_PRF_PLUS seed key only" % h, [("mech", "IKE2_PRF_PLUS"), ("prf", h), ("base", base),
           ("seedkey", seedkey), ("out", prf_plus(h, base, seedkey, n))])
