//! The pre-hash functions of HashML-DSA (FIPS 204 §5.4, Algorithm 4) and
//! HashSLH-DSA (FIPS 205 §10.2.2, Algorithm 23): each hash's OID (its DER
//! is part of M′), its output length, and the token-side hashing of the
//! `CKM_HASH_ML_DSA_<hash>` and `CKM_HASH_SLH_DSA_<hash>` mechanisms.

use cryptoki_sys::*;
use sha2::Digest;
use sha3::digest::{ExtendableOutput, Update};

/// A pre-hash function: the `CKM_*` that names it in
/// `CK_HASH_SIGN_ADDITIONAL_CONTEXT.hash`, the last arc of its OID under
/// 2.16.840.1.101.3.4.2 (NIST hash algorithms) and the length of PH(M).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashAlg {
    /// The mechanism naming it.
    pub ckm: CK_MECHANISM_TYPE,
    /// Last OID arc.
    pub arc: u8,
    /// Output length in bytes (SHAKE128: 32, SHAKE256: 64, FIPS 204 §5.4.1).
    pub len: usize,
}

const fn h(ckm: CK_MECHANISM_TYPE, arc: u8, len: usize) -> HashAlg {
    HashAlg { ckm, arc, len }
}

/// The hashes FIPS 204 §5.4.1 lists. The SHAKEs have no digest mechanism
/// in PKCS#11: the `hash` field names them with
/// `CKM_SHAKE_128_KEY_DERIVATION` / `CKM_SHAKE_256_KEY_DERIVATION`.
const HASHES: &[HashAlg] = &[
    h(CKM_SHA256, 0x01, 32),
    h(CKM_SHA384, 0x02, 48),
    h(CKM_SHA512, 0x03, 64),
    h(CKM_SHA224, 0x04, 28),
    h(CKM_SHA512_224, 0x05, 28),
    h(CKM_SHA512_256, 0x06, 32),
    h(CKM_SHA3_224, 0x07, 28),
    h(CKM_SHA3_256, 0x08, 32),
    h(CKM_SHA3_384, 0x09, 48),
    h(CKM_SHA3_512, 0x0a, 64),
    h(CKM_SHAKE_128_KEY_DERIVATION, 0x0b, 32),
    h(CKM_SHAKE_256_KEY_DERIVATION, 0x0c, 64),
];

impl HashAlg {
    /// The hash `ckm` names, if FIPS 204 allows it.
    pub fn of(ckm: CK_MECHANISM_TYPE) -> Option<HashAlg> {
        HASHES.iter().copied().find(|a| a.ckm == ckm)
    }

    /// The hash a `CKM_HASH_ML_DSA_<hash>` mechanism computes.
    pub fn of_mechanism(mech: CK_MECHANISM_TYPE) -> Option<HashAlg> {
        HashAlg::of(match mech {
            CKM_HASH_ML_DSA_SHA224 => CKM_SHA224,
            CKM_HASH_ML_DSA_SHA256 => CKM_SHA256,
            CKM_HASH_ML_DSA_SHA384 => CKM_SHA384,
            CKM_HASH_ML_DSA_SHA512 => CKM_SHA512,
            CKM_HASH_ML_DSA_SHA3_224 => CKM_SHA3_224,
            CKM_HASH_ML_DSA_SHA3_256 => CKM_SHA3_256,
            CKM_HASH_ML_DSA_SHA3_384 => CKM_SHA3_384,
            CKM_HASH_ML_DSA_SHA3_512 => CKM_SHA3_512,
            CKM_HASH_ML_DSA_SHAKE128 => CKM_SHAKE_128_KEY_DERIVATION,
            CKM_HASH_ML_DSA_SHAKE256 => CKM_SHAKE_256_KEY_DERIVATION,
            _ => return None,
        })
    }

    /// The hash a `CKM_HASH_SLH_DSA_<hash>` mechanism computes (the same
    /// ten as HashML-DSA's, PKCS#11 3.2 mechanisms spec).
    pub fn of_slh_mechanism(mech: CK_MECHANISM_TYPE) -> Option<HashAlg> {
        HashAlg::of(match mech {
            CKM_HASH_SLH_DSA_SHA224 => CKM_SHA224,
            CKM_HASH_SLH_DSA_SHA256 => CKM_SHA256,
            CKM_HASH_SLH_DSA_SHA384 => CKM_SHA384,
            CKM_HASH_SLH_DSA_SHA512 => CKM_SHA512,
            CKM_HASH_SLH_DSA_SHA3_224 => CKM_SHA3_224,
            CKM_HASH_SLH_DSA_SHA3_256 => CKM_SHA3_256,
            CKM_HASH_SLH_DSA_SHA3_384 => CKM_SHA3_384,
            CKM_HASH_SLH_DSA_SHA3_512 => CKM_SHA3_512,
            CKM_HASH_SLH_DSA_SHAKE128 => CKM_SHAKE_128_KEY_DERIVATION,
            CKM_HASH_SLH_DSA_SHAKE256 => CKM_SHAKE_256_KEY_DERIVATION,
            _ => return None,
        })
    }

    /// The DER of its OID (06 09 60 86 48 01 65 03 04 02 arc).
    pub fn oid_der(self) -> [u8; 11] {
        [
            0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, self.arc,
        ]
    }
}

/// A running pre-hash PH(M).
#[derive(Clone)]
pub enum Hasher {
    Sha224(sha2::Sha224),
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
    Sha512_224(sha2::Sha512_224),
    Sha512_256(sha2::Sha512_256),
    Sha3_224(sha3::Sha3_224),
    Sha3_256(sha3::Sha3_256),
    Sha3_384(sha3::Sha3_384),
    Sha3_512(sha3::Sha3_512),
    Shake128(sha3::Shake128),
    Shake256(sha3::Shake256),
}

macro_rules! fixed {
    ($self:expr, $h:ident => $fixed:expr, $x:ident => $xof:expr) => {
        match $self {
            Hasher::Sha224($h) => $fixed,
            Hasher::Sha256($h) => $fixed,
            Hasher::Sha384($h) => $fixed,
            Hasher::Sha512($h) => $fixed,
            Hasher::Sha512_224($h) => $fixed,
            Hasher::Sha512_256($h) => $fixed,
            Hasher::Sha3_224($h) => $fixed,
            Hasher::Sha3_256($h) => $fixed,
            Hasher::Sha3_384($h) => $fixed,
            Hasher::Sha3_512($h) => $fixed,
            Hasher::Shake128($x) => $xof,
            Hasher::Shake256($x) => $xof,
        }
    };
}

impl Hasher {
    /// A fresh state of `alg`.
    pub fn new(alg: HashAlg) -> Hasher {
        match alg.ckm {
            CKM_SHA224 => Hasher::Sha224(Default::default()),
            CKM_SHA256 => Hasher::Sha256(Default::default()),
            CKM_SHA384 => Hasher::Sha384(Default::default()),
            CKM_SHA512 => Hasher::Sha512(Default::default()),
            CKM_SHA512_224 => Hasher::Sha512_224(Default::default()),
            CKM_SHA512_256 => Hasher::Sha512_256(Default::default()),
            CKM_SHA3_224 => Hasher::Sha3_224(Default::default()),
            CKM_SHA3_256 => Hasher::Sha3_256(Default::default()),
            CKM_SHA3_384 => Hasher::Sha3_384(Default::default()),
            CKM_SHA3_512 => Hasher::Sha3_512(Default::default()),
            CKM_SHAKE_128_KEY_DERIVATION => Hasher::Shake128(Default::default()),
            _ => Hasher::Shake256(Default::default()),
        }
    }

    /// Adds data.
    pub fn update(&mut self, data: &[u8]) {
        fixed!(self, h => Digest::update(h, data), x => Update::update(x, data))
    }

    /// PH(M), `len` bytes (the hash's length; the SHAKEs' output length).
    pub fn finish(self, len: usize) -> Vec<u8> {
        fixed!(self, h => h.finalize().to_vec(), x => {
            let mut out = vec![0u8; len];
            x.finalize_xof_into(&mut out);
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hash_has_its_length_and_a_distinct_oid() {
        for (i, a) in HASHES.iter().enumerate() {
            assert!(HASHES[i + 1..].iter().all(|b| b.arc != a.arc));
            assert_eq!(Hasher::new(*a).finish(a.len).len(), a.len, "{:#x}", a.ckm);
        }
        assert_eq!(HashAlg::of(CKM_MD5), None);
        assert_eq!(HashAlg::of_mechanism(CKM_ML_DSA), None);
        assert_eq!(HashAlg::of_slh_mechanism(CKM_HASH_ML_DSA_SHA256), None);
        for (ml, slh) in (CKM_HASH_ML_DSA_SHA224..=CKM_HASH_ML_DSA_SHAKE256)
            .zip(CKM_HASH_SLH_DSA_SHA224..=CKM_HASH_SLH_DSA_SHAKE256)
        {
            let a = HashAlg::of_mechanism(ml).unwrap();
            assert_eq!(HashAlg::of_slh_mechanism(slh), Some(a));
        }
        // SHA-256("abc") (FIPS 180-4 example).
        let mut s = Hasher::new(HashAlg::of(CKM_SHA256).unwrap());
        s.update(b"abc");
        assert_eq!(s.finish(32)[..4], [0xba, 0x78, 0x16, 0xbf],);
    }
}
