//! Encryption and decryption: AES-256-GCM, AES-256-CBC, RSA-OAEP.
//!
//! GCM encryptions each use a distinct IV: a random per-worker prefix and a
//! counter, written before the timer starts.
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

use super::keys::KeySpec;
use super::{
    CipherAlg, DataSpec, Failure, OpDef, OpKind, Prep, Worker, check, ck, random_bytes, test_data,
};
use crate::raw::{Mech, RawModule};

impl CipherAlg {
    fn stem(&self) -> String {
        match self {
            CipherAlg::AesGcm => "aes256-gcm".into(),
            CipherAlg::AesCbc => "aes256-cbc".into(),
            CipherAlg::RsaOaepSha1(b) => format!("rsa{b}-oaep-sha1"),
            CipherAlg::RsaOaepSha256(b) => format!("rsa{b}-oaep-sha256"),
        }
    }

    fn title(&self) -> String {
        match self {
            CipherAlg::AesGcm => "AES-256-GCM".into(),
            CipherAlg::AesCbc => "AES-256-CBC".into(),
            CipherAlg::RsaOaepSha1(b) => format!("RSA-{b} OAEP SHA-1"),
            CipherAlg::RsaOaepSha256(b) => format!("RSA-{b} OAEP SHA-256"),
        }
    }

    /// The timed mechanism.
    pub fn mechanism(&self) -> CK_MECHANISM_TYPE {
        match self {
            CipherAlg::AesGcm => CKM_AES_GCM,
            CipherAlg::AesCbc => CKM_AES_CBC,
            CipherAlg::RsaOaepSha1(_) | CipherAlg::RsaOaepSha256(_) => CKM_RSA_PKCS_OAEP,
        }
    }

    /// The key this cipher uses (generated).
    pub fn key(&self) -> KeySpec {
        match self {
            CipherAlg::AesGcm | CipherAlg::AesCbc => KeySpec::Aes(32),
            CipherAlg::RsaOaepSha1(b) | CipherAlg::RsaOaepSha256(b) => KeySpec::Rsa(*b),
        }
    }

    fn mech(&self, iv_prefix: [u8; 4]) -> Mech {
        self.mech_at(iv_prefix, 0)
    }

    /// The mechanism with the IV of encryption number `counter`.
    fn mech_at(&self, iv_prefix: [u8; 4], counter: u64) -> Mech {
        match self {
            CipherAlg::AesGcm => Mech::aes_gcm(iv12(iv_prefix, counter)),
            CipherAlg::AesCbc => Mech::aes_cbc(iv16(iv_prefix, counter)),
            CipherAlg::RsaOaepSha1(_) => Mech::rsa_oaep(CKM_SHA_1, CKG_MGF1_SHA1),
            CipherAlg::RsaOaepSha256(_) => Mech::rsa_oaep(CKM_SHA256, CKG_MGF1_SHA256),
        }
    }

    fn data(&self) -> DataSpec {
        match self {
            CipherAlg::AesGcm => DataSpec::Variable {
                default: 1024,
                align: 1,
            },
            CipherAlg::AesCbc => DataSpec::Variable {
                default: 1024,
                align: 16,
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

    /// Ciphertext length for `n` bytes of plaintext (GCM: 128-bit tag).
    pub fn ct_len(&self, n: usize) -> usize {
        match self {
            CipherAlg::AesGcm => n + 16,
            CipherAlg::AesCbc => n,
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

/// Cipher ops of the catalogue.
pub fn ops() -> Vec<OpDef> {
    use CipherAlg::*;
    vec![
        encrypt_op(RsaOaepSha1(2048), RsaOaepSha1(2048).key()),
        encrypt_op(RsaOaepSha256(2048), RsaOaepSha256(2048).key()),
        decrypt_op(RsaOaepSha256(2048), RsaOaepSha256(2048).key()),
        encrypt_op(AesGcm, AesGcm.key()),
        decrypt_op(AesGcm, AesGcm.key()),
        encrypt_op(AesCbc, AesCbc.key()),
    ]
}

fn enc_key(c: CipherAlg, p: &Prep<'_>) -> Result<CK_OBJECT_HANDLE, Failure> {
    let k = p.key()?;
    match c {
        CipherAlg::AesGcm | CipherAlg::AesCbc => k.secret,
        _ => k.public,
    }
    .ok_or_else(|| Failure::Check("no encryption key".into()))
}

fn dec_key(c: CipherAlg, p: &Prep<'_>) -> Result<CK_OBJECT_HANDLE, Failure> {
    let k = p.key()?;
    match c {
        CipherAlg::AesGcm | CipherAlg::AesCbc => k.secret,
        _ => k.private,
    }
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
        match self.alg {
            CipherAlg::AesGcm => self.mech.set_gcm_iv(&iv12(self.prefix, self.counter)),
            CipherAlg::AesCbc => self.mech.set_cbc_iv(&iv16(self.prefix, self.counter)),
            _ => {}
        }
    }

    #[inline]
    fn call(&mut self) -> CK_RV {
        let rv = self.raw.encrypt_init(self.s, &mut self.mech, self.key);
        if rv != CKR_OK {
            return rv;
        }
        let (rv, n) = self.raw.encrypt(self.s, &self.data, &mut self.out);
        self.len = n;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)?;
        check::length("ciphertext", self.len, self.alg.ct_len(self.data.len()))?;
        let Some(dec) = self.dec_key else {
            return Ok(());
        };
        let (raw, s, alg, prefix, counter) =
            (&self.raw, self.s, self.alg, self.prefix, self.counter);
        let (ct, plain) = (&self.out[..self.len], &self.data);
        self.sampler
            .sample(|| {
                let mut m = alg.mech_at(prefix, counter);
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
            &mut c.mech(prefix),
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
        mech: c.mech(prefix),
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
    let iv = match c {
        CipherAlg::AesGcm => iv12(prefix, 0).to_vec(),
        CipherAlg::AesCbc => iv16(prefix, 0).to_vec(),
        _ => return Ok(()),
    };
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
    ck(p.raw.encrypt_init(p.session, &mut c.mech(prefix), key))?;
    let mut ct = vec![0u8; c.ct_len(plain.len()) + 64];
    let (rv, n) = p.raw.encrypt(p.session, plain, &mut ct);
    ck(rv)?;
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
        let rv = self.raw.decrypt_init(self.s, &mut self.mech, self.key);
        if rv != CKR_OK {
            return rv;
        }
        let (rv, n) = self.raw.decrypt(self.s, &self.ct, &mut self.out);
        self.len = n;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)?;
        if self.out[..self.len] != self.plain[..] {
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
        &mut c.mech(prefix),
        key,
        &ct,
        &plain,
        "prepared ciphertext",
    )?;
    same_as_in_process(c, p, prefix, &plain, &ct)?;
    Ok(Box::new(DecryptWorker {
        raw: p.raw.clone(),
        s: p.session,
        mech: c.mech(prefix),
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
        assert_eq!(CipherAlg::AesGcm.ct_len(1024), 1040);
        assert_eq!(CipherAlg::AesGcm.ct_len(0), 16);
        assert_eq!(CipherAlg::AesCbc.ct_len(1024), 1024);
        assert_eq!(CipherAlg::RsaOaepSha256(2048).ct_len(32), 256);
        assert_eq!(CipherAlg::RsaOaepSha1(3072).ct_len(32), 384);
    }

    #[test]
    fn sampled_ciphertexts_are_decrypted_with_their_own_iv() {
        let p = [1, 2, 3, 4];
        assert_eq!(CipherAlg::AesGcm.mech_at(p, 5).iv(), Some(&iv12(p, 5)[..]));
        assert_eq!(CipherAlg::AesCbc.mech_at(p, 7).iv(), Some(&iv16(p, 7)[..]));
        assert_eq!(CipherAlg::AesGcm.mech(p).iv(), Some(&iv12(p, 0)[..]));
    }
}
