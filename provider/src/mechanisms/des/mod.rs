//! DES and Triple DES (mechanisms spec 3.0 §2.29; single DES from the
//! historical mechanisms spec §2.4): the key and the checks of key values
//! (`key`), encryption ([`cipher`], also [`load`], the key as key
//! material) and the MACs ([`mac`]). This file only declares the parts and
//! re-exports them.

pub mod cipher;
pub(super) mod key;
pub mod mac;

pub use cipher::{des_key, load};
pub use key::*;
