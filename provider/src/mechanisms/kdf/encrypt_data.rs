//! `CKM_AES_ECB_ENCRYPT_DATA` and `CKM_AES_CBC_ENCRYPT_DATA` (mechanisms
//! spec 3.0 §2.16.12, "Key derivation by data encryption"), and the DES
//! ones of §2.29 / the historical §2.4 (`CKM_DES_ECB_ENCRYPT_DATA`,
//! `CKM_DES_CBC_ENCRYPT_DATA` with a single-DES base, `CKM_DES3_*` with a
//! double- or triple-length one; legacy, docs/SECURITY.md): the derived
//! key's value is the encryption of the parameter's data under the base
//! key, without padding (the data is a whole number of blocks).

use crate::error::{Result, err};
use crate::mechanisms::aes::AesKey;
use crate::mechanisms::block_modes::BlockEngine;
use crate::mechanisms::des::DesKey;
use cryptoki_sys::*;
use zeroize::Zeroizing;

const BLOCK: usize = 16;
const DES_BLOCK: usize = 8;

fn whole_blocks_of(data: &[u8], block: usize) -> Result<()> {
    if data.is_empty() || !data.len().is_multiple_of(block) {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    Ok(())
}

fn whole_blocks(data: &[u8]) -> Result<()> {
    whole_blocks_of(data, BLOCK)
}

/// DES / Triple-DES ECB (`iv` `None`) or CBC of `data` under `key`.
pub fn des(key: &DesKey, iv: Option<&[u8; DES_BLOCK]>, data: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    whole_blocks_of(data, DES_BLOCK)?;
    let mut out = Zeroizing::new(data.to_vec());
    let mut chain = Zeroizing::new(iv.copied());
    for chunk in out.chunks_exact_mut(DES_BLOCK) {
        let block: &mut [u8; DES_BLOCK] = chunk.try_into().expect("whole blocks");
        if let Some(c) = chain.as_ref() {
            block.iter_mut().zip(c).for_each(|(b, c)| *b ^= c);
        }
        key.encrypt_block(block)?;
        if let Some(c) = chain.as_mut() {
            c.copy_from_slice(block);
        }
    }
    Ok(out)
}

/// AES-ECB of `data` under `key`.
pub fn ecb(key: &AesKey, data: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    whole_blocks(data)?;
    let mut out = Zeroizing::new(data.to_vec());
    for chunk in out.chunks_exact_mut(BLOCK) {
        let block: &mut [u8; BLOCK] = chunk.try_into().expect("whole blocks");
        key.encrypt_block(block);
    }
    Ok(out)
}

/// AES-CBC of `data` under `key` from `iv`.
pub fn cbc(key: &AesKey, iv: &[u8; BLOCK], data: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
    whole_blocks(data)?;
    let mut out = Zeroizing::new(data.to_vec());
    let mut chain = Zeroizing::new(*iv);
    for chunk in out.chunks_exact_mut(BLOCK) {
        let block: &mut [u8; BLOCK] = chunk.try_into().expect("whole blocks");
        for (b, c) in block.iter_mut().zip(chain.iter()) {
            *b ^= c;
        }
        key.encrypt_block(block);
        chain.copy_from_slice(block);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::material::KeyMaterial;
    use crate::mechanisms::test_util::unhex;

    /// NIST SP 800-38A F.1.1 (ECB-AES128) and F.2.1 (CBC-AES128), two blocks.
    #[test]
    fn sp800_38a_vectors() {
        let KeyMaterial::Aes(key) =
            crate::mechanisms::aes::load(&unhex("2b7e151628aed2a6abf7158809cf4f3c")).unwrap()
        else {
            panic!("not an AES key")
        };
        let plain = unhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51");
        assert_eq!(
            *ecb(&key, &plain).unwrap(),
            unhex("3ad77bb40d7a3660a89ecaf32466ef97f5d3d58503b9699de785895a96fdbaaf")
        );
        let iv: [u8; 16] = unhex("000102030405060708090a0b0c0d0e0f")
            .try_into()
            .unwrap();
        assert_eq!(
            *cbc(&key, &iv, &plain).unwrap(),
            unhex("7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2")
        );
        assert_eq!(
            ecb(&key, &plain[..17]).unwrap_err().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
        assert_eq!(
            cbc(&key, &iv, &[]).unwrap_err().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
    }

    /// FIPS 81 appendix B (ECB "Now is the time for all " and CBC with IV
    /// 1234567890abcdef) under 0123456789abcdef.
    #[test]
    fn fips81_des_vectors() {
        let KeyMaterial::Des(key) =
            crate::mechanisms::des::load(CKK_DES, &unhex("0123456789abcdef")).unwrap()
        else {
            panic!("not a DES key")
        };
        let plain = b"Now is the time for all ";
        assert_eq!(
            *des(&key, None, plain).unwrap(),
            unhex("3fa40e8a984d48156a271787ab8883f9893d51ec4b563b53")
        );
        let iv: [u8; 8] = unhex("1234567890abcdef").try_into().unwrap();
        assert_eq!(
            *des(&key, Some(&iv), plain).unwrap(),
            unhex("e5c7cdde872bf27c43e934008c389c0f683788499a7c05f6")
        );
        assert_eq!(
            des(&key, None, &plain[..12]).unwrap_err().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
        assert_eq!(
            des(&key, Some(&iv), &[]).unwrap_err().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
    }
}
