//! Mechanisms: a registry of what the token supports (`C_GetMechanismList`,
//! `C_GetMechanismInfo`) and the operations behind it.
//!
//! Each family lives in its own file and is the only place that calls its
//! crypto crate. Operations are small traits (`SignOperation`,
//! `VerifyOperation`, `DigestOperation`); a session holds them as enums that
//! dispatch statically, so starting an operation allocates nothing.
//!
//! `registry.rs` is the one place that lists what the token supports;
//! `params.rs` (the mechanism and its parameter), `operation.rs` (the
//! operation traits) and `material.rs` (the parsed key, `KeyMaterial`)
//! hold the types the families share, and the families import them from
//! there (so does `prehash.rs`, the pre-hashes of HashML-DSA and
//! HashSLH-DSA). `keys.rs`, `dispatch.rs`, `init.rs` and `secret.rs` dispatch to
//! the families. This file only declares the modules and re-exports the
//! public entry points; nothing below imports it.

pub mod aes;
#[cfg(feature = "aws-lc")]
pub mod awslc;
pub mod block_modes;
pub mod chacha;
pub mod cmac;
pub mod des;
pub mod dh;
pub mod digest;
mod dispatch;
pub mod dsa;
pub mod ec;
pub mod eddsa;
pub mod hmac;
mod init;
pub mod kdf;
pub mod kem;
pub mod keys;
pub mod lamps;
mod material;
pub mod mldsa;
pub mod mlkem;
mod operation;
pub mod otp;
mod params;
pub mod pq_keys;
mod prehash;
pub mod random;
mod registry;
pub mod rfc8410;
pub mod rsa;
mod secret;
pub mod slhdsa;
pub mod strength;
pub mod x25519;
pub mod x448;

pub use dispatch::*;
pub use init::*;
pub use material::{GeneratedPair, MAX_SECRET_LEN};
pub use operation::*;
pub use params::*;
pub use registry::*;
pub use secret::*;

/// Helpers for the families' known-answer tests.
#[cfg(test)]
pub(crate) mod test_util;
