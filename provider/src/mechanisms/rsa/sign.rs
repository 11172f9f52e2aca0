//! RSA signatures (mechanisms spec §2.1.6–2.1.7, §2.1.12, §2.1.14–2.1.15):
//! PKCS #1 v1.5, PSS and raw X.509 signing and verification, with or
//! without hashing by the token, and verification with recovery.

use super::common::{Hash, SysRng, be_padded, emit, private_of, public_of, raw_private, uint};
use crate::error::{Result, err};
use crate::mechanisms::digest::DigestOp;
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::operation::{
    CipherOperation, DigestOperation, OutputLen, SignOperation, VerifyOperation, single_part_cipher,
};
use crate::mechanisms::params::{Mechanism, Param};
use ::rsa::traits::PublicKeyParts;
use ::rsa::{Pkcs1v15Sign, Pss};
use cryptoki_sys::*;
use std::sync::Arc;

/// How the value to sign is padded.
#[derive(Clone, Copy, Debug)]
enum SigPadding {
    /// EMSA-PKCS1-v1_5: the DigestInfo of the hash when the token hashes,
    /// else the caller's input (at most k − 11 bytes) as is.
    Pkcs1,
    /// EMSA-PSS with MGF1 over the same hash.
    Pss { hash: Hash, salt_len: usize },
    /// None (`CKM_RSA_X_509`): the input is the integer.
    Raw,
}

/// A signature mechanism: the hash the token applies (the `CKM_SHA*_RSA_*`
/// mechanisms) and the padding.
struct Scheme {
    hash: Option<(Hash, DigestOp)>,
    padding: SigPadding,
}

impl Scheme {
    /// Decodes and validates the mechanism for a key of `bits` bits.
    fn new(mech: &Mechanism<'_>, bits: usize) -> Result<Scheme> {
        let bad = || err(CKR_MECHANISM_PARAM_INVALID);
        let (hash, pss) = match mech.ty {
            CKM_RSA_PKCS | CKM_RSA_X_509 => (None, false),
            // Legacy (mechanisms spec §2.1.12); aws-lc has no MD5, so
            // this always runs in the rsa crate.
            CKM_MD5_RSA_PKCS => (Some(Hash::Md5), false),
            CKM_SHA1_RSA_PKCS => (Some(Hash::Sha1), false),
            CKM_SHA224_RSA_PKCS => (Some(Hash::Sha224), false),
            CKM_SHA256_RSA_PKCS => (Some(Hash::Sha256), false),
            CKM_SHA384_RSA_PKCS => (Some(Hash::Sha384), false),
            CKM_SHA512_RSA_PKCS => (Some(Hash::Sha512), false),
            CKM_SHA3_224_RSA_PKCS => (Some(Hash::Sha3_224), false),
            CKM_SHA3_256_RSA_PKCS => (Some(Hash::Sha3_256), false),
            CKM_SHA3_384_RSA_PKCS => (Some(Hash::Sha3_384), false),
            CKM_SHA3_512_RSA_PKCS => (Some(Hash::Sha3_512), false),
            CKM_RSA_PKCS_PSS => (None, true),
            CKM_SHA1_RSA_PKCS_PSS => (Some(Hash::Sha1), true),
            CKM_SHA224_RSA_PKCS_PSS => (Some(Hash::Sha224), true),
            CKM_SHA256_RSA_PKCS_PSS => (Some(Hash::Sha256), true),
            CKM_SHA384_RSA_PKCS_PSS => (Some(Hash::Sha384), true),
            CKM_SHA512_RSA_PKCS_PSS => (Some(Hash::Sha512), true),
            CKM_SHA3_224_RSA_PKCS_PSS => (Some(Hash::Sha3_224), true),
            CKM_SHA3_256_RSA_PKCS_PSS => (Some(Hash::Sha3_256), true),
            CKM_SHA3_384_RSA_PKCS_PSS => (Some(Hash::Sha3_384), true),
            CKM_SHA3_512_RSA_PKCS_PSS => (Some(Hash::Sha3_512), true),
            _ => return Err(err(CKR_MECHANISM_INVALID)),
        };
        let padding = if pss {
            // §2.1.14: CK_RSA_PKCS_PSS_PARAMS is required.
            let Param::Pss {
                hash: p_hash,
                mgf,
                salt_len,
            } = mech.param
            else {
                return Err(bad());
            };
            let p_hash = Hash::from_mech(p_hash).ok_or_else(bad)?;
            if hash.is_some_and(|h| h != p_hash) || Hash::from_mgf(mgf) != Some(p_hash) {
                return Err(bad());
            }
            // RFC 8017 §9.1.1: emLen ≥ hLen + sLen + 2, emLen = ⌈(modBits − 1)/8⌉.
            let em_len = (bits - 1).div_ceil(8);
            let salt_len = usize::try_from(salt_len).map_err(|_| bad())?;
            if salt_len
                .checked_add(p_hash.len() + 2)
                .is_none_or(|need| need > em_len)
            {
                return Err(bad());
            }
            SigPadding::Pss {
                hash: p_hash,
                salt_len,
            }
        } else {
            if mech.param != Param::None {
                return Err(bad());
            }
            if mech.ty == CKM_RSA_X_509 {
                SigPadding::Raw
            } else {
                SigPadding::Pkcs1
            }
        };
        let hash = match hash {
            Some(h) => Some((h, DigestOp::new(h.mech())?)),
            None => None,
        };
        Ok(Scheme { hash, padding })
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        match &mut self.hash {
            Some((_, d)) => {
                d.update(data);
                Ok(())
            }
            None => Err(err(CKR_FUNCTION_NOT_SUPPORTED)),
        }
    }

    /// The value the padding applies to: the digest of everything given
    /// (hashing mechanisms) or `single` itself. `None` for a multi-part
    /// finish of a single-part mechanism.
    fn value<'a>(&mut self, single: Option<&'a [u8]>) -> Result<std::borrow::Cow<'a, [u8]>> {
        match (&mut self.hash, single) {
            (Some((_, d)), data) => {
                if let Some(data) = data {
                    d.update(data);
                }
                let mut digest = [0u8; 64];
                let n = d.finish(&mut digest);
                Ok(std::borrow::Cow::Owned(digest[..n].to_vec()))
            }
            (None, Some(data)) => Ok(std::borrow::Cow::Borrowed(data)),
            (None, None) => Err(err(CKR_FUNCTION_NOT_SUPPORTED)),
        }
    }

    fn pkcs1(&self) -> Pkcs1v15Sign {
        match &self.hash {
            Some((h, _)) => h.pkcs1v15(),
            None => Pkcs1v15Sign::new_unprefixed(),
        }
    }

    /// With `aws-lc`: the hash, PSS or not, and digest aws-lc signs or
    /// verifies for `value` (already length-checked), if it can.
    #[cfg(feature = "aws-lc")]
    fn aws<'v>(
        &self,
        value: &'v [u8],
    ) -> Option<(crate::mechanisms::awslc::SigHash, bool, &'v [u8])> {
        use crate::mechanisms::awslc::{SigHash, split_digest_info};
        match (self.padding, &self.hash) {
            (SigPadding::Pkcs1, Some((h, _))) => {
                Some((SigHash::from_mech(h.mech())?, false, value))
            }
            (SigPadding::Pkcs1, None) => {
                let (h, digest) = split_digest_info(value)?;
                Some((h, false, digest))
            }
            (SigPadding::Pss { hash, salt_len }, _) if salt_len == hash.len() => {
                Some((SigHash::from_mech(hash.mech())?, true, value))
            }
            _ => None,
        }
    }

    /// Checks the length of a raw (unhashed) input for a key of `k` bytes.
    fn check_input(&self, value: &[u8], k: usize) -> Result<()> {
        let ok = match (self.padding, &self.hash) {
            (_, Some(_)) => true,
            (SigPadding::Pkcs1, None) => value.len() + 11 <= k,
            (SigPadding::Pss { hash, .. }, None) => value.len() == hash.len(),
            (SigPadding::Raw, None) => value.len() <= k,
        };
        if ok {
            Ok(())
        } else {
            Err(err(CKR_DATA_LEN_RANGE))
        }
    }
}

/// RSA signing: `CKM_RSA_PKCS`, `CKM_SHA*_RSA_PKCS`, `CKM_RSA_PKCS_PSS`,
/// `CKM_SHA*_RSA_PKCS_PSS`, `CKM_RSA_X_509`. The signature is exactly as
/// long as the modulus.
pub struct RsaSign {
    key: Arc<KeyMaterial>,
    k: usize,
    scheme: Scheme,
}

impl RsaSign {
    /// Starts a signature with an RSA private key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let private = private_of(&key)?;
        let (k, bits) = (private.size(), private.n().bits());
        Ok(RsaSign {
            scheme: Scheme::new(mech, bits)?,
            key,
            k,
        })
    }

    fn sign_value(&self, value: &[u8], out: &mut [u8]) -> Result<usize> {
        let key = private_of(&self.key)?;
        self.scheme.check_input(value, self.k)?;
        #[cfg(feature = "aws-lc")]
        if let KeyMaterial::RsaPrivate(_, Some(aws)) = &*self.key
            && let Some((hash, pss, digest)) = self.scheme.aws(value)
            && let Some(signature) = aws.sign_digest(hash, pss, digest)
        {
            let signature = signature?;
            if signature.len() != self.k {
                return Err(err(CKR_FUNCTION_FAILED));
            }
            return emit(&signature, out);
        }
        let failed = |_| err(CKR_FUNCTION_FAILED);
        let signature = match self.scheme.padding {
            SigPadding::Pkcs1 => key
                .sign_with_rng(&mut SysRng, self.scheme.pkcs1(), value)
                .map_err(failed)?,
            SigPadding::Pss { hash, salt_len } => {
                // `blinded: true` makes the crate blind the private-key
                // operation with the RNG (the signature is ordinary PSS).
                let pss = Pss {
                    blinded: true,
                    digest: hash.dyn_digest(),
                    salt_len,
                };
                key.sign_with_rng(&mut SysRng, pss, value).map_err(failed)?
            }
            SigPadding::Raw => {
                let x = uint(value);
                if &x >= key.n() {
                    return Err(err(CKR_DATA_INVALID));
                }
                let s = raw_private(key, &x)?;
                be_padded(&s, self.k)
                    .ok_or(err(CKR_FUNCTION_FAILED))?
                    .to_vec()
            }
        };
        if signature.len() != self.k {
            return Err(err(CKR_FUNCTION_FAILED));
        }
        emit(&signature, out)
    }
}

impl SignOperation for RsaSign {
    fn output_len(&self) -> usize {
        self.k
    }

    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let value = self.scheme.value(Some(data))?;
        self.sign_value(&value, out)
    }

    /// Multi-part: only for the hashing mechanisms (else
    /// `CKR_FUNCTION_NOT_SUPPORTED`).
    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.scheme.update(data)
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let value = self.scheme.value(None)?;
        self.sign_value(&value, out)
    }
}

/// RSA verification (same mechanisms as [`RsaSign`]): a signature of the
/// wrong length is `CKR_SIGNATURE_LEN_RANGE`, a wrong one
/// `CKR_SIGNATURE_INVALID`.
pub struct RsaVerify {
    key: Arc<KeyMaterial>,
    k: usize,
    scheme: Scheme,
}

impl RsaVerify {
    /// Starts a verification with an RSA public key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let public = public_of(&key)?;
        let (k, bits) = (public.size(), public.n().bits());
        Ok(RsaVerify {
            scheme: Scheme::new(mech, bits)?,
            key,
            k,
        })
    }

    fn verify_value(&self, value: &[u8], signature: &[u8]) -> Result<()> {
        let key = public_of(&self.key)?;
        if signature.len() != self.k {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        self.scheme.check_input(value, self.k)?;
        let invalid = |_| err(CKR_SIGNATURE_INVALID);
        let s = uint(signature);
        if &s >= key.n() {
            return Err(err(CKR_SIGNATURE_INVALID));
        }
        #[cfg(feature = "aws-lc")]
        if let KeyMaterial::RsaPublic(_, Some(aws)) = &*self.key
            && let Some((hash, pss, digest)) = self.scheme.aws(value)
            && let Some(result) = aws.verify_digest(hash, pss, digest, signature)
        {
            return result;
        }
        match self.scheme.padding {
            SigPadding::Pkcs1 => key
                .verify(self.scheme.pkcs1(), value, signature)
                .map_err(invalid),
            SigPadding::Pss { hash, salt_len } => {
                let pss = Pss {
                    blinded: false,
                    digest: hash.dyn_digest(),
                    salt_len,
                };
                key.verify(pss, value, signature).map_err(invalid)
            }
            SigPadding::Raw => {
                let m = s.modpow(key.e(), key.n());
                let recovered = be_padded(&m, self.k).ok_or(err(CKR_SIGNATURE_INVALID))?;
                let expected = be_padded(&uint(value), self.k).ok_or(err(CKR_DATA_LEN_RANGE))?;
                if *recovered == *expected {
                    Ok(())
                } else {
                    Err(err(CKR_SIGNATURE_INVALID))
                }
            }
        }
    }
}

/// `C_VerifyRecover` with `CKM_RSA_PKCS` or `CKM_RSA_X_509` (mechanisms
/// spec 3.0 §2.1.6–2.1.7): the public-key operation, then for
/// `CKM_RSA_PKCS` the removal of the EMSA-PKCS1-v1_5 block-type-1 padding
/// (`00 01 FF…FF 00 ‖ data`, at least eight `FF`); `CKM_RSA_X_509` gives
/// the whole k-byte block.
pub struct RsaRecover {
    key: Arc<KeyMaterial>,
    k: usize,
    pkcs1: bool,
}

impl RsaRecover {
    /// Starts a verification with recovery with an RSA public key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let pkcs1 = match mech.ty {
            CKM_RSA_PKCS => true,
            CKM_RSA_X_509 => false,
            _ => return Err(err(CKR_MECHANISM_INVALID)),
        };
        if mech.param != Param::None {
            return Err(err(CKR_MECHANISM_PARAM_INVALID));
        }
        let public = public_of(&key)?;
        super::keys::require_full_size(public)?;
        let k = public.size();
        Ok(RsaRecover { key, k, pkcs1 })
    }

    fn recover(&self, signature: &[u8], out: &mut [u8]) -> Result<usize> {
        let key = public_of(&self.key)?;
        if signature.len() != self.k {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        let s = uint(signature);
        if &s >= key.n() {
            return Err(err(CKR_SIGNATURE_INVALID));
        }
        let block =
            be_padded(&s.modpow(key.e(), key.n()), self.k).ok_or(err(CKR_SIGNATURE_INVALID))?;
        if !self.pkcs1 {
            return emit(&block, out);
        }
        let invalid = || err(CKR_SIGNATURE_INVALID);
        let rest = block.strip_prefix(&[0x00, 0x01]).ok_or_else(invalid)?;
        let pad = rest.iter().take_while(|&&b| b == 0xFF).count();
        if pad < 8 || rest.get(pad) != Some(&0x00) {
            return Err(invalid());
        }
        emit(&rest[pad + 1..], out)
    }
}

impl CipherOperation for RsaRecover {
    fn output_len(&self, _input_len: usize) -> OutputLen {
        if self.pkcs1 {
            OutputLen::AtMost(self.k - 11)
        } else {
            OutputLen::Exact(self.k)
        }
    }
    fn process(&mut self, signature: &[u8], out: &mut [u8]) -> Result<usize> {
        self.recover(signature, out)
    }
    // Verification with recovery is single-part only (§5.14).
    single_part_cipher!();
}

impl VerifyOperation for RsaVerify {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        let value = self.scheme.value(Some(data))?;
        self.verify_value(&value, signature)
    }

    /// Multi-part: only for the hashing mechanisms (else
    /// `CKR_FUNCTION_NOT_SUPPORTED`).
    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.scheme.update(data)
    }

    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        let value = self.scheme.value(None)?;
        self.verify_value(&value, signature)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::materials;
    use super::*;

    fn pss(
        hash: CK_MECHANISM_TYPE,
        mgf: CK_RSA_PKCS_MGF_TYPE,
        salt_len: CK_ULONG,
    ) -> Param<'static> {
        Param::Pss {
            hash,
            mgf,
            salt_len,
        }
    }

    #[test]
    fn every_signature_mechanism_round_trips() {
        let (private, public) = materials();
        let digest_of = |h: CK_MECHANISM_TYPE, m: &[u8]| {
            let mut d = DigestOp::new(h).unwrap();
            d.update(m);
            let mut out = [0u8; 64];
            let n = d.finish(&mut out);
            out[..n].to_vec()
        };
        let hashes = [
            (
                CKM_SHA_1,
                CKG_MGF1_SHA1,
                CKM_SHA1_RSA_PKCS,
                CKM_SHA1_RSA_PKCS_PSS,
            ),
            (
                CKM_SHA224,
                CKG_MGF1_SHA224,
                CKM_SHA224_RSA_PKCS,
                CKM_SHA224_RSA_PKCS_PSS,
            ),
            (
                CKM_SHA256,
                CKG_MGF1_SHA256,
                CKM_SHA256_RSA_PKCS,
                CKM_SHA256_RSA_PKCS_PSS,
            ),
            (
                CKM_SHA384,
                CKG_MGF1_SHA384,
                CKM_SHA384_RSA_PKCS,
                CKM_SHA384_RSA_PKCS_PSS,
            ),
            (
                CKM_SHA512,
                CKG_MGF1_SHA512,
                CKM_SHA512_RSA_PKCS,
                CKM_SHA512_RSA_PKCS_PSS,
            ),
        ];
        let msg = b"the message";
        for (h, mgf, pkcs, pss_mech) in hashes {
            let mut cases = vec![
                (Mechanism::plain(pkcs), msg.to_vec()),
                (
                    Mechanism {
                        ty: pss_mech,
                        param: pss(h, mgf, 20),
                    },
                    msg.to_vec(),
                ),
                (
                    Mechanism {
                        ty: CKM_RSA_PKCS_PSS,
                        param: pss(h, mgf, 0),
                    },
                    digest_of(h, msg),
                ),
            ];
            if h == CKM_SHA256 {
                cases.push((Mechanism::plain(CKM_RSA_PKCS), b"raw input".to_vec()));
                cases.push((Mechanism::plain(CKM_RSA_X_509), b"raw integer".to_vec()));
            }
            for (mech, data) in cases {
                let mut s = RsaSign::new(&mech, private.clone()).unwrap();
                let mut sig = vec![0u8; s.output_len()];
                assert_eq!(s.sign(&data, &mut sig).unwrap(), 256);
                let mut v = RsaVerify::new(&mech, public.clone()).unwrap();
                v.verify(&data, &sig).unwrap();
                let mut bad = sig.clone();
                bad[100] ^= 1;
                let mut v = RsaVerify::new(&mech, public.clone()).unwrap();
                assert_eq!(
                    v.verify(&data, &bad).unwrap_err().rv(),
                    CKR_SIGNATURE_INVALID,
                    "{:#x}",
                    mech.ty
                );
                let mut v = RsaVerify::new(&mech, public.clone()).unwrap();
                assert_eq!(
                    v.verify(&data, &sig[1..]).unwrap_err().rv(),
                    CKR_SIGNATURE_LEN_RANGE
                );
            }
            // Multi-part equals single-part (PKCS #1 v1.5 is deterministic).
            let mech = Mechanism::plain(pkcs);
            let mut s = RsaSign::new(&mech, private.clone()).unwrap();
            let mut one = vec![0u8; 256];
            s.sign(msg, &mut one).unwrap();
            let mut s = RsaSign::new(&mech, private.clone()).unwrap();
            s.update(&msg[..3]).unwrap();
            s.update(&msg[3..]).unwrap();
            let mut two = vec![0u8; 256];
            s.finish(&mut two).unwrap();
            assert_eq!(one, two);
        }
    }

    #[test]
    fn parameter_and_length_checks() {
        let (private, public) = materials();
        let param_invalid = |mech: Mechanism<'_>| {
            assert_eq!(
                RsaSign::new(&mech, private.clone()).err().unwrap().rv(),
                CKR_MECHANISM_PARAM_INVALID,
                "{mech:?}"
            );
        };
        param_invalid(Mechanism::plain(CKM_RSA_PKCS_PSS));
        param_invalid(Mechanism {
            ty: CKM_SHA256_RSA_PKCS_PSS,
            param: pss(CKM_SHA384, CKG_MGF1_SHA384, 0),
        });
        param_invalid(Mechanism {
            ty: CKM_RSA_PKCS_PSS,
            param: pss(CKM_SHA256, CKG_MGF1_SHA1, 0),
        });
        param_invalid(Mechanism {
            ty: CKM_RSA_PKCS_PSS,
            param: pss(CKM_MD5, CKG_MGF1_SHA1, 0),
        });
        // 256 − 32 − 2 = 222 is the largest salt for a 2048-bit key.
        param_invalid(Mechanism {
            ty: CKM_RSA_PKCS_PSS,
            param: pss(CKM_SHA256, CKG_MGF1_SHA256, 223),
        });
        assert!(
            RsaSign::new(
                &Mechanism {
                    ty: CKM_RSA_PKCS_PSS,
                    param: pss(CKM_SHA256, CKG_MGF1_SHA256, 222),
                },
                private.clone()
            )
            .is_ok()
        );
        // Wrong key types.
        assert_eq!(
            RsaSign::new(&Mechanism::plain(CKM_RSA_PKCS), public.clone())
                .err()
                .unwrap()
                .rv(),
            CKR_KEY_TYPE_INCONSISTENT
        );
        assert_eq!(
            RsaVerify::new(&Mechanism::plain(CKM_RSA_PKCS), private.clone())
                .err()
                .unwrap()
                .rv(),
            CKR_KEY_TYPE_INCONSISTENT
        );
        // Raw PKCS #1 input limit k − 11, single-part only.
        let mut s = RsaSign::new(&Mechanism::plain(CKM_RSA_PKCS), private.clone()).unwrap();
        let mut sig = [0u8; 256];
        assert_eq!(
            s.sign(&[1u8; 246], &mut sig).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
        assert!(s.sign(&[1u8; 245], &mut sig).is_ok());
        assert_eq!(s.update(b"x").unwrap_err().rv(), CKR_FUNCTION_NOT_SUPPORTED);
        // PSS without hashing needs exactly the hash length.
        let mech = Mechanism {
            ty: CKM_RSA_PKCS_PSS,
            param: pss(CKM_SHA256, CKG_MGF1_SHA256, 32),
        };
        let mut s = RsaSign::new(&mech, private.clone()).unwrap();
        assert_eq!(
            s.sign(&[1u8; 31], &mut sig).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
        // X.509: at most k bytes, below the modulus.
        let mut s = RsaSign::new(&Mechanism::plain(CKM_RSA_X_509), private.clone()).unwrap();
        assert_eq!(
            s.sign(&[0xffu8; 256], &mut sig).unwrap_err().rv(),
            CKR_DATA_INVALID
        );
        assert_eq!(
            s.sign(&[1u8; 257], &mut sig).unwrap_err().rv(),
            CKR_DATA_LEN_RANGE
        );
    }
}
