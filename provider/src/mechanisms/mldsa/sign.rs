//! ML-DSA and HashML-DSA signatures (PKCS#11 3.2 mechanisms spec,
//! `CKM_ML_DSA`, `CKM_HASH_ML_DSA` and `CKM_HASH_ML_DSA_<hash>`; FIPS 204
//! Algorithms 2–5).
//!
//! Every variant streams: μ = H(tr ‖ M′, 64) (Algorithm 7 line 6) is
//! absorbed as the data arrives, with M′ = 0 ‖ |ctx| ‖ ctx ‖ M for pure
//! ML-DSA and M′ = 1 ‖ |ctx| ‖ ctx ‖ OID ‖ PH(M) for HashML-DSA
//! (Algorithms 2 and 4), then signed or verified on μ. `CKM_HASH_ML_DSA`
//! takes PH(M) from the caller, so it is single-part only: its
//! `C_SignUpdate` / `C_VerifyUpdate` answer `CKR_OPERATION_NOT_INITIALIZED`
//! and end the operation (what the cryptoki crate's test suite expects).
//!
//! With the `aws-lc` feature (the default build), pure `CKM_ML_DSA` with an
//! empty context (no parameter, or a `CK_SIGN_ADDITIONAL_CONTEXT` without
//! one) is computed by aws-lc-rs (`awslc`) on the whole message instead:
//! signing only when hedged (`CKH_HEDGE_PREFERRED` / `CKH_HEDGE_REQUIRED`,
//! or no parameter), verification whatever the `hedgeVariant`. A
//! single-part call hands its data over; a multi-part one buffers the
//! message beside μ, up to `awslc::MAX_BUFFERED` bytes, and finishes on μ
//! when it grew past that. Everything else (a context, HashML-DSA, the
//! deterministic variant) is signed and verified on μ. Either way the
//! signature is a valid FIPS 204 signature (hedged ones are randomized
//! anyway) and verification gives the same answer.

use super::key::TR_LEN;
use crate::error::{Result, err};
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::operation::{SignOperation, VerifyOperation};
use crate::mechanisms::params::{Mechanism, Param};
use crate::mechanisms::prehash::{HashAlg, Hasher};
use crate::mechanisms::random::os_fill;
use cryptoki_sys::*;
use sha3::Shake256;
use sha3::digest::{ExtendableOutput, Update};
use std::sync::Arc;
#[cfg(feature = "aws-lc")]
use zeroize::Zeroizing;

/// Longest context (its length is one octet of M′, FIPS 204 §5.2).
pub const MAX_CONTEXT: usize = 255;

/// How a signature's randomness is chosen (`hedgeVariant`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hedge {
    /// Hedged: 32 bytes from the token's RNG (FIPS 204 §3.4, the default).
    Hedged,
    /// The deterministic variant: rnd = 0^32.
    Deterministic,
}

/// Where PH(M) comes from.
#[derive(Clone)]
enum Input {
    /// Pure ML-DSA: M goes straight into μ.
    Pure,
    /// `CKM_HASH_ML_DSA`: the caller's data is PH(M), of this length.
    External(usize),
    /// `CKM_HASH_ML_DSA_<hash>`: the token hashes M.
    Hash(Box<Hasher>, usize),
}

/// A signature or verification in progress: μ's state and the input.
struct Stream {
    mu: Shake256,
    input: Input,
    hedge: Hedge,
    /// With `aws-lc`, while aws-lc can finish the operation: the message
    /// so far (wiped when dropped); `None` if it cannot (not pure ML-DSA
    /// with an empty context, deterministic signing, or a multi-part
    /// message past `awslc::MAX_BUFFERED`).
    #[cfg(feature = "aws-lc")]
    message: Option<Zeroizing<Vec<u8>>>,
}

impl Stream {
    /// Reads the mechanism and its parameter and absorbs tr ‖ M′'s prefix
    /// (`signing`: for a signature, else a verification).
    fn new(mech: &Mechanism<'_>, tr: &[u8; TR_LEN], signing: bool) -> Result<Stream> {
        let invalid = || err(CKR_MECHANISM_PARAM_INVALID);
        let (hedge, context, hash) = match (mech.ty, mech.param) {
            (
                CKM_HASH_ML_DSA,
                Param::HashSignContext {
                    hedge,
                    context,
                    hash,
                },
            ) => (hedge, context, Some(HashAlg::of(hash).ok_or_else(invalid)?)),
            (CKM_HASH_ML_DSA, _) => return Err(invalid()),
            (_, Param::None) => (CKH_HEDGE_PREFERRED, &[][..], None),
            (_, Param::SignContext { hedge, context }) => (hedge, context, None),
            _ => return Err(invalid()),
        };
        let hedge = match hedge {
            CKH_HEDGE_PREFERRED | CKH_HEDGE_REQUIRED => Hedge::Hedged,
            CKH_DETERMINISTIC_REQUIRED => Hedge::Deterministic,
            _ => return Err(invalid()),
        };
        if context.len() > MAX_CONTEXT {
            return Err(invalid());
        }
        let (input, alg) = match (mech.ty, hash) {
            (CKM_ML_DSA, _) => (Input::Pure, None),
            (CKM_HASH_ML_DSA, Some(alg)) => (Input::External(alg.len), Some(alg)),
            (ty, _) => {
                let alg = HashAlg::of_mechanism(ty).ok_or(err(CKR_MECHANISM_INVALID))?;
                (Input::Hash(Box::new(Hasher::new(alg)), alg.len), Some(alg))
            }
        };
        let mut mu = Shake256::default();
        mu.update(tr);
        mu.update(&[u8::from(alg.is_some()), context.len() as u8]);
        mu.update(context);
        if let Some(alg) = alg {
            mu.update(&alg.oid_der());
        }
        #[cfg(feature = "aws-lc")]
        let message = (matches!(input, Input::Pure)
            && context.is_empty()
            && (!signing || hedge == Hedge::Hedged))
            .then(|| Zeroizing::new(Vec::new()));
        #[cfg(not(feature = "aws-lc"))]
        let _ = signing;
        Ok(Stream {
            mu,
            input,
            hedge,
            #[cfg(feature = "aws-lc")]
            message,
        })
    }

    /// Multi-part: more of M.
    fn update(&mut self, data: &[u8]) -> Result<()> {
        match &mut self.input {
            Input::Pure => self.mu.update(data),
            Input::Hash(h, _) => h.update(data),
            // Single-part only (module docs).
            Input::External(_) => return Err(err(CKR_OPERATION_NOT_INITIALIZED)),
        }
        #[cfg(feature = "aws-lc")]
        self.buffer(data);
        Ok(())
    }

    /// Adds `data` to the buffered message, or drops (wipes) the buffer
    /// once the message outgrows `awslc::MAX_BUFFERED`. A bigger buffer is
    /// a new allocation the old one is copied into, so no copy of the
    /// message is left in freed memory.
    #[cfg(feature = "aws-lc")]
    fn buffer(&mut self, data: &[u8]) {
        let Some(buf) = &mut self.message else {
            return;
        };
        let need = buf.len().saturating_add(data.len());
        if need > super::awslc::MAX_BUFFERED {
            self.message = None;
            return;
        }
        if buf.capacity() < need {
            let cap = need
                .max(buf.capacity().saturating_mul(2))
                .min(super::awslc::MAX_BUFFERED);
            let mut grown = Zeroizing::new(Vec::with_capacity(cap));
            grown.extend_from_slice(buf);
            *buf = grown;
        }
        buf.extend_from_slice(data);
    }

    /// With `aws-lc`: the whole message, if aws-lc can finish the
    /// operation (`data`: a single-part call's).
    #[cfg(feature = "aws-lc")]
    fn whole_message<'a>(&'a self, data: Option<&'a [u8]>) -> Option<&'a [u8]> {
        match (self.message.as_ref()?, data) {
            (buf, None) => Some(buf),
            (buf, Some(d)) if buf.is_empty() => Some(d),
            _ => None,
        }
    }

    /// μ, after the whole message (`data` for a single-part call).
    fn mu(&mut self, data: Option<&[u8]>) -> Result<[u8; TR_LEN]> {
        let mut mu = self.mu.clone();
        match (&self.input, data) {
            (Input::Pure, Some(d)) => mu.update(d),
            (Input::Pure, None) => {}
            (Input::External(len), Some(d)) if d.len() == *len => mu.update(d),
            (Input::External(_), _) => return Err(err(CKR_DATA_LEN_RANGE)),
            (Input::Hash(h, len), d) => {
                let mut h = (**h).clone();
                if let Some(d) = d {
                    h.update(d);
                }
                mu.update(&h.finish(*len));
            }
        }
        let mut out = [0u8; TR_LEN];
        mu.finalize_xof_into(&mut out);
        Ok(out)
    }
}

/// ML-DSA / HashML-DSA signing.
pub struct MlDsaSign {
    key: Arc<KeyMaterial>,
    stream: Stream,
    len: usize,
}

impl MlDsaSign {
    /// Starts a signature with an ML-DSA private key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let KeyMaterial::MlDsaPrivate(k) = &*key else {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        };
        let stream = Stream::new(mech, k.tr(), true)?;
        let len = k.set().signature_len();
        Ok(MlDsaSign { key, stream, len })
    }

    fn sign_message(&mut self, data: Option<&[u8]>, out: &mut [u8]) -> Result<usize> {
        let KeyMaterial::MlDsaPrivate(k) = &*self.key else {
            unreachable!("checked in new");
        };
        #[cfg(feature = "aws-lc")]
        if let Some(message) = self.stream.whole_message(data)
            && let Some(n) = k.sign_aws_lc(message, out)
        {
            let n = n?;
            if n != self.len {
                return Err(err(CKR_FUNCTION_FAILED));
            }
            return Ok(n);
        }
        let mu = self.stream.mu(data)?;
        let mut rnd = [0u8; 32];
        if self.stream.hedge == Hedge::Hedged {
            os_fill(&mut rnd)?;
        }
        let sig = k.sign_mu(&mu, &rnd)?;
        out[..sig.len()].copy_from_slice(&sig);
        Ok(sig.len())
    }
}

impl SignOperation for MlDsaSign {
    fn output_len(&self) -> usize {
        self.len
    }

    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        self.sign_message(Some(data), out)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.stream.update(data)
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        self.sign_message(None, out)
    }
}

/// ML-DSA / HashML-DSA verification.
pub struct MlDsaVerify {
    key: Arc<KeyMaterial>,
    stream: Stream,
}

impl MlDsaVerify {
    /// Starts a verification with an ML-DSA public key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let KeyMaterial::MlDsaPublic(k) = &*key else {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        };
        let stream = Stream::new(mech, k.tr(), false)?;
        Ok(MlDsaVerify { key, stream })
    }

    fn verify_message(&mut self, data: Option<&[u8]>, signature: &[u8]) -> Result<()> {
        let KeyMaterial::MlDsaPublic(k) = &*self.key else {
            unreachable!("checked in new");
        };
        if signature.len() != k.set().signature_len() {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        #[cfg(feature = "aws-lc")]
        if let Some(message) = self.stream.whole_message(data)
            && let Some(result) = k.verify_aws_lc(message, signature)
        {
            return result;
        }
        let mu = self.stream.mu(data)?;
        k.verify_mu(&mu, signature)
    }
}

impl VerifyOperation for MlDsaVerify {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        self.verify_message(Some(data), signature)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.stream.update(data)
    }

    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        self.verify_message(None, signature)
    }
}
