//! HMAC (mechanisms spec §2.16–2.20 and §6.5.3): the key's prepared states
//! (`prepared`, kept in the key material) and the MAC computation (`sign`).
//! `prf` keys an HMAC once for the KDFs that use it as their PRF.
//! This file only declares the parts and re-exports them.

#[macro_use]
pub(super) mod prepared;
mod prf;
mod sign;

pub use prepared::PreparedHmac;
pub use prf::Prf;
pub use sign::{HmacSign, is_hmac};
