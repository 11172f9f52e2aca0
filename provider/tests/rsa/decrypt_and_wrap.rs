//! RSA decryption's output path (the AtMost length of `C_Decrypt`, base
//! spec §5.2) and key wrapping with OAEP and AES key wrap with padding
//! (mechanisms spec §2.1.8, §2.14).

use super::*;

#[test]
fn decrypt_buffer_too_small_keeps_the_operation() {
    let f = Fixture::new();
    let slot = f.token("atmost");
    let s = f.user(slot);
    let (public, private) = generate(&s, 2048, None);
    let mut ct = s
        .encrypt(&Mechanism::RsaPkcs, public, b"ten bytes!")
        .unwrap();
    let l = raw();
    let h = s.handle();
    let mut out = [0u8; 256];
    let mut len: CK_ULONG = 0;
    // SAFETY: all pointers are to live locals of the stated lengths.
    unsafe {
        s.decrypt_init(&Mechanism::RsaPkcs, private).unwrap();
        // Size query: an upper bound (k − 11).
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 256, std::ptr::null_mut(), &mut len),
            CKR_OK
        );
        assert_eq!(len, 245);
        // Too small: the exact length, operation kept.
        len = 4;
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 256, out.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 10);
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 256, out.as_mut_ptr(), &mut len),
            CKR_OK
        );
        assert_eq!(&out[..10], b"ten bytes!");
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 256, out.as_mut_ptr(), &mut len),
            CKR_OPERATION_NOT_INITIALIZED
        );
        // A ciphertext of the wrong length ends the operation.
        s.decrypt_init(&Mechanism::RsaPkcs, private).unwrap();
        len = 256;
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 255, out.as_mut_ptr(), &mut len),
            CKR_ENCRYPTED_DATA_LEN_RANGE
        );
        // Signature size query and too-small buffer.
        s.sign_init(&Mechanism::Sha256RsaPkcs, private).unwrap();
        let mut data = *b"abc";
        len = 255;
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 3, out.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 256);
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 3, out.as_mut_ptr(), &mut len),
            CKR_OK
        );
    }
    s.verify(&Mechanism::Sha256RsaPkcs, public, b"abc", &out)
        .unwrap();
}

#[test]
fn key_wrapping_with_oaep_and_aes_key_wrap_pad() {
    let f = Fixture::new();
    let slot = f.token("wrap");
    let s = f.user(slot);
    let (public, private) = generate(&s, 2048, None);
    let aes = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Encrypt(true),
                // Key-wrap separation: a key that wraps sensitive keys (the
                // RSA private key below) must not decrypt.
                Attribute::Decrypt(false),
                Attribute::Wrap(true),
                Attribute::Unwrap(true),
                Attribute::Extractable(true),
            ],
        )
        .unwrap();
    let block = [0x42u8; 16];
    let reference = s.encrypt(&Mechanism::AesEcb, aes, &block).unwrap();
    let aes_template = [
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::Encrypt(true),
        // Copies of the wrapping key's value that could decrypt would make it
        // refuse to wrap the sensitive private key below.
        Attribute::Decrypt(false),
    ];
    // An AES key under RSA-OAEP and PKCS #1 v1.5.
    let label = b"wrap".to_vec();
    for mech in [
        Mechanism::RsaPkcsOaep(PkcsOaepParams::new(
            MechanismType::SHA256,
            PkcsMgfType::MGF1_SHA256,
            PkcsOaepSource::data_specified(&label),
        )),
        Mechanism::RsaPkcs,
    ] {
        let wrapped = s.wrap_key(&mech, public, aes).unwrap();
        assert_eq!(wrapped.len(), 256);
        let back = s
            .unwrap_key(&mech, private, &wrapped, &aes_template)
            .unwrap();
        assert_eq!(
            s.encrypt(&Mechanism::AesEcb, back, &block).unwrap(),
            reference
        );
        let mut bad = wrapped.clone();
        bad[100] ^= 1;
        assert_rv!(
            s.unwrap_key(&mech, private, &bad, &aes_template),
            WrappedKeyInvalid
        );
    }
    // An RSA private key under AES key wrap with padding (PKCS #8 inside).
    let wrapped = s.wrap_key(&Mechanism::AesKeyWrapPad, aes, private).unwrap();
    let back = s
        .unwrap_key(
            &Mechanism::AesKeyWrapPad,
            aes,
            &wrapped,
            &[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::RSA),
                Attribute::Sign(true),
            ],
        )
        .unwrap();
    let msg = b"same key";
    assert_eq!(
        s.sign(&Mechanism::Sha256RsaPkcs, back, msg).unwrap(),
        s.sign(&Mechanism::Sha256RsaPkcs, private, msg).unwrap()
    );
    // Unextractable keys are refused.
    let locked = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(16.into()),
                Attribute::Extractable(false),
            ],
        )
        .unwrap();
    assert_rv!(
        s.wrap_key(&Mechanism::RsaPkcs, public, locked),
        KeyUnextractable
    );
}
