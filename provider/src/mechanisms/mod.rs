//! Mechanisms: a registry of what the token supports (`C_GetMechanismList`,
//! `C_GetMechanismInfo`) and the operations behind it.
//!
//! Each family lives in its own file and is the only place that calls its
//! crypto crate. Operations are small traits (`SignOperation`,
//! `VerifyOperation`, `DigestOperation`); a session holds them as enums that
//! dispatch statically, so starting an operation allocates nothing.

pub mod digest;
pub mod eddsa;
pub mod keys;
pub mod random;

use crate::error::{Result, err};
use cryptoki_sys::*;
use keys::KeyMaterial;
use std::sync::Arc;

/// How a mechanism's parameter is laid out in memory (so the FFI layer
/// knows how to read `CK_MECHANISM.pParameter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// No parameter allowed.
    None,
    /// Optional `CK_EDDSA_PARAMS`.
    EdDsa,
}

/// A mechanism parameter, read from the caller's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param<'a> {
    /// No parameter.
    None,
    /// `CK_EDDSA_PARAMS`.
    EdDsa {
        /// `phFlag`: pre-hashed (Ed25519ph).
        prehash: bool,
        /// `pContextData`; `None` when `ulContextDataLen` is 0.
        context: Option<&'a [u8]>,
    },
}

/// A `CK_MECHANISM` in safe form.
#[derive(Clone, Copy, Debug)]
pub struct Mechanism<'a> {
    /// `mechanism`.
    pub ty: CK_MECHANISM_TYPE,
    /// The decoded parameter.
    pub param: Param<'a>,
}

impl Mechanism<'_> {
    /// A mechanism without parameter.
    pub fn plain(ty: CK_MECHANISM_TYPE) -> Mechanism<'static> {
        Mechanism {
            ty,
            param: Param::None,
        }
    }
}

/// One registry entry.
#[derive(Clone, Copy, Debug)]
pub struct Descriptor {
    /// Mechanism type.
    pub ty: CK_MECHANISM_TYPE,
    /// `CK_MECHANISM_INFO.ulMinKeySize`.
    pub min_key: CK_ULONG,
    /// `CK_MECHANISM_INFO.ulMaxKeySize`.
    pub max_key: CK_ULONG,
    /// `CK_MECHANISM_INFO.flags`.
    pub flags: CK_FLAGS,
    /// Parameter layout.
    pub param: ParamKind,
}

const fn d(
    ty: CK_MECHANISM_TYPE,
    min_key: CK_ULONG,
    max_key: CK_ULONG,
    flags: CK_FLAGS,
    param: ParamKind,
) -> Descriptor {
    Descriptor {
        ty,
        min_key,
        max_key,
        flags,
        param,
    }
}

const EC_FLAGS: CK_FLAGS = CKF_EC_F_P | CKF_EC_OID | CKF_EC_UNCOMPRESS;

/// Every mechanism the token supports, in `C_GetMechanismList` order.
pub static REGISTRY: &[Descriptor] = &[
    d(
        CKM_EC_EDWARDS_KEY_PAIR_GEN,
        255,
        255,
        CKF_GENERATE_KEY_PAIR | EC_FLAGS,
        ParamKind::None,
    ),
    d(
        CKM_EDDSA,
        255,
        255,
        CKF_SIGN | CKF_VERIFY | EC_FLAGS,
        ParamKind::EdDsa,
    ),
    d(CKM_SHA_1, 0, 0, CKF_DIGEST, ParamKind::None),
    d(CKM_SHA224, 0, 0, CKF_DIGEST, ParamKind::None),
    d(CKM_SHA256, 0, 0, CKF_DIGEST, ParamKind::None),
    d(CKM_SHA384, 0, 0, CKF_DIGEST, ParamKind::None),
    d(CKM_SHA512, 0, 0, CKF_DIGEST, ParamKind::None),
];

/// The registry entry of `ty`.
pub fn lookup(ty: CK_MECHANISM_TYPE) -> Result<&'static Descriptor> {
    REGISTRY
        .iter()
        .find(|m| m.ty == ty)
        .ok_or(err(CKR_MECHANISM_INVALID))
}

/// Checks that `mech` exists and supports `function` (a `CKF_*` flag).
pub fn require(mech: &Mechanism<'_>, function: CK_FLAGS) -> Result<&'static Descriptor> {
    let d = lookup(mech.ty)?;
    if d.flags & function == 0 {
        return Err(err(CKR_MECHANISM_INVALID));
    }
    Ok(d)
}

/// A signature (or MAC) being computed.
pub trait SignOperation {
    /// Length of the output (exact for every supported mechanism so far).
    fn output_len(&self) -> usize;
    /// Single-part: signs `data` into `out` (`out.len() >= output_len()`).
    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize>;
    /// Multi-part: adds data.
    fn update(&mut self, data: &[u8]) -> Result<()>;
    /// Multi-part: writes the signature (`out.len() >= output_len()`).
    fn finish(&mut self, out: &mut [u8]) -> Result<usize>;
}

/// A signature (or MAC) being checked.
pub trait VerifyOperation {
    /// Single-part verification.
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()>;
    /// Multi-part: adds data.
    fn update(&mut self, data: &[u8]) -> Result<()>;
    /// Multi-part: checks the signature.
    fn finish(&mut self, signature: &[u8]) -> Result<()>;
}

/// A message digest being computed.
pub trait DigestOperation {
    /// Digest length.
    fn output_len(&self) -> usize;
    /// Adds data.
    fn update(&mut self, data: &[u8]);
    /// Writes the digest into `out` (`out.len() >= output_len()`) and resets.
    fn finish(&mut self, out: &mut [u8]) -> usize;
}

/// Static dispatch over the families that sign (or MAC).
pub enum SignOp {
    /// `CKM_EDDSA`.
    EdDsa(eddsa::EdDsaSign),
}

macro_rules! sign_op {
    ($self:ident, $op:ident => $e:expr) => {
        match $self {
            SignOp::EdDsa($op) => $e,
        }
    };
}

impl SignOperation for SignOp {
    fn output_len(&self) -> usize {
        sign_op!(self, op => op.output_len())
    }
    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        sign_op!(self, op => op.sign(data, out))
    }
    fn update(&mut self, data: &[u8]) -> Result<()> {
        sign_op!(self, op => op.update(data))
    }
    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        sign_op!(self, op => op.finish(out))
    }
}

/// Static dispatch over the families that verify.
pub enum VerifyOp {
    /// `CKM_EDDSA`.
    EdDsa(eddsa::EdDsaVerify),
}

macro_rules! verify_op {
    ($self:ident, $op:ident => $e:expr) => {
        match $self {
            VerifyOp::EdDsa($op) => $e,
        }
    };
}

impl VerifyOperation for VerifyOp {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        verify_op!(self, op => op.verify(data, signature))
    }
    fn update(&mut self, data: &[u8]) -> Result<()> {
        verify_op!(self, op => op.update(data))
    }
    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        verify_op!(self, op => op.finish(signature))
    }
}

/// Starts a signature with `key`.
pub fn sign_init(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<SignOp> {
    require(mech, CKF_SIGN)?;
    match mech.ty {
        CKM_EDDSA => eddsa::EdDsaSign::new(mech, key).map(SignOp::EdDsa),
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

/// Starts a verification with `key`.
pub fn verify_init(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<VerifyOp> {
    require(mech, CKF_VERIFY)?;
    match mech.ty {
        CKM_EDDSA => eddsa::EdDsaVerify::new(mech, key).map(VerifyOp::EdDsa),
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

/// Starts a digest.
pub fn digest_init(mech: &Mechanism<'_>) -> Result<digest::DigestOp> {
    require(mech, CKF_DIGEST)?;
    if mech.param != Param::None {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    digest::DigestOp::new(mech.ty)
}

/// What a key-pair generation produces: key-specific attributes for the
/// public and the private object.
pub struct GeneratedPair {
    /// Attributes to add to the public key.
    pub public: crate::api::attributes::Attributes,
    /// Attributes to add to the private key.
    pub private: crate::api::attributes::Attributes,
    /// `CKA_KEY_TYPE` of both.
    pub key_type: CK_KEY_TYPE,
}

/// Generates a key pair; `public_template` holds the domain parameters
/// (e.g. `CKA_EC_PARAMS`).
pub fn generate_key_pair(
    mech: &Mechanism<'_>,
    public_template: &crate::api::attributes::Attributes,
) -> Result<GeneratedPair> {
    require(mech, CKF_GENERATE_KEY_PAIR)?;
    if mech.param != Param::None {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    match mech.ty {
        CKM_EC_EDWARDS_KEY_PAIR_GEN => eddsa::generate(public_template),
        _ => Err(err(CKR_MECHANISM_INVALID)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_has_unique_entries_with_functions() {
        for (i, m) in REGISTRY.iter().enumerate() {
            assert!(REGISTRY[i + 1..].iter().all(|n| n.ty != m.ty));
            assert_ne!(m.flags & !EC_FLAGS, 0, "{:#x} does nothing", m.ty);
            assert!(m.min_key <= m.max_key);
        }
    }

    #[test]
    fn require_checks_function_flags() {
        assert!(require(&Mechanism::plain(CKM_EDDSA), CKF_SIGN).is_ok());
        assert_eq!(
            require(&Mechanism::plain(CKM_SHA256), CKF_SIGN)
                .unwrap_err()
                .rv(),
            CKR_MECHANISM_INVALID
        );
        assert_eq!(lookup(0xdead).unwrap_err().rv(), CKR_MECHANISM_INVALID);
    }
}
