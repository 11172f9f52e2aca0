//! DES and Triple DES encryption: `CKM_DES3_ECB`, `CKM_DES3_CBC`,
//! `CKM_DES3_CBC_PAD` (mechanisms spec 3.0 §2.29.5–2.29.7) with `CKK_DES2`
//! and `CKK_DES3` keys, and the single-DES `CKM_DES_ECB`, `CKM_DES_CBC`,
//! `CKM_DES_CBC_PAD` (historical mechanisms spec §2.4) with `CKK_DES` keys.
//! The CBC mechanisms take an 8-byte IV. Every one wraps and unwraps too.

use super::super::block_modes::{BlockModes, Chaining};
use super::super::material::KeyMaterial;
use super::super::operation::{CipherOperation, Direction, OutputLen};
use super::super::params::{Mechanism, Param};
use super::key::{BLOCK, DesKey};
use crate::error::{Result, err};
use cryptoki_sys::*;
use std::sync::Arc;

/// Parses a DES key value of `key_type` into key material (its key
/// schedule expanded once).
pub fn load(key_type: CK_KEY_TYPE, value: &[u8]) -> Result<KeyMaterial> {
    DesKey::new(key_type, value).map(KeyMaterial::Des)
}

/// The DES key of `key`, if it is one of `types`; else
/// `CKR_KEY_TYPE_INCONSISTENT`.
pub fn des_key<'a>(key: &'a KeyMaterial, types: &[CK_KEY_TYPE]) -> Result<&'a DesKey> {
    match key {
        KeyMaterial::Des(k) if types.contains(&k.key_type()) => Ok(k),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// An ECB or CBC operation with a DES key.
#[derive(Clone)]
pub struct DesCipher {
    key: Arc<KeyMaterial>,
    modes: BlockModes<BLOCK>,
}

impl DesCipher {
    /// The key material the operation runs with.
    pub fn key(&self) -> &KeyMaterial {
        &self.key
    }
}

/// The key types a DES mechanism takes, or `None` for other mechanisms.
fn key_types(mech: CK_MECHANISM_TYPE) -> Option<&'static [CK_KEY_TYPE]> {
    match mech {
        CKM_DES_ECB | CKM_DES_CBC | CKM_DES_CBC_PAD => Some(&[CKK_DES]),
        CKM_DES3_ECB | CKM_DES3_CBC | CKM_DES3_CBC_PAD => Some(&[CKK_DES2, CKK_DES3]),
        _ => None,
    }
}

impl DesCipher {
    /// Starts an operation: checks that the key suits the mechanism
    /// (`CKR_KEY_TYPE_INCONSISTENT`) and the parameter (none for ECB, an
    /// 8-byte IV for CBC: else `CKR_MECHANISM_PARAM_INVALID`).
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>, direction: Direction) -> Result<Self> {
        let types = key_types(mech.ty).ok_or(err(CKR_KEY_TYPE_INCONSISTENT))?;
        des_key(&key, types)?;
        let bad = || err(CKR_MECHANISM_PARAM_INVALID);
        let chaining = match (mech.ty, mech.param) {
            (CKM_DES_ECB | CKM_DES3_ECB, Param::None) => Chaining::Ecb,
            (CKM_DES_CBC | CKM_DES3_CBC | CKM_DES_CBC_PAD | CKM_DES3_CBC_PAD, Param::Bytes(iv)) => {
                Chaining::Cbc {
                    iv: iv.try_into().map_err(|_| bad())?,
                    pad: matches!(mech.ty, CKM_DES_CBC_PAD | CKM_DES3_CBC_PAD),
                }
            }
            _ => return Err(bad()),
        };
        Ok(DesCipher {
            key,
            modes: BlockModes::new(direction, chaining),
        })
    }
}

/// Every DES key type (the mechanism was matched to the key in `new`).
const ANY: &[CK_KEY_TYPE] = &[CKK_DES, CKK_DES2, CKK_DES3];

impl CipherOperation for DesCipher {
    fn output_len(&self, input_len: usize) -> OutputLen {
        self.modes.output_len(input_len)
    }

    fn process(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let engine: &DesKey = des_key(&self.key, ANY)?;
        self.modes.process(engine, data, out)
    }

    fn update_len(&self, input_len: usize) -> OutputLen {
        OutputLen::Exact(self.modes.update_len(input_len))
    }

    fn update(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let engine: &DesKey = des_key(&self.key, ANY)?;
        self.modes.update(engine, data, out)
    }

    fn final_len(&self) -> OutputLen {
        self.modes.final_len()
    }

    fn finish(&mut self, out: &mut [u8]) -> Result<usize> {
        let engine: &DesKey = des_key(&self.key, ANY)?;
        self.modes.finish(engine, out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::load;
    use super::*;
    use crate::mechanisms::test_util::unhex;

    const KEY3: &str = "0123456789abcdef23456789abcdef01456789abcdef0123";
    /// SP 800-67 Rev. 2 example plaintext, "The qufck brown fox jump".
    const PLAIN: &str = "54686520717566636b2062726f776e20666f78206a756d70";

    fn run(
        ty: CK_MECHANISM_TYPE,
        param: Param<'_>,
        kt: CK_KEY_TYPE,
        key: &str,
        d: Direction,
        data: &[u8],
    ) -> Result<Vec<u8>> {
        let key = Arc::new(load(kt, &unhex(key))?);
        let mut op = DesCipher::new(&Mechanism { ty, param }, key, d)?;
        let mut out = vec![0u8; op.output_len(data.len()).bound()];
        let n = op.process(data, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    /// SP 800-67 Rev. 2 three-key TDEA example (ECB), both directions.
    #[test]
    fn tdea_ecb_known_answer() {
        let ct = unhex("a826fd8ce53b855fcce21c8112256fe668d5c05dd9b6b900");
        let out = run(
            CKM_DES3_ECB,
            Param::None,
            CKK_DES3,
            KEY3,
            Direction::Encrypt,
            &unhex(PLAIN),
        )
        .unwrap();
        assert_eq!(out, ct);
        let back = run(
            CKM_DES3_ECB,
            Param::None,
            CKK_DES3,
            KEY3,
            Direction::Decrypt,
            &ct,
        )
        .unwrap();
        assert_eq!(back, unhex(PLAIN));
    }

    /// FIPS 81 Appendix C, CBC: "Now is the time for all " under
    /// 0123456789abcdef with IV 1234567890abcdef.
    #[test]
    fn des_cbc_known_answer() {
        let iv = unhex("1234567890abcdef");
        let out = run(
            CKM_DES_CBC,
            Param::Bytes(&iv),
            CKK_DES,
            "0123456789abcdef",
            Direction::Encrypt,
            b"Now is the time for all ",
        )
        .unwrap();
        assert_eq!(
            out,
            unhex("e5c7cdde872bf27c43e934008c389c0f683788499a7c05f6")
        );
    }

    /// CBC-PAD of 26 bytes (the example plaintext and 0102) under the
    /// three-key example key, IV 1234567890abcdef (OpenSSL's des-ede3-cbc
    /// gives the same).
    #[test]
    fn tdea_cbc_pad_known_answer() {
        let iv = unhex("1234567890abcdef");
        let data = [unhex(PLAIN), vec![1, 2]].concat();
        let ct = unhex("38413d4ba2325cf1141f707471ac2ced57db530f0123b5ace7e14579e7692bc1");
        let out = run(
            CKM_DES3_CBC_PAD,
            Param::Bytes(&iv),
            CKK_DES3,
            KEY3,
            Direction::Encrypt,
            &data,
        )
        .unwrap();
        assert_eq!(out, ct);
        let back = run(
            CKM_DES3_CBC_PAD,
            Param::Bytes(&iv),
            CKK_DES3,
            KEY3,
            Direction::Decrypt,
            &ct,
        )
        .unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn wrong_key_types_and_parameters_are_refused() {
        let iv = [0u8; 8];
        let cases = [
            (
                CKM_DES_ECB,
                Param::None,
                CKK_DES3,
                KEY3,
                CKR_KEY_TYPE_INCONSISTENT,
            ),
            (
                CKM_DES3_ECB,
                Param::None,
                CKK_DES,
                "0123456789abcdef",
                CKR_KEY_TYPE_INCONSISTENT,
            ),
            (
                CKM_AES_ECB,
                Param::None,
                CKK_DES3,
                KEY3,
                CKR_KEY_TYPE_INCONSISTENT,
            ),
            (
                CKM_DES3_ECB,
                Param::Bytes(&iv),
                CKK_DES3,
                KEY3,
                CKR_MECHANISM_PARAM_INVALID,
            ),
            (
                CKM_DES3_CBC,
                Param::None,
                CKK_DES3,
                KEY3,
                CKR_MECHANISM_PARAM_INVALID,
            ),
            (
                CKM_DES3_CBC,
                Param::Bytes(&iv[..7]),
                CKK_DES3,
                KEY3,
                CKR_MECHANISM_PARAM_INVALID,
            ),
        ];
        for (ty, param, kt, key, rv) in cases {
            let e = run(ty, param, kt, key, Direction::Encrypt, &[0; 8]).unwrap_err();
            assert_eq!(e.rv(), rv, "{ty:#x}");
        }
    }
}
