//! Legacy-size RSA public keys (512 to 1023 bits): imported for signature
//! verification only, so old certificates can be checked; their
//! `CKA_ENCRYPT`, `CKA_WRAP` and `CKA_VERIFY_RECOVER` are false whatever
//! the template says, encryption refuses them even if those are set later,
//! and private keys and moduli under 512 bits stay refused
//! (docs/SECURITY.md, "Legacy RSA public keys").

use super::*;

/// A legacy public key as python-pkcs11's certificate import makes it
/// (usage attributes asked for, all of them).
fn import_legacy(s: &Session, n: &[u8], e: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::PUBLIC_KEY),
        Attribute::KeyType(KeyType::RSA),
        Attribute::Modulus(n.to_vec()),
        Attribute::PublicExponent(e.to_vec()),
        Attribute::Token(false),
        Attribute::Verify(true),
        Attribute::Encrypt(true),
        Attribute::Wrap(true),
        Attribute::VerifyRecover(true),
    ])
    .unwrap()
}

fn flag(s: &Session, h: ObjectHandle, ty: AttributeType) -> bool {
    match s.get_attributes(h, &[ty]).unwrap().pop() {
        Some(Attribute::Encrypt(b))
        | Some(Attribute::Wrap(b))
        | Some(Attribute::VerifyRecover(b))
        | Some(Attribute::Verify(b)) => b,
        other => panic!("{other:?}"),
    }
}

#[test]
fn legacy_public_keys_verify_openssl_signatures_and_nothing_else() {
    let f = Fixture::new();
    let slot = f.token("legacy");
    let s = f.user(slot);
    let mut checked = 0;
    for v in lines(include_str!("../vectors/rsa-legacy-public-verify.txt")) {
        let (bits, hash, n, e, msg, sig) = (
            v[0],
            v[1],
            unhex(v[2]),
            unhex(v[3]),
            unhex(v[4]),
            unhex(v[5]),
        );
        let key = import_legacy(&s, &n, &e);
        assert_eq!(
            s.get_attributes(key, &[AttributeType::ModulusBits])
                .unwrap()
                .pop(),
            Some(Attribute::ModulusBits(bits.parse::<u64>().unwrap().into()))
        );
        assert!(flag(&s, key, AttributeType::Verify));
        for ty in [
            AttributeType::Encrypt,
            AttributeType::Wrap,
            AttributeType::VerifyRecover,
        ] {
            assert!(!flag(&s, key, ty), "{bits} bits: {ty:?}");
        }
        let mech = match hash {
            "sha1" => Mechanism::Sha1RsaPkcs,
            "sha256" => Mechanism::Sha256RsaPkcs,
            other => panic!("{other}"),
        };
        s.verify(&mech, key, &msg, &sig)
            .unwrap_or_else(|e| panic!("{bits} bits {hash}: {e}"));
        let mut bad = sig.clone();
        bad[3] ^= 1;
        assert_rv!(s.verify(&mech, key, &msg, &bad), SignatureInvalid);
        // Confidentiality and recovery refuse it: by its attributes, and,
        // once those are set, by its size.
        assert_rv!(
            s.encrypt(&Mechanism::RsaPkcs, key, b"secret"),
            KeyFunctionNotPermitted
        );
        s.update_attributes(key, &[Attribute::Encrypt(true)])
            .unwrap();
        assert_rv!(s.encrypt(&Mechanism::RsaPkcs, key, b"secret"), KeySizeRange);
        s.update_attributes(key, &[Attribute::VerifyRecover(true)])
            .unwrap();
        let mut x509 = CK_MECHANISM {
            mechanism: CKM_RSA_X_509,
            pParameter: std::ptr::null_mut(),
            ulParameterLen: 0,
        };
        // SAFETY: a valid mechanism.
        let rv = unsafe { raw().C_VerifyRecoverInit.unwrap()(s.handle(), &mut x509, key.handle()) };
        assert_eq!(rv, CKR_KEY_SIZE_RANGE);
        checked += 1;
        // A private key of that size is still refused.
        let private = s.create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::RSA),
            Attribute::Modulus(n.clone()),
            Attribute::PublicExponent(e.clone()),
            Attribute::PrivateExponent(vec![3]),
            Attribute::Token(false),
        ]);
        assert_rv!(private, AttributeValueInvalid);
        // Below 512 bits, public keys too.
        if bits == "512" {
            let short = &n[1..];
            let r = s.create_object(&[
                Attribute::Class(ObjectClass::PUBLIC_KEY),
                Attribute::KeyType(KeyType::RSA),
                Attribute::Modulus(short.to_vec()),
                Attribute::PublicExponent(e.clone()),
            ]);
            assert_rv!(r, AttributeValueInvalid);
        }
    }
    assert_eq!(checked, 7);
}
