//! Key wrapping: `C_WrapKey` and `C_UnwrapKey` of an AES-256 key under AES
//! key wrap (`CKM_AES_KEY_WRAP`, RFC 3394; `CKM_AES_KEY_WRAP_PAD`, RFC 5649;
//! PKCS#11 3.0 mechanisms §2.14) and under RSA-OAEP with SHA-256
//! (`CKM_RSA_PKCS_OAEP`, §2.1.8). Unwrapped keys are destroyed after the timer
//! stops.
//!
//! The key that is wrapped is made while preparing, extractable and not
//! sensitive, so that its value is known. Checks: every wrapped key has its
//! length checked (AES key wrap: the key plus 8 bytes; RSA-OAEP: the modulus
//! length); AES key wrap is deterministic, so every output must equal the
//! first, which must unwrap to a key of the original value; RSA-OAEP
//! outputs are unwrapped on a sample (see [`check::Sampler`]). Unwrap ops
//! unwrap a blob made and checked while preparing, reject a corrupted copy
//! of it, and compare a sample of the unwrapped keys with the original.
//!
//! Unwrapped keys are made readable (not sensitive, extractable) and their
//! value compared; on a token that refuses that (role separation, e.g.
//! dalek-pkcs11 under `key_policy = strict`: an unwrapped key is always
//! sensitive) they are made sensitive and compared by what they encrypt
//! ([`Unwrapped`]). The wrapping key of such a token may be role-separated
//! ([`super::role_separated`]). Either fallback is named in the result's
//! notes ([`Worker::notes`]).

use std::sync::Arc;

use cryptoki_sys::*;

use super::alg::AesMode;
use super::alg::CipherAlg;
use super::alg::KeySpec;
use super::alg::WrapAlg;
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
use crate::token::ckr::ckr_name;
use crate::token::random::random_bytes;
use crate::token::raw::{Mech, RawModule, Template};

/// Length of the key that is wrapped (AES-256).
const TARGET_LEN: usize = 32;

impl WrapAlg {
    fn stem(&self) -> String {
        match self {
            WrapAlg::AesKw(n) => format!("aes{}-key-wrap", n * 8),
            WrapAlg::AesKwp(n) => format!("aes{}-key-wrap-pad", n * 8),
            WrapAlg::RsaOaep(b) => format!("rsa{b}-oaep"),
        }
    }

    fn title(&self) -> String {
        match self {
            WrapAlg::AesKw(n) => format!("AES-{} key wrap", n * 8),
            WrapAlg::AesKwp(n) => format!("AES-{} key wrap with padding", n * 8),
            WrapAlg::RsaOaep(b) => format!("RSA-{b} OAEP SHA-256"),
        }
    }

    /// The mechanism.
    pub fn mechanism(&self) -> CK_MECHANISM_TYPE {
        match self {
            WrapAlg::AesKw(_) => CKM_AES_KEY_WRAP,
            WrapAlg::AesKwp(_) => CKM_AES_KEY_WRAP_PAD,
            WrapAlg::RsaOaep(_) => CKM_RSA_PKCS_OAEP,
        }
    }

    fn mech(&self) -> Mech {
        match self {
            WrapAlg::RsaOaep(_) => Mech::rsa_oaep(CKM_SHA256, CKG_MGF1_SHA256),
            other => Mech::plain(other.mechanism()),
        }
    }

    /// The wrapping key.
    pub fn key(&self) -> KeySpec {
        match self {
            WrapAlg::AesKw(n) | WrapAlg::AesKwp(n) => KeySpec::WrapAes(*n),
            WrapAlg::RsaOaep(b) => KeySpec::WrapRsa(*b),
        }
    }

    /// Length of the wrapped AES-256 key.
    pub fn wrapped_len(&self) -> usize {
        match self {
            WrapAlg::AesKw(_) | WrapAlg::AesKwp(_) => TARGET_LEN + 8,
            WrapAlg::RsaOaep(b) => (*b as usize).div_ceil(8),
        }
    }

    fn deterministic(&self) -> bool {
        !matches!(self, WrapAlg::RsaOaep(_))
    }
}

fn op(a: WrapAlg, wrap: bool) -> OpDef {
    let key = a.key();
    let dir = if wrap { "wrap" } else { "unwrap" };
    let id = match a {
        // `aes256-key-wrap` / `aes256-key-unwrap`.
        WrapAlg::AesKw(_) | WrapAlg::AesKwp(_) => a.stem().replace("-wrap", &format!("-{dir}")),
        WrapAlg::RsaOaep(_) => format!("{}-{dir}", a.stem()),
    };
    OpDef {
        id,
        title: format!("{} {dir} (an AES-256 key)", a.title()),
        kind: if wrap {
            OpKind::Wrap(a)
        } else {
            OpKind::Unwrap(a)
        },
        mechanism: a.mechanism(),
        also_needs: key
            .gen_mechanism()
            .into_iter()
            .chain(std::iter::once(CKM_AES_KEY_GEN))
            .collect(),
        key: Some(key),
        key_bits: match a {
            WrapAlg::RsaOaep(b) => Some(u64::from(b)),
            _ => None,
        },
        data: DataSpec::Fixed(TARGET_LEN),
    }
}

/// Wrap ops of the catalogue.
pub fn ops() -> Vec<OpDef> {
    let mut v = Vec::new();
    for a in [
        WrapAlg::AesKw(32),
        WrapAlg::AesKwp(32),
        WrapAlg::RsaOaep(2048),
    ] {
        v.push(op(a, true));
        v.push(op(a, false));
    }
    v
}

/// The keys of a wrap op: (wrapping, unwrapping).
fn wrap_keys(a: WrapAlg, p: &Prep<'_>) -> Result<(CK_OBJECT_HANDLE, CK_OBJECT_HANDLE), Failure> {
    let k = p.key()?;
    Ok(match a {
        WrapAlg::RsaOaep(_) => (k.public_key()?, k.private_key()?),
        _ => (k.secret_key()?, k.secret_key()?),
    })
}

/// How the unwrapped AES-256 keys of an op are made and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unwrapped {
    /// Not sensitive, extractable: the value is read back (`CKA_VALUE`) and
    /// compared with the original. Tried first (the path the committed
    /// baselines were measured on).
    Readable,
    /// Sensitive and not extractable, where the token refused a readable
    /// unwrapped key (with the code kept here): the key encrypts a test block
    /// (`CKM_AES_ECB`, else `CKM_AES_CBC`), compared with the block
    /// encrypted in-process under the original value.
    Sensitive(CK_RV),
}

/// Encryptions of one block that check a sensitive unwrapped key, in the
/// order tried (the next only when the token does not offer the mechanism):
/// the mechanism, its mode, its IV.
const CHECK_CIPHERS: &[(CK_MECHANISM_TYPE, AesMode, &[u8])] = &[
    (CKM_AES_ECB, AesMode::Ecb, &[]),
    (CKM_AES_CBC, AesMode::Cbc, &[0x5a; 16]),
];

impl Unwrapped {
    /// Template of an unwrapped AES-256 session key.
    fn template(self) -> Template {
        let readable = self == Unwrapped::Readable;
        Template::new()
            .ulong(CKA_CLASS, CKO_SECRET_KEY)
            .ulong(CKA_KEY_TYPE, CKK_AES)
            .bool(CKA_TOKEN, false)
            .bool(CKA_SENSITIVE, !readable)
            .bool(CKA_EXTRACTABLE, readable)
            .bool(CKA_ENCRYPT, true)
    }

    /// Check that the unwrapped key `h` is the key of value `value` (`what`
    /// names it).
    fn check(
        self,
        raw: &RawModule,
        s: CK_SESSION_HANDLE,
        h: CK_OBJECT_HANDLE,
        value: &[u8],
        what: &str,
    ) -> Result<(), Failure> {
        match self {
            Unwrapped::Readable => match raw.attribute(s, h, CKA_VALUE) {
                Ok(v) if v == value => Ok(()),
                Ok(_) => Err(check::failed(format!(
                    "{what} unwraps to another key value"
                ))),
                Err(rv) => Err(check::failed(format!(
                    "the key unwrapped from the {what} cannot be read back: {}",
                    ckr_name(rv)
                ))),
            },
            Unwrapped::Sensitive(_) => encrypts_as(raw, s, h, value, what),
        }
    }

    /// The result note for a sensitive unwrapped key.
    fn note(self) -> Option<String> {
        match self {
            Unwrapped::Readable => None,
            Unwrapped::Sensitive(rv) => Some(format!(
                "unwrapped keys made sensitive (the module refused readable ones: {}); \
                 checked by what they encrypt, not by their value",
                ckr_name(rv)
            )),
        }
    }
}

/// Whether the sensitive key `h` encrypts a test block as the AES-256 key
/// `value` does (computed in-process, [`check::aes_reference`]).
fn encrypts_as(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    h: CK_OBJECT_HANDLE,
    value: &[u8],
    what: &str,
) -> Result<(), Failure> {
    let block = test_data(16, 0xa5);
    let mut rv = CKR_MECHANISM_INVALID;
    for &(m, mode, iv) in CHECK_CIPHERS {
        let mut mech = if iv.is_empty() {
            Mech::plain(m)
        } else {
            Mech::with_bytes(m, iv)
        };
        rv = raw.encrypt_init(s, &mut mech, h);
        if rv == CKR_MECHANISM_INVALID {
            continue;
        }
        if rv != CKR_OK {
            break;
        }
        let want = check::aes_reference(CipherAlg::Aes(mode, 0), value, iv, &block)
            .ok_or_else(|| check::failed(format!("no in-process reference for the {what}")))?;
        let mut out = [0u8; 32];
        let (rv, n) = raw.encrypt(s, &block, &mut out);
        let got = match written(raw, rv, &out, n) {
            Ok(got) => got,
            Err(Failure::Rv(rv)) => {
                return Err(check::failed(format!(
                    "the key unwrapped from the {what} does not encrypt: {}",
                    ckr_name(rv)
                )));
            }
            Err(f) => return Err(f),
        };
        return if *got == want[..] {
            Ok(())
        } else {
            Err(check::failed(format!(
                "{what} unwraps to another key (it encrypts a test block otherwise)"
            )))
        };
    }
    Err(check::failed(format!(
        "the key unwrapped from the {what} does not encrypt: C_EncryptInit returned {}",
        ckr_name(rv)
    )))
}

/// The key that is wrapped: an AES-256 session key of a value drawn here,
/// imported, or else generated and read back.
fn target_key(p: &Prep<'_>) -> Result<(CK_OBJECT_HANDLE, Vec<u8>), Failure> {
    let value = random_bytes::<TARGET_LEN>().to_vec();
    let base = || {
        Template::new()
            .ulong(CKA_CLASS, CKO_SECRET_KEY)
            .ulong(CKA_KEY_TYPE, CKK_AES)
            .bool(CKA_TOKEN, false)
            .bool(CKA_SENSITIVE, false)
            .bool(CKA_EXTRACTABLE, true)
            .bool(CKA_ENCRYPT, true)
    };
    let (rv, h) = p
        .raw
        .create_object(p.setup, &mut base().bytes(CKA_VALUE, &value));
    if rv == CKR_OK {
        return Ok((h, value));
    }
    let (rv, h) = p.raw.generate_key(
        p.setup,
        &mut Mech::plain(CKM_AES_KEY_GEN),
        &mut base().ulong(CKA_VALUE_LEN, TARGET_LEN as CK_ULONG),
    );
    ck(rv)?;
    match p.raw.attribute(p.setup, h, CKA_VALUE) {
        Ok(v) if v.len() == TARGET_LEN => Ok((h, v)),
        _ => {
            let _ = p.raw.destroy_object(p.setup, h);
            Err(Failure::Unsupported(
                "the key to wrap cannot be read back, so unwrapped keys cannot be checked".into(),
            ))
        }
    }
}

/// Unwrap `blob` outside the timer as `how` says, check the key against
/// `value` (`what` names the blob) and destroy it; `Err` with the code when
/// the token refused to unwrap.
#[allow(clippy::too_many_arguments)]
fn try_unwrap(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    a: WrapAlg,
    key: CK_OBJECT_HANDLE,
    blob: &[u8],
    value: &[u8],
    how: Unwrapped,
    what: &str,
) -> Result<Result<(), Failure>, CK_RV> {
    let (rv, h) = raw.unwrap_key(s, &mut a.mech(), key, blob, &mut how.template());
    if rv != CKR_OK {
        return Err(rv);
    }
    let checked = how.check(raw, s, h, value, what);
    let _ = raw.destroy_object(s, h);
    Ok(checked)
}

/// [`try_unwrap`], a refusal being a failed check.
#[allow(clippy::too_many_arguments)]
fn unwraps_to(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    a: WrapAlg,
    key: CK_OBJECT_HANDLE,
    blob: &[u8],
    value: &[u8],
    how: Unwrapped,
    what: &str,
) -> Result<(), Failure> {
    try_unwrap(raw, s, a, key, blob, value, how, what).unwrap_or_else(|rv| {
        Err(check::failed(format!(
            "{what} does not unwrap: {}",
            ckr_name(rv)
        )))
    })
}

/// Unwrap the prepared `blob` readable, or else sensitive ([`Unwrapped`]),
/// and check it against `value`: how this token's unwrapped keys are made.
fn first_unwrap(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    a: WrapAlg,
    key: CK_OBJECT_HANDLE,
    blob: &[u8],
    value: &[u8],
) -> Result<Unwrapped, Failure> {
    const WHAT: &str = "prepared wrapped key";
    let attempt = |how| {
        try_unwrap(raw, s, a, key, blob, value, how, WHAT).map(|checked| checked.map(|()| how))
    };
    match attempt(Unwrapped::Readable) {
        Ok(checked) => checked,
        Err(rv) => match attempt(Unwrapped::Sensitive(rv)) {
            Ok(checked) => checked,
            // Refused both ways alike (a bad blob): as before the fallback.
            Err(again) if again == rv => Err(check::failed(format!(
                "{WHAT} does not unwrap: {}",
                ckr_name(rv)
            ))),
            // Refused both ways: say how each was.
            Err(again) => Err(check::failed(format!(
                "{WHAT} does not unwrap: {} (as a sensitive key: {})",
                ckr_name(rv),
                ckr_name(again)
            ))),
        },
    }
}

/// The target key, wrapped once outside the timer and checked: length, and
/// that it unwraps to the target's value; how unwrapped keys are made.
struct Prepared {
    target: CK_OBJECT_HANDLE,
    value: Vec<u8>,
    blob: Vec<u8>,
    unwrapped: Unwrapped,
}

fn prepare(a: WrapAlg, p: &Prep<'_>) -> Result<Prepared, Failure> {
    let (wrapping, unwrapping) = wrap_keys(a, p)?;
    let (target, value) = target_key(p)?;
    let wrapped = (|| {
        let mut blob = vec![0u8; a.wrapped_len() + 64];
        let (rv, n) = p
            .raw
            .wrap_key(p.setup, &mut a.mech(), wrapping, target, &mut blob);
        let n = written(p.raw, rv, &blob, n)?.len();
        blob.truncate(n);
        check::length("prepared wrapped key", n, a.wrapped_len())?;
        let how = first_unwrap(p.raw, p.setup, a, unwrapping, &blob, &value)?;
        Ok((blob, how))
    })();
    match wrapped {
        Ok((blob, unwrapped)) => Ok(Prepared {
            target,
            value,
            blob,
            unwrapped,
        }),
        Err(e) => {
            let _ = p.raw.destroy_object(p.setup, target);
            Err(e)
        }
    }
}

/// What wrap and unwrap workers share: the module, sessions, mechanism, the
/// prepared key (destroyed with the worker), the check sampler, and the
/// notes on the keys (a role-separated wrapping key, sensitive unwrapped
/// keys).
struct Common {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    setup: CK_SESSION_HANDLE,
    mech: Mech,
    prepared: Prepared,
    sampler: check::Sampler,
    notes: Vec<String>,
}

impl Common {
    fn new(a: WrapAlg, p: &Prep<'_>) -> Result<Self, Failure> {
        let prepared = prepare(a, p)?;
        let key = p.key()?;
        let notes = key
            .role_separated
            .map(|rv| {
                format!(
                    "role-separated wrapping key {} ({}; the module refused the usual one: {})",
                    a.key().name(),
                    super::role_separated::DESCRIPTION,
                    ckr_name(rv)
                )
            })
            .into_iter()
            .chain(prepared.unwrapped.note())
            .collect();
        Ok(Common {
            raw: p.raw.clone(),
            s: p.session,
            setup: p.setup,
            mech: a.mech(),
            prepared,
            sampler: check::Sampler::default(),
            notes,
        })
    }
}

impl Drop for Common {
    fn drop(&mut self) {
        let _ = self.raw.destroy_object(self.setup, self.prepared.target);
    }
}

struct WrapWorker {
    c: Common,
    alg: WrapAlg,
    wrapping: CK_OBJECT_HANDLE,
    unwrapping: CK_OBJECT_HANDLE,
    out: Vec<u8>,
    len: usize,
}

impl Worker for WrapWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let c = &mut self.c;
        let (rv, n) = c.raw.wrap_key(
            c.s,
            &mut c.mech,
            self.wrapping,
            c.prepared.target,
            &mut self.out,
        );
        self.len = n;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        let blob = written(&self.c.raw, rv, &self.out, self.len)?;
        check::length("wrapped key", blob.len(), self.alg.wrapped_len())?;
        if self.alg.deterministic() {
            if blob != &self.c.prepared.blob[..] {
                return Err(check::failed(
                    "wrapped key differs from the checked one (AES key wrap is deterministic)",
                ));
            }
            return Ok(());
        }
        let c = &mut self.c;
        let (raw, s, a, key) = (&c.raw, c.s, self.alg, self.unwrapping);
        let (value, how) = (&c.prepared.value, c.prepared.unwrapped);
        c.sampler
            .sample(|| unwraps_to(raw, s, a, key, blob, value, how, "sampled wrapped key"))
            .unwrap_or(Ok(()))
    }

    fn notes(&self) -> Vec<String> {
        self.c.notes.clone()
    }
}

/// Worker wrapping the prepared AES-256 key (checks: see the module
/// documentation).
pub fn wrap_worker(a: WrapAlg, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let (wrapping, unwrapping) = wrap_keys(a, p)?;
    Ok(Box::new(WrapWorker {
        c: Common::new(a, p)?,
        alg: a,
        wrapping,
        unwrapping,
        out: vec![0u8; a.wrapped_len() + 64],
        len: 0,
    }))
}

struct UnwrapWorker {
    c: Common,
    unwrapping: CK_OBJECT_HANDLE,
    template: Template,
    made: CK_OBJECT_HANDLE,
}

impl Worker for UnwrapWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let c = &mut self.c;
        let (rv, h) = c.raw.unwrap_key(
            c.s,
            &mut c.mech,
            self.unwrapping,
            &c.prepared.blob,
            &mut self.template,
        );
        self.made = h;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)?;
        let h = std::mem::take(&mut self.made);
        let c = &mut self.c;
        match c.prepared.unwrapped {
            Unwrapped::Readable => check::made_key(
                &c.raw,
                c.s,
                h,
                &c.prepared.value,
                &mut c.sampler,
                "unwrapped key",
            ),
            how => {
                let (raw, s, value) = (&c.raw, c.s, &c.prepared.value);
                check::sampled_then_destroyed(raw, s, h, &mut c.sampler, || {
                    how.check(raw, s, h, value, "unwrapped key")
                })
            }
        }
    }

    fn notes(&self) -> Vec<String> {
        self.c.notes.clone()
    }
}

/// Worker unwrapping a blob wrapped and checked while preparing; a corrupted
/// copy of the blob must be rejected first.
pub fn unwrap_worker(a: WrapAlg, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let (_, unwrapping) = wrap_keys(a, p)?;
    let c = Common::new(a, p)?;
    let how = c.prepared.unwrapped;
    let w = UnwrapWorker {
        c,
        unwrapping,
        template: how.template(),
        made: 0,
    };
    let bad = check::corrupted(&w.c.prepared.blob);
    let (rv, h) = p.raw.unwrap_key(
        p.setup,
        &mut a.mech(),
        unwrapping,
        &bad,
        &mut how.template(),
    );
    if rv == CKR_OK {
        let _ = p.raw.destroy_object(p.setup, h);
        return Err(check::failed(
            "self-check: a corrupted wrapped key was unwrapped",
        ));
    }
    Ok(Box::new(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_and_lengths() {
        let ids: Vec<String> = ops().into_iter().map(|o| o.id).collect();
        assert_eq!(
            ids,
            [
                "aes256-key-wrap",
                "aes256-key-unwrap",
                "aes256-key-wrap-pad",
                "aes256-key-unwrap-pad",
                "rsa2048-oaep-wrap",
                "rsa2048-oaep-unwrap"
            ]
        );
        assert_eq!(WrapAlg::AesKw(32).wrapped_len(), 40);
        assert_eq!(WrapAlg::AesKwp(32).wrapped_len(), 40);
        assert_eq!(WrapAlg::RsaOaep(2048).wrapped_len(), 256);
        assert!(WrapAlg::AesKw(32).deterministic() && !WrapAlg::RsaOaep(2048).deterministic());
    }
}
