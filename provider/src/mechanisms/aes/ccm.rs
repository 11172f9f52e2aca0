//! AES-CCM (mechanisms spec 3.0 §2.13, NIST SP 800-38C, RFC 3610) over the
//! key's expanded schedule: the CBC-MAC of `B0 ‖ encoded AAD ‖ payload`
//! (zero-padded to blocks) and CTR encryption from counter block 1, the tag
//! encrypted with counter block 0.
//!
//! `CK_CCM_PARAMS.ulDataLen` is the payload (plaintext) length in both
//! directions, as kryoptic (OpenSSL) takes it: decryption expects
//! `ulDataLen + ulMACLen` bytes. The nonce is 7 to 13 bytes (`q = 15 - n`
//! length bytes), the tag 4, 6, …, 16 bytes; else
//! `CKR_MECHANISM_PARAM_INVALID`. Decryption computes the plaintext into a
//! buffer of its own and releases it only after the tag matched
//! (`CKR_ENCRYPTED_DATA_INVALID` otherwise).

use super::key::{AesKey, BLOCK, Schedule, ct_eq};
use crate::error::{Result, err};
use crate::mechanisms::operation::Direction;
use aes::cipher::{Array, InnerIvInit, StreamCipher};
use cryptoki_sys::*;
use zeroize::{Zeroize, Zeroizing};

/// Checks the CCM parameter: nonce length, tag length, and that the data
/// length fits in the `q = 15 - n` bytes B0 gives it.
pub fn ccm_check(nonce_len: usize, tag_len: usize, data_len: u64) -> Result<()> {
    let bad = || err(CKR_MECHANISM_PARAM_INVALID);
    if !(7..=13).contains(&nonce_len) || !(4..=16).contains(&tag_len) || !tag_len.is_multiple_of(2)
    {
        return Err(bad());
    }
    let q = 15 - nonce_len;
    if q < 8 && data_len >> (8 * q) != 0 {
        return Err(bad());
    }
    Ok(())
}

/// Counter block `i` (SP 800-38C A.3): flags `q - 1`, the nonce, `i` in
/// `q` bytes.
fn counter_block(nonce: &[u8], i: u64) -> [u8; BLOCK] {
    let q = 15 - nonce.len();
    let mut b = [0u8; BLOCK];
    b[0] = (q - 1) as u8;
    b[1..1 + nonce.len()].copy_from_slice(nonce);
    let be = i.to_be_bytes();
    let take = q.min(8);
    b[BLOCK - take..].copy_from_slice(&be[8 - take..]);
    b
}

/// The full CBC-MAC `T` (SP 800-38C §6.1 steps 1–4) of `payload` with
/// `nonce`, `aad` and the tag length.
fn cbc_mac(key: &AesKey, nonce: &[u8], aad: &[u8], tag_len: usize, payload: &[u8]) -> [u8; BLOCK] {
    let q = 15 - nonce.len();
    let mut b0 = [0u8; BLOCK];
    b0[0] = (u8::from(!aad.is_empty()) << 6) | ((((tag_len - 2) / 2) as u8) << 3) | (q - 1) as u8;
    b0[1..1 + nonce.len()].copy_from_slice(nonce);
    let len = (payload.len() as u64).to_be_bytes();
    let take = q.min(8);
    b0[BLOCK - take..].copy_from_slice(&len[8 - take..]);
    let mut state = [0u8; BLOCK];
    key.cbc_mac(&mut state, &b0);
    if !aad.is_empty() {
        // §A.2.2: the AAD length in 2, 6 or 10 bytes, then the AAD, zero
        // padded to blocks.
        let a = aad.len() as u64;
        let mut header = Vec::with_capacity(10 + aad.len() + BLOCK);
        if a < (1 << 16) - (1 << 8) {
            header.extend_from_slice(&(a as u16).to_be_bytes());
        } else if a < 1 << 32 {
            header.extend_from_slice(&[0xff, 0xfe]);
            header.extend_from_slice(&(a as u32).to_be_bytes());
        } else {
            header.extend_from_slice(&[0xff, 0xff]);
            header.extend_from_slice(&a.to_be_bytes());
        }
        header.extend_from_slice(aad);
        header.resize(header.len().div_ceil(BLOCK) * BLOCK, 0);
        key.cbc_mac(&mut state, &header);
    }
    let whole = payload.len() / BLOCK * BLOCK;
    key.cbc_mac(&mut state, &payload[..whole]);
    if whole < payload.len() {
        let mut last = [0u8; BLOCK];
        last[..payload.len() - whole].copy_from_slice(&payload[whole..]);
        key.cbc_mac(&mut state, &last);
        last.zeroize();
    }
    state
}

/// CTR from counter block 1 over `buf`, in place.
fn ctr(key: &AesKey, nonce: &[u8], buf: &mut [u8]) {
    let start = counter_block(nonce, 1);
    with_cipher!(key, c => {
        let mut s = ctr::Ctr128BE::from_core(ctr::CtrCore::inner_iv_init(c, &Array::from(start)));
        s.apply_keystream(buf);
    });
}

/// `T xor MSB_t(E_K(Ctr0))`.
fn tag(key: &AesKey, nonce: &[u8], mut t: [u8; BLOCK]) -> [u8; BLOCK] {
    let mut s0 = counter_block(nonce, 0);
    key.encrypt_block(&mut s0);
    t.iter_mut().zip(&s0).for_each(|(t, s)| *t ^= s);
    s0.zeroize();
    t
}

/// Encrypts (`data` is the payload; `out` gets ciphertext ‖ tag) or
/// decrypts (`data` is ciphertext ‖ tag; `out` gets the payload once the
/// tag matched). The caller checked the parameters with [`ccm_check`] and
/// the lengths against `ulDataLen`.
pub(super) fn ccm_run(
    key: &AesKey,
    direction: Direction,
    nonce: &[u8],
    aad: &[u8],
    tag_len: usize,
    data: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    match direction {
        Direction::Encrypt => {
            let n = data.len();
            let t = tag(key, nonce, cbc_mac(key, nonce, aad, tag_len, data));
            out[..n].copy_from_slice(data);
            ctr(key, nonce, &mut out[..n]);
            out[n..n + tag_len].copy_from_slice(&t[..tag_len]);
            Ok(n + tag_len)
        }
        Direction::Decrypt => {
            if data.len() < tag_len {
                return Err(err(CKR_ENCRYPTED_DATA_LEN_RANGE));
            }
            let (ciphertext, received) = data.split_at(data.len() - tag_len);
            let mut plain = Zeroizing::new(ciphertext.to_vec());
            ctr(key, nonce, &mut plain);
            let t = tag(key, nonce, cbc_mac(key, nonce, aad, tag_len, &plain));
            if !ct_eq(&t[..tag_len], received) {
                return Err(err(CKR_ENCRYPTED_DATA_INVALID));
            }
            out[..plain.len()].copy_from_slice(&plain);
            Ok(plain.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::test_util::{hex, unhex};

    /// RFC 3610 packet vector #1 (13-byte nonce, 8 bytes of AAD, 8-byte
    /// tag) and SP 800-38C C.1 (7-byte nonce, 4-byte tag).
    #[test]
    fn rfc3610_and_sp800_38c_examples() {
        let k = AesKey::new(&unhex("c0c1c2c3c4c5c6c7c8c9cacbcccdcecf")).unwrap();
        let nonce = unhex("00000003020100a0a1a2a3a4a5");
        let packet = unhex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e");
        let (aad, payload) = packet.split_at(8);
        let mut out = vec![0u8; payload.len() + 8];
        ccm_run(&k, Direction::Encrypt, &nonce, aad, 8, payload, &mut out).unwrap();
        assert_eq!(
            hex(&out),
            "588c979a61c663d2f066d0c2c0f989806d5f6b61dac38417e8d12cfdf926e0"
        );
        let mut back = vec![0u8; payload.len()];
        ccm_run(&k, Direction::Decrypt, &nonce, aad, 8, &out, &mut back).unwrap();
        assert_eq!(back, payload);
        out[3] ^= 1;
        assert_eq!(
            ccm_run(&k, Direction::Decrypt, &nonce, aad, 8, &out, &mut back)
                .unwrap_err()
                .rv(),
            CKR_ENCRYPTED_DATA_INVALID
        );

        let k = AesKey::new(&unhex("404142434445464748494a4b4c4d4e4f")).unwrap();
        let mut out = [0u8; 8];
        ccm_run(
            &k,
            Direction::Encrypt,
            &unhex("10111213141516"),
            &unhex("0001020304050607"),
            4,
            &unhex("20212223"),
            &mut out,
        )
        .unwrap();
        assert_eq!(hex(&out), "7162015b4dac255d");
    }

    #[test]
    fn parameter_checks() {
        assert!(ccm_check(7, 4, 0).is_ok());
        assert!(ccm_check(13, 16, 65535).is_ok());
        assert!(ccm_check(13, 16, 65536).is_err());
        assert!(ccm_check(6, 16, 0).is_err());
        assert!(ccm_check(14, 16, 0).is_err());
        assert!(ccm_check(12, 5, 0).is_err());
        assert!(ccm_check(12, 2, 0).is_err());
        assert!(ccm_check(12, 18, 0).is_err());
    }
}
