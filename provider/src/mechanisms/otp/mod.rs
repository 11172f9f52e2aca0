//! OATH HOTP (RFC 4226; mechanisms spec "OATH HOTP": `CKM_HOTP_KEY_GEN`,
//! `CKM_HOTP`): the key and the RFC 4226 computation (`key`), and the
//! signing and verification operations with the `CK_OTP_SIGNATURE_INFO`
//! output (`sign`). This file only declares the parts and re-exports them.

pub mod key;
mod sign;

pub use key::{HotpKey, complete_import, stored_counter};
pub use sign::{Hotp, HotpSign, HotpVerify, INFO_LEN};
