//! Parsed ML-DSA keys (FIPS 204): a private key built from its seed ξ
//! (Algorithm 6, ML-DSA.KeyGen_internal) and a public key from its
//! encoding (pkDecode), for the three parameter sets; the `tr = H(pk, 64)`
//! both keep for μ (Algorithm 7 line 6), and signing and verification on a
//! computed μ.

use super::params::{ParamSet, SEED_LEN};
use crate::error::{Result, err};
use crate::hygiene::wiping_ml_dsa;
use cryptoki_sys::*;
use ml_dsa::{
    EncodedVerifyingKey, Keypair, MlDsa44, MlDsa65, MlDsa87, MlDsaParams, Signature, SigningKey,
    VerifyingKey,
};
use sha3::Shake256;
use sha3::digest::{ExtendableOutput, Update};
use zeroize::Zeroizing;

/// Length of `tr` and of μ (FIPS 204 Algorithm 7).
pub const TR_LEN: usize = 64;

/// Runs `$body` with `$k` bound to the inner key of any parameter set.
macro_rules! each_set {
    ($value:expr, $ty:ident, $k:ident => $body:expr) => {
        match $value {
            $ty::P44($k) => $body,
            $ty::P65($k) => $body,
            $ty::P87($k) => $body,
        }
    };
}

enum Signing {
    P44(SigningKey<MlDsa44>),
    P65(SigningKey<MlDsa65>),
    P87(SigningKey<MlDsa87>),
}

enum Verifying {
    P44(VerifyingKey<MlDsa44>),
    P65(VerifyingKey<MlDsa65>),
    P87(VerifyingKey<MlDsa87>),
}

/// An ML-DSA private key (zeroized on drop by the crate's `zeroize`
/// feature: the seed and every expanded component).
pub struct PrivateKey {
    set: ParamSet,
    key: Signing,
    tr: [u8; TR_LEN],
}

/// An ML-DSA public key.
pub struct PublicKey {
    set: ParamSet,
    key: Verifying,
    tr: [u8; TR_LEN],
}

/// `tr = H(pk, 64)` (FIPS 204 Algorithm 6 line 9).
fn tr_of(public: &[u8]) -> [u8; TR_LEN] {
    let mut tr = [0u8; TR_LEN];
    let mut h = Shake256::default();
    h.update(public);
    h.finalize_xof_into(&mut tr);
    tr
}

/// A rand_core generator that yields the 32 bytes of `rnd` the token drew
/// (or zeros: the deterministic variant, FIPS 204 §3.4), so the crate's
/// fallible `sign_mu_randomized` signs with the token's randomness.
struct Rnd<'a>(&'a [u8; 32]);

impl rand_core::TryRng for Rnd<'_> {
    type Error = core::convert::Infallible;
    fn try_next_u32(&mut self) -> core::result::Result<u32, Self::Error> {
        Ok(u32::from_le_bytes([
            self.0[0], self.0[1], self.0[2], self.0[3],
        ]))
    }
    fn try_next_u64(&mut self) -> core::result::Result<u64, Self::Error> {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[..8]);
        Ok(u64::from_le_bytes(b))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> core::result::Result<(), Self::Error> {
        for (d, s) in dst.iter_mut().zip(self.0.iter().cycle()) {
            *d = *s;
        }
        Ok(())
    }
}

impl rand_core::TryCryptoRng for Rnd<'_> {}

fn sign_with<P: MlDsaParams>(
    key: &SigningKey<P>,
    mu: &[u8; TR_LEN],
    rnd: &[u8; 32],
) -> Result<Vec<u8>> {
    let mu = (*mu).into();
    key.expanded_key()
        .sign_mu_randomized(&mu, &mut Rnd(rnd))
        .map(|s| s.encode().to_vec())
        .map_err(|_| err(CKR_FUNCTION_FAILED))
}

fn verify_with<P: MlDsaParams>(
    key: &VerifyingKey<P>,
    mu: &[u8; TR_LEN],
    signature: &[u8],
) -> Result<()> {
    let sig = Signature::<P>::try_from(signature).map_err(|_| err(CKR_SIGNATURE_INVALID))?;
    if key.verify_mu(&(*mu).into(), &sig) {
        Ok(())
    } else {
        Err(err(CKR_SIGNATURE_INVALID))
    }
}

impl PrivateKey {
    /// The key of `set` generated from the seed ξ (Algorithm 6).
    pub fn from_seed(set: ParamSet, seed: &[u8]) -> Result<PrivateKey> {
        let xi: &[u8; SEED_LEN] = seed.try_into().map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
        // Key expansion (Algorithm 6) reaches deep: wiped behind it.
        Ok(wiping_ml_dsa(|| {
            let xi = Zeroizing::new(*xi);
            let key = match set {
                ParamSet::P44 => Signing::P44(SigningKey::from_seed(&(*xi).into())),
                ParamSet::P65 => Signing::P65(SigningKey::from_seed(&(*xi).into())),
                ParamSet::P87 => Signing::P87(SigningKey::from_seed(&(*xi).into())),
            };
            let public = each_set!(&key, Signing, k => k.verifying_key().encode().to_vec());
            PrivateKey {
                set,
                key,
                tr: tr_of(&public),
            }
        }))
    }

    /// Its parameter set.
    pub fn set(&self) -> ParamSet {
        self.set
    }

    /// `tr` of its public key.
    pub fn tr(&self) -> &[u8; TR_LEN] {
        &self.tr
    }

    /// The encoded public key (pkEncode).
    pub fn public_encoding(&self) -> Vec<u8> {
        wiping_ml_dsa(|| each_set!(&self.key, Signing, k => k.verifying_key().encode().to_vec()))
    }

    /// The expanded private key (skEncode, FIPS 204 Algorithm 24): what
    /// `CKA_VALUE` holds.
    pub fn expanded_encoding(&self) -> Zeroizing<Vec<u8>> {
        #[allow(deprecated)] // the crate marks skEncode deprecated; FIPS 204 defines it
        wiping_ml_dsa(|| {
            let v = each_set!(&self.key, Signing, k => k.expanded_key().to_expanded().to_vec());
            Zeroizing::new(v)
        })
    }

    /// Signs μ (Algorithm 7 from line 7) with the randomness `rnd` (all
    /// zeros: the deterministic variant).
    pub fn sign_mu(&self, mu: &[u8; TR_LEN], rnd: &[u8; 32]) -> Result<Vec<u8>> {
        wiping_ml_dsa(|| each_set!(&self.key, Signing, k => sign_with(k, mu, rnd)))
    }
}

impl PublicKey {
    /// Decodes a public key of `set` (pkDecode); the length must be the
    /// set's (`CKR_ATTRIBUTE_VALUE_INVALID` otherwise). Every byte string
    /// of that length is a valid encoding (t1 is 10-bit packed).
    pub fn decode(set: ParamSet, value: &[u8]) -> Result<PublicKey> {
        fn dec<P: MlDsaParams>(v: &[u8]) -> Result<VerifyingKey<P>> {
            let enc = EncodedVerifyingKey::<P>::try_from(v)
                .map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?;
            Ok(VerifyingKey::decode(&enc))
        }
        if value.len() != set.public_len() {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        let key = wiping_ml_dsa(|| {
            Ok::<_, crate::error::Error>(match set {
                ParamSet::P44 => Verifying::P44(dec(value)?),
                ParamSet::P65 => Verifying::P65(dec(value)?),
                ParamSet::P87 => Verifying::P87(dec(value)?),
            })
        })?;
        Ok(PublicKey {
            set,
            key,
            tr: tr_of(value),
        })
    }

    /// Its parameter set.
    pub fn set(&self) -> ParamSet {
        self.set
    }

    /// `tr` of the key.
    pub fn tr(&self) -> &[u8; TR_LEN] {
        &self.tr
    }

    /// Verifies `signature` over μ (Algorithm 8 from line 7):
    /// `CKR_SIGNATURE_INVALID` if it does not verify or does not decode
    /// (the caller checks its length first).
    pub fn verify_mu(&self, mu: &[u8; TR_LEN], signature: &[u8]) -> Result<()> {
        wiping_ml_dsa(|| each_set!(&self.key, Verifying, k => verify_with(k, mu, signature)))
    }
}
