//! Interface overhead: every operation of the `quick` profile called on its
//! crypto crate directly and through the module's exported function list
//! (Init + single-part call into a preallocated buffer, as hsm-bench times
//! it), in one process, so the ratio is not blurred by machine noise.
//!
//! `cargo bench -p dalek-pkcs11 --bench overhead`

use criterion::{Criterion, criterion_group, criterion_main};
use cryptoki_sys::*;
use dalek_pkcs11::ffi::C_GetFunctionList;
use std::hint::black_box;
use std::ptr::null_mut;
use std::time::Duration;

#[path = "overhead/ml_dsa.rs"]
mod ml_dsa;
#[path = "overhead/ml_kem.rs"]
mod ml_kem;
#[path = "overhead/new_keys.rs"]
mod new_keys;

fn call(rv: CK_RV, what: &str) {
    assert_eq!(rv, CKR_OK, "{what}");
}

/// A logged-in session on a memory token.
struct Token {
    l: &'static CK_FUNCTION_LIST,
    s: CK_SESSION_HANDLE,
    _dir: tempfile::TempDir,
}

/// A raw attribute template built from owned values.
struct Template(Vec<(CK_ATTRIBUTE_TYPE, Vec<u8>)>);

impl Template {
    fn new() -> Self {
        Template(Vec::new())
    }
    fn ulong(mut self, ty: CK_ATTRIBUTE_TYPE, v: CK_ULONG) -> Self {
        self.0.push((ty, v.to_ne_bytes().to_vec()));
        self
    }
    fn bytes(mut self, ty: CK_ATTRIBUTE_TYPE, v: &[u8]) -> Self {
        self.0.push((ty, v.to_vec()));
        self
    }
    fn raw(&mut self) -> Vec<CK_ATTRIBUTE> {
        self.0
            .iter_mut()
            .map(|(t, v)| CK_ATTRIBUTE {
                type_: *t,
                pValue: v.as_mut_ptr().cast(),
                ulValueLen: v.len() as CK_ULONG,
            })
            .collect()
    }
}

impl Token {
    fn new() -> Token {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: single-threaded set-up before any module call.
        unsafe {
            std::env::set_var("DALEK_PKCS11_STORAGE", "sqlite");
            std::env::set_var("DALEK_PKCS11_TOKEN_DIR", dir.path());
        }
        let mut list: *mut CK_FUNCTION_LIST = null_mut();
        // SAFETY: the module's own entry points with valid pointers throughout.
        unsafe {
            call(C_GetFunctionList(&mut list), "C_GetFunctionList");
            let l = &*list;
            call(l.C_Initialize.unwrap()(null_mut()), "C_Initialize");
            let mut so = *b"87654321";
            let mut user = *b"1234";
            let mut label = [b' '; 32];
            call(
                l.C_InitToken.unwrap()(0, so.as_mut_ptr(), 8, label.as_mut_ptr()),
                "C_InitToken",
            );
            let mut s = 0;
            call(
                l.C_OpenSession.unwrap()(
                    0,
                    CKF_SERIAL_SESSION | CKF_RW_SESSION,
                    null_mut(),
                    None,
                    &mut s,
                ),
                "C_OpenSession",
            );
            call(
                l.C_Login.unwrap()(s, CKU_SO, so.as_mut_ptr(), 8),
                "C_Login SO",
            );
            call(l.C_InitPIN.unwrap()(s, user.as_mut_ptr(), 4), "C_InitPIN");
            call(l.C_Logout.unwrap()(s), "C_Logout");
            call(
                l.C_Login.unwrap()(s, CKU_USER, user.as_mut_ptr(), 4),
                "C_Login",
            );
            Token { l, s, _dir: dir }
        }
    }

    fn create(&self, mut t: Template) -> CK_OBJECT_HANDLE {
        let mut attrs = t.raw();
        let mut h = 0;
        // SAFETY: the template points at live buffers owned by `t`.
        call(
            unsafe {
                self.l.C_CreateObject.unwrap()(
                    self.s,
                    attrs.as_mut_ptr(),
                    attrs.len() as CK_ULONG,
                    &mut h,
                )
            },
            "C_CreateObject",
        );
        h
    }

    /// `C_SignInit` + `C_Sign` into `out`.
    #[inline]
    fn sign(
        &self,
        mech: &mut CK_MECHANISM,
        key: CK_OBJECT_HANDLE,
        data: &[u8],
        out: &mut [u8],
    ) -> usize {
        let mut len = out.len() as CK_ULONG;
        // SAFETY: live buffers of the stated lengths.
        unsafe {
            call(self.l.C_SignInit.unwrap()(self.s, mech, key), "C_SignInit");
            call(
                self.l.C_Sign.unwrap()(
                    self.s,
                    data.as_ptr() as *mut u8,
                    data.len() as CK_ULONG,
                    out.as_mut_ptr(),
                    &mut len,
                ),
                "C_Sign",
            );
        }
        len as usize
    }

    /// `C_VerifyInit` + `C_Verify`.
    #[inline]
    fn verify(&self, mech: &mut CK_MECHANISM, key: CK_OBJECT_HANDLE, data: &[u8], sig: &[u8]) {
        // SAFETY: live buffers of the stated lengths.
        unsafe {
            call(
                self.l.C_VerifyInit.unwrap()(self.s, mech, key),
                "C_VerifyInit",
            );
            call(
                self.l.C_Verify.unwrap()(
                    self.s,
                    data.as_ptr() as *mut u8,
                    data.len() as CK_ULONG,
                    sig.as_ptr() as *mut u8,
                    sig.len() as CK_ULONG,
                ),
                "C_Verify",
            );
        }
    }

    /// `C_EncryptInit` + `C_Encrypt` (or the decrypt pair).
    #[inline]
    fn crypt(
        &self,
        encrypt: bool,
        mech: &mut CK_MECHANISM,
        key: CK_OBJECT_HANDLE,
        data: &[u8],
        out: &mut [u8],
    ) -> usize {
        let mut len = out.len() as CK_ULONG;
        // SAFETY: live buffers of the stated lengths.
        unsafe {
            let (init, run) = if encrypt {
                (self.l.C_EncryptInit.unwrap(), self.l.C_Encrypt.unwrap())
            } else {
                (self.l.C_DecryptInit.unwrap(), self.l.C_Decrypt.unwrap())
            };
            call(init(self.s, mech, key), "C_*Init");
            call(
                run(
                    self.s,
                    data.as_ptr() as *mut u8,
                    data.len() as CK_ULONG,
                    out.as_mut_ptr(),
                    &mut len,
                ),
                "C_Encrypt/C_Decrypt",
            );
        }
        len as usize
    }

    /// `C_DigestInit` + `C_Digest`.
    #[inline]
    fn digest(&self, mech: &mut CK_MECHANISM, data: &[u8], out: &mut [u8]) {
        let mut len = out.len() as CK_ULONG;
        // SAFETY: live buffers of the stated lengths.
        unsafe {
            call(self.l.C_DigestInit.unwrap()(self.s, mech), "C_DigestInit");
            call(
                self.l.C_Digest.unwrap()(
                    self.s,
                    data.as_ptr() as *mut u8,
                    data.len() as CK_ULONG,
                    out.as_mut_ptr(),
                    &mut len,
                ),
                "C_Digest",
            );
        }
    }
}

fn plain(m: CK_MECHANISM_TYPE) -> CK_MECHANISM {
    CK_MECHANISM {
        mechanism: m,
        pParameter: null_mut(),
        ulParameterLen: 0,
    }
}

/// One criterion group timing the same operation done by the crate
/// directly and through the exported function list (`samples`: fewer
/// samples for slow operations).
fn compare<A, B>(
    c: &mut Criterion,
    name: &str,
    samples: Option<usize>,
    mut direct: impl FnMut() -> A,
    mut through: impl FnMut() -> B,
) {
    let mut g = c.benchmark_group(name);
    if let Some(n) = samples {
        g.sample_size(n);
    }
    g.bench_function(DIRECT, |b| b.iter(&mut direct));
    g.bench_function(THROUGH, |b| b.iter(&mut through));
    g.finish();
}

/// Like [`compare`] for operations that make a key: the crate, then the
/// module making a session object, then a token object (each closure times
/// `iters` calls and returns the time they took).
fn compare_timed(
    c: &mut Criterion,
    name: &str,
    mut direct: impl FnMut(u64) -> Duration,
    mut session: impl FnMut(u64) -> Duration,
    mut token: impl FnMut(u64) -> Duration,
) {
    let mut g = c.benchmark_group(name);
    g.sample_size(30);
    g.bench_function(DIRECT, |b| b.iter_custom(&mut direct));
    g.bench_function(THROUGH, |b| b.iter_custom(&mut session));
    g.bench_function(TOKEN_OBJECT, |b| b.iter_custom(&mut token));
    g.finish();
}

const THROUGH: &str = "through the C API";
const TOKEN_OBJECT: &str = "through the C API, token object";
const DIRECT: &str = "crate directly";

fn ed25519(c: &mut Criterion, t: &Token) {
    use ed25519_dalek::{Signer, SigningKey};
    let seed = [42u8; 32];
    let key = t.create(
        Template::new()
            .ulong(CKA_CLASS, CKO_PRIVATE_KEY)
            .ulong(CKA_KEY_TYPE, CKK_EC_EDWARDS)
            .bytes(CKA_EC_PARAMS, &[0x06, 0x03, 0x2b, 0x65, 0x70])
            .bytes(CKA_VALUE, &seed),
    );
    let direct = SigningKey::from_bytes(&seed);
    let point = direct.verifying_key().to_bytes();
    let public = t.create(
        Template::new()
            .ulong(CKA_CLASS, CKO_PUBLIC_KEY)
            .ulong(CKA_KEY_TYPE, CKK_EC_EDWARDS)
            .bytes(CKA_EC_PARAMS, &[0x06, 0x03, 0x2b, 0x65, 0x70])
            .bytes(CKA_EC_POINT, &point),
    );
    let data = [0x5au8; 32];
    let mut sig = [0u8; 64];
    t.sign(&mut plain(CKM_EDDSA), key, &data, &mut sig);
    assert_eq!(
        sig,
        direct.sign(&data).to_bytes(),
        "same signature both ways"
    );
    compare(
        c,
        "ed25519-sign",
        None,
        || black_box(direct.sign(black_box(&data))),
        || t.sign(&mut plain(CKM_EDDSA), key, black_box(&data), &mut sig),
    );
    let vk = direct.verifying_key();
    let signature = ed25519_dalek::Signature::from_bytes(&sig);
    compare(
        c,
        "ed25519-verify",
        None,
        || vk.verify_strict(black_box(&data), &signature).unwrap(),
        || t.verify(&mut plain(CKM_EDDSA), public, black_box(&data), &sig),
    );
}

fn p256(c: &mut Criterion, t: &Token) {
    use p256::ecdsa::{Signature, SigningKey};
    use signature::hazmat::{PrehashSigner, PrehashVerifier};
    let scalar = [7u8; 32];
    let oid = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    let direct = SigningKey::from_slice(&scalar).unwrap();
    let key = t.create(
        Template::new()
            .ulong(CKA_CLASS, CKO_PRIVATE_KEY)
            .ulong(CKA_KEY_TYPE, CKK_EC)
            .bytes(CKA_EC_PARAMS, &oid)
            .bytes(CKA_VALUE, &scalar),
    );
    let point = direct.verifying_key().to_sec1_bytes();
    let public = t.create(
        Template::new()
            .ulong(CKA_CLASS, CKO_PUBLIC_KEY)
            .ulong(CKA_KEY_TYPE, CKK_EC)
            .bytes(CKA_EC_PARAMS, &oid)
            .bytes(CKA_EC_POINT, &point),
    );
    let digest = [0x11u8; 32];
    let mut sig = [0u8; 64];
    compare(
        c,
        "p256-sign",
        None,
        || -> Signature { direct.sign_prehash(black_box(&digest)).unwrap() },
        || t.sign(&mut plain(CKM_ECDSA), key, black_box(&digest), &mut sig),
    );
    let s: Signature = direct.sign_prehash(&digest).unwrap();
    let vk = *direct.verifying_key();
    compare(
        c,
        "p256-verify",
        None,
        || vk.verify_prehash(black_box(&digest), &s).unwrap(),
        || t.verify(&mut plain(CKM_ECDSA), public, black_box(&digest), &sig),
    );
}

/// The OS generator behind rsa 0.9's rand_core 0.6 traits.
struct OsRng06;

impl rsa::rand_core::RngCore for OsRng06 {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_ne_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_ne_bytes(b)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        getrandom::fill(dest).unwrap()
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rsa::rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rsa::rand_core::CryptoRng for OsRng06 {}

fn rsa2048(c: &mut Criterion, t: &Token) {
    use rsa::traits::{PrivateKeyParts, PublicKeyParts};
    use rsa::{Pkcs1v15Sign, RsaPrivateKey};
    let mut direct = RsaPrivateKey::new(&mut OsRng06, 2048).unwrap();
    direct.precompute().unwrap();
    let be = |n: &rsa::BigUint| n.to_bytes_be();
    let primes = direct.primes();
    let key = t.create(
        Template::new()
            .ulong(CKA_CLASS, CKO_PRIVATE_KEY)
            .ulong(CKA_KEY_TYPE, CKK_RSA)
            .bytes(CKA_MODULUS, &be(direct.n()))
            .bytes(CKA_PUBLIC_EXPONENT, &be(direct.e()))
            .bytes(CKA_PRIVATE_EXPONENT, &be(direct.d()))
            .bytes(CKA_PRIME_1, &be(&primes[0]))
            .bytes(CKA_PRIME_2, &be(&primes[1])),
    );
    let public = t.create(
        Template::new()
            .ulong(CKA_CLASS, CKO_PUBLIC_KEY)
            .ulong(CKA_KEY_TYPE, CKK_RSA)
            .bytes(CKA_MODULUS, &be(direct.n()))
            .bytes(CKA_PUBLIC_EXPONENT, &be(direct.e())),
    );
    let msg = [0x22u8; 32];
    let hash = {
        use rsa::sha2::Digest;
        rsa::sha2::Sha256::digest(msg)
    };
    let mut sig = [0u8; 256];
    compare(
        c,
        "rsa2048-sign",
        Some(20),
        || {
            direct
                .sign_with_rng(
                    &mut OsRng06,
                    Pkcs1v15Sign::new::<rsa::sha2::Sha256>(),
                    black_box(&hash),
                )
                .unwrap()
        },
        || {
            t.sign(
                &mut plain(CKM_SHA256_RSA_PKCS),
                key,
                black_box(&msg),
                &mut sig,
            )
        },
    );
    let pk = direct.to_public_key();
    compare(
        c,
        "rsa2048-verify",
        None,
        || {
            pk.verify(
                Pkcs1v15Sign::new::<rsa::sha2::Sha256>(),
                black_box(&hash),
                &sig,
            )
            .unwrap()
        },
        || {
            t.verify(
                &mut plain(CKM_SHA256_RSA_PKCS),
                public,
                black_box(&msg),
                &sig,
            )
        },
    );
}

fn symmetric(c: &mut Criterion, t: &Token) {
    use aes_gcm::aead::{AeadInOut, KeyInit};
    let aes_key = [9u8; 32];
    let key = t.create(
        Template::new()
            .ulong(CKA_CLASS, CKO_SECRET_KEY)
            .ulong(CKA_KEY_TYPE, CKK_AES)
            .bytes(CKA_VALUE, &aes_key),
    );
    let cipher = aes_gcm::Aes256Gcm::new(&aes_key.into());
    let data = vec![0x33u8; 1024];
    let iv = [1u8; 12];
    let mut gcm = CK_GCM_PARAMS {
        pIv: iv.as_ptr() as *mut u8,
        ulIvLen: 12,
        ulIvBits: 96,
        pAAD: null_mut(),
        ulAADLen: 0,
        ulTagBits: 128,
    };
    let mut mech = CK_MECHANISM {
        mechanism: CKM_AES_GCM,
        pParameter: (&mut gcm as *mut CK_GCM_PARAMS).cast(),
        ulParameterLen: std::mem::size_of::<CK_GCM_PARAMS>() as CK_ULONG,
    };
    let mut out = vec![0u8; 1024 + 16];
    let mut buf = vec![0u8; 1024];
    compare(
        c,
        "aes256-gcm-encrypt-1K",
        None,
        || {
            buf.copy_from_slice(&data);
            black_box(
                cipher
                    .encrypt_inout_detached(&iv.into(), &[], buf.as_mut_slice().into())
                    .unwrap(),
            )
        },
        || t.crypt(true, &mut mech, key, black_box(&data), &mut out),
    );
    let ct = out.clone();
    let tag = aes_gcm::Tag::try_from(&ct[1024..]).unwrap();
    let mut plain_out = vec![0u8; 1024];
    compare(
        c,
        "aes256-gcm-decrypt-1K",
        None,
        || {
            buf.copy_from_slice(&ct[..1024]);
            cipher
                .decrypt_inout_detached(&iv.into(), &[], buf.as_mut_slice().into(), &tag)
                .unwrap()
        },
        || t.crypt(false, &mut mech, key, black_box(&ct), &mut plain_out),
    );

    let mut digest_out = [0u8; 32];
    compare(
        c,
        "sha256-1K",
        None,
        || <sha2::Sha256 as sha2::Digest>::digest(black_box(&data)),
        || t.digest(&mut plain(CKM_SHA256), black_box(&data), &mut digest_out),
    );

    let secret = [5u8; 32];
    let hkey = t.create(
        Template::new()
            .ulong(CKA_CLASS, CKO_SECRET_KEY)
            .ulong(CKA_KEY_TYPE, CKK_GENERIC_SECRET)
            .bytes(CKA_VALUE, &secret),
    );
    let msg = [0x44u8; 32];
    let mut mac = [0u8; 32];
    compare(
        c,
        "hmac-sha256-32B",
        None,
        || {
            use hmac::Mac;
            let mut m =
                <hmac::Hmac<sha2::Sha256> as hmac::KeyInit>::new_from_slice(&secret).unwrap();
            m.update(black_box(&msg));
            m.finalize().into_bytes()
        },
        || t.sign(&mut plain(CKM_SHA256_HMAC), hkey, black_box(&msg), &mut mac),
    );

    let mut cmac_out = [0u8; 16];
    compare(
        c,
        "aes256-cmac-32B",
        None,
        || {
            use cmac::Mac;
            let mut m =
                <cmac::Cmac<aes::Aes256> as cmac::KeyInit>::new_from_slice(&aes_key).unwrap();
            m.update(black_box(&msg));
            m.finalize().into_bytes()
        },
        || {
            t.sign(
                &mut plain(CKM_AES_CMAC),
                key,
                black_box(&msg),
                &mut cmac_out,
            )
        },
    );

    let (mut random, mut random_api) = ([0u8; 32], [0u8; 32]);
    compare(
        c,
        "random32",
        None,
        || getrandom::fill(black_box(&mut random)).unwrap(),
        || {
            call(
                // SAFETY: a live 32-byte buffer.
                unsafe { t.l.C_GenerateRandom.unwrap()(t.s, random_api.as_mut_ptr(), 32) },
                "C_GenerateRandom",
            )
        },
    );
}

fn all(c: &mut Criterion) {
    let t = Token::new();
    ed25519(c, &t);
    p256(c, &t);
    rsa2048(c, &t);
    symmetric(c, &t);
    new_keys::bench(c, &t);
    ml_dsa::bench(c, &t);
    ml_kem::bench(c, &t);
}

criterion_group!(benches, all);
criterion_main!(benches);
