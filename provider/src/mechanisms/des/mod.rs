//! DES and Triple DES (mechanisms spec 3.0 §2.29; single DES from the
//! historical mechanisms spec §2.4): the key and the checks of key values
//! (`key`), the key schedules and passes in AWS-LC with the cargo feature
//! `aws-lc` (`awslc`), encryption ([`cipher`], also [`load`], the key as
//! key material) and the MACs ([`mac`]); `differential` tests the AWS-LC
//! path against the des crate. This file only declares the parts and
//! re-exports them.

#[cfg(feature = "aws-lc")]
mod awslc;
pub mod cipher;
#[cfg(test)]
mod differential;
pub(super) mod key;
pub mod mac;

pub use cipher::{des_key, load};
pub use key::*;
