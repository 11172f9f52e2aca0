//! RSA keys (mechanisms spec §2.1.2–2.1.5): the checks and completion of
//! imported keys, recovery of the primes from `(n, e, d)`, loading an
//! object's key material, key pair generation, and PKCS #8 encoding for
//! key wrapping.

use super::common::{
    SysRng, be, crt_values, gcd, is_zero, mod_inverse, one, uint, valid_public_exponent,
};
use crate::attributes::Attributes;
use crate::error::{Result, err};
use crate::mechanisms::material::GeneratedPair;
use crate::mechanisms::material::{KeyMaterial, ValueOf};
use ::rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use ::rsa::traits::{PrivateKeyParts, PublicKeyParts};
use ::rsa::{BigUint, RsaPrivateKey, RsaPublicKey};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// Smallest modulus accepted, in bits, for private keys, generation and
/// every public-key use but verification.
const MIN_BITS: usize = 1024;
/// Smallest modulus of a legacy public key (512 to 1023 bits): imported for
/// signature verification only, so old certificates can be checked
/// (docs/SECURITY.md, "Legacy RSA public keys").
const LEGACY_MIN_BITS: usize = 512;
/// The usages a legacy public key never has: it neither encrypts nor wraps
/// (confidentiality under a factorable modulus) nor recovers data.
const LEGACY_REFUSED: [CK_ATTRIBUTE_TYPE; 3] = [CKA_ENCRYPT, CKA_WRAP, CKA_VERIFY_RECOVER];

/// `CKR_KEY_SIZE_RANGE` for a legacy public key (below [`MIN_BITS`]): it
/// only verifies signatures; encryption, wrapping and verification with
/// recovery refuse it, whatever its `CKA_ENCRYPT` / `CKA_WRAP` /
/// `CKA_VERIFY_RECOVER` say.
pub(super) fn require_full_size(key: &RsaPublicKey) -> Result<()> {
    if key.n().bits() < MIN_BITS {
        return Err(err(CKR_KEY_SIZE_RANGE));
    }
    Ok(())
}
/// Largest modulus accepted, in bits.
const MAX_BITS: usize = crate::config::RSA_MAX_BITS as usize;
/// Default public exponent (F4).
const F4: u64 = 65537;

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

/// A public key of `min_bits` to [`MAX_BITS`] bits.
fn public_key(n: &[u8], e: &[u8], min_bits: usize) -> Result<RsaPublicKey> {
    let n = uint(n);
    if !(min_bits..=MAX_BITS).contains(&n.bits()) {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    let e = uint(e);
    if !valid_public_exponent(&e) {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    RsaPublicKey::new_with_max_size(n, e, MAX_BITS).map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))
}

/// A private key from the values `get` gives (object attributes).
pub(super) fn private_from(get: ValueOf<'_>) -> Result<RsaPrivateKey> {
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
pub(super) fn private_material(key: RsaPrivateKey) -> KeyMaterial {
    #[cfg(feature = "aws-lc")]
    {
        let aws = key.to_pkcs8_der().ok().and_then(|der| {
            crate::mechanisms::awslc::RsaPrivate::from_pkcs8(der.as_bytes(), key.n().bits())
                .map(Box::new)
        });
        KeyMaterial::RsaPrivate(Box::new(key), aws)
    }
    #[cfg(not(feature = "aws-lc"))]
    KeyMaterial::RsaPrivate(Box::new(key))
}

/// The cached form of a public key (with `aws-lc`: also parsed by aws-lc,
/// for keys it takes).
pub(super) fn public_material(key: RsaPublicKey) -> KeyMaterial {
    #[cfg(feature = "aws-lc")]
    {
        use ::rsa::pkcs8::EncodePublicKey;
        let aws = key.to_public_key_der().ok().and_then(|der| {
            crate::mechanisms::awslc::RsaPublic::from_spki(der.as_bytes(), key.n().bits())
                .map(Box::new)
        });
        KeyMaterial::RsaPublic(Box::new(key), aws)
    }
    #[cfg(not(feature = "aws-lc"))]
    KeyMaterial::RsaPublic(Box::new(key))
}

/// The public key's attributes of the private key `key` (`CKA_MODULUS`,
/// `CKA_PUBLIC_EXPONENT`; `CKM_PUB_KEY_FROM_PRIV_KEY`).
pub fn public_attributes(key: &RsaPrivateKey, out: &mut Attributes) {
    out.set_bytes(CKA_MODULUS, &be(key.n()));
    out.set_bytes(CKA_PUBLIC_EXPONENT, &be(key.e()));
}

/// Parses a public key from its attributes.
pub fn load_public(get: ValueOf<'_>) -> Result<KeyMaterial> {
    let n = get(CKA_MODULUS)?.ok_or(err(CKR_KEY_HANDLE_INVALID))?;
    let e = get(CKA_PUBLIC_EXPONENT)?.ok_or(err(CKR_KEY_HANDLE_INVALID))?;
    public_key(&n, &e, LEGACY_MIN_BITS)
        .map(public_material)
        .map_err(|_| err(CKR_KEY_HANDLE_INVALID))
}

/// Checks an imported RSA key (§2.1.2–2.1.3) and normalises it: modulus of
/// 1024 to 16384 bits (public keys from 512 bits: below 1024 a legacy key
/// that only verifies, its `CKA_ENCRYPT`, `CKA_WRAP` and
/// `CKA_VERIFY_RECOVER` set false), odd public exponent from 3 to 2^33 − 1, consistent
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
            LEGACY_MIN_BITS,
        )?;
        if key.n().bits() < MIN_BITS {
            // Legacy size: verification only, whatever the template or
            // the defaults said.
            for ty in LEGACY_REFUSED {
                attrs.set_flag(ty, false);
            }
        }
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
    public_key(&be(key.n()), &be(key.e()), MIN_BITS)?;
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
    let range = crate::mechanisms::registry::lookup(CKM_RSA_PKCS_KEY_PAIR_GEN)?;
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
        crate::mechanisms::awslc::generate_rsa_pkcs8(bits as usize)
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

#[cfg(test)]
mod tests {
    use super::super::common::be_padded;
    use super::super::tests::key;
    use super::*;

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
        // 800 bits: a legacy public key, verification only; 504 bits: refused.
        a.set_bytes(CKA_PUBLIC_EXPONENT, &[3]);
        // (An odd modulus: the truncated one of a real key may be even.)
        let mut short = be(k.n())[..100].to_vec();
        short[99] |= 1;
        a.set_bytes(CKA_MODULUS, &short);
        for ty in LEGACY_REFUSED {
            a.set_flag(ty, true);
        }
        complete_import(CKO_PUBLIC_KEY, &mut a).unwrap();
        assert_eq!(a.ulong(CKA_MODULUS_BITS), Some(800));
        assert!(LEGACY_REFUSED.iter().all(|&ty| !a.flag(ty)));
        a.set_bytes(CKA_MODULUS, &be(k.n())[..63]);
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
