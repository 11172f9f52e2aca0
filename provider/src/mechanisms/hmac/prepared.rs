//! A key's HMAC prepared per hash ([`PreparedHmac`]: the inner and outer
//! states after absorbing the padded key), so starting an HMAC copies that
//! state instead of hashing the key blocks again (RFC 2104 §4 notes this
//! precomputation). Held in the key material of generic secret and HMAC
//! keys.

use crate::error::{Result, err};
use cryptoki_sys::*;
use hmac::KeyInit;
use std::sync::OnceLock;

/// The hash under an HMAC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HmacHash {
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    Sha512_224,
    Sha512_256,
    Sha3_224,
    Sha3_256,
    Sha3_384,
    Sha3_512,
}

/// How many hashes [`HmacHash`] names.
const HASHES: usize = 12;

impl HmacHash {
    /// The hash's output length in bytes.
    pub(crate) fn len(self) -> usize {
        match self {
            HmacHash::Md5 => 16,
            HmacHash::Sha1 => 20,
            HmacHash::Sha224 | HmacHash::Sha512_224 | HmacHash::Sha3_224 => 28,
            HmacHash::Sha256 | HmacHash::Sha512_256 | HmacHash::Sha3_256 => 32,
            HmacHash::Sha384 | HmacHash::Sha3_384 => 48,
            HmacHash::Sha512 | HmacHash::Sha3_512 => 64,
        }
    }
}

/// An HMAC state (zeroized on drop by the hmac crate).
#[derive(Clone)]
pub(super) enum State {
    Md5(hmac::Hmac<md5::Md5>),
    Sha1(hmac::Hmac<sha1::Sha1>),
    Sha224(hmac::Hmac<sha2::Sha224>),
    Sha256(hmac::Hmac<sha2::Sha256>),
    Sha384(hmac::Hmac<sha2::Sha384>),
    Sha512(hmac::Hmac<sha2::Sha512>),
    Sha512_224(hmac::Hmac<sha2::Sha512_224>),
    Sha512_256(hmac::Hmac<sha2::Sha512_256>),
    Sha3_224(hmac::Hmac<sha3::Sha3_224>),
    Sha3_256(hmac::Hmac<sha3::Sha3_256>),
    Sha3_384(hmac::Hmac<sha3::Sha3_384>),
    Sha3_512(hmac::Hmac<sha3::Sha3_512>),
}

impl State {
    /// A fresh state keyed with `key` (RFC 2104: a key longer than the
    /// hash's block is hashed first, a shorter one padded).
    pub(super) fn new(hash: HmacHash, key: &[u8]) -> Result<State> {
        let bad = |_| err(CKR_KEY_SIZE_RANGE);
        Ok(match hash {
            HmacHash::Md5 => State::Md5(KeyInit::new_from_slice(key).map_err(bad)?),
            HmacHash::Sha1 => State::Sha1(KeyInit::new_from_slice(key).map_err(bad)?),
            HmacHash::Sha224 => State::Sha224(KeyInit::new_from_slice(key).map_err(bad)?),
            HmacHash::Sha256 => State::Sha256(KeyInit::new_from_slice(key).map_err(bad)?),
            HmacHash::Sha384 => State::Sha384(KeyInit::new_from_slice(key).map_err(bad)?),
            HmacHash::Sha512 => State::Sha512(KeyInit::new_from_slice(key).map_err(bad)?),
            HmacHash::Sha512_224 => State::Sha512_224(KeyInit::new_from_slice(key).map_err(bad)?),
            HmacHash::Sha512_256 => State::Sha512_256(KeyInit::new_from_slice(key).map_err(bad)?),
            HmacHash::Sha3_224 => State::Sha3_224(KeyInit::new_from_slice(key).map_err(bad)?),
            HmacHash::Sha3_256 => State::Sha3_256(KeyInit::new_from_slice(key).map_err(bad)?),
            HmacHash::Sha3_384 => State::Sha3_384(KeyInit::new_from_slice(key).map_err(bad)?),
            HmacHash::Sha3_512 => State::Sha3_512(KeyInit::new_from_slice(key).map_err(bad)?),
        })
    }
}

/// A key's HMAC states after absorbing the key, one per hash, made on
/// first use.
#[derive(Default)]
pub struct PreparedHmac {
    by_hash: [OnceLock<State>; HASHES],
}

impl PreparedHmac {
    /// The prepared state for `hash`.
    pub(super) fn get(&self, hash: HmacHash, key: &[u8]) -> Result<&State> {
        let slot = hash as usize;
        if let Some(s) = self.by_hash[slot].get() {
            return Ok(s);
        }
        let state = State::new(hash, key)?;
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
            State::Sha512_224($m) => $e,
            State::Sha512_256($m) => $e,
            State::Sha3_224($m) => $e,
            State::Sha3_256($m) => $e,
            State::Sha3_384($m) => $e,
            State::Sha3_512($m) => $e,
        }
    };
}

impl PreparedHmac {
    /// One whole MAC of `data` under `key` with `hash`, started from the
    /// prepared state, into `out` (at least [`HmacHash::len`] bytes);
    /// returns that length. For the families that MAC one message at a
    /// time (HOTP).
    pub(crate) fn mac(
        &self,
        hash: HmacHash,
        key: &[u8],
        data: &[u8],
        out: &mut [u8],
    ) -> Result<usize> {
        use hmac::Mac;
        let n = hash.len();
        let target = out.get_mut(..n).ok_or(err(CKR_GENERAL_ERROR))?;
        let state = self.get(hash, key)?.clone();
        each!(state, m => {
            let mut m = m;
            m.update(data);
            target.copy_from_slice(&m.finalize().into_bytes());
        });
        Ok(n)
    }
}
