//! ChaCha20 (PKCS #11 3.0 mechanisms spec, "ChaCha20" and
//! "ChaCha20/Poly1305"): `CKK_CHACHA20` keys (32 bytes), the
//! `CKM_CHACHA20` stream cipher and the `CKM_CHACHA20_POLY1305` AEAD
//! (RFC 8439), with the RustCrypto `chacha20` and `chacha20poly1305` crates.
//!
//! `CKM_CHACHA20` (`CK_CHACHA20_PARAMS`) takes the two layouts the spec
//! names: a 32-bit block counter with a 96-bit nonce (RFC 8439 §2.3) or a
//! 64-bit counter with a 64-bit nonce (the original construction). The
//! counter bytes are read little-endian, as the ChaCha state words are
//! (the python `cryptography` / OpenSSL 16-byte IV is counter ‖ nonce in
//! that order). A message that would take the counter to its largest
//! value (all ones: the `chacha20` crate stops one block before the wrap)
//! is refused (`CKR_DATA_LEN_RANGE` / `CKR_ENCRYPTED_DATA_LEN_RANGE`),
//! never wrapped, like `CKM_AES_CTR`.
//!
//! `CKM_CHACHA20_POLY1305` (`CK_SALSA20_CHACHA20_POLY1305_PARAMS`) takes a
//! 12-byte nonce (RFC 8439 §2.8); the 8-byte-nonce variant is not
//! supported (`CKR_MECHANISM_PARAM_INVALID`). The 16-byte tag follows the
//! ciphertext. Like `CKM_AES_GCM`, multi-part calls buffer the whole
//! message: `C_*Update` outputs nothing and `C_*Final` everything, so
//! decryption releases no plaintext before the tag has been checked. The
//! token does not choose nonces: their uniqueness is the caller's duty
//! (docs/SECURITY.md).

use super::material::KeyMaterial;
use super::operation::{CipherOperation, Direction, OutputLen};
use super::params::{Mechanism, Param};
use crate::error::{Result, err};
use chacha20::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
use chacha20::{ChaCha20, ChaCha20Legacy};
use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Tag};
use cryptoki_sys::*;
use std::sync::Arc;
use zeroize::Zeroizing;

/// Key length in bytes (the only one).
pub const KEY_LEN: usize = 32;
/// Poly1305 tag length.
pub const TAG_LEN: usize = 16;
const BLOCK: u64 = 64;

/// A `CKK_CHACHA20` key value as key material (`CKR_KEY_SIZE_RANGE`
/// unless 32 bytes).
pub fn load(value: &[u8]) -> Result<KeyMaterial> {
    let key: [u8; KEY_LEN] = value.try_into().map_err(|_| err(CKR_KEY_SIZE_RANGE))?;
    Ok(KeyMaterial::ChaCha20(Zeroizing::new(key)))
}

fn chacha_key(key: &KeyMaterial) -> Result<&[u8; KEY_LEN]> {
    match key {
        KeyMaterial::ChaCha20(k) => Ok(k),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// Bytes of key stream left before the counter reaches its largest value
/// (`blocks` blocks; the `chacha20` crate stops one block short of the
/// wrap, so the all-ones counter value itself is never used), none when
/// the start position could not be reached.
fn usable(seek_ok: bool, blocks: u128) -> u128 {
    if seek_ok {
        blocks * u128::from(BLOCK)
    } else {
        0
    }
}

fn len_error(direction: Direction) -> crate::error::Error {
    match direction {
        Direction::Encrypt => err(CKR_DATA_LEN_RANGE),
        Direction::Decrypt => err(CKR_ENCRYPTED_DATA_LEN_RANGE),
    }
}

/// The key stream of `CKM_CHACHA20`.
enum Stream {
    /// 32-bit counter, 96-bit nonce (RFC 8439).
    Ietf(Box<ChaCha20>),
    /// 64-bit counter, 64-bit nonce.
    Legacy(Box<ChaCha20Legacy>),
}

enum Mode {
    /// `CKM_CHACHA20`: the stream and how many bytes remain before the
    /// counter would wrap.
    Stream { stream: Stream, remaining: u128 },
    /// `CKM_CHACHA20_POLY1305`: nonce and AAD; the message is buffered.
    Aead { nonce: [u8; 12], aad: Vec<u8> },
}

/// A ChaCha20 or ChaCha20-Poly1305 encryption or decryption.
pub struct ChaChaCipher {
    key: Arc<KeyMaterial>,
    direction: Direction,
    mode: Mode,
    buffer: Zeroizing<Vec<u8>>,
}

impl ChaChaCipher {
    /// Starts an operation (`CKR_MECHANISM_PARAM_INVALID` for a malformed
    /// parameter, `CKR_KEY_TYPE_INCONSISTENT` for another mechanism).
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>, direction: Direction) -> Result<Self> {
        let k = chacha_key(&key)?;
        let bad = || err(CKR_MECHANISM_PARAM_INVALID);
        let mode = match (mech.ty, mech.param) {
            (
                CKM_CHACHA20,
                Param::ChaCha20 {
                    counter,
                    counter_bits,
                    nonce,
                    nonce_bits,
                },
            ) => {
                let bits = |b: &[u8]| CK_ULONG::try_from(b.len().saturating_mul(8)).ok();
                if bits(counter) != Some(counter_bits) || bits(nonce) != Some(nonce_bits) {
                    return Err(bad());
                }
                match (counter_bits, nonce_bits) {
                    (32, 96) => {
                        let start = u32::from_le_bytes(counter.try_into().map_err(|_| bad())?);
                        let n: [u8; 12] = nonce.try_into().map_err(|_| bad())?;
                        let mut s = ChaCha20::new(k.into(), &n.into());
                        let ok = s.try_seek(u64::from(start) * BLOCK).is_ok();
                        Mode::Stream {
                            stream: Stream::Ietf(Box::new(s)),
                            remaining: usable(ok, u128::from(u32::MAX - start)),
                        }
                    }
                    (64, 64) => {
                        let start = u64::from_le_bytes(counter.try_into().map_err(|_| bad())?);
                        let n: [u8; 8] = nonce.try_into().map_err(|_| bad())?;
                        let mut s = ChaCha20Legacy::new(k.into(), &n.into());
                        let ok = s.try_seek(u128::from(start) * u128::from(BLOCK)).is_ok();
                        Mode::Stream {
                            stream: Stream::Legacy(Box::new(s)),
                            remaining: usable(ok, u128::from(u64::MAX - start)),
                        }
                    }
                    _ => return Err(bad()),
                }
            }
            (CKM_CHACHA20_POLY1305, Param::ChaChaPoly { nonce, aad }) => Mode::Aead {
                nonce: nonce.try_into().map_err(|_| bad())?,
                aad: aad.to_vec(),
            },
            (CKM_CHACHA20 | CKM_CHACHA20_POLY1305, _) => return Err(bad()),
            _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        };
        Ok(ChaChaCipher {
            key,
            direction,
            mode,
            buffer: Zeroizing::new(Vec::new()),
        })
    }

    fn stream_update(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let direction = self.direction;
        let Mode::Stream { stream, remaining } = &mut self.mode else {
            return Err(err(CKR_GENERAL_ERROR));
        };
        let n = data.len() as u128;
        if n > *remaining {
            return Err(len_error(direction));
        }
        let out = &mut out[..data.len()];
        out.copy_from_slice(data);
        match stream {
            Stream::Ietf(s) => s.try_apply_keystream(out),
            Stream::Legacy(s) => s.try_apply_keystream(out),
        }
        .map_err(|_| len_error(direction))?;
        *remaining -= n;
        Ok(data.len())
    }

    /// The AEAD over a whole message (from the buffer or the caller).
    fn aead_run(&self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let Mode::Aead { nonce, aad } = &self.mode else {
            return Err(err(CKR_GENERAL_ERROR));
        };
        let aead = ChaCha20Poly1305::new(chacha_key(&self.key)?.into());
        let nonce = (*nonce).into();
        match self.direction {
            Direction::Encrypt => {
                let n = data.len();
                let (body, rest) = out.split_at_mut(n);
                body.copy_from_slice(data);
                let tag = aead
                    .encrypt_inout_detached(&nonce, aad, body.into())
                    .map_err(|_| err(CKR_DATA_LEN_RANGE))?;
                rest[..TAG_LEN].copy_from_slice(&tag);
                Ok(n + TAG_LEN)
            }
            Direction::Decrypt => {
                if data.len() < TAG_LEN {
                    return Err(err(CKR_ENCRYPTED_DATA_LEN_RANGE));
                }
                let (ciphertext, tag) = data.split_at(data.len() - TAG_LEN);
                let body = &mut out[..ciphertext.len()];
                body.copy_from_slice(ciphertext);
                let tag = Tag::try_from(tag).map_err(|_| err(CKR_GENERAL_ERROR))?;
                if aead
                    .decrypt_inout_detached(&nonce, aad, body.into(), &tag)
                    .is_err()
                {
                    // The crate leaves the ciphertext; wipe it anyway.
                    body.fill(0);
                    return Err(err(CKR_ENCRYPTED_DATA_INVALID));
                }
                Ok(body.len())
            }
        }
    }

    fn aead_len(&self, input_len: usize) -> usize {
        match self.direction {
            Direction::Encrypt => input_len.saturating_add(TAG_LEN),
            Direction::Decrypt => input_len.saturating_sub(TAG_LEN),
        }
    }
}

impl CipherOperation for ChaChaCipher {
    fn output_len(&self, input_len: usize) -> OutputLen {
        match self.mode {
            Mode::Stream { .. } => OutputLen::Exact(input_len),
            Mode::Aead { .. } => OutputLen::Exact(self.aead_len(input_len)),
        }
    }

    fn process(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        match self.mode {
            Mode::Stream { .. } => self.stream_update(data, out),
            // Straight from the caller's input: what update + final gives.
            Mode::Aead { .. } => {
                let all;
                let input = if self.buffer.is_empty() {
                    data
                } else {
                    self.buffer.extend_from_slice(data);
                    all = Zeroizing::new(std::mem::take(&mut *self.buffer));
                    &all[..]
                };
                self.aead_run(input, out)
            }
        }
    }

    fn update_len(&self, input_len: usize) -> OutputLen {
        match self.mode {
            Mode::Stream { .. } => OutputLen::Exact(input_len),
            Mode::Aead { .. } => OutputLen::Exact(0),
        }
    }

    fn update(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        match self.mode {
            Mode::Stream { .. } => self.stream_update(data, out),
            Mode::Aead { .. } => {
                // RFC 8439 §2.8: at most 2^38 - 64 bytes of plaintext.
                let limit = (1u64 << 38) - 64 + TAG_LEN as u64;
                if (self.buffer.len() + data.len()) as u64 > limit {
                    return Err(len_error(self.direction));
                }
                self.buffer.extend_from_slice(data);
                Ok(0)
            }
        }
    }

    fn final_len(&self) -> OutputLen {
        match self.mode {
            Mode::Stream { .. } => OutputLen::Exact(0),
            Mode::Aead { .. } => OutputLen::Exact(self.aead_len(self.buffer.len())),
        }
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        match self.mode {
            Mode::Stream { .. } => Ok(0),
            Mode::Aead { .. } => {
                let data = Zeroizing::new(std::mem::take(&mut *self.buffer));
                self.aead_run(&data, out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::test_util::{hex, unhex};

    fn run(
        mech: &Mechanism<'_>,
        key: &Arc<KeyMaterial>,
        d: Direction,
        data: &[u8],
    ) -> Result<Vec<u8>> {
        let mut op = ChaChaCipher::new(mech, key.clone(), d)?;
        let mut out = vec![0u8; op.output_len(data.len()).bound()];
        let n = op.process(data, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    /// RFC 8439 §2.4.2 (first 16 bytes), and the counter-wrap limit.
    #[test]
    fn chacha20_rfc8439_and_wrap_limit() {
        let key = Arc::new(
            load(&unhex(
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            ))
            .unwrap(),
        );
        let nonce = unhex("000000000000004a00000000");
        let one = 1u32.to_le_bytes();
        let mech = Mechanism {
            ty: CKM_CHACHA20,
            param: Param::ChaCha20 {
                counter: &one,
                counter_bits: 32,
                nonce: &nonce,
                nonce_bits: 96,
            },
        };
        let ct = run(&mech, &key, Direction::Encrypt, b"Ladies and Gentl").unwrap();
        assert_eq!(hex(&ct), "6e2e359a2568f98041ba0728dd0d6981");
        let last = (u32::MAX - 1).to_le_bytes();
        let mech = Mechanism {
            ty: CKM_CHACHA20,
            param: Param::ChaCha20 {
                counter: &last,
                counter_bits: 32,
                nonce: &nonce,
                nonce_bits: 96,
            },
        };
        assert!(run(&mech, &key, Direction::Encrypt, &[0; 64]).is_ok());
        assert_eq!(
            run(&mech, &key, Direction::Encrypt, &[0; 65])
                .unwrap_err()
                .rv(),
            CKR_DATA_LEN_RANGE
        );
        let mech = Mechanism {
            ty: CKM_CHACHA20,
            param: Param::ChaCha20 {
                counter: &last,
                counter_bits: 32,
                nonce: &nonce[..8],
                nonce_bits: 64,
            },
        };
        assert_eq!(
            ChaChaCipher::new(&mech, key, Direction::Encrypt)
                .err()
                .unwrap()
                .rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
    }
}
