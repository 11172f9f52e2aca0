//! Security strength of keys, in bits: NIST SP 800-57 Part 1 Rev. 5,
//! §5.6.1.1 Table 2 ("Comparable security strengths of symmetric block
//! cipher and asymmetric-key algorithms") and §5.6.1.2 for HMAC keys.
//!
//! The token compares strengths where one key protects or yields another
//! (`docs/SECURITY.md`, "Key-management policy"): a wrapping key must be at
//! least as strong as the key it wraps, and a key derived from a protected
//! base, or a MAC key, may not be weaker than [`FLOOR_BITS`].

use super::ec::curves::Curve;
use super::material::KeyMaterial;
use cryptoki_sys::*;

/// The least strength of a key derived from a protected base, or of a
/// sensitive MAC key: 112 bits (SP 800-131A Rev. 2, the least strength
/// approved for protecting data today).
pub const FLOOR_BITS: u32 = 112;

/// The strength of an integer-factorisation or finite-field key of
/// `modulus_bits` (SP 800-57 Table 2: 1024 → 80, 2048 → 112, 3072 → 128,
/// 7680 → 192, 15360 → 256; a size between two rows gets the lower one).
pub fn modulus_strength(modulus_bits: usize) -> u32 {
    match modulus_bits {
        15360.. => 256,
        7680.. => 192,
        3072.. => 128,
        2048.. => 112,
        1024.. => 80,
        _ => 0,
    }
}

/// The strength of a key on an elliptic curve: half the bits of its group
/// order (SP 800-57 Table 2, f = 224 → 112, 256 → 128, 384 → 192, 512+ →
/// 256).
pub fn curve_strength(curve: Curve) -> u32 {
    (curve.bits() / 2).min(256) as u32
}

/// The strength of a secret key of `key_type` holding `len` bytes of
/// secret: AES its key length; two- and three-key Triple DES 80 and 112
/// (SP 800-57 Table 2 footnotes; 112 at most for three keys), single DES 56
/// (its effective key bits); a generic secret or HMAC key its length in
/// bits, at most 256 (§5.6.1.2: HMAC's strength is bounded by its key).
pub fn secret_strength(key_type: CK_KEY_TYPE, len: usize) -> u32 {
    let bits = u32::try_from(len.saturating_mul(8)).unwrap_or(u32::MAX);
    match key_type {
        CKK_DES => bits.min(56),
        CKK_DES2 => bits.min(80),
        CKK_DES3 => bits.min(112),
        CKK_AES => bits.min(256),
        _ => bits.min(256),
    }
}

/// The strength of a parsed key (public or private half alike).
pub fn strength(key: &KeyMaterial) -> u32 {
    use ::rsa::traits::PublicKeyParts;
    match key {
        KeyMaterial::Ed25519Private(_)
        | KeyMaterial::Ed25519Public(_)
        | KeyMaterial::X25519Private(..)
        | KeyMaterial::X25519Public(_) => 128,
        // RFC 7748 §1 / RFC 8032 §5.2: curve448's ~224-bit security.
        KeyMaterial::Ed448Private(_)
        | KeyMaterial::Ed448Public(_)
        | KeyMaterial::X448Private(_)
        | KeyMaterial::X448Public(_) => 224,
        KeyMaterial::EcPrivate(k, ..) => curve_strength(k.curve()),
        KeyMaterial::EcPublic(k, ..) => curve_strength(k.curve()),
        KeyMaterial::RsaPrivate(k, ..) => modulus_strength(k.n().bits()),
        KeyMaterial::RsaPublic(k, ..) => modulus_strength(k.n().bits()),
        KeyMaterial::DsaPrivate(k) => {
            modulus_strength(k.verifying_key().components().p().bits() as usize)
        }
        KeyMaterial::DsaPublic(k) => modulus_strength(k.components().p().bits() as usize),
        KeyMaterial::DhPrivate(k) => modulus_strength(k.group().bits()),
        KeyMaterial::DhPublic(k) => modulus_strength(k.group().bits()),
        // FIPS 204 Table 1: categories 2, 3, 5 (ML-DSA-44/65/87).
        KeyMaterial::MlDsaPrivate(k) => k.set().strength(),
        KeyMaterial::MlDsaPublic(k) => k.set().strength(),
        // FIPS 203 §8: categories 1, 3, 5 (ML-KEM-512/768/1024).
        KeyMaterial::MlKemPrivate(k) => k.set().strength(),
        KeyMaterial::MlKemPublic(k) => k.set().strength(),
        // FIPS 205 Table 2: categories 1, 3, 5 (n = 16, 24, 32 bytes).
        KeyMaterial::SlhDsaPrivate(k) => k.set().strength(),
        KeyMaterial::SlhDsaPublic(k) => k.set().strength(),
        KeyMaterial::Aes(k) => secret_strength(CKK_AES, k.bytes().len()),
        KeyMaterial::ChaCha20(k) => secret_strength(CKK_CHACHA20, k.len()),
        KeyMaterial::Des(k) => secret_strength(k.key_type(), k.bytes().len()),
        KeyMaterial::Secret {
            key_type, value, ..
        } => secret_strength(*key_type, value.len()),
        KeyMaterial::Hotp(k) => secret_strength(CKK_HOTP, k.len()),
    }
}

/// True for a single-DES key: it never wraps, whatever it would wrap (56
/// bits fall to exhaustive search).
pub fn is_single_des(key: &KeyMaterial) -> bool {
    matches!(key, KeyMaterial::Des(k) if k.key_type() == CKK_DES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_two_of_sp_800_57() {
        assert_eq!(modulus_strength(1024), 80);
        assert_eq!(modulus_strength(2048), 112);
        assert_eq!(modulus_strength(3072), 128);
        assert_eq!(modulus_strength(4096), 128);
        assert_eq!(modulus_strength(7680), 192);
        assert_eq!(modulus_strength(15360), 256);
        assert_eq!(modulus_strength(512), 0);
        assert_eq!(curve_strength(Curve::P224), 112);
        assert_eq!(curve_strength(Curve::P256), 128);
        assert_eq!(curve_strength(Curve::P384), 192);
        assert_eq!(curve_strength(Curve::P521), 256);
        assert_eq!(secret_strength(CKK_AES, 16), 128);
        assert_eq!(secret_strength(CKK_AES, 32), 256);
        assert_eq!(secret_strength(CKK_DES, 8), 56);
        assert_eq!(secret_strength(CKK_DES2, 16), 80);
        assert_eq!(secret_strength(CKK_DES3, 24), 112);
        assert_eq!(secret_strength(CKK_GENERIC_SECRET, 1), 8);
        assert_eq!(secret_strength(CKK_SHA256_HMAC, 64), 256);
    }
}
