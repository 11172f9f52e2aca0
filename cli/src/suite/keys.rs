//! Keys for the benchmark: specifications, generation templates (session objects by
//! default), a per-module cache, and detection of an existing key's type.

use std::collections::HashMap;
use std::sync::Arc;

use cryptoki_sys::*;

use super::alg::KeySpec;
use super::failure::Failure;
use super::failure::ck;
use super::keyset::KeyHandles;
use super::keyset::StoreMode;
use super::keyset::may_refuse_session_objects;
use super::keyset::token_key_prefix;
use crate::suite::alg::ED25519_OID;
use crate::suite::alg::ED25519_PRINTABLE;
use crate::suite::alg::P256_OID;
use crate::suite::alg::P384_OID;
use crate::suite::alg::P521_OID;
use crate::suite::alg::SECP256K1_OID;
use crate::suite::alg::X25519_OID;
use crate::suite::alg::X25519_PRINTABLE;
use crate::token::random::random_bytes;
use crate::token::raw::{Mech, RawModule, Template};

/// The name of the curve whose `CKA_EC_PARAMS` are `params` (its hex for
/// curves hsm-bench does not know).
pub fn curve_name(params: &[u8]) -> String {
    const NAMED: &[(&[u8], &str)] = &[
        (P256_OID, "P-256"),
        (P384_OID, "P-384"),
        (P521_OID, "P-521"),
        (SECP256K1_OID, "secp256k1"),
        (ED25519_OID, "Ed25519"),
        (ED25519_PRINTABLE, "Ed25519"),
        (X25519_OID, "X25519"),
        (X25519_PRINTABLE, "X25519"),
    ];
    /// Curves the catalogue does not cover, named in messages.
    const OTHERS: &[(&[u8], &str)] = &[
        (
            &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x01],
            "P-192",
        ),
        (&[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x21], "P-224"),
        (
            &[
                0x06, 0x09, 0x2b, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x07,
            ],
            "brainpoolP256r1",
        ),
        (
            &[
                0x06, 0x09, 0x2b, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0b,
            ],
            "brainpoolP384r1",
        ),
        (
            &[
                0x06, 0x09, 0x2b, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0d,
            ],
            "brainpoolP512r1",
        ),
    ];
    NAMED
        .iter()
        .chain(OTHERS)
        .find(|(p, _)| *p == params)
        .map(|(_, n)| n.to_string())
        .or_else(|| dotted_oid(params).map(|oid| format!("OID {oid}")))
        .unwrap_or_else(|| params.iter().map(|b| format!("{b:02x}")).collect())
}

/// The dotted form of a DER OBJECT IDENTIFIER (`06 len …`), if `der` is
/// one (X.690 §8.19).
fn dotted_oid(der: &[u8]) -> Option<String> {
    let (&[0x06, len], body) = der.split_first_chunk::<2>()? else {
        return None;
    };
    if body.len() != usize::from(len) || body.is_empty() || body.last()? & 0x80 != 0 {
        return None;
    }
    let mut arcs = Vec::new();
    let mut arc: u64 = 0;
    for &b in body {
        arc = arc.checked_mul(128)? | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            arcs.push(arc);
            arc = 0;
        }
    }
    let first = arcs.first().copied()?;
    let (a, b) = match first {
        0..=39 => (0, first),
        40..=79 => (1, first - 40),
        _ => (2, first - 80),
    };
    let rest: Vec<String> = arcs[1..].iter().map(u64::to_string).collect();
    Some(
        std::iter::once(format!("{a}.{b}"))
            .chain(rest)
            .collect::<Vec<_>>()
            .join("."),
    )
}

impl KeySpec {
    /// Short name used in labels.
    pub fn name(&self) -> String {
        match self {
            KeySpec::Ed25519 => "ed25519".into(),
            KeySpec::Ec(c) => c.id().into(),
            KeySpec::Rsa(b) => format!("rsa{b}"),
            KeySpec::Aes(n) => format!("aes{}", n * 8),
            KeySpec::GenericSecret(n) => format!("secret{}", n * 8),
            KeySpec::Des3 => "des3".into(),
            KeySpec::ChaCha20 => "chacha20".into(),
            KeySpec::EcDerive(c) => format!("{}-ecdh", c.id()),
            KeySpec::X25519 => "x25519".into(),
            KeySpec::DhFfdhe2048 => "ffdhe2048".into(),
            KeySpec::WrapAes(n) => format!("aes{}-wrap", n * 8),
            KeySpec::WrapRsa(b) => format!("rsa{b}-wrap"),
            KeySpec::MlDsa(s) => s.id().into(),
            KeySpec::SlhDsa(s) => s.id(),
            KeySpec::MlKem(s) => s.id().into(),
            KeySpec::Existing => "existing".into(),
            KeySpec::Pbkdf2Sha256(n) => format!("pbkdf2-sha256-{n}"),
        }
    }

    /// The key generation mechanism, if the key is generated.
    pub fn gen_mechanism(&self) -> Option<CK_MECHANISM_TYPE> {
        match self {
            KeySpec::Ed25519 => Some(CKM_EC_EDWARDS_KEY_PAIR_GEN),
            KeySpec::Ec(_) | KeySpec::EcDerive(_) => Some(CKM_EC_KEY_PAIR_GEN),
            KeySpec::X25519 => Some(CKM_EC_MONTGOMERY_KEY_PAIR_GEN),
            KeySpec::DhFfdhe2048 => Some(CKM_DH_PKCS_KEY_PAIR_GEN),
            KeySpec::Des3 => Some(CKM_DES3_KEY_GEN),
            KeySpec::ChaCha20 => Some(CKM_CHACHA20_KEY_GEN),
            KeySpec::WrapAes(_) => Some(CKM_AES_KEY_GEN),
            KeySpec::WrapRsa(_) => Some(CKM_RSA_PKCS_KEY_PAIR_GEN),
            KeySpec::Rsa(_) => Some(CKM_RSA_PKCS_KEY_PAIR_GEN),
            KeySpec::Aes(_) => Some(CKM_AES_KEY_GEN),
            KeySpec::MlDsa(_) => Some(CKM_ML_DSA_KEY_PAIR_GEN),
            KeySpec::SlhDsa(_) => Some(CKM_SLH_DSA_KEY_PAIR_GEN),
            KeySpec::MlKem(_) => Some(CKM_ML_KEM_KEY_PAIR_GEN),
            KeySpec::Pbkdf2Sha256(_) => Some(CKM_PKCS5_PBKD2),
            KeySpec::GenericSecret(_) | KeySpec::Existing => None,
        }
    }

    /// Whether this is the key of a key-wrap op.
    pub fn wraps(&self) -> bool {
        matches!(self, KeySpec::WrapAes(_) | KeySpec::WrapRsa(_))
    }
}

/// Templates to generate a key pair, as token (`token`) or session objects:
/// mechanism, public template, private template.
pub fn pair_templates_on(
    spec: KeySpec,
    label: &[u8],
    variant: usize,
    token: bool,
) -> Option<(Mech, Template, Template)> {
    let common = |t: Template| t.bool(CKA_TOKEN, token).bytes(CKA_LABEL, label);
    let private = common(Template::new())
        .bool(CKA_PRIVATE, true)
        .bool(CKA_SENSITIVE, true)
        .bool(CKA_SIGN, true);
    let derive_private = common(Template::new())
        .bool(CKA_PRIVATE, true)
        .bool(CKA_SENSITIVE, true)
        .bool(CKA_DERIVE, true);
    match spec {
        KeySpec::Ed25519 => {
            let params = if variant == 0 {
                ED25519_PRINTABLE
            } else {
                ED25519_OID
            };
            Some((
                Mech::plain(CKM_EC_EDWARDS_KEY_PAIR_GEN),
                common(Template::new())
                    .bool(CKA_VERIFY, true)
                    .bytes(CKA_EC_PARAMS, params),
                private,
            ))
        }
        KeySpec::Ec(c) => Some((
            Mech::plain(CKM_EC_KEY_PAIR_GEN),
            common(Template::new())
                .bool(CKA_VERIFY, true)
                .bytes(CKA_EC_PARAMS, c.oid()),
            private,
        )),
        // A key-agreement pair only: tokens default CKA_SIGN/CKA_VERIFY to
        // true for EC keys.
        KeySpec::EcDerive(c) => Some((
            Mech::plain(CKM_EC_KEY_PAIR_GEN),
            common(Template::new())
                .bytes(CKA_EC_PARAMS, c.oid())
                .bool(CKA_VERIFY, false),
            derive_private.bool(CKA_SIGN, false),
        )),
        KeySpec::DhFfdhe2048 => Some((
            Mech::plain(CKM_DH_PKCS_KEY_PAIR_GEN),
            common(Template::new())
                .bytes(CKA_PRIME, &ffdhe2048_prime())
                .bytes(CKA_BASE, &[2]),
            derive_private,
        )),
        KeySpec::X25519 => Some((
            Mech::plain(CKM_EC_MONTGOMERY_KEY_PAIR_GEN),
            common(Template::new()).bytes(
                CKA_EC_PARAMS,
                if variant == 0 {
                    X25519_PRINTABLE
                } else {
                    X25519_OID
                },
            ),
            derive_private,
        )),
        KeySpec::WrapRsa(bits) => Some((
            Mech::plain(CKM_RSA_PKCS_KEY_PAIR_GEN),
            common(Template::new())
                .bool(CKA_WRAP, true)
                .bool(CKA_ENCRYPT, true)
                .ulong(CKA_MODULUS_BITS, bits as CK_ULONG)
                .bytes(CKA_PUBLIC_EXPONENT, &[0x01, 0x00, 0x01]),
            common(Template::new())
                .bool(CKA_PRIVATE, true)
                .bool(CKA_SENSITIVE, true)
                .bool(CKA_UNWRAP, true)
                .bool(CKA_DECRYPT, true),
        )),
        KeySpec::Rsa(bits) => Some((
            Mech::plain(CKM_RSA_PKCS_KEY_PAIR_GEN),
            common(Template::new())
                .bool(CKA_VERIFY, true)
                .bool(CKA_ENCRYPT, true)
                .ulong(CKA_MODULUS_BITS, bits as CK_ULONG)
                .bytes(CKA_PUBLIC_EXPONENT, &[0x01, 0x00, 0x01]),
            private.bool(CKA_DECRYPT, true),
        )),
        // The parameter set in the public template (what PKCS#11 3.2
        // consumers and tokens agree on).
        KeySpec::MlDsa(s) => Some((
            Mech::plain(CKM_ML_DSA_KEY_PAIR_GEN),
            common(Template::new())
                .bool(CKA_VERIFY, true)
                .ulong(CKA_PARAMETER_SET, s.parameter_set()),
            private,
        )),
        KeySpec::SlhDsa(s) => Some((
            Mech::plain(CKM_SLH_DSA_KEY_PAIR_GEN),
            common(Template::new())
                .bool(CKA_VERIFY, true)
                .ulong(CKA_PARAMETER_SET, s.parameter_set()),
            private,
        )),
        // A KEM pair (PKCS#11 3.2 §5.18): the public key encapsulates, the
        // private one decapsulates; neither signs.
        KeySpec::MlKem(s) => Some((
            Mech::plain(CKM_ML_KEM_KEY_PAIR_GEN),
            common(Template::new())
                .bool(CKA_ENCAPSULATE, true)
                .ulong(CKA_PARAMETER_SET, s.parameter_set()),
            common(Template::new())
                .bool(CKA_PRIVATE, true)
                .bool(CKA_SENSITIVE, true)
                .bool(CKA_DECAPSULATE, true),
        )),
        _ => None,
    }
}

/// Number of alternative templates to try for a key pair (Ed25519 parameters can be
/// given as a printable string or as an OID; modules differ in what they accept).
pub fn pair_variants(spec: KeySpec) -> usize {
    if matches!(spec, KeySpec::Ed25519 | KeySpec::X25519) {
        2
    } else {
        1
    }
}

/// The ffdhe2048 prime (RFC 7919 Appendix A), big-endian hex.
const FFDHE2048: &str = concat!(
    "FFFFFFFFFFFFFFFFADF85458A2BB4A9AAFDC5620273D3CF1D8B9C583CE2D3695",
    "A9E13641146433FBCC939DCE249B3EF97D2FE363630C75D8F681B202AEC4617A",
    "D3DF1ED5D5FD65612433F51F5F066ED0856365553DED1AF3B557135E7F57C935",
    "984F0C70E0E68B77E2A689DAF3EFE8721DF158A136ADE73530ACCA4F483A797A",
    "BC0AB182B324FB61D108A94BB2C8E3FBB96ADAB760D7F4681D4F42A3DE394DF4",
    "AE56EDE76372BB190B07A7C8EE0A6D709E02FCE1CDF7E2ECC03404CD28342F61",
    "9172FE9CE98583FF8E4F1232EEF28183C3FE3B1B4C6FAD733BB5FCBC2EC22005",
    "C58EF1837D1683B2C6F34A26C1B2EFFA886B423861285C97FFFFFFFFFFFFFFFF",
);

/// The ffdhe2048 prime p (256 bytes), the `CKA_PRIME` of the DH key pairs
/// (generator 2).
pub fn ffdhe2048_prime() -> Vec<u8> {
    (0..FFDHE2048.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&FFDHE2048[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Template to generate an AES key, as a token object when `token`.
pub fn aes_template(bytes: u32, label: &[u8], token: bool) -> (Mech, Template) {
    (
        Mech::plain(CKM_AES_KEY_GEN),
        Template::new()
            .bool(CKA_TOKEN, token)
            .bytes(CKA_LABEL, label)
            .ulong(CKA_VALUE_LEN, bytes as CK_ULONG)
            .bool(CKA_PRIVATE, true)
            .bool(CKA_SENSITIVE, true)
            .bool(CKA_ENCRYPT, true)
            .bool(CKA_DECRYPT, true)
            .bool(CKA_SIGN, true)
            .bool(CKA_VERIFY, true),
    )
}

/// A secret key (AES or generic secret) of `n` bytes. With `readable` (a
/// run's key), hsm-bench wants to know the value, so that MACs and
/// ciphertexts can be checked in-process: imported with `C_CreateObject`
/// (sensitive, value drawn here); else generated extractable and not
/// sensitive, the value read back; else generated sensitive (value unknown:
/// MACs are then checked with `C_Verify`). Without `readable` (keys a user
/// keeps, `hsm-bench keys create`) the key is generated on the token
/// (`C_GenerateKey`), sensitive and not extractable, or imported so where
/// the token cannot generate it.
/// What [`secret_key`] makes: the key type and its length, and whether it
/// wraps other keys.
#[derive(Clone, Copy)]
struct SecretKind {
    key_type: CK_KEY_TYPE,
    n: u32,
    wrap: bool,
}

fn secret_key(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    kind: SecretKind,
    label: &[u8],
    token: bool,
    readable: bool,
) -> Result<KeyHandles, Failure> {
    let SecretKind { key_type, n, wrap } = kind;
    // DES3 and ChaCha20 keys have no MAC mechanism here.
    let macs = !matches!(key_type, CKK_DES3 | CKK_CHACHA20);
    let made = |h: CK_OBJECT_HANDLE, value: Option<Vec<u8>>| KeyHandles {
        secret: Some(h),
        generated: true,
        value,
        token,
        label: Some(String::from_utf8_lossy(label).into_owned()),
        ..Default::default()
    };
    let usage = |t: Template| {
        t.bool(CKA_TOKEN, token)
            .bytes(CKA_LABEL, label)
            .bool(CKA_PRIVATE, true)
            .bool(CKA_ENCRYPT, true)
            .bool(CKA_DECRYPT, true)
            .bool(CKA_SIGN, macs)
            .bool(CKA_VERIFY, macs)
    };
    let usage = |t: Template| {
        if wrap {
            usage(t).bool(CKA_WRAP, true).bool(CKA_UNWRAP, true)
        } else {
            usage(t)
        }
    };
    let mut m = Mech::plain(match key_type {
        CKK_AES => CKM_AES_KEY_GEN,
        CKK_DES3 => CKM_DES3_KEY_GEN,
        CKK_CHACHA20 => CKM_CHACHA20_KEY_GEN,
        _ => CKM_GENERIC_SECRET_KEY_GEN,
    });
    let generate = |m: &mut Mech, sensitive: bool| {
        let t = usage(Template::new());
        // A DES3 or ChaCha20 key has one length: its generation takes no
        // CKA_VALUE_LEN.
        let t = if matches!(key_type, CKK_DES3 | CKK_CHACHA20) {
            t
        } else {
            t.ulong(CKA_VALUE_LEN, n as CK_ULONG)
        };
        raw.generate_key(
            s,
            m,
            &mut t
                .bool(CKA_SENSITIVE, sensitive)
                .bool(CKA_EXTRACTABLE, !sensitive),
        )
    };
    let value = (0..n)
        .map(|i| random_bytes::<1>()[0] ^ i as u8)
        .collect::<Vec<u8>>();
    let import = |extractable: Option<bool>| {
        let t = usage(Template::new())
            .ulong(CKA_CLASS, CKO_SECRET_KEY)
            .ulong(CKA_KEY_TYPE, key_type)
            .bool(CKA_SENSITIVE, true);
        let mut t = match extractable {
            Some(e) => t.bool(CKA_EXTRACTABLE, e),
            None => t,
        }
        .bytes(CKA_VALUE, &value);
        raw.create_object(s, &mut t)
    };
    if !readable {
        // A key a user keeps: generated on the token, sensitive and not
        // extractable; imported so only where the token cannot generate it.
        let (generated_rv, h) = generate(&mut m, true);
        if generated_rv == CKR_OK {
            return Ok(made(h, None));
        }
        let (rv, h) = import(Some(false));
        if rv != CKR_OK {
            // Both ways refused: say how each was.
            return Err(Failure::Unsupported(format!(
                "C_GenerateKey: {}, C_CreateObject: {}",
                crate::token::ckr::ckr_name(generated_rv),
                crate::token::ckr::ckr_name(rv)
            )));
        }
        return Ok(made(h, None));
    }
    // A run's key: imported (sensitive, value known: the path the committed
    // baselines were measured on), else generated readable, else generated
    // sensitive.
    let (rv, h) = import(None);
    if rv == CKR_OK {
        return Ok(made(h, Some(value)));
    }
    let (rv, h) = generate(&mut m, false);
    if rv == CKR_OK {
        let value = raw
            .attribute(s, h, CKA_VALUE)
            .ok()
            .filter(|v| v.len() == n as usize);
        return Ok(made(h, value));
    }
    let (rv, h) = generate(&mut m, true);
    ck(rv)?;
    Ok(made(h, None))
}

/// Generate copy `copy` of the key for `spec` in session `s` (untimed
/// set-up), where `mode` says: a session object (`CKA_TOKEN=false`), or a
/// token object labelled with [`token_key_prefix`] that [`KeyStore`]
/// destroys at the end. In [`StoreMode::Auto`] a token that refuses the
/// session object (tpm2-pkcs11 answers `CKR_ATTRIBUTE_VALUE_INVALID`) gets a
/// token object instead, announced once per key on stderr.
///
/// A wrapping key ([`KeySpec::wraps`]) the token refuses in every way it is
/// usually made (session or token object; see [`secret_key`] and
/// [`pair_templates_on`]) is made role-separated instead
/// ([`super::role_separated`]: a token with role separation, such as
/// dalek-pkcs11 under `key_policy = strict`), announced once per key on
/// stderr and recorded in [`KeyHandles::role_separated`]. Where the usual
/// key is made, nothing changes.
pub fn generate(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    spec: KeySpec,
    mode: StoreMode,
    copy: usize,
) -> Result<KeyHandles, Failure> {
    let usual = generate_stored(raw, s, spec, mode, copy, generate_on);
    let Err(Failure::Rv(refused)) = usual else {
        return usual;
    };
    if !spec.wraps() {
        return usual;
    }
    match generate_stored(raw, s, spec, mode, copy, role_separated_on) {
        Ok(k) => {
            eprintln!(
                "note: the module refused the usual {} key ({}); using a role-separated \
                 wrapping key: {}",
                spec.name(),
                crate::token::ckr::ckr_name(refused),
                super::role_separated::DESCRIPTION,
            );
            Ok(KeyHandles {
                role_separated: Some(refused),
                ..k
            })
        }
        Err(_) => usual,
    }
}

/// How one key is made as a session (`false`) or token (`true`) object.
type Maker = fn(&RawModule, CK_SESSION_HANDLE, KeySpec, bool, usize) -> Result<KeyHandles, Failure>;

/// [`generate`] with the key made by `generate_on`, as `mode` says.
fn generate_stored(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    spec: KeySpec,
    mode: StoreMode,
    copy: usize,
    generate_on: Maker,
) -> Result<KeyHandles, Failure> {
    if !mode.session_first() {
        return generate_on(raw, s, spec, true, copy);
    }
    let first = generate_on(raw, s, spec, false, copy);
    let Err(Failure::Rv(rv)) = first else {
        return first;
    };
    if !mode.falls_back() || !may_refuse_session_objects(rv) || spec == KeySpec::Existing {
        return first;
    }
    match generate_on(raw, s, spec, true, copy) {
        Ok(k) => {
            eprintln!(
                "note: the module refused a {} session key ({}); using token objects \
                 labelled {}, destroyed at the end of the run",
                spec.name(),
                crate::token::ckr::ckr_name(rv),
                k.label.as_deref().unwrap_or_default(),
            );
            Ok(k)
        }
        Err(_) => first,
    }
}

/// The label of copy `copy` of a key for `spec`: unique per run for token
/// objects (so that they can be found, reused and deleted), fixed otherwise.
pub fn key_label(spec: KeySpec, copy: usize, token: bool) -> String {
    let suffix = if copy == 0 {
        String::new()
    } else {
        format!("-{copy}")
    };
    if token {
        format!("{}{}{suffix}", token_key_prefix(), spec.name())
    } else {
        format!("hsm-bench-{}{suffix}", spec.name())
    }
}

fn generate_on(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    spec: KeySpec,
    token: bool,
    copy: usize,
) -> Result<KeyHandles, Failure> {
    generate_labelled(raw, s, spec, &key_label(spec, copy, token), token, true)
}

fn role_separated_on(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    spec: KeySpec,
    token: bool,
    copy: usize,
) -> Result<KeyHandles, Failure> {
    super::role_separated::make(raw, s, spec, &key_label(spec, copy, token), token)
}

/// Generate a key for `spec` labelled `label` (`CKA_TOKEN` = `token`); with
/// `readable`, a secret key's value is known to hsm-bench where the token
/// allows (see [`secret_key`]), else secret keys are sensitive and not
/// extractable. Private keys are always sensitive.
pub fn generate_labelled(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    spec: KeySpec,
    label: &str,
    token: bool,
    readable: bool,
) -> Result<KeyHandles, Failure> {
    let label = label.to_string();
    match spec {
        KeySpec::Aes(_)
        | KeySpec::WrapAes(_)
        | KeySpec::GenericSecret(_)
        | KeySpec::Des3
        | KeySpec::ChaCha20 => {
            let kind = match spec {
                KeySpec::Aes(n) | KeySpec::WrapAes(n) => SecretKind {
                    key_type: CKK_AES,
                    n,
                    wrap: matches!(spec, KeySpec::WrapAes(_)),
                },
                KeySpec::GenericSecret(n) => SecretKind {
                    key_type: CKK_GENERIC_SECRET,
                    n,
                    wrap: false,
                },
                KeySpec::ChaCha20 => SecretKind {
                    key_type: CKK_CHACHA20,
                    n: 32,
                    wrap: false,
                },
                _ => SecretKind {
                    key_type: CKK_DES3,
                    n: 24,
                    wrap: false,
                },
            };
            secret_key(raw, s, kind, label.as_bytes(), token, readable)
        }
        KeySpec::Existing => Err(Failure::Check("existing key not found".into())),
        KeySpec::Pbkdf2Sha256(_) => Err(Failure::Check(
            "a PBKDF2 key is made only by its keygen op".into(),
        )),
        _ => {
            let mut last = Failure::Rv(CKR_GENERAL_ERROR);
            for variant in 0..pair_variants(spec) {
                let (mut m, mut pubt, mut privt) =
                    pair_templates_on(spec, label.as_bytes(), variant, token)
                        .expect("key pair spec");
                let (rv, hp, hs) = raw.generate_key_pair(s, &mut m, &mut pubt, &mut privt);
                if rv == CKR_OK {
                    return Ok(KeyHandles {
                        public: Some(hp),
                        private: Some(hs),
                        generated: true,
                        token,
                        label: Some(label),
                        ..Default::default()
                    });
                }
                last = Failure::Rv(rv);
            }
            Err(last)
        }
    }
}

/// Keys of one module, generated on first use and destroyed on drop (token
/// keys too, on every way out of a run: the end, an error, Ctrl-C), unless
/// kept (`--keep-keys`).
pub struct KeyStore {
    raw: Arc<RawModule>,
    session: CK_SESSION_HANDLE,
    mode: StoreMode,
    keep: bool,
    keys: HashMap<(KeySpec, usize), Result<KeyHandles, Failure>>,
}

impl KeyStore {
    /// A store making keys in the (logged-in) set-up session `session`, as
    /// `mode` says; `keep` leaves token keys on the token at the end.
    pub fn new(
        raw: Arc<RawModule>,
        session: CK_SESSION_HANDLE,
        mode: StoreMode,
        keep: bool,
    ) -> Self {
        KeyStore {
            raw,
            session,
            mode,
            keep,
            keys: HashMap::new(),
        }
    }

    /// Where this store makes keys (and the ops their objects).
    pub fn mode(&self) -> StoreMode {
        self.mode
    }

    /// Register an existing key found by label.
    pub fn insert_existing(&mut self, handles: KeyHandles) {
        self.keys.insert((KeySpec::Existing, 0), Ok(handles));
    }

    /// Copy `copy` of the key for `spec` (copies give threads their own keys),
    /// generated on first use. A failure is remembered so that a module that cannot
    /// make a key is not asked again for every op. There is one existing key only.
    pub fn get(&mut self, spec: KeySpec, copy: usize) -> Result<&KeyHandles, Failure> {
        let k = (spec, if spec == KeySpec::Existing { 0 } else { copy });
        if !self.keys.contains_key(&k) {
            let made = generate(&self.raw, self.session, spec, self.mode, k.1);
            self.keys.insert(k, made);
        }
        self.keys[&k].as_ref().map_err(Clone::clone)
    }

    /// Whether this store made any key as a session object.
    pub fn made_session_keys(&self) -> bool {
        self.keys
            .values()
            .flatten()
            .any(|k| k.generated && !k.token)
    }

    /// The names of the role-separated wrapping keys this store made
    /// ([`KeyHandles::role_separated`]), sorted, each once.
    pub fn role_separated_keys(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .keys
            .iter()
            .filter(|(_, k)| k.as_ref().is_ok_and(|k| k.role_separated.is_some()))
            .map(|((spec, _), _)| spec.name())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Labels of the token keys this store made, sorted.
    pub fn token_key_labels(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .keys
            .values()
            .flatten()
            .filter(|k| k.generated && k.token)
            .filter_map(|k| k.label.clone())
            .collect();
        v.sort();
        v
    }
}

impl Drop for KeyStore {
    fn drop(&mut self) {
        let kept = if self.keep {
            self.token_key_labels()
        } else {
            Vec::new()
        };
        for k in self.keys.values().flatten() {
            if k.generated && !(self.keep && k.token) {
                for h in [k.public, k.private, k.secret].into_iter().flatten() {
                    let _ = self.raw.destroy_object(self.session, h);
                }
            }
        }
        for label in kept {
            eprintln!("kept token key '{label}' (--keep-keys; reuse it with --key-label)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_are_named_or_shown_as_their_oid() {
        assert_eq!(curve_name(P256_OID), "P-256");
        assert_eq!(
            curve_name(&[
                0x06, 0x09, 0x2b, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x07
            ]),
            "brainpoolP256r1"
        );
        // secp192k1 (1.3.132.0.31): not named, shown dotted.
        assert_eq!(
            curve_name(&[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x1f]),
            "OID 1.3.132.0.31"
        );
        // Multi-byte arcs and the first arc of 2 (2.999.3).
        assert_eq!(curve_name(&[0x06, 0x03, 0x88, 0x37, 0x03]), "OID 2.999.3");
        // Not an OID (explicit parameters, a truncated one): hex.
        assert_eq!(curve_name(&[0x30, 0x01, 0x00]), "300100");
        assert_eq!(curve_name(&[0x06, 0x05, 0x2b]), "06052b");
        assert_eq!(curve_name(&[0x06, 0x01, 0x81]), "060181");
    }
}
