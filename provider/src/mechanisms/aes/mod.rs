//! AES (mechanisms spec §2.8–2.15): ECB, CBC, CBC-PAD, CTS, CTR, OFB,
//! CFB128/8/1, GCM, CCM, key wrap (RFC 3394), key wrap with padding
//! (RFC 5649) and with PKCS #7 padding, with the aes, cbc, ctr and aes-gcm
//! crates.
//!
//! The key schedule is expanded once, when the object's key material is
//! parsed ([`load`]), and every operation borrows it.
//!
//! Multi-part rules (base spec §5.9–5.10, mechanisms spec §2.8):
//! - ECB and CBC without padding output every complete block as soon as it
//!   is available; a final partial block is an error at `C_*Final`.
//! - CBC-PAD decryption holds back the last complete block until
//!   `C_DecryptFinal`, which removes the PKCS #7 padding.
//! - CTR, OFB and the CFB modes are streams: output length equals input
//!   length, output as the input arrives.
//! - CTS holds back the last 17 to 32 bytes until `C_*Final`.
//! - GCM buffers the whole message: `C_*Update` outputs nothing and
//!   `C_*Final` outputs everything, so decryption never releases plaintext
//!   before the tag has been verified. CCM buffers likewise, up to the
//!   announced `ulDataLen`.
//! - The key-wrap mechanisms are single-part only: their `C_*Update` and
//!   `C_*Final` return `CKR_FUNCTION_NOT_SUPPORTED` (and end the operation).
//!
//! `CKM_AES_KEY_WRAP_PAD` is the RFC 5649 algorithm, as SoftHSM2 implements
//! it. The v2.40 text of that mechanism was read both as RFC 5649 and as
//! RFC 3394 over PKCS #7 padding; PKCS #11 3.0 names the two unambiguously,
//! `CKM_AES_KEY_WRAP_KWP` (RFC 5649: the same code as `_PAD` here) and
//! `CKM_AES_KEY_WRAP_PKCS7`. `_PAD` keeps its RFC 5649 meaning for SoftHSM2
//! data and util/'s migration.
//!
//! The code is split by job: `key` holds the key ([`AesKey`], its expanded
//! schedule, the CMAC subkeys); `modes` the cipher operation [`AesCipher`]
//! with ECB, CBC, CBC-PAD and CTR, and [`load`] (the key as key material);
//! `feedback` OFB and CFB; `cts` ciphertext stealing; `gcm` GCM (GHASH,
//! `J0`, the tag, sealing and opening); `ccm` CCM; `wrap` the RFC 3394,
//! RFC 5649 and PKCS #7 key-wrap functions. This file only declares the
//! parts and re-exports them (and holds the helpers their tests share).

// `key` first: the others use its `with_cipher!`.
#[macro_use]
pub(super) mod key;
mod ccm;
mod cts;
mod feedback;
mod gcm;
mod material;
mod modes;
mod wrap;

pub use ccm::ccm_check;
pub use key::AesKey;
pub use material::{aes_key, load};
pub use modes::AesCipher;

#[cfg(test)]
mod tests {
    //! Helpers the unit tests of every part share.
    use super::*;
    use crate::error::Result;
    use crate::mechanisms::keys::KeyMaterial;
    use crate::mechanisms::test_util::unhex;
    use crate::mechanisms::{CipherOperation, Direction, Mechanism};
    use std::sync::Arc;

    pub(super) fn key(hex_key: &str) -> Arc<KeyMaterial> {
        Arc::new(load(&unhex(hex_key)).unwrap())
    }

    pub(super) fn run(
        mech: &Mechanism<'_>,
        key: &Arc<KeyMaterial>,
        direction: Direction,
        data: &[u8],
    ) -> Result<Vec<u8>> {
        let mut op = AesCipher::new(mech, key.clone(), direction)?;
        let mut out = vec![0u8; op.output_len(data.len()).bound()];
        let n = op.process(data, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    /// Feeds `data` in chunks of the given sizes through update and final.
    pub(super) fn run_parts(
        mech: &Mechanism<'_>,
        key: &Arc<KeyMaterial>,
        direction: Direction,
        data: &[u8],
        chunk: usize,
    ) -> Result<Vec<u8>> {
        let mut op = AesCipher::new(mech, key.clone(), direction)?;
        let mut out = Vec::new();
        for part in data.chunks(chunk) {
            let mut buf = vec![0u8; op.update_len(part.len()).bound()];
            let n = op.update(part, &mut buf)?;
            assert_eq!(op.update_len(0), op.update_len(0));
            out.extend_from_slice(&buf[..n]);
        }
        let mut buf = vec![0u8; op.final_len().bound()];
        let n = op.finish(&mut buf)?;
        out.extend_from_slice(&buf[..n]);
        Ok(out)
    }

    pub(super) const K128: &str = "2b7e151628aed2a6abf7158809cf4f3c";
}
