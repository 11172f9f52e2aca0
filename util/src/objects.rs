//! The object commands: `import` (a key file or certificate becomes token
//! objects through `C_CreateObject`, base spec §5.7), `export-public` and
//! `export-cert` (read back through `C_FindObjects` / `C_GetAttributeValue`).

use std::io::Write;
use std::path::Path;

use cryptoki_sys::*;
use dalek_pkcs11::api::objects::{self, AttrOut};
use dalek_pkcs11::api::session::Session;
use dalek_pkcs11::attributes::Attr;
use serde::Serialize;

use crate::keyfile::{self, Item, PrivateKey};
use crate::pin::Kind;
use crate::pqc;
use crate::tokens::{LoggedIn, Started, find, load_config};
use crate::{ExportArgs, Failure, ImportArgs, ObjectChoice, Outcome};

/// Parses `--id` hex (colons and spaces allowed between bytes).
pub fn parse_hex(text: &str) -> Result<Vec<u8>, Failure> {
    let digits: String = text.chars().filter(|c| !matches!(c, ':' | ' ')).collect();
    let digits = digits.strip_prefix("0x").unwrap_or(&digits);
    if digits.is_empty() || !digits.len().is_multiple_of(2) || digits.len() > 256 {
        return Err(Failure::new(format!(
            "--id '{text}' is not 1 to 128 bytes of hex"
        )));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16))
        .collect::<Result<_, _>>()
        .map_err(|_| Failure::new(format!("--id '{text}' is not hex")))
}

pub use dalek_pkcs11::storage::seal::hex;

/// `C_FindObjectsInit` / `C_FindObjects` / `C_FindObjectsFinal` over `template`.
pub fn find_objects(
    session: &Session,
    template: &[Attr],
) -> dalek_pkcs11::error::Result<Vec<CK_OBJECT_HANDLE>> {
    objects::find_init(session, template)?;
    let mut found = Vec::new();
    let mut batch = [0 as CK_OBJECT_HANDLE; 64];
    let result = loop {
        match objects::find_next(session, &mut batch) {
            Ok(0) => break Ok(()),
            Ok(n) => found.extend_from_slice(&batch[..n]),
            Err(e) => break Err(e),
        }
    };
    objects::find_final(session)?;
    result.map(|()| found)
}

/// The value of `ty` on `handle`, if the object has one and it may be read.
pub fn read_attr(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    ty: CK_ATTRIBUTE_TYPE,
) -> dalek_pkcs11::error::Result<Option<Vec<u8>>> {
    Ok(
        match objects::get_attributes(session, handle, &[ty])?.pop() {
            Some(AttrOut::Value(v)) => Some(v.to_vec()),
            _ => None,
        },
    )
}

/// What `import` made.
#[derive(Serialize)]
struct Made {
    class: &'static str,
    kind: String,
}

/// The `C_CreateObject` template of an imported private key.
fn private_template(k: &PrivateKey, a: &ImportArgs, id: &[u8]) -> Vec<Attr> {
    let mut t = vec![
        Attr::ulong(CKA_CLASS, CKO_PRIVATE_KEY),
        Attr::ulong(CKA_KEY_TYPE, k.key_type),
        Attr::bool(CKA_TOKEN, true),
        Attr::bool(CKA_PRIVATE, true),
        Attr::new(CKA_LABEL, a.label.as_bytes()),
        Attr::new(CKA_ID, id),
        Attr::bool(CKA_SENSITIVE, a.sensitive),
        Attr::bool(CKA_EXTRACTABLE, a.extractable),
    ];
    // Unwrapping and wrapping are left to the token's defaults (true, or
    // false under key_policy = strict, which lets no imported key wrap).
    let usage: &[CK_ATTRIBUTE_TYPE] = match k.key_type {
        CKK_RSA => &[CKA_SIGN, CKA_DECRYPT],
        CKK_EC => &[CKA_SIGN, CKA_DERIVE],
        CKK_EC_EDWARDS | CKK_ML_DSA | CKK_SLH_DSA => &[CKA_SIGN],
        CKK_ML_KEM => &[CKA_DECAPSULATE],
        _ => &[CKA_DERIVE],
    };
    t.extend(usage.iter().map(|&u| Attr::bool(u, true)));
    t.extend(k.values.iter().map(|(ty, v)| Attr::new(*ty, v)));
    t
}

/// The public values of the private key `handle` (as the module computed
/// them on import) and the public key's usage. A post-quantum key's public
/// value is the key in its `CKA_PUBLIC_KEY_INFO` (else in `spki`, the one
/// computed before import), beside its `CKA_PARAMETER_SET`.
fn public_template(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    key_type: CK_KEY_TYPE,
    spki: &[u8],
    label: &str,
    id: &[u8],
) -> dalek_pkcs11::error::Result<Vec<Attr>> {
    let (values, usage): (&[CK_ATTRIBUTE_TYPE], &[CK_ATTRIBUTE_TYPE]) = match key_type {
        CKK_RSA => (
            &[CKA_MODULUS, CKA_PUBLIC_EXPONENT],
            &[CKA_VERIFY, CKA_ENCRYPT],
        ),
        CKK_EC | CKK_EC_EDWARDS => (&[CKA_EC_PARAMS, CKA_EC_POINT], &[CKA_VERIFY]),
        CKK_ML_DSA | CKK_SLH_DSA => (&[CKA_PARAMETER_SET], &[CKA_VERIFY]),
        CKK_ML_KEM => (&[CKA_PARAMETER_SET], &[CKA_ENCAPSULATE]),
        _ => (&[CKA_EC_PARAMS, CKA_EC_POINT], &[]),
    };
    let mut t = vec![
        Attr::ulong(CKA_CLASS, CKO_PUBLIC_KEY),
        Attr::ulong(CKA_KEY_TYPE, key_type),
        Attr::bool(CKA_TOKEN, true),
        Attr::bool(CKA_PRIVATE, false),
        Attr::new(CKA_LABEL, label.as_bytes()),
        Attr::new(CKA_ID, id),
    ];
    for &ty in values {
        let v =
            read_attr(session, handle, ty)?.ok_or(dalek_pkcs11::error::err(CKR_FUNCTION_FAILED))?;
        t.push(Attr::new(ty, &v));
    }
    if pqc::Family::of(key_type).is_some() {
        let info = read_attr(session, handle, CKA_PUBLIC_KEY_INFO)?
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| spki.to_vec());
        let public = keyfile::spki_public_key(&info)
            .map_err(|_| dalek_pkcs11::error::err(CKR_FUNCTION_FAILED))?;
        t.push(Attr::new(CKA_VALUE, &public));
    }
    t.extend(usage.iter().map(|&u| Attr::bool(u, true)));
    Ok(t)
}

/// The SubjectPublicKeyInfo of a private key template's values, computed
/// by the module's own import checks (`C_CreateObject` would compute the
/// same).
fn key_spki(k: &PrivateKey) -> Result<Vec<u8>, Failure> {
    use dalek_pkcs11::attributes::Attributes;
    let mut attrs = Attributes::new();
    for (ty, v) in &k.values {
        attrs.set_bytes(*ty, v);
    }
    dalek_pkcs11::mechanisms::keys::complete_import(CKO_PRIVATE_KEY, Some(k.key_type), &mut attrs)
        .map_err(|e| {
            Failure::new(format!(
                "the {} key is not valid for the token: {e}",
                k.kind
            ))
        })?;
    if pqc::Family::of(k.key_type).is_none() {
        return keyfile::public_key_info(k.key_type, &|ty| attrs.bytes(ty).map(<[u8]>::to_vec))
            .map_err(Failure::new);
    }
    // The module's SPKI of the key, and the one of the public key the file
    // holds whole (SLH-DSA, expanded ML-KEM): one key, or the file is bad.
    let computed = attrs
        .bytes(CKA_PUBLIC_KEY_INFO)
        .filter(|v| !v.is_empty())
        .map(<[u8]>::to_vec);
    let in_file = k
        .public
        .as_deref()
        .map(|p| pqc::public_key_info(k.key_type, attrs.bytes(CKA_PARAMETER_SET), Some(p)))
        .transpose()
        .map_err(Failure::new)?;
    match (computed, in_file) {
        (Some(c), Some(f)) if c != f => Err(Failure::new(format!(
            "the public key inside the {} private key is not the one its private part gives",
            k.kind
        ))),
        (Some(spki), _) | (None, Some(spki)) => Ok(spki),
        (None, None) => Err(Failure::new(format!(
            "the token computed no public key for the {} key",
            k.kind
        ))),
    }
}

/// Refuses an object of `class` labelled `label` or with id `id` already
/// on the token: a second one would make consumers pick either.
fn refuse_duplicate(
    session: &Session,
    class: CK_OBJECT_CLASS,
    what: &str,
    label: &str,
    id: &[u8],
) -> Result<(), Failure> {
    for (attr, shown) in [
        (
            Attr::new(CKA_LABEL, label.as_bytes()),
            format!("labelled '{label}'"),
        ),
        (Attr::new(CKA_ID, id), format!("with id {}", hex(id))),
    ] {
        let found = find_objects(session, &[Attr::ulong(CKA_CLASS, class), attr])
            .map_err(|e| Failure::new(format!("C_FindObjects: {e}")))?;
        if !found.is_empty() {
            return Err(Failure::new(format!(
                "a {what} {shown} is already on the token: choose another --label/--id or delete it first"
            )));
        }
    }
    Ok(())
}

/// The passphrase of an encrypted key file: `--file-pin-env`, else asked
/// at the terminal without echo (standard input may carry the PIN).
fn file_passphrase(a: &ImportArgs) -> Result<zeroize::Zeroizing<Vec<u8>>, String> {
    use std::io::IsTerminal;
    if let Some(var) = &a.file_pin_env {
        return match std::env::var(var) {
            Ok(v) if !v.is_empty() => Ok(zeroize::Zeroizing::new(v.into_bytes())),
            _ => Err(format!(
                "the passphrase variable {var} is not set (or empty)"
            )),
        };
    }
    if std::io::stdin().is_terminal() {
        return rpassword::prompt_password(format!("passphrase of {}: ", a.file.display()))
            .map(|p| zeroize::Zeroizing::new(p.into_bytes()))
            .map_err(|e| format!("reading the passphrase: {e}"));
    }
    Err("the key is encrypted: give its passphrase with --file-pin-env VAR".into())
}

/// `import`.
pub fn import(a: &ImportArgs, json: bool) -> Outcome {
    if a.label.is_empty() {
        return Err(Failure::new("--label must not be empty"));
    }
    // Key and certificate files are a few kilobytes: anything past this
    // bound is not one, and is not read into memory.
    const MAX_FILE: u64 = 1 << 20;
    let size = std::fs::metadata(&a.file)
        .map_err(|e| Failure::new(format!("reading {}: {e}", a.file.display())))?
        .len();
    if size > MAX_FILE {
        return Err(Failure::new(format!(
            "{} is {size} bytes: key and certificate files are at most 1 MiB",
            a.file.display()
        )));
    }
    let bytes = std::fs::read(&a.file)
        .map_err(|e| Failure::new(format!("reading {}: {e}", a.file.display())))?;
    let bytes = zeroize::Zeroizing::new(bytes);
    let passphrase = || file_passphrase(a);
    let limits = crate::kdf::Limits {
        memory_mib: a.max_kdf_memory,
        iterations: a.max_kdf_iterations,
    };
    let items = keyfile::parse(&bytes, &passphrase, limits)
        .map_err(|e| Failure::new(format!("{}: {e}", a.file.display())))?;
    let given_id = a.id.as_deref().map(parse_hex).transpose()?;
    // Every object gets the same id: the given one, or the key identifier
    // of the key's (or certificate's) public key.
    let key = items.iter().find_map(|i| match i {
        Item::Key(k) => Some(k),
        Item::Certificate(_) => None,
    });
    let cert = items.iter().find_map(|i| match i {
        Item::Certificate(c) => Some(c),
        Item::Key(_) => None,
    });
    let spki = match (key.map(key_spki).transpose()?, cert) {
        (Some(k), Some(c)) if k != c.spki => {
            return Err(Failure::new(
                "the certificate is not for the private key in the same file",
            ));
        }
        (Some(k), _) => k,
        (None, Some(c)) => c.spki.clone(),
        (None, None) => return Err(Failure::new("no private key or certificate in the file")),
    };
    let id = match given_id {
        Some(id) => id,
        None => keyfile::default_id(&spki).map_err(Failure::new)?,
    };
    let config = load_config()?;
    let _started = Started::with(config)?;
    let token = find(&a.token)?;
    let pin = a.pin.read(Kind::Current)?;
    let s = LoggedIn::open(token.slot, CKU_USER, &pin)?;
    let mut made = Vec::new();
    let result = s.session(|session| {
        let mut created: Vec<CK_OBJECT_HANDLE> = Vec::new();
        let outcome = import_items(session, a, &items, &id, &spki, &mut created, &mut made);
        if outcome.is_err() {
            // All or nothing: what this import made goes again.
            for h in created.into_iter().rev() {
                let _ = objects::destroy(session, h);
            }
        }
        Ok(outcome)
    });
    result.map_err(|e| Failure::new(format!("importing: {e}")))??;
    if json {
        println!(
            "{}",
            serde_json::json!({"token": token.meta.label, "label": a.label, "id": hex(&id), "objects": made})
        );
    } else {
        for m in &made {
            println!(
                "imported {} {} '{}' (id {}) into token '{}'",
                m.kind,
                m.class,
                a.label,
                hex(&id),
                token.meta.label
            );
        }
    }
    Ok(())
}

/// Creates the objects of `items` on the token, recording each handle in
/// `created` as it is made; `spki` is the key's, as computed before.
fn import_items(
    session: &Session,
    a: &ImportArgs,
    items: &[Item],
    id: &[u8],
    spki: &[u8],
    created: &mut Vec<CK_OBJECT_HANDLE>,
    made: &mut Vec<Made>,
) -> Result<(), Failure> {
    for item in items {
        match item {
            Item::Key(k) => {
                refuse_duplicate(session, CKO_PRIVATE_KEY, "private key", &a.label, id)?;
                if !a.no_public_key {
                    refuse_duplicate(session, CKO_PUBLIC_KEY, "public key", &a.label, id)?;
                }
                let h = objects::create(session, &private_template(k, a, id)).map_err(|e| {
                    Failure::new(format!("C_CreateObject ({} private key): {e}", k.kind))
                })?;
                created.push(h);
                made.push(Made {
                    class: "private key",
                    kind: k.kind.clone(),
                });
                if !a.no_public_key {
                    let t = public_template(session, h, k.key_type, spki, &a.label, id)
                        .map_err(|e| Failure::new(format!("reading the public key: {e}")))?;
                    let p = objects::create(session, &t).map_err(|e| {
                        Failure::new(format!("C_CreateObject ({} public key): {e}", k.kind))
                    })?;
                    created.push(p);
                    made.push(Made {
                        class: "public key",
                        kind: k.kind.clone(),
                    });
                }
            }
            Item::Certificate(c) => {
                refuse_duplicate(session, CKO_CERTIFICATE, "certificate", &a.label, id)?;
                let t = vec![
                    Attr::ulong(CKA_CLASS, CKO_CERTIFICATE),
                    Attr::ulong(CKA_CERTIFICATE_TYPE, CKC_X_509),
                    Attr::bool(CKA_TOKEN, true),
                    Attr::bool(CKA_PRIVATE, false),
                    Attr::new(CKA_LABEL, a.label.as_bytes()),
                    Attr::new(CKA_ID, id),
                    Attr::new(CKA_SUBJECT, &c.subject),
                    Attr::new(CKA_ISSUER, &c.issuer),
                    Attr::new(CKA_SERIAL_NUMBER, &c.serial),
                    Attr::new(CKA_VALUE, &c.der),
                ];
                let h = objects::create(session, &t)
                    .map_err(|e| Failure::new(format!("C_CreateObject (certificate): {e}")))?;
                created.push(h);
                made.push(Made {
                    class: "certificate",
                    kind: "X.509".into(),
                });
            }
        }
    }
    Ok(())
}

/// The one object of `class` that `choice` names.
fn the_object(
    session: &Session,
    class: CK_OBJECT_CLASS,
    choice: &ObjectChoice,
) -> Result<Option<CK_OBJECT_HANDLE>, Failure> {
    let mut t = vec![Attr::ulong(CKA_CLASS, class)];
    if let Some(l) = &choice.label {
        t.push(Attr::new(CKA_LABEL, l.as_bytes()));
    }
    if let Some(id) = &choice.id {
        t.push(Attr::new(CKA_ID, &parse_hex(id)?));
    }
    let found =
        find_objects(session, &t).map_err(|e| Failure::new(format!("C_FindObjects: {e}")))?;
    match found.len() {
        0 => Ok(None),
        1 => Ok(Some(found[0])),
        n => Err(Failure::new(format!(
            "{n} objects match: name one with both --label and --id"
        ))),
    }
}

/// Writes `text` to `out`, or standard output.
fn write_out(out: Option<&Path>, bytes: &[u8]) -> Outcome {
    match out {
        None => std::io::stdout()
            .write_all(bytes)
            .map_err(|e| Failure::new(format!("writing to standard output: {e}"))),
        Some(p) => std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(p)
            .and_then(|mut f| f.write_all(bytes))
            .map_err(|e| Failure::new(format!("writing {}: {e}", p.display()))),
    }
}

/// A session for reading: logged in as the user if a PIN was given.
fn reading_session(a: &ExportArgs) -> Result<(crate::tokens::Found, LoggedIn), Failure> {
    let token = find(&a.token)?;
    let s = if a.pin.pin_env.is_some() || a.pin.pin.is_some() {
        LoggedIn::open(token.slot, CKU_USER, &a.pin.read(Kind::Current)?)?
    } else {
        LoggedIn::public(token.slot)?
    };
    Ok((token, s))
}

/// `export-public`: the public key (or the public half of a private key
/// when logged in) as a PEM or DER SubjectPublicKeyInfo.
pub fn export_public(a: &ExportArgs, json: bool) -> Outcome {
    let _started = Started::with(load_config()?)?;
    let (_token, s) = reading_session(a)?;
    let spki = s
        .session(|session| {
            let mut found = None;
            for class in [CKO_PUBLIC_KEY, CKO_PRIVATE_KEY] {
                match the_object(session, class, &a.object) {
                    Ok(Some(h)) => {
                        found = Some(h);
                        break;
                    }
                    Ok(None) => {}
                    Err(f) => return Ok(Err(f)),
                }
            }
            let Some(h) = found else {
                return Ok(Err(Failure::new(format!(
                    "no public key {}{}",
                    a.object.describe(),
                    if logged_out(a) {
                        " (private keys are searched too when a PIN is given)"
                    } else {
                        ""
                    }
                ))));
            };
            let key_type = read_attr(session, h, CKA_KEY_TYPE)?
                .and_then(|v| dalek_pkcs11::attributes::decode_ulong(&v).ok())
                .unwrap_or(CK_UNAVAILABLE_INFORMATION);
            if let Some(info) =
                read_attr(session, h, CKA_PUBLIC_KEY_INFO)?.filter(|v| !v.is_empty())
            {
                return Ok(Ok(info));
            }
            let get = |ty| read_attr(session, h, ty).ok().flatten();
            Ok(keyfile::public_key_info(key_type, &get).map_err(Failure::new))
        })
        .map_err(|e| Failure::new(format!("reading the key: {e}")))??;
    emit(a, "PUBLIC KEY", &spki, json)
}

/// Writes an exported DER value as PEM under `label` (or as DER with
/// `--der`) to `--out` or standard output; with `--json`, a document with
/// the PEM text (or the file written) instead.
fn emit(a: &ExportArgs, label: &str, der: &[u8], json: bool) -> Outcome {
    let pem = keyfile::to_pem(label, der);
    let out = if a.der { der } else { pem.as_bytes() };
    match (json, &a.out) {
        (false, out_file) => write_out(out_file.as_deref(), out),
        (true, Some(file)) => {
            write_out(Some(file), out)?;
            println!(
                "{}",
                serde_json::json!({"file": file, "bytes": out.len(), "der": a.der})
            );
            Ok(())
        }
        (true, None) => {
            println!("{}", serde_json::json!({"pem": pem, "der_hex": hex(der)}));
            Ok(())
        }
    }
}

fn logged_out(a: &ExportArgs) -> bool {
    a.pin.pin_env.is_none() && a.pin.pin.is_none()
}

/// `export-cert`: a certificate's DER value, as PEM or DER.
pub fn export_cert(a: &ExportArgs, json: bool) -> Outcome {
    let _started = Started::with(load_config()?)?;
    let (_token, s) = reading_session(a)?;
    let der = s
        .session(|session| {
            let h = match the_object(session, CKO_CERTIFICATE, &a.object) {
                Ok(Some(h)) => h,
                Ok(None) => {
                    return Ok(Err(Failure::new(format!(
                        "no certificate {}",
                        a.object.describe()
                    ))));
                }
                Err(f) => return Ok(Err(f)),
            };
            Ok(read_attr(session, h, CKA_VALUE)?
                .filter(|v| !v.is_empty())
                .ok_or_else(|| Failure::new("the certificate has no value")))
        })
        .map_err(|e| Failure::new(format!("reading the certificate: {e}")))??;
    emit(a, "CERTIFICATE", &der, json)
}

impl ObjectChoice {
    /// "labelled 'K' with id 01" for messages.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(l) = &self.label {
            parts.push(format!("labelled '{l}'"));
        }
        if let Some(id) = &self.id {
            parts.push(format!("with id {id}"));
        }
        parts.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_hex() {
        assert_eq!(parse_hex("0a:FF 01").ok(), Some(vec![0x0a, 0xff, 0x01]));
        assert_eq!(parse_hex("0x0102").ok(), Some(vec![1, 2]));
        for bad in ["", "1", "zz", "0x", &"00".repeat(129)] {
            assert!(parse_hex(bad).is_err(), "{bad}");
        }
        assert_eq!(hex(&[0, 0xab]), "00ab");
    }
}
