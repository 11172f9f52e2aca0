//! The NIST SP 800-108 key-based KDFs as PKCS #11 3.0 defines them
//! (mechanisms spec 3.0 §2.42 "SP 800-108 Key Derivation"):
//! `CKM_SP800_108_COUNTER_KDF` (SP 800-108 §5.1),
//! `CKM_SP800_108_FEEDBACK_KDF` (§5.2) and
//! `CKM_SP800_108_DOUBLE_PIPELINE_KDF` (§5.3).
//!
//! The PRF input of every iteration is the caller's `CK_PRF_DATA_PARAM`
//! array concatenated in order (§2.42 "Constructing PRF Input Data"), where
//! - the iteration variable is the counter `i` (counter mode, from 1,
//!   encoded by its `CK_SP800_108_COUNTER_FORMAT`), `K(i-1)` (feedback mode;
//!   `K(0)` is the IV, possibly empty) or `A(i)` (double pipeline);
//! - the optional counter (`CK_SP800_108_COUNTER`, feedback and double
//!   pipeline only) is `i`, from 1;
//! - the DKM length is `L` in bits: the sum of the lengths of all keys
//!   derived (`SUM_OF_KEYS`) or of all PRF output segments produced
//!   (`SUM_OF_SEGMENTS`);
//! - byte arrays are themselves.
//!
//! Double pipeline: `A(0)` is the PRF input built without the iteration
//! variable and the optional counter (§2.42 "Double Pipeline Mode KDF": they
//! "are not included in IV construction"), `A(i) = PRF(K_I, A(i-1))`.
//!
//! Several keys (§2.42 "Deriving Additional Keys"): each key takes whole
//! segments (no segment is shared between keys), the primary key first.
//! The PRFs are HMAC with SHA-1/SHA-224/SHA-256/SHA-384/SHA-512 and
//! AES-CMAC. This module takes plain values; which objects they come from
//! and become is the caller's business (`api::crypto`).

use crate::error::{Result, err};
use crate::mechanisms::aes::AesKey;
use cryptoki_sys::*;
use hmac::{KeyInit, Mac};
use zeroize::{Zeroize, Zeroizing};

/// Most `CK_PRF_DATA_PARAM` entries one parameter may hold.
pub const MAX_DATA_PARAMS: usize = 64;
/// Longest byte array (and IV) one entry may hold.
pub const MAX_BYTES: usize = 4096;
/// Most additional derived keys.
pub const MAX_ADDITIONAL_KEYS: usize = 16;

/// Which of the three KDFs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// §5.1, `CKM_SP800_108_COUNTER_KDF`.
    Counter,
    /// §5.2, `CKM_SP800_108_FEEDBACK_KDF`.
    Feedback,
    /// §5.3, `CKM_SP800_108_DOUBLE_PIPELINE_KDF`.
    DoublePipeline,
}

impl Mode {
    /// The mode of a mechanism type.
    pub fn of(ty: CK_MECHANISM_TYPE) -> Option<Mode> {
        match ty {
            CKM_SP800_108_COUNTER_KDF => Some(Mode::Counter),
            CKM_SP800_108_FEEDBACK_KDF => Some(Mode::Feedback),
            CKM_SP800_108_DOUBLE_PIPELINE_KDF => Some(Mode::DoublePipeline),
            _ => None,
        }
    }
}

/// `CK_SP800_108_COUNTER_FORMAT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterFormat {
    /// `bLittleEndian`.
    pub little_endian: bool,
    /// `ulWidthInBits`: 8, 16, 24 or 32.
    pub width_bits: CK_ULONG,
}

/// `CK_SP800_108_DKM_LENGTH_METHOD`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DkmMethod {
    /// `CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS`.
    SumOfKeys,
    /// `CK_SP800_108_DKM_LENGTH_SUM_OF_SEGMENTS`.
    SumOfSegments,
}

/// `CK_SP800_108_DKM_LENGTH_FORMAT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DkmFormat {
    /// `dkmLengthMethod`.
    pub method: DkmMethod,
    /// `bLittleEndian`.
    pub little_endian: bool,
    /// `ulWidthInBits`: a multiple of 8 from 8 to 64.
    pub width_bits: CK_ULONG,
}

/// One `CK_PRF_DATA_PARAM`, copied out of the caller's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataParam {
    /// `CK_SP800_108_ITERATION_VARIABLE`: its counter format in counter
    /// mode, `None` (no value) in the other modes.
    Iteration(Option<CounterFormat>),
    /// `CK_SP800_108_OPTIONAL_COUNTER` (`CK_SP800_108_COUNTER`).
    Counter(CounterFormat),
    /// `CK_SP800_108_DKM_LENGTH`.
    DkmLength(DkmFormat),
    /// `CK_SP800_108_BYTE_ARRAY` (non-empty).
    Bytes(Vec<u8>),
}

/// `CK_SP800_108_KDF_PARAMS` / `CK_SP800_108_FEEDBACK_KDF_PARAMS` without
/// the additional keys (those are the caller's: templates and outputs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// `prfType`.
    pub prf: CK_MECHANISM_TYPE,
    /// `pDataParams`.
    pub data: Vec<DataParam>,
    /// `pIV` (feedback mode only; empty otherwise).
    pub iv: Vec<u8>,
}

impl Drop for Params {
    fn drop(&mut self) {
        self.iv.zeroize();
        for d in &mut self.data {
            if let DataParam::Bytes(b) = d {
                b.zeroize();
            }
        }
    }
}

/// The base key, as the PRF needs it.
#[derive(Clone, Copy)]
pub enum PrfKey<'a> {
    /// An HMAC key's value.
    Hmac(&'a [u8]),
    /// An AES key (CMAC).
    Cmac(&'a AesKey),
}

/// True for the PRFs that take an HMAC (generic secret) key.
pub fn is_hmac_prf(prf: CK_MECHANISM_TYPE) -> bool {
    matches!(
        prf,
        CKM_SHA_1_HMAC | CKM_SHA224_HMAC | CKM_SHA256_HMAC | CKM_SHA384_HMAC | CKM_SHA512_HMAC
    )
}

/// The PRF's output length `h` in bytes, or `CKR_MECHANISM_PARAM_INVALID`
/// (§2.42 "CK_SP800_108_PRF_TYPE").
pub fn prf_len(prf: CK_MECHANISM_TYPE) -> Result<usize> {
    match prf {
        CKM_SHA_1_HMAC => Ok(20),
        CKM_SHA224_HMAC => Ok(28),
        CKM_SHA256_HMAC => Ok(32),
        CKM_SHA384_HMAC => Ok(48),
        CKM_SHA512_HMAC => Ok(64),
        CKM_AES_CMAC => Ok(16),
        _ => Err(err(CKR_MECHANISM_PARAM_INVALID)),
    }
}

/// Checks the data parameters against the mode's table (§2.42 "Counter
/// Mode KDF", "Feedback Mode KDF", "Double Pipeline Mode KDF"): exactly one
/// iteration variable (with a counter format only in counter mode), at most
/// one DKM length, at most one optional counter and none in counter mode,
/// the widths in range, an IV only in feedback mode.
pub fn validate(mode: Mode, p: &Params) -> Result<()> {
    let bad = || err(CKR_MECHANISM_PARAM_INVALID);
    prf_len(p.prf)?;
    if p.data.is_empty() || p.data.len() > MAX_DATA_PARAMS {
        return Err(bad());
    }
    if mode != Mode::Feedback && !p.iv.is_empty() {
        return Err(bad());
    }
    let counter_ok = |f: &CounterFormat| matches!(f.width_bits, 8 | 16 | 24 | 32);
    let (mut iterations, mut dkms, mut counters) = (0, 0, 0);
    for d in &p.data {
        match d {
            DataParam::Iteration(f) => {
                iterations += 1;
                match (mode, f) {
                    (Mode::Counter, Some(f)) if counter_ok(f) => {}
                    (Mode::Feedback | Mode::DoublePipeline, None) => {}
                    _ => return Err(bad()),
                }
            }
            DataParam::Counter(f) => {
                counters += 1;
                if mode == Mode::Counter || !counter_ok(f) {
                    return Err(bad());
                }
            }
            DataParam::DkmLength(f) => {
                dkms += 1;
                if f.width_bits == 0 || f.width_bits > 64 || f.width_bits % 8 != 0 {
                    return Err(bad());
                }
            }
            DataParam::Bytes(b) => {
                if b.is_empty() || b.len() > MAX_BYTES {
                    return Err(bad());
                }
            }
        }
    }
    if iterations != 1 || dkms > 1 || counters > 1 {
        return Err(bad());
    }
    Ok(())
}

/// `value` in `width_bits` (a multiple of 8) bits, big or little endian;
/// `CKR_MECHANISM_PARAM_INVALID` if it does not fit.
fn encode(value: u64, width_bits: CK_ULONG, little_endian: bool, out: &mut Vec<u8>) -> Result<()> {
    let bytes = (width_bits / 8) as usize;
    if bytes < 8 && value >> (bytes * 8) != 0 {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    let be = value.to_be_bytes();
    let field = &be[8 - bytes..];
    if little_endian {
        out.extend(field.iter().rev());
    } else {
        out.extend_from_slice(field);
    }
    Ok(())
}

/// One PRF evaluation over `input`, appended to `out`.
fn prf(prf: CK_MECHANISM_TYPE, key: PrfKey<'_>, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
    fn hmac<M: Mac + KeyInit>(key: &[u8], input: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let mut m =
            <M as KeyInit>::new_from_slice(key).map_err(|_| err(CKR_KEY_TYPE_INCONSISTENT))?;
        m.update(input);
        let mut tag = m.finalize().into_bytes();
        out.extend_from_slice(&tag);
        tag[..].zeroize();
        Ok(())
    }
    match (prf, key) {
        (CKM_SHA_1_HMAC, PrfKey::Hmac(k)) => hmac::<hmac::Hmac<sha1::Sha1>>(k, input, out),
        (CKM_SHA224_HMAC, PrfKey::Hmac(k)) => hmac::<hmac::Hmac<sha2::Sha224>>(k, input, out),
        (CKM_SHA256_HMAC, PrfKey::Hmac(k)) => hmac::<hmac::Hmac<sha2::Sha256>>(k, input, out),
        (CKM_SHA384_HMAC, PrfKey::Hmac(k)) => hmac::<hmac::Hmac<sha2::Sha384>>(k, input, out),
        (CKM_SHA512_HMAC, PrfKey::Hmac(k)) => hmac::<hmac::Hmac<sha2::Sha512>>(k, input, out),
        (CKM_AES_CMAC, PrfKey::Cmac(k)) => {
            out.extend_from_slice(&cmac(k, input)[..]);
            Ok(())
        }
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// One-shot AES-CMAC (RFC 4493 §2.4, SP 800-38B §6.2).
fn cmac(key: &AesKey, data: &[u8]) -> Zeroizing<[u8; 16]> {
    let mut state = Zeroizing::new([0u8; 16]);
    // All blocks but the last (which may be empty or partial) go through
    // CBC-MAC; the last is masked with K1 (whole) or padded and masked
    // with K2.
    let whole = if data.is_empty() {
        0
    } else {
        (data.len() - 1) / 16 * 16
    };
    key.cbc_mac(&mut state, &data[..whole]);
    let rest = &data[whole..];
    let [k1, k2] = key.cmac_subkeys();
    let mut last = Zeroizing::new([0u8; 16]);
    last[..rest.len()].copy_from_slice(rest);
    let mask = if rest.len() == 16 {
        k1
    } else {
        last[rest.len()] = 0x80;
        k2
    };
    for i in 0..16 {
        last[i] ^= mask[i];
    }
    key.cbc_mac(&mut state, &last[..]);
    state
}

/// How many PRF segments the keys of `lens` bytes take (each key starts a
/// new segment, §2.42 "Deriving Additional Keys") and the DKM length in
/// bits for `method`.
pub fn segments(prf: CK_MECHANISM_TYPE, lens: &[usize]) -> Result<(u64, u64, u64)> {
    let h = prf_len(prf)?;
    let segs: u64 = lens.iter().map(|&l| l.div_ceil(h) as u64).sum();
    let sum_keys: u64 = lens.iter().map(|&l| l as u64 * 8).sum();
    Ok((segs, sum_keys, segs * h as u64 * 8))
}

/// Derives the keys of `lens` bytes (the primary key first, then each
/// additional key), each from its own segments of the KDF's output.
/// Lengths are checked by the caller (each at most `MAX_SECRET_LEN`).
pub fn derive(
    mode: Mode,
    p: &Params,
    key: PrfKey<'_>,
    lens: &[usize],
) -> Result<Vec<Zeroizing<Vec<u8>>>> {
    validate(mode, p)?;
    match (key, is_hmac_prf(p.prf)) {
        (PrfKey::Hmac(_), true) | (PrfKey::Cmac(_), false) => {}
        _ => return Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
    if lens.is_empty() || lens.contains(&0) {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    let h = prf_len(p.prf)?;
    let (segs, sum_keys, sum_segments) = segments(p.prf, lens)?;
    // The counter (iteration variable or optional counter) must hold the
    // last iteration's number (§2.42: at most 2^r - 1 iterations).
    for d in &p.data {
        if let DataParam::Iteration(Some(f)) | DataParam::Counter(f) = d
            && segs >> f.width_bits != 0
        {
            return Err(err(CKR_MECHANISM_PARAM_INVALID));
        }
    }
    let build = |i: u64, chained: &[u8], with_iteration: bool| -> Result<Zeroizing<Vec<u8>>> {
        let mut input = Zeroizing::new(Vec::new());
        for d in &p.data {
            match d {
                DataParam::Iteration(Some(f)) => {
                    encode(i, f.width_bits, f.little_endian, &mut input)?
                }
                DataParam::Iteration(None) => {
                    if with_iteration {
                        input.extend_from_slice(chained)
                    }
                }
                DataParam::Counter(f) => {
                    if with_iteration {
                        encode(i, f.width_bits, f.little_endian, &mut input)?
                    }
                }
                DataParam::DkmLength(f) => {
                    let l = match f.method {
                        DkmMethod::SumOfKeys => sum_keys,
                        DkmMethod::SumOfSegments => sum_segments,
                    };
                    encode(l, f.width_bits, f.little_endian, &mut input)?
                }
                DataParam::Bytes(b) => input.extend_from_slice(b),
            }
        }
        Ok(input)
    };
    let mut stream = Zeroizing::new(Vec::with_capacity(segs as usize * h));
    // Feedback: K(0) = IV. Double pipeline: A(0) = the fixed input.
    let mut chained = Zeroizing::new(match mode {
        Mode::Feedback => p.iv.clone(),
        Mode::DoublePipeline => build(0, &[], false)?.to_vec(),
        Mode::Counter => Vec::new(),
    });
    for i in 1..=segs {
        if mode == Mode::DoublePipeline {
            let mut a = Zeroizing::new(Vec::with_capacity(h));
            prf(p.prf, key, &chained, &mut a)?;
            chained = a;
        }
        let input = build(i, &chained, true)?;
        let start = stream.len();
        prf(p.prf, key, &input, &mut stream)?;
        if mode == Mode::Feedback {
            chained = Zeroizing::new(stream[start..].to_vec());
        }
    }
    let mut out = Vec::with_capacity(lens.len());
    let mut at = 0;
    for &l in lens {
        out.push(Zeroizing::new(stream[at..at + l].to_vec()));
        at += l.div_ceil(h) * h;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::test_util::unhex;

    fn ctr(width: CK_ULONG) -> CounterFormat {
        CounterFormat {
            little_endian: false,
            width_bits: width,
        }
    }

    /// NIST CAVP KBKDF (KDFCTR_gen.rsp) HMAC_SHA256, BEFORE_FIXED, 8-bit
    /// counter, COUNT=0.
    #[test]
    fn cavp_counter_hmac_sha256() {
        let p = Params {
            prf: CKM_SHA256_HMAC,
            data: vec![
                DataParam::Iteration(Some(ctr(8))),
                DataParam::Bytes(unhex(
                    "98e9988bb4cc8b34d7922e1c68ad692ba2a1d9ae15149571675f17a77ad49e80c8d2a85e831a26445b1f0ff44d7084a17206b4896c8112daad18605a",
                )),
            ],
            iv: vec![],
        };
        let key = unhex("3edc6b5b8f7aadbd713732b482b8f979286e1ea3b8f8f99c30c884cfe3349b83");
        let out = derive(Mode::Counter, &p, PrfKey::Hmac(&key), &[16]).unwrap();
        assert_eq!(*out[0], unhex("6c037652990674a07844732d0ad985f9"));
        // A counter format on the iteration variable outside counter mode.
        assert_eq!(
            derive(Mode::Feedback, &p, PrfKey::Hmac(&key), &[16])
                .unwrap_err()
                .rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
    }

    #[test]
    fn encoding_and_limits() {
        let mut v = vec![];
        encode(0x0102, 24, false, &mut v).unwrap();
        encode(0x0102, 16, true, &mut v).unwrap();
        assert_eq!(v, [0, 1, 2, 2, 1]);
        assert!(encode(256, 8, false, &mut v).is_err());
        // 2 keys of 48 and 16 bytes with SHA-256: 3 segments, L = 512 / 768
        // (the spec's example in "Deriving Additional Keys").
        assert_eq!(segments(CKM_SHA256_HMAC, &[48, 16]).unwrap(), (3, 512, 768));
    }
}
