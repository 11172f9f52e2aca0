//! Cryptographic functions in safe form (base spec §5.8–5.17): encryption,
//! decryption, digest, sign, verify (with recovery), key generation,
//! wrapping and derivation, random. One file per job:
//!
//! - `key_use`: the checks of a key an operation takes (usage flags,
//!   `CKA_ALLOWED_MECHANISMS`, MAC key floors, `CKA_ALWAYS_AUTHENTICATE`);
//! - `output`: the §5.2 output conventions and which outcomes end an
//!   operation;
//! - `init`: the `C_*Init` calls and the context login (§5.6);
//! - `data`: single-part and multi-part data calls, random, batch verify;
//! - `new_key`: what a key made from other keys takes from them;
//! - `keygen`, `wrap`, `derive`: §5.15 key management;
//! - `kem`: 3.2 §5.18 key encapsulation;
//! - `otp`: the HOTP data calls, which move the key's stored counter.
//!
//! This file only declares them and re-exports what the FFI layer and the
//! operator's tool call; the files of `api/` import from the defining file.

pub(super) mod data;
pub(super) mod derive;
pub(super) mod init;
pub(super) mod kem;
pub(super) mod key_use;
pub(super) mod keygen;
pub(super) mod new_key;
pub(super) mod otp;
pub(super) mod output;
pub(super) mod tls;
pub(super) mod wrap;
pub(super) mod wrap_authenticated;

pub use data::{
    MAX_BATCH, cipher, cipher_final, cipher_update, digest, digest_final, digest_key,
    digest_update, generate_random, sign, sign_final, sign_recover, sign_update, verify,
    verify_batch_ed25519, verify_final, verify_recover, verify_signature, verify_signature_final,
    verify_signature_update, verify_update,
};
pub use derive::{derive_key, derive_keys_sp800_108};
pub use init::{
    MAX_SIGNATURE_LEN, cipher_init, context_login, digest_init, sign_init, sign_recover_init,
    verify_init, verify_recover_init, verify_signature_init,
};
pub use kem::{decapsulate_key, encapsulate_key};
pub use keygen::{generate_key, generate_key_pair};
pub use output::{OpKind, end};
pub use tls::{KeyMaterialOut, derive_key_material, derive_master};
pub use wrap::{unwrap_key, wrap_key};
pub use wrap_authenticated::{unwrap_key_authenticated, wrap_key_authenticated};
