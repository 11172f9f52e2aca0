//! RSA (mechanisms spec §2.1) with the rsa crate: key pair generation
//! (§2.1.5), import, PKCS #1 v1.5 (§2.1.6, §2.1.12), PSS (§2.1.14–2.1.15),
//! OAEP (§2.1.8) and raw X.509 (§2.1.7) signing, verification, encryption
//! and decryption, and PKCS #8 encoding for key wrapping.
//!
//! Every private-key operation is blinded: PKCS #1 v1.5 and OAEP through
//! the crate's `sign_with_rng` / `decrypt_blinded`, PSS with the crate's
//! blinded signer, and raw X.509 through [`raw_private`] here (the crate's
//! raw primitive is behind a feature this crate does not enable). The
//! randomness comes from getrandom(2).
//!
//! Single-part mechanisms (`CKM_RSA_PKCS`, `CKM_RSA_PKCS_PSS`,
//! `CKM_RSA_X_509` for signatures; every RSA cipher) reject `C_*Update` and
//! `C_*Final` with `CKR_FUNCTION_NOT_SUPPORTED`, which ends the operation:
//! the mechanisms table of §2.1 lists them for single-part use only and the
//! base spec leaves the return value to the token. The `CKM_SHA*_RSA_*`
//! signature mechanisms support multi-part operation.
//!
//! Values are big-endian integers without leading zero bytes (stored
//! normalised; leading zeros are accepted on input).

use super::digest::DigestOp;
use super::keys::{KeyMaterial, ValueOf};
use super::{
    CipherOperation, DigestOperation, Direction, GeneratedPair, Mechanism, OutputLen, Param,
    SignOperation, VerifyOperation,
};
use crate::attributes::Attributes;
use crate::error::{Error, Result, err};
use ::rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use ::rsa::rand_core::{CryptoRng, RngCore};
use ::rsa::traits::{PrivateKeyParts, PublicKeyParts};
use ::rsa::{BigUint, Oaep, Pkcs1v15Encrypt, Pkcs1v15Sign, Pss, RsaPrivateKey, RsaPublicKey};
use cryptoki_sys::*;
use sha2_010::digest::DynDigest;
use std::sync::Arc;
use zeroize::Zeroizing;

/// Smallest modulus accepted, in bits.
const MIN_BITS: usize = 1024;
/// Largest modulus accepted, in bits.
const MAX_BITS: usize = crate::config::RSA_MAX_BITS as usize;
/// Default public exponent (F4).
const F4: u64 = 65537;

/// The operating system's CSPRNG in the `rand_core` 0.6 interface the rsa
/// crate wants (blinding factors, padding, salts, key generation).
struct SysRng;

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
        super::random::os_fill(dest)
            .map_err(|_| ::rsa::rand_core::Error::new(std::io::Error::other("getrandom failed")))
    }
}

impl CryptoRng for SysRng {}

/// The hash functions usable in the RSA mechanisms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hash {
    /// Only for `CKM_MD5_RSA_PKCS` (legacy): never a PSS or OAEP hash, as
    /// [`Hash::from_mech`] and [`Hash::from_mgf`] do not return it.
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    /// From a digest mechanism (`hashAlg` of the OAEP and PSS parameters).
    fn from_mech(m: CK_MECHANISM_TYPE) -> Option<Hash> {
        Some(match m {
            CKM_SHA_1 => Hash::Sha1,
            CKM_SHA224 => Hash::Sha224,
            CKM_SHA256 => Hash::Sha256,
            CKM_SHA384 => Hash::Sha384,
            CKM_SHA512 => Hash::Sha512,
            _ => return None,
        })
    }

    /// From a mask generation function (`CKG_MGF1_*`).
    fn from_mgf(g: CK_RSA_PKCS_MGF_TYPE) -> Option<Hash> {
        Some(match g {
            CKG_MGF1_SHA1 => Hash::Sha1,
            CKG_MGF1_SHA224 => Hash::Sha224,
            CKG_MGF1_SHA256 => Hash::Sha256,
            CKG_MGF1_SHA384 => Hash::Sha384,
            CKG_MGF1_SHA512 => Hash::Sha512,
            _ => return None,
        })
    }

    fn mech(self) -> CK_MECHANISM_TYPE {
        match self {
            Hash::Md5 => CKM_MD5,
            Hash::Sha1 => CKM_SHA_1,
            Hash::Sha224 => CKM_SHA224,
            Hash::Sha256 => CKM_SHA256,
            Hash::Sha384 => CKM_SHA384,
            Hash::Sha512 => CKM_SHA512,
        }
    }

    fn len(self) -> usize {
        match self {
            Hash::Md5 => 16,
            Hash::Sha1 => 20,
            Hash::Sha224 => 28,
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
            Hash::Sha512 => 64,
        }
    }

    fn dyn_digest(self) -> Box<dyn DynDigest + Send + Sync> {
        match self {
            Hash::Md5 => unreachable!("MD5 is never a PSS or OAEP hash"),
            Hash::Sha1 => Box::new(sha1_010::Sha1::default()),
            Hash::Sha224 => Box::new(sha2_010::Sha224::default()),
            Hash::Sha256 => Box::new(sha2_010::Sha256::default()),
            Hash::Sha384 => Box::new(sha2_010::Sha384::default()),
            Hash::Sha512 => Box::new(sha2_010::Sha512::default()),
        }
    }

    /// PKCS #1 v1.5 signature padding with this hash's DigestInfo prefix.
    fn pkcs1v15(self) -> Pkcs1v15Sign {
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
        }
    }
}

// ---------------------------------------------------------------------------
// Integers and keys

fn uint(bytes: &[u8]) -> BigUint {
    BigUint::from_bytes_be(bytes)
}

fn one() -> BigUint {
    BigUint::from(1u32)
}

fn is_zero(x: &BigUint) -> bool {
    x.bits() == 0
}

/// A public exponent this token takes: odd, from 3 to 2^33 − 1 (the `rsa`
/// crate's limit; FIPS 186-5 asks for less than 2^256). Checked before any
/// arithmetic with `e`, so a caller's huge exponent costs nothing.
fn valid_public_exponent(e: &BigUint) -> bool {
    *e <= BigUint::from(RsaPublicKey::MAX_PUB_EXPONENT)
        && *e >= BigUint::from(3u32)
        && e.to_bytes_le().first().is_some_and(|b| b & 1 == 1)
}

/// Big-endian bytes without leading zeros (a single zero byte for 0).
fn be(x: &BigUint) -> Zeroizing<Vec<u8>> {
    Zeroizing::new(x.to_bytes_be())
}

/// Big-endian bytes left-padded to `len` (`None` if `x` does not fit).
fn be_padded(x: &BigUint, len: usize) -> Option<Zeroizing<Vec<u8>>> {
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

fn gcd(a: &BigUint, b: &BigUint) -> BigUint {
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
fn mod_inverse(a: &BigUint, m: &BigUint) -> Option<BigUint> {
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

/// Bases tried by [`recover_primes`]: each finds the factors of a consistent
/// key with probability at least 1/2, so a valid key fails all of them with
/// probability below 2^-64.
const RECOVERY_BASES: u32 = 64;

/// Factors `n` from `(n, e, d)`: the classic randomised method (e.g. Boneh,
/// "Twenty years of attacks on the RSA cryptosystem", Fact 1) with small
/// fixed bases, each of which succeeds with probability at least 1/2.
/// Unlike the crate's SP 800-56B C.2 method this also works for `e < 2^16`.
///
/// The caller has bounded the inputs (`e` by [`valid_public_exponent`],
/// `1 < d < n`), and inconsistent values are refused after one modular
/// exponentiation: for a real key `g^(de−1) ≡ 1 (mod n)`. So the search runs
/// only on keys that are consistent, and then each base stops at the first
/// square root of 1.
fn recover_primes(n: &BigUint, e: &BigUint, d: &BigUint) -> Option<(BigUint, BigUint)> {
    let one = one();
    let de = d * e;
    if de <= one || n <= &one {
        return None;
    }
    let k = de - &one;
    if BigUint::from(2u32).modpow(&k, n) != one {
        return None;
    }
    let t = k.trailing_zeros()?;
    let r = &k >> t;
    let n_minus_1 = n - &one;
    for g in 2u32..2 + RECOVERY_BASES {
        let mut y = BigUint::from(g).modpow(&r, n);
        if y == one || y == n_minus_1 {
            continue;
        }
        for _ in 0..t {
            let x = (&y * &y) % n;
            if x == one {
                // y is a non-trivial square root of 1: gcd(y − 1, n) is a factor.
                let p = gcd(&(&y - &one), n);
                if p > one && &p < n {
                    let q = n / &p;
                    return Some(if p > q { (p, q) } else { (q, p) });
                }
                break;
            }
            if x == n_minus_1 {
                break;
            }
            y = x;
        }
    }
    None
}

/// A private key from its components; missing primes are recovered from
/// `(n, e, d)`, a missing `e` is `d⁻¹ mod λ(n)`. Errors are
/// `CKR_ATTRIBUTE_VALUE_INVALID` (inconsistent or unsupported values) or
/// `CKR_TEMPLATE_INCOMPLETE` (not enough to rebuild the key).
fn assemble(
    n: BigUint,
    e: Option<BigUint>,
    d: BigUint,
    p: Option<BigUint>,
    q: Option<BigUint>,
) -> Result<RsaPrivateKey> {
    let invalid = err(CKR_ATTRIBUTE_VALUE_INVALID);
    // Every component is bounded by `n` (and `e` by its own limit) before
    // any arithmetic: the caller chooses their sizes.
    if !(MIN_BITS..=MAX_BITS).contains(&n.bits())
        || d <= one()
        || d >= n
        || e.as_ref().is_some_and(|e| !valid_public_exponent(e))
        || [&p, &q].iter().any(|f| f.as_ref().is_some_and(|f| f >= &n))
    {
        return Err(invalid);
    }
    let divide = |f: &BigUint| -> Result<BigUint> {
        if f <= &one() || f >= &n || !is_zero(&(&n % f)) {
            return Err(invalid);
        }
        Ok(&n / f)
    };
    let (p, q) = match (p, q) {
        (Some(p), Some(q)) => (p, q),
        (Some(p), None) => {
            let q = divide(&p)?;
            (p, q)
        }
        (None, Some(q)) => (divide(&q)?, q),
        (None, None) => {
            let e = e.as_ref().ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
            recover_primes(&n, e, &d).ok_or(invalid)?
        }
    };
    if p <= one() || q <= one() {
        return Err(invalid);
    }
    let e = match e {
        Some(e) => e,
        None => {
            let (p1, q1) = (&p - one(), &q - one());
            let lambda = &p1 / gcd(&p1, &q1) * &q1;
            mod_inverse(&d, &lambda).ok_or(invalid)?
        }
    };
    let mut key = RsaPrivateKey::from_components(n, e, d, vec![p, q]).map_err(|_| invalid)?;
    key.precompute().map_err(|_| invalid)?;
    Ok(key)
}

fn public_key(n: &[u8], e: &[u8]) -> Result<RsaPublicKey> {
    let n = uint(n);
    if !(MIN_BITS..=MAX_BITS).contains(&n.bits()) {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    let e = uint(e);
    if !valid_public_exponent(&e) {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    RsaPublicKey::new_with_max_size(n, e, MAX_BITS).map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))
}

/// A private key from the values `get` gives (object attributes).
fn private_from(get: ValueOf<'_>) -> Result<RsaPrivateKey> {
    let value = |ty| -> Result<Option<BigUint>> { Ok(get(ty)?.map(|v| uint(&v))) };
    let n = value(CKA_MODULUS)?.ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    let d = value(CKA_PRIVATE_EXPONENT)?.ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    assemble(
        n,
        value(CKA_PUBLIC_EXPONENT)?,
        d,
        value(CKA_PRIME_1)?,
        value(CKA_PRIME_2)?,
    )
}

/// The key's CRT values `(dP, dQ, qInv)` (PKCS #1 §3.2).
fn crt_values(key: &RsaPrivateKey) -> Option<(BigUint, BigUint, BigUint)> {
    Some((
        key.dp()?.clone(),
        key.dq()?.clone(),
        key.qinv()?.to_biguint()?,
    ))
}

/// Sets every component of `key` on a private-key object.
fn set_private(key: &RsaPrivateKey, attrs: &mut Attributes) -> Result<()> {
    let [p, q] = key.primes() else {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    };
    let (dp, dq, qinv) = crt_values(key).ok_or(err(CKR_ATTRIBUTE_VALUE_INVALID))?;
    for (ty, v) in [
        (CKA_MODULUS, key.n()),
        (CKA_PUBLIC_EXPONENT, key.e()),
        (CKA_PRIVATE_EXPONENT, key.d()),
        (CKA_PRIME_1, p),
        (CKA_PRIME_2, q),
        (CKA_EXPONENT_1, &dp),
        (CKA_EXPONENT_2, &dq),
        (CKA_COEFFICIENT, &qinv),
    ] {
        attrs.set_bytes(ty, &be(v));
    }
    Ok(())
}

/// Parses a private key from its attributes (CRT values recomputed and
/// precomputed for use).
pub fn load_private(get: ValueOf<'_>) -> Result<KeyMaterial> {
    private_from(get)
        .map(private_material)
        .map_err(|_| err(CKR_KEY_HANDLE_INVALID))
}

/// The cached form of a private key (with `aws-lc`: also parsed by aws-lc,
/// for keys it takes).
fn private_material(key: RsaPrivateKey) -> KeyMaterial {
    #[cfg(feature = "aws-lc")]
    {
        let aws = key.to_pkcs8_der().ok().and_then(|der| {
            super::awslc::RsaPrivate::from_pkcs8(der.as_bytes(), key.n().bits()).map(Box::new)
        });
        KeyMaterial::RsaPrivate(Box::new(key), aws)
    }
    #[cfg(not(feature = "aws-lc"))]
    KeyMaterial::RsaPrivate(Box::new(key))
}

/// The cached form of a public key (with `aws-lc`: also parsed by aws-lc,
/// for keys it takes).
fn public_material(key: RsaPublicKey) -> KeyMaterial {
    #[cfg(feature = "aws-lc")]
    {
        use ::rsa::pkcs8::EncodePublicKey;
        let aws = key.to_public_key_der().ok().and_then(|der| {
            super::awslc::RsaPublic::from_spki(der.as_bytes(), key.n().bits()).map(Box::new)
        });
        KeyMaterial::RsaPublic(Box::new(key), aws)
    }
    #[cfg(not(feature = "aws-lc"))]
    KeyMaterial::RsaPublic(Box::new(key))
}

/// Parses a public key from its attributes.
pub fn load_public(get: ValueOf<'_>) -> Result<KeyMaterial> {
    let n = get(CKA_MODULUS)?.ok_or(err(CKR_KEY_HANDLE_INVALID))?;
    let e = get(CKA_PUBLIC_EXPONENT)?.ok_or(err(CKR_KEY_HANDLE_INVALID))?;
    public_key(&n, &e)
        .map(public_material)
        .map_err(|_| err(CKR_KEY_HANDLE_INVALID))
}

/// Checks an imported RSA key (§2.1.2–2.1.3) and normalises it: modulus of
/// 1024 to 16384 bits, odd public exponent from 3 to 2^33 − 1, consistent
/// private components. Public keys get `CKA_MODULUS_BITS`; private keys get
/// whichever of `CKA_PUBLIC_EXPONENT`, the primes and the CRT values were
/// missing (given CRT values must match the computed ones).
pub fn complete_import(class: CK_OBJECT_CLASS, attrs: &mut Attributes) -> Result<()> {
    let need = |attrs: &Attributes, ty| {
        attrs
            .bytes(ty)
            .map(<[u8]>::to_vec)
            .map(Zeroizing::new)
            .ok_or(err(CKR_TEMPLATE_INCOMPLETE))
    };
    if class == CKO_PUBLIC_KEY {
        let key = public_key(
            &need(attrs, CKA_MODULUS)?,
            &need(attrs, CKA_PUBLIC_EXPONENT)?,
        )?;
        attrs.set_bytes(CKA_MODULUS, &be(key.n()));
        attrs.set_bytes(CKA_PUBLIC_EXPONENT, &be(key.e()));
        attrs.set_ulong(CKA_MODULUS_BITS, key.n().bits() as CK_ULONG);
        return Ok(());
    }
    let value = |ty| attrs.bytes(ty).map(uint);
    let key = assemble(
        value(CKA_MODULUS).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
        value(CKA_PUBLIC_EXPONENT),
        value(CKA_PRIVATE_EXPONENT).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
        value(CKA_PRIME_1),
        value(CKA_PRIME_2),
    )?;
    public_key(&be(key.n()), &be(key.e()))?;
    let (dp, dq, qinv) = crt_values(&key).ok_or(err(CKR_ATTRIBUTE_VALUE_INVALID))?;
    for (ty, computed) in [
        (CKA_EXPONENT_1, &dp),
        (CKA_EXPONENT_2, &dq),
        (CKA_COEFFICIENT, &qinv),
    ] {
        if let Some(given) = value(ty)
            && &given != computed
        {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
    }
    set_private(&key, attrs)
}

/// Generates a key pair (§2.1.5): `CKA_MODULUS_BITS` (1024 to 16384, a
/// multiple of 8; else `CKR_KEY_SIZE_RANGE`; the token's `rsa_min_bits` is
/// checked by the caller) and `CKA_PUBLIC_EXPONENT`
/// (default 65537; odd, at least 3 and below 2^33, else
/// `CKR_ATTRIBUTE_VALUE_INVALID`).
pub fn generate(public_template: &Attributes) -> Result<GeneratedPair> {
    let bits = public_template
        .ulong(CKA_MODULUS_BITS)
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    let range = super::lookup(CKM_RSA_PKCS_KEY_PAIR_GEN)?;
    if bits < range.min_key || bits > range.max_key || bits % 8 != 0 {
        return Err(err(CKR_KEY_SIZE_RANGE));
    }
    let e = match public_template.bytes(CKA_PUBLIC_EXPONENT) {
        Some(v) => uint(v),
        None => BigUint::from(F4),
    };
    if !valid_public_exponent(&e) {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    // With `aws-lc`, AWS-LC generates the 2048/3072/4096-bit keys with e = F4.
    #[cfg(feature = "aws-lc")]
    let aws = if e == BigUint::from(F4) {
        super::awslc::generate_rsa_pkcs8(bits as usize)
    } else {
        None
    };
    #[cfg(not(feature = "aws-lc"))]
    let aws: Option<Result<Zeroizing<Vec<u8>>>> = None;
    let mut key = match aws {
        Some(der) => RsaPrivateKey::from_pkcs8_der(&der?).map_err(|_| err(CKR_FUNCTION_FAILED))?,
        None => RsaPrivateKey::new_with_exp(&mut SysRng, bits as usize, &e)
            .map_err(|_| err(CKR_FUNCTION_FAILED))?,
    };
    key.precompute().map_err(|_| err(CKR_FUNCTION_FAILED))?;
    let mut public = Attributes::new();
    public.set_bytes(CKA_MODULUS, &be(key.n()));
    public.set_bytes(CKA_PUBLIC_EXPONENT, &be(key.e()));
    public.set_ulong(CKA_MODULUS_BITS, key.n().bits() as CK_ULONG);
    let mut private = Attributes::new();
    set_private(&key, &mut private)?;
    Ok(GeneratedPair {
        public,
        private,
        key_type: CKK_RSA,
    })
}

/// PKCS #8 `PrivateKeyInfo` DER of a private key, for `C_WrapKey`.
pub fn to_pkcs8(get: ValueOf<'_>) -> Result<Zeroizing<Vec<u8>>> {
    let key = private_from(get).map_err(|_| err(CKR_KEY_NOT_WRAPPABLE))?;
    let der = key.to_pkcs8_der().map_err(|_| err(CKR_KEY_NOT_WRAPPABLE))?;
    Ok(Zeroizing::new(der.as_bytes().to_vec()))
}

/// Sets the key values from PKCS #8 DER (`C_UnwrapKey`); two-prime keys only.
pub fn from_pkcs8(der: &[u8], attrs: &mut Attributes) -> Result<()> {
    let key = RsaPrivateKey::from_pkcs8_der(der).map_err(|_| err(CKR_WRAPPED_KEY_INVALID))?;
    set_private(&key, attrs).map_err(|_| err(CKR_WRAPPED_KEY_INVALID))
}

/// `x^d mod n`, blinded: `(x·r^e)^d · r⁻¹` with a fresh random `r`, through
/// the CRT, and checked by re-encryption (a faulty CRT result must not leak
/// a factor of `n`). `x < n` is the caller's responsibility.
fn raw_private(key: &RsaPrivateKey, x: &BigUint) -> Result<BigUint> {
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
fn emit(value: &[u8], out: &mut [u8]) -> Result<usize> {
    let dst = out
        .get_mut(..value.len())
        .ok_or(Error::buffer_too_small(value.len()))?;
    dst.copy_from_slice(value);
    Ok(value.len())
}

// ---------------------------------------------------------------------------
// Signatures

/// How the value to sign is padded.
#[derive(Clone, Copy, Debug)]
enum SigPadding {
    /// EMSA-PKCS1-v1_5: the DigestInfo of the hash when the token hashes,
    /// else the caller's input (at most k − 11 bytes) as is.
    Pkcs1,
    /// EMSA-PSS with MGF1 over the same hash.
    Pss { hash: Hash, salt_len: usize },
    /// None (`CKM_RSA_X_509`): the input is the integer.
    Raw,
}

/// A signature mechanism: the hash the token applies (the `CKM_SHA*_RSA_*`
/// mechanisms) and the padding.
struct Scheme {
    hash: Option<(Hash, DigestOp)>,
    padding: SigPadding,
}

impl Scheme {
    /// Decodes and validates the mechanism for a key of `bits` bits.
    fn new(mech: &Mechanism<'_>, bits: usize) -> Result<Scheme> {
        let bad = || err(CKR_MECHANISM_PARAM_INVALID);
        let (hash, pss) = match mech.ty {
            CKM_RSA_PKCS | CKM_RSA_X_509 => (None, false),
            // Legacy (mechanisms spec §2.1.12); aws-lc has no MD5, so
            // this always runs in the rsa crate.
            CKM_MD5_RSA_PKCS => (Some(Hash::Md5), false),
            CKM_SHA1_RSA_PKCS => (Some(Hash::Sha1), false),
            CKM_SHA224_RSA_PKCS => (Some(Hash::Sha224), false),
            CKM_SHA256_RSA_PKCS => (Some(Hash::Sha256), false),
            CKM_SHA384_RSA_PKCS => (Some(Hash::Sha384), false),
            CKM_SHA512_RSA_PKCS => (Some(Hash::Sha512), false),
            CKM_RSA_PKCS_PSS => (None, true),
            CKM_SHA1_RSA_PKCS_PSS => (Some(Hash::Sha1), true),
            CKM_SHA224_RSA_PKCS_PSS => (Some(Hash::Sha224), true),
            CKM_SHA256_RSA_PKCS_PSS => (Some(Hash::Sha256), true),
            CKM_SHA384_RSA_PKCS_PSS => (Some(Hash::Sha384), true),
            CKM_SHA512_RSA_PKCS_PSS => (Some(Hash::Sha512), true),
            _ => return Err(err(CKR_MECHANISM_INVALID)),
        };
        let padding = if pss {
            // §2.1.14: CK_RSA_PKCS_PSS_PARAMS is required.
            let Param::Pss {
                hash: p_hash,
                mgf,
                salt_len,
            } = mech.param
            else {
                return Err(bad());
            };
            let p_hash = Hash::from_mech(p_hash).ok_or_else(bad)?;
            if hash.is_some_and(|h| h != p_hash) || Hash::from_mgf(mgf) != Some(p_hash) {
                return Err(bad());
            }
            // RFC 8017 §9.1.1: emLen ≥ hLen + sLen + 2, emLen = ⌈(modBits − 1)/8⌉.
            let em_len = (bits - 1).div_ceil(8);
            let salt_len = usize::try_from(salt_len).map_err(|_| bad())?;
            if salt_len
                .checked_add(p_hash.len() + 2)
                .is_none_or(|need| need > em_len)
            {
                return Err(bad());
            }
            SigPadding::Pss {
                hash: p_hash,
                salt_len,
            }
        } else {
            if mech.param != Param::None {
                return Err(bad());
            }
            if mech.ty == CKM_RSA_X_509 {
                SigPadding::Raw
            } else {
                SigPadding::Pkcs1
            }
        };
        let hash = match hash {
            Some(h) => Some((h, DigestOp::new(h.mech())?)),
            None => None,
        };
        Ok(Scheme { hash, padding })
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        match &mut self.hash {
            Some((_, d)) => {
                d.update(data);
                Ok(())
            }
            None => Err(err(CKR_FUNCTION_NOT_SUPPORTED)),
        }
    }

    /// The value the padding applies to: the digest of everything given
    /// (hashing mechanisms) or `single` itself. `None` for a multi-part
    /// finish of a single-part mechanism.
    fn value<'a>(&mut self, single: Option<&'a [u8]>) -> Result<std::borrow::Cow<'a, [u8]>> {
        match (&mut self.hash, single) {
            (Some((_, d)), data) => {
                if let Some(data) = data {
                    d.update(data);
                }
                let mut digest = [0u8; 64];
                let n = d.finish(&mut digest);
                Ok(std::borrow::Cow::Owned(digest[..n].to_vec()))
            }
            (None, Some(data)) => Ok(std::borrow::Cow::Borrowed(data)),
            (None, None) => Err(err(CKR_FUNCTION_NOT_SUPPORTED)),
        }
    }

    fn pkcs1(&self) -> Pkcs1v15Sign {
        match &self.hash {
            Some((h, _)) => h.pkcs1v15(),
            None => Pkcs1v15Sign::new_unprefixed(),
        }
    }

    /// With `aws-lc`: the hash, PSS or not, and digest aws-lc signs or
    /// verifies for `value` (already length-checked), if it can.
    #[cfg(feature = "aws-lc")]
    fn aws<'v>(&self, value: &'v [u8]) -> Option<(super::awslc::SigHash, bool, &'v [u8])> {
        use super::awslc::{SigHash, split_digest_info};
        match (self.padding, &self.hash) {
            (SigPadding::Pkcs1, Some((h, _))) => {
                Some((SigHash::from_mech(h.mech())?, false, value))
            }
            (SigPadding::Pkcs1, None) => {
                let (h, digest) = split_digest_info(value)?;
                Some((h, false, digest))
            }
            (SigPadding::Pss { hash, salt_len }, _) if salt_len == hash.len() => {
                Some((SigHash::from_mech(hash.mech())?, true, value))
            }
            _ => None,
        }
    }

    /// Checks the length of a raw (unhashed) input for a key of `k` bytes.
    fn check_input(&self, value: &[u8], k: usize) -> Result<()> {
        let ok = match (self.padding, &self.hash) {
            (_, Some(_)) => true,
            (SigPadding::Pkcs1, None) => value.len() + 11 <= k,
            (SigPadding::Pss { hash, .. }, None) => value.len() == hash.len(),
            (SigPadding::Raw, None) => value.len() <= k,
        };
        if ok {
            Ok(())
        } else {
            Err(err(CKR_DATA_LEN_RANGE))
        }
    }
}

/// RSA signing: `CKM_RSA_PKCS`, `CKM_SHA*_RSA_PKCS`, `CKM_RSA_PKCS_PSS`,
/// `CKM_SHA*_RSA_PKCS_PSS`, `CKM_RSA_X_509`. The signature is exactly as
/// long as the modulus.
pub struct RsaSign {
    key: Arc<KeyMaterial>,
    k: usize,
    scheme: Scheme,
}

fn private_of(key: &KeyMaterial) -> Result<&RsaPrivateKey> {
    match key {
        KeyMaterial::RsaPrivate(k, ..) => Ok(k),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

fn public_of(key: &KeyMaterial) -> Result<&RsaPublicKey> {
    match key {
        KeyMaterial::RsaPublic(k, ..) => Ok(k),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

impl RsaSign {
    /// Starts a signature with an RSA private key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let private = private_of(&key)?;
        let (k, bits) = (private.size(), private.n().bits());
        Ok(RsaSign {
            scheme: Scheme::new(mech, bits)?,
            key,
            k,
        })
    }

    fn sign_value(&self, value: &[u8], out: &mut [u8]) -> Result<usize> {
        let key = private_of(&self.key)?;
        self.scheme.check_input(value, self.k)?;
        #[cfg(feature = "aws-lc")]
        if let KeyMaterial::RsaPrivate(_, Some(aws)) = &*self.key
            && let Some((hash, pss, digest)) = self.scheme.aws(value)
            && let Some(signature) = aws.sign_digest(hash, pss, digest)
        {
            let signature = signature?;
            if signature.len() != self.k {
                return Err(err(CKR_FUNCTION_FAILED));
            }
            return emit(&signature, out);
        }
        let failed = |_| err(CKR_FUNCTION_FAILED);
        let signature = match self.scheme.padding {
            SigPadding::Pkcs1 => key
                .sign_with_rng(&mut SysRng, self.scheme.pkcs1(), value)
                .map_err(failed)?,
            SigPadding::Pss { hash, salt_len } => {
                // `blinded: true` makes the crate blind the private-key
                // operation with the RNG (the signature is ordinary PSS).
                let pss = Pss {
                    blinded: true,
                    digest: hash.dyn_digest(),
                    salt_len,
                };
                key.sign_with_rng(&mut SysRng, pss, value).map_err(failed)?
            }
            SigPadding::Raw => {
                let x = uint(value);
                if &x >= key.n() {
                    return Err(err(CKR_DATA_INVALID));
                }
                let s = raw_private(key, &x)?;
                be_padded(&s, self.k)
                    .ok_or(err(CKR_FUNCTION_FAILED))?
                    .to_vec()
            }
        };
        if signature.len() != self.k {
            return Err(err(CKR_FUNCTION_FAILED));
        }
        emit(&signature, out)
    }
}

impl SignOperation for RsaSign {
    fn output_len(&self) -> usize {
        self.k
    }

    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let value = self.scheme.value(Some(data))?;
        self.sign_value(&value, out)
    }

    /// Multi-part: only for the hashing mechanisms (else
    /// `CKR_FUNCTION_NOT_SUPPORTED`).
    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.scheme.update(data)
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let value = self.scheme.value(None)?;
        self.sign_value(&value, out)
    }
}

/// RSA verification (same mechanisms as [`RsaSign`]): a signature of the
/// wrong length is `CKR_SIGNATURE_LEN_RANGE`, a wrong one
/// `CKR_SIGNATURE_INVALID`.
pub struct RsaVerify {
    key: Arc<KeyMaterial>,
    k: usize,
    scheme: Scheme,
}

impl RsaVerify {
    /// Starts a verification with an RSA public key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let public = public_of(&key)?;
        let (k, bits) = (public.size(), public.n().bits());
        Ok(RsaVerify {
            scheme: Scheme::new(mech, bits)?,
            key,
            k,
        })
    }

    fn verify_value(&self, value: &[u8], signature: &[u8]) -> Result<()> {
        let key = public_of(&self.key)?;
        if signature.len() != self.k {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        self.scheme.check_input(value, self.k)?;
        let invalid = |_| err(CKR_SIGNATURE_INVALID);
        let s = uint(signature);
        if &s >= key.n() {
            return Err(err(CKR_SIGNATURE_INVALID));
        }
        #[cfg(feature = "aws-lc")]
        if let KeyMaterial::RsaPublic(_, Some(aws)) = &*self.key
            && let Some((hash, pss, digest)) = self.scheme.aws(value)
            && let Some(result) = aws.verify_digest(hash, pss, digest, signature)
        {
            return result;
        }
        match self.scheme.padding {
            SigPadding::Pkcs1 => key
                .verify(self.scheme.pkcs1(), value, signature)
                .map_err(invalid),
            SigPadding::Pss { hash, salt_len } => {
                let pss = Pss {
                    blinded: false,
                    digest: hash.dyn_digest(),
                    salt_len,
                };
                key.verify(pss, value, signature).map_err(invalid)
            }
            SigPadding::Raw => {
                let m = s.modpow(key.e(), key.n());
                let recovered = be_padded(&m, self.k).ok_or(err(CKR_SIGNATURE_INVALID))?;
                let expected = be_padded(&uint(value), self.k).ok_or(err(CKR_DATA_LEN_RANGE))?;
                if *recovered == *expected {
                    Ok(())
                } else {
                    Err(err(CKR_SIGNATURE_INVALID))
                }
            }
        }
    }
}

/// `C_VerifyRecover` with `CKM_RSA_PKCS` or `CKM_RSA_X_509` (mechanisms
/// spec 3.0 §2.1.6–2.1.7): the public-key operation, then for
/// `CKM_RSA_PKCS` the removal of the EMSA-PKCS1-v1_5 block-type-1 padding
/// (`00 01 FF…FF 00 ‖ data`, at least eight `FF`); `CKM_RSA_X_509` gives
/// the whole k-byte block.
pub struct RsaRecover {
    key: Arc<KeyMaterial>,
    k: usize,
    pkcs1: bool,
}

impl RsaRecover {
    /// Starts a verification with recovery with an RSA public key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let pkcs1 = match mech.ty {
            CKM_RSA_PKCS => true,
            CKM_RSA_X_509 => false,
            _ => return Err(err(CKR_MECHANISM_INVALID)),
        };
        if mech.param != Param::None {
            return Err(err(CKR_MECHANISM_PARAM_INVALID));
        }
        let k = public_of(&key)?.size();
        Ok(RsaRecover { key, k, pkcs1 })
    }

    fn recover(&self, signature: &[u8], out: &mut [u8]) -> Result<usize> {
        let key = public_of(&self.key)?;
        if signature.len() != self.k {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        let s = uint(signature);
        if &s >= key.n() {
            return Err(err(CKR_SIGNATURE_INVALID));
        }
        let block =
            be_padded(&s.modpow(key.e(), key.n()), self.k).ok_or(err(CKR_SIGNATURE_INVALID))?;
        if !self.pkcs1 {
            return emit(&block, out);
        }
        let invalid = || err(CKR_SIGNATURE_INVALID);
        let rest = block.strip_prefix(&[0x00, 0x01]).ok_or_else(invalid)?;
        let pad = rest.iter().take_while(|&&b| b == 0xFF).count();
        if pad < 8 || rest.get(pad) != Some(&0x00) {
            return Err(invalid());
        }
        emit(&rest[pad + 1..], out)
    }
}

impl CipherOperation for RsaRecover {
    fn output_len(&self, _input_len: usize) -> OutputLen {
        if self.pkcs1 {
            OutputLen::AtMost(self.k - 11)
        } else {
            OutputLen::Exact(self.k)
        }
    }
    fn process(&mut self, signature: &[u8], out: &mut [u8]) -> Result<usize> {
        self.recover(signature, out)
    }
    // Verification with recovery is single-part only (§5.14).
    fn update_len(&self, _input_len: usize) -> OutputLen {
        OutputLen::Exact(0)
    }
    fn update(&mut self, _data: &[u8], _out: &mut [u8]) -> Result<usize> {
        Err(err(CKR_FUNCTION_NOT_SUPPORTED))
    }
    fn final_len(&self) -> OutputLen {
        OutputLen::Exact(0)
    }
    fn finish(&mut self, _out: &mut [u8]) -> Result<usize> {
        Err(err(CKR_FUNCTION_NOT_SUPPORTED))
    }
}

impl VerifyOperation for RsaVerify {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        let value = self.scheme.value(Some(data))?;
        self.verify_value(&value, signature)
    }

    /// Multi-part: only for the hashing mechanisms (else
    /// `CKR_FUNCTION_NOT_SUPPORTED`).
    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.scheme.update(data)
    }

    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        let value = self.scheme.value(None)?;
        self.verify_value(&value, signature)
    }
}

// ---------------------------------------------------------------------------
// Encryption

/// The encryption padding.
enum CipherPadding {
    /// RSAES-PKCS1-v1_5 (§2.1.6).
    Pkcs1,
    /// RSAES-OAEP (§2.1.8) with its hash, MGF1 hash and label.
    Oaep {
        hash: Hash,
        mgf: Hash,
        label: Vec<u8>,
    },
    /// Raw (§2.1.7).
    Raw,
}

/// RSA encryption (public key) and decryption (private key, blinded):
/// `CKM_RSA_PKCS`, `CKM_RSA_PKCS_OAEP`, `CKM_RSA_X_509`; also the
/// `C_WrapKey` / `C_UnwrapKey` path. Single-part only.
pub struct RsaCipher {
    key: Arc<KeyMaterial>,
    k: usize,
    direction: Direction,
    padding: CipherPadding,
}

impl RsaCipher {
    /// Starts an encryption (public key) or decryption (private key).
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>, direction: Direction) -> Result<Self> {
        let k = match direction {
            Direction::Encrypt => public_of(&key)?.size(),
            Direction::Decrypt => private_of(&key)?.size(),
        };
        let bad = || err(CKR_MECHANISM_PARAM_INVALID);
        let padding = match (mech.ty, mech.param) {
            (CKM_RSA_PKCS, Param::None) => CipherPadding::Pkcs1,
            (CKM_RSA_X_509, Param::None) => CipherPadding::Raw,
            (CKM_RSA_PKCS_OAEP, Param::Oaep { hash, mgf, label }) => {
                let hash = Hash::from_mech(hash).ok_or_else(bad)?;
                let mgf = Hash::from_mgf(mgf).ok_or_else(bad)?;
                if k < 2 * hash.len() + 2 {
                    return Err(err(CKR_KEY_SIZE_RANGE));
                }
                CipherPadding::Oaep {
                    hash,
                    mgf,
                    label: label.to_vec(),
                }
            }
            (CKM_RSA_PKCS | CKM_RSA_X_509 | CKM_RSA_PKCS_OAEP, _) => return Err(bad()),
            // A mechanism of another family with an RSA key.
            _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        };
        Ok(RsaCipher {
            key,
            k,
            direction,
            padding,
        })
    }

    /// Largest plaintext.
    fn max_plain(&self) -> usize {
        match &self.padding {
            CipherPadding::Pkcs1 => self.k - 11,
            CipherPadding::Oaep { hash, .. } => self.k - 2 * hash.len() - 2,
            CipherPadding::Raw => self.k,
        }
    }

    /// The crate's OAEP padding for the parameters. The label is arbitrary
    /// bytes in PKCS #11 but a `String` in the crate, so it is fed to the
    /// label hash up front and the crate's own label left empty: the crate
    /// only ever uses that digest to compute `lHash = Hash(L)`.
    fn oaep(hash: Hash, mgf: Hash, label: &[u8]) -> Oaep {
        let mut digest = hash.dyn_digest();
        digest.update(label);
        Oaep {
            digest,
            mgf_digest: mgf.dyn_digest(),
            label: None,
        }
    }

    fn encrypt(&self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let key = public_of(&self.key)?;
        if data.len() > self.max_plain() {
            return Err(err(CKR_DATA_LEN_RANGE));
        }
        #[cfg(feature = "aws-lc")]
        if let (KeyMaterial::RsaPublic(_, Some(aws)), CipherPadding::Oaep { hash, mgf, label }) =
            (&*self.key, &self.padding)
            && let Some(c) = aws.oaep_encrypt(hash.mech(), mgf.mech(), label, data)
        {
            return emit(&c?, out);
        }
        let failed = |_| err(CKR_FUNCTION_FAILED);
        let c = match &self.padding {
            CipherPadding::Pkcs1 => key
                .encrypt(&mut SysRng, Pkcs1v15Encrypt, data)
                .map_err(failed)?,
            CipherPadding::Oaep { hash, mgf, label } => key
                .encrypt(&mut SysRng, Self::oaep(*hash, *mgf, label), data)
                .map_err(failed)?,
            CipherPadding::Raw => {
                let m = uint(data);
                if &m >= key.n() {
                    return Err(err(CKR_DATA_INVALID));
                }
                be_padded(&m.modpow(key.e(), key.n()), self.k)
                    .ok_or(err(CKR_FUNCTION_FAILED))?
                    .to_vec()
            }
        };
        emit(&c, out)
    }

    fn decrypt(&self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let key = private_of(&self.key)?;
        if data.len() != self.k {
            return Err(err(CKR_ENCRYPTED_DATA_LEN_RANGE));
        }
        let c = uint(data);
        if &c >= key.n() {
            return Err(err(CKR_ENCRYPTED_DATA_INVALID));
        }
        #[cfg(feature = "aws-lc")]
        if let (KeyMaterial::RsaPrivate(_, Some(aws)), CipherPadding::Oaep { hash, mgf, label }) =
            (&*self.key, &self.padding)
            && let Some(plain) = aws.oaep_decrypt(hash.mech(), mgf.mech(), label, data)
        {
            return emit(&plain?, out);
        }
        let invalid = |_| err(CKR_ENCRYPTED_DATA_INVALID);
        let plain = Zeroizing::new(match &self.padding {
            CipherPadding::Pkcs1 => key
                .decrypt_blinded(&mut SysRng, Pkcs1v15Encrypt, data)
                .map_err(invalid)?,
            CipherPadding::Oaep { hash, mgf, label } => key
                .decrypt_blinded(&mut SysRng, Self::oaep(*hash, *mgf, label), data)
                .map_err(invalid)?,
            CipherPadding::Raw => be_padded(&raw_private(key, &c)?, self.k)
                .ok_or(err(CKR_FUNCTION_FAILED))?
                .to_vec(),
        });
        emit(&plain, out)
    }
}

impl CipherOperation for RsaCipher {
    fn output_len(&self, _input_len: usize) -> OutputLen {
        match (self.direction, &self.padding) {
            (Direction::Encrypt, _) | (Direction::Decrypt, CipherPadding::Raw) => {
                OutputLen::Exact(self.k)
            }
            (Direction::Decrypt, _) => OutputLen::AtMost(self.max_plain()),
        }
    }

    fn process(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        match self.direction {
            Direction::Encrypt => self.encrypt(data, out),
            Direction::Decrypt => self.decrypt(data, out),
        }
    }

    fn update_len(&self, _input_len: usize) -> OutputLen {
        OutputLen::Exact(0)
    }

    /// Single-part only: `CKR_FUNCTION_NOT_SUPPORTED`.
    fn update(&mut self, _data: &[u8], _out: &mut [u8]) -> Result<usize> {
        Err(err(CKR_FUNCTION_NOT_SUPPORTED))
    }

    fn final_len(&self) -> OutputLen {
        OutputLen::Exact(0)
    }

    /// Single-part only: `CKR_FUNCTION_NOT_SUPPORTED`.
    fn finish(&mut self, _out: &mut [u8]) -> Result<usize> {
        Err(err(CKR_FUNCTION_NOT_SUPPORTED))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;

    /// One 2048-bit key for the unit tests (generation is the slow part).
    fn key() -> &'static RsaPrivateKey {
        static KEY: OnceLock<RsaPrivateKey> = OnceLock::new();
        KEY.get_or_init(|| {
            let mut t = Attributes::new();
            t.set_ulong(CKA_MODULUS_BITS, 2048);
            let g = generate(&t).unwrap();
            let get = |ty| Ok(g.private.bytes(ty).map(|v| Zeroizing::new(v.to_vec())));
            private_from(&get).unwrap()
        })
    }

    fn materials() -> (Arc<KeyMaterial>, Arc<KeyMaterial>) {
        let k = key().clone();
        let public = k.to_public_key();
        (
            Arc::new(private_material(k)),
            Arc::new(public_material(public)),
        )
    }

    fn pss(
        hash: CK_MECHANISM_TYPE,
        mgf: CK_RSA_PKCS_MGF_TYPE,
        salt_len: CK_ULONG,
    ) -> Param<'static> {
        Param::Pss {
            hash,
            mgf,
            salt_len,
        }
    }

    #[test]
    fn integer_helpers() {
        let m = BigUint::from(3233u32);
        let inv = mod_inverse(&BigUint::from(17u32), &BigUint::from(780u32)).unwrap();
        assert_eq!(inv, BigUint::from(413u32));
        assert!(mod_inverse(&BigUint::from(6u32), &BigUint::from(9u32)).is_none());
        assert_eq!(gcd(&m, &BigUint::from(122u32)), BigUint::from(61u32));
        assert_eq!(*be_padded(&BigUint::from(258u32), 4).unwrap(), [0, 0, 1, 2]);
        assert!(be_padded(&BigUint::from(1u32 << 20), 2).is_none());
        // Prime recovery, including a small e that the crate's method rejects.
        let k = key();
        let (p, q) = recover_primes(k.n(), k.e(), k.d()).unwrap();
        assert_eq!(&p * &q, *k.n());
        assert!(k.primes().contains(&p) && k.primes().contains(&q));
        let e3 = RsaPrivateKey::new_with_exp(&mut SysRng, 1024, &BigUint::from(3u32)).unwrap();
        let (p, q) = recover_primes(e3.n(), e3.e(), e3.d()).unwrap();
        assert_eq!(&p * &q, *e3.n());
    }

    #[test]
    fn every_signature_mechanism_round_trips() {
        let (private, public) = materials();
        let digest_of = |h: CK_MECHANISM_TYPE, m: &[u8]| {
            let mut d = DigestOp::new(h).unwrap();
            d.update(m);
            let mut out = [0u8; 64];
            let n = d.finish(&mut out);
            out[..n].to_vec()
        };
        let hashes = [
            (
                CKM_SHA_1,
                CKG_MGF1_SHA1,
                CKM_SHA1_RSA_PKCS,
                CKM_SHA1_RSA_PKCS_PSS,
            ),
            (
                CKM_SHA224,
                CKG_MGF1_SHA224,
                CKM_SHA224_RSA_PKCS,
                CKM_SHA224_RSA_PKCS_PSS,
            ),
            (
                CKM_SHA256,
                CKG_MGF1_SHA256,
                CKM_SHA256_RSA_PKCS,
                CKM_SHA256_RSA_PKCS_PSS,
            ),
            (
                CKM_SHA384,
                CKG_MGF1_SHA384,
                CKM_SHA384_RSA_PKCS,
                CKM_SHA384_RSA_PKCS_PSS,
            ),
            (
                CKM_SHA512,
                CKG_MGF1_SHA512,
                CKM_SHA512_RSA_PKCS,
                CKM_SHA512_RSA_PKCS_PSS,
            ),
        ];
        let msg = b"the message";
        for (h, mgf, pkcs, pss_mech) in hashes {
            let mut cases = vec![
                (Mechanism::plain(pkcs), msg.to_vec()),
                (
                    Mechanism {
                        ty: pss_mech,
                        param: pss(h, mgf, 20),
                    },
                    msg.to_vec(),
                ),
                (
                    Mechanism {
                        ty: CKM_RSA_PKCS_PSS,
                        param: pss(h, mgf, 0),
                    },
                    digest_of(h, msg),
                ),
            ];
            if h == CKM_SHA256 {
                cases.push((Mechanism::plain(CKM_RSA_PKCS), b"raw input".to_vec()));
                cases.push((Mechanism::plain(CKM_RSA_X_509), b"raw integer".to_vec()));
            }
            for (mech, data) in cases {
                let mut s = RsaSign::new(&mech, private.clone()).unwrap();
                let mut sig = vec![0u8; s.output_len()];
                assert_eq!(s.sign(&data, &mut sig).unwrap(), 256);
                let mut v = RsaVerify::new(&mech, public.clone()).unwrap();
                v.verify(&data, &sig).unwrap();
                let mut bad = sig.clone();
                bad[100] ^= 1;
                let mut v = RsaVerify::new(&mech, public.clone()).unwrap();
                assert_eq!(
                    v.verify(&data, &bad).unwrap_err().rv(),
                    CKR_SIGNATURE_INVALID,
                    "{:#x}",
                    mech.ty
                );
                let mut v = RsaVerify::new(&mech, public.clone()).unwrap();
                assert_eq!(
                    v.verify(&data, &sig[1..]).unwrap_err().rv(),
                    CKR_SIGNATURE_LEN_RANGE
                );
            }
            // Multi-part equals single-part (PKCS #1 v1.5 is deterministic).
            let mech = Mechanism::plain(pkcs);
            let mut s = RsaSign::new(&mech, private.clone()).unwrap();
            let mut one = vec![0u8; 256];
            s.sign(msg, &mut one).unwrap();
            let mut s = RsaSign::new(&mech, private.clone()).unwrap();
            s.update(&msg[..3]).unwrap();
            s.update(&msg[3..]).unwrap();
            let mut two = vec![0u8; 256];
            s.finish(&mut two).unwrap();
            assert_eq!(one, two);
        }
    }

    #[test]
    fn parameter_and_length_checks() {
        let (private, public) = materials();
        let param_invalid = |mech: Mechanism<'_>| {
            assert_eq!(
                RsaSign::new(&mech, private.clone()).err().unwrap().rv(),
                CKR_MECHANISM_PARAM_INVALID,
                "{mech:?}"
            );
        };
        param_invalid(Mechanism::plain(CKM_RSA_PKCS_PSS));
        param_invalid(Mechanism {
            ty: CKM_SHA256_RSA_PKCS_PSS,
            param: pss(CKM_SHA384, CKG_MGF1_SHA384, 0),
        });
        param_invalid(Mechanism {
            ty: CKM_RSA_PKCS_PSS,
            param: pss(CKM_SHA256, CKG_MGF1_SHA1, 0),
        });
        param_invalid(Mechanism {
            ty: CKM_RSA_PKCS_PSS,
            param: pss(CKM_MD5, CKG_MGF1_SHA1, 0),
        });
        // 256 − 32 − 2 = 222 is the largest salt for a 2048-bit key.
        param_invalid(Mechanism {
            ty: CKM_RSA_PKCS_PSS,
            param: pss(CKM_SHA256, CKG_MGF1_SHA256, 223),
        });
        assert!(
            RsaSign::new(
                &Mechanism {
                    ty: CKM_RSA_PKCS_PSS,
                    param: pss(CKM_SHA256, CKG_MGF1_SHA256, 222),
                },
                private.clone()
            )
            .is_ok()
        );
        // Wrong key types.
        assert_eq!(
            RsaSign::new(&Mechanism::plain(CKM_RSA_PKCS), public.clone())
                .err()
                .unwrap()
                .rv(),
            CKR_KEY_TYPE_INCONSISTENT
        );
        assert_eq!(
            RsaVerify::new(&Mechanism::plain(CKM_RSA_PKCS), private.clone())
                .err()
                .unwrap()
                .rv(),
            CKR_KEY_TYPE_INCONSISTENT
        );
        // Raw PKCS #1 input limit k − 11, single-part only.
        let mut s = RsaSign::new(&Mechanism::plain(CKM_RSA_PKCS), private.clone()).unwrap();
        let mut sig = [0u8; 256];
        assert_eq!(
            s.sign(&[1u8; 246], &mut sig).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
        assert!(s.sign(&[1u8; 245], &mut sig).is_ok());
        assert_eq!(s.update(b"x").unwrap_err().rv(), CKR_FUNCTION_NOT_SUPPORTED);
        // PSS without hashing needs exactly the hash length.
        let mech = Mechanism {
            ty: CKM_RSA_PKCS_PSS,
            param: pss(CKM_SHA256, CKG_MGF1_SHA256, 32),
        };
        let mut s = RsaSign::new(&mech, private.clone()).unwrap();
        assert_eq!(
            s.sign(&[1u8; 31], &mut sig).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
        // X.509: at most k bytes, below the modulus.
        let mut s = RsaSign::new(&Mechanism::plain(CKM_RSA_X_509), private.clone()).unwrap();
        assert_eq!(
            s.sign(&[0xffu8; 256], &mut sig).unwrap_err().rv(),
            CKR_DATA_INVALID
        );
        assert_eq!(
            s.sign(&[1u8; 257], &mut sig).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
    }

    #[test]
    fn ciphers_round_trip_and_reject() {
        let (private, public) = materials();
        let hashes = [CKM_SHA_1, CKM_SHA224, CKM_SHA256, CKM_SHA384, CKM_SHA512];
        let mgfs = [
            CKG_MGF1_SHA1,
            CKG_MGF1_SHA224,
            CKG_MGF1_SHA256,
            CKG_MGF1_SHA384,
            CKG_MGF1_SHA512,
        ];
        let mut mechs = vec![
            Mechanism::plain(CKM_RSA_PKCS),
            Mechanism::plain(CKM_RSA_X_509),
        ];
        for h in hashes {
            for g in mgfs {
                mechs.push(Mechanism {
                    ty: CKM_RSA_PKCS_OAEP,
                    param: Param::Oaep {
                        hash: h,
                        mgf: g,
                        label: b"\xffnot utf-8",
                    },
                });
            }
        }
        for mech in &mechs {
            let data = if mech.ty == CKM_RSA_X_509 {
                let mut d = vec![0u8; 256];
                d[200..].fill(0x42);
                d
            } else {
                b"secret".to_vec()
            };
            let mut e = RsaCipher::new(mech, public.clone(), Direction::Encrypt).unwrap();
            assert_eq!(e.output_len(data.len()), OutputLen::Exact(256));
            let mut ct = vec![0u8; 256];
            assert_eq!(e.process(&data, &mut ct).unwrap(), 256);
            let mut d = RsaCipher::new(mech, private.clone(), Direction::Decrypt).unwrap();
            let mut pt = vec![0u8; d.output_len(256).bound()];
            let n = d.process(&ct, &mut pt).unwrap();
            assert_eq!(&pt[..n], &data[..]);
            if mech.ty != CKM_RSA_X_509 {
                ct[5] ^= 1;
                let mut d = RsaCipher::new(mech, private.clone(), Direction::Decrypt).unwrap();
                assert_eq!(
                    d.process(&ct, &mut pt).unwrap_err().rv(),
                    CKR_ENCRYPTED_DATA_INVALID
                );
            }
            let mut d = RsaCipher::new(mech, private.clone(), Direction::Decrypt).unwrap();
            assert_eq!(
                d.process(&ct[1..], &mut pt).unwrap_err().rv(),
                CKR_ENCRYPTED_DATA_LEN_RANGE
            );
            assert_eq!(
                d.update(&ct, &mut pt).unwrap_err().rv(),
                CKR_FUNCTION_NOT_SUPPORTED
            );
        }
        // A different label does not decrypt.
        let with = |label: &'static [u8]| Mechanism {
            ty: CKM_RSA_PKCS_OAEP,
            param: Param::Oaep {
                hash: CKM_SHA256,
                mgf: CKG_MGF1_SHA256,
                label,
            },
        };
        let mut e = RsaCipher::new(&with(b"a"), public.clone(), Direction::Encrypt).unwrap();
        let mut ct = vec![0u8; 256];
        e.process(b"x", &mut ct).unwrap();
        let mut d = RsaCipher::new(&with(b"b"), private.clone(), Direction::Decrypt).unwrap();
        assert_eq!(
            d.process(&ct, &mut [0u8; 256]).unwrap_err().rv(),
            CKR_ENCRYPTED_DATA_INVALID
        );
        // Length limits and parameters.
        let mut e = RsaCipher::new(
            &Mechanism::plain(CKM_RSA_PKCS),
            public.clone(),
            Direction::Encrypt,
        )
        .unwrap();
        assert_eq!(
            e.process(&[0u8; 246], &mut ct).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
        let mut e = RsaCipher::new(&with(b""), public.clone(), Direction::Encrypt).unwrap();
        assert_eq!(
            e.process(&[0u8; 191], &mut ct).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
        assert!(e.process(&[0u8; 190], &mut ct).is_ok());
        for param in [
            Param::None,
            Param::Oaep {
                hash: CKM_MD5,
                mgf: CKG_MGF1_SHA1,
                label: b"",
            },
            Param::Oaep {
                hash: CKM_SHA_1,
                mgf: 0x77,
                label: b"",
            },
        ] {
            let mech = Mechanism {
                ty: CKM_RSA_PKCS_OAEP,
                param,
            };
            assert_eq!(
                RsaCipher::new(&mech, public.clone(), Direction::Encrypt)
                    .err()
                    .unwrap()
                    .rv(),
                CKR_MECHANISM_PARAM_INVALID
            );
        }
        assert_eq!(
            RsaCipher::new(&Mechanism::plain(CKM_RSA_PKCS), private, Direction::Encrypt)
                .err()
                .unwrap()
                .rv(),
            CKR_KEY_TYPE_INCONSISTENT
        );
    }

    #[test]
    fn import_completes_and_checks_components() {
        let k = key();
        let full = {
            let mut a = Attributes::new();
            set_private(k, &mut a).unwrap();
            a
        };
        // Only n, e, d (with a leading zero byte on n): everything is filled in.
        let mut a = Attributes::new();
        let mut n = vec![0u8];
        n.extend_from_slice(&be(k.n()));
        a.set_bytes(CKA_MODULUS, &n);
        a.set_bytes(CKA_PUBLIC_EXPONENT, &be(k.e()));
        a.set_bytes(CKA_PRIVATE_EXPONENT, &be(k.d()));
        complete_import(CKO_PRIVATE_KEY, &mut a).unwrap();
        for ty in [CKA_MODULUS, CKA_PUBLIC_EXPONENT, CKA_PRIVATE_EXPONENT] {
            assert_eq!(a.bytes(ty), full.bytes(ty));
        }
        let mut primes = [a.bytes(CKA_PRIME_1), a.bytes(CKA_PRIME_2)];
        let mut want = [full.bytes(CKA_PRIME_1), full.bytes(CKA_PRIME_2)];
        primes.sort();
        want.sort();
        assert_eq!(primes, want);
        assert!(a.contains(CKA_COEFFICIENT) && a.contains(CKA_EXPONENT_2));
        // n, d and the primes: e is recovered.
        let mut a = full.clone();
        a.remove(CKA_PUBLIC_EXPONENT);
        complete_import(CKO_PRIVATE_KEY, &mut a).unwrap();
        assert_eq!(
            a.bytes(CKA_PUBLIC_EXPONENT),
            full.bytes(CKA_PUBLIC_EXPONENT)
        );
        // Inconsistent values are rejected.
        let mut a = full.clone();
        a.set_bytes(CKA_COEFFICIENT, &[1, 2, 3]);
        assert_eq!(
            complete_import(CKO_PRIVATE_KEY, &mut a).unwrap_err().rv(),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
        let mut a = full.clone();
        a.set_bytes(CKA_PRIME_1, &[0x0b]);
        assert_eq!(
            complete_import(CKO_PRIVATE_KEY, &mut a).unwrap_err().rv(),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
        let mut a = Attributes::new();
        a.set_bytes(CKA_MODULUS, &be(k.n()));
        a.set_bytes(CKA_PRIVATE_EXPONENT, &be(k.d()));
        assert_eq!(
            complete_import(CKO_PRIVATE_KEY, &mut a).unwrap_err().rv(),
            CKR_TEMPLATE_INCOMPLETE
        );
        // Public keys: bits computed, bad exponents and sizes rejected.
        let mut a = Attributes::new();
        a.set_bytes(CKA_MODULUS, &be(k.n()));
        a.set_bytes(CKA_PUBLIC_EXPONENT, &[0, 1, 0, 1]);
        complete_import(CKO_PUBLIC_KEY, &mut a).unwrap();
        assert_eq!(a.ulong(CKA_MODULUS_BITS), Some(2048));
        assert_eq!(a.bytes(CKA_PUBLIC_EXPONENT), Some(&[1u8, 0, 1][..]));
        for e in [&[1u8][..], &[2], &[1, 0, 0]] {
            a.set_bytes(CKA_PUBLIC_EXPONENT, e);
            assert_eq!(
                complete_import(CKO_PUBLIC_KEY, &mut a).unwrap_err().rv(),
                CKR_ATTRIBUTE_VALUE_INVALID
            );
        }
        a.set_bytes(CKA_PUBLIC_EXPONENT, &[3]);
        a.set_bytes(CKA_MODULUS, &be(k.n())[..100]);
        assert_eq!(
            complete_import(CKO_PUBLIC_KEY, &mut a).unwrap_err().rv(),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
    }

    #[test]
    fn pkcs8_round_trip_and_generation_limits() {
        let k = key();
        let mut a = Attributes::new();
        set_private(k, &mut a).unwrap();
        let get = |ty| Ok(a.bytes(ty).map(|v| Zeroizing::new(v.to_vec())));
        let der = to_pkcs8(&get).unwrap();
        let mut back = Attributes::new();
        from_pkcs8(&der, &mut back).unwrap();
        assert_eq!(back, a);
        assert_eq!(
            from_pkcs8(b"junk", &mut back).unwrap_err().rv(),
            CKR_WRAPPED_KEY_INVALID
        );
        let mut t = Attributes::new();
        for bits in [0, 512, 1016, 2047, 16392] {
            t.set_ulong(CKA_MODULUS_BITS, bits);
            assert_eq!(generate(&t).err().unwrap().rv(), CKR_KEY_SIZE_RANGE);
        }
        t.set_ulong(CKA_MODULUS_BITS, 2048);
        for e in [&[1u8][..], &[4], &[1, 0, 0], &[2, 0, 0, 0, 1]] {
            t.set_bytes(CKA_PUBLIC_EXPONENT, e);
            assert_eq!(
                generate(&t).err().unwrap().rv(),
                CKR_ATTRIBUTE_VALUE_INVALID
            );
        }
        assert_eq!(
            generate(&Attributes::new()).err().unwrap().rv(),
            CKR_TEMPLATE_INCOMPLETE
        );
    }
}
