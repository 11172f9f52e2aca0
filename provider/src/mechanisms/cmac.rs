//! AES-CMAC (mechanisms spec §2.8 `CKM_AES_CMAC`, `CKM_AES_CMAC_GENERAL`;
//! RFC 4493) with the cmac crate.

use super::hmac::general_len;
use super::keys::KeyMaterial;
use super::{Mechanism, SignOperation};
use crate::error::{Result, err};
use cmac::{Cmac, KeyInit, Mac};
use cryptoki_sys::*;
use std::sync::Arc;

enum State {
    Aes128(Cmac<aes::Aes128>),
    Aes192(Cmac<aes::Aes192>),
    Aes256(Cmac<aes::Aes256>),
}

macro_rules! each {
    ($s:expr, $m:ident => $e:expr) => {
        match $s {
            State::Aes128($m) => $e,
            State::Aes192($m) => $e,
            State::Aes256($m) => $e,
        }
    };
}

/// An AES-CMAC computation.
pub struct CmacSign {
    state: State,
    out_len: usize,
}

impl CmacSign {
    /// Starts a CMAC with an AES key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let general = match mech.ty {
            CKM_AES_CMAC => false,
            CKM_AES_CMAC_GENERAL => true,
            _ => return Err(err(CKR_MECHANISM_INVALID)),
        };
        let KeyMaterial::Aes(k) = &*key else {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        };
        let out_len = general_len(mech, 16, general)?;
        let bad = |_| err(CKR_KEY_SIZE_RANGE);
        let v = k.bytes();
        let state = match v.len() {
            16 => State::Aes128(KeyInit::new_from_slice(v).map_err(bad)?),
            24 => State::Aes192(KeyInit::new_from_slice(v).map_err(bad)?),
            32 => State::Aes256(KeyInit::new_from_slice(v).map_err(bad)?),
            _ => return Err(err(CKR_KEY_SIZE_RANGE)),
        };
        Ok(CmacSign { state, out_len })
    }
}

impl SignOperation for CmacSign {
    fn output_len(&self) -> usize {
        self.out_len
    }

    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        self.update(data)?;
        self.finish(out)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        each!(&mut self.state, m => m.update(data));
        Ok(())
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let n = self.out_len;
        each!(&mut self.state, m => out[..n].copy_from_slice(&m.finalize_reset().into_bytes()[..n]));
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::seal::{hex, unhex};

    /// RFC 4493 §4, example 2 (16-byte message).
    #[test]
    fn rfc4493_example_2() {
        let key = Arc::new(
            super::super::aes::load(&unhex("2b7e151628aed2a6abf7158809cf4f3c").unwrap()).unwrap(),
        );
        let mut c = CmacSign::new(&Mechanism::plain(CKM_AES_CMAC), key).unwrap();
        let mut out = [0u8; 16];
        c.sign(
            &unhex("6bc1bee22e409f96e93d7e117393172a").unwrap(),
            &mut out,
        )
        .unwrap();
        assert_eq!(hex(&out), "070a16b46b4d4144f79bdd9dd04a287c");
    }
}
