//! Result checks shared by the operation families: in-process MAC references,
//! decrypt-and-compare of ciphertexts, expected output lengths, and the sampling
//! of checks that cost a PKCS#11 call during the run.
//!
//! Checks that are a comparison in memory (digests, MACs with a known key,
//! deterministic signatures, decryptions) run on every result. Checks that need
//! another PKCS#11 call (decrypting a ciphertext, verifying a randomized
//! signature) run on every prepared output and on a sample of the run's results:
//! see [`Sampler`].

use std::time::{Duration, Instant};

use cryptoki_sys::*;

use super::alg::AesMode;
use super::alg::CipherAlg;
use super::alg::MacAlg;
use super::failure::Failure;
use super::failure::written;
use super::keyset::KeyHandles;
use super::op::Prep;
use crate::token::ckr::ckr_name;
use crate::token::raw::{Mech, RawModule};

/// Results always checked at the start of a worker (warmup included).
pub const SAMPLE_FIRST: u64 = 8;
/// After those, at most every this many-th result is checked…
pub const SAMPLE_EVERY: u64 = 64;
/// …and only while the time spent on sampled checks stays below this share of
/// the time since the worker's first check.
pub const SAMPLE_BUDGET: f64 = 0.01;

/// Decides which results get a check that costs another PKCS#11 call: the first
/// [`SAMPLE_FIRST`], then every [`SAMPLE_EVERY`]-th while the checks have taken
/// less than [`SAMPLE_BUDGET`] of the worker's time. Checks run outside the
/// timed region; the budget keeps their effect on ops/s (which is measured over
/// the wall clock) within about 1 %.
#[derive(Debug, Default)]
pub struct Sampler {
    n: u64,
    start: Option<Instant>,
    spent: Duration,
}

impl Sampler {
    /// Run `f` if this result is sampled.
    pub fn sample<T>(&mut self, f: impl FnOnce() -> T) -> Option<T> {
        self.count();
        if !self.on_count() {
            return None;
        }
        let now = Instant::now();
        if !self.within_budget(now) {
            return None;
        }
        let r = f();
        self.spent += now.elapsed();
        Some(r)
    }

    fn count(&mut self) {
        self.n += 1;
    }

    fn on_count(&self) -> bool {
        self.n <= SAMPLE_FIRST || self.n.is_multiple_of(SAMPLE_EVERY)
    }

    fn within_budget(&mut self, now: Instant) -> bool {
        let start = *self.start.get_or_insert(now);
        self.n <= SAMPLE_FIRST
            || self.spent.as_secs_f64() <= SAMPLE_BUDGET * (now - start).as_secs_f64()
    }
}

/// A check failure naming the check.
pub fn failed(what: impl Into<String>) -> Failure {
    Failure::Check(what.into())
}

/// Fail unless `got == want` (an output length).
pub fn length(what: &str, got: usize, want: usize) -> Result<(), Failure> {
    if got == want {
        Ok(())
    } else {
        Err(failed(format!("{what} length {got}, expected {want}")))
    }
}

/// Decrypt `ct` in session `s` and compare with `plain`.
pub fn decrypts_to(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    mech: &mut Mech,
    key: CK_OBJECT_HANDLE,
    ct: &[u8],
    plain: &[u8],
    what: &str,
) -> Result<(), Failure> {
    let rv = raw.decrypt_init(s, mech, key);
    if rv != CKR_OK {
        return Err(failed(format!(
            "decrypting the {what}: C_DecryptInit returned {}",
            ckr_name(rv)
        )));
    }
    let mut out = vec![0u8; ct.len() + 64];
    let (rv, n) = raw.decrypt(s, ct, &mut out);
    let got = match written(raw, rv, &out, n) {
        Ok(got) => got,
        Err(Failure::Rv(rv)) => {
            return Err(failed(format!("{what} does not decrypt: {}", ckr_name(rv))));
        }
        Err(f) => return Err(f),
    };
    if got != plain {
        return Err(failed(format!("{what} decrypts to other data")));
    }
    Ok(())
}

/// The value of the secret key `key` of `k`: known from its making, or read
/// back (`CKA_VALUE`) when the token allows (an existing key that is not
/// sensitive).
pub fn key_value(p: &Prep<'_>, k: &KeyHandles, key: CK_OBJECT_HANDLE) -> Option<Vec<u8>> {
    k.value.clone().or_else(|| {
        p.raw
            .attribute(p.setup, key, CKA_VALUE)
            .ok()
            .filter(|v| !v.is_empty())
    })
}

/// The MAC of `data` under the key value `key`, computed in-process; `None`
/// when the key length does not fit the algorithm (an AES key of another size).
pub fn mac_reference(m: MacAlg, key: &[u8], data: &[u8]) -> Option<Vec<u8>> {
    use cmac::{KeyInit, Mac};
    fn run<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> Option<Vec<u8>> {
        let mut mac = <M as KeyInit>::new_from_slice(key).ok()?;
        mac.update(data);
        Some(mac.finalize().into_bytes().to_vec())
    }
    match m {
        MacAlg::HmacSha256 => run::<hmac::Hmac<sha2::Sha256>>(key, data),
        MacAlg::HmacSha512 => run::<hmac::Hmac<sha2::Sha512>>(key, data),
        MacAlg::HmacSha3_256 => run::<hmac::Hmac<sha3::Sha3_256>>(key, data),
        MacAlg::AesCmac => match key.len() {
            16 => run::<cmac::Cmac<aes::Aes128>>(key, data),
            24 => run::<cmac::Cmac<aes::Aes192>>(key, data),
            32 => run::<cmac::Cmac<aes::Aes256>>(key, data),
            _ => None,
        },
    }
}

/// The ciphertext of `plain` under the key value `key` and `iv` (see
/// [`CipherAlg::iv`]), computed in-process: AES-GCM (96-bit IV, no AAD,
/// 128-bit tag), AES-CCM (96-bit nonce, no AAD, 128-bit tag; SP 800-38C),
/// CBC and ECB without padding, CBC-PAD (PKCS#7), CTR (32-bit counter in the
/// block's last 4 bytes), CTS (CBC-CS1, SP 800-38A Addendum), and
/// ChaCha20-Poly1305 (RFC 8439, no AAD); `None` for other ciphers, key
/// sizes, or a plaintext that a mode without padding cannot take.
pub fn aes_reference(c: CipherAlg, key: &[u8], iv: &[u8], plain: &[u8]) -> Option<Vec<u8>> {
    use aes::cipher::consts::{U12, U16};
    use aes::cipher::{BlockCipherEncrypt, BlockSizeUser, KeyInit};
    type BlockFn = Box<dyn Fn(&mut [u8; 16])>;
    fn gcm<C: aes_gcm::aead::Aead + KeyInit>(
        key: &[u8],
        iv: &[u8],
        plain: &[u8],
    ) -> Option<Vec<u8>> {
        C::new_from_slice(key)
            .ok()?
            .encrypt(iv.try_into().ok()?, plain)
            .ok()
    }
    fn encryptor<C>(key: &[u8]) -> Option<BlockFn>
    where
        C: BlockCipherEncrypt + BlockSizeUser<BlockSize = U16> + KeyInit + 'static,
    {
        let cipher = C::new_from_slice(key).ok()?;
        Some(Box::new(move |b: &mut [u8; 16]| {
            let mut blk = aes::cipher::Block::<C>::default();
            blk.copy_from_slice(b);
            cipher.encrypt_block(&mut blk);
            b.copy_from_slice(&blk);
        }))
    }
    if matches!(c, CipherAlg::ChaCha20Poly1305) {
        use chacha20poly1305::aead::{Aead, KeyInit};
        return chacha20poly1305::ChaCha20Poly1305::new_from_slice(key)
            .ok()?
            .encrypt(iv.try_into().ok()?, plain)
            .ok();
    }
    let CipherAlg::Aes(mode, _) = c else {
        return None;
    };
    if mode == AesMode::Gcm {
        return match key.len() {
            16 => gcm::<aes_gcm::Aes128Gcm>(key, iv, plain),
            24 => gcm::<aes_gcm::AesGcm<aes::Aes192, U12>>(key, iv, plain),
            32 => gcm::<aes_gcm::Aes256Gcm>(key, iv, plain),
            _ => None,
        };
    }
    let e = match key.len() {
        16 => encryptor::<aes::Aes128>(key)?,
        24 => encryptor::<aes::Aes192>(key)?,
        32 => encryptor::<aes::Aes256>(key)?,
        _ => return None,
    };
    match mode {
        AesMode::Ccm => ccm(&*e, iv, plain),
        AesMode::Cts => cts_cs1(&*e, iv, plain),
        _ => block_mode(mode, &*e, iv, plain),
    }
}

/// AES-CCM (SP 800-38C §6.1, RFC 3610) with no associated data and a
/// 16-byte tag over the block encryption `e`: CBC-MAC over B0 and the
/// zero-padded plaintext, CTR from counter 1, the tag masked with S0.
fn ccm(e: &dyn Fn(&mut [u8; 16]), nonce: &[u8], plain: &[u8]) -> Option<Vec<u8>> {
    const TAG: usize = 16;
    let n = nonce.len();
    if !(7..=13).contains(&n) {
        return None;
    }
    let q = 15 - n; // bytes of the length field and of the counter
    if q < 8 && plain.len() >> (8 * q) != 0 {
        return None;
    }
    let block = |flags: u8, count: usize| {
        let mut b = [0u8; 16];
        b[0] = flags;
        b[1..1 + n].copy_from_slice(nonce);
        let count = (count as u64).to_be_bytes();
        b[16 - q..].copy_from_slice(&count[8 - q..]);
        b
    };
    let mut x = block((((TAG - 2) / 2) << 3 | (q - 1)) as u8, plain.len());
    e(&mut x);
    for chunk in plain.chunks(16) {
        for (a, b) in x.iter_mut().zip(chunk) {
            *a ^= b;
        }
        e(&mut x);
    }
    let mut out = plain.to_vec();
    for (i, chunk) in out.chunks_mut(16).enumerate() {
        let mut s = block((q - 1) as u8, i + 1);
        e(&mut s);
        for (a, b) in chunk.iter_mut().zip(s) {
            *a ^= b;
        }
    }
    let mut s0 = block((q - 1) as u8, 0);
    e(&mut s0);
    out.extend(x.iter().zip(s0).map(|(a, b)| a ^ b));
    Some(out)
}

/// CBC-CS1 ciphertext stealing (SP 800-38A Addendum; `CKM_AES_CTS`): CBC
/// over the zero-padded plaintext, the next-to-last ciphertext block cut
/// to the length of the last plaintext piece; plain CBC for whole blocks.
/// At least one block of plaintext.
fn cts_cs1(e: &dyn Fn(&mut [u8; 16]), iv: &[u8], plain: &[u8]) -> Option<Vec<u8>> {
    if plain.len() < 16 {
        return None;
    }
    let d = plain.len() % 16;
    let mut padded = plain.to_vec();
    padded.resize(plain.len().div_ceil(16) * 16, 0);
    let mut ct = block_mode(AesMode::Cbc, e, iv, &padded)?;
    if d != 0 {
        let last = ct.len() - 16;
        ct.drain(last - 16 + d..last);
    }
    Some(ct)
}

/// ECB, CBC, CBC-PAD or CTR over the block encryption `e`.
fn block_mode(
    mode: AesMode,
    e: &dyn Fn(&mut [u8; 16]),
    iv: &[u8],
    plain: &[u8],
) -> Option<Vec<u8>> {
    let mut data = plain.to_vec();
    if mode == AesMode::CbcPad {
        let pad = 16 - data.len() % 16;
        data.extend(std::iter::repeat_n(pad as u8, pad));
    }
    match mode {
        AesMode::Ecb | AesMode::Cbc | AesMode::CbcPad => {
            if !data.len().is_multiple_of(16) {
                return None;
            }
            let mut prev: [u8; 16] = match mode {
                AesMode::Ecb => [0; 16],
                _ => iv.try_into().ok()?,
            };
            for chunk in data.chunks_mut(16) {
                let mut b = [0u8; 16];
                for (i, x) in b.iter_mut().enumerate() {
                    *x = chunk[i] ^ prev[i];
                }
                e(&mut b);
                if mode != AesMode::Ecb {
                    prev = b;
                }
                chunk.copy_from_slice(&b);
            }
        }
        AesMode::Ctr => {
            let mut cb: [u8; 16] = iv.try_into().ok()?;
            for chunk in data.chunks_mut(16) {
                let mut ks = cb;
                e(&mut ks);
                for (x, k) in chunk.iter_mut().zip(ks) {
                    *x ^= k;
                }
                let mut ctr = [0u8; 4];
                ctr.copy_from_slice(&cb[12..]);
                cb[12..].copy_from_slice(&u32::from_be_bytes(ctr).wrapping_add(1).to_be_bytes());
            }
        }
        AesMode::Gcm | AesMode::Ccm | AesMode::Cts => return None,
    }
    Some(data)
}

/// After a timed call made key `h` (a derived or unwrapped secret): on a
/// sample of the calls, its `CKA_VALUE` must be `want` (`what` names the
/// key); `h` is destroyed either way, and a failure to destroy it fails too.
pub fn made_key(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    h: CK_OBJECT_HANDLE,
    want: &[u8],
    sampler: &mut Sampler,
    what: &str,
) -> Result<(), Failure> {
    sampled_then_destroyed(raw, s, h, sampler, || {
        match raw.attribute(s, h, CKA_VALUE) {
            Ok(v) if v == want => Ok(()),
            Ok(v) if v.len() != want.len() => Err(failed(format!(
                "{what} length {}, expected {}",
                v.len(),
                want.len()
            ))),
            Ok(_) => Err(failed(format!("{what} has another value"))),
            Err(rv) => Err(failed(format!(
                "{what} cannot be read back: {}",
                ckr_name(rv)
            ))),
        }
    })
}

/// After a timed call made key `h`: run the check `f` on a sample of the
/// calls, then destroy `h` either way (a failure to destroy it fails too).
pub fn sampled_then_destroyed(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    h: CK_OBJECT_HANDLE,
    sampler: &mut Sampler,
    f: impl FnOnce() -> Result<(), Failure>,
) -> Result<(), Failure> {
    let checked = sampler.sample(f).unwrap_or(Ok(()));
    let rv = raw.destroy_object(s, h);
    if rv != CKR_OK {
        return Err(Failure::Rv(rv));
    }
    checked
}

/// A copy of `v` with one bit flipped in the middle (a corrupted MAC or
/// signature that the token must reject).
pub fn corrupted(v: &[u8]) -> Vec<u8> {
    let mut bad = v.to_vec();
    if let Some(b) = bad.get_mut(v.len() / 2) {
        *b ^= 0x01;
    }
    bad
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_references_match_published_vectors() {
        // RFC 4231 test case 2.
        let h =
            mac_reference(MacAlg::HmacSha256, b"Jefe", b"what do ya want for nothing?").unwrap();
        assert_eq!(
            h[..8],
            [0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e],
            "HMAC-SHA256"
        );
        let h =
            mac_reference(MacAlg::HmacSha512, b"Jefe", b"what do ya want for nothing?").unwrap();
        assert_eq!(h.len(), 64);
        assert_eq!(h[..4], [0x16, 0x4b, 0x7a, 0x7b], "HMAC-SHA512");
        // Wycheproof hmac_sha3_256_test.json tcId 1 (empty message).
        let k: Vec<u8> = (0..32)
            .map(|i| {
                u8::from_str_radix(
                    &"1e225cafb90339bba1b24076d4206c3e79c355805d851682bc818baa4f5a7779"
                        [2 * i..2 * i + 2],
                    16,
                )
                .unwrap()
            })
            .collect();
        let h = mac_reference(MacAlg::HmacSha3_256, &k, b"").unwrap();
        assert_eq!(h[..4], [0xa3, 0xc5, 0x84, 0x70], "HMAC-SHA3-256");
        // RFC 4493 example 1 (AES-128, empty message).
        let k = [
            0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf,
            0x4f, 0x3c,
        ];
        let c = mac_reference(MacAlg::AesCmac, &k, b"").unwrap();
        assert_eq!(c[..4], [0xbb, 0x1d, 0x69, 0x29], "AES-CMAC");
        assert_eq!(
            mac_reference(MacAlg::AesCmac, &[0u8; 32], b"x")
                .unwrap()
                .len(),
            16
        );
        assert!(mac_reference(MacAlg::AesCmac, &[0u8; 20], b"x").is_none());
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn aes_references_match_published_vectors() {
        // SP 800-38A F.2.5 (CBC-AES256), first block.
        let key = hex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4");
        let iv = hex("000102030405060708090a0b0c0d0e0f");
        let cbc = CipherAlg::Aes(AesMode::Cbc, 32);
        let ct = aes_reference(cbc, &key, &iv, &hex("6bc1bee22e409f96e93d7e117393172a"));
        assert_eq!(ct, Some(hex("f58c4c04d6e5f1ba779eabfb5f7bfbd6")));
        assert!(aes_reference(cbc, &key, &iv, &[0; 15]).is_none());
        // GCM spec test case 14 (AES-256, zero key and IV, one zero block).
        let gcm = CipherAlg::Aes(AesMode::Gcm, 32);
        let ct = aes_reference(gcm, &[0; 32], &[0; 12], &[0; 16]);
        assert_eq!(
            ct,
            Some(hex(
                "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919"
            ))
        );
        assert!(aes_reference(CipherAlg::RsaOaepSha1(2048), &key, &iv, &[0; 16]).is_none());
    }

    /// CCM, CTS and ChaCha20-Poly1305 with the parameters the ops use
    /// (12-byte nonce, 16-byte tag, no AAD; CBC-CS1) on 37 bytes, so the
    /// partial last block is covered. Expected values from implementations
    /// nobody here wrote: python `cryptography` 48 (`AESCCM` with
    /// `tag_length=16`, `ChaCha20Poly1305`) and the OpenSSL 3.0 CLI
    /// (`openssl enc -aes-256-cbc-cts`, whose default mode is CS1).
    #[test]
    fn aead_and_cts_references_match_other_implementations() {
        let key: Vec<u8> = (0..32).collect();
        let nonce: Vec<u8> = (100..112).collect();
        let plain: Vec<u8> = (0..37).collect();
        let ccm = aes_reference(CipherAlg::Aes(AesMode::Ccm, 32), &key, &nonce, &plain);
        assert_eq!(
            ccm,
            Some(hex(
                "31e1aa7872a8def41ab8943b9d6c832ab3e3d7ab8ff3b90e0e9dd04fddf951964d9f0ae9ac36b6d637d5e3d0064b0654bbf49a8496"
            ))
        );
        let chacha = aes_reference(CipherAlg::ChaCha20Poly1305, &key, &nonce, &plain);
        assert_eq!(
            chacha,
            Some(hex(
                "3410b9c99ca07055f3d71f74fe84d69c60d780278b45fdbade26eca9e62fd2ecea9890c38b28fa9e2b77b72394371f3176a9993a0a"
            ))
        );
        let iv: Vec<u8> = (200..216).collect();
        let cts = aes_reference(CipherAlg::Aes(AesMode::Cts, 32), &key, &iv, &plain);
        assert_eq!(
            cts,
            Some(hex(
                "e4252a1f86d3de478087fed2c72b08d8a2c93e5df6ceb8adb00ce1e4800f47dedc0f5babc7"
            ))
        );
        // Whole blocks: CS1 is CBC.
        let cbc = aes_reference(CipherAlg::Aes(AesMode::Cbc, 32), &key, &iv, &plain[..32]);
        let cts = aes_reference(CipherAlg::Aes(AesMode::Cts, 32), &key, &iv, &plain[..32]);
        assert_eq!(cts, cbc);
        assert!(aes_reference(CipherAlg::Aes(AesMode::Cts, 32), &key, &iv, &[0; 15]).is_none());
    }

    #[test]
    fn aes_mode_references_match_published_vectors() {
        let aes = |m| CipherAlg::Aes(m, 0);
        let k128 = hex("2b7e151628aed2a6abf7158809cf4f3c");
        let k256 = hex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4");
        let p1 = hex("6bc1bee22e409f96e93d7e117393172a");
        let p2 = hex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51");
        // SP 800-38A F.1.1 and F.1.5 (ECB), first block.
        assert_eq!(
            aes_reference(aes(AesMode::Ecb), &k128, &[], &p1),
            Some(hex("3ad77bb40d7a3660a89ecaf32466ef97"))
        );
        assert_eq!(
            aes_reference(aes(AesMode::Ecb), &k256, &[], &p1),
            Some(hex("f3eed1bdb5d2a03c064b5a7e3db181f8"))
        );
        assert!(aes_reference(aes(AesMode::Ecb), &k128, &[], &p2[..17]).is_none());
        // SP 800-38A F.5.1 (CTR-AES128), two blocks: the counter carries
        // from 0xff into the next byte.
        let ctr = hex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
        assert_eq!(
            aes_reference(aes(AesMode::Ctr), &k128, &ctr, &p2),
            Some(hex(
                "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff"
            ))
        );
        // A partial block is the key stream's prefix.
        assert_eq!(
            aes_reference(aes(AesMode::Ctr), &k128, &ctr, &p2[..20]).unwrap(),
            hex("874d6191b620e3261bef6864990db6ce9806f66b")
        );
        // CBC-PAD: the CBC ciphertext of the data, then a block of padding.
        let iv = hex("000102030405060708090a0b0c0d0e0f");
        let padded = aes_reference(aes(AesMode::CbcPad), &k256, &iv, &p1).unwrap();
        assert_eq!(padded.len(), 32);
        assert_eq!(padded[..16], hex("f58c4c04d6e5f1ba779eabfb5f7bfbd6"));
        let mut manual = p1.clone();
        manual.extend([16u8; 16]);
        assert_eq!(
            aes_reference(aes(AesMode::Cbc), &k256, &iv, &manual),
            Some(padded)
        );
        assert_eq!(
            aes_reference(aes(AesMode::CbcPad), &k256, &iv, &[1; 5])
                .unwrap()
                .len(),
            16
        );
        // AES-192 (SP 800-38A F.1.3, ECB) and AES-192-GCM exist.
        let k192 = hex("8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b");
        assert_eq!(
            aes_reference(aes(AesMode::Ecb), &k192, &[], &p1),
            Some(hex("bd334f1d6e45f25ff712a214571fa5cc"))
        );
        let g192 = aes_reference(aes(AesMode::Gcm), &k192, &[0; 12], &p1).unwrap();
        assert_eq!(g192.len(), 32);
        assert_ne!(
            g192,
            aes_reference(aes(AesMode::Gcm), &k128, &[0; 12], &p1).unwrap()
        );
        assert!(aes_reference(aes(AesMode::Gcm), &[0; 20], &[0; 12], &p1).is_none());
    }

    #[test]
    fn lengths_and_corruption() {
        assert!(length("MAC", 32, 32).is_ok());
        assert_eq!(
            length("signature", 63, 64).unwrap_err().name(),
            "CHECK_FAILED(signature length 63, expected 64)"
        );
        assert_eq!(corrupted(&[0, 0, 0]), vec![0, 1, 0]);
        assert!(corrupted(&[]).is_empty());
    }

    #[test]
    fn the_sampler_checks_the_first_results_then_every_64th_within_budget() {
        let mut s = Sampler::default();
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut hits = Vec::new();
        for i in 1..=200u64 {
            s.count();
            // Each check takes 10 µs; one result per millisecond.
            if s.on_count() && s.within_budget(ms(i)) {
                s.spent += Duration::from_micros(10);
                hits.push(i);
            }
        }
        assert_eq!(hits, [1, 2, 3, 4, 5, 6, 7, 8, 64, 128, 192]);
        // Checks that took 100 ms by result 64 (at 64 ms) are over the 1 % budget.
        let mut s = Sampler::default();
        for i in 1..=64u64 {
            s.count();
            if s.on_count() && s.within_budget(ms(i)) {
                s.spent += Duration::from_millis(100 / 8);
                assert!(i <= 8, "result {i} checked over budget");
            }
        }
        // The real clock path samples the first results.
        let mut s = Sampler::default();
        assert_eq!(s.sample(|| 7), Some(7));
    }
}
