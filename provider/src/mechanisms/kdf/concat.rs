//! The simple derivations of the mechanisms spec 3.0 §2.42 ("Miscellaneous
//! simple key derivation mechanisms"): concatenating a base key with
//! another key or with data, XOR with data, and extracting a key from a
//! bit string. They take plain values; who may derive what, and the
//! protection the result inherits, is decided by the caller
//! (`api::crypto::derive_key`).

use crate::error::{Result, err};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// `first ‖ second` (§2.42.2–2.42.4: `CKM_CONCATENATE_BASE_AND_KEY`,
/// `_BASE_AND_DATA`, `_DATA_AND_BASE`).
pub fn concatenate(first: &[u8], second: &[u8]) -> Zeroizing<Vec<u8>> {
    let mut out = Zeroizing::new(Vec::with_capacity(first.len() + second.len()));
    out.extend_from_slice(first);
    out.extend_from_slice(second);
    out
}

/// `base ⊕ data` over the shorter of the two (§2.42.5
/// `CKM_XOR_BASE_AND_DATA`).
pub fn xor(base: &[u8], data: &[u8]) -> Zeroizing<Vec<u8>> {
    Zeroizing::new(base.iter().zip(data).map(|(a, b)| a ^ b).collect())
}

/// `len` bytes taken from the bit string of `base`, starting at bit
/// `first_bit` (bit 0 is the most significant bit of the first byte) and
/// wrapping around its end (§2.42.6 `CKM_EXTRACT_KEY_FROM_KEY`; the spec's
/// example: 16 bits from bit 21 of 0x329F84A9 are 0x9526).
#[allow(clippy::unnecessary_cast)] // CK_ULONG is 32 bits wide on some platforms
pub fn extract(base: &[u8], first_bit: CK_ULONG, len: usize) -> Result<Zeroizing<Vec<u8>>> {
    let bits = base.len() as u64 * 8;
    if bits == 0 {
        return Err(err(CKR_KEY_SIZE_RANGE));
    }
    // Spec: the index must lie inside the base key.
    if first_bit as u128 >= u128::from(bits) {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    let bit = |i: u64| -> u8 {
        let i = i % bits;
        (base[(i / 8) as usize] >> (7 - i % 8)) & 1
    };
    let mut out = Zeroizing::new(vec![0u8; len]);
    for (n, byte) in out.iter_mut().enumerate() {
        let start = first_bit as u64 + n as u64 * 8;
        *byte = (0..8).fold(0u8, |acc, k| (acc << 1) | bit(start + k));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specs_extraction_example() {
        let key = [0x32, 0x9F, 0x84, 0xA9];
        assert_eq!(*extract(&key, 21, 2).unwrap(), [0x95, 0x26]);
        // Whole bytes at a byte boundary, and wrapping around twice.
        assert_eq!(*extract(&key, 8, 2).unwrap(), [0x9F, 0x84]);
        assert_eq!(
            *extract(&key, 0, 9).unwrap(),
            [0x32, 0x9F, 0x84, 0xA9, 0x32, 0x9F, 0x84, 0xA9, 0x32]
        );
        assert_eq!(
            extract(&key, 32, 1).unwrap_err().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
        assert_eq!(extract(&[], 0, 1).unwrap_err().rv(), CKR_KEY_SIZE_RANGE);
    }

    #[test]
    fn concatenation_and_xor() {
        assert_eq!(*concatenate(b"ab", b"cde"), b"abcde");
        assert_eq!(*xor(&[0xff, 0x0f, 1], &[0x0f, 0x0f]), [0xf0, 0x00]);
    }
}
