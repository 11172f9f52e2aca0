//! PKCS #8 (RFC 5958) form of a Diffie-Hellman private key, for
//! `C_WrapKey` and `C_UnwrapKey`: the algorithm `dhKeyAgreement`
//! (1.2.840.113549.1.3.1) with PKCS #3 §9's `DHParameter ::= SEQUENCE {
//! prime INTEGER, base INTEGER, privateValueLength INTEGER OPTIONAL }`, and
//! the private value x as an INTEGER inside the `privateKey` OCTET STRING.
//! This is the form OpenSSL reads and writes for its "DH" keys, and the one
//! SoftHSM2 wraps DH keys in. Unwrapped values are then checked as an
//! import (the group and 1 ≤ x < q), like every unwrapped key.

use crate::attributes::Attributes;
use crate::error::{Result, err};
use cryptoki_sys::*;
use pkcs8::der::asn1::{AnyRef, ObjectIdentifier, OctetStringRef, UintRef};
use pkcs8::der::{Decode, Encode};
use pkcs8::{AlgorithmIdentifierRef, PrivateKeyInfoRef};
use zeroize::Zeroizing;

/// `dhKeyAgreement` (PKCS #3 §9).
const DH_KEY_AGREEMENT: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.3.1");

/// PKCS #8 DER of the private key (p, g, x as stored: big-endian, minimal).
/// `privateValueLength` is left out: it is optional, and x's length is
/// `CKA_VALUE_BITS`, not a property of the group.
pub fn to_pkcs8(p: &[u8], g: &[u8], x: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    let bad = |_| err(CKR_KEY_NOT_WRAPPABLE);
    let params = vec![UintRef::new(p).map_err(bad)?, UintRef::new(g).map_err(bad)?]
        .to_der()
        .map_err(bad)?;
    let x = Zeroizing::new(UintRef::new(x).map_err(bad)?.to_der().map_err(bad)?);
    let info = PrivateKeyInfoRef::new(
        AlgorithmIdentifierRef {
            oid: DH_KEY_AGREEMENT,
            parameters: Some(AnyRef::from_der(&params).map_err(bad)?),
        },
        OctetStringRef::new(&x).map_err(bad)?,
    );
    Ok(Zeroizing::new(info.to_der().map_err(bad)?))
}

/// Sets `CKA_PRIME`, `CKA_BASE` and `CKA_VALUE` from PKCS #8 DER;
/// `CKR_WRAPPED_KEY_INVALID` if it is not a PKCS #3 DH private key.
/// (`privateValueLength`, when present, is read and not used: the import
/// checks that follow compute `CKA_VALUE_BITS` from x.)
pub fn from_pkcs8(der: &[u8], attrs: &mut Attributes) -> Result<()> {
    let bad = |_| err(CKR_WRAPPED_KEY_INVALID);
    let info = PrivateKeyInfoRef::from_der(der).map_err(bad)?;
    if info.algorithm.oid != DH_KEY_AGREEMENT {
        return Err(err(CKR_WRAPPED_KEY_INVALID));
    }
    let params = info
        .algorithm
        .parameters
        .ok_or(err(CKR_WRAPPED_KEY_INVALID))?
        .to_der()
        .map_err(bad)?;
    let params: Vec<UintRef<'_>> = Vec::from_der(&params).map_err(bad)?;
    let [p, g, ..] = params.as_slice() else {
        return Err(err(CKR_WRAPPED_KEY_INVALID));
    };
    if params.len() > 3 {
        return Err(err(CKR_WRAPPED_KEY_INVALID));
    }
    let x = UintRef::from_der(info.private_key.as_bytes()).map_err(bad)?;
    attrs.set_bytes(CKA_PRIME, p.as_bytes());
    attrs.set_bytes(CKA_BASE, g.as_bytes());
    attrs.set_bytes(CKA_VALUE, x.as_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_other_algorithms() {
        let (p, g, x) = ([0xc5u8; 32], [2u8], [0x01u8, 0x02, 0x03]);
        let der = to_pkcs8(&p, &g, &x).unwrap();
        let mut attrs = Attributes::new();
        from_pkcs8(&der, &mut attrs).unwrap();
        assert_eq!(attrs.bytes(CKA_PRIME), Some(&p[..]));
        assert_eq!(attrs.bytes(CKA_BASE), Some(&g[..]));
        assert_eq!(attrs.bytes(CKA_VALUE), Some(&x[..]));
        // id-ecPublicKey in place of dhKeyAgreement.
        let ec = der
            .windows(9)
            .position(|w| w == [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x03, 0x01])
            .unwrap();
        let mut other = der.to_vec();
        other[ec + 7] = 0x02;
        assert_eq!(
            from_pkcs8(&other, &mut Attributes::new()).unwrap_err().rv(),
            CKR_WRAPPED_KEY_INVALID
        );
        for cut in 0..der.len() {
            assert!(from_pkcs8(&der[..cut], &mut Attributes::new()).is_err());
        }
    }
}
