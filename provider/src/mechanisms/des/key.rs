//! DES and Triple DES keys (mechanisms spec 3.0 §2.29 "Double and
//! Triple-length DES"; single DES from the historical mechanisms spec
//! §2.4), with the des crate, or AWS-LC in the default build (cargo
//! feature `aws-lc`, `awslc.rs`): `CKK_DES` (8 bytes, legacy and broken: a
//! 56-bit key), `CKK_DES2` (16 bytes, two-key EDE) and `CKK_DES3` (24
//! bytes, three-key EDE).
//!
//! Key values follow FIPS 46-3 / SP 800-67: every byte has odd parity
//! (spec: "Attempting to create or unwrap a DES key with incorrect parity
//! will return an error"). Generation and derivation set the parity bits.
//! A key with a weak, semi-weak or possibly-weak DES component, or whose
//! EDE stages collapse to single DES (K1 = K2 or K2 = K3), is refused
//! everywhere; generation draws again until the key is neither (and, for
//! `CKK_DES3`, has three distinct components, SP 800-67 Rev. 2 §3.1).
//!
//! This file holds the key ([`DesKey`]: value and key schedule) and the
//! checks of key values; the key material (`material`) holds it.

#[cfg(feature = "aws-lc")]
use super::awslc::AwsLcDes;
use crate::error::{Result, err};
use crate::mechanisms::block_modes::{BlockEngine, cbc_decrypt_each, cbc_encrypt_each};
use crate::mechanisms::random;
use cryptoki_sys::*;
use des::cipher::consts::U8;
use des::cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};
use des::{Des, TdesEde2, TdesEde3};
use zeroize::{Zeroize, Zeroizing};

/// The DES block size in bytes.
pub const BLOCK: usize = 8;

/// An expanded DES key schedule (zeroized on drop by the des crate, or by
/// aws-lc-rs).
enum Schedule {
    Des(Des),
    Ede2(TdesEde2),
    Ede3(TdesEde3),
    /// AWS-LC's schedules (cargo feature `aws-lc`), for every value it
    /// takes (`awslc.rs`).
    #[cfg(feature = "aws-lc")]
    AwsLc(Box<AwsLcDes>),
}

/// A DES, double- or triple-length DES key with its key schedule.
pub struct DesKey {
    key_type: CK_KEY_TYPE,
    value: Zeroizing<Vec<u8>>,
    schedule: Schedule,
}

/// Runs `$e` with `$c` bound to the RustCrypto cipher of `$key`'s schedule;
/// for an AWS-LC schedule, runs `$aws` with `$a` bound to it instead.
macro_rules! with_cipher {
    ($key:expr, $c:ident => $e:expr, $a:ident => $aws:expr) => {
        match &$key.schedule {
            Schedule::Des($c) => $e,
            Schedule::Ede2($c) => $e,
            Schedule::Ede3($c) => $e,
            #[cfg(feature = "aws-lc")]
            Schedule::AwsLc($a) => $aws,
        }
    };
}

impl DesKey {
    /// `CKK_DES`, `CKK_DES2` or `CKK_DES3`.
    pub fn key_type(&self) -> CK_KEY_TYPE {
        self.key_type
    }

    /// The key bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.value
    }

    /// True when the key runs in AWS-LC (always false in the pure-Rust
    /// build).
    pub fn in_aws_lc(&self) -> bool {
        with_cipher!(self, _c => false, _a => true)
    }
}

/// One block through a RustCrypto cipher, in place.
fn rust_block<C: BlockCipherEncrypt<BlockSize = U8> + BlockCipherDecrypt>(
    c: &C,
    block: &mut [u8; BLOCK],
    encrypt: bool,
) {
    let mut b = Array::from(*block);
    if encrypt {
        c.encrypt_block(&mut b);
    } else {
        c.decrypt_block(&mut b);
    }
    block.copy_from_slice(&b);
    b.zeroize();
}

impl BlockEngine<BLOCK> for DesKey {
    fn encrypt_block(&self, block: &mut [u8; BLOCK]) -> Result<()> {
        with_cipher!(self, c => {
            rust_block(c, block, true);
            Ok(())
        }, a => a.ecb_encrypt(std::slice::from_mut(block)))
    }

    fn decrypt_block(&self, block: &mut [u8; BLOCK]) -> Result<()> {
        with_cipher!(self, c => {
            rust_block(c, block, false);
            Ok(())
        }, a => a.ecb_decrypt(std::slice::from_mut(block)))
    }

    fn ecb_encrypt(&self, blocks: &mut [[u8; BLOCK]]) -> Result<()> {
        with_cipher!(self, c => {
            blocks.iter_mut().for_each(|b| rust_block(c, b, true));
            Ok(())
        }, a => a.ecb_encrypt(blocks))
    }

    fn ecb_decrypt(&self, blocks: &mut [[u8; BLOCK]]) -> Result<()> {
        with_cipher!(self, c => {
            blocks.iter_mut().for_each(|b| rust_block(c, b, false));
            Ok(())
        }, a => a.ecb_decrypt(blocks))
    }

    fn cbc_encrypt(&self, iv: &mut [u8; BLOCK], blocks: &mut [[u8; BLOCK]]) -> Result<()> {
        with_cipher!(self, _c => cbc_encrypt_each(self, iv, blocks), a => a.cbc_encrypt(iv, blocks))
    }

    fn cbc_decrypt(&self, iv: &mut [u8; BLOCK], blocks: &mut [[u8; BLOCK]]) -> Result<()> {
        with_cipher!(self, _c => cbc_decrypt_each(self, iv, blocks), a => a.cbc_decrypt(iv, blocks))
    }
}

/// The value length of a DES key type, or `None` for other key types.
pub fn key_len(key_type: CK_KEY_TYPE) -> Option<usize> {
    match key_type {
        CKK_DES => Some(8),
        CKK_DES2 => Some(16),
        CKK_DES3 => Some(24),
        _ => None,
    }
}

/// Sets the low bit of every byte so that each has odd parity (FIPS 46-3
/// §"Key"): the bit DES ignores.
pub fn set_parity(value: &mut [u8]) {
    for b in value {
        let high = *b & 0xfe;
        *b = high | ((high.count_ones() as u8 & 1) ^ 1);
    }
}

fn has_parity(value: &[u8]) -> bool {
    value.iter().all(|b| b.count_ones() % 2 == 1)
}

/// True when any 8-byte component is a weak, semi-weak or possibly-weak
/// DES key (compared with parity set, so the check does not depend on the
/// ignored bits), or the EDE stages collapse (K1 = K2, or K2 = K3).
fn is_weak(value: &[u8]) -> bool {
    let mut normal = Zeroizing::new(value.to_vec());
    set_parity(&mut normal);
    let components: Vec<&[u8]> = normal.chunks(BLOCK).collect();
    let weak_component = components.iter().any(|c| des::weak_key_test(c).is_err());
    let collapses = components.windows(2).any(|w| w[0] == w[1]);
    weak_component || collapses
}

/// Checks the value of a DES key of `key_type` (made by `C_CreateObject`,
/// `C_UnwrapKey` or a derivation): its length, its parity and that it is
/// not weak; else `CKR_ATTRIBUTE_VALUE_INVALID`.
pub fn check_value(key_type: CK_KEY_TYPE, value: &[u8]) -> Result<()> {
    if key_len(key_type) != Some(value.len()) || !has_parity(value) || is_weak(value) {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    Ok(())
}

/// A new random key of `key_type` with odd parity, neither weak nor
/// collapsing, and for `CKK_DES3` with three distinct components.
pub fn generate(key_type: CK_KEY_TYPE) -> Result<Zeroizing<Vec<u8>>> {
    let len = key_len(key_type).ok_or(err(CKR_KEY_TYPE_INCONSISTENT))?;
    let mut value = Zeroizing::new(vec![0u8; len]);
    // A rejection happens with probability about 2^-50 per draw; the bound
    // only keeps a broken random source from looping forever.
    for _ in 0..64 {
        random::generate(&mut value)?;
        set_parity(&mut value);
        let distinct = len != 24 || value[..BLOCK] != value[2 * BLOCK..];
        if distinct && !is_weak(&value) {
            return Ok(value);
        }
    }
    Err(err(CKR_FUNCTION_FAILED))
}

impl DesKey {
    /// Parses a DES key value of `key_type` and expands its key schedule:
    /// AWS-LC's when the build has it and it takes the value, else the des
    /// crate's (the same permutation; the value's checks are
    /// [`check_value`]'s in both builds).
    pub fn new(key_type: CK_KEY_TYPE, value: &[u8]) -> Result<DesKey> {
        if key_len(key_type) != Some(value.len()) {
            return Err(err(CKR_KEY_SIZE_RANGE));
        }
        #[cfg(feature = "aws-lc")]
        if let Some(k) = AwsLcDes::new(value) {
            return Ok(DesKey {
                key_type,
                value: Zeroizing::new(value.to_vec()),
                schedule: Schedule::AwsLc(k),
            });
        }
        Self::with_rust_crypto(key_type, value)
    }

    /// The key with the des crate's schedule, whatever the build.
    pub(super) fn with_rust_crypto(key_type: CK_KEY_TYPE, value: &[u8]) -> Result<DesKey> {
        let bad = |_| err(CKR_KEY_SIZE_RANGE);
        let schedule = match (key_type, value.len()) {
            (CKK_DES, 8) => Schedule::Des(Des::new_from_slice(value).map_err(bad)?),
            (CKK_DES2, 16) => Schedule::Ede2(TdesEde2::new_from_slice(value).map_err(bad)?),
            (CKK_DES3, 24) => Schedule::Ede3(TdesEde3::new_from_slice(value).map_err(bad)?),
            _ => return Err(err(CKR_KEY_SIZE_RANGE)),
        };
        Ok(DesKey {
            key_type,
            value: Zeroizing::new(value.to_vec()),
            schedule,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::des::load;
    use crate::mechanisms::material::KeyMaterial;
    use crate::mechanisms::test_util::unhex;

    #[test]
    fn parity_is_set_on_every_byte() {
        let mut v: Vec<u8> = (0..=255).collect();
        set_parity(&mut v);
        assert!(has_parity(&v));
        for (i, b) in v.iter().enumerate() {
            assert_eq!(b & 0xfe, i as u8 & 0xfe);
        }
    }

    #[test]
    fn weak_keys_wrong_parity_and_collapsing_keys_are_refused() {
        let good = unhex("0123456789abcdef23456789abcdef01456789abcdef0123");
        assert!(check_value(CKK_DES3, &good).is_ok());
        assert!(check_value(CKK_DES2, &good[..16]).is_ok());
        assert!(check_value(CKK_DES, &good[..8]).is_ok());
        // Two-key TDES in three-key form (K1 = K3) is keying option 2.
        let mut k1k2k1 = good.clone();
        k1k2k1.copy_within(..8, 16);
        assert!(check_value(CKK_DES3, &k1k2k1).is_ok());
        let mut bad_parity = good.clone();
        bad_parity[5] ^= 1;
        let weak = unhex("0101010101010101");
        // The same weak key with its parity bits cleared is still weak.
        let weak_no_parity = unhex("0000000000000000");
        let semi_weak = unhex("01fe01fe01fe01fe");
        let collapsed = [&good[..8], &good[..8], &good[16..]].concat();
        for (kt, v) in [
            (CKK_DES3, bad_parity.as_slice()),
            (CKK_DES, &weak),
            (CKK_DES, &semi_weak),
            (CKK_DES3, &[&weak[..], &good[8..]].concat()),
            (CKK_DES3, &collapsed),
            (CKK_DES2, &good),
            (CKK_DES3, &good[..16]),
        ] {
            assert_eq!(
                check_value(kt, v).unwrap_err().rv(),
                CKR_ATTRIBUTE_VALUE_INVALID,
                "{v:02x?}"
            );
        }
        assert!(is_weak(&weak_no_parity));
    }

    #[test]
    fn generated_keys_pass_the_checks() {
        for kt in [CKK_DES, CKK_DES2, CKK_DES3] {
            let a = generate(kt).unwrap();
            let b = generate(kt).unwrap();
            assert_ne!(*a, *b);
            check_value(kt, &a).unwrap();
            if kt == CKK_DES3 {
                assert_ne!(a[..8], a[16..]);
            }
        }
        assert!(generate(CKK_AES).is_err());
    }

    /// FIPS 81 Appendix B, ECB: "Now is t" under 0123456789abcdef; and
    /// the SP 800-67 Rev. 2 three-key TDEA example (first block).
    #[test]
    fn block_known_answers() {
        let KeyMaterial::Des(k) = load(CKK_DES, &unhex("0123456789abcdef")).unwrap() else {
            panic!()
        };
        let mut b = *b"Now is t";
        k.encrypt_block(&mut b).unwrap();
        assert_eq!(b.to_vec(), unhex("3fa40e8a984d4815"));
        k.decrypt_block(&mut b).unwrap();
        assert_eq!(&b, b"Now is t");
        let KeyMaterial::Des(k) = load(
            CKK_DES3,
            &unhex("0123456789abcdef23456789abcdef01456789abcdef0123"),
        )
        .unwrap() else {
            panic!()
        };
        let mut b = *b"The qufc";
        k.encrypt_block(&mut b).unwrap();
        assert_eq!(b.to_vec(), unhex("a826fd8ce53b855f"));
        assert!(load(CKK_DES3, &[1; 16]).is_err());
    }
}
