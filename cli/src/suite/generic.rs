//! The generic op: any mechanism the catalogue lacks, named on the command line
//! (`--mechanism CKM_NAME [--mech-param-hex HEX] [--function F] --key-label L`),
//! timed as `C_SignInit`+`C_Sign`, `C_VerifyInit`+`C_Verify`,
//! `C_EncryptInit`+`C_Encrypt`, `C_DecryptInit`+`C_Decrypt` or
//! `C_DigestInit`+`C_Digest` (PKCS#11 3.0 §5.8–§5.13) with the key found by
//! label; `encapsulate` and `decapsulate` (`C_EncapsulateKey`,
//! `C_DecapsulateKey`, PKCS#11 3.2 §5.18) are timed and checked by
//! `kem.rs`.
//!
//! hsm-bench knows nothing about the mechanism, so its results are checked by
//! the inverse function on the token, which must be available:
//! - sign: the prepared signature verifies with `C_Verify` and a corrupted copy
//!   does not; when two prepared signatures are equal the mechanism is taken
//!   as deterministic and every output must equal them, otherwise a sample of
//!   the outputs is verified (see [`check::Sampler`]);
//! - verify: every call returns `CKR_OK` on a signature made while preparing,
//!   which verifies and whose corrupted copy is rejected;
//! - encrypt: the prepared ciphertext and a sample of the run's ciphertexts
//!   decrypt to the plaintext;
//! - decrypt: every output equals the plaintext of the prepared ciphertext;
//! - digest: two prepared digests of the input are equal and differ from the
//!   digest of other data; every output equals them.
//!
//! A parameter given as bytes is passed as it is, for every call: a mechanism
//! whose parameter holds an IV then uses that IV for every encryption.

use std::sync::Arc;

use cryptoki_sys::*;

use super::alg::GenericFn;
use super::alg::KeySpec;
use super::check;
use super::failure::Failure;
use super::failure::written;
use super::keyset::KeyHandles;
use super::op::DataSpec;
use super::op::OpDef;
use super::op::OpKind;
use super::op::Prep;
use super::op::Worker;
use super::op::test_data;
use crate::token::ckr::{ckm_name, ckr_name};
use crate::token::raw::{Mech, RawModule};

/// Output buffer of a generic op beyond the input size: room for signatures
/// of large keys and post-quantum schemes (SLH-DSA-*-256f: 49,856 bytes),
/// and for padding and tags.
const OUT_MARGIN: usize = 64 * 1024;

impl GenericFn {
    /// Every function, in the order ops are listed.
    pub const ALL: [GenericFn; 7] = [
        GenericFn::Sign,
        GenericFn::Verify,
        GenericFn::Encrypt,
        GenericFn::Decrypt,
        GenericFn::Digest,
        GenericFn::Encapsulate,
        GenericFn::Decapsulate,
    ];

    /// The name used in op ids and by `--function`.
    pub fn name(&self) -> &'static str {
        match self {
            GenericFn::Sign => "sign",
            GenericFn::Verify => "verify",
            GenericFn::Encrypt => "encrypt",
            GenericFn::Decrypt => "decrypt",
            GenericFn::Digest => "digest",
            GenericFn::Encapsulate => "encapsulate",
            GenericFn::Decapsulate => "decapsulate",
        }
    }

    /// Parse a `--function` value.
    pub fn parse(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown function '{s}' (sign, verify, encrypt, decrypt, digest, \
                     encapsulate or decapsulate)"
                )
            })
    }

    /// The `CKF_*` flag of `C_GetMechanismInfo` that says a mechanism offers
    /// this function (PKCS#11 3.0 §5.5.7; 3.2 adds `CKF_ENCAPSULATE`,
    /// `CKF_DECAPSULATE`).
    pub fn flag(&self) -> CK_FLAGS {
        match self {
            GenericFn::Sign => CKF_SIGN,
            GenericFn::Verify => CKF_VERIFY,
            GenericFn::Encrypt => CKF_ENCRYPT,
            GenericFn::Decrypt => CKF_DECRYPT,
            GenericFn::Digest => CKF_DIGEST,
            GenericFn::Encapsulate => CKF_ENCAPSULATE,
            GenericFn::Decapsulate => CKF_DECAPSULATE,
        }
    }

    /// Whether the function uses a key.
    pub fn needs_key(&self) -> bool {
        *self != GenericFn::Digest
    }
}

/// The op timing `f` of mechanism `mech` with parameter `param`.
pub fn op(mech: CK_MECHANISM_TYPE, param: &[u8], f: GenericFn) -> OpDef {
    let name = ckm_name(mech);
    let stem = name
        .strip_prefix("CKM_")
        .unwrap_or(&name)
        .to_ascii_lowercase()
        .replace('_', "-");
    OpDef {
        id: format!("mech-{stem}-{}", f.name()),
        title: format!("{name} {} (generic)", f.name()),
        kind: OpKind::Generic(f, param.into()),
        mechanism: mech,
        also_needs: vec![],
        key: f.needs_key().then_some(KeySpec::Existing),
        key_bits: None,
        // A key encapsulation takes no data.
        data: if matches!(f, GenericFn::Encapsulate | GenericFn::Decapsulate) {
            DataSpec::Fixed(0)
        } else {
            DataSpec::Variable {
                default: 32,
                align: 1,
            }
        },
    }
}

/// Parse a mechanism given by name (`CKM_AES_XTS`, case-insensitive, `CKM_`
/// optional) or number (`0x1071`, decimal).
pub fn parse_mechanism(s: &str) -> Result<CK_MECHANISM_TYPE, String> {
    let t = s.trim();
    let number = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        CK_MECHANISM_TYPE::from_str_radix(hex, 16).ok()
    } else {
        t.parse::<CK_MECHANISM_TYPE>().ok()
    };
    if let Some(n) = number {
        return Ok(n);
    }
    let upper = t.to_ascii_uppercase();
    let want = if upper.starts_with("CKM_") {
        upper
    } else {
        format!("CKM_{upper}")
    };
    // Vendor mechanisms have no standard name and are given by number.
    crate::token::ckr::ckm_value(&want).ok_or_else(|| {
        format!("unknown mechanism '{s}' (a CKM_ name, or a number such as 0x80000001)")
    })
}

/// Parse `--mech-param-hex` (whitespace and `:` allowed between bytes).
pub fn parse_param_hex(s: &str) -> Result<Vec<u8>, String> {
    let digits: String = s
        .chars()
        .filter(|c| !c.is_whitespace() && *c != ':')
        .collect();
    let digits = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
        .unwrap_or(&digits);
    if !digits.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16)
                .map_err(|_| format!("'{}' is not a hex byte", &digits[i..i + 2]))
        })
        .collect()
}

/// The keys the functions of a generic op use: a key pair's halves, or one
/// secret key for both directions.
struct GenericKeys {
    forward: CK_OBJECT_HANDLE,
    inverse: CK_OBJECT_HANDLE,
}

fn keys_for(f: GenericFn, k: &KeyHandles) -> Result<GenericKeys, Failure> {
    let private = k.private.or(k.secret);
    let public = k.public.or(k.secret);
    let need = |h: Option<CK_OBJECT_HANDLE>, what: &str| {
        h.ok_or_else(|| Failure::Unsupported(format!("the key has no {what}")))
    };
    Ok(match f {
        GenericFn::Sign => GenericKeys {
            forward: need(private, "private or secret key to sign with")?,
            inverse: need(public, "public or secret key to check signatures with")?,
        },
        GenericFn::Verify => GenericKeys {
            forward: need(public, "public or secret key to verify with")?,
            inverse: need(private, "private or secret key to make signatures with")?,
        },
        GenericFn::Encrypt => GenericKeys {
            forward: need(public, "public or secret key to encrypt with")?,
            inverse: need(private, "private or secret key to check ciphertexts with")?,
        },
        GenericFn::Decrypt => GenericKeys {
            forward: need(private, "private or secret key to decrypt with")?,
            inverse: need(public, "public or secret key to make ciphertexts with")?,
        },
        GenericFn::Digest | GenericFn::Encapsulate | GenericFn::Decapsulate => GenericKeys {
            forward: CK_INVALID_HANDLE,
            inverse: CK_INVALID_HANDLE,
        },
    })
}

/// The calls of one generic operation, with their buffers.
struct Calls {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    mech: CK_MECHANISM_TYPE,
    param: Arc<[u8]>,
}

impl Calls {
    fn mech(&self) -> Mech {
        Mech::with_bytes(self.mech, &self.param)
    }

    /// One call of `f` on `data` (signature `sig` for verify) into `out`:
    /// its return value and output length. `mech` is reused by the timed path.
    fn call(
        &self,
        f: GenericFn,
        mech: &mut Mech,
        key: CK_OBJECT_HANDLE,
        data: &[u8],
        sig: &[u8],
        out: &mut [u8],
    ) -> (CK_RV, usize) {
        let (raw, s) = (&self.raw, self.s);
        let rv = match f {
            GenericFn::Sign => raw.sign_init(s, mech, key),
            GenericFn::Verify => raw.verify_init(s, mech, key),
            GenericFn::Encrypt => raw.encrypt_init(s, mech, key),
            GenericFn::Decrypt => raw.decrypt_init(s, mech, key),
            GenericFn::Digest => raw.digest_init(s, mech),
            // Timed by `kem.rs`'s workers, never here.
            GenericFn::Encapsulate | GenericFn::Decapsulate => CKR_FUNCTION_NOT_SUPPORTED,
        };
        if rv != CKR_OK {
            return (rv, 0);
        }
        match f {
            GenericFn::Sign => raw.sign(s, data, out),
            GenericFn::Verify => (raw.verify(s, data, sig), 0),
            GenericFn::Encrypt => raw.encrypt(s, data, out),
            GenericFn::Decrypt => raw.decrypt(s, data, out),
            GenericFn::Digest => raw.digest(s, data, out),
            GenericFn::Encapsulate | GenericFn::Decapsulate => (CKR_FUNCTION_NOT_SUPPORTED, 0),
        }
    }

    /// An untimed call whose output is needed to prepare or check.
    fn output(
        &self,
        f: GenericFn,
        key: CK_OBJECT_HANDLE,
        data: &[u8],
        what: &str,
    ) -> Result<Vec<u8>, Failure> {
        let mut out = vec![0u8; data.len() + OUT_MARGIN];
        let (rv, n) = self.call(f, &mut self.mech(), key, data, &[], &mut out);
        let n = match written(&self.raw, rv, &out, n) {
            Ok(got) => got.len(),
            Err(Failure::Rv(rv)) => {
                return Err(check::failed(format!(
                    "{what}: C_{} returned {}",
                    capitalised(f),
                    ckr_name(rv)
                )));
            }
            Err(f) => return Err(f),
        };
        out.truncate(n);
        Ok(out)
    }

    /// `C_Verify` of `sig` over `data`: its return value.
    fn verify(&self, key: CK_OBJECT_HANDLE, data: &[u8], sig: &[u8]) -> CK_RV {
        self.call(GenericFn::Verify, &mut self.mech(), key, data, sig, &mut [])
            .0
    }
}

fn capitalised(f: GenericFn) -> String {
    let n = f.name();
    format!("{}{}", n[..1].to_ascii_uppercase(), &n[1..])
}

/// A signature over `data` made with `signer` that `checker` verifies and
/// whose corrupted copy it rejects.
fn checked_signature(
    c: &Calls,
    signer: CK_OBJECT_HANDLE,
    checker: CK_OBJECT_HANDLE,
    data: &[u8],
) -> Result<Vec<u8>, Failure> {
    let sig = c.output(
        GenericFn::Sign,
        signer,
        data,
        "cannot make a signature to check with",
    )?;
    match c.verify(checker, data, &sig) {
        CKR_OK => {}
        rv @ (CKR_MECHANISM_INVALID
        | CKR_KEY_FUNCTION_NOT_PERMITTED
        | CKR_KEY_TYPE_INCONSISTENT
        | CKR_FUNCTION_NOT_SUPPORTED) => {
            return Err(Failure::Unsupported(format!(
                "signatures cannot be checked: C_Verify returned {}",
                ckr_name(rv)
            )));
        }
        rv => {
            return Err(check::failed(format!(
                "self-check: prepared signature does not verify: {}",
                ckr_name(rv)
            )));
        }
    }
    if c.verify(checker, data, &check::corrupted(&sig)) == CKR_OK {
        return Err(check::failed("self-check: corrupted signature verified"));
    }
    Ok(sig)
}

struct GenericWorker {
    calls: Calls,
    f: GenericFn,
    mech: Mech,
    key: CK_OBJECT_HANDLE,
    inverse: CK_OBJECT_HANDLE,
    data: Vec<u8>,
    /// The signature a verify op checks.
    sig: Vec<u8>,
    /// The output every call must produce, when it is deterministic.
    expect: Option<Vec<u8>>,
    out: Vec<u8>,
    len: usize,
    sampler: check::Sampler,
}

impl Worker for GenericWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let (rv, n) = self.calls.call(
            self.f,
            &mut self.mech,
            self.key,
            &self.data,
            &self.sig,
            &mut self.out,
        );
        self.len = n;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        let out = written(&self.calls.raw, rv, &self.out, self.len)?;
        if let Some(e) = &self.expect {
            if out != &e[..] {
                return Err(check::failed(format!(
                    "{} output differs from the checked one",
                    self.f.name()
                )));
            }
            return Ok(());
        }
        let (c, inverse, data) = (&self.calls, self.inverse, &self.data);
        match self.f {
            GenericFn::Sign => self.sampler.sample(|| match c.verify(inverse, data, out) {
                CKR_OK => Ok(()),
                rv => Err(check::failed(format!(
                    "sampled signature does not verify: {}",
                    ckr_name(rv)
                ))),
            }),
            GenericFn::Encrypt => self.sampler.sample(|| {
                check::decrypts_to(
                    &c.raw,
                    c.s,
                    &mut c.mech(),
                    inverse,
                    out,
                    data,
                    "sampled ciphertext",
                )
            }),
            // Verify has no output; decrypt and digest always have `expect`.
            _ => None,
        }
        .unwrap_or(Ok(()))
    }
}

/// Worker for the generic op `op` (its kind is [`OpKind::Generic`]; checks:
/// see the module documentation).
pub fn op_worker(op: &OpDef, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let OpKind::Generic(f, param) = &op.kind else {
        return Err(Failure::Check("not a generic op".into()));
    };
    let f = *f;
    let calls = Calls {
        raw: p.raw.clone(),
        s: p.session,
        mech: op.mechanism,
        param: param.clone(),
    };
    let keys = if f.needs_key() {
        keys_for(f, p.key()?)?
    } else {
        keys_for(f, &KeyHandles::default())?
    };
    let data = test_data(p.data_size, 9);
    let mut sig = Vec::new();
    let mut expect = None;
    let mut worker_data = data.clone();
    match f {
        GenericFn::Sign => {
            let first = checked_signature(&calls, keys.forward, keys.inverse, &data)?;
            let second = calls.output(f, keys.forward, &data, "second signature")?;
            expect = (first == second).then_some(first);
        }
        GenericFn::Verify => {
            sig = checked_signature(&calls, keys.inverse, keys.forward, &data)?;
        }
        GenericFn::Encrypt => {
            let ct = calls.output(f, keys.forward, &data, "cannot encrypt")?;
            check::decrypts_to(
                &calls.raw,
                calls.s,
                &mut calls.mech(),
                keys.inverse,
                &ct,
                &data,
                "prepared ciphertext",
            )
            .map_err(|e| match e {
                Failure::Check(why) if why.contains("C_DecryptInit") => {
                    Failure::Unsupported(format!("ciphertexts cannot be checked: {why}"))
                }
                other => other,
            })?;
        }
        GenericFn::Decrypt => {
            worker_data = calls.output(
                GenericFn::Encrypt,
                keys.inverse,
                &data,
                "cannot make a ciphertext to decrypt",
            )?;
            let plain = calls.output(f, keys.forward, &worker_data, "cannot decrypt")?;
            if plain != data {
                return Err(check::failed(
                    "self-check: prepared ciphertext decrypts to other data",
                ));
            }
            expect = Some(data.clone());
        }
        GenericFn::Digest => {
            let first = calls.output(f, keys.forward, &data, "cannot digest")?;
            let again = calls.output(f, keys.forward, &data, "cannot digest")?;
            let other = calls.output(f, keys.forward, &test_data(data.len() + 1, 10), "other")?;
            if first != again || first == other || first.is_empty() {
                return Err(check::failed(
                    "self-check: digests are not a function of the input",
                ));
            }
            expect = Some(first);
        }
        GenericFn::Encapsulate | GenericFn::Decapsulate => {
            return Err(Failure::Check(
                "key encapsulation is the KEM family's op".into(),
            ));
        }
    }
    let out_len = worker_data.len() + OUT_MARGIN;
    Ok(Box::new(GenericWorker {
        mech: calls.mech(),
        calls,
        f,
        key: keys.forward,
        inverse: keys.inverse,
        data: worker_data,
        sig,
        expect,
        out: vec![0u8; out_len],
        len: 0,
        sampler: check::Sampler::default(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mechanisms_by_name_or_number() {
        assert_eq!(parse_mechanism("CKM_AES_XTS"), Ok(CKM_AES_XTS));
        assert_eq!(parse_mechanism("aes_gcm"), Ok(CKM_AES_GCM));
        assert_eq!(parse_mechanism("CKM_SHA256"), Ok(CKM_SHA256));
        assert_eq!(parse_mechanism("0x1087"), Ok(0x1087));
        assert_eq!(parse_mechanism("4231"), Ok(4231));
        assert!(parse_mechanism("CKM_NOPE").is_err());
    }

    #[test]
    fn parameters_in_hex() {
        assert_eq!(parse_param_hex("00ff10"), Ok(vec![0, 0xff, 0x10]));
        assert_eq!(parse_param_hex("0x00:FF 10"), Ok(vec![0, 0xff, 0x10]));
        assert_eq!(parse_param_hex(""), Ok(vec![]));
        assert!(parse_param_hex("abc").is_err());
        assert!(parse_param_hex("zz").is_err());
    }

    #[test]
    fn op_ids_name_the_mechanism_and_function() {
        let o = op(CKM_SHA3_256, &[], GenericFn::Digest);
        assert_eq!(o.id, "mech-sha3-256-digest");
        assert_eq!(o.key, None);
        let o = op(CKM_AES_XTS, &[1, 2], GenericFn::Encrypt);
        assert_eq!(o.id, "mech-aes-xts-encrypt");
        assert_eq!(o.key, Some(KeySpec::Existing));
        assert_eq!(GenericFn::parse("verify"), Ok(GenericFn::Verify));
        assert_eq!(GenericFn::parse("decapsulate"), Ok(GenericFn::Decapsulate));
        let o = op(CKM_ML_KEM, &[], GenericFn::Encapsulate);
        assert_eq!(o.id, "mech-ml-kem-encapsulate");
        assert_eq!((o.key, o.takes_data()), (Some(KeySpec::Existing), false));
        assert_eq!(GenericFn::Encapsulate.flag(), CKF_ENCAPSULATE);
        // Room for the largest SLH-DSA signature (49,856 bytes).
        let largest = crate::suite::alg::SlhDsaSet::ALL
            .iter()
            .map(|s| s.sig_len())
            .max()
            .unwrap();
        assert!(OUT_MARGIN >= largest, "{largest}");
        assert!(GenericFn::parse("wrap").is_err());
    }
}
