//! The Jacobi symbol of two public integers, for checking peers' values.
//!
//! For a safe prime p = 2q + 1 (q prime) the group Z_p^* has order 2q, and
//! its subgroup of order q is the set of quadratic residues: by Euler's
//! criterion y^q = y^((p−1)/2) ≡ (y|p) mod p, the Legendre symbol, which
//! is 1 exactly when y is a non-zero square mod p. So for 1 < y < p − 1
//! the full public-key validation of SP 800-56A Rev. 3 §5.6.2.3.1 step 2
//! (y^q = 1 mod p) holds exactly when (y|p) = 1, and the symbol costs a
//! binary GCD instead of an exponentiation by the ~2047-bit q.
//!
//! The symbol is computed as the Jacobi symbol (which equals the Legendre
//! symbol for a prime modulus) with the binary algorithm (Cohen, "A Course
//! in Computational Algebraic Number Theory", Algorithm 1.4.10, with
//! subtraction in place of division; Shallit and Sorenson 1993): factors
//! of 2 are removed with (2|n) = −1 exactly when n ≡ ±3 mod 8, and odd
//! arguments swapped with quadratic reciprocity, (a|n) = −(n|a) exactly
//! when a ≡ n ≡ 3 mod 4. It runs in variable time: both arguments must be
//! public (a peer's public value and the group's prime are).

use crypto_bigint::BoxedUint;
use std::cmp::Ordering;

/// The Jacobi symbol (a|n) of public integers for odd n > 0: 1 or −1 when
/// gcd(a, n) = 1, else 0. Variable time; at most bits(a) + bits(n)
/// subtract-and-shift rounds, each over the arguments' current length.
pub fn jacobi_vartime(a: &BoxedUint, n: &BoxedUint) -> i8 {
    let mut a = words(a);
    let mut n = words(n);
    assert!(n.first().is_some_and(|w| w & 1 == 1), "n must be odd");
    let mut symbol = 1i8;
    loop {
        if a.is_empty() {
            return if n == [1] { symbol } else { 0 };
        }
        let zeros = trailing_zeros(&a);
        shift_right(&mut a, zeros);
        // (2|n) = −1 for n ≡ 3, 5 mod 8.
        if zeros & 1 == 1 && matches!(n[0] & 7, 3 | 5) {
            symbol = -symbol;
        }
        // Both odd: (a|n) = (n|a), negated when a ≡ n ≡ 3 mod 4.
        if compare(&a, &n) == Ordering::Less {
            std::mem::swap(&mut a, &mut n);
            if a[0] & 3 == 3 && n[0] & 3 == 3 {
                symbol = -symbol;
            }
        }
        // a ≥ n, both odd: (a|n) = (a − n|n), and a − n is even.
        subtract(&mut a, &n);
    }
}

/// The 64-bit little-endian words of `n` without leading zero words.
fn words(n: &BoxedUint) -> Vec<u64> {
    let bytes = n.to_le_bytes();
    let mut out: Vec<u64> = bytes
        .chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect();
    trim(&mut out);
    out
}

fn trim(n: &mut Vec<u64>) {
    while n.last() == Some(&0) {
        n.pop();
    }
}

/// Trailing zero bits of a non-zero trimmed number.
fn trailing_zeros(n: &[u64]) -> usize {
    let zero_words = n.iter().take_while(|w| **w == 0).count();
    zero_words * 64 + n[zero_words].trailing_zeros() as usize
}

/// n >>= shift, trimmed.
fn shift_right(n: &mut Vec<u64>, shift: usize) {
    let (words, bits) = (shift / 64, shift % 64);
    n.drain(..words);
    if bits != 0 {
        for i in 0..n.len() {
            let high = n.get(i + 1).map_or(0, |w| w << (64 - bits));
            n[i] = (n[i] >> bits) | high;
        }
    }
    trim(n);
}

/// Compares trimmed numbers.
fn compare(a: &[u64], b: &[u64]) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.iter().rev().cmp(b.iter().rev()))
}

/// a −= b for a ≥ b, trimmed.
fn subtract(a: &mut Vec<u64>, b: &[u64]) {
    let mut borrow = false;
    for (i, w) in a.iter_mut().enumerate() {
        let (d, b1) = w.overflowing_sub(b.get(i).copied().unwrap_or(0));
        let (d, b2) = d.overflowing_sub(u64::from(borrow));
        *w = d;
        borrow = b1 || b2;
    }
    debug_assert!(!borrow, "a < b");
    trim(a);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(n: u128) -> BoxedUint {
        BoxedUint::from(n)
    }

    /// Naive Jacobi symbol of small numbers from Euler's criterion on each
    /// prime factor of n (trial division).
    fn jacobi_by_euler(a: u64, n: u64) -> i8 {
        let mut result = 1i8;
        let mut m = n;
        let mut p = 3;
        while m > 1 {
            if m.is_multiple_of(p) {
                m /= p;
                let r = pow_mod(a % p, (p - 1) / 2, p);
                result *= match r {
                    0 => 0,
                    1 => 1,
                    _ => -1,
                };
            } else {
                p += 2;
            }
        }
        result
    }

    fn pow_mod(b: u64, mut e: u64, m: u64) -> u64 {
        let (mut r, mut b, m) = (1u128, u128::from(b) % u128::from(m), u128::from(m));
        while e > 0 {
            if e & 1 == 1 {
                r = r * b % m;
            }
            b = b * b % m;
            e >>= 1;
        }
        r as u64
    }

    /// Every a < 200 against every odd n < 200, and a few a ≥ n.
    #[test]
    fn small_values_match_eulers_criterion() {
        for n in (1u64..200).step_by(2) {
            for a in 0u64..(2 * n + 3) {
                assert_eq!(
                    jacobi_vartime(&big(a.into()), &big(n.into())),
                    jacobi_by_euler(a, n),
                    "({a}|{n})"
                );
            }
        }
    }

    /// Two-word values: multiplicativity (ab|n) = (a|n)(b|n) and
    /// periodicity (a + n|n) = (a|n) on random odd n of up to 126 bits
    /// (the comparison with y^q on the named groups is in `groups`).
    #[test]
    fn multiword_identities_hold() {
        let next = || {
            let mut w = [0u8; 8];
            crate::mechanisms::random::os_fill(&mut w).unwrap();
            u64::from_le_bytes(w)
        };
        for _ in 0..200 {
            let n = (u128::from(next()) << 64 | u128::from(next())) >> 2 | 1;
            let a = u128::from(next() >> 1);
            let b = u128::from(next() >> 1);
            let (na, nb, nn) = (big(a), big(b), big(n));
            let ab = big(a * b % n);
            assert_eq!(
                jacobi_vartime(&ab, &nn),
                jacobi_vartime(&na, &nn) * jacobi_vartime(&nb, &nn)
            );
            let shifted = big(a + n);
            assert_eq!(jacobi_vartime(&shifted, &nn), jacobi_vartime(&na, &nn));
        }
    }
}
