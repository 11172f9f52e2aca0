//! The SLH-DSA parameter sets (FIPS 205 §11 Table 2; PKCS#11 3.2
//! mechanisms spec, `CKA_PARAMETER_SET` values `CKP_SLH_DSA_*`), their
//! encoding sizes, OIDs (RFC 9909) and security strengths.

use crate::error::{Result, err};
use cryptoki_sys::*;

/// An SLH-DSA parameter set: hash family (SHA2 / SHAKE), security level
/// (128 / 192 / 256) and the small (`s`) or fast (`f`) trade-off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum ParamSet {
    Sha2_128s,
    Shake128s,
    Sha2_128f,
    Shake128f,
    Sha2_192s,
    Shake192s,
    Sha2_192f,
    Shake192f,
    Sha2_256s,
    Shake256s,
    Sha2_256f,
    Shake256f,
}

use ParamSet::*;

impl ParamSet {
    /// All of them, in `CKP_SLH_DSA_*` order (values 1 to 12).
    pub const ALL: [ParamSet; 12] = [
        Sha2_128s, Shake128s, Sha2_128f, Shake128f, Sha2_192s, Shake192s, Sha2_192f, Shake192f,
        Sha2_256s, Shake256s, Sha2_256f, Shake256f,
    ];

    /// The set a `CKA_PARAMETER_SET` value names
    /// (`CKR_PARAMETER_SET_NOT_SUPPORTED` otherwise).
    pub fn from_ckp(value: CK_ULONG) -> Result<ParamSet> {
        ParamSet::ALL
            .into_iter()
            .find(|s| s.ckp() == value)
            .ok_or(err(CKR_PARAMETER_SET_NOT_SUPPORTED))
    }

    /// Its `CKA_PARAMETER_SET` value.
    pub fn ckp(self) -> CK_ULONG {
        match self {
            Sha2_128s => CKP_SLH_DSA_SHA2_128S,
            Shake128s => CKP_SLH_DSA_SHAKE_128S,
            Sha2_128f => CKP_SLH_DSA_SHA2_128F,
            Shake128f => CKP_SLH_DSA_SHAKE_128F,
            Sha2_192s => CKP_SLH_DSA_SHA2_192S,
            Shake192s => CKP_SLH_DSA_SHAKE_192S,
            Sha2_192f => CKP_SLH_DSA_SHA2_192F,
            Shake192f => CKP_SLH_DSA_SHAKE_192F,
            Sha2_256s => CKP_SLH_DSA_SHA2_256S,
            Shake256s => CKP_SLH_DSA_SHAKE_256S,
            Sha2_256f => CKP_SLH_DSA_SHA2_256F,
            Shake256f => CKP_SLH_DSA_SHAKE_256F,
        }
    }

    /// The security parameter n in bytes (FIPS 205 Table 2): the length of
    /// SK.seed, SK.prf, PK.seed, PK.root and of a hedged signature's
    /// opt_rand.
    pub fn n(self) -> usize {
        match self {
            Sha2_128s | Shake128s | Sha2_128f | Shake128f => 16,
            Sha2_192s | Shake192s | Sha2_192f | Shake192f => 24,
            Sha2_256s | Shake256s | Sha2_256f | Shake256f => 32,
        }
    }

    /// Length of a public key, PK.seed ‖ PK.root (FIPS 205 §9.1).
    pub fn public_len(self) -> usize {
        2 * self.n()
    }

    /// Length of a private key, SK.seed ‖ SK.prf ‖ PK.seed ‖ PK.root.
    pub fn private_len(self) -> usize {
        4 * self.n()
    }

    /// Length of a signature (FIPS 205 Table 2).
    pub fn signature_len(self) -> usize {
        match self {
            Sha2_128s | Shake128s => 7856,
            Sha2_128f | Shake128f => 17088,
            Sha2_192s | Shake192s => 16224,
            Sha2_192f | Shake192f => 35664,
            Sha2_256s | Shake256s => 29792,
            Sha2_256f | Shake256f => 49856,
        }
    }

    /// Last arc of its OID id-slh-dsa-* (2.16.840.1.101.3.4.3.20 to .31,
    /// RFC 9909).
    pub fn oid_arc(self) -> u8 {
        match self {
            Sha2_128s => 20,
            Sha2_128f => 21,
            Sha2_192s => 22,
            Sha2_192f => 23,
            Sha2_256s => 24,
            Sha2_256f => 25,
            Shake128s => 26,
            Shake128f => 27,
            Shake192s => 28,
            Shake192f => 29,
            Shake256s => 30,
            Shake256f => 31,
        }
    }

    /// Security strength in bits: categories 1, 3 and 5 (FIPS 205 Table 2)
    /// match AES-128, -192 and -256.
    pub fn strength(self) -> u32 {
        8 * self.n() as u32
    }

    /// The DER `AlgorithmIdentifier` (parameters absent, RFC 9909).
    pub fn algorithm_identifier(self) -> [u8; 13] {
        crate::mechanisms::lamps::nist_algorithm_identifier(0x03, self.oid_arc())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_set_values_round_trip_and_unknown_ones_are_refused() {
        for (i, s) in ParamSet::ALL.into_iter().enumerate() {
            assert_eq!(s.ckp(), i as CK_ULONG + 1);
            assert_eq!(ParamSet::from_ckp(s.ckp()).unwrap(), s);
            assert!(
                ParamSet::ALL[i + 1..]
                    .iter()
                    .all(|t| t.oid_arc() != s.oid_arc())
            );
        }
        for bad in [0, 13, CK_ULONG::MAX] {
            assert_eq!(
                ParamSet::from_ckp(bad).unwrap_err().rv(),
                CKR_PARAMETER_SET_NOT_SUPPORTED
            );
        }
    }
}
