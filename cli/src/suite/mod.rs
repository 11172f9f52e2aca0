//! The operation catalogue: every benchmarkable operation, its mechanism, its key,
//! its input, and how to build a per-thread [`Worker`] that runs it.
//!
//! One file per operation family. A family exports constructors of [`OpDef`]s and
//! builds the workers for its [`OpKind`]s. To add an operation: add an `OpKind`
//! variant (or reuse one with new parameters), an entry to [`catalogue`], and the
//! worker in the family file. Vendor interfaces (e.g. a batch verify) get their own
//! family file the same way.

pub mod check;
pub mod cipher;
pub mod derive;
pub mod digest;
pub mod generic;
pub mod keygen;
pub mod keys;
pub mod mac;
pub mod objects;
pub mod population;
pub mod random;
pub mod role_separated;
pub mod sign;
pub mod support;
pub mod vendor;
pub mod wrap;

use std::sync::Arc;

use cryptoki_sys::{CK_MECHANISM_TYPE, CK_RV, CK_SESSION_HANDLE};

use crate::token::ckr::{ckm_name, ckr_name};
use crate::token::raw::RawModule;
use keys::{KeyHandles, KeySpec};

/// A failed operation, found outside the timed region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A PKCS#11 call returned this code.
    Rv(CK_RV),
    /// The call succeeded but its result was wrong (e.g. decrypt output differs).
    Check(String),
    /// The token refused the op while preparing in a way that means it does
    /// not offer it (e.g. C_SeedRandom returning CKR_RANDOM_SEED_NOT_SUPPORTED):
    /// the op is reported unsupported with this reason.
    Unsupported(String),
}

impl Failure {
    /// Name used in reports: `CKR_*` or `CHECK: <what>`.
    pub fn name(&self) -> String {
        match self {
            Failure::Rv(rv) => ckr_name(*rv),
            Failure::Check(what) => format!("CHECK_FAILED({what})"),
            Failure::Unsupported(why) => format!("UNSUPPORTED({why})"),
        }
    }
}

/// Turn a return value into a result.
pub fn ck(rv: CK_RV) -> Result<(), Failure> {
    if rv == cryptoki_sys::CKR_OK {
        Ok(())
    } else {
        Err(Failure::Rv(rv))
    }
}

/// One thread's instance of an operation, with its inputs prepared.
///
/// The runner calls `before` (untimed), then `call` (timed: exactly the PKCS#11
/// calls of one operation), then `check` (untimed) for every iteration.
pub trait Worker: Send {
    /// Prepare the next call outside the timed region (e.g. the next GCM IV).
    fn before(&mut self) {}
    /// The timed PKCS#11 calls of one operation.
    fn call(&mut self) -> CK_RV;
    /// Check the result of the last call (outside the timed region).
    fn check(&mut self, rv: CK_RV) -> Result<(), Failure>;
    /// For ops timed by someone else (a cold-start probe process): the
    /// latency of the last call, recorded instead of the runner's clock.
    fn measured_ns(&self) -> Option<u64> {
        None
    }
    /// Peak resident memory seen so far (cold-start probes).
    fn peak_rss_kib(&self) -> Option<u64> {
        None
    }
    /// True when untimed work around each call (a probe process, objects
    /// made or destroyed) would distort ops/s over the wall clock: ops/s is
    /// then threads ÷ mean latency.
    fn rate_from_latency(&self) -> bool {
        false
    }
    /// What the result should say about how this op was prepared where it
    /// differs from the usual path (e.g. a role-separated wrapping key,
    /// [`wrap`]): one line each, recorded in the result's warnings.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Size of the data an operation processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataSpec {
    /// Fixed input size (e.g. a 32-byte digest to sign); `--data-sizes` does not apply.
    Fixed(usize),
    /// Variable input: `default` bytes unless `--data-sizes` is given; sizes must be
    /// a multiple of `align`.
    Variable {
        /// Default size in bytes.
        default: usize,
        /// Required multiple.
        align: usize,
    },
}

/// Signature algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SigAlg {
    /// Ed25519 (CKM_EDDSA).
    Ed25519,
    /// ECDSA over a prehashed digest (CKM_ECDSA) on a curve.
    Ecdsa(Curve),
    /// ECDSA with the hash in the mechanism (`CKM_ECDSA_SHA256`, …) over a
    /// message, on a curve.
    EcdsaHash(Curve, HashAlg),
    /// RSA PKCS#1 v1.5 with SHA-256 (CKM_SHA256_RSA_PKCS).
    RsaPkcs(u32),
    /// RSA-PSS with SHA-256, MGF1-SHA256, 32-byte salt.
    RsaPss(u32),
}

/// The Weierstrass curves of the ECDSA (and ECDH) ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Curve {
    /// NIST P-256 (secp256r1).
    P256,
    /// NIST P-384.
    P384,
    /// NIST P-521.
    P521,
    /// secp256k1 (SEC 2).
    Secp256k1,
}

impl Curve {
    /// Every curve, in catalogue order.
    pub const ALL: [Curve; 4] = [Curve::P256, Curve::P384, Curve::P521, Curve::Secp256k1];

    /// The id part (`p256`, `secp256k1`).
    pub fn id(&self) -> &'static str {
        match self {
            Curve::P256 => "p256",
            Curve::P384 => "p384",
            Curve::P521 => "p521",
            Curve::Secp256k1 => "secp256k1",
        }
    }

    /// The name in titles (`P-256`).
    pub fn title(&self) -> &'static str {
        match self {
            Curve::P256 => "P-256",
            Curve::P384 => "P-384",
            Curve::P521 => "P-521",
            Curve::Secp256k1 => "secp256k1",
        }
    }

    /// Size of the curve's order in bits (the key size of `C_GetMechanismInfo`).
    pub fn bits(&self) -> u32 {
        match self {
            Curve::P256 | Curve::Secp256k1 => 256,
            Curve::P384 => 384,
            Curve::P521 => 521,
        }
    }

    /// DER of the curve's OID (`CKA_EC_PARAMS`).
    pub fn oid(&self) -> &'static [u8] {
        match self {
            Curve::P256 => keys::P256_OID,
            Curve::P384 => keys::P384_OID,
            Curve::P521 => keys::P521_OID,
            Curve::Secp256k1 => keys::SECP256K1_OID,
        }
    }

    /// The curve of `CKA_EC_PARAMS` `params`, if it is one of these.
    pub fn from_params(params: &[u8]) -> Option<Curve> {
        Curve::ALL.into_iter().find(|c| c.oid() == params)
    }
}

/// AES modes of operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AesMode {
    /// CKM_AES_ECB (no padding).
    Ecb,
    /// CKM_AES_CBC (no padding).
    Cbc,
    /// CKM_AES_CBC_PAD (PKCS#7 padding).
    CbcPad,
    /// CKM_AES_CTR, a 32-bit counter.
    Ctr,
    /// CKM_AES_GCM, 96-bit IV, no AAD, 128-bit tag.
    Gcm,
}

impl AesMode {
    /// Every mode, in catalogue order.
    pub const ALL: [AesMode; 5] = [
        AesMode::Ecb,
        AesMode::Cbc,
        AesMode::CbcPad,
        AesMode::Ctr,
        AesMode::Gcm,
    ];
}

/// AES key sizes of the catalogue, in bytes.
pub const AES_KEY_BYTES: [u32; 3] = [16, 24, 32];

/// Ciphers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CipherAlg {
    /// AES with an n-byte key in a mode.
    Aes(AesMode, u32),
    /// Triple-DES in ECB or CBC mode (no padding), a 24-byte key.
    Des3(AesMode),
    /// RSA-OAEP with SHA-1 and MGF1-SHA1.
    RsaOaepSha1(u32),
    /// RSA-OAEP with SHA-256 and MGF1-SHA256.
    RsaOaepSha256(u32),
}

/// Hash functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashAlg {
    /// SHA-1 (legacy).
    Sha1,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

/// MACs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MacAlg {
    /// HMAC-SHA256.
    HmacSha256,
    /// HMAC-SHA512.
    HmacSha512,
    /// AES-CMAC.
    AesCmac,
}

/// What an operation does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpKind {
    /// Sign.
    Sign(SigAlg),
    /// Verify a signature made beforehand.
    Verify(SigAlg),
    /// Encrypt.
    Encrypt(CipherAlg),
    /// Decrypt a ciphertext made beforehand.
    Decrypt(CipherAlg),
    /// Digest.
    Digest(HashAlg),
    /// MAC (C_Sign with a secret key).
    Mac(MacAlg),
    /// C_GenerateRandom of n bytes.
    Random(usize),
    /// C_SeedRandom with n bytes of seed.
    SeedRandom(usize),
    /// C_GetSessionInfo: no cryptography; shows the harness and call overhead.
    SessionInfo,
    /// Generate a key (pair), destroyed after each iteration outside the timer.
    KeyGen(KeySpec),
    /// Find one object among n objects.
    FindObject(usize),
    /// Verify a batch of n Ed25519 signatures through the vendor interface.
    VerifyBatch(usize),
    /// A token-object scaling op with n population objects on the token.
    Population(population::PopOp, usize),
    /// Derive a shared secret (`C_DeriveKey`), destroyed after each iteration.
    Derive(derive::DeriveAlg),
    /// Wrap an AES key (`C_WrapKey`).
    Wrap(wrap::WrapAlg),
    /// Unwrap a wrapped AES key (`C_UnwrapKey`), destroyed after each iteration.
    Unwrap(wrap::WrapAlg),
    /// A mechanism named on the command line, with its parameter bytes.
    Generic(generic::GenericFn, Arc<[u8]>),
}

/// An operation of the catalogue.
#[derive(Debug, Clone)]
pub struct OpDef {
    /// Stable id used in reports, profiles and `--ops`.
    pub id: String,
    /// Human-readable title.
    pub title: String,
    /// What it does.
    pub kind: OpKind,
    /// The timed mechanism (or 0 for none).
    pub mechanism: CK_MECHANISM_TYPE,
    /// Other mechanisms it needs (e.g. to generate its key).
    pub also_needs: Vec<CK_MECHANISM_TYPE>,
    /// Key it needs, if any.
    pub key: Option<KeySpec>,
    /// Key size in bits to check against the mechanism's limits (RSA/EC only).
    pub key_bits: Option<u64>,
    /// Input size.
    pub data: DataSpec,
}

impl OpDef {
    /// `CKM_*` name of the timed mechanism ("none" when there is none).
    pub fn mechanism_name(&self) -> String {
        if matches!(
            self.kind,
            OpKind::SessionInfo | OpKind::FindObject(_) | OpKind::Random(_) | OpKind::SeedRandom(_)
        ) || (matches!(self.kind, OpKind::Population(..)) && self.mechanism == 0)
        {
            "none".to_string()
        } else {
            ckm_name(self.mechanism)
        }
    }

    /// Whether `--data-sizes` applies.
    pub fn takes_data(&self) -> bool {
        matches!(self.data, DataSpec::Variable { .. })
    }
}

/// Every operation hsm-bench knows, in report order.
pub fn catalogue() -> Vec<OpDef> {
    let mut v = Vec::new();
    v.extend(sign::ops());
    v.extend(vendor::ops());
    v.extend(cipher::ops());
    v.extend(derive::ops());
    v.extend(wrap::ops());
    v.extend(digest::ops());
    v.extend(mac::ops());
    v.extend(random::ops());
    v.extend(keygen::ops());
    v.extend(objects::ops());
    v.extend(population::ops());
    v
}

/// Shell-style glob match supporting `*` and `?`.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Select ops by comma-separated glob patterns, in catalogue order. A pattern that
/// matches nothing is an error.
pub fn select<'a>(all: &'a [OpDef], patterns: &[String]) -> Result<Vec<&'a OpDef>, String> {
    for p in patterns {
        if !all.iter().any(|o| glob_match(p, &o.id)) {
            return Err(format!(
                "no operation matches '{p}' (see `hsm-bench ops` for the list)"
            ));
        }
    }
    Ok(all
        .iter()
        .filter(|o| patterns.iter().any(|p| glob_match(p, &o.id)))
        .collect())
}

/// Everything a worker needs to prepare itself.
pub struct Prep<'a> {
    /// The module's raw function list.
    pub raw: &'a Arc<RawModule>,
    /// The logged-in set-up session (untimed preparation, shared objects).
    pub setup: CK_SESSION_HANDLE,
    /// This worker's own session.
    pub session: CK_SESSION_HANDLE,
    /// Keys of the op (when it needs one).
    pub key: Option<&'a KeyHandles>,
    /// Input size in bytes.
    pub data_size: usize,
    /// Thread index (makes per-thread IVs and labels distinct).
    pub thread: usize,
    /// The module's token population (scaling ops only).
    pub population: Option<population::PopPrep<'a>>,
    /// Where the op makes objects of its own (key generation, find-object):
    /// session objects, token objects, or session falling back to token.
    pub store: keys::StoreMode,
}

impl Prep<'_> {
    /// The op's keys, or a failure if none were made.
    pub fn key(&self) -> Result<&KeyHandles, Failure> {
        self.key
            .ok_or_else(|| Failure::Check("operation needs a key".into()))
    }
}

/// Build the worker of `op` for one thread.
pub fn build_worker(op: &OpDef, prep: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    match op.kind {
        OpKind::Sign(a) => sign::sign_worker(a, prep),
        OpKind::Verify(a) => sign::verify_worker(a, prep),
        OpKind::Encrypt(c) => cipher::encrypt_worker(c, prep),
        OpKind::Decrypt(c) => cipher::decrypt_worker(c, prep),
        OpKind::Digest(h) => digest::worker(h, prep),
        OpKind::Mac(m) => mac::worker(m, prep),
        OpKind::Random(n) => random::random_worker(n, prep),
        OpKind::SeedRandom(n) => random::seed_worker(n, prep),
        OpKind::SessionInfo => random::session_info_worker(prep),
        OpKind::KeyGen(k) => keygen::worker(k, prep),
        OpKind::FindObject(n) => objects::find_worker(n, prep),
        OpKind::VerifyBatch(n) => vendor::verify_batch_worker(n, prep),
        OpKind::Generic(..) => generic::op_worker(op, prep),
        OpKind::Derive(a) => derive::worker(a, prep),
        OpKind::Wrap(a) => wrap::wrap_worker(a, prep),
        OpKind::Unwrap(a) => wrap::unwrap_worker(a, prep),
        OpKind::Population(op, _) => match &prep.population {
            Some(pp) => population::worker(op, prep, pp),
            None => Err(Failure::Check("no token population prepared".into())),
        },
    }
}

/// Deterministic test data of `n` bytes (distinct per seed).
pub fn test_data(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Random bytes (for IV prefixes, labels and key values; never in the timed region).
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    // The OS RNG failing is not something a benchmark can recover from.
    getrandom::fill(&mut b).expect("the OS random number generator works");
    b
}

/// The ops an existing key allows (`--key-label`): those of its type and
/// size whose usage flags (CKA_SIGN, CKA_VERIFY, CKA_ENCRYPT, CKA_DECRYPT) are
/// set and whose mechanism its CKA_ALLOWED_MECHANISMS permits (PKCS#11 3.0
/// §4.7); a key typed for one HMAC (`CKK_SHA256_HMAC`) runs only that HMAC.
/// Ids are the catalogue's, with the key's size (an AES-128 key runs
/// `aes128-gcm-encrypt`), so `--ops` selects among them as it does among the
/// catalogue.
pub fn ops_for_existing(k: &keys::ExistingKey) -> Vec<OpDef> {
    use keys::Detected;
    let ex = KeySpec::Existing;
    let h = &k.handles;
    let (sign, verify) = (
        h.private.is_some() && k.can_sign,
        h.public.is_some() && h.private.is_some() && k.can_verify,
    );
    // ECDH needs the private key (CKA_DERIVE) and the public one (to check
    // the agreement from the peer's side).
    let agree = k.can_derive && h.private.is_some() && h.public.is_some();
    let derive_existing = |a: derive::DeriveAlg| {
        let mut o = derive::derive_op(a);
        o.key = Some(ex);
        o.also_needs.clear();
        o
    };
    let mut v = Vec::new();
    let sigs = |v: &mut Vec<OpDef>, a: SigAlg| {
        if sign {
            v.push(sign::sign_op(a, ex));
        }
        if verify {
            v.push(sign::verify_op(a, ex));
        }
    };
    let ecdsa_hashed = |v: &mut Vec<OpDef>, c: Curve| {
        for hash in [HashAlg::Sha256, HashAlg::Sha384] {
            sigs(v, SigAlg::EcdsaHash(c, hash));
        }
    };
    match &k.kind {
        Detected::Ed25519 => sigs(&mut v, SigAlg::Ed25519),
        Detected::Ec(c) => {
            sigs(&mut v, SigAlg::Ecdsa(*c));
            ecdsa_hashed(&mut v, *c);
            if agree {
                v.push(derive_existing(derive::DeriveAlg::Ecdh(*c)));
            }
        }
        Detected::X25519 => {
            if agree {
                v.push(derive_existing(derive::DeriveAlg::X25519));
            }
        }
        Detected::Rsa(b) => {
            sigs(&mut v, SigAlg::RsaPkcs(*b));
            sigs(&mut v, SigAlg::RsaPss(*b));
            if h.public.is_some() && k.can_encrypt {
                for c in [CipherAlg::RsaOaepSha1(*b), CipherAlg::RsaOaepSha256(*b)] {
                    v.push(cipher::encrypt_op(c, ex));
                    if h.private.is_some() && k.can_decrypt {
                        v.push(cipher::decrypt_op(c, ex));
                    }
                }
            }
        }
        Detected::Aes(n) => {
            if h.secret.is_some() && k.can_encrypt {
                for mode in AesMode::ALL {
                    let c = CipherAlg::Aes(mode, *n);
                    v.push(cipher::encrypt_op(c, ex));
                    if k.can_decrypt {
                        v.push(cipher::decrypt_op(c, ex));
                    }
                }
            }
            if h.secret.is_some() && k.can_sign {
                let bits = n * 8;
                let mut o = mac::mac_op(
                    MacAlg::AesCmac,
                    &format!("aes{bits}-cmac"),
                    &format!("AES-{bits}-CMAC"),
                    ex,
                );
                o.key_bits = Some(u64::from(bits));
                v.push(o);
            }
        }
        Detected::Des3 => {
            if h.secret.is_some() && k.can_encrypt {
                for mode in [AesMode::Ecb, AesMode::Cbc] {
                    let c = CipherAlg::Des3(mode);
                    v.push(cipher::encrypt_op(c, ex));
                    if k.can_decrypt {
                        v.push(cipher::decrypt_op(c, ex));
                    }
                }
            }
        }
        Detected::Hmac(only) => {
            if h.secret.is_some() && k.can_sign {
                for (m, id, title) in [
                    (MacAlg::HmacSha256, "hmac-sha256", "HMAC-SHA256"),
                    (MacAlg::HmacSha512, "hmac-sha512", "HMAC-SHA512"),
                ] {
                    if only.is_none_or(|o| o == m.mechanism()) {
                        let mut o = mac::mac_op(m, id, title, ex);
                        // The token's minimum HMAC key size is checked in bytes.
                        o.key_bits = k.value_len.map(|n| u64::from(n) * 8);
                        v.push(o);
                    }
                }
            }
        }
    }
    v.retain(|o| k.allows(o.mechanism));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("ed25519-*", "ed25519-sign"));
        assert!(glob_match("sha*", "sha512"));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("p?56-sign", "p256-sign"));
        assert!(!glob_match("sha*", "hmac-sha256"));
        assert!(glob_match("*sha256*", "hmac-sha256"));
        assert!(!glob_match("rsa2048-sign", "rsa2048-sign-x"));
    }

    #[test]
    fn catalogue_has_the_contract_ids_once() {
        let all = catalogue();
        let ids: Vec<&str> = all.iter().map(|o| o.id.as_str()).collect();
        for id in [
            "ed25519-sign",
            "ed25519-verify",
            "p256-sign",
            "p256-verify",
            "p384-sign",
            "p384-verify",
            "rsa2048-sign",
            "rsa3072-sign",
            "rsa4096-sign",
            "rsa2048-verify",
            "rsa2048-pss-sign",
            "rsa2048-oaep-sha1-encrypt",
            "rsa2048-oaep-sha256-encrypt",
            "rsa2048-oaep-sha256-decrypt",
            "aes256-gcm-encrypt",
            "aes256-gcm-decrypt",
            "aes256-cbc-encrypt",
            "sha256",
            "sha384",
            "sha512",
            "hmac-sha256",
            "hmac-sha512",
            "aes256-cmac",
            "random32",
            "p256-keygen",
            "ed25519-keygen",
            "rsa2048-keygen",
            "aes256-keygen",
            "find-object",
            "sha1",
            "aes128-ctr-encrypt",
            "aes192-cbc-pad-decrypt",
            "p384-ecdsa-sha256-verify",
            "rsa3072-pss-sign",
            "rsa4096-pss-verify",
            "rsa4096-oaep-sha256-decrypt",
            "rsa3072-oaep-sha1-decrypt",
        ] {
            assert_eq!(ids.iter().filter(|x| **x == id).count(), 1, "{id}");
        }
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "ids are unique");
    }

    #[test]
    fn selection_keeps_catalogue_order_and_rejects_unknown() {
        let all = catalogue();
        let sel = select(&all, &["sha*".into(), "ed25519-*".into()]).unwrap();
        let ids: Vec<&str> = sel.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "ed25519-sign",
                "ed25519-verify",
                "ed25519-verify-batch",
                "sha256",
                "sha384",
                "sha512",
                "sha1",
                "ed25519-keygen"
            ]
        );
        assert!(select(&all, &["nope-*".into()]).is_err());
    }

    #[test]
    fn data_ops_are_the_documented_ones() {
        let all = catalogue();
        let data_ops: Vec<&str> = all
            .iter()
            .filter(|o| o.takes_data())
            .map(|o| o.id.as_str())
            .collect();
        for id in [
            "aes256-gcm-encrypt",
            "aes256-cbc-encrypt",
            "sha256",
            "hmac-sha256",
            "aes256-cmac",
            "ed25519-sign",
        ] {
            assert!(data_ops.contains(&id), "{id}");
        }
        assert!(!data_ops.contains(&"p256-sign"));
        assert!(!data_ops.contains(&"random32"));
    }
}
