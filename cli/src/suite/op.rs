//! What an operation is ([`OpDef`], [`OpKind`], [`DataSpec`]), what a worker
//! gets to prepare itself ([`Prep`]) and the [`Worker`] trait the runner
//! drives.

use std::sync::Arc;

use cryptoki_sys::{CK_MECHANISM_TYPE, CK_RV, CK_SESSION_HANDLE};

use super::alg::*;
use super::failure::Failure;
use super::keyset::{KeyHandles, StoreMode};
use crate::token::ckr::ckm_name;
use crate::token::population::{Population, ProbeCommand};
use crate::token::raw::RawModule;

/// One thread's instance of an operation, with its inputs prepared.
///
/// The runner calls `before` (untimed), then `call` (timed: exactly the PKCS#11
/// calls of one operation), then `check` (untimed) for every iteration.
pub trait Worker: Send {
    /// Prepare the next call outside the timed region (e.g. the next GCM IV).
    fn before(&mut self) {}
    /// The timed PKCS#11 calls of one operation.
    fn call(&mut self) -> CK_RV;
    /// Check the result of the last call (outside the timed region).
    fn check(&mut self, rv: CK_RV) -> Result<(), Failure>;
    /// For ops timed by someone else (a cold-start probe process): the
    /// latency of the last call, recorded instead of the runner's clock.
    fn measured_ns(&self) -> Option<u64> {
        None
    }
    /// Peak resident memory seen so far (cold-start probes).
    fn peak_rss_kib(&self) -> Option<u64> {
        None
    }
    /// True when untimed work around each call (a probe process, objects
    /// made or destroyed) would distort ops/s over the wall clock: ops/s is
    /// then threads ÷ mean latency.
    fn rate_from_latency(&self) -> bool {
        false
    }
    /// What the result should say about how this op was prepared where it
    /// differs from the usual path (e.g. a role-separated wrapping key,
    /// [`wrap`]): one line each, recorded in the result's warnings.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Size of the data an operation processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataSpec {
    /// Fixed input size (e.g. a 32-byte digest to sign); `--data-sizes` does not apply.
    Fixed(usize),
    /// Variable input: `default` bytes unless `--data-sizes` is given; sizes must be
    /// a multiple of `align`.
    Variable {
        /// Default size in bytes.
        default: usize,
        /// Required multiple.
        align: usize,
    },
}

/// What an operation does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpKind {
    /// Sign.
    Sign(SigAlg),
    /// Verify a signature made beforehand.
    Verify(SigAlg),
    /// Encrypt.
    Encrypt(CipherAlg),
    /// Decrypt a ciphertext made beforehand.
    Decrypt(CipherAlg),
    /// Digest.
    Digest(HashAlg),
    /// MAC (C_Sign with a secret key).
    Mac(MacAlg),
    /// C_GenerateRandom of n bytes.
    Random(usize),
    /// C_SeedRandom with n bytes of seed.
    SeedRandom(usize),
    /// C_GetSessionInfo: no cryptography; shows the harness and call overhead.
    SessionInfo,
    /// Generate a key (pair), destroyed after each iteration outside the timer.
    KeyGen(KeySpec),
    /// Find one object among n objects.
    FindObject(usize),
    /// Verify a batch of n Ed25519 signatures through the vendor interface.
    VerifyBatch(usize),
    /// A token-object scaling op with n population objects on the token.
    Population(PopOp, usize),
    /// Derive a shared secret (`C_DeriveKey`), destroyed after each iteration.
    Derive(DeriveAlg),
    /// Wrap an AES key (`C_WrapKey`).
    Wrap(WrapAlg),
    /// Unwrap a wrapped AES key (`C_UnwrapKey`), destroyed after each iteration.
    Unwrap(WrapAlg),
    /// A mechanism named on the command line, with its parameter bytes.
    Generic(GenericFn, Arc<[u8]>),
    /// ML-KEM encapsulation (`C_EncapsulateKey`), the new key destroyed
    /// after each iteration.
    Encapsulate(MlKemSet),
    /// ML-KEM decapsulation of one ciphertext (`C_DecapsulateKey`), the new
    /// key destroyed after each iteration.
    Decapsulate(MlKemSet),
}

/// An operation of the catalogue.
#[derive(Debug, Clone)]
pub struct OpDef {
    /// Stable id used in reports, profiles and `--ops`.
    pub id: String,
    /// Human-readable title.
    pub title: String,
    /// What it does.
    pub kind: OpKind,
    /// The timed mechanism (or 0 for none).
    pub mechanism: CK_MECHANISM_TYPE,
    /// Other mechanisms it needs (e.g. to generate its key).
    pub also_needs: Vec<CK_MECHANISM_TYPE>,
    /// Key it needs, if any.
    pub key: Option<KeySpec>,
    /// Key size in bits to check against the mechanism's limits (RSA/EC only).
    pub key_bits: Option<u64>,
    /// Input size.
    pub data: DataSpec,
}

impl OpDef {
    /// `CKM_*` name of the timed mechanism ("none" when there is none).
    pub fn mechanism_name(&self) -> String {
        if matches!(
            self.kind,
            OpKind::SessionInfo | OpKind::FindObject(_) | OpKind::Random(_) | OpKind::SeedRandom(_)
        ) || (matches!(self.kind, OpKind::Population(..)) && self.mechanism == 0)
        {
            "none".to_string()
        } else {
            ckm_name(self.mechanism)
        }
    }

    /// The PKCS#11 calls its timed region makes (named when a module
    /// crashes or hangs in them).
    pub fn timed_calls(&self) -> &'static str {
        use crate::suite::alg::{GenericFn, PopOp};
        match &self.kind {
            OpKind::Sign(_) | OpKind::Mac(_) | OpKind::Generic(GenericFn::Sign, _) => {
                "C_SignInit, C_Sign"
            }
            OpKind::Verify(_) | OpKind::Generic(GenericFn::Verify, _) => "C_VerifyInit, C_Verify",
            OpKind::Encrypt(_) | OpKind::Generic(GenericFn::Encrypt, _) => {
                "C_EncryptInit, C_Encrypt"
            }
            OpKind::Decrypt(_) | OpKind::Generic(GenericFn::Decrypt, _) => {
                "C_DecryptInit, C_Decrypt"
            }
            OpKind::Digest(_) | OpKind::Generic(GenericFn::Digest, _) => "C_DigestInit, C_Digest",
            OpKind::Random(_) => "C_GenerateRandom",
            OpKind::SeedRandom(_) => "C_SeedRandom",
            OpKind::SessionInfo => "C_GetSessionInfo",
            OpKind::KeyGen(_) => "C_GenerateKey or C_GenerateKeyPair",
            OpKind::FindObject(_) | OpKind::Population(PopOp::FindLabel | PopOp::FindId, _) => {
                "C_FindObjectsInit, C_FindObjects, C_FindObjectsFinal"
            }
            OpKind::VerifyBatch(_) => "C_DalekVerifyEd25519Batch",
            OpKind::Population(PopOp::Create, _) => "C_CreateObject",
            OpKind::Population(PopOp::Destroy, _) => "C_DestroyObject",
            OpKind::Population(PopOp::KeyPair(_), _) => "C_GenerateKeyPair",
            OpKind::Population(PopOp::ColdStart, _) => "C_Initialize (in a probe process)",
            OpKind::Population(PopOp::ColdOpen, _) => {
                "C_Initialize, C_OpenSession (in a probe process)"
            }
            OpKind::Derive(_) => "C_DeriveKey",
            OpKind::Wrap(_) => "C_WrapKey",
            OpKind::Unwrap(_) => "C_UnwrapKey",
            OpKind::Encapsulate(_) | OpKind::Generic(GenericFn::Encapsulate, _) => {
                "C_EncapsulateKey"
            }
            OpKind::Decapsulate(_) | OpKind::Generic(GenericFn::Decapsulate, _) => {
                "C_DecapsulateKey"
            }
        }
    }

    /// Whether `--data-sizes` applies.
    pub fn takes_data(&self) -> bool {
        matches!(self.data, DataSpec::Variable { .. })
    }
}

/// Everything a worker needs to prepare itself.
pub struct Prep<'a> {
    /// The module's raw function list.
    pub raw: &'a Arc<RawModule>,
    /// The logged-in set-up session (untimed preparation, shared objects).
    pub setup: CK_SESSION_HANDLE,
    /// This worker's own session.
    pub session: CK_SESSION_HANDLE,
    /// Keys of the op (when it needs one).
    pub key: Option<&'a KeyHandles>,
    /// Input size in bytes.
    pub data_size: usize,
    /// Thread index (makes per-thread IVs and labels distinct).
    pub thread: usize,
    /// The module's token population (scaling ops only).
    pub population: Option<PopPrep<'a>>,
    /// Where the op makes objects of its own (key generation, find-object):
    /// session objects, token objects, or session falling back to token.
    pub store: StoreMode,
}

impl Prep<'_> {
    /// The op's keys, or a failure if none were made.
    pub fn key(&self) -> Result<&KeyHandles, Failure> {
        self.key
            .ok_or_else(|| Failure::Check("operation needs a key".into()))
    }
}

/// Deterministic test data of `n` bytes (distinct per seed).
pub fn test_data(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// What a scaling worker needs besides [`Prep`].
#[derive(Clone, Copy)]
pub struct PopPrep<'a> {
    /// The module's population (already at the op's size).
    pub population: &'a Population,
    /// How to start a cold-start probe of this module.
    pub probe: &'a ProbeCommand,
}
