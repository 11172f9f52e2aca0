//! Batch verification of pure Ed25519 signatures (the vendor interface,
//! `ffi/vendor.rs`) with `verify_strict`'s verdicts.

use crate::error::{Result, err};
use cryptoki_sys::*;
use ed25519_dalek::SIGNATURE_LENGTH as SIG_LEN;
use ed25519_dalek::{Signature, VerifyingKey};
use std::sync::OnceLock;

/// True if the 32 bytes encode `y` below 2^255 − 19 (RFC 8032 §5.1.3 step
/// 1: a larger `y` is not a canonical encoding). The sign bit is ignored.
fn canonical_y(bytes: &[u8; 32]) -> bool {
    // p = 2^255 − 19: little-endian ed ff … ff 7f.
    let mut y = *bytes;
    y[31] &= 0x7f;
    for i in (0..32).rev() {
        let p = match i {
            0 => 0xed,
            31 => 0x7f,
            _ => 0xff,
        };
        if y[i] != p {
            return y[i] < p;
        }
    }
    false
}

/// True if the 32 bytes encode one of the eight points of small order
/// (the 8-torsion subgroup), including the encodings of (0, ±1) with the
/// sign bit set, which decode to the same points.
fn small_order_encoding(bytes: &[u8; 32]) -> bool {
    static ENCODINGS: OnceLock<Vec<[u8; 32]>> = OnceLock::new();
    ENCODINGS
        .get_or_init(|| {
            let mut list = Vec::with_capacity(10);
            for (i, point) in curve25519_dalek::constants::EIGHT_TORSION
                .iter()
                .enumerate()
            {
                let e = point.compress().to_bytes();
                list.push(e);
                // [0]P and [4]P are (0, 1) and (0, −1): x = 0 either sign.
                if i % 4 == 0 {
                    let mut negative_zero = e;
                    negative_zero[31] |= 0x80;
                    list.push(negative_zero);
                }
            }
            list
        })
        .contains(bytes)
}

/// What `verify_strict` refuses before its equation, checked per signature
/// so the batch equation never sees it: a public key of small order, an `R`
/// that is not a canonical encoding or encodes a point of small order. (An
/// `R` that does not decode, or a non-canonical `S`, the batch itself
/// refuses.) Byte comparisons only: no point is decoded twice.
fn strict_precheck(key: &VerifyingKey, sig: &Signature) -> bool {
    let r = sig.r_bytes();
    !key.is_weak() && canonical_y(r) && !small_order_encoding(r)
}

/// Verifies many Ed25519 signatures at once (ed25519-dalek's batch
/// verification: one multi-scalar multiplication for the whole batch).
/// `CKR_OK` only if every signature is valid; `CKR_SIGNATURE_INVALID` if
/// any is not (the batch does not say which: verify one by one to find it).
///
/// The batch gives `C_Verify`'s (`verify_strict`'s) verdicts: each signature
/// first passes the checks `verify_strict` makes before its equation
/// ([`strict_precheck`]), which the batch equation alone would skip — with
/// them, a key at the identity point, `R` = identity and `S` = 0 was
/// accepted for every message. A signature `verify_strict` accepts always
/// passes the batch; the one gap left is a signature whose `R` carries a
/// torsion component of order 2–8 on top of a valid point, which only the
/// holder of the signing key can make and which the batch's random
/// combination may cancel (cofactorless batching cannot be exact there:
/// Chalkias et al., "Taming the many EdDSAs", 2020). `docs/mechanisms.md`
/// says so.
pub fn verify_batch(keys: &[VerifyingKey], messages: &[&[u8]], signatures: &[&[u8]]) -> Result<()> {
    let sigs: Vec<Signature> = signatures
        .iter()
        .map(|s| {
            <&[u8; SIG_LEN]>::try_from(*s)
                .map(Signature::from_bytes)
                .map_err(|_| err(CKR_SIGNATURE_LEN_RANGE))
        })
        .collect::<Result<_>>()?;
    if !keys.iter().zip(&sigs).all(|(k, s)| strict_precheck(k, s)) {
        return Err(err(CKR_SIGNATURE_INVALID));
    }
    ed25519_dalek::verify_batch(messages, &sigs, keys).map_err(|_| err(CKR_SIGNATURE_INVALID))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn strict(key: &VerifyingKey, msg: &[u8], sig: &[u8; 64]) -> bool {
        key.verify_strict(msg, &Signature::from_bytes(sig)).is_ok()
    }

    fn batch(keys: &[VerifyingKey], msgs: &[&[u8]], sigs: &[[u8; 64]]) -> bool {
        let sigs: Vec<&[u8]> = sigs.iter().map(|s| &s[..]).collect();
        verify_batch(keys, msgs, &sigs).is_ok()
    }

    /// The forgery: a key at the identity point, R = identity and
    /// S = 0 satisfies the batch equation for every message, while
    /// `verify_strict` refuses it.
    #[test]
    fn batch_refuses_what_strict_refuses_before_its_equation() {
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let key = VerifyingKey::from_bytes(&identity).unwrap();
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&identity);
        for msg in [&b"anything"[..], b"", b"pay 1000"] {
            assert!(!strict(&key, msg, &sig));
            assert!(!batch(&[key], &[msg], &[sig]));
            // Without the pre-checks the batch equation holds.
            assert!(
                ed25519_dalek::verify_batch(&[msg], &[Signature::from_bytes(&sig)], &[key]).is_ok()
            );
        }
        // A real key with R at a small-order point.
        let signer = SigningKey::from_bytes(&[9; 32]);
        let good = signer.sign(b"m").to_bytes();
        let mut bad_r = good;
        bad_r[..32].copy_from_slice(&identity);
        assert!(!strict(&signer.verifying_key(), b"m", &bad_r));
        assert!(!batch(&[signer.verifying_key()], &[b"m"], &[bad_r]));
    }

    /// Random corruptions of a batch of valid signatures: the batch accepts
    /// exactly when `verify_strict` accepts every signature.
    #[test]
    fn batch_verdicts_equal_strict_verdicts() {
        let signers: Vec<SigningKey> = (1u8..=6)
            .map(|i| SigningKey::from_bytes(&[i; 32]))
            .collect();
        let msgs: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 10 + i as usize]).collect();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..300 {
            let mut keys: Vec<VerifyingKey> = signers.iter().map(|k| k.verifying_key()).collect();
            let mut sigs: Vec<[u8; 64]> = signers
                .iter()
                .zip(&msgs)
                .map(|(k, m)| k.sign(m).to_bytes())
                .collect();
            let mut msgs = msgs.clone();
            let i = (next() % 6) as usize;
            match round % 4 {
                0 => {} // untouched: all valid
                1 => sigs[i][(next() % 64) as usize] ^= 1 << (next() % 8),
                2 => msgs[i].push(0),
                _ => {
                    // Another signer's key in place i (a valid point).
                    keys[i] = signers[(i + 1) % 6].verifying_key();
                }
            }
            let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
            let all_strict = (0..6).all(|j| strict(&keys[j], refs[j], &sigs[j]));
            assert_eq!(batch(&keys, &refs, &sigs), all_strict, "round {round}");
            assert_eq!(all_strict, round % 4 == 0, "round {round}");
        }
    }

    #[test]
    fn small_order_encodings_are_exactly_the_torsion_points() {
        use curve25519_dalek::edwards::CompressedEdwardsY;
        let mut small = 0;
        for b in 0u8..=255 {
            for top in [0u8, 0x80] {
                let mut e = [0u8; 32];
                e[0] = b;
                e[31] = top;
                let decoded = CompressedEdwardsY(e).decompress();
                let is_small = decoded.is_some_and(|p| p.is_small_order());
                assert_eq!(small_order_encoding(&e), is_small, "{e:02x?}");
                small += usize::from(is_small);
            }
        }
        assert!(small >= 2, "identity and (0, -1) in both signs at least");
        for p in curve25519_dalek::constants::EIGHT_TORSION {
            let e = p.compress().to_bytes();
            assert!(small_order_encoding(&e));
            // The other sign: decodes to a small-order point only for x = 0.
            let mut flipped = e;
            flipped[31] ^= 0x80;
            let decoded = CompressedEdwardsY(flipped).decompress();
            assert_eq!(
                small_order_encoding(&flipped),
                decoded.is_some_and(|q| q.is_small_order()),
                "{flipped:02x?}"
            );
        }
        let honest = SigningKey::from_bytes(&[3; 32]).verifying_key();
        assert!(!small_order_encoding(honest.as_bytes()));
    }

    #[test]
    fn canonical_encodings() {
        let mut p = [0xffu8; 32];
        p[0] = 0xed;
        p[31] = 0x7f;
        assert!(!canonical_y(&p), "p itself");
        let mut p_minus_1 = p;
        p_minus_1[0] = 0xec;
        assert!(canonical_y(&p_minus_1));
        assert!(!canonical_y(&[0xff; 32]), "2^255 - 1 (with the sign bit)");
        let mut one = [0u8; 32];
        one[0] = 1;
        assert!(canonical_y(&one));
        one[31] = 0x80;
        assert!(canonical_y(&one), "the sign bit is not part of y");
    }

    #[test]
    fn batch_verification_accepts_good_and_rejects_one_bad() {
        let keys: Vec<SigningKey> = (0..8u8).map(|i| SigningKey::from_bytes(&[i; 32])).collect();
        let messages: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 10 + i as usize]).collect();
        let mut sigs: Vec<[u8; 64]> = keys
            .iter()
            .zip(&messages)
            .map(|(k, m)| k.sign(m).to_bytes())
            .collect();
        let publics: Vec<VerifyingKey> = keys.iter().map(|k| k.verifying_key()).collect();
        let msgs: Vec<&[u8]> = messages.iter().map(|m| m.as_slice()).collect();
        let refs: Vec<&[u8]> = sigs.iter().map(|s| s.as_slice()).collect();
        verify_batch(&publics, &msgs, &refs).unwrap();
        sigs[5][3] ^= 1;
        let refs: Vec<&[u8]> = sigs.iter().map(|s| s.as_slice()).collect();
        assert_eq!(
            verify_batch(&publics, &msgs, &refs).unwrap_err().rv(),
            CKR_SIGNATURE_INVALID
        );
        assert_eq!(
            verify_batch(&publics, &msgs, &refs[..7]).unwrap_err().rv(),
            CKR_SIGNATURE_INVALID,
            "length mismatch"
        );
    }
}
