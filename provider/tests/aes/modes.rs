//! The AES stream modes (OFB, CFB128, CFB8, CFB1), CBC with ciphertext
//! stealing (CS1), the CBC-MAC and the KWP / PKCS #7 key wraps, through
//! the C API.

use super::*;

/// SP 800-38A F.3 (CFB1, CFB8, CFB128) and F.4 (OFB) for the three key
/// sizes: single-part both ways, multi-part in pieces of every size up to
/// the length (the streams output each byte as it arrives), and the IV
/// length checks.
#[test]
fn sp800_38a_cfb_ofb_known_answers_and_parts() {
    let f = Fixture::new();
    let slot = f.token("aes-cfb");
    let s = f.user(slot);
    let vectors = lines(include_str!("../vectors/aes-sp800-38a.txt"));
    let mut seen = 0;
    for v in vectors
        .into_iter()
        .filter(|v| !matches!(v[0], "ecb" | "cbc" | "ctr"))
    {
        let ty = match v[0] {
            "cfb1" => CKM_AES_CFB1,
            "cfb8" => CKM_AES_CFB8,
            "cfb128" => CKM_AES_CFB128,
            "ofb" => CKM_AES_OFB,
            other => panic!("unknown mode {other}"),
        };
        seen += 1;
        let (section, key, mut iv, plain, want) =
            (v[1], unhex(v[2]), unhex(v[3]), unhex(v[4]), unhex(v[5]));
        let k = aes_key(&s, &key, false);
        for encrypt in [true, false] {
            let (input, output) = if encrypt {
                (&plain, &want)
            } else {
                (&want, &plain)
            };
            let mut mech = bytes_mechanism(ty, &mut iv);
            assert_eq!(raw_init(&s, encrypt, &mut mech, k), CKR_OK);
            assert_eq!(raw_once(&s, encrypt, input).unwrap(), *output, "{section}");
            for chunk in 1..=input.len() {
                assert_eq!(raw_init(&s, encrypt, &mut mech, k), CKR_OK);
                assert_eq!(
                    cipher_parts(&s, encrypt, input, chunk),
                    *output,
                    "{section} {chunk}"
                );
            }
            // Any length: a prefix gives the prefix (the modes are streams).
            assert_eq!(raw_init(&s, encrypt, &mut mech, k), CKR_OK);
            assert_eq!(
                raw_once(&s, encrypt, &input[..input.len() - 1]).unwrap(),
                output[..input.len() - 1],
                "{section}"
            );
        }
        for bad_len in [0, 8, 15, 17] {
            let mut bad_iv = vec![0u8; bad_len];
            let mut mech = bytes_mechanism(ty, &mut bad_iv);
            assert_eq!(
                raw_init(&s, true, &mut mech, k),
                CKR_MECHANISM_PARAM_INVALID,
                "{section} {bad_len}"
            );
        }
    }
    assert_eq!(seen, 12);
    for ty in [CKM_AES_OFB, CKM_AES_CFB128, CKM_AES_CFB8, CKM_AES_CFB1] {
        assert_eq!(
            mechanism_info(slot, ty),
            (16, 32, CKF_ENCRYPT | CKF_DECRYPT),
            "{ty:#x}"
        );
    }
}

/// RFC 3962 appendix B through `CKM_AES_CTS` (CS1: the RFC's CS3 output
/// with the last two blocks back in order), single-part and in pieces of
/// every size, and the one-block minimum.
#[test]
fn cts_rfc3962_known_answers_and_parts() {
    let f = Fixture::new();
    let slot = f.token("aes-cts");
    let s = f.user(slot);
    let vectors = lines(include_str!("../vectors/aes-cts-rfc3962.txt"));
    assert_eq!(vectors.len(), 6);
    let mut iv = [0u8; 16];
    for v in vectors {
        let (key, plain, cs3) = (unhex(v[0]), unhex(v[1]), unhex(v[2]));
        // CS3 -> CS1: the last 16 + d bytes (d = len mod 16, or 16) are
        // Cn ‖ C*(n-1) in CS3 and C*(n-1) ‖ Cn in CS1.
        let d = match plain.len() % 16 {
            0 => 16,
            d => d,
        };
        let split = cs3.len() - 16 - d;
        let mut want = cs3[..split].to_vec();
        want.extend_from_slice(&cs3[split + 16..]);
        want.extend_from_slice(&cs3[split..split + 16]);
        let k = aes_key(&s, &key, false);
        for encrypt in [true, false] {
            let (input, output) = if encrypt {
                (&plain, &want)
            } else {
                (&want, &plain)
            };
            let mut mech = bytes_mechanism(CKM_AES_CTS, &mut iv);
            assert_eq!(raw_init(&s, encrypt, &mut mech, k), CKR_OK);
            assert_eq!(
                raw_once(&s, encrypt, input).unwrap(),
                *output,
                "{}",
                plain.len()
            );
            for chunk in 1..=input.len() {
                assert_eq!(raw_init(&s, encrypt, &mut mech, k), CKR_OK);
                assert_eq!(
                    cipher_parts(&s, encrypt, input, chunk),
                    *output,
                    "{} {chunk}",
                    plain.len()
                );
            }
        }
        // Less than one block.
        for (encrypt, rv) in [
            (true, CKR_DATA_LEN_RANGE),
            (false, CKR_ENCRYPTED_DATA_LEN_RANGE),
        ] {
            let mut mech = bytes_mechanism(CKM_AES_CTS, &mut iv);
            assert_eq!(raw_init(&s, encrypt, &mut mech, k), CKR_OK);
            assert_eq!(raw_once(&s, encrypt, &plain[..15]), Err(rv));
        }
        // Exactly one block is CBC.
        let mut mech = bytes_mechanism(CKM_AES_CTS, &mut iv);
        assert_eq!(raw_init(&s, true, &mut mech, k), CKR_OK);
        assert_eq!(
            raw_once(&s, true, &plain[..16]).unwrap(),
            s.encrypt(&Mechanism::AesCbc([0; 16]), k, &plain[..16])
                .unwrap()
        );
    }
    assert_eq!(
        mechanism_info(slot, CKM_AES_CTS),
        (16, 32, CKF_ENCRYPT | CKF_DECRYPT)
    );
}

/// `CKM_AES_MAC` / `CKM_AES_MAC_GENERAL` (CBC-MAC): known answers from
/// SP 800-38A F.2.1 and F.2.5 (CBC with IV v over P1..P4 ends in the
/// CBC-MAC, zero IV, of (v ^ P1) ‖ P2 ‖ P3 ‖ P4), verification, lengths.
#[test]
fn aes_mac_known_answers_and_lengths() {
    let f = Fixture::new();
    let slot = f.token("aes-mac");
    let s = f.user(slot);
    let key_for = |value: &[u8]| {
        s.create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Value(value.to_vec()),
            Attribute::Sign(true),
            Attribute::Verify(true),
        ])
        .unwrap()
    };
    let vectors = lines(include_str!("../vectors/aes-sp800-38a.txt"));
    let mut seen = 0;
    for v in vectors.iter().filter(|v| v[0] == "cbc") {
        seen += 1;
        let (key, iv, plain, ct) = (unhex(v[2]), unhex(v[3]), unhex(v[4]), unhex(v[5]));
        let mut msg = plain.clone();
        msg.iter_mut().zip(&iv).for_each(|(m, i)| *m ^= i);
        let want = &ct[ct.len() - 16..];
        let k = key_for(&key);
        let mut mac = CK_MECHANISM {
            mechanism: CKM_AES_MAC,
            pParameter: std::ptr::null_mut(),
            ulParameterLen: 0,
        };
        assert_eq!(
            raw_sign(&s, &mut mac, k, &msg).unwrap(),
            want[..8],
            "{}",
            v[1]
        );
        assert_eq!(raw_verify(&s, &mut mac, k, &msg, &want[..8]), CKR_OK);
        let mut bad = want[..8].to_vec();
        bad[7] ^= 1;
        assert_eq!(
            raw_verify(&s, &mut mac, k, &msg, &bad),
            CKR_SIGNATURE_INVALID
        );
        assert_eq!(
            raw_verify(&s, &mut mac, k, &msg, &want[..4]),
            CKR_SIGNATURE_LEN_RANGE
        );
        for n in 1..=16usize {
            let mut len = n as CK_ULONG;
            let mut general = CK_MECHANISM {
                mechanism: CKM_AES_MAC_GENERAL,
                pParameter: (&mut len as *mut CK_ULONG).cast(),
                ulParameterLen: std::mem::size_of::<CK_ULONG>() as CK_ULONG,
            };
            assert_eq!(raw_sign(&s, &mut general, k, &msg).unwrap(), want[..n]);
            assert_eq!(raw_verify(&s, &mut general, k, &msg, &want[..n]), CKR_OK);
        }
        for n in [0 as CK_ULONG, 17] {
            let mut len = n;
            let mut general = CK_MECHANISM {
                mechanism: CKM_AES_MAC_GENERAL,
                pParameter: (&mut len as *mut CK_ULONG).cast(),
                ulParameterLen: std::mem::size_of::<CK_ULONG>() as CK_ULONG,
            };
            assert_eq!(
                raw_sign(&s, &mut general, k, &msg),
                Err(CKR_MECHANISM_PARAM_INVALID)
            );
        }
        // Zero padding: a partial last block is MACed as if zero-filled.
        assert_eq!(
            raw_sign(&s, &mut mac, k, &msg[..60]).unwrap(),
            raw_sign(&s, &mut mac, k, &[&msg[..60], &[0u8; 4][..]].concat()).unwrap()
        );
    }
    assert_eq!(seen, 2);
    assert_eq!(
        mechanism_info(slot, CKM_AES_MAC),
        (16, 32, CKF_SIGN | CKF_VERIFY)
    );
    assert_eq!(
        mechanism_info(slot, CKM_AES_MAC_GENERAL),
        (16, 32, CKF_SIGN | CKF_VERIFY)
    );
}

/// C_WrapKey with a raw mechanism, with a size query.
pub(super) fn raw_wrap(
    s: &Session,
    mech: &mut CK_MECHANISM,
    kek: ObjectHandle,
    key: ObjectHandle,
) -> Result<Vec<u8>, CK_RV> {
    let f = raw().C_WrapKey.unwrap();
    let mut len: CK_ULONG = 0;
    // SAFETY: the mechanism and the output buffer are live locals.
    unsafe {
        let rv = f(
            s.handle(),
            mech,
            kek.handle(),
            key.handle(),
            std::ptr::null_mut(),
            &mut len,
        );
        if rv != CKR_OK {
            return Err(rv);
        }
        let mut out = vec![0u8; len as usize];
        let rv = f(
            s.handle(),
            mech,
            kek.handle(),
            key.handle(),
            out.as_mut_ptr(),
            &mut len,
        );
        if rv != CKR_OK {
            return Err(rv);
        }
        out.truncate(len as usize);
        Ok(out)
    }
}

/// C_UnwrapKey of an AES key with a raw mechanism.
fn raw_unwrap_aes(
    s: &Session,
    mech: &mut CK_MECHANISM,
    kek: ObjectHandle,
    wrapped: &[u8],
) -> Result<ObjectHandle, CK_RV> {
    raw_unwrap_secret(s, mech, kek, wrapped, CKK_AES)
}

/// C_UnwrapKey of a secret key of `key_type` (for encryption) with a raw
/// mechanism.
pub(super) fn raw_unwrap_secret(
    s: &Session,
    mech: &mut CK_MECHANISM,
    kek: ObjectHandle,
    wrapped: &[u8],
    key_type: CK_KEY_TYPE,
) -> Result<ObjectHandle, CK_RV> {
    let mut wrapped = wrapped.to_vec();
    let (mut class, mut key_type, mut yes) = (CKO_SECRET_KEY, key_type, CK_TRUE);
    let attr = |ty, p: *mut u8, n: usize| CK_ATTRIBUTE {
        type_: ty,
        pValue: p.cast(),
        ulValueLen: n as CK_ULONG,
    };
    let n = std::mem::size_of::<CK_ULONG>();
    let mut template = [
        attr(CKA_CLASS, (&mut class as *mut CK_ULONG).cast(), n),
        attr(CKA_KEY_TYPE, (&mut key_type as *mut CK_ULONG).cast(), n),
        attr(CKA_ENCRYPT, &mut yes, 1),
    ];
    let mut out = 0;
    // SAFETY: every pointer is live for its stated length.
    let rv = unsafe {
        raw().C_UnwrapKey.unwrap()(
            s.handle(),
            mech,
            kek.handle(),
            wrapped.as_mut_ptr(),
            wrapped.len() as CK_ULONG,
            template.as_mut_ptr(),
            template.len() as CK_ULONG,
            &mut out,
        )
    };
    if rv == CKR_OK {
        // SAFETY: a handle the module just returned.
        Ok(unsafe { ObjectHandle::new_from_raw(out) })
    } else {
        Err(rv)
    }
}

/// `CKM_AES_KEY_WRAP_KWP` is RFC 5649 (section 6's vectors, as
/// `CKM_AES_KEY_WRAP_PAD`); `CKM_AES_KEY_WRAP_PKCS7` is RFC 3394 over PKCS #7
/// padding to 8 bytes (checked against `CKM_AES_KEY_WRAP` of the padded
/// value), through C_Encrypt / C_Decrypt and C_WrapKey / C_UnwrapKey.
#[test]
fn key_wrap_kwp_and_pkcs7() {
    let f = Fixture::new();
    let slot = f.token("kwp");
    let s = f.user(slot);
    let plain = |ty| CK_MECHANISM {
        mechanism: ty,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let vectors = lines(include_str!("../vectors/aes-key-wrap-rfc3394-rfc5649.txt"));
    let mut seen = 0;
    for v in vectors.iter().filter(|v| v[0] == "kwp") {
        seen += 1;
        let (kek, data, wrapped) = (unhex(v[2]), unhex(v[3]), unhex(v[4]));
        let kek = aes_key(&s, &kek, false);
        let mut kwp = plain(CKM_AES_KEY_WRAP_KWP);
        assert_eq!(raw_init(&s, true, &mut kwp, kek), CKR_OK);
        assert_eq!(raw_once(&s, true, &data).unwrap(), wrapped, "{}", v[1]);
        assert_eq!(raw_init(&s, false, &mut kwp, kek), CKR_OK);
        assert_eq!(raw_once(&s, false, &wrapped).unwrap(), data, "{}", v[1]);
        let mut bad = wrapped.clone();
        bad[0] ^= 1;
        assert_eq!(raw_init(&s, false, &mut kwp, kek), CKR_OK);
        assert_eq!(raw_once(&s, false, &bad), Err(CKR_ENCRYPTED_DATA_INVALID));
    }
    assert_eq!(seen, 2);

    let kek = aes_key(&s, &[0x42; 32], false);
    let value: Vec<u8> = (0..32u8).collect();
    let target = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Value(value.clone()),
            Attribute::Encrypt(true),
            Attribute::Extractable(true),
            Attribute::Sensitive(false),
        ])
        .unwrap();
    let mut kw = plain(CKM_AES_KEY_WRAP);
    for (ty, padded) in [
        (CKM_AES_KEY_WRAP_PKCS7, [&value[..], &[8u8; 8]].concat()),
        (CKM_AES_KEY_WRAP_KWP, value.clone()),
    ] {
        let mut mech = plain(ty);
        let wrapped = raw_wrap(&s, &mut mech, kek, target).unwrap();
        if ty == CKM_AES_KEY_WRAP_PKCS7 {
            assert_eq!(raw_init(&s, true, &mut kw, kek), CKR_OK);
            assert_eq!(raw_once(&s, true, &padded).unwrap(), wrapped);
        } else {
            // One algorithm under two names.
            let mut pad = plain(CKM_AES_KEY_WRAP_PAD);
            assert_eq!(raw_wrap(&s, &mut pad, kek, target).unwrap(), wrapped);
        }
        let unwrapped = raw_unwrap_aes(&s, &mut mech, kek, &wrapped).unwrap();
        assert_same_aes_key(&s, unwrapped, target);
        let mut bad = wrapped.clone();
        bad[5] ^= 1;
        assert_eq!(
            raw_unwrap_aes(&s, &mut mech, kek, &bad),
            Err(CKR_WRAPPED_KEY_INVALID)
        );
    }
    // PKCS #7: every length from 8 bytes round-trips; bad padding and short
    // data are refused.
    let mut p7 = plain(CKM_AES_KEY_WRAP_PKCS7);
    for len in 8..=40usize {
        let data: Vec<u8> = (0..len as u8).collect();
        assert_eq!(raw_init(&s, true, &mut p7, kek), CKR_OK);
        let wrapped = raw_once(&s, true, &data).unwrap();
        assert_eq!(wrapped.len(), (len / 8 + 1) * 8 + 8);
        assert_eq!(raw_init(&s, false, &mut p7, kek), CKR_OK);
        assert_eq!(raw_once(&s, false, &wrapped).unwrap(), data, "{len}");
    }
    for bad_tail in [
        [0u8; 8],
        [9; 8],
        [1, 2, 3, 4, 5, 6, 7, 2],
        [3, 3, 3, 3, 3, 3, 4, 3],
    ] {
        let padded = [&value[..16], &bad_tail[..]].concat();
        assert_eq!(raw_init(&s, true, &mut kw, kek), CKR_OK);
        let wrapped = raw_once(&s, true, &padded).unwrap();
        assert_eq!(raw_init(&s, false, &mut p7, kek), CKR_OK);
        assert_eq!(
            raw_once(&s, false, &wrapped),
            Err(CKR_ENCRYPTED_DATA_INVALID),
            "{bad_tail:?}"
        );
    }
    assert_eq!(raw_init(&s, true, &mut p7, kek), CKR_OK);
    assert_eq!(raw_once(&s, true, &value[..7]), Err(CKR_DATA_LEN_RANGE));
    for ty in [CKM_AES_KEY_WRAP_KWP, CKM_AES_KEY_WRAP_PKCS7] {
        assert_eq!(
            mechanism_info(slot, ty),
            (16, 32, CKF_ENCRYPT | CKF_DECRYPT | CKF_WRAP | CKF_UNWRAP)
        );
    }
}
