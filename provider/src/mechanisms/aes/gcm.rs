//! AES-GCM (mechanisms spec §2.12, SP 800-38D) over a whole message: the
//! aes-gcm crate (or, with `aws-lc`, AWS-LC) for 96-bit IVs, and `J0`,
//! GHASH and the tag built from the crate's primitives for other IV lengths.

use super::key::{Aes, AesKey, BLOCK, GcmPrepared, Schedule, ct_eq};
use crate::error::{Result, err};
use crate::mechanisms::operation::Direction;
use aes::Block;
use aes::cipher::consts::{U12, U16};
use aes::cipher::{Array, InnerIvInit, StreamCipher};
use aes_gcm::AesGcm;
use aes_gcm::aead::AeadInOut;
use cryptoki_sys::*;
use zeroize::{Zeroize, Zeroizing};

/// Runs `$e` with `$c` bound to the key schedule and `$g` to the prepared
/// GCM of the same key.
macro_rules! with_gcm {
    ($key:expr, $c:ident, $g:ident => $e:expr) => {
        match (&$key.schedule, $key.gcm()) {
            (Schedule::Aes128($c), GcmPrepared::Aes128($g)) => $e,
            (Schedule::Aes192($c), GcmPrepared::Aes192($g)) => $e,
            (Schedule::Aes256($c), GcmPrepared::Aes256($g)) => $e,
            _ => unreachable!("prepared from the same schedule"),
        }
    };
}

impl AesKey {
    /// aws-lc's AES-GCM for this key (`aws-lc` back end).
    #[cfg(feature = "aws-lc")]
    fn awslc_gcm(&self) -> Option<&crate::mechanisms::awslc::AesGcmKey> {
        self.awslc_gcm
            .get_or_init(|| crate::mechanisms::awslc::AesGcmKey::new(&self.value))
            .as_ref()
    }

    /// GCM for 96-bit nonces, prepared on first use.
    fn gcm(&self) -> &GcmPrepared {
        self.gcm.get_or_init(|| {
            Box::new(match &self.schedule {
                Schedule::Aes128(c) => GcmPrepared::Aes128(AesGcm::from(c.clone())),
                Schedule::Aes192(c) => GcmPrepared::Aes192(AesGcm::from(c.clone())),
                Schedule::Aes256(c) => GcmPrepared::Aes256(AesGcm::from(c.clone())),
            })
        })
    }
}

/// GCM's counter-mode keystream `GCTR_K(inc32(J0), ·)` (SP 800-38D §6.5).
fn ctr32<'a, C: Aes>(c: &'a C, j0: &Block) -> ctr::Ctr32BE<&'a C> {
    ctr::Ctr32BE::from_core(ctr::CtrCore::inner_iv_init(c, &inc32(j0)))
}

/// `inc32` of SP 800-38D §6.2.
fn inc32(block: &Block) -> Block {
    let mut b = *block;
    let ctr = u32::from_be_bytes([b[12], b[13], b[14], b[15]]).wrapping_add(1);
    b[12..].copy_from_slice(&ctr.to_be_bytes());
    b
}

/// `GHASH_H(A ‖ 0^v ‖ C ‖ 0^u ‖ [len(A)]64 ‖ [len(C)]64)` (SP 800-38D §7.1
/// step 5), obtained from the aes-gcm crate's constant-time GHASH: under
/// the all-zero 96-bit nonce, GCM's tag for a plaintext that encrypts to C
/// is exactly that value XOR `E_K(0^96 ‖ 0^31 ‖ 1)`.
fn ghash<C: Aes>(c: &C, aad: &[u8], ciphertext: &[u8]) -> Result<Block> {
    let nonce = Array::<u8, U12>::default();
    let mut j0 = Block::default();
    j0[BLOCK - 1] = 1;
    // The plaintext P' with GCM_K(0^96, P') = C: C XOR the keystream.
    let mut buf = Zeroizing::new(ciphertext.to_vec());
    ctr32(c, &j0)
        .try_apply_keystream(&mut buf)
        .map_err(|_| err(CKR_DATA_LEN_RANGE))?;
    let tag = AesGcm::<&C, U12>::from(c)
        .encrypt_inout_detached(&nonce, aad, buf.as_mut_slice().into())
        .map_err(|_| err(CKR_DATA_LEN_RANGE))?;
    c.encrypt_block(&mut j0);
    let mut s = Block::default();
    for i in 0..BLOCK {
        s[i] = tag[i] ^ j0[i];
    }
    Ok(s)
}

/// The pre-counter block `J0` of SP 800-38D §7.1 step 2.
fn gcm_j0<C: Aes>(c: &C, iv: &[u8]) -> Result<Block> {
    if iv.len() == 12 {
        let mut j0 = Block::default();
        j0[..12].copy_from_slice(iv);
        j0[BLOCK - 1] = 1;
        Ok(j0)
    } else {
        // GHASH_H(IV ‖ 0^(s+64) ‖ [len(IV)]64): the GHASH of an empty AAD
        // and "ciphertext" IV has exactly that layout.
        ghash(c, &[], iv)
    }
}

/// The (truncated) tag `MSB_t(GHASH_H(A, C) XOR E_K(J0))`.
fn gcm_tag<C: Aes>(c: &C, j0: &Block, aad: &[u8], ciphertext: &[u8]) -> Result<Block> {
    let s = ghash(c, aad, ciphertext)?;
    let mut mask = *j0;
    c.encrypt_block(&mut mask);
    let mut t = Block::default();
    for i in 0..BLOCK {
        t[i] = s[i] ^ mask[i];
    }
    Ok(t)
}

/// GCM encryption or decryption of a whole message: GCM-AE writes
/// ciphertext ‖ tag into `out` (SP 800-38D §7.1); GCM-AD (§7.2) verifies
/// the tag at the end of `data` and releases the plaintext only if it
/// verifies (a failed check leaves `out` cleared or untouched).
pub(super) fn gcm_run(
    key: &AesKey,
    direction: Direction,
    iv: &[u8],
    aad: &[u8],
    tag_len: usize,
    data: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    match direction {
        Direction::Encrypt => {
            let n = data.len();
            let (body, rest) = out.split_at_mut(n);
            body.copy_from_slice(data);
            let tag = gcm_seal_in_place(key, iv, aad, body)?;
            rest[..tag_len].copy_from_slice(&tag[..tag_len]);
            Ok(n + tag_len)
        }
        Direction::Decrypt => {
            if data.len() < tag_len {
                return Err(err(CKR_ENCRYPTED_DATA_LEN_RANGE));
            }
            let (ciphertext, tag) = data.split_at(data.len() - tag_len);
            let n = ciphertext.len();
            if gcm_open_into(key, iv, aad, ciphertext, tag, &mut out[..n])? {
                Ok(n)
            } else {
                Err(err(CKR_ENCRYPTED_DATA_INVALID))
            }
        }
    }
}

/// Encrypts `body` in place; the full 16-byte tag (truncating it is how
/// shorter tags are made, §7.1 step 6). With the `aws-lc` back end a
/// 96-bit IV goes to AWS-LC, about three times faster on large messages.
fn gcm_seal_in_place(key: &AesKey, iv: &[u8], aad: &[u8], body: &mut [u8]) -> Result<Block> {
    #[cfg(feature = "aws-lc")]
    if let Ok(nonce) = <&[u8; 12]>::try_from(iv)
        && let Some(aead) = key.awslc_gcm()
    {
        return aead.seal_in_place(nonce, aad, body).map(Block::from);
    }
    with_gcm!(key, c, g => {
        if iv.len() == 12 {
            let nonce = Array::<u8, U12>::try_from(iv).map_err(|_| err(CKR_GENERAL_ERROR))?;
            g.encrypt_inout_detached(&nonce, aad, body.into())
                .map_err(|_| err(CKR_DATA_LEN_RANGE))
        } else {
            let j0 = gcm_j0(c, iv)?;
            ctr32(c, &j0)
                .try_apply_keystream(body)
                .map_err(|_| err(CKR_DATA_LEN_RANGE))?;
            gcm_tag(c, &j0, aad, body)
        }
    })
}

/// Decrypts `ciphertext` into `body` if `tag` verifies (false otherwise).
/// A one-pass decryption (96-bit IV, 16-byte tag) works in `body` and
/// clears it on a bad tag; the general path checks the tag before writing.
fn gcm_open_into(
    key: &AesKey,
    iv: &[u8],
    aad: &[u8],
    ciphertext: &[u8],
    tag: &[u8],
    body: &mut [u8],
) -> Result<bool> {
    let in_place = |body: &mut [u8], open: &dyn Fn(&mut [u8]) -> bool| {
        body.copy_from_slice(ciphertext);
        let ok = open(body);
        if !ok {
            body.zeroize();
        }
        ok
    };
    let one_pass = <&[u8; 12]>::try_from(iv)
        .ok()
        .filter(|_| tag.len() == BLOCK);
    #[cfg(feature = "aws-lc")]
    if let Some(nonce) = one_pass
        && let Some(aead) = key.awslc_gcm()
    {
        return Ok(in_place(body, &|b| aead.open_in_place(nonce, aad, tag, b)));
    }
    with_gcm!(key, c, g => {
        if let Some(nonce) = one_pass {
            // The aes-gcm crate checks the tag before decrypting.
            let nonce = Array::<u8, U12>::from(*nonce);
            let tag = Array::<u8, U16>::try_from(tag).map_err(|_| err(CKR_GENERAL_ERROR))?;
            return Ok(in_place(body, &|b| {
                g.decrypt_inout_detached(&nonce, aad, b.into(), &tag).is_ok()
            }));
        }
        let j0 = gcm_j0(c, iv)?;
        let expected = gcm_tag(c, &j0, aad, ciphertext)?;
        if !ct_eq(&expected[..tag.len()], tag) {
            return Ok(false);
        }
        body.copy_from_slice(ciphertext);
        ctr32(c, &j0)
            .try_apply_keystream(body)
            .map_err(|_| err(CKR_ENCRYPTED_DATA_LEN_RANGE))?;
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::super::AesCipher;
    use super::super::tests::{key, run, run_parts};
    use super::*;
    use crate::mechanisms::test_util::{hex, unhex};
    use crate::mechanisms::{Mechanism, Param};

    /// McGrew–Viega test case 4 (96-bit IV) and 6 (60-byte IV).
    #[test]
    fn gcm_known_answers_and_tamper() {
        let k = key("feffe9928665731c6d6a8f9467308308");
        let plain = unhex(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
        );
        let aad = unhex("feedfacedeadbeeffeedfacedeadbeefabaddad2");
        let cases = [
            (
                "cafebabefacedbaddecaf888",
                "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
                "5bc94fbc3221a5db94fae95ae7121a47",
            ),
            (
                "9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728c3c0c95156809539fcf0e2429a6b525416aedbf5a0de6a57a637b39b",
                "8ce24998625615b603a033aca13fb894be9112a5c3a211a8ba262a3cca7e2ca701e4a9a4fba43c90ccdcb281d48c7c6fd62875d2aca417034c34aee5",
                "619cc5aefffe0bfa462af43c1699d050",
            ),
        ];
        for (iv, ct, tag) in cases {
            let iv = unhex(iv);
            for tag_bits in [128, 96] {
                let mech = Mechanism {
                    ty: CKM_AES_GCM,
                    param: Param::Gcm {
                        iv: &iv,
                        aad: &aad,
                        tag_bits,
                    },
                };
                let tag = &tag[..tag_bits as usize / 4];
                let out = run(&mech, &k, Direction::Encrypt, &plain).unwrap();
                assert_eq!(hex(&out), format!("{ct}{tag}"));
                assert_eq!(
                    run_parts(&mech, &k, Direction::Encrypt, &plain, 13).unwrap(),
                    out
                );
                assert_eq!(run(&mech, &k, Direction::Decrypt, &out).unwrap(), plain);
                assert_eq!(
                    run_parts(&mech, &k, Direction::Decrypt, &out, 7).unwrap(),
                    plain
                );
                for i in [0, out.len() - 1] {
                    let mut bad = out.clone();
                    bad[i] ^= 1;
                    assert_eq!(
                        run(&mech, &k, Direction::Decrypt, &bad).unwrap_err().rv(),
                        CKR_ENCRYPTED_DATA_INVALID
                    );
                }
                assert_eq!(
                    run(&mech, &k, Direction::Decrypt, &out[..11])
                        .unwrap_err()
                        .rv(),
                    CKR_ENCRYPTED_DATA_LEN_RANGE
                );
            }
        }
        let bad_tag = Mechanism {
            ty: CKM_AES_GCM,
            param: Param::Gcm {
                iv: &[1; 12],
                aad: &[],
                tag_bits: 64,
            },
        };
        assert!(AesCipher::new(&bad_tag, k.clone(), Direction::Encrypt).is_err());
        let no_iv = Mechanism {
            ty: CKM_AES_GCM,
            param: Param::Gcm {
                iv: &[],
                aad: &[],
                tag_bits: 128,
            },
        };
        assert!(AesCipher::new(&no_iv, k, Direction::Encrypt).is_err());
    }
}
