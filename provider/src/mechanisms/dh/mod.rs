//! Diffie-Hellman key agreement, PKCS #3 (mechanisms spec 3.0 §2.5):
//! `CKM_DH_PKCS_KEY_PAIR_GEN`, `CKM_DH_PKCS_PARAMETER_GEN` and
//! `CKM_DH_PKCS_DERIVE` on safe-prime groups, with crypto-bigint's
//! constant-time Montgomery exponentiation for every secret exponent and
//! crypto-primes' primality tests for groups that are not named.
//!
//! - `groups`: the RFC 7919 and RFC 3526 groups and the checks of any other.
//! - `key`: the parsed keys; `keys`: import checks, key-pair and parameter generation.
//! - `derive`: the shared secret, with the peer's value checked first.
//! - `legendre`: the Jacobi symbol, which checks peers' values in place of y^q.
//! - `pkcs8`: the PKCS #8 form of private keys, for wrapping.

mod derive;
mod group_primes;
pub mod groups;
pub mod key;
mod keys;
mod legendre;
mod pkcs8;

pub use derive::derive;
pub use key::{PrivateKey, PublicKey};
pub use keys::{complete_import, generate, generate_parameters, load_private, load_public};
pub use pkcs8::{from_pkcs8, to_pkcs8};
