//! What every part of the RSA family shares: the system RNG in the
//! interface the rsa crate wants, the hash choice of the PKCS #1 v1.5, PSS
//! and OAEP mechanisms, big-integer helpers, the blinded raw private-key
//! operation ([`raw_private`]) and the key-type checks.

use crate::error::{Error, Result, err};
use crate::mechanisms::material::KeyMaterial;
use ::rsa::rand_core::{CryptoRng, RngCore};
use ::rsa::traits::{PrivateKeyParts, PublicKeyParts};
use ::rsa::{BigUint, Pkcs1v15Sign, RsaPrivateKey, RsaPublicKey};
use cryptoki_sys::*;
use sha2_010::digest::DynDigest;
use zeroize::Zeroizing;

/// The operating system's CSPRNG in the `rand_core` 0.6 interface the rsa
/// crate wants (blinding factors, padding, salts, key generation).
pub(super) struct SysRng;

impl RngCore for SysRng {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }

    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        // The trait cannot report failure. getrandom(2) does not fail once
        // the kernel pool is initialised; if it ever does, the panic is
        // caught at the FFI boundary (CKR_GENERAL_ERROR) rather than
        // continuing with predictable randomness.
        if self.try_fill_bytes(dest).is_err() {
            panic!("getrandom failed");
        }
    }

    fn try_fill_bytes(
        &mut self,
        dest: &mut [u8],
    ) -> std::result::Result<(), ::rsa::rand_core::Error> {
        crate::mechanisms::random::os_fill(dest)
            .map_err(|_| ::rsa::rand_core::Error::new(std::io::Error::other("getrandom failed")))
    }
}

impl CryptoRng for SysRng {}

/// The hash functions usable in the RSA mechanisms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hash {
    /// Only for `CKM_MD5_RSA_PKCS` (legacy): never a PSS or OAEP hash, as
    /// [`Hash::from_mech`] and [`Hash::from_mgf`] do not return it.
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    Sha3_224,
    Sha3_256,
    Sha3_384,
    Sha3_512,
}

/// The DigestInfo prefix (RFC 8017 §9.2 note 1) of a hash with OID
/// 2.16.840.1.101.3.4.2.`arc` (NIST hash algorithms: SHA3-224 to SHA3-512
/// are arcs 7 to 10) and `len`-byte output: SEQUENCE { SEQUENCE { OID,
/// NULL }, OCTET STRING }.
fn nist_digest_info(arc: u8, len: u8) -> Box<[u8]> {
    Box::new([
        0x30,
        17 + len,
        0x30,
        0x0d,
        0x06,
        0x09,
        0x60,
        0x86,
        0x48,
        0x01,
        0x65,
        0x03,
        0x04,
        0x02,
        arc,
        0x05,
        0x00,
        0x04,
        len,
    ])
}

impl Hash {
    /// From a digest mechanism (`hashAlg` of the OAEP and PSS parameters).
    pub(super) fn from_mech(m: CK_MECHANISM_TYPE) -> Option<Hash> {
        Some(match m {
            CKM_SHA_1 => Hash::Sha1,
            CKM_SHA224 => Hash::Sha224,
            CKM_SHA256 => Hash::Sha256,
            CKM_SHA384 => Hash::Sha384,
            CKM_SHA512 => Hash::Sha512,
            CKM_SHA3_224 => Hash::Sha3_224,
            CKM_SHA3_256 => Hash::Sha3_256,
            CKM_SHA3_384 => Hash::Sha3_384,
            CKM_SHA3_512 => Hash::Sha3_512,
            _ => return None,
        })
    }

    /// From a mask generation function (`CKG_MGF1_*`).
    pub(super) fn from_mgf(g: CK_RSA_PKCS_MGF_TYPE) -> Option<Hash> {
        Some(match g {
            CKG_MGF1_SHA1 => Hash::Sha1,
            CKG_MGF1_SHA224 => Hash::Sha224,
            CKG_MGF1_SHA256 => Hash::Sha256,
            CKG_MGF1_SHA384 => Hash::Sha384,
            CKG_MGF1_SHA512 => Hash::Sha512,
            CKG_MGF1_SHA3_224 => Hash::Sha3_224,
            CKG_MGF1_SHA3_256 => Hash::Sha3_256,
            CKG_MGF1_SHA3_384 => Hash::Sha3_384,
            CKG_MGF1_SHA3_512 => Hash::Sha3_512,
            _ => return None,
        })
    }

    pub(super) fn mech(self) -> CK_MECHANISM_TYPE {
        match self {
            Hash::Md5 => CKM_MD5,
            Hash::Sha1 => CKM_SHA_1,
            Hash::Sha224 => CKM_SHA224,
            Hash::Sha256 => CKM_SHA256,
            Hash::Sha384 => CKM_SHA384,
            Hash::Sha512 => CKM_SHA512,
            Hash::Sha3_224 => CKM_SHA3_224,
            Hash::Sha3_256 => CKM_SHA3_256,
            Hash::Sha3_384 => CKM_SHA3_384,
            Hash::Sha3_512 => CKM_SHA3_512,
        }
    }

    pub(super) fn len(self) -> usize {
        match self {
            Hash::Md5 => 16,
            Hash::Sha1 => 20,
            Hash::Sha224 | Hash::Sha3_224 => 28,
            Hash::Sha256 | Hash::Sha3_256 => 32,
            Hash::Sha384 | Hash::Sha3_384 => 48,
            Hash::Sha512 | Hash::Sha3_512 => 64,
        }
    }

    pub(super) fn dyn_digest(self) -> Box<dyn DynDigest + Send + Sync> {
        match self {
            Hash::Md5 => unreachable!("MD5 is never a PSS or OAEP hash"),
            Hash::Sha1 => Box::new(sha1_010::Sha1::default()),
            Hash::Sha224 => Box::new(sha2_010::Sha224::default()),
            Hash::Sha256 => Box::new(sha2_010::Sha256::default()),
            Hash::Sha384 => Box::new(sha2_010::Sha384::default()),
            Hash::Sha512 => Box::new(sha2_010::Sha512::default()),
            Hash::Sha3_224 => Box::new(sha3_010::Sha3_224::default()),
            Hash::Sha3_256 => Box::new(sha3_010::Sha3_256::default()),
            Hash::Sha3_384 => Box::new(sha3_010::Sha3_384::default()),
            Hash::Sha3_512 => Box::new(sha3_010::Sha3_512::default()),
        }
    }

    /// PKCS #1 v1.5 signature padding with this hash's DigestInfo prefix.
    pub(super) fn pkcs1v15(self) -> Pkcs1v15Sign {
        match self {
            // RFC 8017 §9.2 note 1: the MD5 DigestInfo prefix (the
            // digest 0.10 md-5 the crate's `new` would need is not a
            // dependency; the digest itself comes from md-5 0.11).
            Hash::Md5 => Pkcs1v15Sign {
                hash_len: Some(16),
                prefix: Box::new([
                    0x30, 0x20, 0x30, 0x0c, 0x06, 0x08, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02,
                    0x05, 0x05, 0x00, 0x04, 0x10,
                ]),
            },
            Hash::Sha1 => Pkcs1v15Sign::new::<sha1_010::Sha1>(),
            Hash::Sha224 => Pkcs1v15Sign::new::<sha2_010::Sha224>(),
            Hash::Sha256 => Pkcs1v15Sign::new::<sha2_010::Sha256>(),
            Hash::Sha384 => Pkcs1v15Sign::new::<sha2_010::Sha384>(),
            Hash::Sha512 => Pkcs1v15Sign::new::<sha2_010::Sha512>(),
            Hash::Sha3_224 | Hash::Sha3_256 | Hash::Sha3_384 | Hash::Sha3_512 => {
                let arc = match self {
                    Hash::Sha3_224 => 7,
                    Hash::Sha3_256 => 8,
                    Hash::Sha3_384 => 9,
                    _ => 10,
                };
                Pkcs1v15Sign {
                    hash_len: Some(self.len()),
                    prefix: nist_digest_info(arc, self.len() as u8),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Integers

pub(super) fn uint(bytes: &[u8]) -> BigUint {
    BigUint::from_bytes_be(bytes)
}

pub(super) fn one() -> BigUint {
    BigUint::from(1u32)
}

pub(super) fn is_zero(x: &BigUint) -> bool {
    x.bits() == 0
}

/// A public exponent this token takes: odd, from 3 to 2^33 − 1 (the `rsa`
/// crate's limit; FIPS 186-5 asks for less than 2^256). Checked before any
/// arithmetic with `e`, so a caller's huge exponent costs nothing.
pub(super) fn valid_public_exponent(e: &BigUint) -> bool {
    *e <= BigUint::from(RsaPublicKey::MAX_PUB_EXPONENT)
        && *e >= BigUint::from(3u32)
        && e.to_bytes_le().first().is_some_and(|b| b & 1 == 1)
}

/// Big-endian bytes without leading zeros (a single zero byte for 0).
pub(super) fn be(x: &BigUint) -> Zeroizing<Vec<u8>> {
    Zeroizing::new(x.to_bytes_be())
}

/// Big-endian bytes left-padded to `len` (`None` if `x` does not fit).
pub(super) fn be_padded(x: &BigUint, len: usize) -> Option<Zeroizing<Vec<u8>>> {
    let bytes = be(x);
    if is_zero(x) {
        return Some(Zeroizing::new(vec![0u8; len]));
    }
    if bytes.len() > len {
        return None;
    }
    let mut out = Zeroizing::new(vec![0u8; len]);
    out[len - bytes.len()..].copy_from_slice(&bytes);
    Some(out)
}

pub(super) fn gcd(a: &BigUint, b: &BigUint) -> BigUint {
    let (mut a, mut b) = (a.clone(), b.clone());
    while !is_zero(&b) {
        let r = &a % &b;
        a = b;
        b = r;
    }
    a
}

/// `a⁻¹ mod m` by the extended Euclidean algorithm, the Bézout
/// coefficient kept reduced mod `m` (`m > 1`).
pub(super) fn mod_inverse(a: &BigUint, m: &BigUint) -> Option<BigUint> {
    let (mut r0, mut r1) = (m.clone(), a % m);
    let (mut t0, mut t1) = (BigUint::from(0u32), one());
    while !is_zero(&r1) {
        let q = &r0 / &r1;
        let r2 = &r0 % &r1;
        let t2 = (&t0 + m - (&q * &t1) % m) % m;
        (r0, r1, t0, t1) = (r1, r2, t1, t2);
    }
    (r0 == one()).then_some(t0)
}

/// `x^d mod n`, blinded: `(x·r^e)^d · r⁻¹` with a fresh random `r`, through
/// the CRT, and checked by re-encryption (a faulty CRT result must not leak
/// a factor of `n`). `x < n` is the caller's responsibility.
pub(super) fn raw_private(key: &RsaPrivateKey, x: &BigUint) -> Result<BigUint> {
    let n = key.n();
    let (r, r_inv) = loop {
        let mut bytes = Zeroizing::new(vec![0u8; key.size()]);
        SysRng
            .try_fill_bytes(&mut bytes)
            .map_err(|_| err(CKR_GENERAL_ERROR))?;
        let r = uint(&bytes) % n;
        if r <= one() {
            continue;
        }
        if let Some(inv) = mod_inverse(&r, n) {
            break (Zeroizing::new(r), Zeroizing::new(inv));
        }
    };
    let blinded = Zeroizing::new((x * r.modpow(key.e(), n)) % n);
    let m = Zeroizing::new(match (crt_values(key), key.primes()) {
        (Some((dp, dq, qinv)), [p, q]) => {
            let m1 = Zeroizing::new(blinded.modpow(&dp, p));
            let m2 = Zeroizing::new(blinded.modpow(&dq, q));
            let h = Zeroizing::new((&qinv * ((&*m1 + p - (&*m2 % p)) % p)) % p);
            &*m2 + &*h * q
        }
        _ => blinded.modpow(key.d(), n),
    });
    if m.modpow(key.e(), n) != *blinded {
        return Err(err(CKR_FUNCTION_FAILED));
    }
    Ok((&*m * &*r_inv) % n)
}

/// Copies `value` into `out`, or `CKR_BUFFER_TOO_SMALL`.
pub(super) fn emit(value: &[u8], out: &mut [u8]) -> Result<usize> {
    let dst = out
        .get_mut(..value.len())
        .ok_or(Error::buffer_too_small(value.len()))?;
    dst.copy_from_slice(value);
    Ok(value.len())
}

pub(super) fn private_of(key: &KeyMaterial) -> Result<&RsaPrivateKey> {
    match key {
        KeyMaterial::RsaPrivate(k, ..) => Ok(k),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

pub(super) fn public_of(key: &KeyMaterial) -> Result<&RsaPublicKey> {
    match key {
        KeyMaterial::RsaPublic(k, ..) => Ok(k),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// The key's CRT values `(dP, dQ, qInv)` (PKCS #1 §3.2).
pub(super) fn crt_values(key: &RsaPrivateKey) -> Option<(BigUint, BigUint, BigUint)> {
    Some((
        key.dp()?.clone(),
        key.dq()?.clone(),
        key.qinv()?.to_biguint()?,
    ))
}
