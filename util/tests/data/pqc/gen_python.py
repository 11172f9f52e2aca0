"""Writes the ML-DSA and ML-KEM fixtures of util/tests/util_pqc.rs with
python `cryptography` 50.0.1 (an implementation independent of the
token's): each key's PKCS#8 in RFC 9881 / draft-ietf-lamps-kyber-certificates seed form and its
SubjectPublicKeyInfo, from a fixed seed so that a rerun writes the same
bytes. Run: python3 gen_python.py (in this directory)."""
import hashlib

from cryptography.hazmat.primitives import serialization as s
from cryptography.hazmat.primitives.asymmetric import mldsa, mlkem


def seed(name, length):
    return hashlib.sha512(b"dalek-pkcs11-util fixture " + name.encode()).digest()[:length]


KEYS = [
    ("ml-dsa-44", mldsa.MLDSA44PrivateKey, 32),
    ("ml-dsa-65", mldsa.MLDSA65PrivateKey, 32),
    ("ml-dsa-87", mldsa.MLDSA87PrivateKey, 32),
    ("ml-kem-768", mlkem.MLKEM768PrivateKey, 64),
    ("ml-kem-1024", mlkem.MLKEM1024PrivateKey, 64),
]

for name, cls, n in KEYS:
    if name == "ml-dsa-65":
        # Also encrypted (PBES2; the salt and IV are random, so this file
        # differs at each run), passphrase "pqc fixture".
        key = cls.from_seed_bytes(seed(name, n))
        with open(f"{name}.encrypted.pem", "wb") as f:
            f.write(key.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8,
                                      s.BestAvailableEncryption(b"pqc fixture")))
    key = cls.from_seed_bytes(seed(name, n))
    with open(f"{name}.seed.pem", "wb") as f:
        f.write(key.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()))
    with open(f"{name}.spki.der", "wb") as f:
        f.write(key.public_key().public_bytes(s.Encoding.DER, s.PublicFormat.SubjectPublicKeyInfo))
