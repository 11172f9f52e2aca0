//! `CKM_AES_ECB_ENCRYPT_DATA` and `CKM_AES_CBC_ENCRYPT_DATA` (mechanisms
//! spec 3.0 §2.16.12, "Key derivation by data encryption"): the derived
//! key's value is the encryption of the parameter's data under the base
//! AES key, without padding (the data is a whole number of blocks).

use crate::error::{Result, err};
use crate::mechanisms::aes::AesKey;
use cryptoki_sys::*;
use zeroize::Zeroizing;

const BLOCK: usize = 16;

fn whole_blocks(data: &[u8]) -> Result<()> {
    if data.is_empty() || !data.len().is_multiple_of(BLOCK) {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    Ok(())
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
}
