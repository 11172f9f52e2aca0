//! MACs: HMAC-SHA256, HMAC-SHA512, HMAC-SHA3-256 (generic secret keys) and
//! AES-CMAC. Every
//! output is compared with the expected MAC: computed in-process (hmac, cmac)
//! when the key value is known, else the token's own MAC once `C_Verify` has
//! accepted it and rejected a corrupted copy.

use std::sync::Arc;

use cryptoki_sys::*;

use super::alg::KeySpec;
use super::alg::MacAlg;
use super::check;
use super::failure::Failure;
use super::failure::ck;
use super::failure::written;
use super::op::DataSpec;
use super::op::OpDef;
use super::op::OpKind;
use super::op::Prep;
use super::op::Worker;
use super::op::test_data;
use crate::token::ckr::ckr_name;
use crate::token::raw::KeyCall;
use crate::token::raw::{Mech, RawModule};

impl MacAlg {
    /// The mechanism.
    pub fn mechanism(&self) -> CK_MECHANISM_TYPE {
        match self {
            MacAlg::HmacSha256 => CKM_SHA256_HMAC,
            MacAlg::HmacSha512 => CKM_SHA512_HMAC,
            MacAlg::HmacSha3_256 => CKM_SHA3_256_HMAC,
            MacAlg::AesCmac => CKM_AES_CMAC,
        }
    }

    /// MAC length in bytes.
    pub fn mac_len(&self) -> usize {
        match self {
            MacAlg::HmacSha256 => 32,
            MacAlg::HmacSha512 => 64,
            MacAlg::HmacSha3_256 => 32,
            MacAlg::AesCmac => 16,
        }
    }

    /// The key this MAC uses.
    pub fn key(&self) -> KeySpec {
        match self {
            MacAlg::HmacSha256 => KeySpec::GenericSecret(32),
            MacAlg::HmacSha512 => KeySpec::GenericSecret(64),
            MacAlg::HmacSha3_256 => KeySpec::GenericSecret(32),
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
            MacAlg::HmacSha3_256,
            "hmac-sha3-256",
            "HMAC-SHA3-256",
            MacAlg::HmacSha3_256.key(),
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
    expect: Vec<u8>,
    /// What `expect` is, for the failure message.
    source: &'static str,
}

impl Worker for MacWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let (rv, n) = self.raw.key_single(
            KeyCall::Sign,
            self.s,
            &mut self.mech,
            self.key,
            &self.data,
            &mut self.out,
        );
        self.len = n;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        let mac = written(&self.raw, rv, &self.out, self.len)?;
        check::length("MAC", mac.len(), self.expect.len())?;
        if *mac != self.expect[..] {
            return Err(check::failed(format!("MAC differs from {}", self.source)));
        }
        Ok(())
    }
}

/// The MAC every call must return, and where it comes from: computed in-process
/// when the key value is known; otherwise the token's own MAC, accepted only
/// after `C_Verify` took it and rejected a corrupted copy with
/// `CKR_SIGNATURE_INVALID`.
fn expected_mac(
    m: MacAlg,
    p: &Prep<'_>,
    key: CK_OBJECT_HANDLE,
    known: Option<&[u8]>,
    data: &[u8],
) -> Result<(Vec<u8>, &'static str), Failure> {
    if let Some(r) = known.and_then(|k| check::mac_reference(m, k, data)) {
        return Ok((r, "the in-process MAC"));
    }
    let mut out = vec![0u8; 128];
    ck(p.raw
        .sign_init(p.session, &mut Mech::plain(m.mechanism()), key))?;
    let (rv, n) = p.raw.sign(p.session, data, &mut out);
    let n = written(p.raw, rv, &out, n)?.len();
    out.truncate(n);
    check::length("prepared MAC", n, m.mac_len())?;
    let verify = |mac: &[u8]| -> Result<CK_RV, Failure> {
        ck(p.raw
            .verify_init(p.session, &mut Mech::plain(m.mechanism()), key))?;
        Ok(p.raw.verify(p.session, data, mac))
    };
    let rv = verify(&out)?;
    if rv != CKR_OK {
        return Err(check::failed(format!(
            "self-check: C_Verify of the prepared MAC returned {}",
            ckr_name(rv)
        )));
    }
    let rv = verify(&check::corrupted(&out))?;
    if rv != CKR_SIGNATURE_INVALID {
        return Err(check::failed(format!(
            "self-check: C_Verify of a corrupted MAC returned {}, not CKR_SIGNATURE_INVALID",
            ckr_name(rv)
        )));
    }
    Ok((out, "the verified prepared MAC"))
}

/// Worker MACing `data_size` bytes; every output is compared with
/// [`expected_mac`].
pub fn worker(m: MacAlg, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let k = p.key()?;
    let key = k.secret_key()?;
    let data = test_data(p.data_size, 6);
    let known = check::key_value(p, k, key);
    let (expect, source) = expected_mac(m, p, key, known.as_deref(), &data)?;
    Ok(Box::new(MacWorker {
        raw: p.raw.clone(),
        s: p.session,
        mech: Mech::plain(m.mechanism()),
        key,
        data,
        out: vec![0u8; 128],
        len: 0,
        expect,
        source,
    }))
}
