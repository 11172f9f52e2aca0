"""Post-quantum cases of interop.py (PKCS#11 3.2 ML-DSA and ML-KEM through
python-pkcs11), each checked by the `cryptography` package (OpenSSL's
ML-DSA and ML-KEM; it has no ML-KEM-512 and no SLH-DSA, so those rest on
the known-answer tests of the Rust suites).

run(s, case, expect, expect_raises) registers and runs the cases in session s.

python-pkcs11 0.10 has no name for CKA_PUBLIC_KEY_INFO: attribute_mapper()
gives the session one that reads it as bytes.
"""

import os

from pkcs11 import Attribute, KeyType, Mechanism, ObjectClass
from pkcs11.attributes import AttributeMapper
from pkcs11.mechanisms import MLDSAParameterSet, MLKEMParameterSet

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import mldsa, mlkem

MSG = b"post-quantum interop message " * 20
READABLE = {Attribute.SENSITIVE: False, Attribute.EXTRACTABLE: True}

MLDSA = [
    ("ML-DSA-44", MLDSAParameterSet.ML_DSA_44, getattr(mldsa, "MLDSA44PrivateKey", None)),
    ("ML-DSA-65", MLDSAParameterSet.ML_DSA_65, mldsa.MLDSA65PrivateKey),
    ("ML-DSA-87", MLDSAParameterSet.ML_DSA_87, getattr(mldsa, "MLDSA87PrivateKey", None)),
]
MLKEM = [
    ("ML-KEM-768", MLKEMParameterSet.ML_KEM_768, mlkem.MLKEM768PrivateKey),
    ("ML-KEM-1024", MLKEMParameterSet.ML_KEM_1024, getattr(mlkem, "MLKEM1024PrivateKey", None)),
]


CKA_PUBLIC_KEY_INFO = 0x129


def attribute_mapper():
    """The default mapper, plus CKA_PUBLIC_KEY_INFO as bytes."""
    mapper = AttributeMapper()
    mapper.register_handler(CKA_PUBLIC_KEY_INFO, bytes, bytes)
    return mapper


def spki_of(key):
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def run(s, case, expect, expect_raises):
    for name, ckp, py_cls in MLDSA:
        if py_cls is None:
            continue

        @case(f"{name} signature from the token verified by cryptography over the token's SPKI")
        def _(ckp=ckp):
            pub, priv = s.generate_keypair(KeyType.ML_DSA, store=False,
                                           public_template={Attribute.PARAMETER_SET: ckp})
            sig = priv.sign(MSG)
            key = serialization.load_der_public_key(pub[CKA_PUBLIC_KEY_INFO])
            expect(key.public_bytes_raw() == pub[Attribute.VALUE], "SPKI and CKA_VALUE disagree")
            key.verify(sig, MSG)
            expect_raises(InvalidSignature, lambda: key.verify(sig, MSG + b"!"))

        @case(f"{name} signature from cryptography verified by the token")
        def _(ckp=ckp, py_cls=py_cls):
            sk = py_cls.generate()
            pub = s.create_object({
                Attribute.CLASS: ObjectClass.PUBLIC_KEY, Attribute.KEY_TYPE: KeyType.ML_DSA,
                Attribute.PARAMETER_SET: ckp, Attribute.VALUE: sk.public_key().public_bytes_raw(),
                Attribute.VERIFY: True,
            })
            sig = sk.sign(MSG)
            expect(pub.verify(MSG, sig, mechanism=Mechanism.ML_DSA), "the token rejected it")
            expect(not pub.verify(MSG + b"!", sig, mechanism=Mechanism.ML_DSA), "accepted another message")

        @case(f"{name} key from a seed gives the SPKI cryptography gives, byte for byte")
        def _(ckp=ckp, py_cls=py_cls):
            seed = os.urandom(32)
            priv = s.create_object({
                Attribute.CLASS: ObjectClass.PRIVATE_KEY, Attribute.KEY_TYPE: KeyType.ML_DSA,
                Attribute.PARAMETER_SET: ckp, Attribute.SEED: seed, Attribute.SIGN: True,
            })
            want = spki_of(py_cls.from_seed_bytes(seed).public_key())
            expect(priv[CKA_PUBLIC_KEY_INFO] == want, "SPKI differs")

    for name, ckp, py_cls in MLKEM:
        if py_cls is None:
            continue

        @case(f"{name} - cryptography encapsulates to the token's key, the token decapsulates the same secret")
        def _(ckp=ckp):
            pub, priv = s.generate_keypair(KeyType.ML_KEM, store=False,
                                           public_template={Attribute.PARAMETER_SET: ckp})
            key = serialization.load_der_public_key(pub[CKA_PUBLIC_KEY_INFO])
            secret, ct = key.encapsulate()
            got = priv.decapsulate_key(ct, KeyType.GENERIC_SECRET, key_length=256, template=READABLE)
            expect(got[Attribute.VALUE] == secret, "decapsulated secret differs")

        @case(f"{name} - the token encapsulates to cryptography's key, cryptography decapsulates the same secret")
        def _(ckp=ckp, py_cls=py_cls):
            sk = py_cls.generate()
            pub = s.create_object({
                Attribute.CLASS: ObjectClass.PUBLIC_KEY, Attribute.KEY_TYPE: KeyType.ML_KEM,
                Attribute.PARAMETER_SET: ckp, Attribute.VALUE: sk.public_key().public_bytes_raw(),
            })
            ct, key = pub.encapsulate_key(KeyType.GENERIC_SECRET, key_length=256, template=READABLE)
            expect(sk.decapsulate(ct) == key[Attribute.VALUE], "secrets differ")

        @case(f"{name} key from a seed gives cryptography's SPKI and decapsulates its secret")
        def _(ckp=ckp, py_cls=py_cls):
            seed = os.urandom(64)
            priv = s.create_object({
                Attribute.CLASS: ObjectClass.PRIVATE_KEY, Attribute.KEY_TYPE: KeyType.ML_KEM,
                Attribute.PARAMETER_SET: ckp, Attribute.SEED: seed,
            })
            sk = py_cls.from_seed_bytes(seed)
            expect(priv[CKA_PUBLIC_KEY_INFO] == spki_of(sk.public_key()), "SPKI differs")
            secret, ct = sk.public_key().encapsulate()
            got = priv.decapsulate_key(ct, KeyType.GENERIC_SECRET, key_length=256, template=READABLE)
            expect(got[Attribute.VALUE] == secret, "decapsulated secret differs")
