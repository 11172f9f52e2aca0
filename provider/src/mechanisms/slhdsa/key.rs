//! SLH-DSA keys (FIPS 205) over the RustCrypto `slh-dsa` crate: key
//! generation from the three seeds (Algorithm 18, slh_keygen_internal),
//! the import check of a private key's PK.root, and signing and
//! verification of an already framed message M′ (Algorithms 19 and 20,
//! slh_sign_internal / slh_verify_internal; the framing of pure and
//! pre-hash SLH-DSA, Algorithms 22–25, is the caller's).
//!
//! Both keys are kept as their encodings (the private one zeroized on
//! drop) and parsed into the crate's types per operation: parsing only
//! copies bytes, and the crate's `SigningKey` wipes its seeds on drop
//! (`zeroize` feature).

use super::params::ParamSet;
use crate::error::{Result, err};
use crate::hygiene::wiping_pqc;
use cryptoki_sys::*;
use slh_dsa::{ParameterSet, Signature, SigningKey, VerifyingKey};
use zeroize::Zeroizing;

/// Runs `$body` with the type `$p` set to the crate's parameter set of
/// `$set`.
macro_rules! with_set {
    ($set:expr, $p:ident => $body:expr) => {
        match $set {
            ParamSet::Sha2_128s => {
                type $p = slh_dsa::Sha2_128s;
                $body
            }
            ParamSet::Shake128s => {
                type $p = slh_dsa::Shake128s;
                $body
            }
            ParamSet::Sha2_128f => {
                type $p = slh_dsa::Sha2_128f;
                $body
            }
            ParamSet::Shake128f => {
                type $p = slh_dsa::Shake128f;
                $body
            }
            ParamSet::Sha2_192s => {
                type $p = slh_dsa::Sha2_192s;
                $body
            }
            ParamSet::Shake192s => {
                type $p = slh_dsa::Shake192s;
                $body
            }
            ParamSet::Sha2_192f => {
                type $p = slh_dsa::Sha2_192f;
                $body
            }
            ParamSet::Shake192f => {
                type $p = slh_dsa::Shake192f;
                $body
            }
            ParamSet::Sha2_256s => {
                type $p = slh_dsa::Sha2_256s;
                $body
            }
            ParamSet::Shake256s => {
                type $p = slh_dsa::Shake256s;
                $body
            }
            ParamSet::Sha2_256f => {
                type $p = slh_dsa::Sha2_256f;
                $body
            }
            ParamSet::Shake256f => {
                type $p = slh_dsa::Shake256f;
                $body
            }
        }
    };
}

/// An SLH-DSA private key: SK.seed ‖ SK.prf ‖ PK.seed ‖ PK.root (FIPS 205
/// §9.1), 4n bytes.
pub struct PrivateKey {
    set: ParamSet,
    value: Zeroizing<Vec<u8>>,
}

/// An SLH-DSA public key: PK.seed ‖ PK.root, 2n bytes.
pub struct PublicKey {
    set: ParamSet,
    value: Vec<u8>,
}

/// The private key slh_keygen_internal makes from the seeds (each n
/// bytes; the caller checked).
fn keygen<P: ParameterSet>(sk_seed: &[u8], sk_prf: &[u8], pk_seed: &[u8]) -> Zeroizing<Vec<u8>> {
    let sk = SigningKey::<P>::slh_keygen_internal(sk_seed, sk_prf, pk_seed);
    let mut bytes = sk.to_bytes();
    let out = Zeroizing::new(bytes.to_vec());
    zeroize::Zeroize::zeroize(bytes.as_mut_slice());
    out
}

fn sign<P: ParameterSet>(value: &[u8], message: &[&[u8]], rand: Option<&[u8]>) -> Result<Vec<u8>> {
    let sk = SigningKey::<P>::try_from(value).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    Ok(sk.slh_sign_internal(message, rand).to_vec())
}

fn verify<P: ParameterSet>(value: &[u8], message: &[&[u8]], signature: &[u8]) -> Result<()> {
    let vk = VerifyingKey::<P>::try_from(value).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    let sig = Signature::<P>::try_from(signature).map_err(|_| err(CKR_SIGNATURE_LEN_RANGE))?;
    vk.slh_verify_internal(message, &sig)
        .map_err(|_| err(CKR_SIGNATURE_INVALID))
}

impl PrivateKey {
    /// The key of `set` made from SK.seed, SK.prf and PK.seed (FIPS 205
    /// Algorithm 18): PK.root is computed. Each seed must be n bytes
    /// (`CKR_ATTRIBUTE_VALUE_INVALID`; the crate would panic).
    pub fn from_seeds(
        set: ParamSet,
        sk_seed: &[u8],
        sk_prf: &[u8],
        pk_seed: &[u8],
    ) -> Result<PrivateKey> {
        let n = set.n();
        if [sk_seed, sk_prf, pk_seed].iter().any(|s| s.len() != n) {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        let value = wiping_pqc(|| with_set!(set, P => keygen::<P>(sk_seed, sk_prf, pk_seed)));
        Ok(PrivateKey { set, value })
    }

    /// The key of `set` from its 4n-byte encoding, checked: the crate
    /// does not tie PK.root to SK.seed, so PK.root is recomputed from
    /// SK.seed and PK.seed and must equal the encoding's
    /// (`CKR_ATTRIBUTE_VALUE_INVALID` otherwise, or for a wrong length).
    pub fn from_value(set: ParamSet, value: &[u8]) -> Result<PrivateKey> {
        let n = set.n();
        if value.len() != set.private_len() {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        let key = PrivateKey::from_seeds(set, &value[..n], &value[n..2 * n], &value[2 * n..3 * n])?;
        if key.value[3 * n..] != value[3 * n..] {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        Ok(key)
    }

    /// A stored key (checked on import or made by the token): its length
    /// only is checked (`CKR_KEY_HANDLE_INVALID`).
    pub fn from_stored(set: ParamSet, value: &[u8]) -> Result<PrivateKey> {
        if value.len() != set.private_len() {
            return Err(err(CKR_KEY_HANDLE_INVALID));
        }
        Ok(PrivateKey {
            set,
            value: Zeroizing::new(value.to_vec()),
        })
    }

    /// Its parameter set.
    pub fn set(&self) -> ParamSet {
        self.set
    }

    /// The 4n-byte encoding (`CKA_VALUE`).
    pub fn encoding(&self) -> &[u8] {
        &self.value
    }

    /// The public key's encoding, PK.seed ‖ PK.root.
    pub fn public_encoding(&self) -> Vec<u8> {
        self.value[2 * self.set.n()..].to_vec()
    }

    /// Signs the framed message M′ given in `parts` (FIPS 205 Algorithm
    /// 19) with `rand` as opt_rand (n bytes; `None`: the deterministic
    /// variant, opt_rand = PK.seed).
    pub fn sign(&self, parts: &[&[u8]], rand: Option<&[u8]>) -> Result<Vec<u8>> {
        if rand.is_some_and(|r| r.len() != self.set.n()) {
            return Err(err(CKR_FUNCTION_FAILED));
        }
        wiping_pqc(|| with_set!(self.set, P => sign::<P>(&self.value, parts, rand)))
    }
}

impl PublicKey {
    /// A public key of `set`; its length must be 2n
    /// (`CKR_ATTRIBUTE_VALUE_INVALID`). Every such byte string is a key.
    pub fn decode(set: ParamSet, value: &[u8]) -> Result<PublicKey> {
        if value.len() != set.public_len() {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        Ok(PublicKey {
            set,
            value: value.to_vec(),
        })
    }

    /// Its parameter set.
    pub fn set(&self) -> ParamSet {
        self.set
    }

    /// Verifies `signature` over the framed message M′ in `parts` (FIPS 205
    /// Algorithm 20): `CKR_SIGNATURE_LEN_RANGE` for a signature of the
    /// wrong length, `CKR_SIGNATURE_INVALID` if it does not verify.
    pub fn verify(&self, parts: &[&[u8]], signature: &[u8]) -> Result<()> {
        if signature.len() != self.set.signature_len() {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        with_set!(self.set, P => verify::<P>(&self.value, parts, signature))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_oids_agree_with_the_crate() {
        use slh_dsa::signature::Keypair;
        for set in ParamSet::ALL {
            let n = set.n();
            let key = PrivateKey::from_seeds(set, &vec![1; n], &vec![2; n], &vec![3; n]).unwrap();
            assert_eq!(key.encoding().len(), set.private_len());
            assert_eq!(key.public_encoding().len(), set.public_len());
            let oid = with_set!(set, P => {
                let sk = SigningKey::<P>::try_from(key.encoding()).unwrap();
                assert_eq!(sk.verifying_key().to_bytes().as_slice(), key.public_encoding());
                P::ALGORITHM_OID
            });
            assert_eq!(oid.as_bytes(), &set.algorithm_identifier()[4..]);
            let zeros = vec![0u8; set.signature_len() + 1];
            let fits =
                |len: usize| with_set!(set, P => Signature::<P>::try_from(&zeros[..len]).is_ok());
            assert!(
                fits(set.signature_len()) && !fits(set.signature_len() + 1),
                "{set:?}"
            );
        }
    }
}
