//! Finite-field groups for PKCS #3 Diffie-Hellman: the named safe-prime
//! groups (RFC 7919 FFDHE, RFC 3526 MODP; NIST SP 800-56A Rev. 3 §5.5.2
//! and Appendix D) and other safe-prime groups, checked before use.
//!
//! A PKCS #3 object (mechanisms spec 3.0 §2.5.2–§2.5.4) carries p and g but
//! no subgroup order, so the token accepts only safe primes p = 2q + 1 with
//! q prime, where q follows from p: with it every public value can be
//! checked to lie in the order-q subgroup (SP 800-56A §5.6.2.3.1), which
//! defeats small-subgroup attacks on the private value. Sizes are bounded
//! before any arithmetic runs, so hostile parameters cost at most one
//! primality test of a 4096-bit number.

use super::group_primes::*;
use super::legendre::jacobi_vartime;
use crate::error::{Result, err};
use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, Resize};
use crypto_primes::{Flavor, is_prime};
use cryptoki_sys::*;
use std::sync::{Arc, LazyLock};

/// Smallest prime accepted, in bits (SP 800-56A Rev. 3 Appendix D: the
/// smallest approved safe-prime group; SP 800-131A Rev. 2 §5).
pub const MIN_BITS: usize = 2048;
/// Largest prime accepted, in bits (ffdhe8192, MODP 8192).
pub const MAX_BITS: usize = 8192;
/// Largest prime that is not a named group: a safe prime of this size is
/// tested for primality when a key or parameter object is made, and a
/// larger one would make that test (twice BPSW on p and q) cost seconds.
pub const MAX_CHECKED_BITS: usize = 4096;

/// A group: the safe prime p, q = (p − 1) / 2 and a generator g of the
/// order-q subgroup.
#[derive(Debug)]
pub struct Group {
    p: BoxedUint,
    q: BoxedUint,
    g: BoxedUint,
    /// Montgomery parameters of p for secret exponents (constant time).
    params: BoxedMontyParams,
    /// Bit length of p.
    bits: usize,
    /// RFC name of a named group.
    name: Option<&'static str>,
}

/// The named groups' (name, hex prime), all with generator 2.
const NAMED: [(&str, &str); 10] = [
    ("ffdhe2048", FFDHE2048),
    ("ffdhe3072", FFDHE3072),
    ("ffdhe4096", FFDHE4096),
    ("ffdhe6144", FFDHE6144),
    ("ffdhe8192", FFDHE8192),
    ("modp2048", MODP2048),
    ("modp3072", MODP3072),
    ("modp4096", MODP4096),
    ("modp6144", MODP6144),
    ("modp8192", MODP8192),
];

/// The named groups, built on first use.
static NAMED_GROUPS: LazyLock<Vec<Arc<Group>>> = LazyLock::new(|| {
    NAMED
        .iter()
        .map(|(name, hex)| {
            let bits = hex.len() * 4;
            let p = BoxedUint::from_be_hex(hex, bits as u32)
                .into_option()
                .expect("valid named prime");
            let g = BoxedUint::from(2u8).resize(bits as u32);
            Arc::new(Group::new(p, g, bits, Some(name)))
        })
        .collect()
});

/// A big-endian integer without its leading zero bytes.
pub fn trim(bytes: &[u8]) -> &[u8] {
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    &bytes[zeros..]
}

/// Bit length of a big-endian integer.
pub fn bit_len(bytes: &[u8]) -> usize {
    let t = trim(bytes);
    match t.first() {
        None => 0,
        Some(b) => 8 * t.len() - b.leading_zeros() as usize,
    }
}

impl Group {
    fn new(p: BoxedUint, g: BoxedUint, bits: usize, name: Option<&'static str>) -> Group {
        let q = p.wrapping_shr_vartime(1);
        let params = BoxedMontyParams::new(p.to_odd().into_option().expect("a safe prime is odd"));
        Group {
            p,
            q,
            g,
            params,
            bits,
            name,
        }
    }

    /// The group of `prime` and `base` (`CKA_PRIME`, `CKA_BASE`): a named
    /// group, or a safe prime of [`MIN_BITS`] to [`MAX_CHECKED_BITS`] bits
    /// that passes the primality tests, with 1 < g < p − 1 and g^q = 1
    /// mod p. Anything else is `CKR_ATTRIBUTE_VALUE_INVALID`.
    pub fn from_values(prime: &[u8], base: &[u8]) -> Result<Arc<Group>> {
        let bad = || err(CKR_ATTRIBUTE_VALUE_INVALID);
        let bits = bit_len(prime);
        if !(MIN_BITS..=MAX_BITS).contains(&bits) || bit_len(base) > bits {
            return Err(bad());
        }
        let (prime, base) = (trim(prime), trim(base));
        if let Some(named) = NAMED_GROUPS
            .iter()
            .find(|g| g.bits == bits && g.p.to_be_bytes().as_ref() == prime && base == [2])
        {
            return Ok(named.clone());
        }
        if bits > MAX_CHECKED_BITS {
            return Err(bad());
        }
        let precision = bits as u32;
        let p = BoxedUint::from_be_slice(prime, precision).map_err(|_| bad())?;
        let g = BoxedUint::from_be_slice(base, precision).map_err(|_| bad())?;
        if !is_prime(Flavor::Safe, &p) {
            return Err(bad());
        }
        let group = Group::new(p, g, bits, None);
        // g in the order-q subgroup, and not 1 or p − 1 (of order 1 or 2).
        if !group.in_subgroup(&group.g) {
            return Err(bad());
        }
        Ok(Arc::new(group))
    }

    /// Bit length of p.
    pub fn bits(&self) -> usize {
        self.bits
    }

    /// Byte length of p: the length of the shared secret (PKCS #3 §8.2).
    pub fn byte_len(&self) -> usize {
        self.bits.div_ceil(8)
    }

    /// Bit length of q.
    pub fn q_bits(&self) -> usize {
        self.bits - 1
    }

    /// The RFC name of a named group.
    pub fn name(&self) -> Option<&'static str> {
        self.name
    }

    /// p, minimally encoded.
    pub fn prime(&self) -> Vec<u8> {
        minimal(&self.p)
    }

    /// g, minimally encoded.
    pub fn base(&self) -> Vec<u8> {
        minimal(&self.g)
    }

    /// q.
    pub fn order(&self) -> &BoxedUint {
        &self.q
    }

    /// The maximum security strength the group supports, in bits (SP
    /// 800-56A Rev. 3 Appendix D, Table 26 for the named groups; a size
    /// between two rows gets the lower one).
    pub fn strength(&self) -> usize {
        match self.bits {
            8192.. => 200,
            6144.. => 176,
            4096.. => 152,
            3072.. => 128,
            _ => 112,
        }
    }

    /// `value` as an integer of p's precision if it has no more bits than p.
    pub fn integer(&self, value: &[u8]) -> Option<BoxedUint> {
        if bit_len(value) > self.bits {
            return None;
        }
        BoxedUint::from_be_slice(trim(value), self.p.bits_precision()).ok()
    }

    /// True if 1 < y < p − 1 and y^q = 1 mod p (SP 800-56A Rev. 3
    /// §5.6.2.3.1, full public-key validation for safe-prime groups). Every
    /// group here is a safe prime (named, or tested in [`Group::from_values`]),
    /// so y^q = 1 is decided by the Legendre symbol (y|p) = 1 (Euler's
    /// criterion; see `legendre.rs`), in variable time: y and p are
    /// public.
    pub fn in_subgroup(&self, y: &BoxedUint) -> bool {
        let one = BoxedUint::one_with_precision(self.p.bits_precision());
        let p_minus_1 = self.p.wrapping_sub(&one);
        if *y <= one || *y >= p_minus_1 {
            return false;
        }
        jacobi_vartime(y, &self.p) == 1
    }

    /// The same check by exponentiation, y^q = 1 mod p: the reference
    /// the Legendre symbol is tested against.
    #[cfg(test)]
    pub(super) fn in_subgroup_by_power(&self, y: &BoxedUint) -> bool {
        let one = BoxedUint::one_with_precision(self.p.bits_precision());
        let p_minus_1 = self.p.wrapping_sub(&one);
        if *y <= one || *y >= p_minus_1 {
            return false;
        }
        bool::from(
            BoxedMontyForm::new(y.clone(), &self.params)
                .pow(&self.q)
                .retrieve()
                .is_one(),
        )
    }

    /// base^x mod p for a secret exponent x, in constant time over x's bit
    /// length: the exponentiation runs over exactly that many bits whatever
    /// their values. The length is public: it is the key's `CKA_VALUE_BITS`
    /// (the length asked for at generation, whose top bit is set, or that of
    /// an imported x), so a 224-bit x on ffdhe2048 costs 224 squarings.
    pub fn pow_secret(&self, base: &BoxedUint, x: &BoxedUint) -> BoxedUint {
        let base = base.resize(self.p.bits_precision());
        BoxedMontyForm::new(base, &self.params)
            .pow_bounded_exp(x, x.bits())
            .retrieve()
    }

    /// g^x mod p.
    pub fn public_value(&self, x: &BoxedUint) -> BoxedUint {
        self.pow_secret(&self.g, x)
    }

    /// `n` as exactly [`Group::byte_len`] big-endian bytes (leading zeros kept).
    pub fn fixed_bytes(&self, n: &BoxedUint) -> zeroize::Zeroizing<Vec<u8>> {
        let full = zeroize::Zeroizing::new(n.to_be_bytes());
        let start = full.len() - self.byte_len();
        zeroize::Zeroizing::new(full[start..].to_vec())
    }
}

/// The minimal big-endian bytes of `n`.
pub fn minimal(n: &BoxedUint) -> Vec<u8> {
    let b = n.to_be_bytes();
    trim(&b).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every named group is a safe prime of its size with the RFCs' shape
    /// (the top and bottom 64 bits set), g = 2 generates the order-q
    /// subgroup, and `from_values` finds it by value.
    #[test]
    fn named_groups_are_safe_primes_found_by_value() {
        for g in NAMED_GROUPS.iter() {
            let p = g.prime();
            assert_eq!(p.len() * 8, g.bits, "{:?}", g.name);
            assert!(p[..8].iter().chain(&p[p.len() - 8..]).all(|b| *b == 0xff));
            assert!(g.in_subgroup(&g.g), "{:?}", g.name);
            let found = Group::from_values(&p, &[2]).unwrap();
            assert_eq!(found.name, g.name);
            // The same prime with leading zeros and a zero-padded base.
            let mut padded = vec![0, 0];
            padded.extend_from_slice(&p);
            assert_eq!(Group::from_values(&padded, &[0, 2]).unwrap().name, g.name);
        }
        // Primality of the 2048- and 3072-bit primes (the larger ones take
        // seconds in a debug build; they are compared with OpenSSL's in the
        // interop tests).
        for g in NAMED_GROUPS.iter().filter(|g| g.bits <= 3072) {
            assert!(is_prime(Flavor::Safe, &g.p), "{:?}", g.name);
        }
    }

    /// The Legendre-symbol check agrees with y^q = 1 mod p on the edge
    /// values (0, 1, 2, 3, 4, q, q + 1, p − 2, p − 1, p and above, none
    /// of them skipped by the range check alone) and on random values and
    /// random squares (residues), in three named groups and a custom one
    /// (g = 4 on ffdhe2048's prime).
    #[test]
    fn legendre_check_matches_the_power_of_q() {
        let mut groups: Vec<Arc<Group>> = NAMED_GROUPS
            .iter()
            .filter(|g| matches!(g.name, Some("ffdhe2048" | "ffdhe3072" | "modp2048")))
            .cloned()
            .collect();
        groups.push(Group::from_values(&NAMED_GROUPS[0].prime(), &[4]).unwrap());
        let (mut residues, mut non_residues) = (0, 0);
        for g in &groups {
            let precision = g.p.bits_precision();
            let small = |n: u8| BoxedUint::from(n).resize(precision);
            let one = small(1);
            let mut values = vec![
                small(0),
                small(1),
                small(2),
                small(3),
                small(4),
                g.q.clone(),
                g.q.wrapping_add(&one),
                g.p.wrapping_sub(small(2)),
                g.p.wrapping_sub(&one),
                g.p.clone(),
                g.p.wrapping_add(&one),
                g.g.clone(),
            ];
            let mut bytes = vec![0u8; g.byte_len()];
            for i in 0..24 {
                crate::mechanisms::random::os_fill(&mut bytes).unwrap();
                bytes[0] &= 0x7f;
                let r = BoxedUint::from_be_slice(&bytes, precision).unwrap();
                values.push(if i % 2 == 0 {
                    r
                } else {
                    // A square mod p: a residue whenever it is not 0.
                    g.pow_secret(&r, &small(2))
                });
            }
            for y in &values {
                let want = g.in_subgroup_by_power(y);
                assert_eq!(g.in_subgroup(y), want, "{:?} {y:?}", g.name);
                if want {
                    residues += 1;
                } else {
                    non_residues += 1;
                }
            }
        }
        // Both answers were exercised (random values are residues half the time).
        assert!(
            residues > 20 && non_residues > 20,
            "{residues} {non_residues}"
        );
    }

    /// The exponentiation bounded by x's bit length equals the one over a
    /// full-precision exponent, for short and full-length x.
    #[test]
    fn pow_secret_matches_the_full_precision_power() {
        let g = &NAMED_GROUPS[0];
        let mut bytes = vec![0u8; g.byte_len()];
        for len in [1, 8, 28, 29, 100, 255] {
            crate::mechanisms::random::os_fill(&mut bytes[..len]).unwrap();
            bytes[0] |= 0x80;
            let x = BoxedUint::from_be_slice(&bytes[..len], (len * 8).next_multiple_of(64) as u32)
                .unwrap();
            let full = BoxedMontyForm::new(g.g.clone(), &g.params)
                .pow(&x.clone().resize(4096))
                .retrieve();
            assert_eq!(g.public_value(&x), full, "{len}");
        }
    }

    /// A named prime with another generator is checked as a custom group:
    /// p − 2 is a non-residue (−2 is one for p ≡ 7 mod 8: order 2q), p − 1
    /// and 1 are refused, and g = 4 (a square) is accepted.
    #[test]
    fn generators_outside_the_subgroup_are_refused() {
        let p = NAMED_GROUPS[0].prime();
        for g in [vec![1u8], vec![0], p.clone()] {
            assert!(Group::from_values(&p, &g).is_err());
        }
        let mut p_minus_1 = p.clone();
        *p_minus_1.last_mut().unwrap() -= 1;
        assert!(Group::from_values(&p, &p_minus_1).is_err());
        let mut p_minus_2 = p.clone();
        *p_minus_2.last_mut().unwrap() -= 2;
        assert!(Group::from_values(&p, &p_minus_2).is_err());
        let four = Group::from_values(&p, &[4]).unwrap();
        assert_eq!(four.name, None);
    }

    /// Sizes are checked before anything else; a prime that is not safe
    /// (p = named prime + 2, or an even number) is refused.
    #[test]
    fn sizes_and_non_safe_primes_are_refused() {
        assert!(Group::from_values(&[0xff; 128], &[2]).is_err());
        assert!(Group::from_values(&vec![0xff; 1025], &[2]).is_err());
        // A 6144-bit number that is not a named prime is not tested.
        assert!(Group::from_values(&vec![0xff; 768], &[2]).is_err());
        let mut p = NAMED_GROUPS[0].prime();
        *p.last_mut().unwrap() = 0xfd;
        assert!(Group::from_values(&p, &[2]).is_err());
        *p.last_mut().unwrap() = 0xfe;
        assert!(Group::from_values(&p, &[2]).is_err());
    }
}
