//! RSA (mechanisms spec §2.1) with the rsa crate: key pair generation
//! (§2.1.5), import, PKCS #1 v1.5 (§2.1.6, §2.1.12), PSS (§2.1.14–2.1.15),
//! OAEP (§2.1.8) and raw X.509 (§2.1.7) signing, verification, encryption
//! and decryption, and PKCS #8 encoding for key wrapping.
//!
//! Every private-key operation is blinded: PKCS #1 v1.5 and OAEP through
//! the crate's `sign_with_rng` / `decrypt_blinded`, PSS with the crate's
//! blinded signer, and raw X.509 through `common::raw_private` (the crate's
//! raw primitive is behind a feature this crate does not enable). The
//! randomness comes from getrandom(2).
//!
//! Single-part mechanisms (`CKM_RSA_PKCS`, `CKM_RSA_PKCS_PSS`,
//! `CKM_RSA_X_509` for signatures; every RSA cipher) reject `C_*Update` and
//! `C_*Final` with `CKR_FUNCTION_NOT_SUPPORTED`, which ends the operation:
//! the mechanisms table of §2.1 lists them for single-part use only and the
//! base spec leaves the return value to the token. The `CKM_SHA*_RSA_*`
//! signature mechanisms support multi-part operation.
//!
//! Values are big-endian integers without leading zero bytes (stored
//! normalised; leading zeros are accepted on input).
//!
//! The code is split by job: `common` holds what every part shares (the
//! hash choice, big-integer helpers, the blinded raw private-key operation,
//! key-type checks); `keys` imports, checks, recovers, generates and
//! (de)serialises keys; `sign` has the signature schemes (PKCS #1 v1.5,
//! PSS, raw X.509) and verification with recovery; `cipher` the encryption
//! schemes (PKCS #1 v1.5, OAEP, raw). This file only declares the parts
//! and re-exports them (and holds the fixtures their tests share).

mod cipher;
mod common;
mod keys;
mod sign;

pub use cipher::RsaCipher;
pub use keys::{
    complete_import, from_pkcs8, generate, load_private, load_public, public_attributes, to_pkcs8,
};
pub use sign::{RsaRecover, RsaSign, RsaVerify};

#[cfg(test)]
mod tests {
    //! Fixtures the unit tests of every part share.
    use super::keys::{generate, private_from, private_material, public_material};
    use crate::attributes::Attributes;
    use crate::mechanisms::material::KeyMaterial;
    use ::rsa::RsaPrivateKey;
    use cryptoki_sys::*;
    use std::sync::{Arc, OnceLock};
    use zeroize::Zeroizing;

    /// One 2048-bit key for the unit tests (generation is the slow part).
    pub(super) fn key() -> &'static RsaPrivateKey {
        static KEY: OnceLock<RsaPrivateKey> = OnceLock::new();
        KEY.get_or_init(|| {
            let mut t = Attributes::new();
            t.set_ulong(CKA_MODULUS_BITS, 2048);
            let g = generate(&t).unwrap();
            let get = |ty| Ok(g.private.bytes(ty).map(|v| Zeroizing::new(v.to_vec())));
            private_from(&get).unwrap()
        })
    }

    pub(super) fn materials() -> (Arc<KeyMaterial>, Arc<KeyMaterial>) {
        let k = key().clone();
        let public = k.to_public_key();
        (
            Arc::new(private_material(k)),
            Arc::new(public_material(public)),
        )
    }
}
