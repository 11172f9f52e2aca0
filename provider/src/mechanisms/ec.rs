//! ECDSA and ECDH on P-256 and P-384 (mechanisms spec §2.3) with the p256
//! and p384 crates.
//!
//! `CKA_EC_PARAMS` is the named-curve OID in DER, or (accepted on input) a
//! DER PrintableString of a curve name such as "prime256v1" or "P-384".
//! `CKA_EC_POINT` is returned as a DER OCTET STRING holding the
//! uncompressed point and accepted raw or DER, compressed or not, on input;
//! the public data of `CKM_ECDH1_DERIVE` likewise. Signatures are r ‖ s,
//! each the size of the field.

use super::digest::DigestOp;
use super::keys::KeyMaterial;
use super::{DigestOperation, GeneratedPair, Mechanism, Param, SignOperation, VerifyOperation};
use crate::api::attributes::Attributes;
use crate::error::{Result, err};
use crate::storage::seal::random_bytes;
use cryptoki_sys::*;
use p256::elliptic_curve::sec1::ToSec1Point;
use pkcs8::{DecodePrivateKey, EncodePrivateKey};
use signature::hazmat::{PrehashSigner, PrehashVerifier};
use std::sync::Arc;
use zeroize::Zeroizing;

/// DER of the OID 1.2.840.10045.3.1.7 (P-256).
pub const OID_P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// DER of the OID 1.3.132.0.34 (P-384).
pub const OID_P384: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22];

/// The curves supported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curve {
    /// NIST P-256.
    P256,
    /// NIST P-384.
    P384,
}

impl Curve {
    /// Field (and scalar) size in bytes.
    pub fn field_len(self) -> usize {
        match self {
            Curve::P256 => 32,
            Curve::P384 => 48,
        }
    }
}

/// The curve named by `CKA_EC_PARAMS`.
pub fn curve_of(params: &[u8]) -> Result<Curve> {
    if params == OID_P256 {
        return Ok(Curve::P256);
    }
    if params == OID_P384 {
        return Ok(Curve::P384);
    }
    // A printable (or UTF-8) string naming the curve.
    if let [0x13 | 0x0c, len, name @ ..] = params
        && *len as usize == name.len()
    {
        return match name {
            b"prime256v1" | b"secp256r1" | b"P-256" | b"nistp256" => Ok(Curve::P256),
            b"secp384r1" | b"P-384" | b"nistp384" => Ok(Curve::P384),
            _ => Err(err(CKR_CURVE_NOT_SUPPORTED)),
        };
    }
    Err(err(CKR_CURVE_NOT_SUPPORTED))
}

/// A private key on one of the curves.
pub enum EcPrivateKey {
    /// P-256.
    P256(p256::ecdsa::SigningKey),
    /// P-384.
    P384(p384::ecdsa::SigningKey),
}

/// A public key on one of the curves.
#[derive(Clone)]
pub enum EcPublicKey {
    /// P-256.
    P256(p256::ecdsa::VerifyingKey),
    /// P-384.
    P384(p384::ecdsa::VerifyingKey),
}

impl EcPrivateKey {
    fn from_scalar(curve: Curve, value: &[u8]) -> Result<EcPrivateKey> {
        let bad = |_| err(CKR_ATTRIBUTE_VALUE_INVALID);
        // Accept values shorter than the field (leading zeros stripped).
        if value.is_empty() || value.len() > curve.field_len() {
            return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
        }
        let mut padded = Zeroizing::new(vec![0u8; curve.field_len()]);
        padded[curve.field_len() - value.len()..].copy_from_slice(value);
        Ok(match curve {
            Curve::P256 => {
                EcPrivateKey::P256(p256::ecdsa::SigningKey::from_slice(&padded).map_err(bad)?)
            }
            Curve::P384 => {
                EcPrivateKey::P384(p384::ecdsa::SigningKey::from_slice(&padded).map_err(bad)?)
            }
        })
    }

    /// The public half.
    pub fn public(&self) -> EcPublicKey {
        match self {
            EcPrivateKey::P256(k) => EcPublicKey::P256(*k.verifying_key()),
            EcPrivateKey::P384(k) => EcPublicKey::P384(*k.verifying_key()),
        }
    }

    fn curve(&self) -> Curve {
        match self {
            EcPrivateKey::P256(_) => Curve::P256,
            EcPrivateKey::P384(_) => Curve::P384,
        }
    }
}

impl EcPublicKey {
    fn from_point(curve: Curve, point: &[u8]) -> Result<EcPublicKey> {
        let bad = |_| err(CKR_ATTRIBUTE_VALUE_INVALID);
        Ok(match curve {
            Curve::P256 => {
                EcPublicKey::P256(p256::ecdsa::VerifyingKey::from_sec1_bytes(point).map_err(bad)?)
            }
            Curve::P384 => {
                EcPublicKey::P384(p384::ecdsa::VerifyingKey::from_sec1_bytes(point).map_err(bad)?)
            }
        })
    }

    /// Uncompressed SEC1 encoding (0x04 ‖ X ‖ Y).
    pub fn uncompressed(&self) -> Vec<u8> {
        match self {
            EcPublicKey::P256(k) => k.as_affine().to_sec1_point(false).as_bytes().to_vec(),
            EcPublicKey::P384(k) => k.as_affine().to_sec1_point(false).as_bytes().to_vec(),
        }
    }

    fn curve(&self) -> Curve {
        match self {
            EcPublicKey::P256(_) => Curve::P256,
            EcPublicKey::P384(_) => Curve::P384,
        }
    }
}

/// DER OCTET STRING around a SEC1 point.
pub fn der_point(sec1: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(sec1.len() + 2);
    out.push(0x04);
    out.push(sec1.len() as u8);
    out.extend_from_slice(sec1);
    out
}

/// The SEC1 point inside a raw or DER `CKA_EC_POINT` for `curve`.
pub fn parse_point(curve: Curve, v: &[u8]) -> Result<&[u8]> {
    let sizes = [1 + curve.field_len(), 1 + 2 * curve.field_len()];
    match v {
        [0x04, len, rest @ ..] if *len as usize == rest.len() && sizes.contains(&rest.len()) => {
            Ok(rest)
        }
        _ if sizes.contains(&v.len()) => Ok(v),
        _ => Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
    }
}

/// Parses a private key (`CKA_EC_PARAMS`, `CKA_VALUE`).
pub fn load_private(params: &[u8], value: &[u8]) -> Result<KeyMaterial> {
    let curve = curve_of(params).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    EcPrivateKey::from_scalar(curve, value)
        .map(private_material)
        .map_err(|_| err(CKR_KEY_HANDLE_INVALID))
}

/// The cached form of a private key (with `aws-lc`: also parsed by aws-lc).
fn private_material(key: EcPrivateKey) -> KeyMaterial {
    #[cfg(feature = "aws-lc")]
    {
        let scalar = Zeroizing::new(match &key {
            EcPrivateKey::P256(k) => k.to_bytes().to_vec(),
            EcPrivateKey::P384(k) => k.to_bytes().to_vec(),
        });
        let point = key.public().uncompressed();
        let aws = super::awslc::EcPrivate::new(key.curve().field_len(), &scalar, &point);
        KeyMaterial::EcPrivate(key, aws.map(Box::new))
    }
    #[cfg(not(feature = "aws-lc"))]
    KeyMaterial::EcPrivate(key)
}

/// The cached form of a public key (with `aws-lc`: also parsed by aws-lc).
fn public_material(key: EcPublicKey) -> KeyMaterial {
    #[cfg(feature = "aws-lc")]
    {
        let aws = super::awslc::EcPublic::new(key.curve().field_len(), &key.uncompressed());
        KeyMaterial::EcPublic(key, aws.map(Arc::new))
    }
    #[cfg(not(feature = "aws-lc"))]
    KeyMaterial::EcPublic(key)
}

/// Parses a public key (`CKA_EC_PARAMS`, `CKA_EC_POINT`).
pub fn load_public(params: &[u8], point: &[u8]) -> Result<KeyMaterial> {
    let curve = curve_of(params).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    let sec1 = parse_point(curve, point).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    EcPublicKey::from_point(curve, sec1)
        .map(public_material)
        .map_err(|_| err(CKR_KEY_HANDLE_INVALID))
}

/// Checks an imported key; stores `CKA_EC_POINT` as DER of the
/// uncompressed point (computed for private keys).
pub fn complete_import(class: CK_OBJECT_CLASS, attrs: &mut Attributes) -> Result<()> {
    let curve = curve_of(
        attrs
            .bytes(CKA_EC_PARAMS)
            .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
    )?;
    let public = if class == CKO_PRIVATE_KEY {
        let key = EcPrivateKey::from_scalar(
            curve,
            attrs.bytes(CKA_VALUE).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
        )?;
        key.public()
    } else {
        let point = attrs
            .bytes(CKA_EC_POINT)
            .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
        EcPublicKey::from_point(curve, parse_point(curve, point)?)?
    };
    attrs.set_bytes(CKA_EC_POINT, &der_point(&public.uncompressed()));
    Ok(())
}

/// Generates a key pair on the curve of the public template's `CKA_EC_PARAMS`.
pub fn generate(public_template: &Attributes) -> Result<GeneratedPair> {
    let params = public_template
        .bytes(CKA_EC_PARAMS)
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    let curve = curve_of(params)?;
    let key = loop {
        let mut scalar = Zeroizing::new(vec![0u8; curve.field_len()]);
        random_bytes(&mut scalar)?;
        // A value outside [1, n) is astronomically rare; draw again.
        if let Ok(k) = EcPrivateKey::from_scalar(curve, &scalar) {
            break (k, scalar);
        }
    };
    let point = der_point(&key.0.public().uncompressed());
    let mut public = Attributes::new();
    public.set_bytes(CKA_EC_POINT, &point);
    let mut private = Attributes::new();
    private.set_bytes(CKA_EC_PARAMS, params);
    private.set_bytes(CKA_VALUE, &key.1);
    private.set_bytes(CKA_EC_POINT, &point);
    Ok(GeneratedPair {
        public,
        private,
        key_type: CKK_EC,
    })
}

/// PKCS#8 DER of a private key, for `C_WrapKey`.
pub fn to_pkcs8(params: &[u8], value: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    let key = EcPrivateKey::from_scalar(curve_of(params)?, value)?;
    let der = match &key {
        EcPrivateKey::P256(k) => p256::SecretKey::from(k).to_pkcs8_der(),
        EcPrivateKey::P384(k) => p384::SecretKey::from(k).to_pkcs8_der(),
    }
    .map_err(|_| err(CKR_KEY_NOT_WRAPPABLE))?;
    Ok(Zeroizing::new(der.as_bytes().to_vec()))
}

/// Sets `CKA_EC_PARAMS` and `CKA_VALUE` from PKCS#8 DER.
pub fn from_pkcs8(der: &[u8], attrs: &mut Attributes) -> Result<()> {
    let (params, value): (&[u8], Zeroizing<Vec<u8>>) =
        if let Ok(k) = p256::SecretKey::from_pkcs8_der(der) {
            (OID_P256, Zeroizing::new(k.to_bytes().to_vec()))
        } else if let Ok(k) = p384::SecretKey::from_pkcs8_der(der) {
            (OID_P384, Zeroizing::new(k.to_bytes().to_vec()))
        } else {
            return Err(err(CKR_WRAPPED_KEY_INVALID));
        };
    if let Some(given) = attrs.bytes(CKA_EC_PARAMS) {
        if curve_of(given)? != curve_of(params)? {
            return Err(err(CKR_TEMPLATE_INCONSISTENT));
        }
    } else {
        attrs.set_bytes(CKA_EC_PARAMS, params);
    }
    attrs.set_bytes(CKA_VALUE, &value);
    Ok(())
}

/// The hash of a `CKM_ECDSA_SHA*` mechanism (`None` for raw `CKM_ECDSA`).
fn hash_of(mech: CK_MECHANISM_TYPE) -> Result<Option<DigestOp>> {
    Ok(match mech {
        CKM_ECDSA => None,
        CKM_ECDSA_SHA1 => Some(DigestOp::new(CKM_SHA_1)?),
        CKM_ECDSA_SHA224 => Some(DigestOp::new(CKM_SHA224)?),
        CKM_ECDSA_SHA256 => Some(DigestOp::new(CKM_SHA256)?),
        CKM_ECDSA_SHA384 => Some(DigestOp::new(CKM_SHA384)?),
        CKM_ECDSA_SHA512 => Some(DigestOp::new(CKM_SHA512)?),
        _ => return Err(err(CKR_MECHANISM_INVALID)),
    })
}

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

    fn update(&mut self, data: &[u8]) {
        match &mut self.hash {
            Some(h) => h.update(data),
            None => self.buffer.extend_from_slice(data),
        }
    }

    /// The value to sign (`z` before reduction): the digest, or the raw input
    /// left-padded to the field size if shorter (the same integer, §2.3.6:
    /// input longer than the order is truncated by the ECDSA primitive).
    fn prehash(&mut self, field_len: usize, single: Option<&[u8]>) -> Zeroizing<Vec<u8>> {
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
        let mut out = Zeroizing::new(vec![0u8; field_len.max(z.len())]);
        let start = out.len() - z.len();
        out[start..].copy_from_slice(z);
        out
    }
}

/// ECDSA signing, deterministic (RFC 6979).
pub struct EcdsaSign {
    key: Arc<KeyMaterial>,
    input: Input,
    curve: Curve,
}

impl EcdsaSign {
    /// Starts a signature with a P-256 or P-384 private key.
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
        let failed = |_| err(CKR_FUNCTION_FAILED);
        let bytes = match &*self.key {
            KeyMaterial::EcPrivate(EcPrivateKey::P256(k), ..) => {
                let s: p256::ecdsa::Signature = k.sign_prehash(z).map_err(failed)?;
                s.to_bytes().to_vec()
            }
            KeyMaterial::EcPrivate(EcPrivateKey::P384(k), ..) => {
                let s: p384::ecdsa::Signature = k.sign_prehash(z).map_err(failed)?;
                s.to_bytes().to_vec()
            }
            _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
        };
        out[..bytes.len()].copy_from_slice(&bytes);
        Ok(bytes.len())
    }
}

impl SignOperation for EcdsaSign {
    fn output_len(&self) -> usize {
        2 * self.curve.field_len()
    }

    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let z = self.input.prehash(self.curve.field_len(), Some(data));
        self.sign_z(&z, out)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.input.update(data);
        Ok(())
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let z = self.input.prehash(self.curve.field_len(), None);
        self.sign_z(&z, out)
    }
}

/// ECDSA verification.
pub struct EcdsaVerify {
    key: EcPublicKey,
    #[cfg(feature = "aws-lc")]
    aws: Option<Arc<super::awslc::EcPublic>>,
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
        match &self.key {
            EcPublicKey::P256(k) => {
                let s = p256::ecdsa::Signature::from_slice(signature).map_err(invalid)?;
                k.verify_prehash(z, &s).map_err(invalid)
            }
            EcPublicKey::P384(k) => {
                let s = p384::ecdsa::Signature::from_slice(signature).map_err(invalid)?;
                k.verify_prehash(z, &s).map_err(invalid)
            }
        }
    }
}

impl VerifyOperation for EcdsaVerify {
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        let z = self.input.prehash(self.key.curve().field_len(), Some(data));
        self.verify_z(&z, signature)
    }

    fn update(&mut self, data: &[u8]) -> Result<()> {
        self.input.update(data);
        Ok(())
    }

    fn finish(&mut self, signature: &[u8]) -> Result<()> {
        let z = self.input.prehash(self.key.curve().field_len(), None);
        self.verify_z(&z, signature)
    }
}

/// ANSI X9.63 KDF (the `CKD_SHA*_KDF` functions of §2.3.13).
pub(super) fn x963_kdf(
    kdf: CK_EC_KDF_TYPE,
    z: &[u8],
    shared: &[u8],
    len: usize,
) -> Result<Zeroizing<Vec<u8>>> {
    let mech = match kdf {
        CKD_SHA1_KDF => CKM_SHA_1,
        CKD_SHA224_KDF => CKM_SHA224,
        CKD_SHA256_KDF => CKM_SHA256,
        CKD_SHA384_KDF => CKM_SHA384,
        CKD_SHA512_KDF => CKM_SHA512,
        _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
    };
    if len > super::MAX_SECRET_LEN {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    let mut out = Zeroizing::new(Vec::with_capacity(len + 64));
    let mut counter: u32 = 1;
    while out.len() < len {
        let mut h = DigestOp::new(mech)?;
        h.update(z);
        h.update(&counter.to_be_bytes());
        h.update(shared);
        let mut block = [0u8; 64];
        let n = h.finish(&mut block);
        out.extend_from_slice(&block[..n]);
        counter += 1;
    }
    out.truncate(len);
    Ok(out)
}

/// `CKM_ECDH1_DERIVE`: the x-coordinate of the shared point (`CKD_NULL`),
/// or that value through an X9.63 KDF. `len` (from `CKA_VALUE_LEN` or the
/// key type) truncates the result; with `CKD_NULL` it may not exceed the
/// field size.
pub fn ecdh_derive(
    mech: &Mechanism<'_>,
    base: &KeyMaterial,
    len: Option<usize>,
) -> Result<Zeroizing<Vec<u8>>> {
    let Param::Ecdh1 {
        kdf,
        shared,
        public,
    } = mech.param
    else {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    };
    let KeyMaterial::EcPrivate(private, ..) = base else {
        return Err(err(CKR_KEY_TYPE_INCONSISTENT));
    };
    let curve = private.curve();
    let point = parse_point(curve, public).map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
    let peer =
        EcPublicKey::from_point(curve, point).map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
    let z: Zeroizing<Vec<u8>> = match (private, &peer) {
        (EcPrivateKey::P256(k), EcPublicKey::P256(p)) => {
            let s = p256::ecdh::diffie_hellman(k.as_nonzero_scalar(), p.as_affine());
            Zeroizing::new(s.raw_secret_bytes().to_vec())
        }
        (EcPrivateKey::P384(k), EcPublicKey::P384(p)) => {
            let s = p384::ecdh::diffie_hellman(k.as_nonzero_scalar(), p.as_affine());
            Zeroizing::new(s.raw_secret_bytes().to_vec())
        }
        _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
    };
    match kdf {
        CKD_NULL => {
            if !shared.is_empty() {
                return Err(err(CKR_MECHANISM_PARAM_INVALID));
            }
            let len = len.unwrap_or(z.len());
            if len > z.len() {
                return Err(err(CKR_TEMPLATE_INCONSISTENT));
            }
            // Leftmost bytes, as SoftHSM and OpenSC expect for CKD_NULL.
            Ok(Zeroizing::new(z[..len].to_vec()))
        }
        other => x963_kdf(other, &z, shared, len.unwrap_or(z.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curve_names() {
        assert_eq!(curve_of(OID_P256).unwrap(), Curve::P256);
        assert_eq!(curve_of(OID_P384).unwrap(), Curve::P384);
        assert_eq!(curve_of(b"\x13\x0aprime256v1").unwrap(), Curve::P256);
        assert_eq!(curve_of(b"\x13\x09secp384r1").unwrap(), Curve::P384);
        assert_eq!(
            curve_of(b"\x13\x09secp521r1").unwrap_err().rv(),
            CKR_CURVE_NOT_SUPPORTED
        );
        assert!(curve_of(&[0x06, 0x01]).is_err());
    }

    #[test]
    fn sign_verify_and_ecdh_agree() {
        for params in [OID_P256, OID_P384] {
            let mut t = Attributes::new();
            t.set_bytes(CKA_EC_PARAMS, params);
            let a = generate(&t).unwrap();
            let b = generate(&t).unwrap();
            let ka = Arc::new(load_private(params, a.private.bytes(CKA_VALUE).unwrap()).unwrap());
            let pa = Arc::new(load_public(params, a.public.bytes(CKA_EC_POINT).unwrap()).unwrap());
            let mut s = EcdsaSign::new(&Mechanism::plain(CKM_ECDSA_SHA256), ka.clone()).unwrap();
            let mut sig = [0u8; 96];
            let n = s.sign(b"message", &mut sig).unwrap();
            assert_eq!(n, s.output_len());
            let mut v = EcdsaVerify::new(&Mechanism::plain(CKM_ECDSA_SHA256), pa).unwrap();
            v.verify(b"message", &sig[..n]).unwrap();
            assert_eq!(
                v.verify(b"massage", &sig[..n]).unwrap_err().rv(),
                CKR_SIGNATURE_INVALID
            );
            // ECDH both ways.
            let kb = load_private(params, b.private.bytes(CKA_VALUE).unwrap()).unwrap();
            let mech_a = Mechanism {
                ty: CKM_ECDH1_DERIVE,
                param: Param::Ecdh1 {
                    kdf: CKD_NULL,
                    shared: &[],
                    public: b.public.bytes(CKA_EC_POINT).unwrap(),
                },
            };
            let mech_b = Mechanism {
                ty: CKM_ECDH1_DERIVE,
                param: Param::Ecdh1 {
                    kdf: CKD_NULL,
                    shared: &[],
                    public: a.public.bytes(CKA_EC_POINT).unwrap(),
                },
            };
            assert_eq!(
                ecdh_derive(&mech_a, &ka, None).unwrap(),
                ecdh_derive(&mech_b, &kb, None).unwrap()
            );
        }
    }

    #[test]
    fn pkcs8_round_trip() {
        let mut t = Attributes::new();
        t.set_bytes(CKA_EC_PARAMS, OID_P384);
        let g = generate(&t).unwrap();
        let der = to_pkcs8(OID_P384, g.private.bytes(CKA_VALUE).unwrap()).unwrap();
        let mut back = Attributes::new();
        from_pkcs8(&der, &mut back).unwrap();
        assert_eq!(back.bytes(CKA_VALUE), g.private.bytes(CKA_VALUE));
        assert_eq!(back.bytes(CKA_EC_PARAMS), Some(OID_P384));
        assert_eq!(
            from_pkcs8(b"junk", &mut back).unwrap_err().rv(),
            CKR_WRAPPED_KEY_INVALID
        );
    }

    #[test]
    fn points_raw_or_der() {
        let mut t = Attributes::new();
        t.set_bytes(CKA_EC_PARAMS, OID_P256);
        let g = generate(&t).unwrap();
        let der = g.public.bytes(CKA_EC_POINT).unwrap();
        assert_eq!(der.len(), 67);
        let raw = parse_point(Curve::P256, der).unwrap();
        assert_eq!(raw.len(), 65);
        assert_eq!(parse_point(Curve::P256, raw).unwrap(), raw);
        assert!(parse_point(Curve::P384, raw).is_err());
    }
}
