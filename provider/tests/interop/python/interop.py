"""Interop with python-pkcs11: every result the token produces is checked by
an independent implementation (the `cryptography` package, hashlib, hmac).

Usage: python interop.py MODULE TOKEN_LABEL PIN          run every case
       python interop.py MODULE TOKEN_LABEL PIN login    only log in

Prints one line per case, "ok NAME" or "FAIL NAME: reason", and exits
non-zero when any case failed; python.sh turns the lines into lib.sh checks.
"""

import ctypes
import hashlib
import hmac
import os
import sys
import traceback

import pkcs11
from pkcs11 import MGF, Attribute, KeyType, Mechanism, MechanismFlag, ObjectClass
from pkcs11.mechanisms import GCMParams
from pkcs11.util.ec import encode_ec_public_key, encode_ecdsa_signature, encode_named_curve_parameters
from pkcs11.util.rsa import encode_rsa_public_key

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.kbkdf import KBKDFHMAC, CounterLocation, Mode

try:  # cryptography >= 43 keeps Triple DES among its "decrepit" ciphers
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
except ImportError:  # pragma: no cover - older cryptography
    TripleDES = algorithms.TripleDES

failures = 0
state = {}
MSG = b"interop message from python-pkcs11 " * 40
OTHER = b"another message"
SIGN_VERIFY = MechanismFlag.SIGN | MechanismFlag.VERIFY


def case(name):
    """Decorator: runs the function now and reports ok/FAIL."""

    assert ": " not in name, "case names must not contain ': '"

    def run(fn):
        global failures
        try:
            fn()
            print(f"ok {name}", flush=True)
        except Exception as e:  # noqa: BLE001 - any failure is a failed case
            failures += 1
            reason = f"{type(e).__name__}: {e}".rstrip(": ").replace("\n", " ")
            print(f"FAIL {name}: {reason}", flush=True)
            if os.environ.get("P11_INTEROP_TRACE"):
                traceback.print_exc(file=sys.stdout)
        return fn

    return run


def need(name):
    """A value an earlier case made; fails this case plainly if that one broke."""
    if name not in state:
        raise RuntimeError(f"no {name} (an earlier case failed)")
    return state[name]


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_raises(exc, fn):
    try:
        fn()
    except exc:
        return
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"expected {exc.__name__}, got {type(e).__name__}: {e}") from e
    raise AssertionError(f"expected {exc.__name__}, nothing was raised")


def main():
    module, label, pin = sys.argv[1:4]
    lib = pkcs11.lib(module)
    token = lib.get_token(token_label=label)
    if len(sys.argv) > 4 and sys.argv[4] == "login":
        with token.open(user_pin=pin):
            print(f"logged in to {token.label}")
        return 0

    import interop_pqc

    with token.open(rw=True, user_pin=pin, attribute_mapper=interop_pqc.attribute_mapper()) as s:
        run_cases(s)
    return 0 if failures == 0 else 1


def run_cases(s):
    # ---- EC P-256 ------------------------------------------------------------
    @case("EC P-256 key pair generated on the token")
    def _():
        params = s.create_domain_parameters(
            KeyType.EC, {Attribute.EC_PARAMS: encode_named_curve_parameters("secp256r1")}, local=True
        )
        pub, priv = params.generate_keypair(store=False, label="py-ec")
        state["ec"] = (pub, priv)
        expect(priv[Attribute.SENSITIVE] and not priv[Attribute.EXTRACTABLE], "private key is exportable")

    @case("ECDSA_SHA256 sign on the token, the token verifies")
    def _():
        pub, priv = need("ec")
        sig = priv.sign(MSG, mechanism=Mechanism.ECDSA_SHA256)
        expect(len(sig) == 64, f"signature is {len(sig)} bytes, want r||s of 64")
        state["ecsig"] = sig
        expect(pub.verify(MSG, sig, mechanism=Mechanism.ECDSA_SHA256), "token rejected its own signature")

    @case("the token rejects the ECDSA signature for another message")
    def _():
        pub, _priv = need("ec")
        expect(not pub.verify(OTHER, need("ecsig"), mechanism=Mechanism.ECDSA_SHA256), "accepted")

    @case("cryptography verifies the token's ECDSA signature")
    def _():
        pub = serialization.load_der_public_key(encode_ec_public_key(need("ec")[0]))
        expect(isinstance(pub.curve, ec.SECP256R1), f"curve {pub.curve.name}")
        pub.verify(encode_ecdsa_signature(need("ecsig")), MSG, ec.ECDSA(hashes.SHA256()))

    @case("cryptography rejects it for another message")
    def _():
        pub = serialization.load_der_public_key(encode_ec_public_key(need("ec")[0]))
        expect_raises(
            InvalidSignature,
            lambda: pub.verify(encode_ecdsa_signature(need("ecsig")), OTHER, ec.ECDSA(hashes.SHA256())),
        )

    @case("raw ECDSA over a SHA-256 digest, cryptography verifies")
    def _():
        _pub, priv = need("ec")
        sig = priv.sign(hashlib.sha256(MSG).digest(), mechanism=Mechanism.ECDSA)
        pub = serialization.load_der_public_key(encode_ec_public_key(need("ec")[0]))
        pub.verify(encode_ecdsa_signature(sig), MSG, ec.ECDSA(hashes.SHA256()))

    # ---- RSA-2048 ------------------------------------------------------------
    @case("RSA-2048 key pair generated on the token")
    def _():
        pub, priv = s.generate_keypair(KeyType.RSA, 2048, store=False, label="py-rsa")
        state["rsa"] = (pub, priv)
        expect(int.from_bytes(pub[Attribute.PUBLIC_EXPONENT], "big") == 65537, "exponent")
        expect(len(pub[Attribute.MODULUS]) == 256, "modulus length")

    @case("SHA256_RSA_PKCS sign on the token, cryptography verifies")
    def _():
        pub, priv = need("rsa")
        sig = priv.sign(MSG, mechanism=Mechanism.SHA256_RSA_PKCS)
        state["rsasig"] = sig
        key = serialization.load_der_public_key(encode_rsa_public_key(pub))
        key.verify(sig, MSG, padding.PKCS1v15(), hashes.SHA256())

    @case("cryptography rejects the RSA signature for another message")
    def _():
        key = serialization.load_der_public_key(encode_rsa_public_key(need("rsa")[0]))
        expect_raises(InvalidSignature, lambda: key.verify(need("rsasig"), OTHER, padding.PKCS1v15(), hashes.SHA256()))

    @case("the token verifies the RSA signature and rejects another message")
    def _():
        pub, _priv = need("rsa")
        expect(pub.verify(MSG, need("rsasig"), mechanism=Mechanism.SHA256_RSA_PKCS), "rejected its own")
        expect(not pub.verify(OTHER, need("rsasig"), mechanism=Mechanism.SHA256_RSA_PKCS), "accepted another")

    @case("SHA256_RSA_PKCS_PSS sign on the token, cryptography verifies")
    def _():
        pub, priv = need("rsa")
        pss = (Mechanism.SHA256, MGF.SHA256, 32)
        sig = priv.sign(MSG, mechanism=Mechanism.SHA256_RSA_PKCS_PSS, mechanism_param=pss)
        key = serialization.load_der_public_key(encode_rsa_public_key(pub))
        key.verify(sig, MSG, padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32), hashes.SHA256())

    @case("RSA OAEP (SHA-256), cryptography encrypts and the token decrypts")
    def _():
        pub, priv = need("rsa")
        key = serialization.load_der_public_key(encode_rsa_public_key(pub))
        secret = os.urandom(32)
        ct = key.encrypt(secret, padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None))
        pt = priv.decrypt(ct, mechanism=Mechanism.RSA_PKCS_OAEP, mechanism_param=(Mechanism.SHA256, MGF.SHA256, None))
        expect(pt == secret, "plaintext differs")

    # ---- AES-256 -------------------------------------------------------------
    @case("AES-256 key generated on the token (sensitive, not extractable)")
    def _():
        key = s.generate_key(KeyType.AES, 256, store=False, label="py-aes")
        state["aes"] = key
        expect(key[Attribute.SENSITIVE] and not key[Attribute.EXTRACTABLE], "key is exportable")
        expect_raises(pkcs11.exceptions.PKCS11Error, lambda: key[Attribute.VALUE])

    @case("AES_CBC_PAD round trip on the token")
    def _():
        key = need("aes")
        iv = s.generate_random(128)
        data = MSG[:1001]
        ct = key.encrypt(data, mechanism=Mechanism.AES_CBC_PAD, mechanism_param=iv)
        expect(len(ct) == 1008, f"ciphertext is {len(ct)} bytes")
        expect(key.decrypt(ct, mechanism=Mechanism.AES_CBC_PAD, mechanism_param=iv) == data, "plaintext differs")

    @case("AES_GCM round trip on the token, tampering detected")
    def _():
        key = need("aes")
        params = GCMParams(os.urandom(12), b"header", 128)
        ct = key.encrypt(MSG, mechanism=Mechanism.AES_GCM, mechanism_param=params)
        expect(len(ct) == len(MSG) + 16, f"ciphertext is {len(ct)} bytes")
        expect(key.decrypt(ct, mechanism=Mechanism.AES_GCM, mechanism_param=params) == MSG, "plaintext differs")
        bad = bytes([ct[0] ^ 1]) + ct[1:]
        expect_raises(pkcs11.exceptions.PKCS11Error,
                      lambda: key.decrypt(bad, mechanism=Mechanism.AES_GCM, mechanism_param=params))

    @case("extractable AES-256 key, CBC_PAD ciphertext decrypts with cryptography")
    def _():
        key = s.generate_key(KeyType.AES, 256, store=False, label="py-aes-x",
                             template={Attribute.SENSITIVE: False, Attribute.EXTRACTABLE: True})
        state["aesx"] = key
        value = key[Attribute.VALUE]
        expect(len(value) == 32, f"CKA_VALUE is {len(value)} bytes")
        iv = os.urandom(16)
        data = MSG[:999]
        ct = key.encrypt(data, mechanism=Mechanism.AES_CBC_PAD, mechanism_param=iv)
        d = Cipher(algorithms.AES(value), modes.CBC(iv)).decryptor()
        padded = d.update(ct) + d.finalize()
        expect(padded[-1] == 16 - len(data) % 16 and padded[: len(data)] == data, "plaintext/padding differs")

    @case("extractable AES-256 key, GCM both ways with cryptography")
    def _():
        key = need("aesx")
        aes = AESGCM(key[Attribute.VALUE])
        nonce = os.urandom(12)
        ct = key.encrypt(MSG, mechanism=Mechanism.AES_GCM, mechanism_param=GCMParams(nonce, b"aad", 128))
        expect(aes.decrypt(nonce, ct, b"aad") == MSG, "cryptography decrypted something else")
        expect_raises(InvalidTag, lambda: aes.decrypt(nonce, ct, b"AAD"))
        nonce2 = os.urandom(12)
        ct2 = aes.encrypt(nonce2, MSG, b"aad")
        pt = key.decrypt(ct2, mechanism=Mechanism.AES_GCM, mechanism_param=GCMParams(nonce2, b"aad", 128))
        expect(pt == MSG, "token decrypted something else")

    # ---- digest, HMAC, random ------------------------------------------------
    @case("SHA256 digest equals hashlib")
    def _():
        data = os.urandom(100_000)
        expect(s.digest(data, mechanism=Mechanism.SHA256) == hashlib.sha256(data).digest(), "digests differ")

    @case("SHA512 digest equals hashlib")
    def _():
        data = os.urandom(10_000)
        expect(s.digest(data, mechanism=Mechanism.SHA512) == hashlib.sha512(data).digest(), "digests differ")

    @case("HMAC-SHA256 over a generated generic secret, the token verifies")
    def _():
        # python-pkcs11 gives generic secrets no capabilities unless asked.
        key = s.generate_key(KeyType.GENERIC_SECRET, 256, store=False, label="py-hmac", capabilities=SIGN_VERIFY)
        mac = key.sign(MSG, mechanism=Mechanism.SHA256_HMAC)
        expect(len(mac) == 32, f"MAC is {len(mac)} bytes")
        expect(key.verify(MSG, mac, mechanism=Mechanism.SHA256_HMAC), "token rejected its own MAC")
        expect(not key.verify(OTHER, mac, mechanism=Mechanism.SHA256_HMAC), "token accepted another message")

    @case("HMAC-SHA256 with an extractable generic secret equals Python's hmac")
    def _():
        key = s.generate_key(KeyType.GENERIC_SECRET, 256, store=False, label="py-hmac-x", capabilities=SIGN_VERIFY,
                             template={Attribute.SENSITIVE: False, Attribute.EXTRACTABLE: True})
        mac = key.sign(MSG, mechanism=Mechanism.SHA256_HMAC)
        expect(mac == hmac.new(key[Attribute.VALUE], MSG, hashlib.sha256).digest(), "MACs differ")

    @case("HKDF_DERIVE (CK_HKDF_PARAMS, SHA-256) equals cryptography's HKDF")
    def _():
        ikm, salt, info = os.urandom(32), os.urandom(16), b"python-pkcs11 hkdf"
        base = s.create_object({
            Attribute.CLASS: ObjectClass.SECRET_KEY, Attribute.KEY_TYPE: KeyType.GENERIC_SECRET,
            Attribute.VALUE: ikm, Attribute.DERIVE: True, Attribute.TOKEN: False,
        })
        # python-pkcs11 0.10 has no HKDF parameter class: the struct is packed
        # here (its buffers stay alive for the call).
        salt_buf, info_buf = ctypes.create_string_buffer(salt, len(salt)), ctypes.create_string_buffer(info, len(info))

        class HkdfParams(ctypes.Structure):
            _fields_ = [("bExtract", ctypes.c_ubyte), ("bExpand", ctypes.c_ubyte), ("prf", ctypes.c_ulong),
                        ("saltType", ctypes.c_ulong), ("pSalt", ctypes.c_void_p), ("saltLen", ctypes.c_ulong),
                        ("hSaltKey", ctypes.c_ulong), ("pInfo", ctypes.c_void_p), ("infoLen", ctypes.c_ulong)]

        params = HkdfParams(1, 1, Mechanism.SHA256, 2, ctypes.addressof(salt_buf), len(salt), 0,
                            ctypes.addressof(info_buf), len(info))
        # CKM_HKDF_DERIVE (PKCS #11 3.0): python-pkcs11 0.10's Mechanism enum
        # lacks it and derive_key accepts only members, so one is made.
        ckm_hkdf_derive = int.__new__(Mechanism, 0x402A)
        ckm_hkdf_derive._name_, ckm_hkdf_derive._value_ = "HKDF_DERIVE", 0x402A
        derived = base.derive_key(KeyType.GENERIC_SECRET, 42 * 8, mechanism=ckm_hkdf_derive,
                                  mechanism_param=bytes(params),
                                  template={Attribute.SENSITIVE: False, Attribute.EXTRACTABLE: True})
        want = HKDF(algorithm=hashes.SHA256(), length=42, salt=salt, info=info).derive(ikm)
        expect(derived[Attribute.VALUE] == want, "derived value differs from RFC 5869 HKDF")

    @case("SP800_108_COUNTER_KDF (HMAC-SHA256) equals cryptography's KBKDFHMAC")
    def _():
        ikm, label, context = os.urandom(32), b"python-pkcs11", b"kbkdf interop"
        base = s.create_object({
            Attribute.CLASS: ObjectClass.SECRET_KEY, Attribute.KEY_TYPE: KeyType.GENERIC_SECRET,
            Attribute.VALUE: ikm, Attribute.DERIVE: True, Attribute.TOKEN: False,
        })
        # python-pkcs11 0.10 has no SP 800-108 parameter classes: the
        # structs of PKCS #11 3.0 §2.42 are packed here (buffers kept alive).
        ulong = ctypes.c_ulong

        class CounterFormat(ctypes.Structure):
            _fields_ = [("bLittleEndian", ctypes.c_ubyte), ("ulWidthInBits", ulong)]

        class DkmFormat(ctypes.Structure):
            _fields_ = [("dkmLengthMethod", ulong), ("bLittleEndian", ctypes.c_ubyte), ("ulWidthInBits", ulong)]

        class DataParam(ctypes.Structure):
            _fields_ = [("type", ulong), ("pValue", ctypes.c_void_p), ("ulValueLen", ulong)]

        class KdfParams(ctypes.Structure):
            _fields_ = [("prfType", ulong), ("ulNumberOfDataParams", ulong), ("pDataParams", ctypes.c_void_p),
                        ("ulAdditionalDerivedKeys", ulong), ("pAdditionalDerivedKeys", ctypes.c_void_p)]

        counter = CounterFormat(0, 32)
        fixed = ctypes.create_string_buffer(label + b"\x00" + context, len(label) + 1 + len(context))
        dkm = DkmFormat(1, 0, 32)  # CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, big-endian
        data = (DataParam * 3)(
            DataParam(1, ctypes.addressof(counter), ctypes.sizeof(counter)),  # ITERATION_VARIABLE
            DataParam(4, ctypes.addressof(fixed), len(fixed)),  # BYTE_ARRAY
            DataParam(3, ctypes.addressof(dkm), ctypes.sizeof(dkm)),  # DKM_LENGTH
        )
        params = KdfParams(Mechanism.SHA256_HMAC, 3, ctypes.addressof(data), 0, None)
        ckm_counter_kdf = int.__new__(Mechanism, 0x3AC)  # CKM_SP800_108_COUNTER_KDF
        ckm_counter_kdf._name_, ckm_counter_kdf._value_ = "SP800_108_COUNTER_KDF", 0x3AC
        derived = base.derive_key(KeyType.GENERIC_SECRET, 42 * 8, mechanism=ckm_counter_kdf,
                                  mechanism_param=bytes(params),
                                  template={Attribute.SENSITIVE: False, Attribute.EXTRACTABLE: True})
        want = KBKDFHMAC(algorithm=hashes.SHA256(), mode=Mode.CounterMode, length=42, rlen=4, llen=4,
                         location=CounterLocation.BeforeFixed, label=label, context=context,
                         fixed=None).derive(ikm)
        expect(derived[Attribute.VALUE] == want, "derived value differs from SP 800-108 counter-mode KDF")

    @case("EC P-521 key pair on the token, ECDSA_SHA512 verified by cryptography")
    def _():
        params = s.create_domain_parameters(
            KeyType.EC, {Attribute.EC_PARAMS: encode_named_curve_parameters("secp521r1")}, local=True
        )
        pub, priv = params.generate_keypair(store=False, label="py-ec521")
        sig = priv.sign(MSG, mechanism=Mechanism.ECDSA_SHA512)
        expect(len(sig) == 132, f"signature is {len(sig)} bytes, want r||s of 132")
        key = serialization.load_der_public_key(encode_ec_public_key(pub))
        expect(isinstance(key.curve, ec.SECP521R1), f"curve {key.curve.name}")
        key.verify(encode_ecdsa_signature(sig), MSG, ec.ECDSA(hashes.SHA512()))
        expect_raises(InvalidSignature,
                      lambda: key.verify(encode_ecdsa_signature(sig), OTHER, ec.ECDSA(hashes.SHA512())))

    @case("DES3 key generated with parity, CBC_PAD both ways with cryptography's TripleDES")
    def _():
        key = s.generate_key(KeyType.DES3, 192, store=False, label="py-des3",
                             template={Attribute.SENSITIVE: False, Attribute.EXTRACTABLE: True})
        value = key[Attribute.VALUE]
        expect(len(value) == 24, f"key is {len(value)} bytes")
        expect(all(bin(b).count("1") % 2 == 1 for b in value), "a key byte lacks odd parity")
        iv = os.urandom(8)
        ct = key.encrypt(MSG, mechanism=Mechanism.DES3_CBC_PAD, mechanism_param=iv)
        cipher = Cipher(TripleDES(value), modes.CBC(iv))
        padded = cipher.decryptor().update(ct)
        expect(padded[: len(MSG)] == MSG and padded[len(MSG):] == bytes([len(padded) - len(MSG)]) * (len(padded) - len(MSG)),
               "cryptography decrypted something else")
        pad = 8 - len(OTHER) % 8
        ct2 = cipher.encryptor().update(OTHER + bytes([pad]) * pad)
        expect(key.decrypt(ct2, mechanism=Mechanism.DES3_CBC_PAD, mechanism_param=iv) == OTHER,
               "token decrypted something else")

    @case("generate_random returns fresh bytes")
    def _():
        a, b = s.generate_random(512), s.generate_random(512)
        expect(len(a) == 64 and a != b and a != bytes(64), "bad random output")

    # ---- token objects -------------------------------------------------------
    @case("a stored key is found again by label and class")
    def _():
        s.generate_key(KeyType.AES, 128, store=True, label="py-stored")
        found = list(s.get_objects({Attribute.LABEL: "py-stored", Attribute.CLASS: ObjectClass.SECRET_KEY}))
        expect(len(found) == 1, f"found {len(found)} objects")
        found[0].destroy()
        expect(not list(s.get_objects({Attribute.LABEL: "py-stored"})), "still there after destroy")

    # ---- post-quantum (PKCS#11 3.2) -------------------------------------------
    import interop_pqc

    interop_pqc.run(s, case, expect, expect_raises)

    # ---- Diffie-Hellman (PKCS #3) ----------------------------------------------
    import interop_dh

    interop_dh.run(s, case, expect, expect_raises)


if __name__ == "__main__":
    sys.exit(main())
