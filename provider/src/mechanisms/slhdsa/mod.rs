//! SLH-DSA (FIPS 205) with the RustCrypto `slh-dsa` crate (a release
//! candidate, 0.2.0-rc.5): the key type `CKK_SLH_DSA`,
//! `CKM_SLH_DSA_KEY_PAIR_GEN`, pure `CKM_SLH_DSA` and the pre-hash variants
//! `CKM_HASH_SLH_DSA` / `CKM_HASH_SLH_DSA_<hash>` (PKCS#11 3.2 mechanisms
//! spec, SLH-DSA section).
//!
//! One job per file: `params` (the twelve parameter sets), `key` (keys,
//! key generation and the internal signing and verification), `keys` (key
//! objects: loading, import, generation, RFC 9909 encodings), `sign` (the
//! operations and M′'s framing). The pre-hashes are shared with HashML-DSA
//! (`mechanisms::prehash`).

pub mod key;
mod keys;
pub mod params;
mod sign;

pub use key::{PrivateKey, PublicKey};
pub use keys::*;
pub use params::ParamSet;
pub use sign::{MAX_BUFFERED, SlhDsaSign, SlhDsaVerify};

/// True for the mechanisms this family signs and verifies with.
pub fn is_signature_mechanism(ty: cryptoki_sys::CK_MECHANISM_TYPE) -> bool {
    ty == cryptoki_sys::CKM_SLH_DSA
        || ty == cryptoki_sys::CKM_HASH_SLH_DSA
        || crate::mechanisms::prehash::HashAlg::of_slh_mechanism(ty).is_some()
}

#[cfg(test)]
mod tests;
