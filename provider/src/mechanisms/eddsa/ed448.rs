//! Ed448 (RFC 8032 §5.2) with ed448-goldilocks: `CKK_EC_EDWARDS` keys on
//! edwards448, made by `CKM_EC_EDWARDS_KEY_PAIR_GEN` and used by
//! `CKM_EDDSA` as Ed448 (with its context, possibly empty) or Ed448ph
//! (`PH` = SHAKE256(M, 64)).
//!
//! `CKA_EC_PARAMS` may be the OID 1.3.101.113 (RFC 8410 id-Ed448) or the
//! printable string "edwards448" (the spec's form). `CKA_VALUE` is the
//! 57-byte RFC 8032 secret, `CKA_EC_POINT` the 57-byte encoded point,
//! returned as a DER OCTET STRING and accepted raw or DER on import.
//!
//! Verification adds to the crate's checks (`S` below L, `R` and `A`
//! decoding to points of the prime-order subgroup, neither the identity)
//! the RFC 8032 §5.2.3 decoding rules the crate leaves out: `A` and `R`
//! must be canonical encodings (y below p, the last octet's low seven bits
//! clear), checked by re-encoding the decoded point.

use crate::attributes::Attributes;
use crate::error::{Result, err};
use crate::mechanisms::material::{GeneratedPair, KeyMaterial};
use crate::mechanisms::random::os_fill as random_bytes;
use crate::mechanisms::rfc8410::{self, parse_point_n};
use cryptoki_sys::*;
use ed448_goldilocks::{
    CompressedEdwardsY, PreHash, SecretKey, Signature, SigningKey, VerifyingKey,
};
use sha3::Shake256;
use sha3::digest::{ExtendableOutput, XofReader};
use zeroize::Zeroizing;

/// Length of an Ed448 secret and of an encoded point.
pub const KEY_LEN: usize = 57;
/// Length of an Ed448 signature.
pub const SIG_LEN: usize = 114;
/// Length of `PH(M)` for Ed448ph (RFC 8032 §5.2: SHAKE256(M, 64)).
pub const PH_LEN: usize = 64;

/// DER of the OID 1.3.101.113 (RFC 8410 id-Ed448).
pub const OID_ED448: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x71];
/// DER PrintableString "edwards448".
pub const NAME_ED448: &[u8] = b"\x13\x0aedwards448";
const UTF8_NAME_ED448: &[u8] = b"\x0c\x0aedwards448";

/// True if `params` names Ed448.
pub fn is_ed448_params(params: &[u8]) -> bool {
    [OID_ED448, NAME_ED448, UTF8_NAME_ED448].contains(&params)
}

/// The signing key of a 57-byte secret (`None` for another length), read
/// in place (no copy of the secret); the crate's key zeroizes itself.
fn signing_key(value: &[u8]) -> Option<SigningKey> {
    let secret: &SecretKey = value.try_into().ok()?;
    Some(SigningKey::from(secret))
}

/// The public key of a 57-byte encoding, if it is a canonical encoding
/// (RFC 8032 §5.2.3) of a point of the prime-order subgroup other than
/// the identity.
fn verifying_key(point: &[u8; KEY_LEN]) -> Option<VerifyingKey> {
    let key = VerifyingKey::from_bytes(point).ok()?;
    let canonical: [u8; KEY_LEN] = key.to_edwards().to_affine().compress().to_bytes();
    (canonical == *point).then_some(key)
}

/// Parses a private key (`CKA_VALUE`, the 57-byte RFC 8032 secret).
pub fn load_private(value: &[u8]) -> Result<KeyMaterial> {
    let key = signing_key(value).ok_or(err(CKR_KEY_HANDLE_INVALID))?;
    Ok(KeyMaterial::Ed448Private(Box::new(key)))
}

/// Parses a public key (`CKA_EC_POINT`).
pub fn load_public(point: &[u8]) -> Result<KeyMaterial> {
    let p = parse_point_n(point).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    let key = verifying_key(&p).ok_or(err(CKR_KEY_HANDLE_INVALID))?;
    Ok(KeyMaterial::Ed448Public(Box::new(key)))
}

/// Checks an imported Ed448 key (its `CKA_EC_PARAMS` already known to
/// name Ed448), normalises `CKA_EC_POINT` to DER and, for private keys,
/// adds the public point and `CKA_PUBLIC_KEY_INFO`.
pub fn complete_import(class: CK_OBJECT_CLASS, attrs: &mut Attributes) -> Result<()> {
    let point: [u8; KEY_LEN] = if class == CKO_PRIVATE_KEY {
        let value = attrs.bytes(CKA_VALUE).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
        let key = signing_key(value).ok_or(err(CKR_ATTRIBUTE_VALUE_INVALID))?;
        key.verifying_key().to_bytes()
    } else {
        let p = parse_point_n(
            attrs
                .bytes(CKA_EC_POINT)
                .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
        )?;
        verifying_key(&p).ok_or(err(CKR_ATTRIBUTE_VALUE_INVALID))?;
        p
    };
    rfc8410::set_public(rfc8410::ED448, &point, attrs);
    Ok(())
}

/// SubjectPublicKeyInfo DER of an Ed448 public key (RFC 8410 §4).
pub fn spki(point: &[u8; KEY_LEN]) -> Vec<u8> {
    rfc8410::spki(rfc8410::ED448, point)
}

/// PKCS#8 `PrivateKeyInfo` (RFC 8410 §7) of an Ed448 secret, for `C_WrapKey`.
pub fn pkcs8(secret: &[u8]) -> Zeroizing<Vec<u8>> {
    rfc8410::pkcs8(rfc8410::ED448, secret)
}

/// Parses what [`pkcs8`] produces (`CKR_WRAPPED_KEY_INVALID` otherwise) and
/// sets `CKA_VALUE` and `CKA_EC_PARAMS` (if the template had none).
pub fn from_pkcs8(der: &[u8], attrs: &mut Attributes) -> Result<()> {
    rfc8410::from_pkcs8(rfc8410::ED448, OID_ED448, der, attrs)
}

/// Generates an Ed448 key pair; `params` (the public template's
/// `CKA_EC_PARAMS`) name Ed448.
pub fn generate(params: &[u8]) -> Result<GeneratedPair> {
    let mut secret = Zeroizing::new([0u8; KEY_LEN]);
    random_bytes(secret.as_mut())?;
    let key = signing_key(secret.as_ref()).ok_or(err(CKR_FUNCTION_FAILED))?;
    let point: [u8; KEY_LEN] = key.verifying_key().to_bytes();
    Ok(rfc8410::generated_pair(
        rfc8410::ED448,
        CKK_EC_EDWARDS,
        params,
        secret.as_ref(),
        &point,
    ))
}

/// `PH(M)` of Ed448ph (RFC 8032 §5.2): SHAKE256(M, 64) of an absorbing state.
pub fn prehash(h: Shake256) -> [u8; PH_LEN] {
    let mut out = [0u8; PH_LEN];
    h.finalize_xof().read(&mut out);
    out
}

/// A finished `PH(M)` handed to the crate's Ed448ph functions.
struct Digest([u8; PH_LEN]);

impl PreHash for Digest {
    fn fill_bytes(&mut self, out: &mut [u8]) {
        out.copy_from_slice(&self.0[..out.len()]);
    }
}

/// What an Ed448 operation signs: the message with its context (Ed448),
/// or `PH(M)` with its context (Ed448ph).
pub enum Input<'a> {
    Message(&'a [u8]),
    Prehashed([u8; PH_LEN]),
}

/// Signs with Ed448 or Ed448ph (RFC 8032 §5.2.6); `context` is 0–255 bytes
/// (checked by the caller).
pub fn sign(key: &SigningKey, context: &[u8], input: Input<'_>) -> Result<[u8; SIG_LEN]> {
    let sig = match input {
        Input::Message(m) => key.sign_ctx(context, m),
        Input::Prehashed(ph) => key.sign_prehashed(Some(context), Digest(ph)),
    }
    .map_err(|_| err(CKR_FUNCTION_FAILED))?;
    Ok(sig.to_bytes())
}

/// Verifies an Ed448 or Ed448ph signature (RFC 8032 §5.2.7) with the
/// encoding checks of the module docs.
pub fn verify(key: &VerifyingKey, context: &[u8], input: Input<'_>, sig: &[u8; SIG_LEN]) -> bool {
    let r: [u8; KEY_LEN] = sig[..KEY_LEN].try_into().expect("114 bytes");
    let canonical_r = CompressedEdwardsY(r)
        .decompress()
        .into_option()
        .is_some_and(|p| p.compress().to_bytes() == r);
    if !canonical_r {
        return false;
    }
    let sig = Signature::from_bytes(sig);
    match input {
        Input::Message(m) => key.verify_ctx(&sig, context, m),
        Input::Prehashed(ph) => key.verify_prehashed(&sig, Some(context), Digest(ph)),
    }
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha3::digest::Update;

    fn unhex(s: &str) -> Vec<u8> {
        crate::mechanisms::test_util::unhex(s)
    }

    /// RFC 8032 §7.4 "1 octet (with context)" and §7.5 "-----" (Ed448ph
    /// of "abc", empty context).
    #[test]
    fn rfc8032_context_and_prehash() {
        let sk = unhex(
            "c4eab05d357007c632f3dbb48489924d552b08fe0c353a0d4a1f00acda2c463afbea67c5e8d2877c5e3bc397a659949ef8021e954e0a12274e",
        );
        let pk: [u8; KEY_LEN] = unhex(
            "43ba28f430cdff456ae531545f7ecd0ac834a55d9358c0372bfa0c6c6798c0866aea01eb00742802b8438ea4cb82169c235160627b4c3a9480",
        )
        .try_into()
        .unwrap();
        let want = unhex(
            "d4f8f6131770dd46f40867d6fd5d5055de43541f8c5e35abbcd001b32a89f7d2151f7647f11d8ca2ae279fb842d607217fce6e042f6815ea000c85741de5c8da1144a6a1aba7f96de42505d7a7298524fda538fccbbb754f578c1cad10d54d0d5428407e85dcbc98a49155c13764e66c3c00",
        );
        let key = signing_key(&sk).unwrap();
        let vk = verifying_key(&pk).unwrap();
        let sig = sign(&key, b"foo", Input::Message(&[0x03])).unwrap();
        assert_eq!(sig.to_vec(), want);
        assert!(verify(&vk, b"foo", Input::Message(&[0x03]), &sig));
        assert!(!verify(&vk, b"", Input::Message(&[0x03]), &sig));
        assert!(!verify(&vk, b"fo", Input::Message(&[0x03]), &sig));

        let sk = unhex(
            "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42ef7822e0d5104127dc05d6dbefde69e3ab2cec7c867c6e2c49",
        );
        let want = unhex(
            "822f6901f7480f3d5f562c592994d9693602875614483256505600bbc281ae381f54d6bce2ea911574932f52a4e6cadd78769375ec3ffd1b801a0d9b3f4030cd433964b6457ea39476511214f97469b57dd32dbc560a9a94d00bff07620464a3ad203df7dc7ce360c3cd3696d9d9fab90f00",
        );
        let key = signing_key(&sk).unwrap();
        let mut h = Shake256::default();
        h.update(b"abc");
        let ph = prehash(h);
        let sig = sign(&key, b"", Input::Prehashed(ph)).unwrap();
        assert_eq!(sig.to_vec(), want);
        let vk = key.verifying_key();
        assert!(verify(&vk, b"", Input::Prehashed(ph), &sig));
        // Ed448ph's signature is not an Ed448 signature of the digest.
        assert!(!verify(&vk, b"", Input::Message(&ph), &sig));
    }

    /// Non-canonical encodings are refused: the last octet's low bits set,
    /// and y = p + y' for a small y' (y ≥ p).
    #[test]
    fn non_canonical_encodings_are_refused() {
        let key = signing_key(&[7; KEY_LEN]).unwrap();
        let pk: [u8; KEY_LEN] = key.verifying_key().to_bytes();
        assert!(verifying_key(&pk).is_some());
        let mut bad = pk;
        bad[56] |= 1;
        assert!(verifying_key(&bad).is_none());
        let sig = sign(&key, b"", Input::Message(b"m")).unwrap();
        let vk = verifying_key(&pk).unwrap();
        assert!(verify(&vk, b"", Input::Message(b"m"), &sig));
        let mut bad = sig;
        bad[56] |= 2;
        assert!(!verify(&vk, b"", Input::Message(b"m"), &bad));
        let mut bad = sig;
        bad[113] = 1;
        assert!(!verify(&vk, b"", Input::Message(b"m"), &bad));
    }
}
