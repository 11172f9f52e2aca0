//! The AES feedback stream modes (mechanisms spec 3.0 §2.15, NIST
//! SP 800-38A §6.3–6.4): OFB, CFB128, CFB8 and CFB1, over the block cipher
//! of the key (the `aes` crate's constant-time implementation).
//!
//! All four are streams: any data length, output length equals input
//! length, multi-part output as soon as the input arrives. PKCS #11 data is
//! in bytes, so CFB1 processes every byte's eight bits, most significant bit
//! first, one cipher call per bit (as OpenSSL's `aes-*-cfb1` does without
//! `EVP_CIPH_FLAG_LENGTH_BITS`): SP 800-38A F.3.1's 16 bits are the two
//! bytes `6bc1`.
//!
//! None of these modes authenticates: a changed ciphertext bit changes the
//! plaintext without any error (docs/SECURITY.md).

use super::key::{AesKey, BLOCK};
use crate::mechanisms::operation::Direction;
use cryptoki_sys::*;
use zeroize::Zeroize;

/// Which feedback mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Feedback {
    /// `CKM_AES_OFB`: the keystream is `E_K` iterated on the IV.
    Ofb,
    /// `CKM_AES_CFB128`: full-block feedback of the ciphertext.
    Cfb128,
    /// `CKM_AES_CFB8`: one byte of ciphertext fed back per cipher call.
    Cfb8,
    /// `CKM_AES_CFB1`: one bit of ciphertext fed back per cipher call.
    Cfb1,
}

impl Feedback {
    /// The mode of a mechanism type, if it is one of the four.
    pub(super) fn of(ty: CK_MECHANISM_TYPE) -> Option<Feedback> {
        Some(match ty {
            CKM_AES_OFB => Feedback::Ofb,
            CKM_AES_CFB128 => Feedback::Cfb128,
            CKM_AES_CFB8 => Feedback::Cfb8,
            CKM_AES_CFB1 => Feedback::Cfb1,
            _ => return None,
        })
    }
}

/// The running state of a feedback mode (cloned for a saved operation
/// state; each copy wipes itself).
#[derive(Clone)]
pub(super) struct Stream {
    mode: Feedback,
    /// The shift register (OFB, CFB8, CFB1), or the block CFB128 is
    /// collecting ciphertext into.
    register: [u8; BLOCK],
    /// `E_K(register)` for OFB and CFB128 (the block being used).
    keystream: [u8; BLOCK],
    /// Bytes of `keystream` used (OFB, CFB128); `BLOCK` means a new block
    /// is needed before the next byte.
    used: usize,
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.register.zeroize();
        self.keystream.zeroize();
    }
}

impl Stream {
    pub(super) fn new(mode: Feedback, iv: [u8; BLOCK]) -> Stream {
        Stream {
            mode,
            register: iv,
            keystream: [0; BLOCK],
            used: BLOCK,
        }
    }

    /// Encrypts or decrypts `data` into `out` (same length), continuing
    /// from the state the previous call left.
    pub(super) fn apply(
        &mut self,
        key: &AesKey,
        direction: Direction,
        data: &[u8],
        out: &mut [u8],
    ) {
        let decrypt = direction == Direction::Decrypt;
        match self.mode {
            Feedback::Ofb | Feedback::Cfb128 => {
                for (i, o) in data.iter().zip(out.iter_mut()) {
                    if self.used == BLOCK {
                        if self.mode == Feedback::Ofb {
                            key.encrypt_block(&mut self.register);
                            self.keystream = self.register;
                        } else {
                            self.keystream = self.register;
                            key.encrypt_block(&mut self.keystream);
                        }
                        self.used = 0;
                    }
                    *o = i ^ self.keystream[self.used];
                    if self.mode == Feedback::Cfb128 {
                        // The ciphertext byte is the next register's byte.
                        self.register[self.used] = if decrypt { *i } else { *o };
                    }
                    self.used += 1;
                }
            }
            Feedback::Cfb8 => {
                for (i, o) in data.iter().zip(out.iter_mut()) {
                    let mut ks = self.register;
                    key.encrypt_block(&mut ks);
                    *o = i ^ ks[0];
                    ks.zeroize();
                    let c = if decrypt { *i } else { *o };
                    self.register.copy_within(1.., 0);
                    self.register[BLOCK - 1] = c;
                }
            }
            Feedback::Cfb1 => {
                for (i, o) in data.iter().zip(out.iter_mut()) {
                    let mut result = 0u8;
                    for bit in (0..8).rev() {
                        let mut ks = self.register;
                        key.encrypt_block(&mut ks);
                        let input = (i >> bit) & 1;
                        let output = input ^ (ks[0] >> 7);
                        ks.zeroize();
                        result |= output << bit;
                        let c = if decrypt { input } else { output };
                        let r = (u128::from_be_bytes(self.register) << 1) | u128::from(c);
                        self.register = r.to_be_bytes();
                    }
                    *o = result;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::test_util::{hex, unhex};

    const KEY: &str = "2b7e151628aed2a6abf7158809cf4f3c";
    const IV: &str = "000102030405060708090a0b0c0d0e0f";

    fn run(mode: Feedback, direction: Direction, data: &[u8], chunk: usize) -> Vec<u8> {
        let key = AesKey::new(&unhex(KEY)).unwrap();
        let mut s = Stream::new(mode, unhex(IV).try_into().unwrap());
        let mut out = vec![0u8; data.len()];
        for (d, o) in data.chunks(chunk).zip(out.chunks_mut(chunk)) {
            s.apply(&key, direction, d, o);
        }
        out
    }

    /// SP 800-38A F.3.1 (CFB1-AES128, 16 bits = 2 bytes), F.3.7 (CFB8,
    /// 18 bytes), F.3.13 (CFB128) and F.4.1 (OFB), in pieces of every size.
    #[test]
    fn sp800_38a_aes128() {
        let cases = [
            (Feedback::Cfb1, "6bc1", "68b3"),
            (
                Feedback::Cfb8,
                "6bc1bee22e409f96e93d7e117393172aae2d",
                "3b79424c9c0dd436bace9e0ed4586a4f32b9",
            ),
            (
                Feedback::Cfb128,
                "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51",
                "3b3fd92eb72dad20333449f8e83cfb4ac8a64537a0b3a93fcde3cdad9f1ce58b",
            ),
            (
                Feedback::Ofb,
                "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51",
                "3b3fd92eb72dad20333449f8e83cfb4a7789508d16918f03f53c52dac54ed825",
            ),
        ];
        for (mode, plain, cipher) in cases {
            let (p, c) = (unhex(plain), unhex(cipher));
            for chunk in 1..=p.len() {
                assert_eq!(
                    hex(&run(mode, Direction::Encrypt, &p, chunk)),
                    cipher,
                    "{mode:?} {chunk}"
                );
                assert_eq!(
                    run(mode, Direction::Decrypt, &c, chunk),
                    p,
                    "{mode:?} {chunk}"
                );
            }
        }
    }
}
