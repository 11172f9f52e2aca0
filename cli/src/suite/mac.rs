//! MACs: HMAC-SHA256, HMAC-SHA512 (generic secret keys) and AES-CMAC. MACs are
//! deterministic, so every output is compared with the first one.

use std::sync::Arc;

use cryptoki_sys::*;

use super::keys::KeySpec;
use super::{DataSpec, Failure, MacAlg, OpDef, OpKind, Prep, Worker, ck, test_data};
use crate::raw::{Mech, RawModule};

impl MacAlg {
    /// The mechanism.
    pub fn mechanism(&self) -> CK_MECHANISM_TYPE {
        match self {
            MacAlg::HmacSha256 => CKM_SHA256_HMAC,
            MacAlg::HmacSha512 => CKM_SHA512_HMAC,
            MacAlg::AesCmac => CKM_AES_CMAC,
        }
    }

    fn mac_len(&self) -> usize {
        match self {
            MacAlg::HmacSha256 => 32,
            MacAlg::HmacSha512 => 64,
            MacAlg::AesCmac => 16,
        }
    }

    /// The key this MAC uses.
    pub fn key(&self) -> KeySpec {
        match self {
            MacAlg::HmacSha256 => KeySpec::GenericSecret(32),
            MacAlg::HmacSha512 => KeySpec::GenericSecret(64),
            MacAlg::AesCmac => KeySpec::Aes(32),
        }
    }
}

/// A MAC op.
pub fn mac_op(m: MacAlg, id: &str, title: &str, key: KeySpec) -> OpDef {
    OpDef {
        id: id.to_string(),
        title: title.to_string(),
        kind: OpKind::Mac(m),
        mechanism: m.mechanism(),
        also_needs: key.gen_mechanism().into_iter().collect(),
        key: Some(key),
        key_bits: None,
        data: DataSpec::Variable {
            default: 32,
            align: 1,
        },
    }
}

/// MAC ops of the catalogue.
pub fn ops() -> Vec<OpDef> {
    vec![
        mac_op(
            MacAlg::HmacSha256,
            "hmac-sha256",
            "HMAC-SHA256",
            MacAlg::HmacSha256.key(),
        ),
        mac_op(
            MacAlg::HmacSha512,
            "hmac-sha512",
            "HMAC-SHA512",
            MacAlg::HmacSha512.key(),
        ),
        mac_op(
            MacAlg::AesCmac,
            "aes256-cmac",
            "AES-256-CMAC",
            MacAlg::AesCmac.key(),
        ),
    ]
}

struct MacWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    mech: Mech,
    key: CK_OBJECT_HANDLE,
    data: Vec<u8>,
    out: Vec<u8>,
    len: usize,
    expect_len: usize,
    reference: Option<Vec<u8>>,
}

impl Worker for MacWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let rv = self.raw.sign_init(self.s, &mut self.mech, self.key);
        if rv != CKR_OK {
            return rv;
        }
        let (rv, n) = self.raw.sign(self.s, &self.data, &mut self.out);
        self.len = n;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)?;
        if self.len != self.expect_len {
            return Err(Failure::Check(format!(
                "MAC length {} != {}",
                self.len, self.expect_len
            )));
        }
        match &self.reference {
            Some(r) if r[..] != self.out[..self.len] => {
                Err(Failure::Check("MAC of the same input changed".into()))
            }
            Some(_) => Ok(()),
            None => {
                self.reference = Some(self.out[..self.len].to_vec());
                Ok(())
            }
        }
    }
}

/// Worker MACing `data_size` bytes.
pub fn worker(m: MacAlg, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let k = p.key()?;
    let key = k.secret_key()?;
    Ok(Box::new(MacWorker {
        raw: p.raw.clone(),
        s: p.session,
        mech: Mech::plain(m.mechanism()),
        key,
        data: test_data(p.data_size, 6),
        out: vec![0u8; 128],
        len: 0,
        expect_len: m.mac_len(),
        reference: None,
    }))
}
