//! Whether a token can run an op: the one check `run` and `list` share, so that
//! `list` never calls "supported" an op that `run` then reports unsupported.
//!
//! The checks use what the token declares (PKCS#11 3.0 §5.5.6
//! `C_GetMechanismList` and §5.5.7 `C_GetMechanismInfo`): every mechanism the
//! op uses must be listed, and its key size must lie within the mechanism's
//! `ulMinKeySize..ulMaxKeySize` (bits for RSA/EC, bytes for AES, §2.10 of the
//! mechanisms spec).

use super::alg::CipherAlg;
use super::alg::GenericFn;
use super::alg::KeySpec;
use super::alg::MacAlg;
use super::op::DataSpec;
use super::op::OpDef;
use super::op::OpKind;
use crate::token::caps::TokenCaps;
use crate::token::ckr::ckm_name;

/// Why `op` cannot run on a token with `caps` at data size `size`, if it cannot.
pub fn unsupported(caps: &TokenCaps<'_>, op: &OpDef, size: u64) -> Option<String> {
    if matches!(op.kind, OpKind::VerifyBatch(_)) && !caps.verify_batch {
        return Some("the module has no \"Vendor dalek-pkcs11\" batch-verify interface".into());
    }
    if uses_3_2_calls(op) && !caps.interface_3_2 {
        return Some(super::kem::NO_3_2.into());
    }
    for mech in std::iter::once(op.mechanism).chain(op.also_needs.iter().copied()) {
        if mech != 0 && !caps.mechanisms.contains_key(&mech) {
            return Some(format!(
                "{} is not in the token's mechanism list",
                ckm_name(mech)
            ));
        }
    }
    let info = caps.mechanisms.get(&op.mechanism);
    if let Some((bytes, may_be_bits)) = secret_key_bytes(op) {
        // Secret-key mechanisms give their key sizes in bytes (mechanisms
        // spec §2.10 AES, §2.1.x generic secret / HMAC); an AES maximum above
        // 64 can only be in bits, as some tokens report it.
        if let Some(info) = info
            && info.ulMaxKeySize > 0
        {
            let (size, unit) = if may_be_bits && info.ulMaxKeySize > 64 {
                (bytes * 8, "bit")
            } else {
                (bytes, "byte")
            };
            if size < info.ulMinKeySize || size > info.ulMaxKeySize {
                return Some(format!(
                    "{size}-{unit} keys are outside {}'s range {}..{}",
                    ckm_name(op.mechanism),
                    info.ulMinKeySize,
                    info.ulMaxKeySize
                ));
            }
        }
    } else if let (Some(bits), Some(info)) = (op.key_bits, info)
        && info.ulMaxKeySize > 0
        && (bits < info.ulMinKeySize || bits > info.ulMaxKeySize)
    {
        return Some(format!(
            "{}-bit keys are outside {}'s range {}..{}",
            bits,
            ckm_name(op.mechanism),
            info.ulMinKeySize,
            info.ulMaxKeySize
        ));
    }
    if let DataSpec::Variable { align, .. } = op.data
        && !size.is_multiple_of(align as u64)
    {
        return Some(format!("data size must be a multiple of {align} bytes"));
    }
    None
}

/// Whether `op` times a call only the PKCS#11 3.2 function list has
/// (`C_EncapsulateKey`, `C_DecapsulateKey`).
fn uses_3_2_calls(op: &OpDef) -> bool {
    matches!(
        op.kind,
        OpKind::Encapsulate(_)
            | OpKind::Decapsulate(_)
            | OpKind::Generic(GenericFn::Encapsulate | GenericFn::Decapsulate, _)
    )
}

/// The secret key size of an op in bytes, and whether the token may give the
/// mechanism's range in bits (AES): from the key the op generates, or for an
/// existing key (`--key-label`) from the size recorded in `key_bits`.
fn secret_key_bytes(op: &OpDef) -> Option<(u64, bool)> {
    match (op.key?, &op.kind) {
        (KeySpec::Aes(n), _) => Some((u64::from(n), true)),
        (KeySpec::GenericSecret(n), _) => Some((u64::from(n), false)),
        (KeySpec::Existing, OpKind::Encrypt(CipherAlg::Aes(_, n)))
        | (KeySpec::Existing, OpKind::Decrypt(CipherAlg::Aes(_, n))) => Some((u64::from(*n), true)),
        (KeySpec::Existing, OpKind::Mac(MacAlg::AesCmac)) => op.key_bits.map(|b| (b / 8, true)),
        (KeySpec::Existing, OpKind::Mac(_)) => op.key_bits.map(|b| (b / 8, false)),
        _ => None,
    }
}

/// The data size an op runs at when `--data-sizes` is not given.
pub fn default_size(op: &OpDef) -> u64 {
    match op.data {
        DataSpec::Fixed(n) => n as u64,
        DataSpec::Variable { default, .. } => default as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::catalogue::catalogue;
    use cryptoki_sys::*;
    use std::collections::BTreeMap;

    fn info(min: CK_ULONG, max: CK_ULONG) -> CK_MECHANISM_INFO {
        CK_MECHANISM_INFO {
            ulMinKeySize: min,
            ulMaxKeySize: max,
            flags: 0,
        }
    }

    fn op(id: &str) -> OpDef {
        catalogue()
            .into_iter()
            .find(|o| o.id == id)
            .expect("op in the catalogue")
    }

    #[test]
    fn missing_mechanisms_and_key_sizes_are_reasons() {
        let mut mechs = BTreeMap::new();
        mechs.insert(CKM_RSA_PKCS_KEY_PAIR_GEN, info(1024, 2048));
        mechs.insert(CKM_SHA256_RSA_PKCS, info(1024, 2048));
        let caps = TokenCaps {
            mechanisms: &mechs,
            verify_batch: false,
            interface_3_2: false,
        };
        assert_eq!(unsupported(&caps, &op("rsa2048-sign"), 32), None);
        let why = unsupported(&caps, &op("rsa4096-sign"), 32).expect("too big");
        assert!(why.contains("4096-bit keys are outside"), "{why}");
        let why = unsupported(&caps, &op("p256-sign"), 32).expect("no EC");
        assert!(
            why.contains("is not in the token's mechanism list"),
            "{why}"
        );
        let why = unsupported(&caps, &op("ed25519-verify-batch"), 32).expect("no batch");
        assert!(why.contains("batch-verify"), "{why}");
    }

    #[test]
    fn aes_key_sizes_in_bytes_or_bits() {
        let mut mechs = BTreeMap::new();
        mechs.insert(CKM_AES_KEY_GEN, info(16, 16));
        mechs.insert(CKM_AES_GCM, info(16, 16));
        let caps = TokenCaps {
            mechanisms: &mechs,
            verify_batch: false,
            interface_3_2: false,
        };
        assert_eq!(unsupported(&caps, &op("aes128-gcm-encrypt"), 32), None);
        assert!(unsupported(&caps, &op("aes256-gcm-encrypt"), 32).is_some());
        mechs.insert(CKM_AES_GCM, info(128, 256));
        let caps = TokenCaps {
            mechanisms: &mechs,
            verify_batch: false,
            interface_3_2: false,
        };
        assert_eq!(unsupported(&caps, &op("aes256-gcm-encrypt"), 32), None);
    }

    #[test]
    fn hmac_key_sizes_are_in_bytes() {
        let mut mechs = BTreeMap::new();
        mechs.insert(CKM_SHA512_HMAC, info(64, 512));
        let caps = TokenCaps {
            mechanisms: &mechs,
            verify_batch: false,
            interface_3_2: false,
        };
        // The catalogue's HMAC-SHA512 key has 64 bytes.
        assert_eq!(unsupported(&caps, &op("hmac-sha512"), 32), None);
        // An existing 32-byte key is below SoftHSM2's minimum of 64 bytes.
        let mut o = op("hmac-sha512");
        o.key = Some(KeySpec::Existing);
        o.key_bits = Some(256);
        let why = unsupported(&caps, &o, 32).expect("too short");
        assert!(why.contains("32-byte keys are outside"), "{why}");
        // Of unknown size: left to the token.
        o.key_bits = None;
        assert_eq!(unsupported(&caps, &o, 32), None);
    }

    /// KEM ops need the 3.2 interface as well as the mechanisms: without
    /// it they are unsupported with a reason saying so.
    #[test]
    fn kem_ops_need_the_3_2_interface() {
        let mut mechs = BTreeMap::new();
        mechs.insert(CKM_ML_KEM, info(0, 0));
        mechs.insert(CKM_ML_KEM_KEY_PAIR_GEN, info(0, 0));
        let mut caps = TokenCaps {
            mechanisms: &mechs,
            verify_batch: false,
            interface_3_2: false,
        };
        for id in ["mlkem768-encaps", "mlkem768-decaps"] {
            let why = unsupported(&caps, &op(id), 0).expect("no 3.2 interface");
            assert!(why.contains("no PKCS#11 3.2 interface"), "{why}");
        }
        let generic = crate::suite::generic::op(CKM_ML_KEM, &[], GenericFn::Decapsulate);
        assert!(unsupported(&caps, &generic, 0).is_some());
        // Key generation goes through the 2.40 list.
        assert_eq!(unsupported(&caps, &op("mlkem768-keygen"), 0), None);
        caps.interface_3_2 = true;
        assert_eq!(unsupported(&caps, &op("mlkem768-encaps"), 0), None);
        assert_eq!(unsupported(&caps, &generic, 0), None);
    }
}
