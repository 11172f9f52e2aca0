//! `migrate`: copies every token object of another PKCS#11 module's token
//! (SoftHSM2, another dalek-pkcs11, …), loaded with the `cryptoki` crate as
//! any consumer loads it, into one of ours through the module's own
//! `C_CreateObject` / `C_UnwrapKey` code:
//! - public objects, and keys whose `CKA_SENSITIVE` is false, by value
//!   (`C_GetAttributeValue`, base spec §5.7);
//! - sensitive keys whose `CKA_EXTRACTABLE` is true by wrapping (§5.18):
//!   the source wraps them under a temporary AES-256 session key with
//!   `CKM_AES_KEY_WRAP_PAD` (RFC 5649; private keys as PKCS#8), the same key
//!   is made a session object here and unwraps them;
//! - keys that are sensitive and not extractable cannot leave their token:
//!   they are listed with the reason, as is anything else not copied.
//!
//! Objects already here (same class, label and id; data objects and
//! certificates also the same value) are left alone, so a
//! migration can be run again after fixing what stopped it.

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::mechanism::{Mechanism as SourceMechanism, MechanismType};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session as SourceSession, UserType};
use cryptoki::types::AuthPin;
use cryptoki_sys::*;
use dalek_pkcs11::api::crypto;
use dalek_pkcs11::api::objects;
use dalek_pkcs11::api::session::Session;
use dalek_pkcs11::attributes::Attr;
use dalek_pkcs11::mechanisms::Mechanism;
use serde::Serialize;
use zeroize::Zeroizing;

use crate::objects::{find_objects, hex};
use crate::output;
use crate::pin::Kind;
use crate::tokens::{LoggedIn, Started, find, load_config};
use crate::{Failure, MigrateArgs, Outcome, TokenChoice};

/// What happened to one source object.
#[derive(Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Fate {
    /// Copied by value.
    Moved,
    /// Copied by wrapping.
    MovedWrapped,
    /// An object of the same class, label and id was already here.
    AlreadyThere,
    /// Not copied (the reason says why).
    NotMovable,
}

/// One source object and its fate.
#[derive(Serialize)]
struct Entry {
    class: String,
    key_type: Option<String>,
    label: String,
    id: String,
    fate: Fate,
    reason: Option<String>,
}

/// The attributes copied as they are, when the source has them: identity,
/// usage and policy (dates are not copied).
const COMMON: &[AttributeType] = &[
    AttributeType::Label,
    AttributeType::Id,
    AttributeType::Private,
    AttributeType::Modifiable,
    AttributeType::Subject,
    AttributeType::Encrypt,
    AttributeType::Decrypt,
    AttributeType::Sign,
    AttributeType::SignRecover,
    AttributeType::Verify,
    AttributeType::VerifyRecover,
    AttributeType::Wrap,
    AttributeType::Unwrap,
    AttributeType::Derive,
    AttributeType::Sensitive,
    AttributeType::Extractable,
    AttributeType::AlwaysAuthenticate,
    AttributeType::WrapWithTrusted,
    AttributeType::AllowedMechanisms,
];

/// The key values of a key of `class` and `key_type`.
fn key_values(class: ObjectClass, key_type: KeyType) -> &'static [AttributeType] {
    use AttributeType as A;
    match (class, key_type) {
        (ObjectClass::PUBLIC_KEY, KeyType::RSA) => &[A::Modulus, A::PublicExponent],
        (ObjectClass::PRIVATE_KEY, KeyType::RSA) => &[
            A::Modulus,
            A::PublicExponent,
            A::PrivateExponent,
            A::Prime1,
            A::Prime2,
            A::Exponent1,
            A::Exponent2,
            A::Coefficient,
        ],
        (ObjectClass::PUBLIC_KEY, KeyType::EC | KeyType::EC_EDWARDS | KeyType::EC_MONTGOMERY) => {
            &[A::EcParams, A::EcPoint]
        }
        (ObjectClass::PRIVATE_KEY, KeyType::EC | KeyType::EC_EDWARDS | KeyType::EC_MONTGOMERY) => {
            &[A::EcParams, A::Value]
        }
        // PKCS#11 3.2 ML-DSA, ML-KEM and SLH-DSA keys: the parameter set
        // and the raw public key; the private seed and/or expanded value
        // (SLH-DSA: its one value). A key may lack one of seed and value:
        // see `optional_value`.
        (ObjectClass::PUBLIC_KEY, KeyType::ML_DSA | KeyType::ML_KEM | KeyType::SLH_DSA) => {
            &[A::ParameterSet, A::Value]
        }
        (ObjectClass::PRIVATE_KEY, KeyType::ML_DSA | KeyType::ML_KEM) => {
            &[A::ParameterSet, A::Seed, A::Value]
        }
        (ObjectClass::PRIVATE_KEY, KeyType::SLH_DSA) => &[A::ParameterSet, A::Value],
        (ObjectClass::SECRET_KEY, _) => &[A::Value],
        _ => &[],
    }
}

/// Key values a source may lack: RSA's CRT values (the module computes
/// them), and one of an ML-DSA / ML-KEM private key's seed (a key imported
/// from its expanded form has none) and expanded value (the seed gives it).
fn optional_value(key_type: KeyType, t: AttributeType, got: &[Attribute]) -> bool {
    let has = |t: AttributeType| got.iter().any(|a| a.attribute_type() == t);
    match t {
        AttributeType::Exponent1 | AttributeType::Exponent2 | AttributeType::Coefficient => true,
        AttributeType::Seed => has(AttributeType::Value),
        AttributeType::Value if matches!(key_type, KeyType::ML_DSA | KeyType::ML_KEM) => {
            has(AttributeType::Seed)
        }
        _ => false,
    }
}

/// Usage attributes of a key type beyond [`COMMON`] (PKCS#11 3.2's
/// encapsulation flags exist on ML-KEM keys only).
fn usage_of(key_type: KeyType) -> &'static [AttributeType] {
    match key_type {
        KeyType::ML_KEM => &[AttributeType::Encapsulate, AttributeType::Decapsulate],
        _ => &[],
    }
}

/// The plain attribute of a source attribute (`None` for those not copied).
fn to_attr(a: &Attribute) -> Option<Attr> {
    use Attribute as A;
    Some(match a {
        A::Class(c) => Attr::ulong(CKA_CLASS, CK_OBJECT_CLASS::from(*c)),
        A::KeyType(k) => Attr::ulong(CKA_KEY_TYPE, CK_KEY_TYPE::from(*k)),
        A::CertificateType(c) => Attr::ulong(CKA_CERTIFICATE_TYPE, CK_CERTIFICATE_TYPE::from(*c)),
        A::AllowedMechanisms(m) => {
            let bytes: Vec<u8> = m
                .iter()
                .flat_map(|t| CK_MECHANISM_TYPE::from(*t).to_ne_bytes())
                .collect();
            Attr::new(CKA_ALLOWED_MECHANISMS, &bytes)
        }
        A::Private(v) => Attr::bool(CKA_PRIVATE, *v),
        A::Modifiable(v) => Attr::bool(CKA_MODIFIABLE, *v),
        A::Encrypt(v) => Attr::bool(CKA_ENCRYPT, *v),
        A::Decrypt(v) => Attr::bool(CKA_DECRYPT, *v),
        A::Sign(v) => Attr::bool(CKA_SIGN, *v),
        A::SignRecover(v) => Attr::bool(CKA_SIGN_RECOVER, *v),
        A::Verify(v) => Attr::bool(CKA_VERIFY, *v),
        A::VerifyRecover(v) => Attr::bool(CKA_VERIFY_RECOVER, *v),
        A::Wrap(v) => Attr::bool(CKA_WRAP, *v),
        A::Unwrap(v) => Attr::bool(CKA_UNWRAP, *v),
        A::Derive(v) => Attr::bool(CKA_DERIVE, *v),
        A::Sensitive(v) => Attr::bool(CKA_SENSITIVE, *v),
        A::Extractable(v) => Attr::bool(CKA_EXTRACTABLE, *v),
        A::AlwaysAuthenticate(v) => Attr::bool(CKA_ALWAYS_AUTHENTICATE, *v),
        A::WrapWithTrusted(v) => Attr::bool(CKA_WRAP_WITH_TRUSTED, *v),
        A::Label(v) => Attr::new(CKA_LABEL, v),
        A::Id(v) => Attr::new(CKA_ID, v),
        A::Subject(v) => Attr::new(CKA_SUBJECT, v),
        A::Issuer(v) => Attr::new(CKA_ISSUER, v),
        A::SerialNumber(v) => Attr::new(CKA_SERIAL_NUMBER, v),
        A::Application(v) => Attr::new(CKA_APPLICATION, v),
        A::ObjectId(v) => Attr::new(CKA_OBJECT_ID, v),
        A::Url(v) => Attr::new(CKA_URL, v),
        A::HashOfSubjectPublicKey(v) => Attr::new(CKA_HASH_OF_SUBJECT_PUBLIC_KEY, v),
        A::HashOfIssuerPublicKey(v) => Attr::new(CKA_HASH_OF_ISSUER_PUBLIC_KEY, v),
        A::Value(v) => Attr::new(CKA_VALUE, v),
        A::Seed(v) => Attr::new(CKA_SEED, v),
        A::ParameterSet(p) => Attr::ulong(CKA_PARAMETER_SET, ***p),
        A::Encapsulate(v) => Attr::bool(CKA_ENCAPSULATE, *v),
        A::Decapsulate(v) => Attr::bool(CKA_DECAPSULATE, *v),
        A::Modulus(v) => Attr::new(CKA_MODULUS, v),
        A::PublicExponent(v) => Attr::new(CKA_PUBLIC_EXPONENT, v),
        A::PrivateExponent(v) => Attr::new(CKA_PRIVATE_EXPONENT, v),
        A::Prime1(v) => Attr::new(CKA_PRIME_1, v),
        A::Prime2(v) => Attr::new(CKA_PRIME_2, v),
        A::Exponent1(v) => Attr::new(CKA_EXPONENT_1, v),
        A::Exponent2(v) => Attr::new(CKA_EXPONENT_2, v),
        A::Coefficient(v) => Attr::new(CKA_COEFFICIENT, v),
        A::EcParams(v) => Attr::new(CKA_EC_PARAMS, v),
        A::EcPoint(v) => Attr::new(CKA_EC_POINT, v),
        _ => return None,
    })
}

/// Attributes read from the source; the secret values among them are
/// zeroized when dropped (the copies in `Attr` are too).
struct Values(Vec<Attribute>);

impl Drop for Values {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        for a in &mut self.0 {
            match a {
                Attribute::Value(v)
                | Attribute::Seed(v)
                | Attribute::PrivateExponent(v)
                | Attribute::Prime1(v)
                | Attribute::Prime2(v)
                | Attribute::Exponent1(v)
                | Attribute::Exponent2(v)
                | Attribute::Coefficient(v) => v.zeroize(),
                _ => {}
            }
        }
    }
}

/// The source token: its module, and a logged-in read-only session.
struct Source {
    session: SourceSession,
    /// Whether it offers `CKM_AES_KEY_WRAP_PAD`.
    kwp: bool,
    _pkcs11: Pkcs11,
}

/// A source module's error in one short line ("C_WrapKey: KeyNotWrappable").
/// This token's refusal of a copy made by `call`, with the reason when it
/// is the strict key-management policy's (docs/SECURITY.md).
fn refused_here(call: &str, e: &dalek_pkcs11::error::Error, here: &Session) -> String {
    if e.rv() == CKR_TEMPLATE_INCONSISTENT && here.token.config().key_policy.is_strict() {
        format!(
            "{call}: {e} (key_policy = strict: a key made outside this token never wraps, an \
             unwrapped key is sensitive, and no key holds wrap with decrypt or derive, or unwrap \
             with encrypt or derive)"
        )
    } else {
        format!("{call}: {e}")
    }
}

fn short(e: &cryptoki::error::Error) -> String {
    match e {
        cryptoki::error::Error::Pkcs11(rv, function) => format!("C_{function:?}: {rv:?}"),
        other => other.to_string(),
    }
}

fn source_error(what: &str, e: cryptoki::error::Error) -> Failure {
    Failure::new(format!("source module: {what}: {}", short(&e)))
}

impl Source {
    /// Loads `module`, finds the token labelled `label`, logs in.
    fn open(module: &std::path::Path, label: &str, pin: &[u8]) -> Result<Self, Failure> {
        let pkcs11 = Pkcs11::new(module)
            .map_err(|e| Failure::new(format!("loading {}: {e}", module.display())))?;
        pkcs11
            .initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK))
            .map_err(|e| source_error("C_Initialize", e))?;
        let slots = pkcs11
            .get_slots_with_token()
            .map_err(|e| source_error("C_GetSlotList", e))?;
        let slot = slots
            .into_iter()
            .find(|s| {
                pkcs11
                    .get_token_info(*s)
                    .is_ok_and(|t| t.label().trim_end() == label)
            })
            .ok_or_else(|| {
                Failure::new(format!("the source module has no token labelled '{label}'"))
            })?;
        let session = pkcs11
            .open_ro_session(slot)
            .map_err(|e| source_error("C_OpenSession", e))?;
        let pin = AuthPin::new(
            String::from_utf8(pin.to_vec())
                .map_err(|_| Failure::new("the source PIN is not UTF-8"))?
                .into(),
        );
        session
            .login(UserType::User, Some(&pin))
            .map_err(|e| source_error("C_Login", e))?;
        let mechs = pkcs11.get_mechanism_list(slot).unwrap_or_default();
        Ok(Source {
            session,
            kwp: mechs.contains(&MechanismType::AES_KEY_WRAP_PAD),
            _pkcs11: pkcs11,
        })
    }
}

/// The temporary AES-256 key both tokens hold: wrapping on the source,
/// unwrapping here. Both are session objects, gone with their sessions.
struct Transport {
    source: ObjectHandle,
    here: CK_OBJECT_HANDLE,
}

impl Transport {
    fn make(source: &Source, here: &Session) -> Result<Self, String> {
        let src = &source.session;
        if !source.kwp {
            return Err("the source token offers no CKM_AES_KEY_WRAP_PAD to wrap keys with".into());
        }
        let mut value = Zeroizing::new(vec![0u8; 32]);
        getrandom::fill(&mut value).map_err(|e| format!("random bytes: {e}"))?;
        let source = src
            .create_object(&[
                Attribute::Class(ObjectClass::SECRET_KEY),
                Attribute::KeyType(KeyType::AES),
                Attribute::Token(false),
                Attribute::Wrap(true),
                // A wrapping key that could also decrypt (or derive a copy
                // of itself that decrypts) what it wraps is refused by a
                // token holding wrap separation, as ours does by default.
                Attribute::Decrypt(false),
                Attribute::Derive(false),
                Attribute::Sensitive(true),
                Attribute::Extractable(false),
                Attribute::Value(value.to_vec()),
            ])
            .map_err(|e| {
                format!(
                    "the source token refused a temporary wrapping key: {}",
                    short(&e)
                )
            })?;
        let here = objects::create(
            here,
            &[
                Attr::ulong(CKA_CLASS, CKO_SECRET_KEY),
                Attr::ulong(CKA_KEY_TYPE, CKK_AES),
                Attr::bool(CKA_TOKEN, false),
                Attr::bool(CKA_UNWRAP, true),
                Attr::bool(CKA_ENCRYPT, false),
                Attr::bool(CKA_DERIVE, false),
                Attr::bool(CKA_SENSITIVE, true),
                Attr::bool(CKA_EXTRACTABLE, false),
                Attr::new(CKA_VALUE, &value),
            ],
        )
        .map_err(|e| format!("C_CreateObject (temporary unwrapping key): {e}"))?;
        Ok(Transport { source, here })
    }
}

/// Copies one source object; `transport` is made on first need.
fn copy_object(
    source: &Source,
    here: &Session,
    handle: ObjectHandle,
    transport: &mut Option<Result<Transport, String>>,
    dry_run: bool,
) -> Result<Entry, Failure> {
    let src = &source.session;
    let head = src
        .get_attributes(
            handle,
            &[
                AttributeType::Class,
                AttributeType::KeyType,
                AttributeType::CertificateType,
                AttributeType::Label,
                AttributeType::Id,
                AttributeType::Sensitive,
                AttributeType::Extractable,
            ],
        )
        .map_err(|e| source_error("C_GetAttributeValue", e))?;
    let mut class = None;
    let mut key_type = None;
    let mut cert_type = None;
    let (mut label, mut id) = (Vec::new(), None);
    let (mut sensitive, mut extractable) = (false, false);
    for a in &head {
        match a {
            Attribute::Class(c) => class = Some(*c),
            Attribute::KeyType(k) => key_type = Some(*k),
            Attribute::CertificateType(c) => cert_type = Some(*c),
            Attribute::Label(l) => label = l.clone(),
            Attribute::Id(i) => id = Some(i.clone()),
            Attribute::Sensitive(s) => sensitive = *s,
            Attribute::Extractable(x) => extractable = *x,
            _ => {}
        }
    }
    let class = class.ok_or_else(|| Failure::new("a source object has no CKA_CLASS"))?;
    let mut entry = Entry {
        class: crate::tokens::class_name(CK_OBJECT_CLASS::from(class)).to_string(),
        key_type: key_type.map(|k| k.to_string().trim_start_matches("CKK_").to_string()),
        label: String::from_utf8_lossy(&label).into_owned(),
        id: id.as_deref().map(hex).unwrap_or_default(),
        fate: Fate::NotMovable,
        reason: None,
    };
    let not_movable = |mut e: Entry, why: String| {
        e.fate = Fate::NotMovable;
        e.reason = Some(why);
        Ok(e)
    };
    let raw_class = CK_OBJECT_CLASS::from(class);
    // Already here? Keys: same label and id. Data objects (which have no
    // CKA_ID) and certificates: same label, id and value, so that two
    // source objects sharing a label are both copied.
    let mut same = vec![
        Attr::ulong(CKA_CLASS, raw_class),
        Attr::new(CKA_LABEL, &label),
    ];
    same.extend(id.as_deref().map(|id| Attr::new(CKA_ID, id)));
    if matches!(class, ObjectClass::DATA | ObjectClass::CERTIFICATE) {
        let value = src
            .get_attributes(handle, &[AttributeType::Value])
            .map_err(|e| source_error("C_GetAttributeValue", e))?;
        same.extend(value.iter().filter_map(to_attr));
    }
    let same =
        find_objects(here, &same).map_err(|e| Failure::new(format!("C_FindObjects: {e}")))?;
    if !same.is_empty() {
        entry.fate = Fate::AlreadyThere;
        return Ok(entry);
    }
    let is_key = matches!(
        class,
        ObjectClass::PUBLIC_KEY | ObjectClass::PRIVATE_KEY | ObjectClass::SECRET_KEY
    );
    let mut wanted: Vec<AttributeType> = Vec::new();
    match class {
        ObjectClass::DATA => wanted.extend([
            AttributeType::Label,
            AttributeType::Private,
            AttributeType::Modifiable,
            AttributeType::Application,
            AttributeType::ObjectId,
            AttributeType::Value,
        ]),
        ObjectClass::CERTIFICATE => {
            if cert_type != Some(cryptoki::object::CertificateType::X_509) {
                return not_movable(entry, "only X.509 certificates are copied".into());
            }
            wanted.extend([
                AttributeType::CertificateType,
                AttributeType::Label,
                AttributeType::Id,
                AttributeType::Private,
                AttributeType::Modifiable,
                AttributeType::Subject,
                AttributeType::Issuer,
                AttributeType::SerialNumber,
                AttributeType::Value,
                AttributeType::Url,
                AttributeType::HashOfSubjectPublicKey,
                AttributeType::HashOfIssuerPublicKey,
            ]);
        }
        _ if is_key => {
            let Some(kt) = key_type else {
                return not_movable(entry, "the key has no CKA_KEY_TYPE".into());
            };
            wanted.push(AttributeType::KeyType);
            wanted.extend_from_slice(COMMON);
            wanted.extend_from_slice(usage_of(kt));
            if key_values(class, kt).is_empty() {
                return not_movable(entry, format!("keys of type {kt} are not copied"));
            }
        }
        other => {
            return not_movable(entry, format!("objects of class {other} are not copied"));
        }
    }
    let by_wrapping = is_key && class != ObjectClass::PUBLIC_KEY && sensitive;
    if by_wrapping && !extractable {
        return not_movable(
            entry,
            "sensitive and not extractable: the source token will not let it out".into(),
        );
    }
    if !by_wrapping && is_key {
        wanted.extend_from_slice(key_values(class, key_type.unwrap_or(KeyType::AES)));
    }
    let got = Values(
        src.get_attributes(handle, &wanted)
            .map_err(|e| source_error("C_GetAttributeValue", e))?,
    );
    let got = &got.0;
    let mut template = vec![
        Attr::ulong(CKA_CLASS, raw_class),
        Attr::bool(CKA_TOKEN, true),
    ];
    template.extend(got.iter().filter_map(to_attr));
    if !by_wrapping {
        // Every key value must have come: a sensitive value is not there.
        if is_key {
            let missing: Vec<String> = key_values(class, key_type.unwrap_or(KeyType::AES))
                .iter()
                .filter(|t| !got.iter().any(|a| a.attribute_type() == **t))
                .filter(|t| !optional_value(key_type.unwrap_or(KeyType::AES), **t, got))
                .map(ToString::to_string)
                .collect();
            if !missing.is_empty() {
                let hint = if extractable {
                    ""
                } else {
                    " (it is not extractable)"
                };
                return not_movable(
                    entry,
                    format!("the source token did not give {}{hint}", missing.join(", ")),
                );
            }
        }
        if !dry_run {
            match objects::create(here, &template) {
                Ok(_) => {}
                Err(e) => return not_movable(entry, refused_here("C_CreateObject", &e, here)),
            }
        }
        entry.fate = Fate::Moved;
        return Ok(entry);
    }
    if dry_run {
        entry.fate = Fate::MovedWrapped;
        return Ok(entry);
    }
    let t = match transport.get_or_insert_with(|| Transport::make(source, here)) {
        Ok(t) => t,
        Err(why) => return not_movable(entry, why.clone()),
    };
    let wrapped = match src.wrap_key(&SourceMechanism::AesKeyWrapPad, t.source, handle) {
        Ok(w) => Zeroizing::new(w),
        Err(e) => return not_movable(entry, format!("the source token refused: {}", short(&e))),
    };
    match crypto::unwrap_key(
        here,
        &Mechanism::plain(CKM_AES_KEY_WRAP_PAD),
        t.here,
        &wrapped,
        &template,
    ) {
        Ok(_) => {
            entry.fate = Fate::MovedWrapped;
            Ok(entry)
        }
        Err(e) => not_movable(entry, refused_here("C_UnwrapKey", &e, here)),
    }
}

/// `migrate`: exit 0 when every object moved (or was already here), 1
/// when some could not be moved (they are listed), 2 on an error.
pub fn migrate(a: &MigrateArgs, json: bool) -> Outcome {
    let from_pin = crate::pin::read(
        "source token's user PIN",
        a.pin_env.as_deref(),
        None,
        Kind::Current,
    )?;
    let to_pin = match &a.to_pin_env {
        Some(var) => crate::pin::read("user PIN", Some(var), None, Kind::Current)?,
        None => from_pin.clone(),
    };
    let source = Source::open(&a.from_module, &a.from_token, &from_pin)?;
    let _started = Started::with(load_config()?)?;
    let target = find(&TokenChoice {
        label: Some(a.to_token.clone()),
        serial: None,
    })?;
    let here = LoggedIn::open(target.slot, CKU_USER, &to_pin)?;
    let handles = source
        .session
        .find_objects(&[Attribute::Token(true)])
        .map_err(|e| source_error("C_FindObjects", e))?;
    let bar = output::progress_bar(
        handles.len() as u64,
        "migrate {bar:30} {pos}/{len} objects",
        json,
    );
    let mut transport = None;
    let mut entries = Vec::with_capacity(handles.len());
    let copied = here.session(|session| {
        for h in &handles {
            entries.push(copy_object(&source, session, *h, &mut transport, a.dry_run));
            bar.inc(1);
        }
        if let Some(Ok(t)) = &transport {
            let _ = objects::destroy(session, t.here);
            let _ = source.session.destroy_object(t.source);
        }
        Ok(())
    });
    bar.finish_and_clear();
    copied.map_err(|e| Failure::new(format!("migrating: {e}")))?;
    let entries: Vec<Entry> = entries.into_iter().collect::<Result<_, _>>()?;
    let count = |f: &[Fate]| entries.iter().filter(|e| f.contains(&e.fate)).count();
    let moved = count(&[Fate::Moved, Fate::MovedWrapped]);
    let there = count(&[Fate::AlreadyThere]);
    let stuck = count(&[Fate::NotMovable]);
    if json {
        println!(
            "{}",
            serde_json::json!({
                "from_token": a.from_token, "to_token": a.to_token, "dry_run": a.dry_run,
                "moved": moved, "already_there": there, "not_movable": stuck,
                "objects": entries,
            })
        );
    } else {
        let verb = if a.dry_run { "would move" } else { "moved" };
        println!(
            "token '{}' -> '{}': {moved} {verb}, {there} already there, {stuck} not movable",
            a.from_token, a.to_token
        );
        for e in &entries {
            let what = match e.fate {
                Fate::Moved => format!("{verb} by value"),
                Fate::MovedWrapped => format!("{verb} by wrapping (CKM_AES_KEY_WRAP_PAD)"),
                Fate::AlreadyThere => "already there".into(),
                Fate::NotMovable => format!(
                    "NOT MOVABLE: {}",
                    e.reason.as_deref().unwrap_or("no reason given")
                ),
            };
            println!(
                "  {}{} '{}' (id {}): {what}",
                e.class,
                e.key_type
                    .as_deref()
                    .map(|k| format!(" {k}"))
                    .unwrap_or_default(),
                e.label,
                if e.id.is_empty() { "-" } else { &e.id },
            );
        }
    }
    if stuck > 0 {
        return Err(Failure::check(format!(
            "{stuck} object(s) could not be moved (listed above)"
        )));
    }
    Ok(())
}
