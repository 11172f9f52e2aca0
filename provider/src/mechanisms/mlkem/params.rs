//! The ML-KEM parameter sets (FIPS 203 §8 Table 2; PKCS#11 3.2 mechanisms
//! spec, `CKA_PARAMETER_SET` values `CKP_ML_KEM_512/768/1024`), their
//! encoding sizes (Table 3), OIDs (the LAMPS ML-KEM certificate specification,
//! draft-ietf-lamps-kyber-certificates §3; NIST CSOR
//! 2.16.840.1.101.3.4.4.1–3) and security strengths.

use crate::error::{Result, err};
use cryptoki_sys::*;

/// An ML-KEM parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamSet {
    /// ML-KEM-512 (security category 1).
    P512,
    /// ML-KEM-768 (category 3).
    P768,
    /// ML-KEM-1024 (category 5).
    P1024,
}

/// Length of the seed d‖z (FIPS 203 Algorithm 19, `CKA_SEED`).
pub const SEED_LEN: usize = 64;

/// Length of the shared secret K (FIPS 203 §2.3).
pub const SHARED_LEN: usize = 32;

impl ParamSet {
    /// All of them.
    pub const ALL: [ParamSet; 3] = [ParamSet::P512, ParamSet::P768, ParamSet::P1024];

    /// The set a `CKA_PARAMETER_SET` value names
    /// (`CKR_PARAMETER_SET_NOT_SUPPORTED` otherwise).
    pub fn from_ckp(value: CK_ULONG) -> Result<ParamSet> {
        match value {
            CKP_ML_KEM_512 => Ok(ParamSet::P512),
            CKP_ML_KEM_768 => Ok(ParamSet::P768),
            CKP_ML_KEM_1024 => Ok(ParamSet::P1024),
            _ => Err(err(CKR_PARAMETER_SET_NOT_SUPPORTED)),
        }
    }

    /// Its `CKA_PARAMETER_SET` value.
    pub fn ckp(self) -> CK_ULONG {
        match self {
            ParamSet::P512 => CKP_ML_KEM_512,
            ParamSet::P768 => CKP_ML_KEM_768,
            ParamSet::P1024 => CKP_ML_KEM_1024,
        }
    }

    /// Length of an encapsulation key (ek, FIPS 203 Table 3).
    pub fn public_len(self) -> usize {
        match self {
            ParamSet::P512 => 800,
            ParamSet::P768 => 1184,
            ParamSet::P1024 => 1568,
        }
    }

    /// Length of an (expanded) decapsulation key (dk).
    pub fn private_len(self) -> usize {
        match self {
            ParamSet::P512 => 1632,
            ParamSet::P768 => 2400,
            ParamSet::P1024 => 3168,
        }
    }

    /// Length of a ciphertext (c).
    pub fn ciphertext_len(self) -> usize {
        match self {
            ParamSet::P512 => 768,
            ParamSet::P768 => 1088,
            ParamSet::P1024 => 1568,
        }
    }

    /// Last arc of its OID id-alg-ml-kem-512/768/1024
    /// (2.16.840.1.101.3.4.4.1/2/3).
    pub fn oid_arc(self) -> u8 {
        match self {
            ParamSet::P512 => 0x01,
            ParamSet::P768 => 0x02,
            ParamSet::P1024 => 0x03,
        }
    }

    /// Security strength in bits: categories 1, 3 and 5 (FIPS 203 §8)
    /// match AES-128, -192 and -256.
    pub fn strength(self) -> u32 {
        match self {
            ParamSet::P512 => 128,
            ParamSet::P768 => 192,
            ParamSet::P1024 => 256,
        }
    }

    /// The DER `AlgorithmIdentifier` (no parameters).
    pub fn algorithm_identifier(self) -> [u8; 13] {
        crate::mechanisms::lamps::nist_algorithm_identifier(0x04, self.oid_arc())
    }

    /// The set whose OID arc is `arc`.
    pub fn from_oid_arc(arc: u8) -> Option<ParamSet> {
        ParamSet::ALL.into_iter().find(|s| s.oid_arc() == arc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_set_values_round_trip_and_unknown_ones_are_refused() {
        for s in ParamSet::ALL {
            assert_eq!(ParamSet::from_ckp(s.ckp()).unwrap(), s);
            assert_eq!(ParamSet::from_oid_arc(s.oid_arc()), Some(s));
        }
        for bad in [0, 4, CK_ULONG::MAX] {
            assert_eq!(
                ParamSet::from_ckp(bad).unwrap_err().rv(),
                CKR_PARAMETER_SET_NOT_SUPPORTED
            );
        }
        assert_eq!(ParamSet::from_oid_arc(0x04), None);
    }
}
