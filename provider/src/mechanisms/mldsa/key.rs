//! Parsed ML-DSA keys (FIPS 204): a private key built from its seed ξ
//! (Algorithm 6, ML-DSA.KeyGen_internal) and a public key from its
//! encoding (pkDecode), for the three parameter sets; the `tr = H(pk, 64)`
//! both keep for μ (Algorithm 7 line 6), and signing and verification on a
//! computed μ.

#[cfg(feature = "aws-lc")]
use super::awslc;
use super::params::{ParamSet, SEED_LEN};
use crate::error::{Result, err};
use crate::hygiene::wiping_pqc;
use cryptoki_sys::*;
use ml_dsa::{
    EncodedVerifyingKey, ExpandedSigningKey, ExpandedSigningKeyBytes, Keypair, MlDsa44, MlDsa65,
    MlDsa87, MlDsaParams, Signature, SigningKey, VerifyingKey,
};
use sha3::Shake256;
use sha3::digest::{ExtendableOutput, Update};
#[cfg(feature = "aws-lc")]
use std::sync::OnceLock;
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
    P44(Held<MlDsa44>),
    P65(Held<MlDsa65>),
    P87(Held<MlDsa87>),
}

/// A private key as it was imported: from its seed (the crate's
/// `SigningKey`, which keeps its expanded form on the heap), or from the
/// expanded key alone (boxed: it holds Â and the NTT forms, up to 47 KB).
enum Held<P: MlDsaParams> {
    Seed(SigningKey<P>),
    Expanded(Box<ExpandedSigningKey<P>>),
}

impl<P: MlDsaParams> Held<P> {
    fn expanded(&self) -> &ExpandedSigningKey<P> {
        match self {
            Held::Seed(k) => k.expanded_key(),
            Held::Expanded(k) => k,
        }
    }
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
    public: Vec<u8>,
    tr: [u8; TR_LEN],
    /// With `aws-lc`: the same key in aws-lc, built from the seed (or the
    /// expanded key) on its first aws-lc signature; `None` if aws-lc
    /// refused it.
    #[cfg(feature = "aws-lc")]
    aws: OnceLock<Option<awslc::Signer>>,
}

/// An ML-DSA public key.
pub struct PublicKey {
    set: ParamSet,
    key: Verifying,
    tr: [u8; TR_LEN],
    /// With `aws-lc`: the same key parsed by aws-lc (`None` if it refused).
    #[cfg(feature = "aws-lc")]
    aws: Option<awslc::Verifier>,
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
    key: &ExpandedSigningKey<P>,
    mu: &[u8; TR_LEN],
    rnd: &[u8; 32],
) -> Result<Vec<u8>> {
    let mu = (*mu).into();
    key.sign_mu_randomized(&mu, &mut Rnd(rnd))
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
        Ok(wiping_pqc(|| {
            let xi = Zeroizing::new(*xi);
            fn expand<P: MlDsaParams>(xi: &[u8; SEED_LEN]) -> (Held<P>, Vec<u8>) {
                let sk = SigningKey::<P>::from_seed(&(*xi).into());
                let public = sk.verifying_key().encode().to_vec();
                (Held::Seed(sk), public)
            }
            let (key, public) = match set {
                ParamSet::P44 => {
                    let (k, p) = expand(&xi);
                    (Signing::P44(k), p)
                }
                ParamSet::P65 => {
                    let (k, p) = expand(&xi);
                    (Signing::P65(k), p)
                }
                ParamSet::P87 => {
                    let (k, p) = expand(&xi);
                    (Signing::P87(k), p)
                }
            };
            PrivateKey {
                set,
                key,
                tr: tr_of(&public),
                public,
                #[cfg(feature = "aws-lc")]
                aws: OnceLock::new(),
            }
        }))
    }

    /// The key of `set` decoded from its expanded form (skDecode, FIPS 204
    /// Algorithm 25), which the crate does not validate: the coefficients
    /// of s1 and s2 are range-checked first (`expanded::check`), then the
    /// public key is recomputed from ρ, s1 and s2 and its `tr` must equal
    /// the encoding's, and a test signature must verify under it (t0 has no
    /// other check). `CKR_ATTRIBUTE_VALUE_INVALID` otherwise.
    pub fn from_expanded(set: ParamSet, value: &[u8]) -> Result<PrivateKey> {
        super::expanded::check(set, value)?;
        fn decode<P: MlDsaParams>(value: &[u8]) -> Result<(Held<P>, Vec<u8>)> {
            let bytes = ExpandedSigningKeyBytes::<P>::try_from(value)
                .map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?;
            #[allow(deprecated)] // skDecode; its input was range-checked above
            let key = Box::new(ExpandedSigningKey::<P>::from_expanded(&bytes));
            let vk = key.verifying_key();
            let sig = key
                .sign_deterministic(b"dalek-pkcs11 key check", b"")
                .map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?;
            if !vk.verify_with_context(b"dalek-pkcs11 key check", b"", &sig) {
                return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
            }
            Ok((Held::Expanded(key), vk.encode().to_vec()))
        }
        let (key, public) = wiping_pqc(|| {
            Ok::<_, crate::error::Error>(match set {
                ParamSet::P44 => {
                    let (k, p) = decode(value)?;
                    (Signing::P44(k), p)
                }
                ParamSet::P65 => {
                    let (k, p) = decode(value)?;
                    (Signing::P65(k), p)
                }
                ParamSet::P87 => {
                    let (k, p) = decode(value)?;
                    (Signing::P87(k), p)
                }
            })
        })?;
        let tr = tr_of(&public);
        if value[64..128] != tr {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        Ok(PrivateKey {
            set,
            key,
            public,
            tr,
            #[cfg(feature = "aws-lc")]
            aws: OnceLock::new(),
        })
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
        self.public.clone()
    }

    /// The expanded private key (skEncode, FIPS 204 Algorithm 24): what
    /// `CKA_VALUE` holds.
    pub fn expanded_encoding(&self) -> Zeroizing<Vec<u8>> {
        #[allow(deprecated)] // the crate marks skEncode deprecated; FIPS 204 defines it
        wiping_pqc(|| {
            let v = each_set!(&self.key, Signing, k => k.expanded().to_expanded().to_vec());
            Zeroizing::new(v)
        })
    }

    /// Signs μ (Algorithm 7 from line 7) with the randomness `rnd` (all
    /// zeros: the deterministic variant).
    pub fn sign_mu(&self, mu: &[u8; TR_LEN], rnd: &[u8; 32]) -> Result<Vec<u8>> {
        wiping_pqc(|| each_set!(&self.key, Signing, k => sign_with(k.expanded(), mu, rnd)))
    }

    /// With `aws-lc`: hedged ML-DSA.Sign (Algorithm 2) of the whole
    /// `message` with an empty context, computed by aws-lc, into `out` (at
    /// least the signature's length). `None` if aws-lc has no form of this
    /// key: sign on μ instead. The first call builds the aws-lc key.
    #[cfg(feature = "aws-lc")]
    pub fn sign_aws_lc(&self, message: &[u8], out: &mut [u8]) -> Option<Result<usize>> {
        let signer = self
            .aws
            .get_or_init(|| {
                // Key expansion reaches deep and holds the key: wiped behind it.
                wiping_pqc(|| each_set!(&self.key, Signing, k => aws_signer(self.set, k)))
            })
            .as_ref()?;
        Some(wiping_pqc(|| signer.sign(message, out)))
    }
}

impl PrivateKey {
    /// Whether its aws-lc form has been built (unit tests: which path signed).
    #[cfg(all(test, feature = "aws-lc"))]
    pub fn aws_lc_built(&self) -> bool {
        self.aws.get().is_some_and(Option::is_some)
    }
}

/// The aws-lc form of a private key: from its seed when it has one, else
/// from its (checked) expanded form.
#[cfg(feature = "aws-lc")]
fn aws_signer<P: MlDsaParams>(set: ParamSet, key: &Held<P>) -> Option<awslc::Signer> {
    match key {
        Held::Seed(k) => awslc::Signer::new(set, awslc::Source::Seed(k.as_seed().as_slice())),
        Held::Expanded(k) => {
            #[allow(deprecated)] // skEncode, FIPS 204 Algorithm 24
            let value = Zeroizing::new(k.to_expanded().to_vec());
            awslc::Signer::new(set, awslc::Source::Expanded(&value))
        }
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
        let key = wiping_pqc(|| {
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
            #[cfg(feature = "aws-lc")]
            aws: awslc::Verifier::new(set, value),
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
        wiping_pqc(|| each_set!(&self.key, Verifying, k => verify_with(k, mu, signature)))
    }

    /// With `aws-lc`: ML-DSA.Verify (Algorithm 3) of `signature` (of the
    /// set's length, checked by the caller) over the whole `message` with an
    /// empty context, computed by aws-lc: `CKR_SIGNATURE_INVALID` if it does
    /// not verify. `None` if aws-lc has no form of this key: verify on μ.
    #[cfg(feature = "aws-lc")]
    pub fn verify_aws_lc(&self, message: &[u8], signature: &[u8]) -> Option<Result<()>> {
        let verifier = self.aws.as_ref()?;
        Some(wiping_pqc(|| verifier.verify(message, signature)))
    }
}
