//! The MAC mechanisms that compute a derivation's output under its base
//! key: the KDFs whose PRF is an HMAC or CMAC keyed by the base, over data
//! the caller chose (HKDF-Expand, RFC 5869 §2.3; the SP 800-108 KDFs,
//! mechanisms spec 3.0 §2.42; the TLS 1.2 PRF, RFC 5246 §5; the IKE PRFs
//! with the base as the PRF key, RFC 7296 §2.13–2.14). `C_Sign` with that
//! MAC under the base gives the first PRF block, and from it every other
//! block, so a base that may also sign with it tells its caller the derived
//! value (docs/SECURITY.md, "Derived keys"). Which of these signatures the
//! base may make is the caller's (`api`) business: this module only names
//! the mechanisms.

use super::{hkdf, ike, sp800_108, tls};
use crate::mechanisms::{Mechanism, Param};
use cryptoki_sys::*;

/// The HMAC mechanism of a hash mechanism, its `_GENERAL` twin and its
/// output length.
const HMACS: [(
    CK_MECHANISM_TYPE,
    CK_MECHANISM_TYPE,
    CK_MECHANISM_TYPE,
    CK_ULONG,
); 11] = [
    (CKM_SHA_1, CKM_SHA_1_HMAC, CKM_SHA_1_HMAC_GENERAL, 20),
    (CKM_SHA224, CKM_SHA224_HMAC, CKM_SHA224_HMAC_GENERAL, 28),
    (CKM_SHA256, CKM_SHA256_HMAC, CKM_SHA256_HMAC_GENERAL, 32),
    (CKM_SHA384, CKM_SHA384_HMAC, CKM_SHA384_HMAC_GENERAL, 48),
    (CKM_SHA512, CKM_SHA512_HMAC, CKM_SHA512_HMAC_GENERAL, 64),
    (
        CKM_SHA512_224,
        CKM_SHA512_224_HMAC,
        CKM_SHA512_224_HMAC_GENERAL,
        28,
    ),
    (
        CKM_SHA512_256,
        CKM_SHA512_256_HMAC,
        CKM_SHA512_256_HMAC_GENERAL,
        32,
    ),
    (
        CKM_SHA3_224,
        CKM_SHA3_224_HMAC,
        CKM_SHA3_224_HMAC_GENERAL,
        28,
    ),
    (
        CKM_SHA3_256,
        CKM_SHA3_256_HMAC,
        CKM_SHA3_256_HMAC_GENERAL,
        32,
    ),
    (
        CKM_SHA3_384,
        CKM_SHA3_384_HMAC,
        CKM_SHA3_384_HMAC_GENERAL,
        48,
    ),
    (
        CKM_SHA3_512,
        CKM_SHA3_512_HMAC,
        CKM_SHA3_512_HMAC_GENERAL,
        64,
    ),
];

/// The signing mechanisms that compute `mac` (an HMAC or `CKM_AES_CMAC`
/// mechanism as a KDF names its PRF): itself and its `_GENERAL` twin at
/// full length (a shorter `_GENERAL` output is a prefix of the same value).
fn computing(mac: CK_MECHANISM_TYPE) -> Vec<Mechanism<'static>> {
    let twin = HMACS
        .iter()
        .find(|&&(_, m, _, _)| m == mac)
        .map(|&(_, _, general, len)| (general, len))
        .or((mac == CKM_AES_CMAC).then_some((CKM_AES_CMAC_GENERAL, 16)));
    match twin {
        Some((general, len)) => vec![
            Mechanism::plain(mac),
            Mechanism {
                ty: general,
                param: Param::MacLength(len),
            },
        ],
        None => Vec::new(),
    }
}

/// The HMAC mechanism of the hash mechanism `hash` (a TLS or HKDF
/// `prfHashMechanism`), if there is one.
fn hmac_of(hash: CK_MECHANISM_TYPE) -> Option<CK_MECHANISM_TYPE> {
    HMACS
        .iter()
        .find(|&&(h, _, _, _)| h == hash)
        .map(|&(_, mac, _, _)| mac)
}

/// The signing mechanisms (with their parameters) whose output under the
/// base key of the derivation `mech` is the derivation's first PRF block
/// over data the caller knows; empty when the base is not the PRF's key
/// (HKDF with the extract step, IKE's `bDataAsKey`, the TLS 1.0/1.1 PRF
/// whose halves key two HMACs) or the derivation is not PRF-based. Where
/// the PRF also reads a second key (`hKeygxy`, `hNewKey`, …), the caller
/// learns the output only if it knows that key too; that is the caller's
/// to weigh ([`ike::Params::second_keys`]).
pub fn signatures_giving_output(mech: &Mechanism<'_>) -> Vec<Mechanism<'static>> {
    let mac = match (mech.ty, &mech.param) {
        (
            CKM_HKDF_DERIVE,
            Param::Hkdf(hkdf::Params {
                extract: false,
                expand: true,
                prf,
                ..
            }),
        ) => hmac_of(*prf),
        (_, Param::Sp800108(sp800_108::Params { prf, .. })) => Some(*prf),
        (
            _,
            Param::Ike(ike::Params::Prf {
                data_as_key: true, ..
            }),
        ) => None,
        (_, Param::Ike(p)) => Some(p.prf()),
        (_, Param::TlsMaster(tls::MasterParams { prf, .. }))
        | (_, Param::TlsKeyMat(tls::KeyMatParams { prf, .. }))
        | (_, Param::TlsKdf(tls::KdfParams { prf, .. })) => hmac_of(*prf),
        _ => None,
    };
    mac.map(computing).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(m: &Mechanism<'_>) -> Vec<CK_MECHANISM_TYPE> {
        signatures_giving_output(m).iter().map(|m| m.ty).collect()
    }

    fn hkdf(extract: bool, expand: bool) -> Mechanism<'static> {
        Mechanism {
            ty: CKM_HKDF_DERIVE,
            param: Param::Hkdf(hkdf::Params {
                extract,
                expand,
                prf: CKM_SHA384,
                salt: hkdf::Salt::Null,
                info: b"",
            }),
        }
    }

    /// Only HKDF without the extract step keys its PRF with the base.
    #[test]
    fn hkdf_expand_only_is_computed_by_its_hmac() {
        assert_eq!(
            types(&hkdf(false, true)),
            [CKM_SHA384_HMAC, CKM_SHA384_HMAC_GENERAL]
        );
        assert!(types(&hkdf(true, true)).is_empty());
        assert!(types(&hkdf(true, false)).is_empty());
    }

    /// The `_GENERAL` twin asks for the full output length.
    #[test]
    fn the_general_twin_asks_for_the_full_length() {
        let all = signatures_giving_output(&hkdf(false, true));
        assert!(matches!(all[1].param, Param::MacLength(48)));
        let cmac = computing(CKM_AES_CMAC);
        assert_eq!(cmac[1].ty, CKM_AES_CMAC_GENERAL);
        assert!(matches!(cmac[1].param, Param::MacLength(16)));
    }

    /// IKE: the base keys the PRF unless the nonces are the key.
    #[test]
    fn ike_data_as_key_is_not_computed_by_a_signature() {
        let prf = |data_as_key| Mechanism {
            ty: CKM_IKE_PRF_DERIVE,
            param: Param::Ike(ike::Params::Prf {
                prf: CKM_SHA256_HMAC,
                data_as_key,
                rekey: false,
                ni: b"n",
                nr: b"r",
                new_key: 0,
            }),
        };
        assert!(types(&prf(true)).is_empty());
        assert_eq!(
            types(&prf(false)),
            [CKM_SHA256_HMAC, CKM_SHA256_HMAC_GENERAL]
        );
    }

    /// The TLS 1.0/1.1 PRF splits the key between two HMACs: no signature
    /// under the whole key computes it; the TLS 1.2 PRF is one HMAC.
    #[test]
    fn tls_prf_is_its_hash_hmac_but_not_the_legacy_prf() {
        let kdf = |prf| Mechanism {
            ty: CKM_TLS12_KDF,
            param: Param::TlsKdf(tls::KdfParams {
                prf,
                label: b"l",
                client: b"",
                server: b"",
                context: b"",
            }),
        };
        assert!(types(&kdf(CKM_TLS_PRF)).is_empty());
        assert_eq!(
            types(&kdf(CKM_SHA3_256)),
            [CKM_SHA3_256_HMAC, CKM_SHA3_256_HMAC_GENERAL]
        );
    }

    /// Derivations that are not a PRF under the base name no signature.
    #[test]
    fn other_derivations_name_none() {
        assert!(types(&Mechanism::plain(CKM_SHA256_KEY_DERIVATION)).is_empty());
        assert!(types(&Mechanism::plain(CKM_ECDH1_DERIVE)).is_empty());
    }
}
