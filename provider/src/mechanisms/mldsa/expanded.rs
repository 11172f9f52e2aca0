//! Range checks of an expanded ML-DSA private key (skEncode, FIPS 204
//! Algorithm 24) before it is decoded: the crate's skDecode does not
//! validate, so every coefficient of s1 and s2 must lie in [−η, η] (its
//! η-packed value at most 2η, Algorithm 17 BitPack with b = 2η). t0's
//! 13-bit values are all in range.

use super::params::ParamSet;
use crate::error::{Result, err};
use cryptoki_sys::*;

/// (k, ℓ, η) of a parameter set (FIPS 204 Table 1).
fn dimensions(set: ParamSet) -> (usize, usize, u32) {
    match set {
        ParamSet::P44 => (4, 4, 2),
        ParamSet::P65 => (6, 5, 4),
        ParamSet::P87 => (8, 7, 2),
    }
}

/// Checks the length of `value` and the η-packed coefficients of s1 and
/// s2 (`CKR_ATTRIBUTE_VALUE_INVALID` otherwise).
pub fn check(set: ParamSet, value: &[u8]) -> Result<()> {
    if value.len() != set.private_len() {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    let (k, l, eta) = dimensions(set);
    // Bits per coefficient: bitlen(2η) = 3 for η = 2, 4 for η = 4.
    let bits = if eta == 2 { 3 } else { 4 };
    let poly_len = 256 * bits / 8;
    // ρ ‖ K ‖ tr, then s1 (ℓ polynomials) and s2 (k polynomials).
    let packed = &value[128..128 + (k + l) * poly_len];
    let mut acc: u32 = 0;
    let mut have = 0;
    let mut bad = false;
    for &byte in packed {
        acc |= u32::from(byte) << have;
        have += 8;
        while have >= bits {
            bad |= acc & ((1 << bits) - 1) > 2 * eta;
            acc >>= bits;
            have -= bits;
        }
    }
    if bad {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    Ok(())
}
