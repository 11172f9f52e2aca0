//! Key encapsulation (PKCS#11 3.2 base spec §5.18, `C_EncapsulateKey` and
//! `C_DecapsulateKey`; mechanisms spec 3.2 ML-KEM, FIPS 203): the
//! catalogue's `mlkem{512,768,1024}-{encaps,decaps}` and the generic op's
//! `--function encapsulate,decapsulate`. The calls exist only in the 3.2
//! function list: a module without the "PKCS 11" 3.2 interface reports
//! these ops unsupported (`support.rs`).
//!
//! Timed: one `C_EncapsulateKey` (a new secret key and its ciphertext), or
//! one `C_DecapsulateKey` of a ciphertext made while preparing. Each call
//! makes a session key (a token key under `--key-store token`), destroyed
//! after the timer stops, as the derive ops do.
//!
//! Checks: while preparing, a ciphertext is encapsulated and decapsulated
//! and the two keys must hold the same secret, compared by the first way the
//! token allows ([`Compare`]): their `CKA_VALUE` (a generic secret made not
//! sensitive and extractable), else what each encrypts (AES-256, one
//! `CKM_AES_ECB` block), else their MACs (a generic secret,
//! `CKM_SHA256_HMAC`). A corrupted copy of the ciphertext must decapsulate
//! to a different secret (FIPS 203 §6.3: ML-KEM's implicit rejection gives
//! an unrelated secret, not an error; the generic op also accepts a
//! refusal, its mechanism being unknown). Catalogue ciphertexts must have
//! FIPS 203's length. On a sample of the timed calls (see
//! [`check::Sampler`]): an encapsulation's ciphertext is decapsulated and
//! must give its key's secret; a decapsulated key must hold the prepared
//! secret.

use std::sync::Arc;

use cryptoki_sys::*;

use super::alg::{GenericFn, KeySpec, MlKemSet};
use super::check;
use super::failure::{Failure, ck, written};
use super::keyset::{KeyHandles, token_key_prefix};
use super::op::{DataSpec, OpDef, OpKind, Prep, Worker};
use crate::token::ckr::ckr_name;
use crate::token::raw::{Mech, RawModule, Template};

/// Room for a ciphertext: ML-KEM-1024's is 1,568 bytes; the generic op's
/// mechanism may have longer ones.
const CT_BUFFER: usize = 16 * 1024;

/// The length of the secret keys made: ML-KEM's shared secret (FIPS 203
/// §7: 32 bytes), as `CKA_VALUE_LEN`.
const SECRET_LEN: CK_ULONG = 32;

/// The reason KEM ops are unsupported on a module without the 3.2 interface.
pub const NO_3_2: &str = "the module offers no PKCS#11 3.2 interface \
     (C_GetInterface \"PKCS 11\" 3.2), the only function list with \
     C_EncapsulateKey and C_DecapsulateKey";

/// An encapsulation op on a generated ML-KEM pair (or an existing one).
pub fn encaps_op(s: MlKemSet, key: KeySpec) -> OpDef {
    kem_op(s, key, "encaps", "encapsulate (C_EncapsulateKey)")
}

/// A decapsulation op on a generated ML-KEM pair (or an existing one).
pub fn decaps_op(s: MlKemSet, key: KeySpec) -> OpDef {
    kem_op(s, key, "decaps", "decapsulate (C_DecapsulateKey)")
}

fn kem_op(s: MlKemSet, key: KeySpec, dir: &str, what: &str) -> OpDef {
    OpDef {
        id: format!("{}-{dir}", s.id()),
        title: format!("{} {what}", s.title()),
        kind: if dir == "encaps" {
            OpKind::Encapsulate(s)
        } else {
            OpKind::Decapsulate(s)
        },
        mechanism: CKM_ML_KEM,
        also_needs: KeySpec::MlKem(s).gen_mechanism().into_iter().collect(),
        key: Some(key),
        key_bits: None,
        data: DataSpec::Fixed(0),
    }
}

/// KEM ops of the catalogue: encapsulate and decapsulate at each ML-KEM
/// set (their key generation is in `keygen.rs`).
pub fn ops() -> Vec<OpDef> {
    MlKemSet::ALL
        .into_iter()
        .flat_map(|s| {
            [
                encaps_op(s, KeySpec::MlKem(s)),
                decaps_op(s, KeySpec::MlKem(s)),
            ]
        })
        .collect()
}

/// How the secrets of an encapsulated and a decapsulated key are compared,
/// in the order they are tried; each makes its keys with its own template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compare {
    /// A generic secret, not sensitive, extractable: `CKA_VALUE`.
    Value,
    /// An AES-256 key that encrypts: `CKM_AES_ECB` of one block.
    Encrypt,
    /// A generic secret that signs: `CKM_SHA256_HMAC` of 32 bytes.
    Mac,
}

impl Compare {
    const ALL: [Compare; 3] = [Compare::Value, Compare::Encrypt, Compare::Mac];

    fn name(self) -> &'static str {
        match self {
            Compare::Value => "CKA_VALUE",
            Compare::Encrypt => "AES-ECB",
            Compare::Mac => "HMAC-SHA256",
        }
    }

    /// What a result says when the secrets are not compared by value.
    fn notes(self) -> Vec<String> {
        match self {
            Compare::Value => Vec::new(),
            other => vec![format!(
                "the token refuses readable KEM keys: the two sides' secrets are compared by \
                 {} with sensitive keys",
                other.name()
            )],
        }
    }

    /// The template of the keys the calls make: session objects, or token
    /// objects labelled `label` (with [`token_key_prefix`], so that `keys
    /// delete` finds any a killed run leaves).
    fn template(self, label: Option<&str>) -> Template {
        let t = Template::new()
            .ulong(CKA_CLASS, CKO_SECRET_KEY)
            .ulong(CKA_VALUE_LEN, SECRET_LEN);
        let t = match label {
            Some(l) => t.bool(CKA_TOKEN, true).bytes(CKA_LABEL, l.as_bytes()),
            None => t.bool(CKA_TOKEN, false),
        };
        match self {
            Compare::Value => t
                .ulong(CKA_KEY_TYPE, CKK_GENERIC_SECRET)
                .bool(CKA_SENSITIVE, false)
                .bool(CKA_EXTRACTABLE, true),
            Compare::Encrypt => t
                .ulong(CKA_KEY_TYPE, CKK_AES)
                .bool(CKA_SENSITIVE, true)
                .bool(CKA_ENCRYPT, true),
            Compare::Mac => t
                .ulong(CKA_KEY_TYPE, CKK_GENERIC_SECRET)
                .bool(CKA_SENSITIVE, true)
                .bool(CKA_SIGN, true),
        }
    }

    /// What stands for key `h`'s secret: its value, or what it computes.
    fn fingerprint(
        self,
        raw: &RawModule,
        s: CK_SESSION_HANDLE,
        h: CK_OBJECT_HANDLE,
    ) -> Result<Vec<u8>, CK_RV> {
        let (mut m, data, call) = match self {
            Compare::Value => {
                let v = raw.attribute(s, h, CKA_VALUE)?;
                return if v.is_empty() {
                    Err(CKR_ATTRIBUTE_SENSITIVE)
                } else {
                    Ok(v)
                };
            }
            Compare::Encrypt => (
                Mech::plain(CKM_AES_ECB),
                [0x5a; 16].as_slice(),
                crate::token::raw::KeyCall::Encrypt,
            ),
            Compare::Mac => (
                Mech::plain(CKM_SHA256_HMAC),
                [0xa5; 32].as_slice(),
                crate::token::raw::KeyCall::Sign,
            ),
        };
        let mut out = [0u8; 64];
        let (rv, n) = raw.key_single(call, s, &mut m, h, data, &mut out);
        match written(raw, rv, &out, n) {
            Ok(v) if !v.is_empty() => Ok(v.to_vec()),
            Ok(_) => Err(CKR_GENERAL_ERROR),
            Err(Failure::Rv(rv)) => Err(rv),
            Err(_) => Err(rv),
        }
    }
}

/// The mechanism and keys of a KEM op, and how its secrets are compared.
struct Kem {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    mech: CK_MECHANISM_TYPE,
    param: Arc<[u8]>,
    public: CK_OBJECT_HANDLE,
    private: CK_OBJECT_HANDLE,
    /// The label of the token objects the calls make (`--key-store
    /// token`); `None`: session objects.
    label: Option<String>,
    /// FIPS 203's ciphertext length (catalogue ops).
    ct_len: Option<usize>,
}

/// Why one way of comparing did not work: try the next, or give up.
enum Attempt {
    Next(String),
    Stop(Failure),
}

/// Return values that say a template or a comparing call is refused (the
/// next way of comparing may work), not that the KEM failed.
fn refused(rv: CK_RV) -> bool {
    matches!(
        rv,
        CKR_TEMPLATE_INCONSISTENT
            | CKR_TEMPLATE_INCOMPLETE
            | CKR_ATTRIBUTE_VALUE_INVALID
            | CKR_ATTRIBUTE_TYPE_INVALID
            | CKR_ATTRIBUTE_READ_ONLY
            | CKR_KEY_TYPE_INCONSISTENT
            | CKR_KEY_SIZE_RANGE
    )
}

impl Kem {
    fn mech(&self) -> Mech {
        Mech::with_bytes(self.mech, &self.param)
    }

    /// One encapsulation outside the timer: the ciphertext and the new key.
    fn encapsulate(&self, t: &mut Template) -> Result<(Vec<u8>, CK_OBJECT_HANDLE), Failure> {
        let mut out = vec![0u8; CT_BUFFER];
        let (rv, n, h) =
            self.raw
                .encapsulate_key(self.s, &mut self.mech(), self.public, t, &mut out);
        if rv == CKR_OK && h == CK_INVALID_HANDLE {
            return Err(check::failed("C_EncapsulateKey returned CKR_OK and no key"));
        }
        let n = match written(&self.raw, rv, &out, n) {
            Ok(ct) => ct.len(),
            Err(f) => {
                // A module that claimed CKR_OK with an overlong ciphertext
                // made its key all the same.
                if matches!(f, Failure::Module(_)) && h != CK_INVALID_HANDLE {
                    let _ = self.raw.destroy_object(self.s, h);
                }
                return Err(f);
            }
        };
        out.truncate(n);
        if let Some(want) = self.ct_len {
            check::length("ciphertext", n, want).inspect_err(|_| {
                let _ = self.raw.destroy_object(self.s, h);
            })?;
        }
        Ok((out, h))
    }

    /// One decapsulation of `ct` outside the timer: the return value and
    /// the new key.
    fn decapsulate(&self, t: &mut Template, ct: &[u8]) -> (CK_RV, CK_OBJECT_HANDLE) {
        self.raw
            .decapsulate_key(self.s, &mut self.mech(), self.private, t, ct)
    }

    /// `c`'s fingerprint of key `h`, which is destroyed either way.
    fn fingerprint_of(&self, c: Compare, h: CK_OBJECT_HANDLE) -> Result<Vec<u8>, CK_RV> {
        let fp = c.fingerprint(&self.raw, self.s, h);
        let _ = self.raw.destroy_object(self.s, h);
        fp
    }

    /// The fingerprint of the secret `ct` decapsulates to.
    fn decapsulated(&self, c: Compare, ct: &[u8]) -> Result<Vec<u8>, Failure> {
        let (rv, h) = self.decapsulate(&mut c.template(self.label.as_deref()), ct);
        ck(rv)?;
        if h == CK_INVALID_HANDLE {
            return Err(check::failed("C_DecapsulateKey returned CKR_OK and no key"));
        }
        self.fingerprint_of(c, h).map_err(|rv| {
            check::failed(format!(
                "the decapsulated key cannot be compared ({}): {}",
                c.name(),
                ckr_name(rv)
            ))
        })
    }

    /// Encapsulate, decapsulate and compare the two secrets `c`'s way:
    /// the ciphertext and the secret's fingerprint.
    fn agree(&self, c: Compare) -> Result<(Vec<u8>, Vec<u8>), Attempt> {
        let mut t = c.template(self.label.as_deref());
        let (ct, sent) = match self.encapsulate(&mut t) {
            Ok(v) => v,
            Err(Failure::Rv(rv)) if refused(rv) => {
                return Err(Attempt::Next(format!("C_EncapsulateKey: {}", ckr_name(rv))));
            }
            Err(f) => return Err(Attempt::Stop(f)),
        };
        let sent = self
            .fingerprint_of(c, sent)
            .map_err(|rv| Attempt::Next(ckr_name(rv)))?;
        let (rv, got) = self.decapsulate(&mut t, &ct);
        if rv != CKR_OK {
            return Err(if refused(rv) {
                Attempt::Next(format!("C_DecapsulateKey: {}", ckr_name(rv)))
            } else {
                Attempt::Stop(check::failed(format!(
                    "self-check: the prepared ciphertext does not decapsulate: {}",
                    ckr_name(rv)
                )))
            });
        }
        let got = self
            .fingerprint_of(c, got)
            .map_err(|rv| Attempt::Next(ckr_name(rv)))?;
        if got != sent {
            return Err(Attempt::Stop(check::failed(format!(
                "self-check: the decapsulated secret differs from the encapsulated one ({})",
                c.name()
            ))));
        }
        Ok((ct, sent))
    }

    /// The first way of comparing that works, with a checked ciphertext and
    /// its secret's fingerprint; a corrupted copy of the ciphertext must
    /// give another secret (or, when `refusal_ok`, be refused).
    fn prepare(&self, refusal_ok: bool) -> Result<(Compare, Vec<u8>, Vec<u8>), Failure> {
        let mut why = Vec::new();
        for c in Compare::ALL {
            let (ct, secret) = match self.agree(c) {
                Ok(v) => v,
                Err(Attempt::Next(w)) => {
                    why.push(format!("{}: {w}", c.name()));
                    continue;
                }
                Err(Attempt::Stop(f)) => return Err(f),
            };
            match self.decapsulated(c, &check::corrupted(&ct)) {
                Ok(other) if other == secret => {
                    return Err(check::failed(
                        "self-check: a corrupted ciphertext decapsulates to the same secret",
                    ));
                }
                Ok(_) => {}
                Err(Failure::Rv(_)) if refusal_ok => {}
                Err(Failure::Rv(rv)) => {
                    return Err(check::failed(format!(
                        "self-check: a corrupted ciphertext is refused ({}) where ML-KEM \
                         gives an implicit-rejection secret (FIPS 203 §6.3)",
                        ckr_name(rv)
                    )));
                }
                Err(f) => return Err(f),
            }
            return Ok((c, ct, secret));
        }
        Err(Failure::Unsupported(format!(
            "the two sides' secrets cannot be compared: {}",
            why.join("; ")
        )))
    }
}

struct EncapsWorker {
    kem: Kem,
    mech: Mech,
    template: Template,
    compare: Compare,
    out: Vec<u8>,
    len: usize,
    made: CK_OBJECT_HANDLE,
    sampler: check::Sampler,
}

impl Worker for EncapsWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let k = &self.kem;
        let (rv, n, h) = k.raw.encapsulate_key(
            k.s,
            &mut self.mech,
            k.public,
            &mut self.template,
            &mut self.out,
        );
        self.len = n;
        self.made = h;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        let h = std::mem::take(&mut self.made);
        let k = &self.kem;
        let ct = match written(&k.raw, rv, &self.out, self.len) {
            Ok(ct) => ct,
            Err(f) => {
                // A module that claimed CKR_OK with an overlong ciphertext
                // made its key all the same.
                if matches!(f, Failure::Module(_)) && h != CK_INVALID_HANDLE {
                    let _ = k.raw.destroy_object(k.s, h);
                }
                return Err(f);
            }
        };
        if h == CK_INVALID_HANDLE {
            return Err(check::failed("C_EncapsulateKey returned CKR_OK and no key"));
        }
        let compare = self.compare;
        check::sampled_then_destroyed(&k.raw, k.s, h, &mut self.sampler, || {
            if let Some(want) = k.ct_len {
                check::length("ciphertext", ct.len(), want)?;
            }
            let sent = compare.fingerprint(&k.raw, k.s, h).map_err(|rv| {
                check::failed(format!(
                    "the encapsulated key cannot be compared: {}",
                    ckr_name(rv)
                ))
            })?;
            if k.decapsulated(compare, ct)? != sent {
                return Err(check::failed(
                    "sampled ciphertext decapsulates to another secret",
                ));
            }
            Ok(())
        })
    }

    fn rate_from_latency(&self) -> bool {
        self.kem.label.is_some()
    }

    fn notes(&self) -> Vec<String> {
        self.compare.notes()
    }
}

struct DecapsWorker {
    kem: Kem,
    mech: Mech,
    template: Template,
    compare: Compare,
    ct: Vec<u8>,
    secret: Vec<u8>,
    made: CK_OBJECT_HANDLE,
    sampler: check::Sampler,
}

impl Worker for DecapsWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        let k = &self.kem;
        let (rv, h) =
            k.raw
                .decapsulate_key(k.s, &mut self.mech, k.private, &mut self.template, &self.ct);
        self.made = h;
        rv
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)?;
        let h = std::mem::take(&mut self.made);
        if h == CK_INVALID_HANDLE {
            return Err(check::failed("C_DecapsulateKey returned CKR_OK and no key"));
        }
        let (k, c, want) = (&self.kem, self.compare, &self.secret);
        check::sampled_then_destroyed(&k.raw, k.s, h, &mut self.sampler, || {
            match c.fingerprint(&k.raw, k.s, h) {
                Ok(v) if v == *want => Ok(()),
                Ok(_) => Err(check::failed("decapsulated secret has another value")),
                Err(rv) => Err(check::failed(format!(
                    "the decapsulated key cannot be compared: {}",
                    ckr_name(rv)
                ))),
            }
        })
    }

    fn rate_from_latency(&self) -> bool {
        self.kem.label.is_some()
    }

    fn notes(&self) -> Vec<String> {
        self.compare.notes()
    }
}

/// The worker of `f` (encapsulate or decapsulate) with `kem` prepared.
fn worker(f: GenericFn, kem: Kem, refusal_ok: bool) -> Result<Box<dyn Worker>, Failure> {
    if !kem.raw.offers_3_2() {
        return Err(Failure::Unsupported(NO_3_2.into()));
    }
    let (compare, ct, secret) = kem.prepare(refusal_ok)?;
    let (mech, template) = (kem.mech(), compare.template(kem.label.as_deref()));
    if f == GenericFn::Encapsulate {
        return Ok(Box::new(EncapsWorker {
            kem,
            mech,
            template,
            compare,
            out: vec![0u8; CT_BUFFER],
            len: 0,
            made: CK_INVALID_HANDLE,
            sampler: check::Sampler::default(),
        }));
    }
    Ok(Box::new(DecapsWorker {
        kem,
        mech,
        template,
        compare,
        ct,
        secret,
        made: CK_INVALID_HANDLE,
        sampler: check::Sampler::default(),
    }))
}

/// Both halves of the op's key pair: the public key makes ciphertexts, the
/// private key takes them; each function's results are checked with the
/// other half.
fn pair(k: &KeyHandles) -> Result<(CK_OBJECT_HANDLE, CK_OBJECT_HANDLE), Failure> {
    let need = |h: Option<CK_OBJECT_HANDLE>, what: &str| {
        h.ok_or_else(|| Failure::Unsupported(format!("the key has no {what}")))
    };
    Ok((
        need(k.public, "public key to encapsulate with")?,
        need(k.private, "private key to decapsulate with")?,
    ))
}

/// The label of the keys a worker's calls make as token objects, when
/// `--key-store` wants token objects (as `keygen.rs` and `derive.rs` do;
/// session objects are not retried as token objects here).
fn token_label(p: &Prep<'_>) -> Option<String> {
    (!p.store.session_first()).then(|| format!("{}kem-{}", token_key_prefix(), p.thread))
}

/// Worker of a catalogue op (`OpKind::Encapsulate` / `Decapsulate`).
pub fn catalogue_worker(op: &OpDef, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let (f, s) = match op.kind {
        OpKind::Encapsulate(s) => (GenericFn::Encapsulate, s),
        OpKind::Decapsulate(s) => (GenericFn::Decapsulate, s),
        _ => return Err(Failure::Check("not a KEM op".into())),
    };
    let (public, private) = pair(p.key()?)?;
    let kem = Kem {
        raw: p.raw.clone(),
        s: p.session,
        mech: CKM_ML_KEM,
        param: Arc::from([]),
        public,
        private,
        label: token_label(p),
        ct_len: Some(s.ciphertext_len()),
    };
    worker(f, kem, false)
}

/// Worker of the generic op's `encapsulate` / `decapsulate` (`--mechanism
/// … --function encapsulate,decapsulate --key-label L`): the mechanism and
/// parameter bytes as given, the key pair found by label.
pub fn generic_worker(
    f: GenericFn,
    mech: CK_MECHANISM_TYPE,
    param: Arc<[u8]>,
    p: &Prep<'_>,
) -> Result<Box<dyn Worker>, Failure> {
    let (public, private) = pair(p.key()?)?;
    let kem = Kem {
        raw: p.raw.clone(),
        s: p.session,
        mech,
        param,
        public,
        private,
        label: token_label(p),
        ct_len: None,
    };
    worker(f, kem, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_come_per_set_and_direction_with_ckm_ml_kem() {
        let ids: Vec<String> = ops().into_iter().map(|o| o.id).collect();
        assert_eq!(
            ids,
            [
                "mlkem512-encaps",
                "mlkem512-decaps",
                "mlkem768-encaps",
                "mlkem768-decaps",
                "mlkem1024-encaps",
                "mlkem1024-decaps",
            ]
        );
        for o in ops() {
            assert_eq!(o.mechanism, CKM_ML_KEM, "{}", o.id);
            assert_eq!(o.also_needs, [CKM_ML_KEM_KEY_PAIR_GEN], "{}", o.id);
            assert!(!o.takes_data(), "{}", o.id);
        }
        let o = decaps_op(MlKemSet::K768, KeySpec::MlKem(MlKemSet::K768));
        assert_eq!(o.title, "ML-KEM-768 decapsulate (C_DecapsulateKey)");
        assert_eq!(o.timed_calls(), "C_DecapsulateKey");
        assert_eq!(
            encaps_op(MlKemSet::K512, KeySpec::Existing).timed_calls(),
            "C_EncapsulateKey"
        );
    }

    /// FIPS 203 Table 3, and the parameter sets of PKCS#11 3.2.
    #[test]
    fn ciphertext_lengths_and_parameter_sets() {
        let lens: Vec<usize> = MlKemSet::ALL.iter().map(|s| s.ciphertext_len()).collect();
        assert_eq!(lens, [768, 1088, 1568]);
        assert!(lens.iter().all(|&n| n <= CT_BUFFER));
        for s in MlKemSet::ALL {
            assert_eq!(MlKemSet::of(s.parameter_set()), Some(s));
        }
        assert_eq!(MlKemSet::K1024.parameter_set(), CKP_ML_KEM_1024);
        assert_eq!(MlKemSet::of(0), None);
    }

    /// Only template refusals move on to the next way of comparing; a KEM
    /// that fails stops.
    #[test]
    fn template_refusals_try_the_next_comparison() {
        assert!(refused(CKR_TEMPLATE_INCONSISTENT) && refused(CKR_ATTRIBUTE_VALUE_INVALID));
        assert!(!refused(CKR_KEY_HANDLE_INVALID) && !refused(CKR_GENERAL_ERROR));
        assert_eq!(
            Compare::ALL.map(Compare::name),
            ["CKA_VALUE", "AES-ECB", "HMAC-SHA256"]
        );
        assert!(Compare::Value.notes().is_empty());
        assert!(Compare::Mac.notes()[0].contains("HMAC-SHA256"));
    }
}
