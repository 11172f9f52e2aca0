//! `hsm-bench keys create|list|delete`: prepare benchmark keys on a token once
//! (as p11perftest's `generatekeys` does), see what is there, and clean up,
//! including the `hsm-bench-tmp-…` keys a killed run left behind. Keys made
//! here are token objects, generated on the token (`C_GenerateKey(Pair)`;
//! `C_CreateObject` of a random value only for a secret key type the token
//! cannot generate), private and secret keys sensitive and not extractable.

use cryptoki_sys::*;
use serde::Serialize;

use crate::cli::{
    KeysCommand, KeysCreateArgs, KeysDeleteArgs, KeysListArgs, KeysTokenArgs, ListFormat,
};
use crate::commands::output::out;
use crate::error::{CliError, EXIT_OK, Result};
use crate::safe_text::escape;
use crate::suite::alg::Curve;
use crate::suite::alg::KeySpec;
use crate::suite::alg::{MlKemSet, SlhDsaSet};
use crate::suite::failure::Failure;
use crate::suite::keys;
use crate::token::choice::ModuleChoice;
use crate::token::ckr::ckr_name;
use crate::token::module::Module;
use crate::token::raw::{RawModule, Template};

/// Run a `keys` subcommand.
pub fn run(cmd: &KeysCommand) -> Result<i32> {
    match cmd {
        KeysCommand::Create(a) => create(a),
        KeysCommand::List(a) => list(a),
        KeysCommand::Delete(a) => delete(a),
    }
}

/// The key types `keys create --type` accepts, with their specs.
const TYPES: &[(&str, KeySpec)] = &[
    ("ed25519", KeySpec::Ed25519),
    ("p256", KeySpec::Ec(Curve::P256)),
    ("p384", KeySpec::Ec(Curve::P384)),
    ("p521", KeySpec::Ec(Curve::P521)),
    ("secp256k1", KeySpec::Ec(Curve::Secp256k1)),
    ("rsa2048", KeySpec::Rsa(2048)),
    ("rsa3072", KeySpec::Rsa(3072)),
    ("rsa4096", KeySpec::Rsa(4096)),
    ("aes128", KeySpec::Aes(16)),
    ("aes192", KeySpec::Aes(24)),
    ("aes256", KeySpec::Aes(32)),
    ("hmac-sha256", KeySpec::GenericSecret(32)),
    ("hmac-sha512", KeySpec::GenericSecret(64)),
    ("des3", KeySpec::Des3),
    ("p256-ecdh", KeySpec::EcDerive(Curve::P256)),
    ("p384-ecdh", KeySpec::EcDerive(Curve::P384)),
    ("p521-ecdh", KeySpec::EcDerive(Curve::P521)),
    ("x25519", KeySpec::X25519),
    ("mlkem512", KeySpec::MlKem(MlKemSet::K512)),
    ("mlkem768", KeySpec::MlKem(MlKemSet::K768)),
    ("mlkem1024", KeySpec::MlKem(MlKemSet::K1024)),
    ("slhdsa-sha2-128f", KeySpec::SlhDsa(SlhDsaSet::SHA2_128F)),
    ("slhdsa-shake-128f", KeySpec::SlhDsa(SlhDsaSet::SHAKE_128F)),
    ("slhdsa-sha2-128s", KeySpec::SlhDsa(SlhDsaSet::SHA2_128S)),
];

fn key_spec(name: &str) -> Result<KeySpec> {
    TYPES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
        .ok_or_else(|| {
            let names: Vec<&str> = TYPES.iter().map(|(n, _)| *n).collect();
            CliError::usage(format!(
                "unknown key type '{name}' (one of: {})",
                names.join(", ")
            ))
        })
}

/// Load the module and log in to the named token.
fn open(t: &KeysTokenArgs) -> Result<Module> {
    let choice = ModuleChoice::resolve(&t.module)?;
    if !choice.options.env.is_empty() {
        return Err(CliError::usage(
            "keys: env= applies to `run` only (set the variable in this command's environment)",
        ));
    }
    let token = choice.token(&t.token.choice())?;
    if !token.given() {
        return Err(CliError::usage(
            "keys: name the token with --token-label or --slot (keys on a temporary token would vanish with it)",
        ));
    }
    Module::open(&choice, None, &token)
}

/// Handles of the key objects (public, private, secret) in the token, with
/// their labels.
fn key_objects(m: &Module) -> Result<Vec<(CK_OBJECT_HANDLE, String)>> {
    objects_of(m, &[CKO_PUBLIC_KEY, CKO_PRIVATE_KEY, CKO_SECRET_KEY])
}

/// Handles of the token's objects of the classes `classes`, with their labels.
fn objects_of(m: &Module, classes: &[CK_OBJECT_CLASS]) -> Result<Vec<(CK_OBJECT_HANDLE, String)>> {
    let s = m.setup_session();
    let mut v = Vec::new();
    for &class in classes {
        let found = m
            .raw
            .find_all(s.handle(), &mut Template::new().ulong(CKA_CLASS, class))
            .map_err(|e| CliError::usage(format!("module {}: {e}", m.name)))?;
        for o in found {
            let label = m
                .raw
                .attribute(s.handle(), o, CKA_LABEL)
                .map(|l| crate::safe_text::decode(&l))
                .unwrap_or_default();
            v.push((o, label));
        }
    }
    Ok(v)
}

fn create(a: &KeysCreateArgs) -> Result<i32> {
    let spec = key_spec(&a.key_type)?;
    if a.label.is_empty() {
        return Err(CliError::usage("--label must not be empty"));
    }
    let m = open(&a.token)?;
    if key_objects(&m)?.iter().any(|(_, l)| *l == a.label) {
        return Err(CliError::usage(format!(
            "a key labelled '{}' is already on the token (delete it first with `hsm-bench keys delete --label {}`)",
            a.label, a.label
        )));
    }
    let s = m.setup_session().handle();
    let made = keys::generate_labelled(&m.raw, s, spec, &a.label, true, false).map_err(|f| {
        let why = match f {
            Failure::Unsupported(why) | Failure::Check(why) | Failure::Module(why) => why,
            Failure::Rv(rv) => format!("C_GenerateKeyPair: {}", ckr_name(rv)),
        };
        CliError::usage(format!(
            "{}: cannot create the {} key '{}': {why}",
            m.name, a.key_type, a.label
        ))
    })?;
    let objects: Vec<CK_OBJECT_HANDLE> = [made.public, made.private, made.secret]
        .into_iter()
        .flatten()
        .collect();
    // One random CKA_ID for the objects of the key, so that tools that pair
    // a public and a private key by CKA_ID (pkcs11-tool, OpenSSL) find both.
    let id = crate::token::random::random_bytes::<8>();
    let refused = objects
        .iter()
        .map(|&h| {
            m.raw
                .set_attributes(s, h, &mut Template::new().bytes(CKA_ID, &id))
        })
        .find(|&rv| rv != CKR_OK);
    let id_note = match refused {
        None => format!(
            "CKA_ID {}",
            id.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ),
        Some(rv) => format!("no CKA_ID: C_SetAttributeValue gave {}", ckr_name(rv)),
    };
    out(&format!(
        "created {} key '{}' on {} ({} token object{}, {id_note})\n",
        a.key_type,
        escape(&a.label),
        escape(&m.meta.token.label),
        objects.len(),
        if objects.len() == 1 { "" } else { "s" }
    ))?;
    Ok(EXIT_OK)
}

/// A key object as `keys list` shows it.
#[derive(Debug, Serialize)]
struct ListedKey {
    label: String,
    id: String,
    class: &'static str,
    key_type: String,
    size: String,
    usage: Vec<&'static str>,
}

fn describe(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    h: CK_OBJECT_HANDLE,
    label: String,
) -> ListedKey {
    let class = match crate::suite::existing::attr_ulong(raw, s, h, CKA_CLASS) {
        Some(CKO_PUBLIC_KEY) => "public",
        Some(CKO_PRIVATE_KEY) => "private",
        Some(CKO_SECRET_KEY) => "secret",
        _ => "other",
    };
    let kt = crate::suite::existing::attr_ulong(raw, s, h, CKA_KEY_TYPE);
    let key_type = match kt {
        Some(CKK_RSA) => "RSA".to_string(),
        Some(CKK_EC) => "EC".to_string(),
        Some(CKK_EC_EDWARDS) => "EC_EDWARDS".to_string(),
        Some(CKK_EC_MONTGOMERY) => "EC_MONTGOMERY".to_string(),
        Some(CKK_AES) => "AES".to_string(),
        Some(CKK_DES3) => "DES3".to_string(),
        Some(CKK_CHACHA20) => "CHACHA20".to_string(),
        Some(CKK_GENERIC_SECRET) => "GENERIC_SECRET".to_string(),
        Some(CKK_SHA256_HMAC) => "SHA256_HMAC".to_string(),
        Some(CKK_SHA512_HMAC) => "SHA512_HMAC".to_string(),
        Some(other) => format!("0x{other:x}"),
        None => "?".to_string(),
    };
    let size = match kt {
        Some(CKK_RSA) => crate::suite::existing::attr_ulong(raw, s, h, CKA_MODULUS_BITS)
            .or_else(|| {
                raw.attribute(s, h, CKA_MODULUS)
                    .ok()
                    .map(|m| (m.len() * 8) as CK_ULONG)
            })
            .map(|b| format!("{b} bits"))
            .unwrap_or_default(),
        Some(CKK_EC | CKK_EC_EDWARDS | CKK_EC_MONTGOMERY) => raw
            .attribute(s, h, CKA_EC_PARAMS)
            .map(|p| keys::curve_name(&p))
            .unwrap_or_default(),
        // A DES3 key has one length, which tokens need not give.
        Some(t) => crate::suite::existing::attr_ulong(raw, s, h, CKA_VALUE_LEN)
            .or((t == CKK_DES3).then_some(24))
            .map(|n| format!("{n} bytes"))
            .unwrap_or_default(),
        None => String::new(),
    };
    let usage = [
        (CKA_SIGN, "sign"),
        (CKA_VERIFY, "verify"),
        (CKA_ENCRYPT, "encrypt"),
        (CKA_DECRYPT, "decrypt"),
        (CKA_WRAP, "wrap"),
        (CKA_UNWRAP, "unwrap"),
        (CKA_DERIVE, "derive"),
    ]
    .into_iter()
    .filter(|(t, _)| crate::suite::existing::attr_bool(raw, s, h, *t))
    .map(|(_, n)| n)
    .collect();
    let id = raw
        .attribute(s, h, CKA_ID)
        .map(|v| v.iter().map(|b| format!("{b:02x}")).collect())
        .unwrap_or_default();
    ListedKey {
        label,
        id,
        class,
        key_type,
        size,
        usage,
    }
}

fn list(a: &KeysListArgs) -> Result<i32> {
    let m = open(&a.token)?;
    let s = m.setup_session().handle();
    let mut listed: Vec<ListedKey> = key_objects(&m)?
        .into_iter()
        .map(|(h, label)| describe(&m.raw, s, h, label))
        .collect();
    listed.sort_by(|x, y| (&x.label, x.class).cmp(&(&y.label, y.class)));
    let text = match a.format {
        ListFormat::Json => {
            crate::safe_text::json(serde_json::to_string_pretty(&listed).expect("serialisable"))
                + "\n"
        }
        ListFormat::Text => {
            let headers: Vec<String> = ["label", "class", "type", "size", "id", "usage"]
                .iter()
                .map(|h| h.to_string())
                .collect();
            let rows: Vec<Vec<String>> = listed
                .iter()
                .map(|k| {
                    vec![
                        k.label.clone(),
                        k.class.to_string(),
                        k.key_type.clone(),
                        k.size.clone(),
                        k.id.clone(),
                        k.usage.join(" "),
                    ]
                })
                .collect();
            format!(
                "{} key object{} on token '{}' ({})\n{}",
                listed.len(),
                if listed.len() == 1 { "" } else { "s" },
                escape(&m.meta.token.label),
                escape(&m.name),
                crate::report::text::table(&headers, &rows, 2)
            )
        }
    };
    out(&text)?;
    Ok(EXIT_OK)
}

fn delete(a: &KeysDeleteArgs) -> Result<i32> {
    let m = open(&a.token)?;
    let s = m.setup_session().handle();
    let matches = |l: &str| match (&a.label, &a.prefix) {
        (Some(label), _) => l == label,
        (None, Some(prefix)) => l.starts_with(prefix.as_str()),
        (None, None) => false,
    };
    let chosen: Vec<(CK_OBJECT_HANDLE, String)> = key_objects(&m)?
        .into_iter()
        .filter(|(_, l)| matches(l))
        .collect();
    // With --prefix, the data objects of find-object too (token objects
    // labelled `hsm-bench-tmp-…-find-…` when the token refuses session
    // objects): a killed run leaves them beside its keys.
    let data: Vec<(CK_OBJECT_HANDLE, String)> = if a.prefix.is_some() {
        objects_of(&m, &[CKO_DATA])?
            .into_iter()
            .filter(|(_, l)| matches(l))
            .collect()
    } else {
        Vec::new()
    };
    if chosen.is_empty() && data.is_empty() {
        return Err(CliError::usage(match (&a.label, &a.prefix) {
            (Some(l), _) => format!("no key object labelled '{l}' on the token"),
            (None, p) => format!(
                "no key or data object whose label starts with '{}' on the token",
                p.as_deref().unwrap_or_default()
            ),
        }));
    }
    let mut text = String::new();
    for (h, label) in &chosen {
        let k = describe(&m.raw, s, *h, label.clone());
        let rv = m.raw.destroy_object(s, *h);
        if rv != CKR_OK {
            return Err(CliError::usage(format!(
                "{}: C_DestroyObject of the {} key '{label}' failed: {}",
                m.name,
                k.class,
                ckr_name(rv)
            )));
        }
        text.push_str(&format!(
            "destroyed {} {} key '{}'\n",
            k.class,
            k.key_type,
            escape(label)
        ));
    }
    for (h, label) in &data {
        let rv = m.raw.destroy_object(s, *h);
        if rv != CKR_OK {
            return Err(CliError::usage(format!(
                "{}: C_DestroyObject of the data object '{label}' failed: {}",
                m.name,
                ckr_name(rv)
            )));
        }
        text.push_str(&format!("destroyed data object '{}'\n", escape(label)));
    }
    out(&text)?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_types_map_to_specs() {
        assert_eq!(key_spec("rsa3072").unwrap(), KeySpec::Rsa(3072));
        assert_eq!(key_spec("hmac-sha512").unwrap(), KeySpec::GenericSecret(64));
        assert_eq!(key_spec("aes128").unwrap(), KeySpec::Aes(16));
        assert!(key_spec("rsa1024").is_err());
        assert_eq!(
            key_spec("mlkem768").unwrap(),
            KeySpec::MlKem(MlKemSet::K768)
        );
        assert_eq!(
            key_spec("slhdsa-shake-128f").unwrap(),
            KeySpec::SlhDsa(SlhDsaSet::SHAKE_128F)
        );
    }

    /// Every `*-ecdh-derive` op of the catalogue has its key-agreement type
    /// here, named as the op's key (`p521-ecdh` for `p521-ecdh-derive`).
    #[test]
    fn every_ecdh_op_has_a_key_type() {
        let all = crate::suite::catalogue::catalogue();
        let ecdh: Vec<_> = all
            .iter()
            .filter(|o| o.id.ends_with("-ecdh-derive"))
            .collect();
        assert_eq!(ecdh.len(), 4);
        for o in ecdh {
            let spec = o.key.expect("an ECDH op has a key");
            let name = TYPES
                .iter()
                .find(|(_, s)| *s == spec)
                .map(|(n, _)| *n)
                .unwrap_or_else(|| panic!("no key type for {}", o.id));
            assert_eq!(key_spec(name).unwrap(), spec);
        }
        assert_eq!(
            key_spec("p521-ecdh").unwrap(),
            KeySpec::EcDerive(Curve::P521)
        );
    }
}
