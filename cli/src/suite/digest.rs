//! Message digests: SHA-256, SHA-384, SHA-512, SHA-1, SHA3-256, SHA3-512.
//! Every output is compared with the digest computed in-process (sha2, sha1,
//! sha3) before the run.

use std::sync::Arc;

use cryptoki_sys::*;
use sha2::Digest;

use super::alg::HashAlg;
use super::failure::Failure;
use super::failure::written;
use super::op::DataSpec;
use super::op::OpDef;
use super::op::OpKind;
use super::op::Prep;
use super::op::Worker;
use super::op::test_data;
use crate::token::raw::{Mech, RawModule};

impl HashAlg {
    /// The op id (`sha256`), also the hash's name in other ids.
    pub fn id(&self) -> &'static str {
        match self {
            HashAlg::Sha1 => "sha1",
            HashAlg::Sha256 => "sha256",
            HashAlg::Sha384 => "sha384",
            HashAlg::Sha512 => "sha512",
            HashAlg::Sha3_256 => "sha3-256",
            HashAlg::Sha3_512 => "sha3-512",
        }
    }

    /// The mechanism.
    pub fn mechanism(&self) -> CK_MECHANISM_TYPE {
        match self {
            HashAlg::Sha1 => CKM_SHA_1,
            HashAlg::Sha256 => CKM_SHA256,
            HashAlg::Sha384 => CKM_SHA384,
            HashAlg::Sha512 => CKM_SHA512,
            HashAlg::Sha3_256 => CKM_SHA3_256,
            HashAlg::Sha3_512 => CKM_SHA3_512,
        }
    }

    fn reference(&self, data: &[u8]) -> Vec<u8> {
        match self {
            HashAlg::Sha1 => sha1::Sha1::digest(data).to_vec(),
            HashAlg::Sha256 => sha2::Sha256::digest(data).to_vec(),
            HashAlg::Sha384 => sha2::Sha384::digest(data).to_vec(),
            HashAlg::Sha512 => sha2::Sha512::digest(data).to_vec(),
            HashAlg::Sha3_256 => sha3::Sha3_256::digest(data).to_vec(),
            HashAlg::Sha3_512 => sha3::Sha3_512::digest(data).to_vec(),
        }
    }
}

/// The op's title (`SHA-256`, `SHA3-256`).
fn title(h: HashAlg) -> String {
    match h {
        HashAlg::Sha3_256 | HashAlg::Sha3_512 => h.id().to_uppercase(),
        _ => h.id().to_uppercase().replace("SHA", "SHA-"),
    }
}

/// Digest ops of the catalogue (SHA-1 and SHA-3 last: they came later).
pub fn ops() -> Vec<OpDef> {
    [
        HashAlg::Sha256,
        HashAlg::Sha384,
        HashAlg::Sha512,
        HashAlg::Sha1,
        HashAlg::Sha3_256,
        HashAlg::Sha3_512,
    ]
    .into_iter()
    .map(|h| OpDef {
        id: h.id().to_string(),
        title: title(h),
        kind: OpKind::Digest(h),
        mechanism: h.mechanism(),
        also_needs: vec![],
        key: None,
        key_bits: None,
        data: DataSpec::Variable {
            default: 1024,
            align: 1,
        },
    })
    .collect()
}

struct DigestWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    mech: Mech,
    data: Vec<u8>,
    out: Vec<u8>,
    len: usize,
    expect: Vec<u8>,
}

impl Worker for DigestWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let (rv, n) = self
            .raw
            .digest_single(self.s, &mut self.mech, &self.data, &mut self.out);
        self.len = n;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        if *written(&self.raw, rv, &self.out, self.len)? != self.expect[..] {
            return Err(Failure::Check("digest differs from the reference".into()));
        }
        Ok(())
    }
}

/// Worker hashing `data_size` bytes.
pub fn worker(h: HashAlg, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let data = test_data(p.data_size, 5);
    Ok(Box::new(DigestWorker {
        raw: p.raw.clone(),
        s: p.session,
        mech: Mech::plain(h.mechanism()),
        expect: h.reference(&data),
        data,
        out: vec![0u8; 128],
        len: 0,
    }))
}
