//! X448 (RFC 7748 §5, §6.2) with the x448 crate (on ed448-goldilocks):
//! `CKK_EC_MONTGOMERY` keys on curve448, `CKM_EC_MONTGOMERY_KEY_PAIR_GEN`
//! and `CKM_ECDH1_DERIVE`, as `x25519.rs` does for Curve25519 (which
//! dispatches here).
//!
//! `CKA_EC_PARAMS` may be the OID 1.3.101.111 (RFC 8410 id-X448) or the
//! printable string "curve448" (the spec's form). `CKA_VALUE` is the
//! 56-byte scalar, `CKA_EC_POINT` the 56-byte u-coordinate, returned as a
//! DER OCTET STRING and accepted raw or DER on import; `pPublicData` of
//! `CK_ECDH1_DERIVE_PARAMS` likewise.

use super::kdf::x963::shared_secret;
use super::material::{GeneratedPair, KeyMaterial};
use super::params::{Mechanism, ecdh1_params};
use super::random::os_fill as random_bytes;
use super::rfc8410::{self, parse_point_n};
use crate::attributes::Attributes;
use crate::error::{Result, err};
use cryptoki_sys::*;
use x448::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

/// DER of the OID 1.3.101.111 (RFC 8410 id-X448).
pub const OID_X448: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x6f];
/// DER PrintableString "curve448".
pub const NAME_CURVE448: &[u8] = b"\x13\x08curve448";
const UTF8_NAME_CURVE448: &[u8] = b"\x0c\x08curve448";

/// Length of an X448 scalar and of a u-coordinate.
pub const KEY_LEN: usize = 56;

/// True if `params` names Curve448 for X448.
pub fn is_x448_params(params: &[u8]) -> bool {
    [OID_X448, NAME_CURVE448, UTF8_NAME_CURVE448].contains(&params)
}

/// The secret of a 56-byte `CKA_VALUE` (RFC 7748 §5: any 56 bytes; the
/// crate keeps the clamped scalar and wipes it on drop).
fn secret(value: &[u8]) -> Option<StaticSecret> {
    let bytes: Zeroizing<[u8; KEY_LEN]> = Zeroizing::new(value.try_into().ok()?);
    Some(StaticSecret::from(*bytes))
}

/// X448(k, 5), the public u-coordinate of a secret.
fn public_of(secret: &StaticSecret) -> [u8; KEY_LEN] {
    *PublicKey::from(secret).as_bytes()
}

/// Parses a private key (`CKA_VALUE`).
pub fn load_private(value: &[u8]) -> Result<KeyMaterial> {
    let secret = secret(value).ok_or(err(CKR_KEY_HANDLE_INVALID))?;
    Ok(KeyMaterial::X448Private(Box::new(secret)))
}

/// Parses a public key (`CKA_EC_POINT`).
pub fn load_public(point: &[u8]) -> Result<KeyMaterial> {
    let p = parse_point_n(point).map_err(|_| err(CKR_KEY_HANDLE_INVALID))?;
    Ok(KeyMaterial::X448Public(p))
}

/// SubjectPublicKeyInfo DER of an X448 public key (RFC 8410 §4).
pub fn spki(point: &[u8; KEY_LEN]) -> Vec<u8> {
    rfc8410::spki(rfc8410::X448, point)
}

/// PKCS#8 `PrivateKeyInfo` (RFC 8410 §7) of an X448 secret, for `C_WrapKey`.
pub fn pkcs8(secret: &[u8]) -> Zeroizing<Vec<u8>> {
    rfc8410::pkcs8(rfc8410::X448, secret)
}

/// Parses what [`pkcs8`] produces (`CKR_WRAPPED_KEY_INVALID` otherwise) and
/// sets `CKA_VALUE` and `CKA_EC_PARAMS` (if the template had none).
pub fn from_pkcs8(der: &[u8], attrs: &mut Attributes) -> Result<()> {
    rfc8410::from_pkcs8(rfc8410::X448, OID_X448, der, attrs)
}

/// Checks an imported X448 key (its `CKA_EC_PARAMS` already known to name
/// curve448), normalises `CKA_EC_POINT` to DER and, for private keys,
/// adds the public point and `CKA_PUBLIC_KEY_INFO`.
pub fn complete_import(class: CK_OBJECT_CLASS, attrs: &mut Attributes) -> Result<()> {
    let point: [u8; KEY_LEN] = if class == CKO_PRIVATE_KEY {
        let value = attrs.bytes(CKA_VALUE).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
        public_of(&secret(value).ok_or(err(CKR_ATTRIBUTE_VALUE_INVALID))?)
    } else {
        parse_point_n(
            attrs
                .bytes(CKA_EC_POINT)
                .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
        )?
    };
    rfc8410::set_public(rfc8410::X448, &point, attrs);
    Ok(())
}

/// Generates an X448 key pair; `params` (the public template's
/// `CKA_EC_PARAMS`) name curve448.
pub fn generate(params: &[u8]) -> Result<GeneratedPair> {
    let mut value = Zeroizing::new([0u8; KEY_LEN]);
    random_bytes(value.as_mut())?;
    let point = public_of(&secret(value.as_ref()).ok_or(err(CKR_FUNCTION_FAILED))?);
    Ok(rfc8410::generated_pair(
        rfc8410::X448,
        CKK_EC_MONTGOMERY,
        params,
        value.as_ref(),
        &point,
    ))
}

/// `CKM_ECDH1_DERIVE` with an X448 private key: `Z` = X448(k, u) (RFC 7748
/// §6.2), used as is (`CKD_NULL`, leftmost `len` bytes) or through an X9.63
/// KDF, as for X25519. An all-zero `Z` (the peer's `u` is of small order,
/// or a non-canonical encoding of one) is `CKR_MECHANISM_PARAM_INVALID`,
/// as RFC 7748 §6.2 asks and as X25519 does.
pub fn derive(
    mech: &Mechanism<'_>,
    base: &KeyMaterial,
    len: Option<usize>,
) -> Result<Zeroizing<Vec<u8>>> {
    let KeyMaterial::X448Private(secret) = base else {
        return Err(err(CKR_KEY_TYPE_INCONSISTENT));
    };
    let (kdf, shared, public) = ecdh1_params(mech)?;
    let peer: [u8; KEY_LEN] =
        parse_point_n(public).map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
    let z = shared_u(secret, &peer)?;
    shared_secret(kdf, &z, shared, len)
}

/// X448(k, u), refused when all zero. The crate's own low-order check
/// compares encodings (it misses u ≥ p), so the check here is on the
/// result, as RFC 7748 §6.2 words it.
fn shared_u(secret: &StaticSecret, peer: &[u8; KEY_LEN]) -> Result<Zeroizing<Vec<u8>>> {
    let peer = PublicKey::from_bytes_unchecked(peer).ok_or(err(CKR_MECHANISM_PARAM_INVALID))?;
    let z = secret.diffie_hellman(&peer);
    let z = Zeroizing::new(z.as_bytes().to_vec());
    if z.iter().fold(0u8, |acc, b| acc | b) == 0 {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    Ok(z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::params::Param;

    fn unhex(s: &str) -> Vec<u8> {
        crate::mechanisms::test_util::unhex(s)
    }

    fn ecdh(public: &[u8]) -> Mechanism<'_> {
        Mechanism {
            ty: CKM_ECDH1_DERIVE,
            param: Param::Ecdh1 {
                kdf: CKD_NULL,
                shared: &[],
                public,
            },
        }
    }

    /// RFC 7748 §5.2: X448 iterated 1 and 1,000 times from k = u = 5.
    #[test]
    fn rfc7748_iterations() {
        let mut k = [0u8; KEY_LEN];
        k[0] = 5;
        let mut u = k;
        let want_1 = unhex(
            "3f482c8a9f19b01e6c46ee9711d9dc14fd4bf67af30765c2ae2b846a4d23a8cd0db897086239492caf350b51f833868b9bc2b3bca9cf4113",
        );
        let want_1000 = unhex(
            "aa3b4749d55b9daf1e5b00288826c467274ce3ebbdd5c17b975e09d4af6c67cf10d087202db88286e2b79fceea3ec353ef54faa26e219f38",
        );
        for i in 1..=1000 {
            let r: [u8; KEY_LEN] = shared_u(&secret(&k).unwrap(), &u)
                .unwrap()
                .as_slice()
                .try_into()
                .unwrap();
            u = k;
            k = r;
            if i == 1 {
                assert_eq!(k.to_vec(), want_1);
            }
        }
        assert_eq!(k.to_vec(), want_1000);
    }

    #[test]
    fn small_order_and_non_canonical_peers_are_refused() {
        let key = load_private(&[7; KEY_LEN]).unwrap();
        // p = 2^448 - 2^224 - 1 (little-endian), p - 1 and p + 1: u = 0,
        // -1 and 1 again once reduced (RFC 7748 §5 reduces u mod p).
        let mut p = [0xffu8; KEY_LEN];
        p[28] = 0xfe;
        let mut p_minus_1 = p;
        p_minus_1[0] = 0xfe;
        let mut p_plus_1 = [0xffu8; KEY_LEN];
        p_plus_1[..28].fill(0);
        let mut one = [0u8; KEY_LEN];
        one[0] = 1;
        for u in [[0u8; KEY_LEN], one, p_minus_1, p, p_plus_1] {
            assert_eq!(
                derive(&ecdh(&u), &key, None).unwrap_err().rv(),
                CKR_MECHANISM_PARAM_INVALID,
                "{u:02x?}"
            );
        }
        assert_eq!(
            derive(&ecdh(&[9; 55]), &key, None).unwrap_err().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
    }

    #[test]
    fn generated_pairs_agree_and_wrap() {
        let g1 = generate(OID_X448).unwrap();
        let g2 = generate(NAME_CURVE448).unwrap();
        assert_eq!(g1.key_type, CKK_EC_MONTGOMERY);
        let k1 = load_private(g1.private.bytes(CKA_VALUE).unwrap()).unwrap();
        let k2 = load_private(g2.private.bytes(CKA_VALUE).unwrap()).unwrap();
        let p1 = g1.public.bytes(CKA_EC_POINT).unwrap();
        let p2 = g2.public.bytes(CKA_EC_POINT).unwrap();
        assert_eq!(p1.len(), KEY_LEN + 2);
        assert_eq!(
            g1.public.bytes(CKA_PUBLIC_KEY_INFO).unwrap()[..12],
            [
                0x30, 0x42, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6f, 0x03, 0x39, 0x00
            ]
        );
        let z12 = derive(&ecdh(p2), &k1, None).unwrap();
        let z21 = derive(&ecdh(&p1[2..]), &k2, None).unwrap();
        assert_eq!(z12, z21);
        let mut attrs = Attributes::new();
        let der = pkcs8(&[5; KEY_LEN]);
        assert_eq!(der.len(), 72);
        from_pkcs8(&der, &mut attrs).unwrap();
        assert_eq!(attrs.bytes(CKA_EC_PARAMS), Some(OID_X448));
        assert_eq!(attrs.bytes(CKA_VALUE), Some(&[5; KEY_LEN][..]));
        assert!(from_pkcs8(&der[..71], &mut attrs).is_err());
    }
}
