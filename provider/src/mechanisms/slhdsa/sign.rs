//! SLH-DSA and HashSLH-DSA signatures (PKCS#11 3.2 mechanisms spec,
//! `CKM_SLH_DSA`, `CKM_HASH_SLH_DSA` and `CKM_HASH_SLH_DSA_<hash>`; FIPS 205
//! Algorithms 22–25).
//!
//! The signed message is M′ = 0 ‖ |ctx| ‖ ctx ‖ M for pure SLH-DSA and
//! M′ = 1 ‖ |ctx| ‖ ctx ‖ OID ‖ PH(M) for HashSLH-DSA. SLH-DSA reads M′
//! twice (PRF_msg, then H_msg: FIPS 205 Algorithm 19 lines 4 and 6), so a
//! multi-part pure signature buffers M, at most [`MAX_BUFFERED`] bytes
//! (`CKR_DATA_LEN_RANGE` beyond). The `CKM_HASH_SLH_DSA_<hash>` mechanisms
//! hash M as it arrives. `CKM_HASH_SLH_DSA` takes PH(M) from the caller,
//! so it is single-part only: its `C_SignUpdate` / `C_VerifyUpdate` answer
//! `CKR_OPERATION_NOT_INITIALIZED` and end the operation (what the cryptoki
//! crate's test suite expects), as `CKM_HASH_ML_DSA`'s do.

use super::key::{PrivateKey, PublicKey};
use crate::error::{Result, err};
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::operation::{SignOperation, VerifyOperation};
use crate::mechanisms::params::{Mechanism, Param};
use crate::mechanisms::prehash::{HashAlg, Hasher};
use crate::mechanisms::random::os_fill;
use cryptoki_sys::*;
use std::sync::Arc;

/// Longest context (its length is one octet of M′, FIPS 205 §10.2).
pub const MAX_CONTEXT: usize = 255;

/// Most bytes of M a multi-part pure SLH-DSA operation buffers: 1 GiB, the
/// bound the token puts on the other messages it buffers whole (the
/// message-based API's `api::message::MAX_MESSAGE_LEN`).
pub const MAX_BUFFERED: usize = 1 << 30;

/// `CKR_DATA_LEN_RANGE` if `part` more bytes after `buffered` would pass
/// [`MAX_BUFFERED`].
fn check_buffered(buffered: usize, part: usize) -> Result<()> {
    match buffered.checked_add(part) {
        Some(n) if n <= MAX_BUFFERED => Ok(()),
        _ => Err(err(CKR_DATA_LEN_RANGE)),
    }
}

/// Where M′'s last part comes from.
enum Input {
    /// Pure SLH-DSA: M itself, buffered by the multi-part calls.
    Pure(Vec<u8>),
    /// `CKM_HASH_SLH_DSA`: the caller's data is PH(M), of this length.
    External(usize),
    /// `CKM_HASH_SLH_DSA_<hash>`: the token hashes M.
    Hash(Box<Hasher>, usize),
}

/// M′ of a signature or verification in progress, and the hedge choice.
struct Framing {
    /// The domain separator (0 pure, 1 pre-hash) and |ctx|.
    head: [u8; 2],
    context: Vec<u8>,
    /// The pre-hash's OID DER (HashSLH-DSA only).
    oid: Option<[u8; 11]>,
    input: Input,
    /// Hedged (opt_rand from the token's RNG) or deterministic.
    hedged: bool,
}

impl Framing {
    /// Reads the mechanism and its parameter (absent: empty context,
    /// hedged).
    fn new(mech: &Mechanism<'_>) -> Result<Framing> {
        let invalid = || err(CKR_MECHANISM_PARAM_INVALID);
        let (hedge, context, hash) = match (mech.ty, mech.param) {
            (
                CKM_HASH_SLH_DSA,
                Param::HashSignContext {
                    hedge,
                    context,
                    hash,
                },
            ) => (hedge, context, Some(HashAlg::of(hash).ok_or_else(invalid)?)),
            (CKM_HASH_SLH_DSA, _) => return Err(invalid()),
            (_, Param::None) => (CKH_HEDGE_PREFERRED, &[][..], None),
            (_, Param::SignContext { hedge, context }) => (hedge, context, None),
            _ => return Err(invalid()),
        };
        let hedged = match hedge {
            CKH_HEDGE_PREFERRED | CKH_HEDGE_REQUIRED => true,
            CKH_DETERMINISTIC_REQUIRED => false,
            _ => return Err(invalid()),
        };
        if context.len() > MAX_CONTEXT {
            return Err(invalid());
        }
        let (input, alg) = match (mech.ty, hash) {
            (CKM_SLH_DSA, _) => (Input::Pure(Vec::new()), None),
            (CKM_HASH_SLH_DSA, Some(alg)) => (Input::External(alg.len), Some(alg)),
            (ty, _) => {
                let alg = HashAlg::of_slh_mechanism(ty).ok_or(err(CKR_MECHANISM_INVALID))?;
                (Input::Hash(Box::new(Hasher::new(alg)), alg.len), Some(alg))
            }
        };
        Ok(Framing {
            head: [u8::from(alg.is_some()), context.len() as u8],
            context: context.to_vec(),
            oid: alg.map(HashAlg::oid_der),
            input,
            hedged,
        })
    }

    /// Multi-part: more of M.
    fn update(&mut self, data: &[u8]) -> Result<()> {
        match &mut self.input {
            Input::Pure(buffer) => {
                check_buffered(buffer.len(), data.len())?;
                buffer
                    .try_reserve(data.len())
                    .map_err(|_| err(CKR_HOST_MEMORY))?;
                buffer.extend_from_slice(data);
            }
            Input::Hash(h, _) => h.update(data),
            // Single-part only (module docs).
            Input::External(_) => return Err(err(CKR_OPERATION_NOT_INITIALIZED)),
        }
        Ok(())
    }

    /// Runs `f` on M′'s parts, after the whole message (`data` for a
    /// single-part call).
    fn with_message<R>(
        &mut self,
        data: Option<&[u8]>,
        f: impl FnOnce(&[&[u8]]) -> Result<R>,
    ) -> Result<R> {
        let oid = self.oid.as_ref().map_or(&[][..], |o| &o[..]);
        let last: Vec<u8>;
        let m: &[u8] = match (&mut self.input, data) {
            (Input::Pure(_), Some(d)) => d,
            (Input::Pure(buffer), None) => buffer,
            (Input::External(len), Some(d)) if d.len() == *len => d,
            (Input::External(_), _) => return Err(err(CKR_DATA_LEN_RANGE)),
            (Input::Hash(h, len), d) => {
                let mut h = (**h).clone();
                if let Some(d) = d {
                    h.update(d);
                }
                last = h.finish(*len);
                &last
            }
        };
        f(&[&self.head, &self.context, oid, m])
    }

    /// Drops a buffered message (the operation is over).
    fn clear(&mut self) {
        if let Input::Pure(buffer) = &mut self.input {
            *buffer = Vec::new();
        }
    }
}

/// SLH-DSA / HashSLH-DSA signing.
pub struct SlhDsaSign {
    key: Arc<KeyMaterial>,
    framing: Framing,
    len: usize,
}

impl SlhDsaSign {
    /// Starts a signature with an SLH-DSA private key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let KeyMaterial::SlhDsaPrivate(k) = &*key else {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        };
        let len = k.set().signature_len();
        let framing = Framing::new(mech)?;
        Ok(SlhDsaSign { key, framing, len })
    }

    fn sign_message(&mut self, data: Option<&[u8]>, out: &mut [u8]) -> Result<usize> {
        let key = Arc::clone(&self.key);
        let KeyMaterial::SlhDsaPrivate(k) = &*key else {
            unreachable!("checked in new");
        };
        let k: &PrivateKey = k;
        // opt_rand: n bytes from the token's RNG (FIPS 205 §9.2), or none
        // (the deterministic variant: opt_rand = PK.seed).
        let mut rand = [0u8; 32];
        let rand = &mut rand[..k.set().n()];
        if self.framing.hedged {
            os_fill(rand)?;
        }
        let hedged = self.framing.hedged;
        let sig = self
            .framing
            .with_message(data, |parts| k.sign(parts, hedged.then_some(&rand[..])))?;
        out[..sig.len()].copy_from_slice(&sig);
        Ok(sig.len())
    }
}

impl SignOperation for SlhDsaSign {
    fn output_len(&self) -> usize {
        self.len
    }

    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        self.sign_message(Some(data), out)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.framing.update(data)
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let n = self.sign_message(None, out);
        self.framing.clear();
        n
    }
}

/// SLH-DSA / HashSLH-DSA verification.
pub struct SlhDsaVerify {
    key: Arc<KeyMaterial>,
    framing: Framing,
}

impl SlhDsaVerify {
    /// Starts a verification with an SLH-DSA public key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        if !matches!(&*key, KeyMaterial::SlhDsaPublic(_)) {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        }
        let framing = Framing::new(mech)?;
        Ok(SlhDsaVerify { key, framing })
    }

    fn verify_message(&mut self, data: Option<&[u8]>, signature: &[u8]) -> Result<()> {
        let KeyMaterial::SlhDsaPublic(k) = &*self.key else {
            unreachable!("checked in new");
        };
        let k: &PublicKey = k;
        if signature.len() != k.set().signature_len() {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        self.framing
            .with_message(data, |parts| k.verify(parts, signature))
    }
}

impl VerifyOperation for SlhDsaVerify {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        self.verify_message(Some(data), signature)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.framing.update(data)
    }

    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        let r = self.verify_message(None, signature);
        self.framing.clear();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_bound_is_checked_before_anything_grows() {
        assert!(check_buffered(0, MAX_BUFFERED).is_ok());
        assert!(check_buffered(MAX_BUFFERED - 1, 1).is_ok());
        for (have, more) in [(MAX_BUFFERED, 1), (0, MAX_BUFFERED + 1), (1, usize::MAX)] {
            assert_eq!(
                check_buffered(have, more).unwrap_err().rv(),
                CKR_DATA_LEN_RANGE
            );
        }
    }
}
