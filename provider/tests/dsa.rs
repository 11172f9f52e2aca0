//! DSA through the C API (mechanisms spec 3.0 §2.2): RFC 6979 A.2.1 /
//! A.2.2 known answers (the token signs deterministically), parameter and
//! key-pair generation at every size, tampered signatures, wrong key types,
//! hostile imports, PKCS#8 wrapping and the mechanism sizes.
//!
//! cryptoki has no DSA mechanisms, so calls go through the raw function
//! list.

mod common;
#[path = "common/raw_calls.rs"]
mod raw_calls;

use common::*;
use cryptoki::session::Session;
use cryptoki_sys::*;
use raw_calls::*;
use std::time::{Duration, Instant};

fn domain(p: &[u8], q: &[u8], g: &[u8]) -> Vec<A> {
    vec![
        (CKA_PRIME, p.to_vec()),
        (CKA_SUBPRIME, q.to_vec()),
        (CKA_BASE, g.to_vec()),
    ]
}

fn key_tpl(class: CK_OBJECT_CLASS, p: &[u8], q: &[u8], g: &[u8], value: &[u8]) -> Vec<A> {
    let mut t = vec![
        ul(CKA_CLASS, class),
        ul(CKA_KEY_TYPE, CKK_DSA),
        (CKA_VALUE, value.to_vec()),
    ];
    t.extend(domain(p, q, g));
    t
}

fn gen_params(
    s: &Session,
    bits: CK_ULONG,
    sub: Option<CK_ULONG>,
) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut t: Vec<A> = vec![ul(CKA_PRIME_BITS, bits)];
    if let Some(n) = sub {
        t.push(ul(CKA_SUBPRIME_BITS, n));
    }
    generate(s, CKM_DSA_PARAMETER_GEN, t)
}

fn gen_pair(
    s: &Session,
    p: &[u8],
    q: &[u8],
    g: &[u8],
) -> Result<(CK_OBJECT_HANDLE, CK_OBJECT_HANDLE), CK_RV> {
    let mut pt = domain(p, q, g);
    pt.push(flag(CKA_VERIFY, true));
    let st: Vec<A> = vec![flag(CKA_SIGN, true), flag(CKA_EXTRACTABLE, true)];
    generate_pair(s, CKM_DSA_KEY_PAIR_GEN, pt, st)
}

fn sign(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    key: CK_OBJECT_HANDLE,
    data: &[u8],
) -> Result<Vec<u8>, CK_RV> {
    let l = raw();
    let mut m = mech(ty, None);
    let mut data = data.to_vec();
    // SAFETY: live mechanism, input and output buffers.
    unsafe {
        check(l.C_SignInit.unwrap()(s.handle(), &mut m, key))?;
        let mut out = vec![0u8; 64];
        let mut len = out.len() as CK_ULONG;
        check(l.C_Sign.unwrap()(
            s.handle(),
            data.as_mut_ptr(),
            data.len() as CK_ULONG,
            out.as_mut_ptr(),
            &mut len,
        ))?;
        out.truncate(len as usize);
        Ok(out)
    }
}

/// Multi-part signature: the data in two parts.
fn sign_parts(s: &Session, ty: CK_MECHANISM_TYPE, key: CK_OBJECT_HANDLE, data: &[u8]) -> Vec<u8> {
    let l = raw();
    let mut m = mech(ty, None);
    let (mut a, mut b) = (data[..2].to_vec(), data[2..].to_vec());
    // SAFETY: live mechanism, input and output buffers.
    unsafe {
        assert_eq!(l.C_SignInit.unwrap()(s.handle(), &mut m, key), CKR_OK);
        for part in [&mut a, &mut b] {
            let rv = l.C_SignUpdate.unwrap()(s.handle(), part.as_mut_ptr(), part.len() as CK_ULONG);
            assert_eq!(rv, CKR_OK);
        }
        let mut out = vec![0u8; 64];
        let mut len = out.len() as CK_ULONG;
        assert_eq!(
            l.C_SignFinal.unwrap()(s.handle(), out.as_mut_ptr(), &mut len),
            CKR_OK
        );
        out.truncate(len as usize);
        out
    }
}

fn verify(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    key: CK_OBJECT_HANDLE,
    data: &[u8],
    sig: &[u8],
) -> CK_RV {
    let l = raw();
    let mut m = mech(ty, None);
    let (mut data, mut sig) = (data.to_vec(), sig.to_vec());
    // SAFETY: live mechanism and buffers.
    unsafe {
        let rv = l.C_VerifyInit.unwrap()(s.handle(), &mut m, key);
        if rv != CKR_OK {
            return rv;
        }
        l.C_Verify.unwrap()(
            s.handle(),
            data.as_mut_ptr(),
            data.len() as CK_ULONG,
            sig.as_mut_ptr(),
            sig.len() as CK_ULONG,
        )
    }
}

const HASHES: [(&str, CK_MECHANISM_TYPE, CK_MECHANISM_TYPE); 5] = [
    ("sha1", CKM_DSA_SHA1, CKM_SHA_1),
    ("sha224", CKM_DSA_SHA224, CKM_SHA224),
    ("sha256", CKM_DSA_SHA256, CKM_SHA256),
    ("sha384", CKM_DSA_SHA384, CKM_SHA384),
    ("sha512", CKM_DSA_SHA512, CKM_SHA512),
];

fn digest(s: &Session, ty: CK_MECHANISM_TYPE, data: &[u8]) -> Vec<u8> {
    let l = raw();
    let mut m = mech(ty, None);
    let mut data = data.to_vec();
    let mut out = vec![0u8; 64];
    let mut len = 64;
    // SAFETY: live mechanism and buffers.
    unsafe {
        assert_eq!(l.C_DigestInit.unwrap()(s.handle(), &mut m), CKR_OK);
        let rv = l.C_Digest.unwrap()(
            s.handle(),
            data.as_mut_ptr(),
            data.len() as CK_ULONG,
            out.as_mut_ptr(),
            &mut len,
        );
        assert_eq!(rv, CKR_OK);
    }
    out.truncate(len as usize);
    out
}

struct RfcKey {
    p: Vec<u8>,
    q: Vec<u8>,
    g: Vec<u8>,
    x: Vec<u8>,
    y: Vec<u8>,
}

fn rfc_keys() -> Vec<(String, RfcKey)> {
    include_str!("vectors/rfc6979-dsa.txt")
        .lines()
        .filter(|l| l.starts_with("key:"))
        .map(|l| {
            let v: Vec<_> = l.split(':').collect();
            let k = RfcKey {
                p: unhex(v[2]),
                q: unhex(v[3]),
                g: unhex(v[4]),
                x: unhex(v[5]),
                y: unhex(v[6]),
            };
            (v[1].to_string(), k)
        })
        .collect()
}

#[test]
fn rfc6979_known_answers() {
    let f = Fixture::new();
    let s = f.user(f.token("dsa-kat"));
    let keys = rfc_keys();
    let mut seen = 0;
    for line in include_str!("vectors/rfc6979-dsa.txt")
        .lines()
        .filter(|l| l.starts_with("sig:"))
    {
        let v: Vec<_> = line.split(':').collect();
        let k = &keys.iter().find(|(l, _)| l == v[1]).unwrap().1;
        let (_, ty, hash) = HASHES.iter().find(|h| h.0 == v[2]).unwrap();
        let private = create(&s, key_tpl(CKO_PRIVATE_KEY, &k.p, &k.q, &k.g, &k.x)).unwrap();
        let public = create(&s, key_tpl(CKO_PUBLIC_KEY, &k.p, &k.q, &k.g, &k.y)).unwrap();
        let want = [unhex(v[4]), unhex(v[5])].concat();
        let msg = v[3].as_bytes();
        let got = sign(&s, *ty, private, msg).unwrap();
        assert_eq!(got, want, "{line}");
        assert_eq!(sign_parts(&s, *ty, private, msg), want, "{line}");
        // Raw CKM_DSA over the token's own digest gives the same signature.
        assert_eq!(
            sign(&s, CKM_DSA, private, &digest(&s, *hash, msg)).unwrap(),
            want
        );
        assert_eq!(verify(&s, *ty, public, msg, &want), CKR_OK);
        // A flipped bit of s, of r, or another message: rejected.
        for i in [want.len() - 1, 0] {
            let mut bad = want.clone();
            bad[i] ^= 0x01;
            assert_eq!(verify(&s, *ty, public, msg, &bad), CKR_SIGNATURE_INVALID);
        }
        assert_eq!(
            verify(&s, *ty, public, b"samplf", &want),
            CKR_SIGNATURE_INVALID
        );
        assert_eq!(
            verify(&s, *ty, public, msg, &want[1..]),
            CKR_SIGNATURE_LEN_RANGE
        );
        seen += 1;
    }
    assert_eq!(seen, 20);
}

#[test]
fn generation_at_every_size() {
    let f = Fixture::new();
    let s = f.user(f.token("dsa-gen"));
    for (bits, sub, qbits) in [
        (1024, None, 160),
        (2048, Some(224), 224),
        (2048, None, 256),
        (3072, None, 256),
    ] {
        let params = gen_params(&s, bits, sub).unwrap();
        assert_eq!(
            attr(&s, params, CKA_CLASS).unwrap(),
            ul_bytes(CKO_DOMAIN_PARAMETERS)
        );
        assert_eq!(attr(&s, params, CKA_KEY_TYPE).unwrap(), ul_bytes(CKK_DSA));
        assert_eq!(attr(&s, params, CKA_PRIME_BITS).unwrap(), ul_bytes(bits));
        assert_eq!(attr(&s, params, CKA_LOCAL).unwrap(), yes());
        let p = attr(&s, params, CKA_PRIME).unwrap();
        let q = attr(&s, params, CKA_SUBPRIME).unwrap();
        let g = attr(&s, params, CKA_BASE).unwrap();
        assert_eq!(p.len() * 8, bits as usize);
        assert_eq!(q.len() * 8, qbits);
        // The generated parameters import as a domain-parameters object.
        let mut t = domain(&p, &q, &g);
        t.push(ul(CKA_CLASS, CKO_DOMAIN_PARAMETERS));
        t.push(ul(CKA_KEY_TYPE, CKK_DSA));
        create(&s, t).unwrap();
        let (public, private) = gen_pair(&s, &p, &q, &g).unwrap();
        assert_eq!(attr(&s, private, CKA_PRIME).unwrap(), p);
        assert_eq!(attr(&s, private, CKA_VALUE), Err(CKR_ATTRIBUTE_SENSITIVE));
        let y = attr(&s, public, CKA_VALUE).unwrap();
        assert!(y.len() * 8 <= bits as usize);
        let msg = b"generated key message";
        for (_, ty, _) in HASHES {
            let sig = sign(&s, ty, private, msg).unwrap();
            assert_eq!(sig.len(), 2 * qbits / 8);
            assert_eq!(verify(&s, ty, public, msg, &sig), CKR_OK);
            let mut bad = sig.clone();
            bad[3] ^= 0x80;
            assert_eq!(verify(&s, ty, public, msg, &bad), CKR_SIGNATURE_INVALID);
        }
        // Deterministic: the same message signs the same way.
        assert_eq!(
            sign(&s, CKM_DSA_SHA256, private, msg).unwrap(),
            sign(&s, CKM_DSA_SHA256, private, msg).unwrap()
        );
    }
    assert_eq!(gen_params(&s, 1536, None), Err(CKR_KEY_SIZE_RANGE));
    assert_eq!(
        gen_params(&s, 1024, Some(256)),
        Err(CKR_TEMPLATE_INCONSISTENT)
    );
}

#[test]
fn wrong_key_types_are_refused() {
    let f = Fixture::new();
    let s = f.user(f.token("dsa-kt"));
    let (_, k) = rfc_keys().remove(0);
    let public = create(&s, key_tpl(CKO_PUBLIC_KEY, &k.p, &k.q, &k.g, &k.y)).unwrap();
    let private = create(&s, key_tpl(CKO_PRIVATE_KEY, &k.p, &k.q, &k.g, &k.x)).unwrap();
    let ec = s
        .generate_key_pair(
            &cryptoki::mechanism::Mechanism::EccKeyPairGen,
            &[cryptoki::object::Attribute::EcParams(vec![
                0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
            ])],
            &[cryptoki::object::Attribute::Sign(true)],
        )
        .unwrap();
    assert_eq!(
        sign(&s, CKM_DSA_SHA256, ec.1.handle(), b"m"),
        Err(CKR_KEY_TYPE_INCONSISTENT)
    );
    assert_eq!(
        verify(&s, CKM_DSA_SHA256, ec.0.handle(), b"m", &[0; 40]),
        CKR_KEY_TYPE_INCONSISTENT
    );
    // A DSA key does not do ECDSA, nor verify an ECDSA signature.
    assert_eq!(
        verify(&s, CKM_ECDSA, public, &[1; 32], &[1; 64]),
        CKR_KEY_TYPE_INCONSISTENT
    );
    assert_eq!(
        sign(&s, CKM_ECDSA, private, &[1; 32]),
        Err(CKR_KEY_TYPE_INCONSISTENT)
    );
}

#[test]
fn hostile_imports_are_refused_fast() {
    let f = Fixture::new();
    let s = f.user(f.token("dsa-bad"));
    let (_, k) = rfc_keys().remove(0);
    let start = Instant::now();
    let bad = |t: Vec<A>| create(&s, t).unwrap_err();
    // g = 1 (and g = 0, g = p).
    for g in [vec![1u8], vec![0], k.p.clone()] {
        assert_eq!(
            bad(key_tpl(CKO_PUBLIC_KEY, &k.p, &k.q, &g, &k.y)),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
    }
    // y out of range: 0, 1, p − 1, p, not in the subgroup.
    let mut p_minus_1 = k.p.clone();
    *p_minus_1.last_mut().unwrap() -= 1;
    let mut off = k.y.clone();
    *off.last_mut().unwrap() ^= 1;
    for y in [vec![0u8], vec![1], p_minus_1, k.p.clone(), off] {
        assert_eq!(
            bad(key_tpl(CKO_PUBLIC_KEY, &k.p, &k.q, &k.g, &y)),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
    }
    // x = 0 and x = q.
    for x in [vec![0u8], k.q.clone()] {
        assert_eq!(
            bad(key_tpl(CKO_PRIVATE_KEY, &k.p, &k.q, &k.g, &x)),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
    }
    // Oversized p (a 1 MB value and 4096 bits), q of a wrong size, p even.
    let mut huge = vec![0xffu8; 1 << 20];
    huge[0] = 0x80;
    let mut even = k.p.clone();
    *even.last_mut().unwrap() ^= 1;
    for (p, q) in [
        (huge, k.q.clone()),
        (vec![0xff; 512], k.q.clone()),
        (k.p.clone(), vec![0xff; 24]),
        (even, k.q.clone()),
    ] {
        assert_eq!(
            bad(key_tpl(CKO_PUBLIC_KEY, &p, &q, &k.g, &k.y)),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
    }
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    // The genuine key still imports.
    create(&s, key_tpl(CKO_PUBLIC_KEY, &k.p, &k.q, &k.g, &k.y)).unwrap();
}

#[test]
fn pkcs8_wrap_round_trip() {
    let f = Fixture::new();
    let s = f.user(f.token("dsa-wrap"));
    let (_, k) = rfc_keys().remove(1);
    let mut t = key_tpl(CKO_PRIVATE_KEY, &k.p, &k.q, &k.g, &k.x);
    t.push(flag(CKA_EXTRACTABLE, true));
    let private = create(&s, t).unwrap();
    let public = create(&s, key_tpl(CKO_PUBLIC_KEY, &k.p, &k.q, &k.g, &k.y)).unwrap();
    let aes = s
        .generate_key(
            &cryptoki::mechanism::Mechanism::AesKeyGen,
            &[
                cryptoki::object::Attribute::ValueLen(32.into()),
                cryptoki::object::Attribute::Wrap(true),
                cryptoki::object::Attribute::Unwrap(true),
                // Wrap-only (the token's wrap separation: a key that could
                // also decrypt what it wraps may not wrap sensitive keys).
                cryptoki::object::Attribute::Decrypt(false),
                cryptoki::object::Attribute::Encrypt(false),
            ],
        )
        .unwrap();
    let m = cryptoki::mechanism::Mechanism::AesKeyWrapPad;
    // SAFETY: `private` is the handle C_CreateObject just returned.
    let private_h = unsafe { cryptoki::object::ObjectHandle::new_from_raw(private) };
    let wrapped = s.wrap_key(&m, aes, private_h).unwrap();
    let back = s
        .unwrap_key(
            &m,
            aes,
            &wrapped,
            &[
                cryptoki::object::Attribute::Class(cryptoki::object::ObjectClass::PRIVATE_KEY),
                cryptoki::object::Attribute::KeyType(cryptoki::object::KeyType::DSA),
                cryptoki::object::Attribute::Sign(true),
            ],
        )
        .unwrap();
    assert_eq!(attr(&s, back.handle(), CKA_PRIME).unwrap(), k.p);
    let msg = b"sample";
    let sig = sign(&s, CKM_DSA_SHA256, back.handle(), msg).unwrap();
    assert_eq!(sig, sign(&s, CKM_DSA_SHA256, private, msg).unwrap());
    assert_eq!(verify(&s, CKM_DSA_SHA256, public, msg, &sig), CKR_OK);
}

#[test]
fn mechanism_info_in_bits() {
    let f = Fixture::new();
    let slot = f.token("dsa-info");
    for (ty, flag) in [
        (CKM_DSA_PARAMETER_GEN, CKF_GENERATE),
        (CKM_DSA_KEY_PAIR_GEN, CKF_GENERATE_KEY_PAIR),
        (CKM_DSA, CKF_SIGN | CKF_VERIFY),
        (CKM_DSA_SHA1, CKF_SIGN | CKF_VERIFY),
        (CKM_DSA_SHA224, CKF_SIGN | CKF_VERIFY),
        (CKM_DSA_SHA256, CKF_SIGN | CKF_VERIFY),
        (CKM_DSA_SHA384, CKF_SIGN | CKF_VERIFY),
        (CKM_DSA_SHA512, CKF_SIGN | CKF_VERIFY),
    ] {
        let mut info = CK_MECHANISM_INFO::default();
        // SAFETY: a live out-structure.
        let rv =
            unsafe { raw().C_GetMechanismInfo.unwrap()(slot.id() as CK_SLOT_ID, ty, &mut info) };
        assert_eq!(rv, CKR_OK);
        assert_eq!((info.ulMinKeySize, info.ulMaxKeySize), (1024, 3072));
        assert_eq!(info.flags & flag, flag, "{ty:#x}");
    }
}

#[test]
fn token_private_key_is_sealed_and_survives_restart() {
    let mut f = Fixture::new();
    let slot = f.token("dsa-persist");
    let (_, k) = rfc_keys().remove(0);
    let want = sign_once_on_token(&f, slot, Some(&k));
    f.stop();
    // x is sealed: not in any of the token's files.
    let mut scanned = 0;
    for e in std::fs::read_dir(f.dir.path().join("tokens")).unwrap() {
        let path = e.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(!bytes.windows(k.x.len()).any(|w| w == &k.x[..]), "{path:?}");
            scanned += bytes.len();
        }
    }
    assert!(scanned > 0);
    f.start();
    assert_eq!(sign_once_on_token(&f, slot, None), want);
}

/// Creates (when `key` is given) or finds the token's DSA private key and
/// signs "sample" with CKM_DSA_SHA1.
fn sign_once_on_token(f: &Fixture, slot: cryptoki::slot::Slot, key: Option<&RfcKey>) -> Vec<u8> {
    use cryptoki::object::{Attribute, KeyType, ObjectClass};
    let s = f.user(slot);
    if let Some(k) = key {
        let mut t = key_tpl(CKO_PRIVATE_KEY, &k.p, &k.q, &k.g, &k.x);
        t.push(flag(CKA_TOKEN, true));
        t.push(flag(CKA_PRIVATE, true));
        create(&s, t).unwrap();
    }
    let found = s
        .find_objects(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::DSA),
        ])
        .unwrap();
    assert_eq!(found.len(), 1);
    let h = found[0].handle();
    assert_eq!(attr(&s, h, CKA_VALUE), Err(CKR_ATTRIBUTE_SENSITIVE));
    sign(&s, CKM_DSA_SHA1, h, b"sample").unwrap()
}
