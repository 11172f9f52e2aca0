//! ML-KEM (FIPS 203) with the RustCrypto `ml-kem` crate: the key type
//! `CKK_ML_KEM`, `CKM_ML_KEM_KEY_PAIR_GEN` and `CKM_ML_KEM` for
//! `C_EncapsulateKey` / `C_DecapsulateKey` (PKCS#11 3.2 mechanisms spec,
//! ML-KEM section; base spec 3.2 §5.18).
//!
//! One job per file: `params` (the parameter sets), `key` (parsed keys and
//! the two operations), `keys` (key objects: loading, import, generation,
//! encodings), `awslc` (the default build's aws-lc-rs twins of the keys,
//! which encapsulate and decapsulate).

#[cfg(feature = "aws-lc")]
mod awslc;
pub mod key;
mod keys;
pub mod params;
#[cfg(test)]
mod tests_acvp;

pub use key::{PrivateKey, PublicKey, SharedSecret};
pub use keys::*;
pub use params::ParamSet;
