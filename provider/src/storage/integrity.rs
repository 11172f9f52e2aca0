//! Authentication of everything a token stores, with keys that need no PIN.
//!
//! Each token has a random 256-bit *integrity secret* in its metadata. From
//! it come, by HMAC-SHA256 with a fixed label each:
//!
//! - the record key: every object record carries
//!   `HMAC(record key, uid ‖ generation ‖ class ‖ private ‖ attributes)`, so a
//!   flipped bit or an edited byte anywhere in a record is refused, never
//!   served;
//! - the metadata key: the metadata (label, serial, PIN-wrapped keys, PIN
//!   counters) carries a MAC of its bytes;
//! - the object-set digest: the XOR of the MACs of all live records, kept in
//!   the metadata and updated in the transaction of every write, so a record
//!   that disappears (or one added by hand) is detected;
//! - the public sealing key, which seals the sensitive values of objects that
//!   are not private (their values must be readable without a login);
//! - the IV-counter keys (see `iv_counters`): one names an AES key value's
//!   GCM IV counter by a fingerprint of the value (never a plain hash of
//!   it), the other authenticates the stored counters.
//!
//! The secret needs no PIN, so these keys protect against corruption (bit
//! rot, a torn copy, a careless edit) and keep sensitive values out of plain
//! sight, but not against someone who can read the file and knows the format:
//! that attacker can recompute them. What binds a private key's protection
//! flags to its value against that attacker is the token key, which does
//! need the PIN: see `api::object::seal_aad`.

use super::seal::TokenKey;
use crate::error::Result;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::sync::Arc;
use zeroize::Zeroizing;

/// Length of a MAC and of the integrity secret.
pub const MAC_LEN: usize = 32;
/// A record or metadata MAC.
pub type Tag = [u8; MAC_LEN];

/// The keys derived from one token's integrity secret.
pub struct Integrity {
    record: Zeroizing<[u8; 32]>,
    meta: Zeroizing<[u8; 32]>,
    public: Arc<TokenKey>,
    iv_fingerprint: Zeroizing<[u8; 32]>,
    iv_mac: Zeroizing<[u8; 32]>,
    secret_hex: Zeroizing<String>,
}

fn derive(secret: &[u8], label: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut out = Zeroizing::new([0u8; 32]);
    out.copy_from_slice(&mac(secret, &[label]));
    out
}

fn mac(key: &[u8], parts: &[&[u8]]) -> Tag {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    for p in parts {
        m.update(&(p.len() as u64).to_le_bytes());
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

impl Integrity {
    /// The keys of the secret `secret_hex` (as stored in the metadata).
    pub fn from_hex(secret_hex: &str) -> Result<Integrity> {
        let secret = Zeroizing::new(super::seal::unhex(secret_hex)?);
        if secret.len() != MAC_LEN {
            return Err(crate::error::err(cryptoki_sys::CKR_DEVICE_ERROR));
        }
        Ok(Integrity {
            record: derive(&secret, b"dalek-pkcs11 record mac v1"),
            meta: derive(&secret, b"dalek-pkcs11 metadata mac v1"),
            public: Arc::new(TokenKey::from_bytes(&derive(
                &secret,
                b"dalek-pkcs11 public seal v1",
            ))?),
            iv_fingerprint: derive(&secret, b"dalek-pkcs11 iv counter fingerprint v1"),
            iv_mac: derive(&secret, b"dalek-pkcs11 iv counter mac v1"),
            secret_hex: Zeroizing::new(secret_hex.to_string()),
        })
    }

    /// Makes `keys` the keys of `secret_hex` (derived again only when the
    /// secret changed; `None`: no secret, no keys).
    pub fn follow(keys: &mut Option<Integrity>, secret_hex: Option<&str>) -> Result<()> {
        let same = match (keys.as_ref(), secret_hex) {
            (Some(k), Some(s)) => k.is_of(s),
            (None, None) => true,
            _ => false,
        };
        if !same {
            *keys = secret_hex.map(Integrity::from_hex).transpose()?;
        }
        Ok(())
    }

    /// True when these are the keys of `secret_hex`.
    pub fn is_of(&self, secret_hex: &str) -> bool {
        *self.secret_hex == secret_hex
    }

    /// The MAC of one object record.
    pub fn record_mac(
        &self,
        uid: &[u8],
        generation: u64,
        class: u64,
        private: bool,
        attrs: &[u8],
    ) -> Tag {
        mac(
            &self.record[..],
            &[
                uid,
                &generation.to_le_bytes(),
                &class.to_le_bytes(),
                &[u8::from(private)],
                attrs,
            ],
        )
    }

    /// The MAC of the metadata's bytes.
    pub fn meta_mac(&self, meta: &[u8]) -> Tag {
        mac(&self.meta[..], &[meta])
    }

    /// The key that seals secret values of objects that are not private.
    pub fn public_seal_key(&self) -> Arc<TokenKey> {
        self.public.clone()
    }

    /// The name of the GCM IV counter of the AES key value `key`: the same
    /// for every copy of the value on this token, and telling nothing of
    /// the value to whoever lacks the integrity secret.
    pub fn iv_fingerprint(&self, key: &[u8]) -> Tag {
        mac(&self.iv_fingerprint[..], &[b"aes", key])
    }

    /// The MAC of one stored IV counter: its fingerprint and next value.
    pub fn iv_counter_mac(&self, fingerprint: &[u8], next: u64) -> Tag {
        mac(
            &self.iv_mac[..],
            &[b"counter", fingerprint, &next.to_le_bytes()],
        )
    }

    /// The tag of the whole set of IV counters: the floor every counter
    /// starts from and the XOR of the counters' MACs.
    pub fn iv_set_tag(&self, floor: u64, macs_xor: &Tag) -> Tag {
        mac(&self.iv_mac[..], &[b"set", &floor.to_le_bytes(), macs_xor])
    }
}

/// XORs `tag` into `digest` (adding or removing a record from the set).
pub fn toggle(digest: &mut Tag, tag: &[u8]) {
    for (d, t) in digest.iter_mut().zip(tag) {
        *d ^= t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Integrity {
        Integrity::from_hex(&"ab".repeat(32)).unwrap()
    }

    #[test]
    fn every_field_of_a_record_is_covered() {
        let k = keys();
        let base = k.record_mac(&[1; 16], 7, 3, true, b"attrs");
        assert_ne!(base, k.record_mac(&[2; 16], 7, 3, true, b"attrs"));
        assert_ne!(base, k.record_mac(&[1; 16], 8, 3, true, b"attrs"));
        assert_ne!(base, k.record_mac(&[1; 16], 7, 4, true, b"attrs"));
        assert_ne!(base, k.record_mac(&[1; 16], 7, 3, false, b"attrs"));
        assert_ne!(base, k.record_mac(&[1; 16], 7, 3, true, b"attrz"));
        let other = Integrity::from_hex(&"cd".repeat(32)).unwrap();
        assert_ne!(base, other.record_mac(&[1; 16], 7, 3, true, b"attrs"));
        assert!(Integrity::from_hex("abcd").is_err(), "short secret");
    }

    #[test]
    fn iv_counter_keys_are_their_own() {
        let k = keys();
        let fp = k.iv_fingerprint(&[7; 16]);
        assert_ne!(fp, k.iv_fingerprint(&[7; 32]));
        assert_ne!(fp, k.iv_fingerprint(&[8; 16]));
        let other = Integrity::from_hex(&"cd".repeat(32)).unwrap();
        assert_ne!(fp, other.iv_fingerprint(&[7; 16]), "per token");
        let m = k.iv_counter_mac(&fp, 5);
        assert_ne!(m, k.iv_counter_mac(&fp, 6));
        assert_ne!(m, k.iv_counter_mac(&[0; 32], 5));
        assert_ne!(m, other.iv_counter_mac(&fp, 5));
        assert_ne!(k.iv_set_tag(0, &m), k.iv_set_tag(1, &m));
        assert_ne!(k.iv_set_tag(0, &m), k.iv_set_tag(0, &[0; 32]));
        // Distinct from the record and metadata MACs of the same bytes.
        assert_ne!(k.meta_mac(&fp), k.iv_counter_mac(&fp, 0));
    }

    #[test]
    fn the_digest_is_a_set() {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        let mut d = [0u8; 32];
        toggle(&mut d, &a);
        toggle(&mut d, &b);
        let mut e = [0u8; 32];
        toggle(&mut e, &b);
        toggle(&mut e, &a);
        assert_eq!(d, e, "order does not matter");
        toggle(&mut d, &a);
        assert_eq!(d, b, "removing a record takes its MAC out");
    }
}
