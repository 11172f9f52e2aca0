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
//! of it, and compare a sample of the unwrapped keys' values with the
//! original.

use std::sync::Arc;

use cryptoki_sys::*;

use super::keys::KeySpec;
use super::{DataSpec, Failure, OpDef, OpKind, Prep, Worker, check, ck, random_bytes};
use crate::ckr::ckr_name;
use crate::raw::{Mech, RawModule, Template};

/// Length of the key that is wrapped (AES-256).
const TARGET_LEN: usize = 32;

/// A wrapping mechanism with its wrapping key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WrapAlg {
    /// AES key wrap (RFC 3394) under an AES key of n bytes.
    AesKw(u32),
    /// AES key wrap with padding (RFC 5649) under an AES key of n bytes.
    AesKwp(u32),
    /// RSA-OAEP (SHA-256, MGF1-SHA256) under an RSA key pair of n bits.
    RsaOaep(u32),
}

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

/// Template of an unwrapped AES-256 key: a session object whose value can be
/// read back for the checks.
fn unwrapped_template() -> Template {
    Template::new()
        .ulong(CKA_CLASS, CKO_SECRET_KEY)
        .ulong(CKA_KEY_TYPE, CKK_AES)
        .bool(CKA_TOKEN, false)
        .bool(CKA_SENSITIVE, false)
        .bool(CKA_EXTRACTABLE, true)
        .bool(CKA_ENCRYPT, true)
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

/// Unwrap `blob` outside the timer and compare the key's value with `value`.
fn unwraps_to(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    a: WrapAlg,
    key: CK_OBJECT_HANDLE,
    blob: &[u8],
    value: &[u8],
    what: &str,
) -> Result<(), Failure> {
    let (rv, h) = raw.unwrap_key(s, &mut a.mech(), key, blob, &mut unwrapped_template());
    if rv != CKR_OK {
        return Err(check::failed(format!(
            "{what} does not unwrap: {}",
            ckr_name(rv)
        )));
    }
    let got = raw.attribute(s, h, CKA_VALUE);
    let _ = raw.destroy_object(s, h);
    match got {
        Ok(v) if v == value => Ok(()),
        Ok(_) => Err(check::failed(format!(
            "{what} unwraps to another key value"
        ))),
        Err(rv) => Err(check::failed(format!(
            "the key unwrapped from the {what} cannot be read back: {}",
            ckr_name(rv)
        ))),
    }
}

/// The target key, wrapped once outside the timer and checked: length, and
/// that it unwraps to the target's value.
struct Prepared {
    target: CK_OBJECT_HANDLE,
    value: Vec<u8>,
    blob: Vec<u8>,
}

fn prepare(a: WrapAlg, p: &Prep<'_>) -> Result<Prepared, Failure> {
    let (wrapping, unwrapping) = wrap_keys(a, p)?;
    let (target, value) = target_key(p)?;
    let wrapped = (|| {
        let mut blob = vec![0u8; a.wrapped_len() + 64];
        let (rv, n) = p
            .raw
            .wrap_key(p.setup, &mut a.mech(), wrapping, target, &mut blob);
        ck(rv)?;
        blob.truncate(n);
        check::length("prepared wrapped key", n, a.wrapped_len())?;
        unwraps_to(
            p.raw,
            p.setup,
            a,
            unwrapping,
            &blob,
            &value,
            "prepared wrapped key",
        )?;
        Ok(blob)
    })();
    match wrapped {
        Ok(blob) => Ok(Prepared {
            target,
            value,
            blob,
        }),
        Err(e) => {
            let _ = p.raw.destroy_object(p.setup, target);
            Err(e)
        }
    }
}

/// What wrap and unwrap workers share: the module, sessions, mechanism, the
/// prepared key (destroyed with the worker) and the check sampler.
struct Common {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    setup: CK_SESSION_HANDLE,
    mech: Mech,
    prepared: Prepared,
    sampler: check::Sampler,
}

impl Common {
    fn new(a: WrapAlg, p: &Prep<'_>) -> Result<Self, Failure> {
        Ok(Common {
            raw: p.raw.clone(),
            s: p.session,
            setup: p.setup,
            mech: a.mech(),
            prepared: prepare(a, p)?,
            sampler: check::Sampler::default(),
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
        ck(rv)?;
        check::length("wrapped key", self.len, self.alg.wrapped_len())?;
        let blob = &self.out[..self.len];
        if self.alg.deterministic() {
            if blob != &self.c.prepared.blob[..] {
                return Err(check::failed(
                    "wrapped key differs from the checked one (AES key wrap is deterministic)",
                ));
            }
            return Ok(());
        }
        let c = &mut self.c;
        let (raw, s, a, key, value) = (&c.raw, c.s, self.alg, self.unwrapping, &c.prepared.value);
        c.sampler
            .sample(|| unwraps_to(raw, s, a, key, blob, value, "sampled wrapped key"))
            .unwrap_or(Ok(()))
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
        check::made_key(
            &c.raw,
            c.s,
            h,
            &c.prepared.value,
            &mut c.sampler,
            "unwrapped key",
        )
    }
}

/// Worker unwrapping a blob wrapped and checked while preparing; a corrupted
/// copy of the blob must be rejected first.
pub fn unwrap_worker(a: WrapAlg, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let (_, unwrapping) = wrap_keys(a, p)?;
    let w = UnwrapWorker {
        c: Common::new(a, p)?,
        unwrapping,
        template: unwrapped_template(),
        made: 0,
    };
    let bad = check::corrupted(&w.c.prepared.blob);
    let (rv, h) = p.raw.unwrap_key(
        p.setup,
        &mut a.mech(),
        unwrapping,
        &bad,
        &mut unwrapped_template(),
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
