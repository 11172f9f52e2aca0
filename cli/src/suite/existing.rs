//! A key that already exists on the token (`--key-label`): what it is and
//! which usage flags and mechanisms it allows.

use cryptoki_sys::*;

use super::alg::*;
use super::keys::*;
use super::keyset::KeyHandles;
use crate::token::ckr::{ckk_name, ckr_name};
use crate::token::raw::RawModule;

/// What `--key-label` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detected {
    /// Ed25519 pair (or half of it).
    Ed25519,
    /// EC key on a curve hsm-bench benchmarks.
    Ec(Curve),
    /// Triple-DES key.
    Des3,
    /// X25519 key pair (`CKK_EC_MONTGOMERY`).
    X25519,
    /// RSA key of n bits.
    Rsa(u32),
    /// AES key of n bytes (see [`secret_key`] for how it is made).
    Aes(u32),
    /// HMAC-capable secret key: a generic secret (any HMAC), or a key typed
    /// for one hash (`CKK_SHA256_HMAC`, …) that only that HMAC may use.
    Hmac(Option<CK_MECHANISM_TYPE>),
    /// ML-DSA key of a parameter set (PKCS#11 3.2, `CKA_PARAMETER_SET`).
    MlDsa(MlDsaSet),
    /// SLH-DSA key of a parameter set (PKCS#11 3.2, `CKA_PARAMETER_SET`).
    SlhDsa(SlhDsaSet),
    /// ML-KEM key of a parameter set (PKCS#11 3.2, `CKA_PARAMETER_SET`).
    MlKem(MlKemSet),
    /// A key the catalogue has no op for — a type it does not know (a
    /// vendor type, a parameter set it does not cover) or an EC curve
    /// it does not cover: measured by the generic op (`--mechanism`), which
    /// needs nothing but the key's handles. `why` says what it is.
    Other {
        /// `CKA_KEY_TYPE`.
        key_type: CK_KEY_TYPE,
        /// What the catalogue lacks for it, for messages.
        why: String,
    },
}

/// An existing key with its usage flags.
#[derive(Debug, Clone)]
pub struct ExistingKey {
    /// Key type.
    pub kind: Detected,
    /// Handles.
    pub handles: KeyHandles,
    /// CKA_SIGN of the private/secret key.
    pub can_sign: bool,
    /// CKA_VERIFY of the public/secret key.
    pub can_verify: bool,
    /// CKA_ENCRYPT.
    pub can_encrypt: bool,
    /// CKA_DECRYPT.
    pub can_decrypt: bool,
    /// CKA_DERIVE of the private key.
    pub can_derive: bool,
    /// CKA_ENCAPSULATE of the public key (PKCS#11 3.2).
    pub can_encapsulate: bool,
    /// CKA_DECAPSULATE of the private key (PKCS#11 3.2).
    pub can_decapsulate: bool,
    /// CKA_VALUE_LEN of the secret key in bytes, when the token gives it.
    pub value_len: Option<u32>,
    /// CKA_ALLOWED_MECHANISMS of the key objects (PKCS#11 3.0 §4.7), when any
    /// of them sets a non-empty list: only these mechanisms may be used.
    pub allowed: Option<Vec<CK_MECHANISM_TYPE>>,
}

impl ExistingKey {
    /// Whether the key may be used with `m` (CKA_ALLOWED_MECHANISMS).
    pub fn allows(&self, m: CK_MECHANISM_TYPE) -> bool {
        self.allowed.as_ref().is_none_or(|a| a.contains(&m))
    }
}

/// Reads one attribute of an object: its value, or the return value of
/// `C_GetAttributeValue`.
type Reader<'a> = dyn Fn(CK_OBJECT_HANDLE, CK_ATTRIBUTE_TYPE) -> Result<Vec<u8>, CK_RV> + 'a;

/// CKA_ALLOWED_MECHANISMS of `h`: `None` when the token does not give it or
/// gives an empty list (both mean "no restriction", PKCS#11 3.0 §4.7).
fn allowed_mechanisms(get: &Reader<'_>, h: CK_OBJECT_HANDLE) -> Option<Vec<CK_MECHANISM_TYPE>> {
    let v = get(h, CKA_ALLOWED_MECHANISMS).ok()?;
    let list: Vec<CK_MECHANISM_TYPE> = v
        .chunks_exact(std::mem::size_of::<CK_MECHANISM_TYPE>())
        .map(|c| {
            let mut b = [0u8; std::mem::size_of::<CK_MECHANISM_TYPE>()];
            b.copy_from_slice(c);
            CK_MECHANISM_TYPE::from_ne_bytes(b)
        })
        .collect();
    (!list.is_empty()).then_some(list)
}

/// A CK_ULONG attribute of `h`, if the token gives it.
pub fn attr_ulong(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    h: CK_OBJECT_HANDLE,
    t: CK_ATTRIBUTE_TYPE,
) -> Option<CK_ULONG> {
    read_ulong(&|h, t| raw.attribute(s, h, t), h, t, "").ok()
}

/// A CK_BBOOL attribute of `h` (false when the token does not give it).
pub fn attr_bool(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    h: CK_OBJECT_HANDLE,
    t: CK_ATTRIBUTE_TYPE,
) -> bool {
    read_bool(&|h, t| raw.attribute(s, h, t), h, t)
}

fn read_bool(get: &Reader<'_>, h: CK_OBJECT_HANDLE, t: CK_ATTRIBUTE_TYPE) -> bool {
    get(h, t).is_ok_and(|v| v.first() == Some(&CK_TRUE))
}

/// A CK_ULONG attribute (`name`, e.g. `CKA_VALUE_LEN`) of `h`, or why not:
/// `C_GetAttributeValue(CKA_VALUE_LEN) returned CKR_…`.
fn read_ulong(
    get: &Reader<'_>,
    h: CK_OBJECT_HANDLE,
    t: CK_ATTRIBUTE_TYPE,
    name: &str,
) -> Result<CK_ULONG, String> {
    match get(h, t) {
        Ok(v) => match <[u8; std::mem::size_of::<CK_ULONG>()]>::try_from(v.as_slice()) {
            Ok(b) => Ok(CK_ULONG::from_ne_bytes(b)),
            Err(_) => Err(format!(
                "C_GetAttributeValue({name}) gave {} bytes, not a CK_ULONG",
                v.len()
            )),
        },
        Err(rv) => Err(format!(
            "C_GetAttributeValue({name}) returned {}",
            ckr_name(rv)
        )),
    }
}

/// A size in the unit of `fallback`'s attribute (`name`), else the length of
/// the value of attribute `value` (`value_name`) times `per_byte`; or both
/// reasons why not.
fn size_of(
    get: &Reader<'_>,
    h: CK_OBJECT_HANDLE,
    (t, name): (CK_ATTRIBUTE_TYPE, &str),
    (value, value_name): (CK_ATTRIBUTE_TYPE, &str),
    per_byte: CK_ULONG,
) -> Result<CK_ULONG, String> {
    read_ulong(get, h, t, name).or_else(|first| {
        get(h, value)
            .map(|v| v.len() as CK_ULONG * per_byte)
            .map_err(|rv| {
                format!(
                    "{first}, C_GetAttributeValue({value_name}) returned {}",
                    ckr_name(rv)
                )
            })
    })
}

/// A post-quantum key (`name`, of type `kt`) by its `CKA_PARAMETER_SET`:
/// `known`'s kind, [`Detected::Other`] for a set the catalogue does not
/// cover, or why the set cannot be read.
fn parameter_set(
    get: &Reader<'_>,
    h: CK_OBJECT_HANDLE,
    name: &str,
    kt: CK_KEY_TYPE,
    known: impl Fn(CK_ULONG) -> Option<Detected>,
) -> Result<Detected, String> {
    match read_ulong(get, h, CKA_PARAMETER_SET, "CKA_PARAMETER_SET") {
        Ok(set) => Ok(known(set).unwrap_or_else(|| Detected::Other {
            key_type: kt,
            why: format!(
                "an {name} key of parameter set 0x{set:x}, which the catalogue does not cover"
            ),
        })),
        Err(e) => Err(format!("the {name} key's parameter set is unknown: {e}")),
    }
}

/// Detect the type and flags of the key objects `handles` (all with one label).
pub fn detect(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    handles: &[CK_OBJECT_HANDLE],
) -> Result<ExistingKey, String> {
    detect_with(&|h, t| raw.attribute(s, h, t), handles)
}

/// [`detect`] over an attribute reader. When no object is a key hsm-bench can
/// use, the error says of each object which call returned what (an AES key
/// without `CKA_VALUE_LEN` is not "no key object").
fn detect_with(get: &Reader<'_>, handles: &[CK_OBJECT_HANDLE]) -> Result<ExistingKey, String> {
    let mut kh = KeyHandles::default();
    let mut kind = None;
    let mut why_not = Vec::new();
    let (mut sign, mut verify, mut enc, mut dec) = (false, false, false, false);
    let mut derive = false;
    let (mut encapsulate, mut decapsulate) = (false, false);
    let mut allowed: Option<Vec<CK_MECHANISM_TYPE>> = None;
    let mut value_len = None;
    for &h in handles {
        let class = match read_ulong(get, h, CKA_CLASS, "CKA_CLASS") {
            Ok(c @ (CKO_PUBLIC_KEY | CKO_PRIVATE_KEY | CKO_SECRET_KEY)) => c,
            Ok(other) => {
                why_not.push(format!("object {h} is not a key (CKA_CLASS 0x{other:x})"));
                continue;
            }
            Err(e) => {
                why_not.push(format!("object {h}: {e}"));
                continue;
            }
        };
        let kt = match read_ulong(get, h, CKA_KEY_TYPE, "CKA_KEY_TYPE") {
            Ok(kt) => kt,
            Err(e) => {
                why_not.push(format!("object {h}: {e}"));
                continue;
            }
        };
        let mut secret_len = None;
        match class {
            CKO_PUBLIC_KEY => kh.public = Some(h),
            CKO_PRIVATE_KEY => kh.private = Some(h),
            _ => {
                kh.secret = Some(h);
                let len = size_of(
                    get,
                    h,
                    (CKA_VALUE_LEN, "CKA_VALUE_LEN"),
                    (CKA_VALUE, "CKA_VALUE"),
                    1,
                );
                value_len = len.as_ref().ok().map(|&n| n as u32);
                secret_len = Some(len);
            }
        }
        sign |= read_bool(get, h, CKA_SIGN);
        verify |= read_bool(get, h, CKA_VERIFY);
        enc |= read_bool(get, h, CKA_ENCRYPT);
        dec |= read_bool(get, h, CKA_DECRYPT);
        derive |= class == CKO_PRIVATE_KEY && read_bool(get, h, CKA_DERIVE);
        encapsulate |= class == CKO_PUBLIC_KEY && read_bool(get, h, CKA_ENCAPSULATE);
        decapsulate |= class == CKO_PRIVATE_KEY && read_bool(get, h, CKA_DECAPSULATE);
        if let Some(list) = allowed_mechanisms(get, h) {
            // Objects of one label that restrict differently: only what
            // every restricting object allows is certain to work.
            allowed = Some(match allowed {
                None => list,
                Some(prev) => prev.into_iter().filter(|m| list.contains(m)).collect(),
            });
        }
        let k = match kt {
            CKK_EC_EDWARDS => Ok(Detected::Ed25519),
            CKK_EC => match get(h, CKA_EC_PARAMS) {
                Ok(p) => match Curve::from_params(&p) {
                    Some(c) => Ok(Detected::Ec(c)),
                    None => Ok(Detected::Other {
                        key_type: CKK_EC,
                        why: format!(
                            "an EC key on a curve the catalogue does not cover ({}; it knows P-256, P-384, P-521 and secp256k1)",
                            curve_name(&p)
                        ),
                    }),
                },
                Err(rv) => Err(format!(
                    "the EC key's curve is unknown: C_GetAttributeValue(CKA_EC_PARAMS) returned {}",
                    ckr_name(rv)
                )),
            },
            CKK_RSA => size_of(
                get,
                h,
                (CKA_MODULUS_BITS, "CKA_MODULUS_BITS"),
                (CKA_MODULUS, "CKA_MODULUS"),
                8,
            )
            .map(|b| Detected::Rsa(b as u32))
            .map_err(|e| format!("the RSA key's size is unknown: {e}")),
            CKK_AES => match secret_len {
                Some(Ok(n)) => Ok(Detected::Aes(n as u32)),
                Some(Err(e)) => Err(format!("the AES key's length is unknown: {e}")),
                None => Err(format!(
                    "an AES key object of class 0x{class:x}, not CKO_SECRET_KEY"
                )),
            },
            CKK_DES3 => Ok(Detected::Des3),
            CKK_EC_MONTGOMERY => Ok(Detected::X25519),
            CKK_GENERIC_SECRET => Ok(Detected::Hmac(None)),
            CKK_SHA256_HMAC => Ok(Detected::Hmac(Some(CKM_SHA256_HMAC))),
            CKK_SHA512_HMAC => Ok(Detected::Hmac(Some(CKM_SHA512_HMAC))),
            CKK_ML_DSA => match read_ulong(get, h, CKA_PARAMETER_SET, "CKA_PARAMETER_SET") {
                Ok(set) => match MlDsaSet::of(set) {
                    Some(s) => Ok(Detected::MlDsa(s)),
                    None => Ok(Detected::Other {
                        key_type: CKK_ML_DSA,
                        why: format!(
                            "an ML-DSA key of parameter set 0x{set:x}, which the catalogue does not cover"
                        ),
                    }),
                },
                Err(e) => Err(format!("the ML-DSA key's parameter set is unknown: {e}")),
            },
            CKK_SLH_DSA => parameter_set(get, h, "SLH-DSA", CKK_SLH_DSA, |set| {
                SlhDsaSet::of(set).map(Detected::SlhDsa)
            }),
            CKK_ML_KEM => parameter_set(get, h, "ML-KEM", CKK_ML_KEM, |set| {
                MlKemSet::of(set).map(Detected::MlKem)
            }),
            other => Ok(Detected::Other {
                key_type: other,
                why: format!(
                    "a {} key, which the catalogue has no op for",
                    ckk_name(other)
                ),
            }),
        };
        match k {
            Ok(k) if kind.is_none() => kind = Some(k),
            Ok(_) => {}
            Err(e) => why_not.push(format!("object {h}: {e}")),
        }
    }
    let kind = match kind {
        Some(k) => k,
        None if why_not.is_empty() => return Err("no key object with that label".into()),
        None => return Err(why_not.join("; ")),
    };
    Ok(ExistingKey {
        kind,
        handles: kh,
        can_sign: sign,
        can_verify: verify,
        can_encrypt: enc,
        can_decrypt: dec,
        can_derive: derive,
        can_encapsulate: encapsulate,
        can_decapsulate: decapsulate,
        value_len,
        allowed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    type Attrs = HashMap<(CK_OBJECT_HANDLE, CK_ATTRIBUTE_TYPE), Result<Vec<u8>, CK_RV>>;

    fn ulong(v: CK_ULONG) -> Result<Vec<u8>, CK_RV> {
        Ok(v.to_ne_bytes().to_vec())
    }

    /// An AES key (handle 7) with the given CKA_VALUE_LEN and CKA_VALUE;
    /// every other attribute is CKR_ATTRIBUTE_TYPE_INVALID.
    fn detect_aes(
        value_len: Result<Vec<u8>, CK_RV>,
        value: Result<Vec<u8>, CK_RV>,
    ) -> Result<ExistingKey, String> {
        let attrs: Attrs = [
            ((7, CKA_CLASS), ulong(CKO_SECRET_KEY)),
            ((7, CKA_KEY_TYPE), ulong(CKK_AES)),
            ((7, CKA_ENCRYPT), Ok(vec![CK_TRUE])),
            ((7, CKA_VALUE_LEN), value_len),
            ((7, CKA_VALUE), value),
        ]
        .into_iter()
        .collect();
        detect_with(
            &|h, t| {
                attrs
                    .get(&(h, t))
                    .cloned()
                    .unwrap_or(Err(CKR_ATTRIBUTE_TYPE_INVALID))
            },
            &[7],
        )
    }

    #[test]
    fn an_aes_key_without_value_len_is_named_with_the_call_and_the_ckr() {
        let k = detect_aes(ulong(32), Err(CKR_ATTRIBUTE_SENSITIVE)).unwrap();
        assert_eq!(k.kind, Detected::Aes(32));
        assert!(k.can_encrypt && !k.can_decrypt);
        // CKA_VALUE_LEN unavailable: the value's length, when readable.
        let k = detect_aes(Err(CKR_ATTRIBUTE_TYPE_INVALID), Ok(vec![0; 16])).unwrap();
        assert_eq!((k.kind, k.value_len), (Detected::Aes(16), Some(16)));
        // Neither: not "no key object with that label".
        let e = detect_aes(
            Err(CKR_ATTRIBUTE_TYPE_INVALID),
            Err(CKR_ATTRIBUTE_SENSITIVE),
        )
        .unwrap_err();
        assert_eq!(
            e,
            "object 7: the AES key's length is unknown: \
             C_GetAttributeValue(CKA_VALUE_LEN) returned CKR_ATTRIBUTE_TYPE_INVALID, \
             C_GetAttributeValue(CKA_VALUE) returned CKR_ATTRIBUTE_SENSITIVE"
        );
        let e = detect_aes(Ok(vec![1, 2]), Err(CKR_ATTRIBUTE_SENSITIVE)).unwrap_err();
        assert!(
            e.contains("CKA_VALUE_LEN) gave 2 bytes, not a CK_ULONG"),
            "{e}"
        );
    }

    /// A key pair (public 3, private 4) of type `kt`, with `extra`
    /// attributes on both.
    fn detect_pair(
        kt: CK_KEY_TYPE,
        extra: &[(CK_ATTRIBUTE_TYPE, Result<Vec<u8>, CK_RV>)],
    ) -> Result<ExistingKey, String> {
        let mut attrs: Attrs = [
            ((3, CKA_CLASS), ulong(CKO_PUBLIC_KEY)),
            ((3, CKA_KEY_TYPE), ulong(kt)),
            ((3, CKA_VERIFY), Ok(vec![CK_TRUE])),
            ((4, CKA_CLASS), ulong(CKO_PRIVATE_KEY)),
            ((4, CKA_KEY_TYPE), ulong(kt)),
            ((4, CKA_SIGN), Ok(vec![CK_TRUE])),
        ]
        .into_iter()
        .collect();
        for (t, v) in extra {
            attrs.insert((3, *t), v.clone());
            attrs.insert((4, *t), v.clone());
        }
        detect_with(
            &|h, t| {
                attrs
                    .get(&(h, t))
                    .cloned()
                    .unwrap_or(Err(CKR_ATTRIBUTE_TYPE_INVALID))
            },
            &[3, 4],
        )
    }

    #[test]
    fn keys_the_catalogue_lacks_are_found_for_the_generic_op() {
        // An HSS pair (a type the catalogue has no op for): its handles
        // and usage flags, for `--mechanism`.
        let k = detect_pair(CKK_HSS, &[]).unwrap();
        assert!(
            matches!(&k.kind, Detected::Other { key_type: CKK_HSS, why }
                if why.ends_with("key, which the catalogue has no op for")),
            "{:?}",
            k.kind
        );
        assert_eq!((k.handles.public, k.handles.private), (Some(3), Some(4)));
        assert!(k.can_sign && k.can_verify);
        // SLH-DSA: the catalogue's ops of its set, by CKA_PARAMETER_SET
        // (SHAKE-128f is 4); a set it has no op for is the generic op's.
        let k = detect_pair(CKK_SLH_DSA, &[(CKA_PARAMETER_SET, ulong(4))]).unwrap();
        assert_eq!(k.kind, Detected::SlhDsa(SlhDsaSet::SHAKE_128F));
        let ids: Vec<String> = crate::suite::catalogue::ops_for_existing(&k)
            .into_iter()
            .map(|o| o.id)
            .collect();
        assert_eq!(ids, ["slhdsa-shake-128f-sign", "slhdsa-shake-128f-verify"]);
        let e = detect_pair(CKK_SLH_DSA, &[]).unwrap_err();
        assert!(e.contains("SLH-DSA key's parameter set is unknown"), "{e}");
        let k = detect_pair(CKK_SLH_DSA, &[(CKA_PARAMETER_SET, ulong(13))]).unwrap();
        assert!(matches!(
            k.kind,
            Detected::Other {
                key_type: CKK_SLH_DSA,
                ..
            }
        ));
        // ML-KEM: encapsulate needs CKA_ENCAPSULATE on the public key,
        // decapsulate CKA_DECAPSULATE on the private one.
        let k = detect_pair(
            CKK_ML_KEM,
            &[
                (CKA_PARAMETER_SET, ulong(CKP_ML_KEM_768)),
                (CKA_ENCAPSULATE, Ok(vec![CK_TRUE])),
                (CKA_DECAPSULATE, Ok(vec![CK_TRUE])),
            ],
        )
        .unwrap();
        assert_eq!(k.kind, Detected::MlKem(MlKemSet::K768));
        assert!(k.can_encapsulate && k.can_decapsulate);
        let ids: Vec<String> = crate::suite::catalogue::ops_for_existing(&k)
            .into_iter()
            .map(|o| o.id)
            .collect();
        assert_eq!(ids, ["mlkem768-encaps", "mlkem768-decaps"]);
        let k = detect_pair(
            CKK_ML_KEM,
            &[
                (CKA_PARAMETER_SET, ulong(CKP_ML_KEM_512)),
                (CKA_DECAPSULATE, Ok(vec![CK_TRUE])),
            ],
        )
        .unwrap();
        let ids: Vec<String> = crate::suite::catalogue::ops_for_existing(&k)
            .into_iter()
            .map(|o| o.id)
            .collect();
        assert_eq!(ids, ["mlkem512-decaps"]);
        // ML-DSA: the catalogue's ops of its parameter set; an unknown set
        // is left to the generic op; an unreadable one is said.
        let k = detect_pair(CKK_ML_DSA, &[(CKA_PARAMETER_SET, ulong(CKP_ML_DSA_65))]).unwrap();
        assert_eq!(k.kind, Detected::MlDsa(MlDsaSet::L65));
        let ids: Vec<String> = crate::suite::catalogue::ops_for_existing(&k)
            .into_iter()
            .map(|o| o.id)
            .collect();
        assert_eq!(ids, ["mldsa65-sign", "mldsa65-verify"]);
        let k = detect_pair(CKK_ML_DSA, &[(CKA_PARAMETER_SET, ulong(9))]).unwrap();
        assert!(matches!(
            k.kind,
            Detected::Other {
                key_type: CKK_ML_DSA,
                ..
            }
        ));
        let e = detect_pair(CKK_ML_DSA, &[]).unwrap_err();
        assert!(e.contains("parameter set is unknown"), "{e}");
        // A vendor type is named by its value.
        let k = detect_pair(CKK_VENDOR_DEFINED | 7, &[]).unwrap();
        assert!(matches!(&k.kind, Detected::Other { why, .. } if why.contains("CKK_0x80000007")));
        // An EC key on a curve the catalogue does not cover
        // (brainpoolP256r1).
        let bp256 = vec![
            0x06, 0x09, 0x2b, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x07,
        ];
        let k = detect_pair(CKK_EC, &[(CKA_EC_PARAMS, Ok(bp256))]).unwrap();
        assert!(
            matches!(&k.kind, Detected::Other { key_type: CKK_EC, why } if why.contains("curve the catalogue does not cover")),
            "{:?}",
            k.kind
        );
        assert!(crate::suite::catalogue::ops_for_existing(&k).is_empty());
    }

    #[test]
    fn objects_that_are_no_usable_key_say_why() {
        let attrs: Attrs = [
            ((1, CKA_CLASS), Err(CKR_DEVICE_ERROR)),
            ((2, CKA_CLASS), ulong(CKO_DATA)),
            ((3, CKA_CLASS), ulong(CKO_PUBLIC_KEY)),
            ((3, CKA_KEY_TYPE), ulong(CKK_EC)),
            ((3, CKA_EC_PARAMS), Err(CKR_ATTRIBUTE_SENSITIVE)),
        ]
        .into_iter()
        .collect();
        let get = |h, t| {
            attrs
                .get(&(h, t))
                .cloned()
                .unwrap_or(Err(CKR_ATTRIBUTE_TYPE_INVALID))
        };
        let e = detect_with(&get, &[1, 2, 3]).unwrap_err();
        assert_eq!(
            e,
            "object 1: C_GetAttributeValue(CKA_CLASS) returned CKR_DEVICE_ERROR; \
             object 2 is not a key (CKA_CLASS 0x0); \
             object 3: the EC key's curve is unknown: \
             C_GetAttributeValue(CKA_EC_PARAMS) returned CKR_ATTRIBUTE_SENSITIVE"
        );
        assert_eq!(
            detect_with(&get, &[]).unwrap_err(),
            "no key object with that label"
        );
    }
}
