//! ML-DSA (FIPS 204) with the RustCrypto `ml-dsa` crate: the key type
//! `CKK_ML_DSA`, `CKM_ML_DSA_KEY_PAIR_GEN`, pure `CKM_ML_DSA` and the
//! pre-hash variants `CKM_HASH_ML_DSA` / `CKM_HASH_ML_DSA_<hash>`
//! (PKCS#11 3.2 mechanisms spec, ML-DSA section). With the `aws-lc`
//! feature (the default build), pure `CKM_ML_DSA` with an empty context
//! signs (hedged) and verifies on aws-lc-rs instead (`sign` says when).
//!
//! One job per file: `params` (the parameter sets), `key` (parsed keys,
//! signing and verifying on μ), `keys` (key objects: loading, import,
//! generation, RFC 9881 encodings), `expanded` (the checks of an expanded
//! key before it is decoded), `sign` (the operations), `awslc` (the
//! aws-lc-rs keys). HashML-DSA's hashes are in `mechanisms::prehash`.

#[cfg(feature = "aws-lc")]
mod awslc;
mod expanded;
pub mod key;
mod keys;
pub mod params;
mod sign;

pub use key::{PrivateKey, PublicKey};
pub use keys::*;
pub use params::ParamSet;
pub use sign::{MlDsaSign, MlDsaVerify};

/// True for the mechanisms this family signs and verifies with.
pub fn is_signature_mechanism(ty: cryptoki_sys::CK_MECHANISM_TYPE) -> bool {
    ty == cryptoki_sys::CKM_ML_DSA
        || ty == cryptoki_sys::CKM_HASH_ML_DSA
        || crate::mechanisms::prehash::HashAlg::of_mechanism(ty).is_some()
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_acvp;
#[cfg(all(test, feature = "aws-lc"))]
mod tests_awslc;
