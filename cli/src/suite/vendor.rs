//! Operations of vendor interfaces: `ed25519-verify-batch`, the batch
//! Ed25519 verification of dalek-pkcs11's "Vendor dalek-pkcs11" interface.
//! Modules without that interface report the op as unsupported.

use std::sync::Arc;

use cryptoki_sys::*;

use super::alg::KeySpec;
use super::alg::SigAlg;
use super::failure::Failure;
use super::failure::ck;
use super::op::DataSpec;
use super::op::OpDef;
use super::op::OpKind;
use super::op::Prep;
use super::op::Worker;
use super::op::test_data;
use super::sign::sign_once;
use crate::token::raw::RawModule;

/// Signatures per batch call.
pub const BATCH: usize = 64;

/// Vendor ops of the catalogue.
pub fn ops() -> Vec<OpDef> {
    vec![OpDef {
        id: "ed25519-verify-batch".into(),
        title: format!("Ed25519 verify, batch of {BATCH} (one op = one batch)"),
        kind: OpKind::VerifyBatch(BATCH),
        mechanism: CKM_EDDSA,
        also_needs: KeySpec::Ed25519.gen_mechanism().into_iter().collect(),
        key: Some(KeySpec::Ed25519),
        key_bits: None,
        data: DataSpec::Fixed(32),
    }]
}

struct BatchWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    keys: Vec<CK_OBJECT_HANDLE>,
    _data: Vec<Vec<u8>>,
    data_ptrs: Vec<*const u8>,
    lens: Vec<CK_ULONG>,
    sig_ptrs: Vec<*const u8>,
    _sigs: Vec<Vec<u8>>,
}

// SAFETY: the raw pointers point into buffers this worker owns (`data`,
// `_sigs`), which move with it and are never shared.
unsafe impl Send for BatchWorker {}

impl Worker for BatchWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        self.raw.verify_batch(
            self.s,
            &self.keys,
            &self.data_ptrs,
            &self.lens,
            &self.sig_ptrs,
        )
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)
    }
}

/// Worker verifying `n` signatures (over distinct messages, made untimed
/// with the op's key) per call; a batch with one corrupted signature must be
/// rejected before timing starts.
pub fn verify_batch_worker(n: usize, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let k = p.key()?;
    let (public, private) = (k.public_key()?, k.private_key()?);
    let data: Vec<Vec<u8>> = (0..n).map(|i| test_data(p.data_size, i as u8)).collect();
    let sigs = data
        .iter()
        .map(|d| sign_once(p.raw, p.session, SigAlg::Ed25519, private, d))
        .collect::<Result<Vec<_>, _>>()?;
    let keys = vec![public; n];
    let data_ptrs: Vec<*const u8> = data.iter().map(|d| d.as_ptr()).collect();
    let lens: Vec<CK_ULONG> = data.iter().map(|d| d.len() as CK_ULONG).collect();
    let mut bad = sigs.clone();
    bad[n / 2][5] ^= 1;
    let bad_ptrs: Vec<*const u8> = bad.iter().map(|s| s.as_ptr()).collect();
    if p.raw
        .verify_batch(p.session, &keys, &data_ptrs, &lens, &bad_ptrs)
        == CKR_OK
    {
        return Err(Failure::Check(
            "self-check: a corrupted batch verified".into(),
        ));
    }
    let sig_ptrs = sigs.iter().map(|s| s.as_ptr()).collect();
    Ok(Box::new(BatchWorker {
        raw: p.raw.clone(),
        s: p.session,
        keys,
        _data: data,
        data_ptrs,
        lens,
        sig_ptrs,
        _sigs: sigs,
    }))
}
