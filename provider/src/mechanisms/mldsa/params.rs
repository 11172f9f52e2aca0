//! The ML-DSA parameter sets (FIPS 204 §4 Table 1; PKCS#11 3.2 mechanisms
//! spec, `CKA_PARAMETER_SET` values `CKP_ML_DSA_44/65/87`), their encoding
//! sizes, OIDs (RFC 9881 §2) and security strengths.

use crate::error::{Result, err};
use cryptoki_sys::*;

/// An ML-DSA parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamSet {
    /// ML-DSA-44 (security category 2).
    P44,
    /// ML-DSA-65 (category 3).
    P65,
    /// ML-DSA-87 (category 5).
    P87,
}

/// Length of the seed ξ (FIPS 204 Algorithm 1, `CKA_SEED`).
pub const SEED_LEN: usize = 32;

impl ParamSet {
    /// All of them.
    pub const ALL: [ParamSet; 3] = [ParamSet::P44, ParamSet::P65, ParamSet::P87];

    /// The set a `CKA_PARAMETER_SET` value names
    /// (`CKR_PARAMETER_SET_NOT_SUPPORTED` otherwise).
    pub fn from_ckp(value: CK_ULONG) -> Result<ParamSet> {
        match value {
            CKP_ML_DSA_44 => Ok(ParamSet::P44),
            CKP_ML_DSA_65 => Ok(ParamSet::P65),
            CKP_ML_DSA_87 => Ok(ParamSet::P87),
            _ => Err(err(CKR_PARAMETER_SET_NOT_SUPPORTED)),
        }
    }

    /// Its `CKA_PARAMETER_SET` value.
    pub fn ckp(self) -> CK_ULONG {
        match self {
            ParamSet::P44 => CKP_ML_DSA_44,
            ParamSet::P65 => CKP_ML_DSA_65,
            ParamSet::P87 => CKP_ML_DSA_87,
        }
    }

    /// Length of an encoded public key (pkEncode, FIPS 204 Table 2).
    pub fn public_len(self) -> usize {
        match self {
            ParamSet::P44 => 1312,
            ParamSet::P65 => 1952,
            ParamSet::P87 => 2592,
        }
    }

    /// Length of an encoded (expanded) private key (skEncode).
    pub fn private_len(self) -> usize {
        match self {
            ParamSet::P44 => 2560,
            ParamSet::P65 => 4032,
            ParamSet::P87 => 4896,
        }
    }

    /// Length of a signature (sigEncode).
    pub fn signature_len(self) -> usize {
        match self {
            ParamSet::P44 => 2420,
            ParamSet::P65 => 3309,
            ParamSet::P87 => 4627,
        }
    }

    /// Last arc of its OID id-ml-dsa-44/65/87 (2.16.840.1.101.3.4.3.17/18/19,
    /// RFC 9881 §2).
    pub fn oid_arc(self) -> u8 {
        match self {
            ParamSet::P44 => 0x11,
            ParamSet::P65 => 0x12,
            ParamSet::P87 => 0x13,
        }
    }

    /// Security strength in bits: categories 2, 3 and 5 (FIPS 204 Table 1)
    /// match AES-128, -192 and -256.
    pub fn strength(self) -> u32 {
        match self {
            ParamSet::P44 => 128,
            ParamSet::P65 => 192,
            ParamSet::P87 => 256,
        }
    }

    /// The DER `AlgorithmIdentifier` (no parameters, RFC 9881 §2).
    pub fn algorithm_identifier(self) -> [u8; 13] {
        crate::mechanisms::lamps::nist_algorithm_identifier(0x03, self.oid_arc())
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
        assert_eq!(ParamSet::from_oid_arc(0x14), None);
    }
}
