//! X25519 (RFC 7748 §5, §6.1) with x25519-dalek: `CKK_EC_MONTGOMERY` keys,
//! `CKM_EC_MONTGOMERY_KEY_PAIR_GEN` and `CKM_ECDH1_DERIVE` on Montgomery
//! keys (PKCS#11 3.0 mechanisms spec §2.3, "Montgomery key pair
//! generation" and "Elliptic curve Diffie-Hellman key derivation").
//!
//! `CKA_EC_PARAMS` may be the OID 1.3.101.110 (RFC 8410 id-X25519) or the
//! printable string "curve25519" (the spec's form). `CKA_EC_POINT`
//! is the 32-byte u-coordinate, returned as a DER OCTET STRING (as the
//! Edwards keys do) and accepted raw or DER on import; `pPublicData` of
//! `CK_ECDH1_DERIVE_PARAMS` likewise. X448 keys (1.3.101.111, "curve448")
//! share the key type: the functions here hand them to `x448.rs`, by
//! `CKA_EC_PARAMS` where a template has it, else by their lengths (56
//! bytes, 32 for X25519).

use super::kdf::x963::shared_secret;
use super::material::{GeneratedPair, KeyMaterial};
use super::params::{Mechanism, ecdh1_params};
#[cfg(not(feature = "aws-lc"))]
use super::random::os_fill as random_bytes;
use super::rfc8410::{self, parse_point};
use super::x448;
use crate::attributes::Attributes;
use crate::error::{Result, err};
use cryptoki_sys::*;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

/// DER of the OID 1.3.101.110 (RFC 8410 id-X25519).
pub const OID_X25519: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x6e];
/// DER PrintableString "curve25519".
pub const NAME_CURVE25519: &[u8] = b"\x13\x0acurve25519";
const UTF8_NAME_CURVE25519: &[u8] = b"\x0c\x0acurve25519";
/// What OpenSC 0.23's pkcs11-tool sends for `EC:curve25519`: the printable
/// string with a length octet of 11 for its 10 characters (an OpenSC bug,
/// fixed in 0.24). Accepted as this exact byte string only, so that
/// pkcs11-tool of Debian 12 can make X25519 keys.
const OPENSC_0_23_NAME_CURVE25519: &[u8] = b"\x13\x0bcurve25519";

const KEY_LEN: usize = 32;

/// True if `params` names Curve25519 for X25519.
pub fn is_x25519_params(params: &[u8]) -> bool {
    [
        OID_X25519,
        NAME_CURVE25519,
        UTF8_NAME_CURVE25519,
        OPENSC_0_23_NAME_CURVE25519,
    ]
    .contains(&params)
}

fn check_params(params: Option<&[u8]>) -> Result<&[u8]> {
    let params = params.ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    if is_x25519_params(params) {
        Ok(params)
    } else {
        Err(err(CKR_CURVE_NOT_SUPPORTED))
    }
}

/// The secret of a 32-byte `CKA_VALUE` (RFC 7748 §5: any 32 bytes; the
/// scalar is clamped when used).
fn secret(value: &[u8]) -> Option<StaticSecret> {
    let bytes: Zeroizing<[u8; KEY_LEN]> = Zeroizing::new(value.try_into().ok()?);
    Some(StaticSecret::from(*bytes))
}

/// Parses a private key (`CKA_VALUE`).
pub fn load_private(value: &[u8]) -> Result<KeyMaterial> {
    if value.len() == x448::KEY_LEN {
        return x448::load_private(value);
    }
    let secret = secret(value).ok_or(err(CKR_KEY_HANDLE_INVALID))?;
    #[cfg(feature = "aws-lc")]
    {
        use crate::mechanisms::awslc::{AgreementKey, EcdhCurve};
        Ok(KeyMaterial::X25519Private(
            secret,
            AgreementKey::new(EcdhCurve::X25519),
        ))
    }
    #[cfg(not(feature = "aws-lc"))]
    Ok(KeyMaterial::X25519Private(secret))
}

/// Parses a public key (`CKA_EC_POINT`).
pub fn load_public(point: &[u8]) -> Result<KeyMaterial> {
    if [x448::KEY_LEN, x448::KEY_LEN + 2].contains(&point.len()) {
        return x448::load_public(point);
    }
    let p = parse_point(point).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    Ok(KeyMaterial::X25519Public(PublicKey::from(p)))
}

/// SubjectPublicKeyInfo DER of an X25519 public key (RFC 8410 §4).
pub fn spki(point: &[u8; KEY_LEN]) -> Vec<u8> {
    rfc8410::spki(rfc8410::X25519, point)
}

/// PKCS#8 `PrivateKeyInfo` (RFC 8410 §7) of an X25519 or (56 bytes) X448
/// secret, for `C_WrapKey`.
pub fn pkcs8(secret: &[u8]) -> Zeroizing<Vec<u8>> {
    if secret.len() == x448::KEY_LEN {
        return x448::pkcs8(secret);
    }
    rfc8410::pkcs8(rfc8410::X25519, secret)
}

/// Parses what [`pkcs8`] produces (`CKR_WRAPPED_KEY_INVALID` otherwise) and
/// sets `CKA_VALUE` and `CKA_EC_PARAMS` (if the template had none).
pub fn from_pkcs8(der: &[u8], attrs: &mut Attributes) -> Result<()> {
    rfc8410::from_pkcs8(rfc8410::X25519, OID_X25519, der, attrs)
        .or_else(|_| x448::from_pkcs8(der, attrs))
}

/// Checks an imported X25519 key, normalises `CKA_EC_POINT` to DER and,
/// for private keys, adds the public point and `CKA_PUBLIC_KEY_INFO`.
pub fn complete_import(class: CK_OBJECT_CLASS, attrs: &mut Attributes) -> Result<()> {
    if attrs.bytes(CKA_EC_PARAMS).is_some_and(x448::is_x448_params) {
        return x448::complete_import(class, attrs);
    }
    check_params(attrs.bytes(CKA_EC_PARAMS))?;
    let point = if class == CKO_PRIVATE_KEY {
        let value = attrs.bytes(CKA_VALUE).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
        let secret = secret(value).ok_or(err(CKR_ATTRIBUTE_VALUE_INVALID))?;
        PublicKey::from(&secret).to_bytes()
    } else {
        parse_point(
            attrs
                .bytes(CKA_EC_POINT)
                .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
        )?
    };
    rfc8410::set_public(rfc8410::X25519, &point, attrs);
    Ok(())
}

/// Generates a key pair for the `CKA_EC_PARAMS` of the public template.
pub fn generate(public_template: &Attributes) -> Result<GeneratedPair> {
    if let Some(params) = public_template
        .bytes(CKA_EC_PARAMS)
        .filter(|p| x448::is_x448_params(p))
    {
        return x448::generate(params);
    }
    let params = check_params(public_template.bytes(CKA_EC_PARAMS))?;
    let (value, point) = new_key()?;
    Ok(rfc8410::generated_pair(
        rfc8410::X25519,
        CKK_EC_MONTGOMERY,
        params,
        &value,
        &point,
    ))
}

/// A new private key and its public u-coordinate: in the default build from
/// aws-lc (its DRBG and fixed-base table), else 32 bytes of getrandom(2)
/// through x25519-dalek.
fn new_key() -> Result<(Zeroizing<Vec<u8>>, [u8; KEY_LEN])> {
    #[cfg(feature = "aws-lc")]
    {
        use crate::mechanisms::awslc::{EcdhCurve, generate};
        let (value, point) = generate(EcdhCurve::X25519)?;
        let point = point.try_into().map_err(|_| err(CKR_FUNCTION_FAILED))?;
        Ok((value, point))
    }
    #[cfg(not(feature = "aws-lc"))]
    crate::hygiene::wiping_deep(|| {
        let mut value = Zeroizing::new([0u8; KEY_LEN]);
        random_bytes(value.as_mut())?;
        let point = PublicKey::from(&StaticSecret::from(*value)).to_bytes();
        Ok((Zeroizing::new(value.to_vec()), point))
    })
}

/// `CKM_ECDH1_DERIVE` with an X25519 private key: `Z` = X25519(k, u)
/// (RFC 7748 §6.1), used as is (`CKD_NULL`, leftmost `len` bytes) or
/// through an X9.63 KDF (`CKD_SHA*_KDF`), as for the Weierstrass curves.
///
/// An all-zero `Z` — the peer's `u` is a point of small order — is refused
/// as RFC 7748 §6.1 asks ("check ... whether K is the all-zero value and
/// abort if so"). PKCS#11 names no code for it; the peer's point is
/// what is wrong, so it is `CKR_MECHANISM_PARAM_INVALID`, the code an
/// invalid `pPublicData` gets on the other curves.
pub fn derive(
    mech: &Mechanism<'_>,
    base: &KeyMaterial,
    len: Option<usize>,
) -> Result<Zeroizing<Vec<u8>>> {
    if let KeyMaterial::X448Private(_) = base {
        return x448::derive(mech, base, len);
    }
    let (kdf, shared, public) = ecdh1_params(mech)?;
    let peer = parse_point(public).map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
    let z = shared_u(base, &peer)?;
    shared_secret(kdf, &z, shared, len)
}

/// X25519(k, u) of the key `base` and the peer's `u`, refused when all zero
/// (`CKR_MECHANISM_PARAM_INVALID`): in the default build through aws-lc
/// (its key parsed on the first derive and kept with the key material),
/// else through x25519-dalek.
fn shared_u(base: &KeyMaterial, peer: &[u8; KEY_LEN]) -> Result<Zeroizing<Vec<u8>>> {
    #[cfg(feature = "aws-lc")]
    if let KeyMaterial::X25519Private(secret, aws) = base {
        return aws.agree(|| Zeroizing::new(secret.as_bytes().to_vec()), peer);
    }
    let KeyMaterial::X25519Private(secret, ..) = base else {
        return Err(err(CKR_KEY_TYPE_INCONSISTENT));
    };
    shared_u_dalek(secret, peer)
}

/// [`shared_u`] through x25519-dalek.
fn shared_u_dalek(secret: &StaticSecret, peer: &[u8; KEY_LEN]) -> Result<Zeroizing<Vec<u8>>> {
    let z = secret.diffie_hellman(&PublicKey::from(*peer));
    if !z.was_contributory() {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    Ok(Zeroizing::new(z.as_bytes().to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::params::Param;
    use crate::mechanisms::rfc8410::der_point;

    fn unhex(s: &str) -> Vec<u8> {
        crate::mechanisms::test_util::unhex(s)
    }

    fn ecdh(public: &[u8], kdf: CK_EC_KDF_TYPE) -> Mechanism<'_> {
        Mechanism {
            ty: CKM_ECDH1_DERIVE,
            param: Param::Ecdh1 {
                kdf,
                shared: &[],
                public,
            },
        }
    }

    /// RFC 7748 §6.1: Alice's and Bob's keys and their shared secret.
    #[test]
    fn rfc7748_section_6_1() {
        let a = unhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
        let a_pub = unhex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
        let b = unhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
        let b_pub = unhex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
        let k = unhex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
        let mut attrs = Attributes::new();
        attrs.set_bytes(CKA_EC_PARAMS, NAME_CURVE25519);
        attrs.set_bytes(CKA_VALUE, &a);
        complete_import(CKO_PRIVATE_KEY, &mut attrs).unwrap();
        assert_eq!(attrs.bytes(CKA_EC_POINT).unwrap()[2..], a_pub[..]);
        let ka = load_private(&a).unwrap();
        let kb = load_private(&b).unwrap();
        assert_eq!(*derive(&ecdh(&b_pub, CKD_NULL), &ka, None).unwrap(), k);
        let der_a = der_point(&a_pub.clone().try_into().unwrap());
        assert_eq!(*derive(&ecdh(&der_a, CKD_NULL), &kb, None).unwrap(), k);
        assert_eq!(
            *derive(&ecdh(&b_pub, CKD_NULL), &ka, Some(16)).unwrap(),
            k[..16]
        );
        assert_eq!(
            derive(&ecdh(&b_pub, CKD_NULL), &ka, Some(33))
                .unwrap_err()
                .rv(),
            CKR_TEMPLATE_INCONSISTENT
        );
        // The KDF path hashes Z (X9.63 with SHA-256: SHA-256(Z || 00000001)).
        let kdf = derive(&ecdh(&b_pub, CKD_SHA256_KDF), &ka, Some(32)).unwrap();
        let mut h = super::super::digest::DigestOp::new(CKM_SHA256).unwrap();
        use super::super::DigestOperation;
        h.update(&k);
        h.update(&[0, 0, 0, 1]);
        let mut want = [0u8; 32];
        h.finish(&mut want);
        assert_eq!(*kdf, want);
    }

    /// The default build's aws-lc path gives x25519-dalek's value for
    /// random keys and peers (the u-coordinate's top bit, which RFC 7748 §5
    /// masks, set or clear), on a key's first derive and the next one.
    #[test]
    fn every_path_agrees_on_the_shared_secret() {
        for i in 0..16 {
            let (mut k, mut u) = ([0u8; KEY_LEN], [0u8; KEY_LEN]);
            crate::mechanisms::random::os_fill(&mut k).unwrap();
            crate::mechanisms::random::os_fill(&mut u).unwrap();
            if i % 2 == 1 {
                u[31] |= 0x80;
            }
            let material = load_private(&k).unwrap();
            let want = shared_u_dalek(&secret(&k).unwrap(), &u).unwrap();
            for _ in 0..2 {
                assert_eq!(*shared_u(&material, &u).unwrap(), *want);
            }
        }
    }

    /// A new key's public value is X25519(k, 9) (computed by x25519-dalek
    /// here, by aws-lc in the default build's key generation).
    #[test]
    fn new_keys_are_consistent_pairs() {
        let (value, point) = new_key().unwrap();
        let k = secret(&value).unwrap();
        assert_eq!(PublicKey::from(&k).to_bytes(), point);
        assert_ne!(new_key().unwrap().1, point);
    }

    #[test]
    fn small_order_peer_is_refused() {
        let ka = load_private(&[7; 32]).unwrap();
        // u = 0 and u = 1 are of small order: X25519 gives all zeros.
        let mut one = [0u8; 32];
        one[0] = 1;
        for u in [[0u8; 32], one] {
            assert_eq!(
                derive(&ecdh(&u, CKD_NULL), &ka, None).unwrap_err().rv(),
                CKR_MECHANISM_PARAM_INVALID
            );
        }
        assert_eq!(
            derive(&ecdh(&[9; 31], CKD_NULL), &ka, None)
                .unwrap_err()
                .rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
    }

    #[test]
    fn generated_pairs_agree_and_x448_is_dispatched() {
        let mut t = Attributes::new();
        t.set_bytes(CKA_EC_PARAMS, OID_X25519);
        let g1 = generate(&t).unwrap();
        let g2 = generate(&t).unwrap();
        assert_eq!(g1.key_type, CKK_EC_MONTGOMERY);
        let k1 = load_private(g1.private.bytes(CKA_VALUE).unwrap()).unwrap();
        let k2 = load_private(g2.private.bytes(CKA_VALUE).unwrap()).unwrap();
        let p1 = g1.public.bytes(CKA_EC_POINT).unwrap();
        let p2 = g2.public.bytes(CKA_EC_POINT).unwrap();
        let z12 = derive(&ecdh(p2, CKD_NULL), &k1, None).unwrap();
        let z21 = derive(&ecdh(p1, CKD_NULL), &k2, None).unwrap();
        assert_eq!(z12, z21);
        assert_ne!(*z12, [0u8; 32]);
        assert!(is_x25519_params(b"\x13\x0bcurve25519"), "OpenSC 0.23");
        assert!(!is_x25519_params(b"\x13\x0bcurve25519x"));
        for x448 in [&[0x06, 0x03, 0x2b, 0x65, 0x6f][..], b"\x13\x08curve448"] {
            let mut t = Attributes::new();
            t.set_bytes(CKA_EC_PARAMS, x448);
            let g = generate(&t).unwrap();
            assert_eq!(g.private.bytes(CKA_VALUE).unwrap().len(), 56);
            let k = load_private(g.private.bytes(CKA_VALUE).unwrap()).unwrap();
            assert!(matches!(k, KeyMaterial::X448Private(_)));
        }
        let mut t = Attributes::new();
        t.set_bytes(CKA_EC_PARAMS, b"\x13\x08curve449");
        assert_eq!(generate(&t).err().unwrap().rv(), CKR_CURVE_NOT_SUPPORTED);
        let mut attrs = Attributes::new();
        assert!(from_pkcs8(&pkcs8(&[5; 32]), &mut attrs).is_ok());
        assert_eq!(attrs.bytes(CKA_EC_PARAMS), Some(OID_X25519));
        assert_eq!(
            from_pkcs8(&crate::mechanisms::eddsa::pkcs8(&[5; 32]), &mut attrs)
                .unwrap_err()
                .rv(),
            CKR_WRAPPED_KEY_INVALID
        );
    }
}
