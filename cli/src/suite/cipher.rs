//! Encryption and decryption: AES (ECB, CBC, CBC-PAD, CTR, GCM at 128, 192
//! and 256 bits; CCM and CTS encryption at 256), ChaCha20-Poly1305
//! encryption, Triple-DES (ECB, CBC), RSA-OAEP.
//!
//! GCM, CCM and ChaCha20-Poly1305 encryptions each use a distinct IV
//! (nonce): a random per-worker prefix and a counter, written before the
//! timer starts.
//!
//! Checks: every ciphertext has its length checked (GCM: plaintext + 16-byte
//! tag; CBC without padding: the plaintext length, a multiple of 16; RSA-OAEP:
//! the modulus length). Encrypt ops decrypt a ciphertext made while preparing
//! and then a sample of the run's ciphertexts (see [`check::Sampler`]) and
//! compare with the plaintext; RSA-OAEP ciphertexts are decrypted when the
//! private key is at hand. Decrypt ops check the prepared ciphertext's length,
//! decrypt it once while preparing, and compare every decryption with the
//! plaintext. When the AES key value is known, the prepared ciphertext of both
//! must also equal the one computed in-process (aes-gcm, aes).

use std::sync::Arc;

use cryptoki_sys::*;

use super::alg::AES_KEY_BYTES;
use super::alg::AesMode;
use super::alg::CipherAlg;
use super::alg::KeySpec;
use super::check;
use super::failure::Failure;
use super::failure::ck;
use super::failure::written;
use super::op::DataSpec;
use super::op::OpDef;
use super::op::OpKind;
use super::op::Prep;
use super::op::Worker;
use super::op::test_data;
use crate::token::random::random_bytes;
use crate::token::raw::KeyCall;
use crate::token::raw::{Mech, RawModule};

impl AesMode {
    /// The id part (`aes128-<part>-encrypt`).
    pub fn id(&self) -> &'static str {
        match self {
            AesMode::Ecb => "ecb",
            AesMode::Cbc => "cbc",
            AesMode::CbcPad => "cbc-pad",
            AesMode::Ctr => "ctr",
            AesMode::Gcm => "gcm",
            AesMode::Ccm => "ccm",
            AesMode::Cts => "cts",
        }
    }

    fn title(&self) -> &'static str {
        match self {
            AesMode::Ecb => "ECB",
            AesMode::Cbc => "CBC",
            AesMode::CbcPad => "CBC-PAD",
            AesMode::Ctr => "CTR",
            AesMode::Gcm => "GCM",
            AesMode::Ccm => "CCM",
            AesMode::Cts => "CTS",
        }
    }

    fn mechanism(&self) -> CK_MECHANISM_TYPE {
        match self {
            AesMode::Ecb => CKM_AES_ECB,
            AesMode::Cbc => CKM_AES_CBC,
            AesMode::CbcPad => CKM_AES_CBC_PAD,
            AesMode::Ctr => CKM_AES_CTR,
            AesMode::Gcm => CKM_AES_GCM,
            AesMode::Ccm => CKM_AES_CCM,
            AesMode::Cts => CKM_AES_CTS,
        }
    }
}

/// Bits of the counter in the AES-CTR counter block (its last 4 bytes).
pub const CTR_COUNTER_BITS: CK_ULONG = 32;

impl CipherAlg {
    fn stem(&self) -> String {
        match self {
            CipherAlg::Aes(m, n) => format!("aes{}-{}", n * 8, m.id()),
            CipherAlg::Des3(m) => format!("des3-{}", m.id()),
            CipherAlg::RsaOaepSha1(b) => format!("rsa{b}-oaep-sha1"),
            CipherAlg::RsaOaepSha256(b) => format!("rsa{b}-oaep-sha256"),
            CipherAlg::ChaCha20Poly1305 => "chacha20-poly1305".into(),
        }
    }

    fn title(&self) -> String {
        match self {
            CipherAlg::Aes(m, n) => format!("AES-{}-{}", n * 8, m.title()),
            CipherAlg::Des3(m) => format!("3DES-{}", m.title()),
            CipherAlg::RsaOaepSha1(b) => format!("RSA-{b} OAEP SHA-1"),
            CipherAlg::RsaOaepSha256(b) => format!("RSA-{b} OAEP SHA-256"),
            CipherAlg::ChaCha20Poly1305 => "ChaCha20-Poly1305".into(),
        }
    }

    /// The timed mechanism.
    pub fn mechanism(&self) -> CK_MECHANISM_TYPE {
        match self {
            CipherAlg::Aes(m, _) => m.mechanism(),
            CipherAlg::Des3(AesMode::Cbc) => CKM_DES3_CBC,
            CipherAlg::Des3(_) => CKM_DES3_ECB,
            CipherAlg::RsaOaepSha1(_) | CipherAlg::RsaOaepSha256(_) => CKM_RSA_PKCS_OAEP,
            CipherAlg::ChaCha20Poly1305 => CKM_CHACHA20_POLY1305,
        }
    }

    /// The key this cipher uses (generated).
    pub fn key(&self) -> KeySpec {
        match self {
            CipherAlg::Aes(_, n) => KeySpec::Aes(*n),
            CipherAlg::Des3(_) => KeySpec::Des3,
            CipherAlg::RsaOaepSha1(b) | CipherAlg::RsaOaepSha256(b) => KeySpec::Rsa(*b),
            CipherAlg::ChaCha20Poly1305 => KeySpec::ChaCha20,
        }
    }

    fn is_aes(&self) -> bool {
        matches!(self, CipherAlg::Aes(..))
    }

    /// Whether the key is a secret key (AES, DES3) rather than an RSA pair.
    fn is_secret(&self) -> bool {
        matches!(
            self,
            CipherAlg::Aes(..) | CipherAlg::Des3(_) | CipherAlg::ChaCha20Poly1305
        )
    }

    /// The IV of encryption number `counter` (GCM, and the CCM and
    /// ChaCha20-Poly1305 nonce: 12 bytes; CBC, CBC-PAD, CTS: 16 bytes; CTR:
    /// the counter block, whose last 32 bits count blocks from 0; empty for
    /// ECB and RSA).
    pub fn iv(&self, prefix: [u8; 4], counter: u64) -> Vec<u8> {
        match self {
            CipherAlg::Aes(AesMode::Gcm | AesMode::Ccm, _) | CipherAlg::ChaCha20Poly1305 => {
                iv12(prefix, counter).to_vec()
            }
            CipherAlg::Aes(AesMode::Cbc | AesMode::CbcPad | AesMode::Cts, _) => {
                iv16(prefix, counter).to_vec()
            }
            // prefix ‖ call counter ‖ 32-bit block counter: the calls'
            // key streams never overlap.
            CipherAlg::Aes(AesMode::Ctr, _) => {
                let mut b = iv12(prefix, counter).to_vec();
                b.extend_from_slice(&[0; 4]);
                b
            }
            // prefix ‖ 32-bit call counter (DES has 8-byte blocks).
            CipherAlg::Des3(AesMode::Cbc) => {
                let mut b = prefix.to_vec();
                b.extend_from_slice(&(counter as u32).to_be_bytes());
                b
            }
            _ => Vec::new(),
        }
    }

    /// The mechanism with the IV of encryption 0, for `len` bytes of
    /// plaintext (CCM announces the length).
    fn mech(&self, iv_prefix: [u8; 4], len: usize) -> Mech {
        self.mech_at(iv_prefix, 0, len)
    }

    /// The mechanism with the IV of encryption number `counter`, for `len`
    /// bytes of plaintext.
    fn mech_at(&self, iv_prefix: [u8; 4], counter: u64, len: usize) -> Mech {
        let iv = self.iv(iv_prefix, counter);
        match self {
            CipherAlg::Aes(AesMode::Gcm, _) => Mech::aes_gcm(iv12(iv_prefix, counter)),
            CipherAlg::Aes(AesMode::Ccm, _) => Mech::aes_ccm(iv12(iv_prefix, counter), len),
            CipherAlg::ChaCha20Poly1305 => Mech::chacha20_poly1305(iv12(iv_prefix, counter)),
            CipherAlg::Aes(AesMode::Cbc | AesMode::CbcPad | AesMode::Cts, _) => {
                Mech::with_iv16(self.mechanism(), iv16(iv_prefix, counter))
            }
            CipherAlg::Aes(AesMode::Ctr, _) => Mech::aes_ctr(
                iv.try_into().expect("a 16-byte counter block"),
                CTR_COUNTER_BITS,
            ),
            CipherAlg::Aes(AesMode::Ecb, _) => Mech::plain(CKM_AES_ECB),
            CipherAlg::Des3(AesMode::Cbc) => Mech::with_bytes(CKM_DES3_CBC, &iv),
            CipherAlg::Des3(_) => Mech::plain(CKM_DES3_ECB),
            CipherAlg::RsaOaepSha1(_) => Mech::rsa_oaep(CKM_SHA_1, CKG_MGF1_SHA1),
            CipherAlg::RsaOaepSha256(_) => Mech::rsa_oaep(CKM_SHA256, CKG_MGF1_SHA256),
        }
    }

    fn data(&self) -> DataSpec {
        match self {
            CipherAlg::Aes(AesMode::Ecb | AesMode::Cbc, _) => DataSpec::Variable {
                default: 1024,
                align: 16,
            },
            CipherAlg::Aes(..) | CipherAlg::ChaCha20Poly1305 => DataSpec::Variable {
                default: 1024,
                align: 1,
            },
            CipherAlg::Des3(_) => DataSpec::Variable {
                default: 1024,
                align: 8,
            },
            _ => DataSpec::Fixed(32),
        }
    }

    fn key_bits(&self) -> Option<u64> {
        match self {
            CipherAlg::RsaOaepSha1(b) | CipherAlg::RsaOaepSha256(b) => Some(*b as u64),
            _ => None,
        }
    }

    /// Ciphertext length for `n` bytes of plaintext (GCM, CCM,
    /// ChaCha20-Poly1305: a 16-byte tag; CBC-PAD: PKCS#7 padding, always at
    /// least one byte).
    pub fn ct_len(&self, n: usize) -> usize {
        match self {
            CipherAlg::Aes(AesMode::Gcm | AesMode::Ccm, _) | CipherAlg::ChaCha20Poly1305 => n + 16,
            CipherAlg::Aes(AesMode::CbcPad, _) => (n / 16 + 1) * 16,
            CipherAlg::Aes(..) | CipherAlg::Des3(_) => n,
            CipherAlg::RsaOaepSha1(b) | CipherAlg::RsaOaepSha256(b) => (*b as usize).div_ceil(8),
        }
    }
}

fn iv12(prefix: [u8; 4], counter: u64) -> [u8; 12] {
    let mut iv = [0u8; 12];
    iv[..4].copy_from_slice(&prefix);
    iv[4..].copy_from_slice(&counter.to_be_bytes());
    iv
}

fn iv16(prefix: [u8; 4], counter: u64) -> [u8; 16] {
    let mut iv = [0u8; 16];
    iv[..4].copy_from_slice(&prefix);
    iv[8..].copy_from_slice(&counter.to_be_bytes());
    iv
}

fn op(c: CipherAlg, encrypt: bool, key: KeySpec) -> OpDef {
    let dir = if encrypt { "encrypt" } else { "decrypt" };
    OpDef {
        id: format!("{}-{dir}", c.stem()),
        title: format!("{} {dir}", c.title()),
        kind: if encrypt {
            OpKind::Encrypt(c)
        } else {
            OpKind::Decrypt(c)
        },
        mechanism: c.mechanism(),
        also_needs: key.gen_mechanism().into_iter().collect(),
        key: Some(key),
        key_bits: c.key_bits(),
        data: c.data(),
    }
}

/// An encrypt op.
pub fn encrypt_op(c: CipherAlg, key: KeySpec) -> OpDef {
    op(c, true, key)
}

/// A decrypt op.
pub fn decrypt_op(c: CipherAlg, key: KeySpec) -> OpDef {
    op(c, false, key)
}

/// Cipher ops of the catalogue: the original ones first (report order),
/// then every other AES mode × key size × direction.
pub fn ops() -> Vec<OpDef> {
    use CipherAlg::*;
    let (gcm, cbc) = (Aes(AesMode::Gcm, 32), Aes(AesMode::Cbc, 32));
    let mut v = vec![
        encrypt_op(RsaOaepSha1(2048), RsaOaepSha1(2048).key()),
        encrypt_op(RsaOaepSha256(2048), RsaOaepSha256(2048).key()),
        decrypt_op(RsaOaepSha256(2048), RsaOaepSha256(2048).key()),
        encrypt_op(gcm, gcm.key()),
        decrypt_op(gcm, gcm.key()),
        encrypt_op(cbc, cbc.key()),
    ];
    for b in [3072, 4096] {
        for c in [RsaOaepSha1(b), RsaOaepSha256(b)] {
            v.push(encrypt_op(c, c.key()));
            v.push(decrypt_op(c, c.key()));
        }
    }
    for n in AES_KEY_BYTES {
        for m in AesMode::ALL {
            let c = Aes(m, n);
            for encrypt in [true, false] {
                let o = op(c, encrypt, c.key());
                if !v.iter().any(|x| x.id == o.id) {
                    v.push(o);
                }
            }
        }
    }
    for m in [AesMode::Ecb, AesMode::Cbc] {
        let c = CipherAlg::Des3(m);
        v.push(encrypt_op(c, c.key()));
        v.push(decrypt_op(c, c.key()));
    }
    // Later: AES-256 CCM and CTS, ChaCha20-Poly1305, encryption only.
    for c in [
        Aes(AesMode::Ccm, 32),
        Aes(AesMode::Cts, 32),
        ChaCha20Poly1305,
    ] {
        v.push(encrypt_op(c, c.key()));
    }
    v
}

fn enc_key(c: CipherAlg, p: &Prep<'_>) -> Result<CK_OBJECT_HANDLE, Failure> {
    let k = p.key()?;
    if c.is_secret() { k.secret } else { k.public }
        .ok_or_else(|| Failure::Check("no encryption key".into()))
}

fn dec_key(c: CipherAlg, p: &Prep<'_>) -> Result<CK_OBJECT_HANDLE, Failure> {
    let k = p.key()?;
    if c.is_secret() { k.secret } else { k.private }
        .ok_or_else(|| Failure::Check("no decryption key".into()))
}

struct EncryptWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    alg: CipherAlg,
    mech: Mech,
    key: CK_OBJECT_HANDLE,
    /// Key to decrypt sampled ciphertexts with (none: length checks only).
    dec_key: Option<CK_OBJECT_HANDLE>,
    data: Vec<u8>,
    out: Vec<u8>,
    len: usize,
    prefix: [u8; 4],
    counter: u64,
    sampler: check::Sampler,
}

impl Worker for EncryptWorker {
    fn before(&mut self) {
        self.counter += 1;
        self.mech.set_iv(&self.alg.iv(self.prefix, self.counter));
    }

    #[inline]
    fn call(&mut self) -> CK_RV {
        let (rv, n) = self.raw.key_single(
            KeyCall::Encrypt,
            self.s,
            &mut self.mech,
            self.key,
            &self.data,
            &mut self.out,
        );
        self.len = n;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        let ct = written(&self.raw, rv, &self.out, self.len)?;
        check::length("ciphertext", ct.len(), self.alg.ct_len(self.data.len()))?;
        let Some(dec) = self.dec_key else {
            return Ok(());
        };
        let (raw, s, alg, prefix, counter) =
            (&self.raw, self.s, self.alg, self.prefix, self.counter);
        let plain = &self.data;
        self.sampler
            .sample(|| {
                let mut m = alg.mech_at(prefix, counter, plain.len());
                check::decrypts_to(raw, s, &mut m, dec, ct, plain, "sampled ciphertext")
            })
            .unwrap_or(Ok(()))
    }
}

/// Worker encrypting `data_size` bytes; a fresh IV for every GCM/CBC call. A
/// ciphertext made while preparing must decrypt to the plaintext.
pub fn encrypt_worker(c: CipherAlg, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    check_size(c, p)?;
    let mut prefix = random_bytes::<4>();
    prefix[0] = p.thread as u8;
    let key = enc_key(c, p)?;
    let dec_key = dec_key(c, p).ok();
    let data = test_data(p.data_size, 3);
    // Counter 0 is this preparation's; the run's encryptions count from 1. A
    // module that refuses to encrypt is not a failed check: its timed calls
    // report the CKR_* code, as they did before this check existed.
    let prepared = match encrypt_once(c, p, prefix, key, &data) {
        Err(Failure::Rv(_)) => None,
        other => Some(other?),
    };
    if let (Some(dec), Some(ct)) = (dec_key, &prepared) {
        check::decrypts_to(
            p.raw,
            p.session,
            &mut c.mech(prefix, data.len()),
            dec,
            ct,
            &data,
            "prepared ciphertext",
        )?;
    }
    if let Some(ct) = &prepared {
        same_as_in_process(c, p, prefix, &data, ct)?;
    }
    Ok(Box::new(EncryptWorker {
        raw: p.raw.clone(),
        s: p.session,
        alg: c,
        mech: c.mech(prefix, data.len()),
        key,
        dec_key,
        out: vec![0u8; c.ct_len(p.data_size) + 64],
        data,
        len: 0,
        prefix,
        counter: 0,
        sampler: check::Sampler::default(),
    }))
}

fn check_size(c: CipherAlg, p: &Prep<'_>) -> Result<(), Failure> {
    if let DataSpec::Variable { align, .. } = c.data()
        && !p.data_size.is_multiple_of(align)
    {
        return Err(Failure::Check(format!(
            "data size must be a multiple of {align}"
        )));
    }
    Ok(())
}

/// When the AES key value is known: the prepared ciphertext (IV counter 0)
/// must equal the one computed in-process. This catches a module whose
/// encryption and decryption are wrong in the same way.
fn same_as_in_process(
    c: CipherAlg,
    p: &Prep<'_>,
    prefix: [u8; 4],
    plain: &[u8],
    ct: &[u8],
) -> Result<(), Failure> {
    if !c.is_aes() && !matches!(c, CipherAlg::ChaCha20Poly1305) {
        return Ok(());
    }
    let iv = c.iv(prefix, 0);
    let k = p.key()?;
    let Some(value) = k.secret.and_then(|key| check::key_value(p, k, key)) else {
        return Ok(());
    };
    match check::aes_reference(c, &value, &iv, plain) {
        Some(r) if r != ct => Err(check::failed(
            "prepared ciphertext differs from the in-process one",
        )),
        _ => Ok(()),
    }
}

/// Encrypt `plain` once outside the timer (IV counter 0), checking the length.
fn encrypt_once(
    c: CipherAlg,
    p: &Prep<'_>,
    prefix: [u8; 4],
    key: CK_OBJECT_HANDLE,
    plain: &[u8],
) -> Result<Vec<u8>, Failure> {
    ck(p.raw
        .encrypt_init(p.session, &mut c.mech(prefix, plain.len()), key))?;
    let mut ct = vec![0u8; c.ct_len(plain.len()) + 64];
    let (rv, n) = p.raw.encrypt(p.session, plain, &mut ct);
    let n = written(p.raw, rv, &ct, n)?.len();
    ct.truncate(n);
    check::length("prepared ciphertext", n, c.ct_len(plain.len()))?;
    Ok(ct)
}

struct DecryptWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    mech: Mech,
    key: CK_OBJECT_HANDLE,
    ct: Vec<u8>,
    plain: Vec<u8>,
    out: Vec<u8>,
    len: usize,
}

impl Worker for DecryptWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let (rv, n) = self.raw.key_single(
            KeyCall::Decrypt,
            self.s,
            &mut self.mech,
            self.key,
            &self.ct,
            &mut self.out,
        );
        self.len = n;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        if *written(&self.raw, rv, &self.out, self.len)? != self.plain[..] {
            return Err(check::failed("decrypted data differs from the plaintext"));
        }
        Ok(())
    }
}

/// Worker decrypting a ciphertext made (untimed) from known plaintext, checked
/// for length and decrypted once while preparing; every output is compared
/// with the plaintext.
pub fn decrypt_worker(c: CipherAlg, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    check_size(c, p)?;
    let prefix = random_bytes::<4>();
    let plain = test_data(p.data_size, 4);
    let ct = encrypt_once(c, p, prefix, enc_key(c, p)?, &plain)?;
    let key = dec_key(c, p)?;
    check::decrypts_to(
        p.raw,
        p.session,
        &mut c.mech(prefix, plain.len()),
        key,
        &ct,
        &plain,
        "prepared ciphertext",
    )?;
    same_as_in_process(c, p, prefix, &plain, &ct)?;
    Ok(Box::new(DecryptWorker {
        raw: p.raw.clone(),
        s: p.session,
        mech: c.mech(prefix, plain.len()),
        key,
        out: vec![0u8; ct.len() + 64],
        ct,
        plain,
        len: 0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ciphertext_lengths() {
        let aes = |m| CipherAlg::Aes(m, 32);
        assert_eq!(aes(AesMode::Gcm).ct_len(1024), 1040);
        assert_eq!(aes(AesMode::Gcm).ct_len(0), 16);
        assert_eq!(aes(AesMode::Cbc).ct_len(1024), 1024);
        assert_eq!(aes(AesMode::Ecb).ct_len(1024), 1024);
        assert_eq!(aes(AesMode::Ctr).ct_len(1000), 1000);
        assert_eq!(aes(AesMode::CbcPad).ct_len(1024), 1040);
        assert_eq!(aes(AesMode::CbcPad).ct_len(1000), 1008);
        assert_eq!(CipherAlg::RsaOaepSha256(2048).ct_len(32), 256);
        assert_eq!(CipherAlg::RsaOaepSha1(3072).ct_len(32), 384);
    }

    #[test]
    fn sampled_ciphertexts_are_decrypted_with_their_own_iv() {
        let p = [1, 2, 3, 4];
        let aes = |m| CipherAlg::Aes(m, 16);
        assert_eq!(
            aes(AesMode::Gcm).mech_at(p, 5, 1024).iv(),
            Some(&iv12(p, 5)[..])
        );
        assert_eq!(
            aes(AesMode::Cbc).mech_at(p, 7, 1024).iv(),
            Some(&iv16(p, 7)[..])
        );
        assert_eq!(
            aes(AesMode::CbcPad).mech_at(p, 7, 1024).iv(),
            Some(&iv16(p, 7)[..])
        );
        assert_eq!(aes(AesMode::Gcm).mech(p, 1024).iv(), Some(&iv12(p, 0)[..]));
        let ctr = aes(AesMode::Ctr).mech_at(p, 9, 1024);
        assert_eq!(ctr.iv().unwrap()[..12], iv12(p, 9));
        assert_eq!(
            ctr.iv().unwrap()[12..],
            [0; 4],
            "the block counter starts at 0"
        );
        assert_eq!(aes(AesMode::Ecb).mech_at(p, 9, 1024).iv(), None);
        // The worker's `before` moves the IV on in place.
        let mut m = aes(AesMode::Ctr).mech(p, 1024);
        m.set_iv(&aes(AesMode::Ctr).iv(p, 3));
        assert_eq!(m.iv().unwrap()[..12], iv12(p, 3));
        let mut m = aes(AesMode::Gcm).mech(p, 1024);
        m.set_iv(&aes(AesMode::Gcm).iv(p, 3));
        assert_eq!(m.iv(), Some(&iv12(p, 3)[..]));
    }

    #[test]
    fn every_aes_mode_size_and_direction_is_declared_once_with_its_name() {
        let all = ops();
        let mut ids: Vec<&str> = all.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(
            ids.len(),
            3 + 2 * 4 + 3 * 5 * 2 + 4 + 3,
            "RSA-OAEP, AES, 3DES, then AES-CCM, AES-CTS and ChaCha20-Poly1305 ops"
        );
        for id in [
            "des3-ecb-encrypt",
            "des3-ecb-decrypt",
            "des3-cbc-encrypt",
            "des3-cbc-decrypt",
        ] {
            let o = all.iter().find(|o| o.id == id).unwrap();
            assert_eq!(o.key, Some(KeySpec::Des3), "{id}");
            assert_eq!(
                o.data,
                DataSpec::Variable {
                    default: 1024,
                    align: 8
                }
            );
        }
        // DES3-CBC: an 8-byte IV, moved on in place.
        let c = CipherAlg::Des3(AesMode::Cbc);
        let p = [1, 2, 3, 4];
        assert_eq!(c.iv(p, 5), [1, 2, 3, 4, 0, 0, 0, 5]);
        let mut m = c.mech(p, 1024);
        m.set_iv(&c.iv(p, 6));
        assert_eq!(m.iv(), Some(&[1, 2, 3, 4, 0, 0, 0, 6][..]));
        for b in [3072, 4096] {
            for h in ["sha1", "sha256"] {
                for dir in ["encrypt", "decrypt"] {
                    let id = format!("rsa{b}-oaep-{h}-{dir}");
                    let o = all
                        .iter()
                        .find(|o| o.id == id)
                        .unwrap_or_else(|| panic!("{id}"));
                    assert_eq!(
                        (o.mechanism, o.key, o.key_bits),
                        (CKM_RSA_PKCS_OAEP, Some(KeySpec::Rsa(b)), Some(b as u64)),
                        "{id}"
                    );
                }
            }
        }
        for (bits, bytes) in [(128, 16), (192, 24), (256, 32)] {
            for (name, mech) in [
                ("ecb", CKM_AES_ECB),
                ("cbc", CKM_AES_CBC),
                ("cbc-pad", CKM_AES_CBC_PAD),
                ("ctr", CKM_AES_CTR),
                ("gcm", CKM_AES_GCM),
            ] {
                for dir in ["encrypt", "decrypt"] {
                    let id = format!("aes{bits}-{name}-{dir}");
                    let o = all
                        .iter()
                        .find(|o| o.id == id)
                        .unwrap_or_else(|| panic!("{id}"));
                    assert_eq!(o.mechanism, mech, "{id}");
                    assert_eq!(o.key, Some(KeySpec::Aes(bytes)), "{id}");
                    assert!(o.title.starts_with(&format!("AES-{bits}-")), "{id}");
                    assert_eq!(
                        matches!(o.kind, OpKind::Encrypt(_)),
                        dir == "encrypt",
                        "{id}"
                    );
                }
            }
        }
        // The later encrypt-only ops, last, with their keys and nonces.
        assert_eq!(
            ids[ids.len() - 3..],
            [
                "aes256-ccm-encrypt",
                "aes256-cts-encrypt",
                "chacha20-poly1305-encrypt"
            ]
        );
        for (id, mech, key) in [
            ("aes256-ccm-encrypt", CKM_AES_CCM, KeySpec::Aes(32)),
            ("aes256-cts-encrypt", CKM_AES_CTS, KeySpec::Aes(32)),
            (
                "chacha20-poly1305-encrypt",
                CKM_CHACHA20_POLY1305,
                KeySpec::ChaCha20,
            ),
        ] {
            let o = all.iter().find(|o| o.id == id).unwrap();
            assert_eq!((o.mechanism, o.key), (mech, Some(key)), "{id}");
            assert!(matches!(o.kind, OpKind::Encrypt(_)), "{id}");
        }
        let ccm = CipherAlg::Aes(AesMode::Ccm, 32);
        assert_eq!(ccm.ct_len(100), 116);
        assert_eq!(CipherAlg::ChaCha20Poly1305.ct_len(0), 16);
        assert_eq!(CipherAlg::Aes(AesMode::Cts, 32).ct_len(100), 100);
        let mut m = ccm.mech_at([1, 2, 3, 4], 8, 100);
        assert_eq!(m.iv(), Some(&iv12([1, 2, 3, 4], 8)[..]));
        m.set_iv(&ccm.iv([1, 2, 3, 4], 9));
        assert_eq!(m.iv(), Some(&iv12([1, 2, 3, 4], 9)[..]));
        let mut m = CipherAlg::ChaCha20Poly1305.mech([1, 2, 3, 4], 10);
        m.set_iv(&CipherAlg::ChaCha20Poly1305.iv([1, 2, 3, 4], 2));
        assert_eq!(m.iv(), Some(&iv12([1, 2, 3, 4], 2)[..]));
        let cts = CipherAlg::Aes(AesMode::Cts, 32);
        assert_eq!(
            cts.mech_at([1, 2, 3, 4], 3, 100).iv(),
            Some(&iv16([1, 2, 3, 4], 3)[..])
        );
        // The pre-existing ids keep their place and meaning.
        assert_eq!(
            ids[3..6],
            [
                "aes256-gcm-encrypt",
                "aes256-gcm-decrypt",
                "aes256-cbc-encrypt"
            ]
        );
        let aligned = |id: &str| all.iter().find(|o| o.id == id).unwrap().data;
        assert_eq!(
            aligned("aes128-ecb-encrypt"),
            DataSpec::Variable {
                default: 1024,
                align: 16
            }
        );
        assert_eq!(
            aligned("aes192-ctr-decrypt"),
            DataSpec::Variable {
                default: 1024,
                align: 1
            }
        );
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all.len(), "ids are unique");
    }
}
