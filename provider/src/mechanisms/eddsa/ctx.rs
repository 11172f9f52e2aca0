//! Ed25519ctx (RFC 8032 §5.1 with `phflag` = 0 and a non-empty context),
//! which ed25519-dalek does not offer: signing per §5.1.6 and strict
//! verification per §5.1.7 on curve25519-dalek's scalars and points, with
//! `dom2(0, C)` before every hash input.
//!
//! Verification keeps `VerifyingKey::verify_strict`'s rules: `S` must be
//! canonical (below L), `R` must decode, neither `R` nor the public key `A`
//! may be of small order, and the recomputed `R` must equal the signature's
//! encoding byte for byte.

use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use ed25519_dalek::hazmat::ExpandedSecretKey;
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha512};
use zeroize::Zeroizing;

/// RFC 8032 §2: the prefix of `dom2(x, y)`.
const DOM2_PREFIX: &[u8] = b"SigEd25519 no Ed25519 collisions";

/// A SHA-512 state that has absorbed `dom2(0, context)` (RFC 8032 §2:
/// the prefix, the flag octet 0 for Ed25519ctx, the context length octet
/// and the context). `context` is 1 to 255 bytes (checked by the caller).
fn dom2_hasher(context: &[u8]) -> Sha512 {
    debug_assert!((1..=255).contains(&context.len()));
    let mut h = Sha512::new();
    h.update(DOM2_PREFIX);
    h.update([0u8, context.len() as u8]);
    h.update(context);
    h
}

/// A SHA-512 output read as an integer modulo L (RFC 8032 §5.1.6 steps 2
/// and 4: "interpret the 64-octet digest as a little-endian integer").
fn scalar_of(h: Sha512) -> Scalar {
    let mut wide = Zeroizing::new([0u8; 64]);
    // Straight into zeroizing memory: the nonce's hash is secret.
    h.finalize_into((&mut *wide).into());
    Scalar::from_bytes_mod_order_wide(&wide)
}

/// `SHA-512(dom2(0, C) || R || A || M)` mod L, the challenge `k` of
/// RFC 8032 §5.1.6 step 4 and §5.1.7 step 2.
fn challenge(context: &[u8], r: &[u8; 32], a: &[u8; 32], message: &[u8]) -> Scalar {
    let mut h = dom2_hasher(context);
    h.update(r);
    h.update(a);
    h.update(message);
    scalar_of(h)
}

/// Signs `message` with Ed25519ctx (RFC 8032 §5.1.6). The expanded secret
/// (the clamped scalar `s` and the `prefix`, §5.1.5) lives in zeroizing
/// memory only.
pub fn sign(key: &SigningKey, context: &[u8], message: &[u8]) -> [u8; 64] {
    // §5.1.5 steps 1–2: h = SHA-512(secret); s = clamp(h[0..32]); prefix = h[32..64].
    let mut h = Zeroizing::new([0u8; 64]);
    Sha512::new()
        .chain_update(key.as_bytes())
        .finalize_into((&mut *h).into());
    let expanded = ExpandedSecretKey::from_bytes(&h);
    let public = key.verifying_key().to_bytes();
    // §5.1.6 step 2: r = SHA-512(dom2(F, C) || prefix || PH(M)) mod L.
    let mut hr = dom2_hasher(context);
    hr.update(expanded.hash_prefix);
    hr.update(message);
    let r = Zeroizing::new(scalar_of(hr));
    // Step 3: R = [r]B.
    let big_r = EdwardsPoint::mul_base(&r).compress().to_bytes();
    // Steps 4–5: k = SHA-512(dom2(F, C) || R || A || PH(M)); S = (r + k * s) mod L.
    let k = challenge(context, &big_r, &public, message);
    let s = k * expanded.scalar + *r;
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(&big_r);
    out[32..].copy_from_slice(s.as_bytes());
    out
}

/// Verifies an Ed25519ctx signature (RFC 8032 §5.1.7) with
/// `verify_strict`'s rules (see the module docs).
pub fn verify_strict(key: &VerifyingKey, context: &[u8], message: &[u8], sig: &[u8; 64]) -> bool {
    let r_bytes: [u8; 32] = sig[..32].try_into().expect("64 bytes");
    let s_bytes: [u8; 32] = sig[32..].try_into().expect("64 bytes");
    // §5.1.7 step 1: S must be below L.
    let Some(s) = Option::<Scalar>::from(Scalar::from_canonical_bytes(s_bytes)) else {
        return false;
    };
    let Some(r) = CompressedEdwardsY(r_bytes).decompress() else {
        return false;
    };
    let Some(a) = CompressedEdwardsY(key.to_bytes()).decompress() else {
        return false;
    };
    if r.is_small_order() || a.is_small_order() {
        return false;
    }
    // Steps 2–3 (cofactorless, as verify_strict): [S]B − [k]A must encode as R.
    let k = challenge(context, &r_bytes, key.as_bytes(), message);
    EdwardsPoint::vartime_double_scalar_mul_basepoint(&k, &(-a), &s).compress()
        == CompressedEdwardsY(r_bytes)
}
