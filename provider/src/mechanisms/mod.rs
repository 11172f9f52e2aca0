//! Mechanisms: a registry of what the token supports (`C_GetMechanismList`,
//! `C_GetMechanismInfo`) and the operations behind it.
//!
//! Each family lives in its own file and is the only place that calls its
//! crypto crate. Operations are small traits (`SignOperation`,
//! `VerifyOperation`, `DigestOperation`); a session holds them as enums that
//! dispatch statically, so starting an operation allocates nothing.
//!
//! `registry.rs` is the one place that lists what the token supports;
//! `params.rs`, `operation.rs`, `init.rs` and `secret.rs` hold the shared
//! types, traits and entry points, re-exported here.

pub mod aes;
#[cfg(feature = "aws-lc")]
pub mod awslc;
pub mod block_modes;
pub mod cmac;
pub mod des;
pub mod digest;
pub mod dsa;
pub mod ec;
pub mod eddsa;
pub mod hmac;
mod init;
pub mod kdf;
pub mod keys;
mod operation;
mod params;
pub mod random;
mod registry;
pub mod rfc8410;
pub mod rsa;
mod secret;
pub mod strength;
pub mod x25519;

pub use init::*;
pub use operation::*;
pub use params::*;
pub use registry::*;
pub use secret::*;

/// Helpers for the families' known-answer tests.
#[cfg(test)]
pub(crate) mod test_util {
    /// Lower-case hex digits of `bytes`.
    pub fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Bytes from hex digits (test vectors).
    pub fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
