//! `CKM_ECDSA` and `CKM_ECDSA_SHA*` (mechanisms spec §2.3.6, §2.3.7):
//! signatures r ‖ s, each the size of the field (P-521: 66 + 66 bytes).

use super::curves::{Curve, EcPrivateKey, EcPublicKey, each};
use crate::error::{Result, err};
use crate::mechanisms::digest::DigestOp;
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::operation::{DigestOperation, SignOperation, VerifyOperation};
use crate::mechanisms::params::{Mechanism, Param};
use cryptoki_sys::*;
use signature::hazmat::{PrehashSigner, PrehashVerifier};
use std::sync::Arc;
use zeroize::Zeroizing;

/// The hash of a `CKM_ECDSA_SHA*` mechanism (`None` for raw `CKM_ECDSA`).
fn hash_of(mech: CK_MECHANISM_TYPE) -> Result<Option<DigestOp>> {
    Ok(match mech {
        CKM_ECDSA => None,
        CKM_ECDSA_SHA1 => Some(DigestOp::new(CKM_SHA_1)?),
        CKM_ECDSA_SHA224 => Some(DigestOp::new(CKM_SHA224)?),
        CKM_ECDSA_SHA256 => Some(DigestOp::new(CKM_SHA256)?),
        CKM_ECDSA_SHA384 => Some(DigestOp::new(CKM_SHA384)?),
        CKM_ECDSA_SHA512 => Some(DigestOp::new(CKM_SHA512)?),
        CKM_ECDSA_SHA3_224 => Some(DigestOp::new(CKM_SHA3_224)?),
        CKM_ECDSA_SHA3_256 => Some(DigestOp::new(CKM_SHA3_256)?),
        CKM_ECDSA_SHA3_384 => Some(DigestOp::new(CKM_SHA3_384)?),
        CKM_ECDSA_SHA3_512 => Some(DigestOp::new(CKM_SHA3_512)?),
        _ => return Err(err(CKR_MECHANISM_INVALID)),
    })
}

/// The most raw `CKM_ECDSA` input the signature depends on: the leftmost
/// field-size bytes of the largest field (P-521, 66 bytes).
const RAW_KEPT: usize = 66;

/// Message input: hashed as it comes (`CKM_ECDSA_SHA*`) or, for raw
/// `CKM_ECDSA`, the hash itself (buffered if given in parts).
struct Input {
    hash: Option<DigestOp>,
    buffer: Vec<u8>,
}

impl Input {
    fn new(mech: &Mechanism<'_>) -> Result<Input> {
        if mech.param != Param::None {
            return Err(err(CKR_MECHANISM_PARAM_INVALID));
        }
        Ok(Input {
            hash: hash_of(mech.ty)?,
            buffer: Vec::new(),
        })
    }

    /// Raw input given in parts keeps only its first [`RAW_KEPT`] bytes:
    /// [`Input::prehash`] never reads further, so the buffer stays bounded
    /// however much a caller feeds to `C_SignUpdate` / `C_VerifyUpdate`.
    fn update(&mut self, data: &[u8]) {
        match &mut self.hash {
            Some(h) => h.update(data),
            None => {
                let room = RAW_KEPT.saturating_sub(self.buffer.len());
                self.buffer.extend_from_slice(&data[..data.len().min(room)]);
            }
        }
    }

    /// The value to sign (§2.3.6; FIPS 186-5 §6.4.1): the digest, or for
    /// raw `CKM_ECDSA` the input, as the integer of its leftmost bits up to
    /// the order's length. Encoded so that the ECDSA primitive (and RFC
    /// 6979's bits2int) read back that integer: left-padded to the field
    /// size when the order's length is whole bytes (every curve but P-521),
    /// and on P-521 unpadded when it has at most 521 bits (padding to 66
    /// bytes would make bits2int shift it) or else cut to its leftmost 521
    /// bits in 66 bytes.
    fn prehash(&mut self, curve: Curve, single: Option<&[u8]>) -> Zeroizing<Vec<u8>> {
        let mut digest = [0u8; 64];
        let z: &[u8] = match (&mut self.hash, single) {
            (Some(h), Some(data)) => {
                h.update(data);
                let n = h.finish(&mut digest);
                &digest[..n]
            }
            (Some(h), None) => {
                let n = h.finish(&mut digest);
                &digest[..n]
            }
            (None, Some(data)) => data,
            (None, None) => &self.buffer,
        };
        let len = curve.field_len();
        let excess = 8 * len - curve.bits();
        if 8 * z.len() > curve.bits() {
            // The leftmost bits() bits: the first field-size bytes, shifted
            // right by the bits that exceed the order's length.
            let mut out = Zeroizing::new(z[..len].to_vec());
            if excess > 0 {
                for i in (0..len).rev() {
                    let carry = if i > 0 { out[i - 1] << (8 - excess) } else { 0 };
                    out[i] = (out[i] >> excess) | carry;
                }
            }
            return out;
        }
        if excess > 0 {
            return Zeroizing::new(z.to_vec());
        }
        let mut out = Zeroizing::new(vec![0u8; len]);
        out[len - z.len()..].copy_from_slice(z);
        out
    }
}

/// Signs `z` with `key`, k from RFC 6979 (HMAC over the curve's own hash:
/// SHA-256 for P-256 and secp256k1, SHA-224 / SHA-384 / SHA-512 for P-224
/// / P-384 / P-521, and SHA-256 for P-192, which the p192 crate leaves to
/// the ecdsa crate's generic signer).
fn sign_rust_crypto(key: &EcPrivateKey, z: &[u8]) -> Result<Vec<u8>> {
    let failed = |_| err(CKR_FUNCTION_FAILED);
    Ok(match key {
        EcPrivateKey::P192(k) => {
            let (s, _) = ::ecdsa::hazmat::sign_prehashed_rfc6979::<p192::NistP192, sha2::Sha256>(
                k.as_nonzero_scalar(),
                z,
                &[],
            );
            s.to_bytes().to_vec()
        }
        EcPrivateKey::P224(k) => {
            let s: p224::ecdsa::Signature = k.sign_prehash(z).map_err(failed)?;
            s.to_bytes().to_vec()
        }
        EcPrivateKey::P256(k) => {
            let s: p256::ecdsa::Signature = k.sign_prehash(z).map_err(failed)?;
            s.to_bytes().to_vec()
        }
        EcPrivateKey::P384(k) => {
            let s: p384::ecdsa::Signature = k.sign_prehash(z).map_err(failed)?;
            s.to_bytes().to_vec()
        }
        EcPrivateKey::P521(k) => {
            let s: p521::ecdsa::Signature = k.sign_prehash(z).map_err(failed)?;
            s.to_bytes().to_vec()
        }
        EcPrivateKey::K256(k) => {
            let s: k256::ecdsa::Signature = k.sign_prehash(z).map_err(failed)?;
            s.to_bytes().to_vec()
        }
    })
}

/// ECDSA signing, deterministic (RFC 6979) unless aws-lc signs.
pub struct EcdsaSign {
    key: Arc<KeyMaterial>,
    input: Input,
    curve: Curve,
}

impl EcdsaSign {
    /// Starts a signature with an EC private key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        let curve = match &*key {
            KeyMaterial::EcPrivate(k, ..) => k.curve(),
            _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        };
        Ok(EcdsaSign {
            input: Input::new(mech)?,
            key,
            curve,
        })
    }

    fn sign_z(&self, z: &[u8], out: &mut [u8]) -> Result<usize> {
        #[cfg(feature = "aws-lc")]
        if let KeyMaterial::EcPrivate(_, Some(aws)) = &*self.key
            && let Some(signature) = aws.sign_prehash(z)
        {
            let bytes = signature?;
            let dst = out.get_mut(..bytes.len()).ok_or(err(CKR_FUNCTION_FAILED))?;
            dst.copy_from_slice(&bytes);
            return Ok(bytes.len());
        }
        let KeyMaterial::EcPrivate(key, ..) = &*self.key else {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        };
        let bytes = sign_rust_crypto(key, z)?;
        let dst = out.get_mut(..bytes.len()).ok_or(err(CKR_FUNCTION_FAILED))?;
        dst.copy_from_slice(&bytes);
        Ok(bytes.len())
    }
}

impl SignOperation for EcdsaSign {
    fn output_len(&self) -> usize {
        2 * self.curve.field_len()
    }

    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let z = self.input.prehash(self.curve, Some(data));
        self.sign_z(&z, out)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.input.update(data);
        Ok(())
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let z = self.input.prehash(self.curve, None);
        self.sign_z(&z, out)
    }
}

/// ECDSA verification.
pub struct EcdsaVerify {
    key: EcPublicKey,
    #[cfg(feature = "aws-lc")]
    aws: Option<Arc<crate::mechanisms::awslc::EcPublic>>,
    input: Input,
}

impl EcdsaVerify {
    /// Starts a verification with a public key.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Self> {
        #[cfg(feature = "aws-lc")]
        let (key, aws) = match &*key {
            KeyMaterial::EcPublic(k, aws) => (k.clone(), aws.clone()),
            _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        };
        #[cfg(not(feature = "aws-lc"))]
        let key = match &*key {
            KeyMaterial::EcPublic(k) => k.clone(),
            _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        };
        Ok(EcdsaVerify {
            input: Input::new(mech)?,
            key,
            #[cfg(feature = "aws-lc")]
            aws,
        })
    }

    fn verify_z(&self, z: &[u8], signature: &[u8]) -> Result<()> {
        if signature.len() != 2 * self.key.curve().field_len() {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        #[cfg(feature = "aws-lc")]
        if let Some(aws) = &self.aws
            && let Some(result) = aws.verify_prehash(z, signature)
        {
            return result;
        }
        let invalid = |_| err(CKR_SIGNATURE_INVALID);
        if let EcPublicKey::K256(k) = &self.key {
            // k256 takes only low-s signatures (a Bitcoin rule); X9.62 and
            // §2.3.6 accept both s and n - s, so high s is folded down.
            let s = k256::ecdsa::Signature::from_slice(signature).map_err(invalid)?;
            return k.verify_prehash(z, &s.normalize_s()).map_err(invalid);
        }
        each!(&self.key, EcPublicKey, k => {
            let s = ::ecdsa::Signature::from_slice(signature).map_err(invalid)?;
            k.verify_prehash(z, &s).map_err(invalid)
        })
    }
}

impl VerifyOperation for EcdsaVerify {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        let z = self.input.prehash(self.key.curve(), Some(data));
        self.verify_z(&z, signature)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.input.update(data);
        Ok(())
    }

    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        let z = self.input.prehash(self.key.curve(), None);
        self.verify_z(&z, signature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn z(curve: Curve, input: &[u8]) -> Vec<u8> {
        let mut i = Input::new(&Mechanism::plain(CKM_ECDSA)).unwrap();
        i.prehash(curve, Some(input)).to_vec()
    }

    #[test]
    fn prehash_is_the_leftmost_order_length_bits() {
        // Short input: padded on whole-byte orders, as is on P-521.
        assert_eq!(z(Curve::P256, &[1, 2]), [&[0u8; 30][..], &[1, 2]].concat());
        assert_eq!(z(Curve::P521, &[7; 64]), vec![7; 64]);
        assert_eq!(z(Curve::P521, &[7; 65]), vec![7; 65]);
        // Long input: cut to the field size.
        assert_eq!(z(Curve::P192, &[5; 64]), vec![5; 24]);
        // P-521, 66 bytes and more: the leftmost 521 bits, 66 bytes.
        let mut long = vec![0u8; 70];
        long[0] = 0x80;
        long[65] = 0x80;
        long[66] = 0xff;
        let got = z(Curve::P521, &long);
        let mut want = vec![0u8; 66];
        want[0] = 0x01;
        want[65] = 0x01;
        assert_eq!(got, want);
        assert_eq!(z(Curve::P521, &[0xff; 66])[..2], [0x01, 0xff]);
        assert_eq!(z(Curve::P521, &[0xff; 66])[65], 0xff);
    }

    /// Raw input in parts: the buffer holds no more than the prehash reads,
    /// and the value is the one the whole input gives in one part.
    #[test]
    fn raw_input_in_parts_is_bounded_and_gives_the_single_part_value() {
        let whole: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
        for curve in [Curve::P256, Curve::P384, Curve::P521] {
            for part in [1, 5, 65, 66, 67, 1000] {
                let mut i = Input::new(&Mechanism::plain(CKM_ECDSA)).unwrap();
                for chunk in whole.chunks(part) {
                    i.update(chunk);
                    assert!(i.buffer.len() <= RAW_KEPT, "{}", i.buffer.len());
                }
                assert_eq!(i.prehash(curve, None).to_vec(), z(curve, &whole), "{part}");
            }
            // Short inputs in parts are kept whole.
            let mut i = Input::new(&Mechanism::plain(CKM_ECDSA)).unwrap();
            i.update(&whole[..20]);
            i.update(&whole[20..40]);
            assert_eq!(i.prehash(curve, None).to_vec(), z(curve, &whole[..40]));
        }
    }
}
