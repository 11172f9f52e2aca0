//! MD5 (legacy, for SoftHSM2 migration) through the C API: the RFC 1321
//! §A.5 test suite for `CKM_MD5`, RFC 2202 §2 for `CKM_MD5_HMAC`, and
//! `CKM_MD5_HMAC_GENERAL` truncation. cryptoki 0.12.1 has no MD5
//! mechanisms, so these go through the raw function list.

mod common;
#[path = "common/raw_calls.rs"]
mod raw_calls;

use common::*;
use cryptoki::session::Session;
use cryptoki_sys::*;
use raw_calls::*;

/// RFC 1321 §A.5 "test suite", single- and multi-part.
#[test]
fn rfc1321_md5_test_suite() {
    let f = Fixture::new();
    let slot = f.token("md5");
    let s = f.user(slot);
    let suite: [(&str, &str); 7] = [
        ("", "d41d8cd98f00b204e9800998ecf8427e"),
        ("a", "0cc175b9c0f1b6a831c399e269772661"),
        ("abc", "900150983cd24fb0d6963f7d28e17f72"),
        ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
        (
            "abcdefghijklmnopqrstuvwxyz",
            "c3fcd3d76192e4007dfb496cca67e13b",
        ),
        (
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            "d174ab98d277d9f5a5611c2c9f419d9f",
        ),
        (
            "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
            "57edf4a22be3c955ac49da2e2107b67a",
        ),
    ];
    for (msg, want) in suite {
        let want = unhex(want);
        assert_eq!(digest(&s, CKM_MD5, msg.as_bytes(), None), want, "{msg:?}");
        assert_eq!(
            digest(&s, CKM_MD5, msg.as_bytes(), Some(7)),
            want,
            "{msg:?} multi-part"
        );
    }
}

/// RFC 2202 §2 test cases 1–3 for `CKM_MD5_HMAC`; `_GENERAL` truncates;
/// verification accepts the right MAC only; MD5 HMAC takes generic
/// secrets, not AES or SHA HMAC keys.
#[test]
fn rfc2202_hmac_md5() {
    let f = Fixture::new();
    let slot = f.token("hmac-md5");
    let s = f.user(slot);
    let cases: [(Vec<u8>, Vec<u8>, &str); 3] = [
        (
            vec![0x0b; 16],
            b"Hi There".to_vec(),
            "9294727a3638bb1c13f48ef8158bfc9d",
        ),
        (
            b"Jefe".to_vec(),
            b"what do ya want for nothing?".to_vec(),
            "750c783e6ab0b503eaa86e310a5db738",
        ),
        (
            vec![0xaa; 16],
            vec![0xdd; 50],
            "56be34521d144c88dbb8c733f0e8b3f6",
        ),
    ];
    for (key, data, want) in cases {
        let want = unhex(want);
        let k = mac_key(&s, CKK_GENERIC_SECRET, &key);
        let plain = || mech(CKM_MD5_HMAC, None);
        assert_eq!(sign(&s, plain(), k, &data, None).unwrap(), want);
        assert_eq!(sign(&s, plain(), k, &data, Some(5)).unwrap(), want);
        assert_eq!(verify(&s, plain(), k, &data, &want), CKR_OK);
        let mut bad = want.clone();
        bad[0] ^= 1;
        assert_eq!(verify(&s, plain(), k, &data, &bad), CKR_SIGNATURE_INVALID);
        let mut twelve: CK_ULONG = 12;
        let general = mech(CKM_MD5_HMAC_GENERAL, Some(&mut twelve));
        assert_eq!(sign(&s, general, k, &data, None).unwrap(), want[..12]);
        let mut seventeen: CK_ULONG = 17;
        let too_long = mech(CKM_MD5_HMAC_GENERAL, Some(&mut seventeen));
        assert_eq!(
            sign(&s, too_long, k, &data, None).unwrap_err(),
            CKR_MECHANISM_PARAM_INVALID
        );
    }
    for key_type in [CKK_AES, CKK_SHA_1_HMAC] {
        let k = mac_key(&s, key_type, &[7; 16]);
        assert_eq!(
            sign(&s, mech(CKM_MD5_HMAC, None), k, b"x", None).unwrap_err(),
            CKR_KEY_TYPE_INCONSISTENT,
            "{key_type:#x}"
        );
    }
}

/// `CKM_MD5_RSA_PKCS` (legacy): the signature, raised to the public
/// exponent here with plain big-integer arithmetic, is exactly the PKCS #1
/// v1.5 block built in this test (RFC 8017 §9.2: `00 01 FF…FF 00 ‖` the MD5
/// DigestInfo `‖ MD5(M)`, MD5 from the md-5 crate); single- and multi-part
/// agree, verification accepts it and refuses a changed message. With
/// aws-lc, MD5 falls back to the rsa crate (aws-lc has no MD5 signing).
#[test]
fn md5_rsa_pkcs_matches_independent_block() {
    use cryptoki::mechanism::Mechanism;
    use cryptoki::object::{Attribute, AttributeType};
    use md5::Digest;
    use rsa::BigUint;

    let f = Fixture::new();
    let slot = f.token("md5-rsa");
    let s = f.user(slot);
    let (public, private) = s
        .generate_key_pair(
            &Mechanism::RsaPkcsKeyPairGen,
            &[
                Attribute::ModulusBits(2048.into()),
                Attribute::Verify(true),
                Attribute::Token(false),
            ],
            &[Attribute::Sign(true), Attribute::Token(false)],
        )
        .unwrap();
    let attrs = s
        .get_attributes(
            public,
            &[AttributeType::Modulus, AttributeType::PublicExponent],
        )
        .unwrap();
    let (Attribute::Modulus(n), Attribute::PublicExponent(e)) = (&attrs[0], &attrs[1]) else {
        panic!("attributes {attrs:?}");
    };
    let msg = b"The quick brown fox jumps over the lazy dog";
    let sig = sign_big(&s, private.handle(), msg, None);
    assert_eq!(sig.len(), 256);
    assert_eq!(sign_big(&s, private.handle(), msg, Some(10)), sig);

    let mut block = vec![0x00, 0x01];
    let prefix = unhex("3020300c06082a864886f70d020505000410");
    block.resize(256 - 3 - prefix.len() - 16 + 2, 0xff);
    block.push(0x00);
    block.extend_from_slice(&prefix);
    block.extend_from_slice(&md5::Md5::digest(msg));
    assert_eq!(block.len(), 256);
    let opened = BigUint::from_bytes_be(&sig)
        .modpow(&BigUint::from_bytes_be(e), &BigUint::from_bytes_be(n))
        .to_bytes_be();
    // to_bytes_be drops the leading zero byte.
    assert_eq!(opened, block[1..]);

    assert_eq!(
        verify(&s, mech(CKM_MD5_RSA_PKCS, None), public.handle(), msg, &sig),
        CKR_OK
    );
    assert_eq!(
        verify(
            &s,
            mech(CKM_MD5_RSA_PKCS, None),
            public.handle(),
            b"The quick brown fox jumps over the lazy cog",
            &sig
        ),
        CKR_SIGNATURE_INVALID
    );
}

/// `C_Sign` with `CKM_MD5_RSA_PKCS` into a 512-byte buffer.
fn sign_big(s: &Session, key: CK_OBJECT_HANDLE, data: &[u8], chunk: Option<usize>) -> Vec<u8> {
    let f = raw();
    let mut m = mech(CKM_MD5_RSA_PKCS, None);
    let mut out = [0u8; 512];
    let mut len = out.len() as CK_ULONG;
    // SAFETY: valid session, mechanism and buffers of the given lengths.
    unsafe {
        assert_eq!(f.C_SignInit.unwrap()(s.handle(), &mut m, key), CKR_OK);
        match chunk {
            None => assert_eq!(
                f.C_Sign.unwrap()(
                    s.handle(),
                    data.as_ptr() as *mut u8,
                    data.len() as CK_ULONG,
                    out.as_mut_ptr(),
                    &mut len
                ),
                CKR_OK
            ),
            Some(c) => {
                for piece in data.chunks(c) {
                    assert_eq!(
                        f.C_SignUpdate.unwrap()(
                            s.handle(),
                            piece.as_ptr() as *mut u8,
                            piece.len() as CK_ULONG
                        ),
                        CKR_OK
                    );
                }
                assert_eq!(
                    f.C_SignFinal.unwrap()(s.handle(), out.as_mut_ptr(), &mut len),
                    CKR_OK
                );
            }
        }
    }
    out[..len as usize].to_vec()
}

/// `C_DigestKey` with `CKM_MD5` digests the key's value in sequence with
/// the data: "a" then a generic secret holding "bc" gives MD5("abc")
/// (RFC 1321 §A.5).
#[test]
fn digest_key_with_md5() {
    use cryptoki::object::{Attribute, KeyType, ObjectClass};
    let f = Fixture::new();
    let slot = f.token("md5-key");
    let s = f.user(slot);
    let key = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(b"bc".to_vec()),
            Attribute::Sensitive(false),
            Attribute::Extractable(true),
            Attribute::Token(false),
        ])
        .unwrap();
    let l = raw();
    let mut m = mech(CKM_MD5, None);
    let mut out = [0u8; 16];
    let mut len = out.len() as CK_ULONG;
    // SAFETY: valid session, mechanism, handle and buffers of the given lengths.
    unsafe {
        assert_eq!(l.C_DigestInit.unwrap()(s.handle(), &mut m), CKR_OK);
        assert_eq!(
            l.C_DigestUpdate.unwrap()(s.handle(), b"a".as_ptr() as *mut u8, 1),
            CKR_OK
        );
        assert_eq!(l.C_DigestKey.unwrap()(s.handle(), key.handle()), CKR_OK);
        assert_eq!(
            l.C_DigestFinal.unwrap()(s.handle(), out.as_mut_ptr(), &mut len),
            CKR_OK
        );
    }
    assert_eq!(
        out[..len as usize],
        unhex("900150983cd24fb0d6963f7d28e17f72")
    );
}
