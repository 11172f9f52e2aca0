//! The operations that make a new key: `CKM_ECDH1_DERIVE` (P-256, P-384,
//! P-521, X25519) and `CKM_EC_KEY_PAIR_GEN` / `CKM_EC_MONTGOMERY_KEY_PAIR_GEN`,
//! each timed on the crate the build computes it with (aws-lc-rs in the
//! default build, the RustCrypto / dalek crates in the pure-Rust one) and
//! through `C_DeriveKey` / `C_GenerateKeyPair` making a session object, then
//! the same call making a token object (`CKA_TOKEN` true: the sealing and
//! the SQLite write on top). As hsm-bench does, the new objects are
//! destroyed after the timer stops.

use super::{Template, Token, call, compare_timed};
use criterion::Criterion;
use cryptoki_sys::*;
use std::hint::black_box;
use std::ptr::null_mut;
use std::time::{Duration, Instant};

/// The curves measured: name, `CKA_EC_PARAMS`, key type, field length.
const CURVES: [(&str, &[u8], CK_KEY_TYPE, usize); 4] = [
    (
        "p256",
        &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07],
        CKK_EC,
        32,
    ),
    (
        "p384",
        &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22],
        CKK_EC,
        48,
    ),
    (
        "p521",
        &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23],
        CKK_EC,
        66,
    ),
    (
        "x25519",
        &[0x06, 0x03, 0x2b, 0x65, 0x6e],
        CKK_EC_MONTGOMERY,
        32,
    ),
];

impl Token {
    /// `C_GenerateKeyPair` of a derive key pair on `params`; returns the
    /// handles and the raw public point (the `CKA_EC_POINT` DER unwrapped).
    fn ec_pair(
        &self,
        key_type: CK_KEY_TYPE,
        params: &[u8],
        token: bool,
    ) -> (CK_OBJECT_HANDLE, CK_OBJECT_HANDLE) {
        let mut mech = super::plain(if key_type == CKK_EC {
            CKM_EC_KEY_PAIR_GEN
        } else {
            CKM_EC_MONTGOMERY_KEY_PAIR_GEN
        });
        let flag = [CK_TRUE];
        let mut public = Template::new()
            .bytes(CKA_EC_PARAMS, params)
            .bytes(CKA_TOKEN, if token { &flag } else { &[CK_FALSE] });
        let mut private = Template::new()
            .bytes(CKA_DERIVE, &flag)
            .bytes(CKA_SENSITIVE, &flag)
            .bytes(CKA_TOKEN, if token { &flag } else { &[CK_FALSE] });
        let (mut p, mut s) = (public.raw(), private.raw());
        let (mut hp, mut hs) = (0, 0);
        // SAFETY: both templates point at live buffers owned above.
        call(
            unsafe {
                self.l.C_GenerateKeyPair.unwrap()(
                    self.s,
                    &mut mech,
                    p.as_mut_ptr(),
                    p.len() as CK_ULONG,
                    s.as_mut_ptr(),
                    s.len() as CK_ULONG,
                    &mut hp,
                    &mut hs,
                )
            },
            "C_GenerateKeyPair",
        );
        (hp, hs)
    }

    /// The raw public point of the public key `h`.
    fn point(&self, h: CK_OBJECT_HANDLE) -> Vec<u8> {
        let mut buf = vec![0u8; 160];
        let mut attr = [CK_ATTRIBUTE {
            type_: CKA_EC_POINT,
            pValue: buf.as_mut_ptr().cast(),
            ulValueLen: buf.len() as CK_ULONG,
        }];
        // SAFETY: one attribute pointing at the live 160-byte buffer.
        call(
            unsafe { self.l.C_GetAttributeValue.unwrap()(self.s, h, attr.as_mut_ptr(), 1) },
            "C_GetAttributeValue",
        );
        buf.truncate(attr[0].ulValueLen as usize);
        // DER OCTET STRING: 04 len (or 04 81 len) then the point.
        let skip = if buf[1] == 0x81 { 3 } else { 2 };
        buf.split_off(skip)
    }

    /// `C_DeriveKey` (`CKM_ECDH1_DERIVE`, `CKD_NULL`) of a `len`-byte
    /// generic secret from `base` and the raw `peer` point.
    fn ecdh(
        &self,
        base: CK_OBJECT_HANDLE,
        peer: &[u8],
        len: usize,
        token: bool,
    ) -> CK_OBJECT_HANDLE {
        let mut params = CK_ECDH1_DERIVE_PARAMS {
            kdf: CKD_NULL,
            ulSharedDataLen: 0,
            pSharedData: null_mut(),
            ulPublicDataLen: peer.len() as CK_ULONG,
            pPublicData: peer.as_ptr() as *mut u8,
        };
        let mut mech = CK_MECHANISM {
            mechanism: CKM_ECDH1_DERIVE,
            pParameter: (&mut params as *mut CK_ECDH1_DERIVE_PARAMS).cast(),
            ulParameterLen: size_of::<CK_ECDH1_DERIVE_PARAMS>() as CK_ULONG,
        };
        let mut t = Template::new()
            .ulong(CKA_CLASS, CKO_SECRET_KEY)
            .ulong(CKA_KEY_TYPE, CKK_GENERIC_SECRET)
            .ulong(CKA_VALUE_LEN, len as CK_ULONG)
            .bytes(CKA_TOKEN, &[if token { CK_TRUE } else { CK_FALSE }]);
        let mut attrs = t.raw();
        let mut h = 0;
        // SAFETY: the parameter and template point at live buffers.
        call(
            unsafe {
                self.l.C_DeriveKey.unwrap()(
                    self.s,
                    &mut mech,
                    base,
                    attrs.as_mut_ptr(),
                    attrs.len() as CK_ULONG,
                    &mut h,
                )
            },
            "C_DeriveKey",
        );
        h
    }

    pub(super) fn destroy(&self, h: CK_OBJECT_HANDLE) {
        // SAFETY: a plain handle.
        call(
            unsafe { self.l.C_DestroyObject.unwrap()(self.s, h) },
            "C_DestroyObject",
        );
    }
}

/// Times `make` only (the objects it returns are destroyed off the clock).
pub(super) fn timed<const N: usize>(
    t: &Token,
    iters: u64,
    mut make: impl FnMut() -> [CK_OBJECT_HANDLE; N],
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        let made = black_box(make());
        total += start.elapsed();
        for h in made {
            t.destroy(h);
        }
    }
    total
}

/// The crate computations the module makes (aws-lc-rs in the default build).
#[cfg(feature = "aws-lc")]
mod direct {
    use aws_lc_rs::agreement::{self, ECDH_P256, ECDH_P384, ECDH_P521, PrivateKey, X25519};

    fn alg(curve: &str) -> &'static agreement::Algorithm {
        match curve {
            "p256" => &ECDH_P256,
            "p384" => &ECDH_P384,
            "p521" => &ECDH_P521,
            _ => &X25519,
        }
    }

    /// A key of `curve` ready to agree, and its public point.
    pub fn key(curve: &str) -> (PrivateKey, Vec<u8>) {
        let k = PrivateKey::generate(alg(curve)).unwrap();
        let p = k.compute_public_key().unwrap().as_ref().to_vec();
        (k, p)
    }

    /// The shared value of `k` and `peer`.
    pub fn agree(k: &PrivateKey, curve: &str, peer: &[u8]) -> Vec<u8> {
        agreement::agree(
            k,
            agreement::UnparsedPublicKey::new(alg(curve), peer),
            (),
            |z| Ok(z.to_vec()),
        )
        .unwrap()
    }

    /// A new key pair's public point.
    pub fn generate(curve: &str) -> Vec<u8> {
        key(curve).1
    }
}

/// The crate computations the module makes (the pure-Rust build).
#[cfg(not(feature = "aws-lc"))]
mod direct {
    use p256::elliptic_curve::sec1::ToSec1Point;

    /// A key of `curve`, as its scalar bytes, and its public point.
    pub fn key(curve: &str) -> (Vec<u8>, Vec<u8>) {
        let k = x25519_or(curve);
        let p = generate_from(curve, &k);
        (k, p)
    }

    fn x25519_or(curve: &str) -> Vec<u8> {
        let len = match curve {
            "p384" => 48,
            "p521" => 66,
            _ => 32,
        };
        let mut v = vec![0u8; len];
        getrandom::fill(&mut v).unwrap();
        v[0] &= if curve == "p521" { 1 } else { 0x7f };
        v
    }

    fn generate_from(curve: &str, k: &[u8]) -> Vec<u8> {
        macro_rules! point {
            ($c:ident) => {
                $c::SecretKey::from_slice(k)
                    .unwrap()
                    .public_key()
                    .as_affine()
                    .to_sec1_point(false)
                    .as_bytes()
                    .to_vec()
            };
        }
        match curve {
            "p256" => point!(p256),
            "p384" => point!(p384),
            "p521" => point!(p521),
            _ => {
                let s = x25519_dalek::StaticSecret::from(<[u8; 32]>::try_from(k).unwrap());
                x25519_dalek::PublicKey::from(&s).to_bytes().to_vec()
            }
        }
    }

    /// The shared value of `k` and `peer`.
    pub fn agree(k: &[u8], curve: &str, peer: &[u8]) -> Vec<u8> {
        macro_rules! dh {
            ($c:ident) => {
                $c::ecdh::diffie_hellman(
                    $c::SecretKey::from_slice(k).unwrap().to_nonzero_scalar(),
                    $c::PublicKey::from_sec1_bytes(peer).unwrap().as_affine(),
                )
                .raw_secret_bytes()
                .to_vec()
            };
        }
        match curve {
            "p256" => dh!(p256),
            "p384" => dh!(p384),
            "p521" => dh!(p521),
            _ => {
                let s = x25519_dalek::StaticSecret::from(<[u8; 32]>::try_from(k).unwrap());
                let u = <[u8; 32]>::try_from(peer).unwrap();
                s.diffie_hellman(&x25519_dalek::PublicKey::from(u))
                    .as_bytes()
                    .to_vec()
            }
        }
    }

    /// A new key pair's public point.
    pub fn generate(curve: &str) -> Vec<u8> {
        generate_from(curve, &x25519_or(curve))
    }
}

/// Derive and key generation on every curve: the crate, a session object,
/// a token object.
pub fn bench(c: &mut Criterion, t: &Token) {
    for (name, params, key_type, field_len) in CURVES {
        let (_, ours) = t.ec_pair(key_type, params, false);
        let (peer_public, _) = t.ec_pair(key_type, params, false);
        let peer = t.point(peer_public);
        let (direct_key, _) = direct::key(name);
        assert_eq!(direct::agree(&direct_key, name, &peer).len(), field_len);
        compare_timed(
            c,
            &format!("{name}-ecdh-derive"),
            |iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(direct::agree(&direct_key, name, black_box(&peer)));
                }
                start.elapsed()
            },
            |iters| {
                timed(t, iters, || {
                    [t.ecdh(ours, black_box(&peer), field_len, false)]
                })
            },
            |iters| {
                timed(t, iters, || {
                    [t.ecdh(ours, black_box(&peer), field_len, true)]
                })
            },
        );
        compare_timed(
            c,
            &format!("{name}-keygen"),
            |iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(direct::generate(name));
                }
                start.elapsed()
            },
            |iters| {
                timed(t, iters, || {
                    let (a, b) = t.ec_pair(key_type, params, false);
                    [a, b]
                })
            },
            |iters| {
                timed(t, iters, || {
                    let (a, b) = t.ec_pair(key_type, params, true);
                    [a, b]
                })
            },
        );
    }
}
