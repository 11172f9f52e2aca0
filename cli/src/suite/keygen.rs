//! Key generation: the timed region is one C_GenerateKey(Pair); the new objects are
//! destroyed after the timer stops.

use std::sync::Arc;

use cryptoki_sys::*;

use super::alg::KeySpec;
use super::alg::{Curve, MlDsaSet, MlKemSet, SlhDsaSet};
use super::check;
use super::failure::Failure;
use super::failure::ck;
use super::keys::aes_template;
use super::keys::pair_templates_on;
use super::keys::pair_variants;
use super::keyset::may_refuse_session_objects;
use super::keyset::token_key_prefix;
use super::op::DataSpec;
use super::op::OpDef;
use super::op::OpKind;
use super::op::Prep;
use super::op::Worker;
use crate::token::raw::{Mech, RawModule, Template};

/// A key generation op.
pub fn keygen_op(k: KeySpec) -> OpDef {
    let key_bits = match k {
        KeySpec::Ec(c) => Some(u64::from(c.bits())),
        KeySpec::Rsa(b) => Some(b as u64),
        _ => None,
    };
    OpDef {
        id: format!("{}-keygen", k.name()),
        title: match k {
            KeySpec::Pbkdf2Sha256(n) => {
                format!("PBKDF2-HMAC-SHA256 ({n} iterations) AES-256 key generation")
            }
            KeySpec::MlDsa(s) => format!("{} key generation", s.title()),
            KeySpec::SlhDsa(s) => format!("{} key generation", s.title()),
            KeySpec::MlKem(s) => format!("{} key generation", s.title()),
            _ => format!("{} key generation", k.name().to_uppercase()),
        },
        kind: OpKind::KeyGen(k),
        mechanism: k.gen_mechanism().unwrap_or(0),
        also_needs: vec![],
        key: None,
        key_bits,
        data: DataSpec::Fixed(0),
    }
}

/// Iterations of the PBKDF2 op (its id and title say the count).
pub const PBKDF2_ITERATIONS: u32 = 1000;

/// Key generation ops of the catalogue: EC key pairs on P-256, P-384 and
/// P-521 (`CKM_EC_KEY_PAIR_GEN`, PKCS#11 3.0 mechanisms, "Elliptic curve key
/// pair generation"), Ed25519, RSA-2048, AES-256, and of PKCS#11 3.2 the
/// ML-DSA sets, the fast 128-bit SLH-DSA sets and the ML-KEM sets; last an
/// AES-256 key from a password by `CKM_PKCS5_PBKD2` (PBKDF2-HMAC-SHA256,
/// [`PBKDF2_ITERATIONS`] iterations, a 16-byte salt).
pub fn ops() -> Vec<OpDef> {
    [
        KeySpec::Ec(Curve::P256),
        KeySpec::Ec(Curve::P384),
        KeySpec::Ec(Curve::P521),
        KeySpec::Ed25519,
        KeySpec::Rsa(2048),
        KeySpec::Aes(32),
    ]
    .into_iter()
    .chain(MlDsaSet::ALL.map(KeySpec::MlDsa))
    .chain([SlhDsaSet::SHA2_128F, SlhDsaSet::SHAKE_128F].map(KeySpec::SlhDsa))
    .chain(MlKemSet::ALL.map(KeySpec::MlKem))
    .chain([KeySpec::Pbkdf2Sha256(PBKDF2_ITERATIONS)])
    .map(keygen_op)
    .collect()
}

enum Kind {
    Pair(Template, Template),
    Secret(Template),
}

struct KeyGenWorker {
    raw: Arc<RawModule>,
    s: CK_SESSION_HANDLE,
    mech: Mech,
    kind: Kind,
    made: [CK_OBJECT_HANDLE; 2],
    rate_from_latency: bool,
}

impl Worker for KeyGenWorker {
    #[inline]
    fn call(&mut self) -> CK_RV {
        match &mut self.kind {
            Kind::Pair(p, s) => {
                let (rv, a, b) = self.raw.generate_key_pair(self.s, &mut self.mech, p, s);
                self.made = [a, b];
                rv
            }
            Kind::Secret(t) => {
                let (rv, a) = self.raw.generate_key(self.s, &mut self.mech, t);
                self.made = [a, 0];
                rv
            }
        }
    }

    fn check(&mut self, rv: CK_RV) -> Result<(), Failure> {
        ck(rv)?;
        for h in std::mem::take(&mut self.made) {
            if h != 0 {
                ck(self.raw.destroy_object(self.s, h))?;
            }
        }
        Ok(())
    }

    fn rate_from_latency(&self) -> bool {
        self.rate_from_latency
    }
}

/// Worker generating a key of `spec`; tries the parameter encodings the
/// module may accept once while preparing. The keys are session objects, or
/// token objects labelled with [`token_key_prefix`] as `--key-store` says
/// (by default when the token refuses session objects, as tpm2-pkcs11 does).
pub fn worker(spec: KeySpec, p: &Prep<'_>) -> Result<Box<dyn Worker>, Failure> {
    let session_label = format!("hsm-bench-keygen-{}", p.thread);
    let token_label = format!("{}keygen-{}", token_key_prefix(), p.thread);
    if !p.store.session_first() {
        return store_worker(spec, p, &token_label, true);
    }
    match store_worker(spec, p, &session_label, false) {
        Err(Failure::Rv(rv)) if p.store.falls_back() && may_refuse_session_objects(rv) => {
            let w = store_worker(spec, p, &token_label, true).map_err(|e| {
                Failure::Check(format!(
                    "the module refused a session key ({}) and a token key ({})",
                    crate::token::ckr::ckr_name(rv),
                    e.name()
                ))
            })?;
            eprintln!(
                "note: the module refused a {} session key ({}); {}-keygen makes token \
                 objects labelled {token_label}, each destroyed after its call",
                spec.name(),
                crate::token::ckr::ckr_name(rv),
                spec.name()
            );
            Ok(w)
        }
        other => other,
    }
}

fn store_worker(
    spec: KeySpec,
    p: &Prep<'_>,
    label: &str,
    token: bool,
) -> Result<Box<dyn Worker>, Failure> {
    let secret = match spec {
        KeySpec::Aes(n) => Some(aes_template(n, label.as_bytes(), token)),
        KeySpec::Pbkdf2Sha256(n) => Some(pbkdf2_template(n, label.as_bytes(), token)),
        _ => None,
    };
    if let Some((mech, t)) = secret {
        let mut w = KeyGenWorker {
            raw: p.raw.clone(),
            s: p.session,
            mech,
            kind: Kind::Secret(t),
            made: [0, 0],
            rate_from_latency: token,
        };
        // One untimed trial, so that a refused template is found here; a
        // PBKDF2 key must also be the key computed in-process.
        let rv = w.call();
        if let (KeySpec::Pbkdf2Sha256(n), CKR_OK) = (spec, rv) {
            let made = w.made[0];
            pbkdf2_key_is_the_reference(p, made, n).inspect_err(|_| {
                p.raw.destroy_object(p.session, made);
            })?;
        }
        w.check(rv)?;
        return Ok(Box::new(w));
    }
    pair_worker(spec, p, label, token)
}

/// The password and salt of the PBKDF2 op.
const PBKDF2_PASSWORD: &[u8] = b"hsm-bench password";
const PBKDF2_SALT: &[u8] = b"hsm-bench salt16";

/// The AES-256 key `made` by `CKM_PKCS5_PBKD2` is sensitive, so it is
/// checked by what it does: its AES-ECB encryption of one block must equal
/// the encryption under PBKDF2-HMAC-SHA256(password, salt, `iterations`)
/// computed in-process (RFC 8018 §5.2).
fn pbkdf2_key_is_the_reference(
    p: &Prep<'_>,
    made: CK_OBJECT_HANDLE,
    iterations: u32,
) -> Result<(), Failure> {
    use aes::cipher::{BlockCipherEncrypt, KeyInit};
    let mut value = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<sha2::Sha256>(PBKDF2_PASSWORD, PBKDF2_SALT, iterations, &mut value);
    let mut block = aes::Block::default();
    block.fill(0x5a);
    ck(p.raw
        .encrypt_init(p.session, &mut Mech::plain(CKM_AES_ECB), made))?;
    let mut out = [0u8; 32];
    let (rv, n) = p.raw.encrypt(p.session, &block, &mut out);
    ck(rv)?;
    aes::Aes256::new_from_slice(&value)
        .map_err(|_| check::failed("PBKDF2 reference key"))?
        .encrypt_block(&mut block);
    if out.get(..n) != Some(block.as_slice()) {
        return Err(check::failed(
            "the PBKDF2 key differs from the one computed in-process",
        ));
    }
    Ok(())
}

/// `CKM_PKCS5_PBKD2` (HMAC-SHA256, `iterations`, a fixed 16-byte salt and
/// password) and the template of the AES-256 key it makes (sensitive).
fn pbkdf2_template(iterations: u32, label: &[u8], token: bool) -> (Mech, Template) {
    (
        Mech::pbkdf2(
            CKP_PKCS5_PBKD2_HMAC_SHA256,
            CK_ULONG::from(iterations),
            PBKDF2_SALT,
            PBKDF2_PASSWORD,
        ),
        Template::new()
            .ulong(CKA_CLASS, CKO_SECRET_KEY)
            .ulong(CKA_KEY_TYPE, CKK_AES)
            .ulong(CKA_VALUE_LEN, 32)
            .bool(CKA_TOKEN, token)
            .bytes(CKA_LABEL, label)
            .bool(CKA_SENSITIVE, true)
            .bool(CKA_ENCRYPT, true)
            .bool(CKA_DECRYPT, true),
    )
}

/// Worker generating key pairs of `spec` labelled `label`, as token objects
/// when `token` (ops/s then follows the latency: destroying token objects
/// between calls is slow on some modules, and it is not what is measured).
pub fn pair_worker(
    spec: KeySpec,
    p: &Prep<'_>,
    label: &str,
    token: bool,
) -> Result<Box<dyn Worker>, Failure> {
    let mut last = Failure::Check(format!("cannot generate {}", spec.name()));
    for v in 0..pair_variants(spec) {
        let Some((mech, pubt, privt)) = pair_templates_on(spec, label.as_bytes(), v, token) else {
            break;
        };
        let mut w = KeyGenWorker {
            raw: p.raw.clone(),
            s: p.session,
            mech,
            kind: Kind::Pair(pubt, privt),
            made: [0, 0],
            rate_from_latency: token,
        };
        // One untimed trial picks the encoding (and is not recorded).
        let rv = w.call();
        match w.check(rv) {
            Ok(()) => return Ok(Box::new(w)),
            Err(e) => last = e,
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ec_keygen_comes_on_three_curves_after_p256() {
        let ops = ops();
        let ids: Vec<&str> = ops.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "p256-keygen",
                "p384-keygen",
                "p521-keygen",
                "ed25519-keygen",
                "rsa2048-keygen",
                "aes256-keygen",
                "mldsa44-keygen",
                "mldsa65-keygen",
                "mldsa87-keygen",
                "slhdsa-sha2-128f-keygen",
                "slhdsa-shake-128f-keygen",
                "mlkem512-keygen",
                "mlkem768-keygen",
                "mlkem1024-keygen",
                "pbkdf2-sha256-1000-keygen",
            ]
        );
        let pbkdf2 = ops.last().unwrap();
        assert_eq!(pbkdf2.mechanism, CKM_PKCS5_PBKD2);
        assert!(pbkdf2.title.contains("1000 iterations"), "{}", pbkdf2.title);
        let mlkem = ops.iter().find(|o| o.id == "mlkem768-keygen").unwrap();
        assert_eq!(mlkem.mechanism, CKM_ML_KEM_KEY_PAIR_GEN);
        assert_eq!(mlkem.title, "ML-KEM-768 key generation");
        for (o, bits) in ops.iter().zip([256, 384, 521]) {
            assert_eq!(o.mechanism, CKM_EC_KEY_PAIR_GEN, "{}", o.id);
            assert_eq!(o.key_bits, Some(bits), "{}", o.id);
        }
        assert_eq!(ops[2].title, "P521 key generation");
    }
}
