"""Checks outputs of the token's symmetric mechanisms with the `cryptography`
package (OpenSSL), an implementation nobody here wrote.

Reads one JSON object per line on stdin, as provider/tests/sym_crosscheck.rs
writes them from the module's answers: {"mech": NAME, "key": hex, ... ,
"out": hex}. Prints "ok NAME" or "FAIL NAME: reason" per case and exits 1
if any failed. With --seal, prints the package's own output of each case
instead (hex, one line per case; provider/tests/message/aead.rs decrypts
it in the module). CTS (CS1) and CBC-MAC are built here over cryptography's
AES-ECB / AES-CBC, since the package has no such mode; AES key wrap with
PKCS #7 padding over its RFC 3394 key wrap. ChaCha20 and ChaCha20-Poly1305
(RFC 8439) are the package's own.
"""

import json
import sys
import warnings

warnings.simplefilter("ignore")

from cryptography.hazmat.primitives import keywrap, padding  # noqa: E402
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes  # noqa: E402
from cryptography.hazmat.primitives.ciphers.aead import AESCCM, ChaCha20Poly1305  # noqa: E402

try:
    from cryptography.hazmat.decrepit.ciphers import modes as old_modes
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
except ImportError:  # older cryptography
    old_modes = modes
    from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES


def enc(alg, mode, data):
    e = Cipher(alg, mode).encryptor()
    return e.update(data) + e.finalize()


def cfb1(key, iv, data):
    """SP 800-38A CFB with 1-bit segments, each byte MSB first."""
    reg = int.from_bytes(iv, "big")
    out = bytearray()
    for byte in data:
        o = 0
        for bit in range(7, -1, -1):
            ks = enc(algorithms.AES(key), modes.ECB(), reg.to_bytes(16, "big"))[0] >> 7
            c = ((byte >> bit) & 1) ^ ks
            o |= c << bit
            reg = ((reg << 1) | c) & ((1 << 128) - 1)
        out.append(o)
    return bytes(out)


def cts_cs1(key, iv, data):
    """CBC-CS1 (SP 800-38A addendum) over AES-CBC."""
    d = len(data) % 16
    if d == 0:
        return enc(algorithms.AES(key), modes.CBC(iv), data)
    padded = data + bytes(16 - d)
    c = enc(algorithms.AES(key), modes.CBC(iv), padded)
    # CBC of the zero-padded data: C(n-1) then Cn; CS1 keeps MSB_d(C(n-1)).
    return c[:-32] + c[-32:-16][:d] + c[-16:]


def cbc_mac(key, data):
    padded = data + bytes((-len(data)) % 16) if data else bytes(16)
    return enc(algorithms.AES(key), modes.CBC(bytes(16)), padded)[-16:]


def expected(c):
    h = {k: bytes.fromhex(v) for k, v in c.items() if k not in ("mech", "taglen", "maclen")}
    m = c["mech"]
    aes = algorithms.AES(h["key"]) if m in ("ofb", "cfb128", "cfb8") else None
    if m == "ofb":
        return enc(aes, old_modes.OFB(h["iv"]), h["data"])
    if m == "cfb128":
        return enc(aes, old_modes.CFB(h["iv"]), h["data"])
    if m == "cfb8":
        return enc(aes, old_modes.CFB8(h["iv"]), h["data"])
    if m == "cfb1":
        return cfb1(h["key"], h["iv"], h["data"])
    if m == "cts":
        return cts_cs1(h["key"], h["iv"], h["data"])
    if m == "mac":
        return cbc_mac(h["key"], h["data"])[: c["maclen"]]
    if m == "ccm":
        return AESCCM(h["key"], tag_length=c["taglen"]).encrypt(h["nonce"], h["data"], h["aad"] or None)
    if m == "chacha20":
        # cryptography's ChaCha20 nonce: 4-byte little-endian counter ‖ 12-byte nonce.
        return enc(algorithms.ChaCha20(h["key"], h["counter"] + h["nonce"]), None, h["data"])
    if m == "chacha20-poly1305":
        return ChaCha20Poly1305(h["key"]).encrypt(h["nonce"], h["data"], h["aad"] or None)
    if m == "kwp":
        return keywrap.aes_key_wrap_with_padding(h["key"], h["data"])
    if m == "kw-pkcs7":
        p = padding.PKCS7(64).padder()
        return keywrap.aes_key_wrap(h["key"], p.update(h["data"]) + p.finalize())
    if m == "des3-cbc":
        return enc(TripleDES(h["key"]), old_modes.CBC(h["iv"]) if hasattr(old_modes, "CBC") else modes.CBC(h["iv"]), h["data"])
    raise ValueError(f"unknown mechanism {m}")


def seal():
    """With --seal: prints what the package makes of each case (no "out"),
    hex, one line per case, for the module to decrypt."""
    for line in sys.stdin:
        if line.strip():
            print(expected(json.loads(line)).hex())


def main():
    if "--seal" in sys.argv[1:]:
        seal()
        return
    failed = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        c = json.loads(line)
        name = c["mech"] + " " + str(len(c["data"]) // 2)
        try:
            want = expected(c)
            if want.hex() == c["out"]:
                print(f"ok {name}")
            else:
                failed += 1
                print(f"FAIL {name}: module {c['out']}, cryptography {want.hex()}")
        except Exception as e:  # noqa: BLE001
            failed += 1
            print(f"FAIL {name}: {e!r}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
