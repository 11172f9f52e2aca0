//! A key's HMAC prepared per hash ([`PreparedHmac`]: the inner and outer
//! states after absorbing the padded key), so starting an HMAC copies that
//! state instead of hashing the key blocks again (RFC 2104 §4 notes this
//! precomputation). Held in the key material of generic secret and HMAC
//! keys.

use crate::error::{Result, err};
use cryptoki_sys::*;
use hmac::KeyInit;
use std::sync::OnceLock;

/// An HMAC state (zeroized on drop by the hmac crate).
#[derive(Clone)]
pub(super) enum State {
    Md5(hmac::Hmac<md5::Md5>),
    Sha1(hmac::Hmac<sha1::Sha1>),
    Sha224(hmac::Hmac<sha2::Sha224>),
    Sha256(hmac::Hmac<sha2::Sha256>),
    Sha384(hmac::Hmac<sha2::Sha384>),
    Sha512(hmac::Hmac<sha2::Sha512>),
}

/// A key's HMAC states after absorbing the key, one per hash, made on
/// first use.
#[derive(Default)]
pub struct PreparedHmac {
    by_hash: [OnceLock<State>; 6],
}

impl PreparedHmac {
    /// The prepared state for the hash with `full`-byte output.
    pub(super) fn get(&self, full: usize, key: &[u8]) -> Result<&State> {
        let slot = match full {
            16 => 5,
            20 => 0,
            28 => 1,
            32 => 2,
            48 => 3,
            _ => 4,
        };
        if let Some(s) = self.by_hash[slot].get() {
            return Ok(s);
        }
        let bad = |_| err(CKR_KEY_SIZE_RANGE);
        let state = match slot {
            0 => State::Sha1(KeyInit::new_from_slice(key).map_err(bad)?),
            1 => State::Sha224(KeyInit::new_from_slice(key).map_err(bad)?),
            2 => State::Sha256(KeyInit::new_from_slice(key).map_err(bad)?),
            3 => State::Sha384(KeyInit::new_from_slice(key).map_err(bad)?),
            5 => State::Md5(KeyInit::new_from_slice(key).map_err(bad)?),
            _ => State::Sha512(KeyInit::new_from_slice(key).map_err(bad)?),
        };
        Ok(self.by_hash[slot].get_or_init(|| state))
    }
}

macro_rules! each {
    ($s:expr, $m:ident => $e:expr) => {
        match $s {
            State::Md5($m) => $e,
            State::Sha1($m) => $e,
            State::Sha224($m) => $e,
            State::Sha256($m) => $e,
            State::Sha384($m) => $e,
            State::Sha512($m) => $e,
        }
    };
}
