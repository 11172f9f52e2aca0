"""Diffie-Hellman (PKCS #3) cases of interop.py: the token's CKM_DH_PKCS_*
through python-pkcs11, each checked by the `cryptography` package
(OpenSSL's DH). The group primes are computed here from their RFC
definitions (RFC 7919 Appendix A, RFC 3526), not copied from the token.

run(s, case, expect, expect_raises) registers and runs the cases in session s.
"""

import warnings
from decimal import Decimal, getcontext, ROUND_FLOOR

import pkcs11
from pkcs11 import Attribute, KeyType, Mechanism
from pkcs11.mechanisms import GCMParams

from cryptography.utils import CryptographyDeprecationWarning
from cryptography.hazmat.primitives.asymmetric import dh
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

READABLE = {Attribute.SENSITIVE: False, Attribute.EXTRACTABLE: True}

# cryptography deprecates finite-field DH; it is the reference here.
warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning)


def _constants(bits):
    """e and pi to enough digits for a prime of `bits` bits."""
    getcontext().prec = bits * 30 // 100 + 60
    eps = Decimal(10) ** -(getcontext().prec - 10)
    e, term, k = Decimal(0), Decimal(1), 0
    while term > eps:
        e += term
        k += 1
        term /= k

    def arctan_inv(x):
        x = Decimal(x)
        total, term, n, sign = Decimal(0), 1 / x, 1, 1
        while term > eps:
            total += sign * term / n
            term /= x * x
            n += 2
            sign = -sign
        return total

    return e, 16 * arctan_inv(5) - 4 * arctan_inv(239)


def ffdhe(bits, c):
    """RFC 7919: p = 2^b - 2^(b-64) + {[2^(b-130) e] + c} * 2^64 - 1."""
    e, _ = _constants(bits)
    f = int((Decimal(2) ** (bits - 130) * e).to_integral_value(rounding=ROUND_FLOOR))
    return 2**bits - 2 ** (bits - 64) + (f + c) * 2**64 - 1


def modp(bits, c):
    """RFC 3526: p = 2^b - 2^(b-64) - 1 + 2^64 * {[2^(b-130) pi] + c}."""
    _, pi = _constants(bits)
    f = int((Decimal(2) ** (bits - 130) * pi).to_integral_value(rounding=ROUND_FLOOR))
    return 2**bits - 2 ** (bits - 64) - 1 + 2**64 * (f + c)


def _bytes(n, length=None):
    return n.to_bytes(length or (n.bit_length() + 7) // 8, "big")


def run(s, case, expect, expect_raises):
    groups = {
        "ffdhe2048": ffdhe(2048, 560316),
        "MODP 3072": modp(3072, 1690314),
    }

    def token_pair(p):
        params = s.create_domain_parameters(
            KeyType.DH, {Attribute.PRIME: _bytes(p), Attribute.BASE: b"\x02"}, local=True
        )
        return params.generate_keypair()

    def exchange(name, p):
        numbers = dh.DHParameterNumbers(p, 2)
        peer = numbers.parameters().generate_private_key()
        pub, priv = token_pair(p)
        y_token = int.from_bytes(pub[Attribute.VALUE], "big")
        y_peer = peer.public_key().public_numbers().y
        theirs = peer.exchange(dh.DHPublicNumbers(y_token, numbers).public_key())
        return priv, y_peer, theirs

    for name, p in groups.items():

        @case(f"DH {name}, the token's shared secret equals cryptography's")
        def _():
            priv, y_peer, theirs = exchange(name, p)
            size = (p.bit_length() + 7) // 8
            key = priv.derive_key(
                KeyType.GENERIC_SECRET,
                size * 8,
                mechanism_param=_bytes(y_peer, size),
                template=READABLE,
            )
            ours = key[Attribute.VALUE]
            expect(len(theirs) == size, f"cryptography gave {len(theirs)} bytes")
            expect(ours == theirs, "the secrets differ")

    @case("DH ffdhe2048, an AES-256 key is the secret's last 32 bytes")
    def _():
        p = groups["ffdhe2048"]
        priv, y_peer, theirs = exchange("ffdhe2048", p)
        key = priv.derive_key(KeyType.AES, 256, mechanism_param=_bytes(y_peer), template=READABLE)
        expect(key[Attribute.VALUE] == theirs[-32:], "not the last 32 bytes")
        nonce = bytes(12)
        sealed = key.encrypt(b"dh interop", mechanism=Mechanism.AES_GCM, mechanism_param=GCMParams(nonce, b"", 128))
        expect(AESGCM(theirs[-32:]).decrypt(nonce, sealed, b"") == b"dh interop", "AES-GCM differs")

    @case("DH ffdhe2048, a peer value of order 2 (p - 1) is refused")
    def _():
        p = groups["ffdhe2048"]
        _, priv = token_pair(p)
        expect_raises(
            pkcs11.exceptions.MechanismParamInvalid,
            lambda: priv.derive_key(KeyType.GENERIC_SECRET, 256, mechanism_param=_bytes(p - 1)),
        )
