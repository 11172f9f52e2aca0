//! AES key wrap (mechanisms spec §2.14): RFC 3394 (`CKM_AES_KEY_WRAP`),
//! RFC 5649 with padding (`CKM_AES_KEY_WRAP_PAD` and `CKM_AES_KEY_WRAP_KWP`,
//! the same algorithm here), and RFC 3394 over PKCS #7 padding to a
//! multiple of 8 bytes (`CKM_AES_KEY_WRAP_PKCS7`).

use super::key::{Aes, BLOCK, ct_eq};
use crate::error::{Result, err};
use aes::Block;
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// RFC 3394 §2.2.3.1 default initial value.
pub(super) const KW_IV: [u8; 8] = [0xa6; 8];
/// RFC 5649 §3 alternative initial value, high-order half.
pub(super) const KWP_AIV: [u8; 4] = [0xa6, 0x59, 0x59, 0xa6];

/// The wrapping function W of RFC 3394 §2.2.1 (index form): `out` gets
/// `A ‖ R[1..n]` for the semiblocks of `plain` (at least two).
pub(super) fn kw_wrap<C: Aes>(c: &C, iv: [u8; 8], plain: &[u8], out: &mut [u8]) {
    let n = plain.len() / 8;
    out[8..].copy_from_slice(plain);
    let mut b = Zeroizing::new(Block::default());
    b[..8].copy_from_slice(&iv);
    for j in 0..6 {
        for i in 1..=n {
            let r = &mut out[8 * i..8 * i + 8];
            b[8..].copy_from_slice(r);
            c.encrypt_block(&mut b);
            let t = ((n * j + i) as u64).to_be_bytes();
            for k in 0..8 {
                b[k] ^= t[k];
            }
            r.copy_from_slice(&b[8..]);
        }
    }
    out[..8].copy_from_slice(&b[..8]);
}

/// The unwrapping function W⁻¹ of RFC 3394 §2.2.2: writes `R[1..n]` into
/// `out` and returns `A` for the caller to check.
pub(super) fn kw_unwrap<C: Aes>(c: &C, wrapped: &[u8], out: &mut [u8]) -> [u8; 8] {
    let n = wrapped.len() / 8 - 1;
    out.copy_from_slice(&wrapped[8..]);
    let mut b = Zeroizing::new(Block::default());
    b[..8].copy_from_slice(&wrapped[..8]);
    for j in (0..6).rev() {
        for i in (1..=n).rev() {
            let t = ((n * j + i) as u64).to_be_bytes();
            for k in 0..8 {
                b[k] ^= t[k];
            }
            let r = &mut out[8 * (i - 1)..8 * i];
            b[8..].copy_from_slice(r);
            c.decrypt_block(&mut b);
            r.copy_from_slice(&b[8..]);
        }
    }
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    a
}

/// RFC 5649 §4.1 wrapping: `aiv` ‖ 32-bit message length, zero padding to
/// a multiple of 8, one AES block for a single semiblock, W otherwise.
pub(super) fn kwp_wrap<C: Aes>(c: &C, aiv: [u8; 4], plain: &[u8], out: &mut [u8]) -> Result<usize> {
    let mli = u32::try_from(plain.len()).map_err(|_| err(CKR_DATA_LEN_RANGE))?;
    if plain.is_empty() {
        return Err(err(CKR_DATA_LEN_RANGE));
    }
    let mut iv = [0u8; 8];
    iv[..4].copy_from_slice(&aiv);
    iv[4..].copy_from_slice(&mli.to_be_bytes());
    let padded_len = plain.len().div_ceil(8) * 8;
    let mut padded = Zeroizing::new(vec![0u8; padded_len]);
    padded[..plain.len()].copy_from_slice(plain);
    if padded_len == 8 {
        let mut b = Zeroizing::new(Block::default());
        b[..8].copy_from_slice(&iv);
        b[8..].copy_from_slice(&padded);
        c.encrypt_block(&mut b);
        out[..BLOCK].copy_from_slice(&b[..]);
    } else {
        kw_wrap(c, iv, &padded, &mut out[..padded_len + 8]);
    }
    Ok(padded_len + 8)
}

/// RFC 5649 §4.2 unwrapping with the §3 integrity checks (AIV, length
/// indicator range, zero padding); `CKR_ENCRYPTED_DATA_INVALID` if any fails.
pub(super) fn kwp_unwrap<C: Aes>(
    c: &C,
    aiv: [u8; 4],
    wrapped: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    if wrapped.len() < 16 || !wrapped.len().is_multiple_of(8) {
        return Err(err(CKR_ENCRYPTED_DATA_LEN_RANGE));
    }
    let padded_len = wrapped.len() - 8;
    let mut padded = Zeroizing::new(vec![0u8; padded_len]);
    let a = if wrapped.len() == 16 {
        let mut b = Zeroizing::new(Block::default());
        b.copy_from_slice(wrapped);
        c.decrypt_block(&mut b);
        padded.copy_from_slice(&b[8..]);
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        a
    } else {
        kw_unwrap(c, wrapped, &mut padded)
    };
    let mli = u32::from_be_bytes([a[4], a[5], a[6], a[7]]) as usize;
    let mut ok = ct_eq(&a[..4], &aiv);
    ok &= mli + 8 > padded_len && mli <= padded_len;
    if ok {
        ok &= padded[mli..].iter().fold(0u8, |acc, b| acc | b) == 0;
    }
    if !ok {
        return Err(err(CKR_ENCRYPTED_DATA_INVALID));
    }
    out[..mli].copy_from_slice(&padded[..mli]);
    Ok(mli)
}

/// `CKM_AES_KEY_WRAP_PKCS7` (mechanisms spec 3.0 §2.14.5): PKCS #7 padding
/// to a multiple of the 8-byte semiblock (1 to 8 bytes of value `n`), then
/// W of RFC 3394 with `iv`. W needs two semiblocks, so the data is at least
/// 8 bytes (`CKR_DATA_LEN_RANGE` otherwise).
pub(super) fn pkcs7_wrap<C: Aes>(
    c: &C,
    iv: [u8; 8],
    plain: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    if plain.len() < 8 {
        return Err(err(CKR_DATA_LEN_RANGE));
    }
    let pad = 8 - plain.len() % 8;
    let padded_len = plain.len() + pad;
    let mut padded = Zeroizing::new(vec![pad as u8; padded_len]);
    padded[..plain.len()].copy_from_slice(plain);
    kw_wrap(c, iv, &padded, &mut out[..padded_len + 8]);
    Ok(padded_len + 8)
}

/// Inverse of [`pkcs7_wrap`]: W⁻¹, the IV check and the padding check,
/// together (`CKR_ENCRYPTED_DATA_INVALID` without saying which failed).
pub(super) fn pkcs7_unwrap<C: Aes>(
    c: &C,
    iv: [u8; 8],
    wrapped: &[u8],
    out: &mut [u8],
) -> Result<usize> {
    if wrapped.len() < 24 || !wrapped.len().is_multiple_of(8) {
        return Err(err(CKR_ENCRYPTED_DATA_LEN_RANGE));
    }
    let padded_len = wrapped.len() - 8;
    let mut padded = Zeroizing::new(vec![0u8; padded_len]);
    let a = kw_unwrap(c, wrapped, &mut padded);
    let pad = padded[padded_len - 1];
    let mut ok = ct_eq(&a, &iv) & (1..=8).contains(&pad);
    // Every one of the last 8 bytes that is padding must equal `pad`.
    for (i, b) in padded[padded_len - 8..].iter().enumerate() {
        let in_pad = 8 - i <= pad as usize;
        ok &= !in_pad | (*b == pad);
    }
    if !ok {
        return Err(err(CKR_ENCRYPTED_DATA_INVALID));
    }
    let n = padded_len - pad as usize;
    out[..n].copy_from_slice(&padded[..n]);
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::super::AesCipher;
    use super::super::tests::{K128, key, run};
    use super::*;
    use crate::mechanisms::test_util::{hex, unhex};
    use crate::mechanisms::{CipherOperation, Direction, Mechanism, Param};
    use aes::cipher::KeyInit;

    /// RFC 3394 §4.1 and §4.6, and agreement with the aes-kw crate.
    #[test]
    fn key_wrap_known_answers_and_crate_agreement() {
        let mech = Mechanism::plain(CKM_AES_KEY_WRAP);
        let k = key("000102030405060708090a0b0c0d0e0f");
        let data = unhex("00112233445566778899aabbccddeeff");
        let want = "1fa68b0a8112b447aef34bd8fb5a7b829d3e862371d2cfe5";
        assert_eq!(
            hex(&run(&mech, &k, Direction::Encrypt, &data).unwrap()),
            want
        );
        assert_eq!(
            run(&mech, &k, Direction::Decrypt, &unhex(want)).unwrap(),
            data
        );
        let mut bad = unhex(want);
        bad[3] ^= 4;
        assert_eq!(
            run(&mech, &k, Direction::Decrypt, &bad).unwrap_err().rv(),
            CKR_ENCRYPTED_DATA_INVALID
        );
        assert_eq!(
            run(&mech, &k, Direction::Encrypt, &data[..8])
                .unwrap_err()
                .rv(),
            CKR_DATA_LEN_RANGE
        );
        let k256 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        let data = unhex("00112233445566778899aabbccddeeff000102030405060708090a0b0c0d0e0f");
        assert_eq!(
            hex(&run(&mech, &key(k256), Direction::Encrypt, &data).unwrap()),
            "28c9f404c4b810f4cbccb35cfb87f8263f5786e2d80ed326cbc7f0e71a99f43bfb988b9b7a02dd21"
        );
        let kw = aes_kw::KwAes256::new_from_slice(&unhex(k256)).unwrap();
        let kwp = aes_kw::KwpAes256::new_from_slice(&unhex(k256)).unwrap();
        let pad = Mechanism::plain(CKM_AES_KEY_WRAP_PAD);
        for len in 1..=72usize {
            let data: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(31)).collect();
            let mut buf = vec![0u8; len + 16];
            if len >= 16 && len % 8 == 0 {
                let theirs = kw.wrap_key(&data, &mut buf).unwrap().to_vec();
                let ours = run(&mech, &key(k256), Direction::Encrypt, &data).unwrap();
                assert_eq!(ours, theirs);
            }
            let theirs = kwp.wrap_key(&data, &mut buf).unwrap().to_vec();
            let ours = run(&pad, &key(k256), Direction::Encrypt, &data).unwrap();
            assert_eq!(ours, theirs, "KWP length {len}");
            assert_eq!(
                run(&pad, &key(k256), Direction::Decrypt, &ours).unwrap(),
                data
            );
        }
    }

    /// A caller-supplied IV must match on unwrap (RFC 3394 §2.2.3).
    #[test]
    fn key_wrap_with_explicit_ivs() {
        let k = key(K128);
        let data = [0x11u8; 24];
        let iv = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let with = |iv: &'static [u8], ty| Mechanism {
            ty,
            param: Param::Bytes(iv),
        };
        let explicit = with(&[1, 2, 3, 4, 5, 6, 7, 8], CKM_AES_KEY_WRAP);
        let default = with(&KW_IV, CKM_AES_KEY_WRAP);
        let wrapped = run(&explicit, &k, Direction::Encrypt, &data).unwrap();
        assert_eq!(
            run(&explicit, &k, Direction::Decrypt, &wrapped).unwrap(),
            data
        );
        assert_eq!(
            run(&default, &k, Direction::Decrypt, &wrapped)
                .unwrap_err()
                .rv(),
            CKR_ENCRYPTED_DATA_INVALID
        );
        assert_eq!(
            run(&default, &k, Direction::Encrypt, &data).unwrap(),
            run(
                &Mechanism::plain(CKM_AES_KEY_WRAP),
                &k,
                Direction::Encrypt,
                &data
            )
            .unwrap()
        );
        assert_ne!(wrapped[..8], iv);
        let pad = with(&[9, 9, 9, 9], CKM_AES_KEY_WRAP_PAD);
        let wrapped = run(&pad, &k, Direction::Encrypt, b"seven!!").unwrap();
        assert_eq!(
            run(&pad, &k, Direction::Decrypt, &wrapped).unwrap(),
            b"seven!!"
        );
        assert_eq!(
            run(
                &Mechanism::plain(CKM_AES_KEY_WRAP_PAD),
                &k,
                Direction::Decrypt,
                &wrapped
            )
            .unwrap_err()
            .rv(),
            CKR_ENCRYPTED_DATA_INVALID
        );
        for bad in [
            with(&[1; 7], CKM_AES_KEY_WRAP),
            with(&[1; 8], CKM_AES_KEY_WRAP_PAD),
        ] {
            assert_eq!(
                AesCipher::new(&bad, k.clone(), Direction::Encrypt)
                    .err()
                    .unwrap()
                    .rv(),
                CKR_MECHANISM_PARAM_INVALID
            );
        }
    }

    /// RFC 5649 §6 examples.
    #[test]
    fn key_wrap_pad_known_answers() {
        let k = key("5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8");
        let pad = Mechanism::plain(CKM_AES_KEY_WRAP_PAD);
        let cases = [
            (
                "c37b7e6492584340bed12207808941155068f738",
                "138bdeaa9b8fa7fc61f97742e72248ee5ae6ae5360d1ae6a5f54f373fa543b6a",
            ),
            ("466f7250617369", "afbeb0f07dfbf5419200f2ccb50bb24f"),
        ];
        for (plain, wrapped) in cases {
            let plain = unhex(plain);
            assert_eq!(
                hex(&run(&pad, &k, Direction::Encrypt, &plain).unwrap()),
                wrapped
            );
            let mut wrapped = unhex(wrapped);
            assert_eq!(run(&pad, &k, Direction::Decrypt, &wrapped).unwrap(), plain);
            wrapped[0] ^= 0x80;
            assert_eq!(
                run(&pad, &k, Direction::Decrypt, &wrapped)
                    .unwrap_err()
                    .rv(),
                CKR_ENCRYPTED_DATA_INVALID
            );
        }
        let mut op = AesCipher::new(&pad, k, Direction::Encrypt).unwrap();
        assert_eq!(
            op.update(b"x", &mut []).unwrap_err().rv(),
            CKR_FUNCTION_NOT_SUPPORTED
        );
    }
}
