//! Encryption at rest.
//!
//! Each token has a random 256-bit *token key*. Sensitive attribute values of
//! private objects (private and secret key material) are sealed with
//! AES-256-GCM under that key, with the object's unique id and the attribute
//! type as associated data, so a sealed value cannot be moved to another
//! object or attribute undetected.
//!
//! The token key itself is stored twice, wrapped (AES-256-GCM) under a key
//! derived from the SO PIN and under one derived from the user PIN with
//! PBKDF2-HMAC-SHA256 (random 16-byte salt, iteration count stored with the
//! wrap so it can be raised later). Changing a PIN re-wraps the token key; no
//! object is re-encrypted. A wrong PIN is detected by the GCM tag failing.

use crate::config::MAX_PIN_KDF_ITERATIONS;
use crate::error::{Result, err};
use crate::hygiene::wiping;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_GENERAL_ERROR, CKR_PIN_INCORRECT};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use zeroize::Zeroizing;

const NONCE_LEN: usize = 12;
const KDF_NAME: &str = "pbkdf2-hmac-sha256";
/// Salt of a PIN wrap (16 bytes are written; a little room for the future).
const MAX_SALT_LEN: usize = 64;
/// Nonce, 32-byte token key and tag of a PIN wrap.
const MAX_SEALED_KEY_LEN: usize = NONCE_LEN + 32 + 16;

pub use crate::mechanisms::random::os_fill as random_bytes;

/// A 256-bit secret in one heap allocation that never moves (moving the
/// box moves a pointer), zeroized when dropped.
type SecretBox = Box<Zeroizing<[u8; 32]>>;

/// A zeroed [`SecretBox`] to fill in place.
fn secret_box() -> SecretBox {
    Box::new(Zeroizing::new([0u8; 32]))
}

/// The per-token data-encryption key, unwrapped in memory only while a
/// user or SO is logged in. The key and its AES schedule each live in one
/// heap allocation that is never moved (a `TokenKey` moves as two
/// pointers), zeroized on drop. Everything that expands, derives or uses
/// a key here runs under [`wiping`]: the schedules, round keys and
/// keystream it leaves on the stack are gone before the caller goes on
/// (the caller might otherwise move them to the heap with some value it
/// builds on the same stack).
pub struct TokenKey {
    bytes: SecretBox,
    cipher: Box<Aes256Gcm>,
}

impl TokenKey {
    /// A fresh random token key.
    pub fn generate() -> Result<TokenKey> {
        let mut bytes = secret_box();
        random_bytes(&mut bytes[..])?;
        Ok(TokenKey::from_box(bytes))
    }

    /// A token key with the value `key` (copied into its own allocation).
    pub fn from_bytes(key: &[u8; 32]) -> Result<TokenKey> {
        let mut bytes = secret_box();
        bytes.copy_from_slice(key);
        Ok(TokenKey::from_box(bytes))
    }

    fn from_box(bytes: SecretBox) -> TokenKey {
        let key: &[u8; 32] = &bytes;
        let cipher = wiping(|| Box::new(Aes256Gcm::new(key.into())));
        TokenKey { bytes, cipher }
    }

    /// Seals `plaintext`; output is nonce ‖ ciphertext ‖ tag.
    pub fn seal(&self, aad: &[u8], plaintext: &[u8]) -> Result<Vec<u8>> {
        wiping(|| seal_with(&self.cipher, aad, plaintext))
    }

    /// Opens a value produced by [`TokenKey::seal`] with the same `aad`.
    pub fn unseal(&self, aad: &[u8], sealed: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
        wiping(|| unseal_with(&self.cipher, aad, sealed)).map_err(|_| {
            crate::log::error(format_args!("sealed attribute failed authentication"));
            err(CKR_DEVICE_ERROR)
        })
    }

    /// Wraps this key under a key derived from `pin`.
    pub fn wrap(&self, pin: &[u8], iterations: u32) -> Result<WrappedKey> {
        let mut salt = [0u8; 16];
        random_bytes(&mut salt)?;
        let sealed = wiping(|| {
            let kek = derive(pin, &salt, iterations);
            let key: &[u8; 32] = &kek;
            let cipher = Box::new(Aes256Gcm::new(key.into()));
            seal_with(&cipher, KDF_NAME.as_bytes(), &self.bytes[..])
        });
        let sealed = sealed?;
        Ok(WrappedKey {
            kdf: KDF_NAME.to_string(),
            iterations,
            salt: hex(&salt),
            sealed: hex(&sealed),
        })
    }
}

/// The token key wrapped under a PIN, as stored in the token's metadata.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct WrappedKey {
    /// Key derivation function; only `pbkdf2-hmac-sha256` is defined.
    pub kdf: String,
    /// PBKDF2 iteration count.
    pub iterations: u32,
    /// Hex salt.
    pub salt: String,
    /// Hex nonce ‖ ciphertext ‖ tag of the token key.
    pub sealed: String,
}

impl WrappedKey {
    /// Derives the key-encryption key from `pin` and unwraps the token key.
    /// A wrong PIN gives `CKR_PIN_INCORRECT`.
    /// A record that no wrap could have written (an iteration count above
    /// [`MAX_PIN_KDF_ITERATIONS`], an oversized salt or sealed key) is refused
    /// with `CKR_DEVICE_ERROR` before any work: the stored metadata is input
    /// from whoever can write the token's files.
    pub fn unwrap(&self, pin: &[u8]) -> Result<TokenKey> {
        if self.kdf != KDF_NAME
            || self.iterations > MAX_PIN_KDF_ITERATIONS
            || self.salt.len() > 2 * MAX_SALT_LEN
            || self.sealed.len() > 2 * MAX_SEALED_KEY_LEN
        {
            return Err(err(CKR_DEVICE_ERROR));
        }
        let salt = unhex(&self.salt)?;
        let sealed = unhex(&self.sealed)?;
        let plain = wiping(|| {
            let kek = derive(pin, &salt, self.iterations);
            let key: &[u8; 32] = &kek;
            let cipher = Box::new(Aes256Gcm::new(key.into()));
            unseal_with(&cipher, KDF_NAME.as_bytes(), &sealed)
        });
        let plain = plain.map_err(|_| err(CKR_PIN_INCORRECT))?;
        if plain.len() != 32 {
            return Err(err(CKR_DEVICE_ERROR));
        }
        let mut bytes = secret_box();
        bytes.copy_from_slice(&plain);
        drop(plain);
        Ok(TokenKey::from_box(bytes))
    }
}

/// The key-encryption key of a PIN, in place in a [`SecretBox`].
fn derive(pin: &[u8], salt: &[u8], iterations: u32) -> SecretBox {
    let mut out = secret_box();
    pbkdf2::pbkdf2_hmac::<Sha256>(pin, salt, iterations, &mut out[..]);
    out
}

fn seal_with(cipher: &Aes256Gcm, aad: &[u8], plaintext: &[u8]) -> Result<Vec<u8>> {
    let mut nonce = [0u8; NONCE_LEN];
    random_bytes(&mut nonce)?;
    let ct = cipher
        .encrypt(
            &Nonce::from(nonce),
            Payload {
                msg: plaintext,
                aad,
            },
        )
        .map_err(|_| err(CKR_GENERAL_ERROR))?;
    let mut out = Vec::with_capacity(NONCE_LEN + ct.len());
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&ct);
    Ok(out)
}

fn unseal_with(
    cipher: &Aes256Gcm,
    aad: &[u8],
    sealed: &[u8],
) -> std::result::Result<Zeroizing<Vec<u8>>, ()> {
    if sealed.len() < NONCE_LEN + 16 {
        return Err(());
    }
    let (nonce, ct) = sealed.split_at(NONCE_LEN);
    let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| ())?;
    cipher
        .decrypt(&Nonce::from(nonce), Payload { msg: ct, aad })
        .map(Zeroizing::new)
        .map_err(|_| ())
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// Inverse of [`hex`]; corrupt input is a device error.
pub fn unhex(s: &str) -> Result<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return Err(err(CKR_DEVICE_ERROR));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|_| err(CKR_DEVICE_ERROR)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_round_trip_and_aad_binding() {
        let k = TokenKey::generate().unwrap();
        let s = k.seal(b"obj1/value", b"secret").unwrap();
        assert_eq!(k.unseal(b"obj1/value", &s).unwrap().as_slice(), b"secret");
        assert!(k.unseal(b"obj2/value", &s).is_err());
        let mut tampered = s.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert!(k.unseal(b"obj1/value", &tampered).is_err());
        assert!(k.unseal(b"obj1/value", &s[..10]).is_err());
    }

    #[test]
    fn wrap_under_pin() {
        let k = TokenKey::generate().unwrap();
        let w = k.wrap(b"1234", 1000).unwrap();
        let k2 = w.unwrap(b"1234").unwrap();
        assert_eq!(*k.bytes, *k2.bytes);
        assert_eq!(w.unwrap(b"1235").err().unwrap().rv(), CKR_PIN_INCORRECT);
        assert_ne!(
            w.salt,
            k.wrap(b"1234", 1000).unwrap().salt,
            "salt is random"
        );
    }

    #[test]
    fn edited_wraps_are_refused_before_any_work() {
        let k = TokenKey::generate().unwrap();
        let w = k.wrap(b"1234", 1000).unwrap();
        // u32::MAX iterations would take hours per login (this test would
        // hang): refused at once, as are oversized fields.
        for edited in [
            WrappedKey {
                iterations: u32::MAX,
                ..w.clone()
            },
            WrappedKey {
                salt: "00".repeat(1 << 20),
                ..w.clone()
            },
            WrappedKey {
                sealed: "00".repeat(1 << 20),
                ..w.clone()
            },
            WrappedKey {
                kdf: "argon2".into(),
                ..w.clone()
            },
        ] {
            assert_eq!(edited.unwrap(b"1234").err().unwrap().rv(), CKR_DEVICE_ERROR);
        }
        assert!(w.unwrap(b"1234").is_ok());
    }

    #[test]
    fn hex_round_trip() {
        assert_eq!(
            unhex(&hex(&[0, 1, 0xab, 0xff])).unwrap(),
            vec![0, 1, 0xab, 0xff]
        );
        assert!(unhex("abc").is_err());
        assert!(unhex("zz").is_err());
    }
}
