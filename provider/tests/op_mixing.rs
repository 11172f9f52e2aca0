//! Single-part and multi-part calls do not mix (base spec §5.8–5.14: after
//! `C_*Init` an application calls either the single-part function or the
//! `*Update` calls and `*Final`). A single-part call that keeps the
//! operation alive — a size query with a NULL output, or
//! `CKR_BUFFER_TOO_SMALL` — claims it: the multi-part calls
//! (`C_*Update`, `C_*Final`, `C_DigestKey`, the dual-function calls) are
//! then `CKR_OPERATION_ACTIVE`; once `C_*Update` has run, the single-part
//! calls are `CKR_OPERATION_ACTIVE`. Either refusal ends the operation
//! (docs/mechanisms.md, "Single-part and multi-part calls"). Every digest
//! the module lists, every symmetric cipher mode, and a MAC and signature
//! of each family, through the raw function list.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;
use std::ptr::null_mut;

type DataInOut =
    unsafe extern "C" fn(CK_SESSION_HANDLE, *mut u8, CK_ULONG, *mut u8, *mut CK_ULONG) -> CK_RV;
type OutOnly = unsafe extern "C" fn(CK_SESSION_HANDLE, *mut u8, *mut CK_ULONG) -> CK_RV;
type DataIn = unsafe extern "C" fn(CK_SESSION_HANDLE, *mut u8, CK_ULONG) -> CK_RV;
type Init = unsafe extern "C" fn(CK_SESSION_HANDLE, *mut CK_MECHANISM, CK_OBJECT_HANDLE) -> CK_RV;

/// A mechanism with an owned parameter.
struct Mech {
    ty: CK_MECHANISM_TYPE,
    param: Vec<u8>,
}

impl Mech {
    fn plain(ty: CK_MECHANISM_TYPE) -> Mech {
        Mech { ty, param: vec![] }
    }
    fn raw(&mut self) -> CK_MECHANISM {
        CK_MECHANISM {
            mechanism: self.ty,
            pParameter: if self.param.is_empty() {
                null_mut()
            } else {
                self.param.as_mut_ptr().cast()
            },
            ulParameterLen: self.param.len() as CK_ULONG,
        }
    }
}

fn init(f: Init, s: &Session, m: &mut Mech, key: CK_OBJECT_HANDLE) {
    let mut raw = m.raw();
    // SAFETY: a valid mechanism whose parameter outlives the call.
    let rv = unsafe { f(s.handle(), &mut raw, key) };
    assert_eq!(rv, CKR_OK, "init of {:#x}", m.ty);
}

/// A data-in, data-out call into a buffer of `cap` bytes (`None`: NULL).
fn in_out(f: DataInOut, s: &Session, data: &[u8], cap: Option<usize>) -> (CK_RV, Vec<u8>) {
    let mut data = data.to_vec();
    let mut out = vec![0u8; cap.unwrap_or(0)];
    let mut len = cap.unwrap_or(0) as CK_ULONG;
    let p = if cap.is_some() {
        out.as_mut_ptr()
    } else {
        null_mut()
    };
    // SAFETY: live buffers of the stated lengths.
    let rv = unsafe {
        f(
            s.handle(),
            data.as_mut_ptr(),
            data.len() as CK_ULONG,
            p,
            &mut len,
        )
    };
    out.truncate((len as usize).min(out.len()));
    (rv, out)
}

fn out_only(f: OutOnly, s: &Session, cap: Option<usize>) -> (CK_RV, Vec<u8>) {
    let mut out = vec![0u8; cap.unwrap_or(0)];
    let mut len = cap.unwrap_or(0) as CK_ULONG;
    let p = if cap.is_some() {
        out.as_mut_ptr()
    } else {
        null_mut()
    };
    // SAFETY: a live buffer of the stated length.
    let rv = unsafe { f(s.handle(), p, &mut len) };
    out.truncate((len as usize).min(out.len()));
    (rv, out)
}

fn data_in(f: DataIn, s: &Session, data: &[u8]) -> CK_RV {
    let mut data = data.to_vec();
    // SAFETY: a live buffer of the stated length.
    unsafe { f(s.handle(), data.as_mut_ptr(), data.len() as CK_ULONG) }
}

fn l() -> &'static CK_FUNCTION_LIST {
    raw()
}

/// The mechanisms the module lists with `flag`.
fn listed(f: &Fixture, flag: CK_FLAGS) -> Vec<CK_MECHANISM_TYPE> {
    let slot = f.p().get_slots_with_token().unwrap()[0];
    let mut n: CK_ULONG = 0;
    let id = slot.id();
    // SAFETY: size query, then a buffer of that size.
    unsafe {
        assert_eq!(
            l().C_GetMechanismList.unwrap()(id, null_mut(), &mut n),
            CKR_OK
        );
        let mut list = vec![0; n as usize];
        assert_eq!(
            l().C_GetMechanismList.unwrap()(id, list.as_mut_ptr(), &mut n),
            CKR_OK
        );
        list.into_iter()
            .filter(|&m| {
                let mut info = CK_MECHANISM_INFO::default();
                l().C_GetMechanismInfo.unwrap()(id, m, &mut info) == CKR_OK
                    && info.flags & flag != 0
            })
            .collect()
    }
}

const DATA: &[u8] = b"sixteen byte blk sixteen byte blk";

#[test]
fn digests_refuse_multi_part_calls_after_a_single_part_claim_and_the_reverse() {
    let f = Fixture::new();
    let slot = f.token("mixing");
    let s = f.user(slot);
    let key = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(16.into()),
                Attribute::Token(false),
                Attribute::Sensitive(false),
                Attribute::Extractable(true),
            ],
        )
        .unwrap();
    let digests = listed(&f, CKF_DIGEST);
    assert!(digests.contains(&CKM_SHA256), "{digests:x?}");
    let (di, d, du, df, dk) = (
        l().C_DigestInit.unwrap(),
        l().C_Digest.unwrap(),
        l().C_DigestUpdate.unwrap(),
        l().C_DigestFinal.unwrap(),
        l().C_DigestKey.unwrap(),
    );
    let start = |ty| {
        let mut raw = Mech::plain(ty).raw();
        // SAFETY: a valid mechanism.
        assert_eq!(unsafe { di(s.handle(), &mut raw) }, CKR_OK, "{ty:#x}");
    };
    for &ty in &digests {
        // The single-part result, for the continuations below.
        start(ty);
        let (rv, whole) = in_out(d, &s, DATA, Some(128));
        assert_eq!(rv, CKR_OK);
        let n = whole.len();
        // A size query claims it: C_DigestUpdate is refused and ends it.
        start(ty);
        assert_eq!(in_out(d, &s, DATA, None).0, CKR_OK);
        assert_eq!(data_in(du, &s, DATA), CKR_OPERATION_ACTIVE, "{ty:#x}");
        assert_eq!(out_only(df, &s, Some(128)).0, CKR_OPERATION_NOT_INITIALIZED);
        // ... and C_DigestFinal, C_DigestKey.
        start(ty);
        assert_eq!(in_out(d, &s, DATA, None).0, CKR_OK);
        assert_eq!(out_only(df, &s, Some(128)).0, CKR_OPERATION_ACTIVE);
        assert_eq!(
            in_out(d, &s, DATA, Some(128)).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        start(ty);
        assert_eq!(in_out(d, &s, DATA, Some(n - 1)).0, CKR_BUFFER_TOO_SMALL);
        // SAFETY: plain call.
        assert_eq!(
            unsafe { dk(s.handle(), key.handle()) },
            CKR_OPERATION_ACTIVE
        );
        assert_eq!(
            in_out(d, &s, DATA, Some(128)).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        // The single-part call itself goes on after its size query and a
        // short buffer, to the same result.
        start(ty);
        assert_eq!(in_out(d, &s, DATA, None).0, CKR_OK);
        assert_eq!(in_out(d, &s, DATA, Some(n - 1)).0, CKR_BUFFER_TOO_SMALL);
        assert_eq!(in_out(d, &s, DATA, Some(n)), (CKR_OK, whole.clone()));
        // The reverse: after C_DigestUpdate, C_Digest is refused and ends it.
        start(ty);
        assert_eq!(data_in(du, &s, &DATA[..5]), CKR_OK);
        assert_eq!(in_out(d, &s, DATA, None).0, CKR_OPERATION_ACTIVE, "{ty:#x}");
        assert_eq!(out_only(df, &s, Some(128)).0, CKR_OPERATION_NOT_INITIALIZED);
        // A size query of C_DigestFinal does not claim anything.
        start(ty);
        assert_eq!(data_in(du, &s, &DATA[..5]), CKR_OK);
        assert_eq!(out_only(df, &s, None).0, CKR_OK);
        assert_eq!(data_in(du, &s, &DATA[5..]), CKR_OK);
        assert_eq!(out_only(df, &s, Some(n)), (CKR_OK, whole));
    }
}

/// A symmetric cipher mode of the test, with its key.
fn ciphers(s: &Session) -> Vec<(Mech, ObjectHandle, usize)> {
    let secret = |m: Mechanism, len: Option<u64>| cipher_key(s, m, len);
    let aes = secret(Mechanism::AesKeyGen, Some(16));
    let des3 = secret(Mechanism::Des3KeyGen, None);
    let ctr = ctr_param_bytes(128, [7; 16]);
    let with = |ty, param: &[u8]| Mech {
        ty,
        param: param.to_vec(),
    };
    vec![
        (Mech::plain(CKM_AES_ECB), aes, 32),
        (with(CKM_AES_CBC, &[1; 16]), aes, 32),
        (with(CKM_AES_CBC_PAD, &[1; 16]), aes, 33),
        (with(CKM_AES_CTR, &ctr), aes, 33),
        (Mech::plain(CKM_DES3_ECB), des3, 32),
        (with(CKM_DES3_CBC, &[1; 8]), des3, 32),
        (with(CKM_DES3_CBC_PAD, &[1; 8]), des3, 33),
    ]
}

#[test]
fn ciphers_refuse_multi_part_calls_after_a_single_part_claim_and_the_reverse() {
    let f = Fixture::new();
    let slot = f.token("mixing");
    let s = f.user(slot);
    for (mut m, key, len) in ciphers(&s) {
        let data = &DATA[..len];
        let ty = m.ty;
        let mut ciphertext = vec![];
        for encrypt in [true, false] {
            let (ini, one, upd, fin) = cipher_fns(encrypt);
            let input = if encrypt {
                data.to_vec()
            } else {
                ciphertext.clone()
            };
            let k = key.handle();
            // The single-part result.
            init(ini, &s, &mut m, k);
            let (rv, whole) = in_out(one, &s, &input, Some(128));
            assert_eq!(rv, CKR_OK, "{ty:#x}");
            if encrypt {
                ciphertext = whole.clone();
            } else {
                assert_eq!(whole, data, "{ty:#x}");
            }
            // Size query, then C_*Update: refused, operation ended.
            init(ini, &s, &mut m, k);
            assert_eq!(in_out(one, &s, &input, None).0, CKR_OK);
            assert_eq!(
                in_out(upd, &s, &input, Some(128)).0,
                CKR_OPERATION_ACTIVE,
                "{ty:#x} encrypt={encrypt}"
            );
            assert_eq!(
                in_out(one, &s, &input, Some(128)).0,
                CKR_OPERATION_NOT_INITIALIZED
            );
            // Size query, then C_*Final.
            init(ini, &s, &mut m, k);
            assert_eq!(in_out(one, &s, &input, None).0, CKR_OK);
            assert_eq!(out_only(fin, &s, Some(128)).0, CKR_OPERATION_ACTIVE);
            assert_eq!(
                out_only(fin, &s, Some(128)).0,
                CKR_OPERATION_NOT_INITIALIZED
            );
            // CKR_BUFFER_TOO_SMALL, then C_*Update.
            init(ini, &s, &mut m, k);
            assert_eq!(in_out(one, &s, &input, Some(1)).0, CKR_BUFFER_TOO_SMALL);
            assert_eq!(in_out(upd, &s, &input, None).0, CKR_OPERATION_ACTIVE);
            // The single-part call goes on after both, to the same result.
            init(ini, &s, &mut m, k);
            assert_eq!(in_out(one, &s, &input, None).0, CKR_OK);
            assert_eq!(in_out(one, &s, &input, Some(1)).0, CKR_BUFFER_TOO_SMALL);
            assert_eq!(in_out(one, &s, &input, Some(128)), (CKR_OK, whole.clone()));
            // The reverse: after C_*Update, C_Encrypt/C_Decrypt is refused
            // (size query or not) and ends the operation.
            for cap in [None, Some(128)] {
                init(ini, &s, &mut m, k);
                assert_eq!(in_out(upd, &s, &input[..16], Some(128)).0, CKR_OK);
                assert_eq!(
                    in_out(one, &s, &input, cap).0,
                    CKR_OPERATION_ACTIVE,
                    "{ty:#x}"
                );
                assert_eq!(
                    out_only(fin, &s, Some(128)).0,
                    CKR_OPERATION_NOT_INITIALIZED
                );
            }
            // Multi-part alone, with size queries, still gives the result.
            init(ini, &s, &mut m, k);
            let (rv, mut parts) = in_out(upd, &s, &input[..16], Some(128));
            assert_eq!(rv, CKR_OK);
            assert_eq!(in_out(upd, &s, &input[16..], None).0, CKR_OK);
            let (rv, more) = in_out(upd, &s, &input[16..], Some(128));
            assert_eq!(rv, CKR_OK);
            parts.extend(more);
            assert_eq!(out_only(fin, &s, None).0, CKR_OK);
            let (rv, last) = out_only(fin, &s, Some(128));
            assert_eq!(rv, CKR_OK);
            parts.extend(last);
            assert_eq!(parts, whole, "{ty:#x}");
        }
    }
}

/// The signing mechanisms of the test: one of each family, with the
/// private (signing) and public (verifying) key.
fn signers(s: &Session) -> Vec<(CK_MECHANISM_TYPE, ObjectHandle, ObjectHandle)> {
    let hmac = hmac_key(s);
    let aes = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(16.into()),
                Attribute::Token(false),
                Attribute::Sign(true),
                Attribute::Verify(true),
            ],
        )
        .unwrap();
    let p256 = vec![0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    let (ec_pub, ec_priv) = s
        .generate_key_pair(
            &Mechanism::EccKeyPairGen,
            &[Attribute::EcParams(p256), Attribute::Verify(true)],
            &[Attribute::Sign(true)],
        )
        .unwrap();
    let (rsa_pub, rsa_priv) = s
        .generate_key_pair(
            &Mechanism::RsaPkcsKeyPairGen,
            &[
                Attribute::ModulusBits(2048.into()),
                Attribute::PublicExponent(vec![1, 0, 1]),
                Attribute::Verify(true),
            ],
            &[Attribute::Sign(true)],
        )
        .unwrap();
    let mut v = vec![
        (CKM_AES_CMAC, aes, aes),
        (CKM_ECDSA_SHA256, ec_priv, ec_pub),
        (CKM_SHA256_RSA_PKCS, rsa_priv, rsa_pub),
    ];
    for ty in [
        CKM_SHA_1_HMAC,
        CKM_SHA224_HMAC,
        CKM_SHA256_HMAC,
        CKM_SHA384_HMAC,
        CKM_SHA512_HMAC,
    ] {
        v.push((ty, hmac, hmac));
    }
    v
}

#[test]
fn signatures_and_macs_refuse_mixing_both_ways() {
    let f = Fixture::new();
    let slot = f.token("mixing");
    let s = f.user(slot);
    let fl = l();
    let (si, sg, su, sf) = (
        fl.C_SignInit.unwrap(),
        fl.C_Sign.unwrap(),
        fl.C_SignUpdate.unwrap(),
        fl.C_SignFinal.unwrap(),
    );
    let (vi, vu) = (fl.C_VerifyInit.unwrap(), fl.C_VerifyUpdate.unwrap());
    let verify = |data: &[u8], sig: &[u8]| {
        let (mut d, mut g) = (data.to_vec(), sig.to_vec());
        // SAFETY: live buffers of the stated lengths.
        unsafe {
            fl.C_Verify.unwrap()(
                s.handle(),
                d.as_mut_ptr(),
                d.len() as CK_ULONG,
                g.as_mut_ptr(),
                g.len() as CK_ULONG,
            )
        }
    };
    let verify_final = |sig: &[u8]| {
        let mut g = sig.to_vec();
        // SAFETY: a live buffer of the stated length.
        unsafe { fl.C_VerifyFinal.unwrap()(s.handle(), g.as_mut_ptr(), g.len() as CK_ULONG) }
    };
    for (ty, private, public) in signers(&s) {
        let mut m = Mech::plain(ty);
        let (k, p) = (private.handle(), public.handle());
        init(si, &s, &mut m, k);
        let (rv, sig) = in_out(sg, &s, DATA, Some(512));
        assert_eq!(rv, CKR_OK, "{ty:#x}");
        // C_Sign's size query claims it: C_SignUpdate and C_SignFinal are
        // refused and end it.
        init(si, &s, &mut m, k);
        assert_eq!(in_out(sg, &s, DATA, None).0, CKR_OK);
        assert_eq!(data_in(su, &s, DATA), CKR_OPERATION_ACTIVE, "{ty:#x}");
        assert_eq!(
            in_out(sg, &s, DATA, Some(512)).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        init(si, &s, &mut m, k);
        assert_eq!(in_out(sg, &s, DATA, Some(1)).0, CKR_BUFFER_TOO_SMALL);
        assert_eq!(out_only(sf, &s, Some(512)).0, CKR_OPERATION_ACTIVE);
        assert_eq!(out_only(sf, &s, Some(512)).0, CKR_OPERATION_NOT_INITIALIZED);
        // The reverse.
        init(si, &s, &mut m, k);
        assert_eq!(data_in(su, &s, DATA), CKR_OK);
        assert_eq!(in_out(sg, &s, DATA, None).0, CKR_OPERATION_ACTIVE);
        assert_eq!(out_only(sf, &s, Some(512)).0, CKR_OPERATION_NOT_INITIALIZED);
        // Verification: after C_VerifyUpdate, C_Verify is refused and ends it.
        init(vi, &s, &mut m, p);
        assert_eq!(data_in(vu, &s, DATA), CKR_OK);
        assert_eq!(verify(DATA, &sig), CKR_OPERATION_ACTIVE, "{ty:#x}");
        assert_eq!(verify_final(&sig), CKR_OPERATION_NOT_INITIALIZED);
        // Unmixed, both forms verify.
        init(vi, &s, &mut m, p);
        assert_eq!(verify(DATA, &sig), CKR_OK, "{ty:#x}");
        init(vi, &s, &mut m, p);
        assert_eq!(data_in(vu, &s, DATA), CKR_OK);
        assert_eq!(verify_final(&sig), CKR_OK);
    }
}

#[test]
fn dual_function_calls_refuse_an_operation_a_single_part_call_claimed() {
    let f = Fixture::new();
    let slot = f.token("mixing");
    let s = f.user(slot);
    let fl = l();
    let aes = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[Attribute::ValueLen(16.into()), Attribute::Token(false)],
        )
        .unwrap();
    let mut ecb = Mech::plain(CKM_AES_ECB);
    let mut sha = Mech::plain(CKM_SHA256).raw();
    let de = fl.C_DigestEncryptUpdate.unwrap();
    // The digest claimed by C_Digest's size query, then the encryption by
    // C_Encrypt's: C_DigestEncryptUpdate is refused, and (as any error of
    // a dual-function call, §5.16) ends both operations.
    for claim in [fl.C_Digest.unwrap(), fl.C_Encrypt.unwrap()] {
        // SAFETY: a valid mechanism.
        assert_eq!(
            unsafe { fl.C_DigestInit.unwrap()(s.handle(), &mut sha) },
            CKR_OK
        );
        init(fl.C_EncryptInit.unwrap(), &s, &mut ecb, aes.handle());
        assert_eq!(in_out(claim, &s, DATA, None).0, CKR_OK);
        assert_eq!(
            in_out(de, &s, &DATA[..16], Some(64)).0,
            CKR_OPERATION_ACTIVE
        );
        for finish in [fl.C_DigestFinal.unwrap(), fl.C_EncryptFinal.unwrap()] {
            assert_eq!(
                out_only(finish, &s, Some(64)).0,
                CKR_OPERATION_NOT_INITIALIZED
            );
        }
    }
}
