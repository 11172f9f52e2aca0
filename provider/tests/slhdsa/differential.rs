//! The module's SLH-DSA against a second, independent implementation (the
//! `fips205` crate): keys it generates import, and deterministic pure and
//! pre-hash signatures with a context (SHA-256 and SHAKE256 hashed by the
//! token, SHA-512 given) are byte for byte its signatures (FIPS 205
//! Algorithms 22 and 23: the framing of M′ with the context and the hash
//! OID), and each side verifies the other's hedged signatures.

use super::*;
use fips205::traits::{SerDes, Signer, Verifier};
use sha2::Digest;

/// DER of id-sha256, id-sha512 and id-shake256 (2.16.840.1.101.3.4.2.1,
/// .3, .12).
const SHA256_OID: [u8; 11] = [6, 9, 0x60, 0x86, 0x48, 1, 0x65, 3, 4, 2, 0x01];
const SHA512_OID: [u8; 11] = [6, 9, 0x60, 0x86, 0x48, 1, 0x65, 3, 4, 2, 0x03];
const SHAKE256_OID: [u8; 11] = [6, 9, 0x60, 0x86, 0x48, 1, 0x65, 3, 4, 2, 0x0c];

macro_rules! compare {
    ($s:expr, $set:expr, $m:ident) => {{
        let s: &Session = $s;
        let (pk, sk) = fips205::$m::try_keygen().unwrap();
        let (pk_bytes, sk_bytes) = (pk.clone().into_bytes(), sk.clone().into_bytes());
        let private = import_private(s, $set, &sk_bytes).unwrap();
        let public = import_public(s, $set, &pk_bytes).unwrap();
        let (msg, ctx) = (b"differential message", b"a context");
        // Pure SLH-DSA, deterministic.
        let ours = s.sign(&deterministic(ctx), private, msg).unwrap();
        assert_eq!(ours, sk.try_sign(msg, ctx, false).unwrap().to_vec());
        // HashSLH-DSA over SHA-256 (token-hashed) and SHAKE256 (given).
        let ph = sha2::Sha256::digest(msg);
        let theirs = sk.try_hash_sign(&ph, ctx, &SHA256_OID, false).unwrap();
        let m = Mechanism::HashSlhDsaSha256(SignAdditionalContext::new(
            HedgeType::DeterministicRequired,
            Some(ctx),
        ));
        assert_eq!(s.sign(&m, private, msg).unwrap(), theirs.to_vec());
        let mut ph = [0u8; 64];
        {
            use sha3::digest::{ExtendableOutput, Update};
            let mut h = sha3::Shake256::default();
            h.update(msg);
            h.finalize_xof_into(&mut ph);
        }
        let theirs = sk.try_hash_sign(&ph, ctx, &SHAKE256_OID, false).unwrap();
        let m = Mechanism::HashSlhDsaShake256(SignAdditionalContext::new(
            HedgeType::DeterministicRequired,
            Some(ctx),
        ));
        assert_eq!(s.sign(&m, private, msg).unwrap(), theirs.to_vec());
        // HashSLH-DSA on a SHA-512 pre-hash the caller gives.
        let ph = sha2::Sha512::digest(msg);
        let theirs = sk.try_hash_sign(&ph, ctx, &SHA512_OID, false).unwrap();
        let m = Mechanism::HashSlhDsa(HashSignAdditionalContext::new(
            HedgeType::DeterministicRequired,
            Some(ctx),
            cryptoki::mechanism::MechanismType::SHA512,
        ));
        assert_eq!(s.sign(&m, private, &ph).unwrap(), theirs.to_vec());
        // Hedged signatures cross over.
        let hedged = slh_dsa(HedgeType::Required, Some(ctx));
        let ours = s.sign(&hedged, private, msg).unwrap();
        assert!(pk.verify(msg, &ours.clone().try_into().unwrap(), ctx));
        assert!(!pk.verify(msg, &ours.try_into().unwrap(), b"another"));
        let theirs = sk.try_sign(msg, ctx, true).unwrap();
        s.verify(&hedged, public, msg, &theirs).unwrap();
    }};
}

#[test]
fn signatures_equal_a_second_implementation() {
    let f = Fixture::new();
    let s = f.user(f.token("fips205"));
    compare!(&s, Set::SHA2_128F, slh_dsa_sha2_128f);
    compare!(&s, Set::SHAKE_128F, slh_dsa_shake_128f);
}
