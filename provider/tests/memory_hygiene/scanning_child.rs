//! The scanning child of the memory hygiene test (role `MEMORY_SCAN`;
//! docs/SECURITY.md, "Memory hygiene"): drives the module through its
//! phases with every secret held in the vault, and scans its own memory
//! after every `C_Logout` and `C_Finalize` (PKCS #11 3.0 base spec §5.6,
//! §5.4).

use super::*;

/// A template for raw `C_CreateObject`: plain values owned here, secret
/// values pointing into the vault.
#[derive(Default)]
struct Template {
    values: Vec<(CK_ATTRIBUTE_TYPE, Vec<u8>)>,
    secrets: Vec<(CK_ATTRIBUTE_TYPE, *mut u8, usize)>,
}

impl Template {
    fn ulong(mut self, ty: CK_ATTRIBUTE_TYPE, v: CK_ULONG) -> Self {
        self.values.push((ty, v.to_ne_bytes().to_vec()));
        self
    }
    fn bool(mut self, ty: CK_ATTRIBUTE_TYPE, v: bool) -> Self {
        self.values.push((ty, vec![u8::from(v)]));
        self
    }
    fn bytes(mut self, ty: CK_ATTRIBUTE_TYPE, v: &[u8]) -> Self {
        self.values.push((ty, v.to_vec()));
        self
    }
    fn secret(mut self, ty: CK_ATTRIBUTE_TYPE, vault: &Vault, s: &Secret) -> Self {
        self.secrets.push((ty, vault.ptr(s), s.len));
        self
    }

    /// A private, sensitive, unextractable key labelled `label`.
    fn key(label: &str, class: CK_OBJECT_CLASS, key_type: CK_KEY_TYPE, token: bool) -> Self {
        Template::default()
            .ulong(CKA_CLASS, class)
            .ulong(CKA_KEY_TYPE, key_type)
            .bytes(CKA_LABEL, label.as_bytes())
            .bool(CKA_TOKEN, token)
            .bool(CKA_PRIVATE, true)
            .bool(CKA_SENSITIVE, true)
            .bool(CKA_EXTRACTABLE, false)
    }

    fn create(mut self, s: &Session) -> CK_OBJECT_HANDLE {
        let mut attrs: Vec<CK_ATTRIBUTE> = self
            .values
            .iter_mut()
            .map(|(ty, v)| CK_ATTRIBUTE {
                type_: *ty,
                pValue: v.as_mut_ptr().cast(),
                ulValueLen: v.len() as CK_ULONG,
            })
            .chain(self.secrets.iter().map(|&(ty, p, len)| CK_ATTRIBUTE {
                type_: ty,
                pValue: p.cast(),
                ulValueLen: len as CK_ULONG,
            }))
            .collect();
        let mut h = 0;
        // SAFETY: every attribute points at a live buffer of its length.
        let rv = unsafe {
            (raw().C_CreateObject.unwrap())(
                s.handle(),
                attrs.as_mut_ptr(),
                attrs.len() as _,
                &mut h,
            )
        };
        assert_eq!(rv, CKR_OK, "C_CreateObject");
        h
    }
}

/// Raw `C_Login` as `user` with a PIN in the vault.
fn login(s: &Session, user: CK_USER_TYPE, vault: &Vault, pin: &Secret) {
    // SAFETY: the PIN is `pin.len` bytes in the vault.
    let rv = unsafe { (raw().C_Login.unwrap())(s.handle(), user, vault.ptr(pin), pin.len as _) };
    assert_eq!(rv, CKR_OK, "C_Login");
}

/// Raw `C_SetPIN` with both PINs in the vault.
fn set_pin(s: &Session, vault: &Vault, old: &Secret, new: &Secret) {
    // SAFETY: both PINs are in the vault, of their lengths.
    let rv = unsafe {
        (raw().C_SetPIN.unwrap())(
            s.handle(),
            vault.ptr(old),
            old.len as _,
            vault.ptr(new),
            new.len as _,
        )
    };
    assert_eq!(rv, CKR_OK, "C_SetPIN");
}

/// Raw `C_InitPIN` with the PIN in the vault.
fn init_pin(s: &Session, vault: &Vault, pin: &Secret) {
    // SAFETY: the PIN is `pin.len` bytes in the vault.
    let rv = unsafe { (raw().C_InitPIN.unwrap())(s.handle(), vault.ptr(pin), pin.len as _) };
    assert_eq!(rv, CKR_OK, "C_InitPIN");
}

/// Raw `C_GetOperationState`: the module keeps the session's state.
fn save_state(s: &Session) {
    let mut state = [0u8; 64];
    let mut len = state.len() as CK_ULONG;
    // SAFETY: `state` has room for `len` bytes.
    let rv =
        unsafe { (raw().C_GetOperationState.unwrap())(s.handle(), state.as_mut_ptr(), &mut len) };
    assert_eq!(rv, CKR_OK, "C_GetOperationState");
}

fn start() -> (Pkcs11, Slot) {
    let p = Pkcs11::new(module_path()).unwrap();
    p.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK))
        .unwrap();
    let slot = *p
        .get_slots_with_token()
        .unwrap()
        .iter()
        .find(|s| p.get_token_info(**s).unwrap().label() == LABEL)
        .expect("the token");
    (p, slot)
}

/// The object labelled `label` (through `C_FindObjects`).
fn find(s: &Session, label: &str) -> ObjectHandle {
    let found = s.find_objects(&[Attribute::Label(label.into())]).unwrap();
    assert_eq!(found.len(), 1, "{label}");
    found[0]
}

const DATA: &[u8] = b"memory hygiene: a message to sign, encrypt and authenticate";

/// AES (GCM, CBC-PAD, CMAC) and HMAC with the token keys.
fn use_aes_and_hmac(s: &Session) {
    let aes = find(s, "aes");
    let mut iv = [7u8; 12];
    let gcm = Mechanism::AesGcm(GcmParams::new(&mut iv, b"aad", 128.into()).unwrap());
    let ct = s.encrypt(&gcm, aes, DATA).unwrap();
    assert_eq!(s.decrypt(&gcm, aes, &ct).unwrap(), DATA);
    let cbc = Mechanism::AesCbcPad([1; 16]);
    let ct = s.encrypt(&cbc, aes, DATA).unwrap();
    assert_eq!(s.decrypt(&cbc, aes, &ct).unwrap(), DATA);
    s.sign(&Mechanism::AesCMac, aes, DATA).unwrap();
    let hmac = find(s, "hmac");
    let mac = s.sign(&Mechanism::Sha256Hmac, hmac, DATA).unwrap();
    s.verify(&Mechanism::Sha256Hmac, hmac, DATA, &mac).unwrap();
    // Message-based GCM with a counter IV: the token's IV counters
    // remember the parsed key (api::ivcounter).
    use cryptoki::mechanism::MessageParam;
    use cryptoki::mechanism::aead::{GcmMessageParams, GeneratorFunction};
    let mut init_iv = [0u8; 12];
    let mut init_tag = [0u8; 16];
    let init = GcmMessageParams::new(
        &mut init_iv,
        0.into(),
        GeneratorFunction::NoGenerate,
        &mut init_tag,
    )
    .unwrap();
    s.message_encrypt_init(&Mechanism::AesGcmMessage(init), aes)
        .unwrap();
    let mut iv = [0u8; 12];
    let mut tag = [0u8; 16];
    let params = GcmMessageParams::new(
        &mut iv,
        32.into(),
        GeneratorFunction::GenerateCounter,
        &mut tag,
    )
    .unwrap();
    s.encrypt_message(&MessageParam::AesGcmMessage(params), b"aad", DATA)
        .unwrap();
    s.message_encrypt_final().unwrap();
}

/// ECDSA, Ed25519 and RSA (signature, OAEP decryption) with the token keys.
fn use_private_keys(s: &Session, rsa_public: ObjectHandle) {
    s.sign(&Mechanism::EcdsaSha256, find(s, "ec"), DATA)
        .unwrap();
    let eddsa = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure));
    s.sign(&eddsa, find(s, "ed25519"), DATA).unwrap();
    let rsa = find(s, "rsa");
    s.sign(&Mechanism::Sha256RsaPkcs, rsa, DATA).unwrap();
    let oaep = Mechanism::RsaPkcsOaep(PkcsOaepParams::new(
        MechanismType::SHA256,
        PkcsMgfType::MGF1_SHA256,
        PkcsOaepSource::empty(),
    ));
    let ct = s.encrypt(&oaep, rsa_public, DATA).unwrap();
    assert_eq!(s.decrypt(&oaep, rsa, &ct).unwrap(), DATA);
}

/// Searches, attribute reads, a change that re-seals, a copy and a
/// generated key.
fn search_and_change(s: &Session) {
    let keys = s
        .find_objects(&[Attribute::Sensitive(true), Attribute::Token(true)])
        .unwrap();
    assert_eq!(keys.len(), 5);
    for k in keys {
        let read = s
            .get_attributes(
                k,
                &[
                    AttributeType::Label,
                    AttributeType::Value,
                    AttributeType::PrivateExponent,
                    AttributeType::EcPoint,
                    AttributeType::UniqueId,
                ],
            )
            .unwrap();
        assert!(!read.iter().any(|a| matches!(a, Attribute::Value(_))));
    }
    let hmac = find(s, "hmac");
    s.update_attributes(hmac, &[Attribute::Id(b"changed".to_vec())])
        .unwrap();
    let aes = find(s, "aes");
    let copy = s
        .copy_object(aes, &[Attribute::Label(b"aes-copy".to_vec())])
        .unwrap();
    s.encrypt(&Mechanism::AesEcb, copy, &[0u8; 16]).unwrap();
    s.destroy_object(copy).unwrap();
    let generated = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Token(true),
                Attribute::Encrypt(true),
            ],
        )
        .unwrap();
    s.encrypt(&Mechanism::AesEcb, generated, &[0u8; 16])
        .unwrap();
    s.destroy_object(generated).unwrap();
}

/// The scanning child, `MEMORY_SCAN=name=masked:mask;...;plain:name=hex`
/// (see the module documentation). Every scan after a `C_Logout` or
/// `C_Finalize` must find nothing.
pub(crate) fn scan_worker(spec: &str) {
    let mut vault = Vault::new();
    let mut plain = std::collections::HashMap::new();
    let mut secrets = Vec::new();
    let mut masked = std::collections::HashMap::new();
    for item in spec.split(';') {
        let (name, value) = item.split_once('=').unwrap();
        if let Some(name) = name.strip_prefix("plain:") {
            plain.insert(name.to_string(), unhex(value));
        } else {
            secrets.push(vault.unmask(name, value));
            masked.insert(name.to_string(), value.to_string());
        }
    }
    let secret = |name: &str| -> Secret {
        secrets
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no secret {name}"))
            .clone()
    };
    let (user_pin, new_pin, so_pin) =
        (secret("user PIN"), secret("new user PIN"), secret("SO PIN"));
    let mut all = secrets.clone();
    let (token_key, kek) = keys_of("user", &masked["user PIN"]);
    all.push(vault.unmask("token key", &token_key));
    all.push(vault.unmask("key of the user PIN", &kek));
    let (_, kek) = keys_of("so", &masked["SO PIN"]);
    all.push(vault.unmask("key of the SO PIN", &kek));

    let mut left = Vec::new();
    let mut check = |vault: &mut Vault, all: &[Secret], when: &str| -> Vec<String> {
        let needles: Vec<Secret> = all.iter().flat_map(|s| vault.needles(s)).collect();
        let found = scan(vault, &needles);
        for f in &found {
            println!("{when}: {f}");
        }
        if when != "logged in" {
            left.extend(found.iter().map(|f| format!("{when}: {f}")));
        }
        found
    };
    let rsa_public_template = || {
        vec![
            Attribute::Class(cryptoki::object::ObjectClass::PUBLIC_KEY),
            Attribute::KeyType(cryptoki::object::KeyType::RSA),
            Attribute::Token(false),
            Attribute::Private(false),
            Attribute::Encrypt(true),
            Attribute::Modulus(plain["rsa-n"].clone()),
            Attribute::PublicExponent(plain["rsa-e"].clone()),
        ]
    };

    // A fresh process: every phase between a C_Login and a C_Logout.
    let (p, slot) = start();
    let s = p.open_rw_session(slot).unwrap();
    login(&s, CKU_USER, &vault, &user_pin);
    Template::key("aes", CKO_SECRET_KEY, CKK_AES, true)
        .bool(CKA_ENCRYPT, true)
        .bool(CKA_DECRYPT, true)
        .bool(CKA_SIGN, true)
        .secret(CKA_VALUE, &vault, &secret("aes"))
        .create(&s);
    Template::key("hmac", CKO_SECRET_KEY, CKK_GENERIC_SECRET, true)
        .bool(CKA_SIGN, true)
        .bool(CKA_VERIFY, true)
        .secret(CKA_VALUE, &vault, &secret("hmac"))
        .create(&s);
    Template::key("ec", CKO_PRIVATE_KEY, CKK_EC, true)
        .bool(CKA_SIGN, true)
        .bytes(CKA_EC_PARAMS, P256)
        .secret(CKA_VALUE, &vault, &secret("ec"))
        .create(&s);
    Template::key("ed25519", CKO_PRIVATE_KEY, CKK_EC_EDWARDS, true)
        .bool(CKA_SIGN, true)
        .bytes(CKA_EC_PARAMS, ED25519)
        .secret(CKA_VALUE, &vault, &secret("ed25519"))
        .create(&s);
    Template::key("rsa", CKO_PRIVATE_KEY, CKK_RSA, true)
        .bool(CKA_SIGN, true)
        .bool(CKA_DECRYPT, true)
        .bytes(CKA_MODULUS, &plain["rsa-n"])
        .bytes(CKA_PUBLIC_EXPONENT, &plain["rsa-e"])
        .secret(CKA_PRIVATE_EXPONENT, &vault, &secret("rsa-d"))
        .secret(CKA_PRIME_1, &vault, &secret("rsa-p"))
        .secret(CKA_PRIME_2, &vault, &secret("rsa-q"))
        .create(&s);
    // Each key used once right after the sealing: its value is unsealed
    // with the token key and parsed.
    for (label, mech) in [
        ("hmac", Mechanism::Sha256Hmac),
        (
            "ed25519",
            Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure)),
        ),
        ("ec", Mechanism::EcdsaSha256),
        ("aes", Mechanism::AesCMac),
    ] {
        s.sign(&mech, find(&s, label), DATA).unwrap();
    }
    // Keys sealed, changed (sealed again) and loaded (unsealed, parsed)
    // in turn: each step on a stack the previous ones left.
    for i in 0..8u8 {
        let k = s
            .generate_key(
                &Mechanism::GenericSecretKeyGen,
                &[
                    Attribute::ValueLen(32.into()),
                    Attribute::Token(true),
                    Attribute::Sign(true),
                    Attribute::Label(vec![b'g', i]),
                ],
            )
            .unwrap();
        s.sign(&Mechanism::Sha256Hmac, k, DATA).unwrap();
        s.update_attributes(k, &[Attribute::Id(vec![i])]).unwrap();
        s.sign(&Mechanism::Sha256Hmac, k, DATA).unwrap();
        s.destroy_object(k).unwrap();
    }
    s.logout().unwrap();
    check(&mut vault, &all, "after C_CreateObject and a use, C_Logout");

    login(&s, CKU_USER, &vault, &user_pin);
    Template::key("aes-session", CKO_SECRET_KEY, CKK_AES, false)
        .bool(CKA_ENCRYPT, true)
        .secret(CKA_VALUE, &vault, &secret("aes-session"))
        .create(&s);
    s.encrypt(&Mechanism::AesEcb, find(&s, "aes-session"), &[0u8; 32])
        .unwrap();
    use_aes_and_hmac(&s);
    // The scan finds what is in use.
    let in_use = check(&mut vault, &all, "logged in");
    for name in ["token key", "aes "] {
        assert!(
            in_use.iter().any(|f| f.starts_with(name)),
            "the scan finds the {name} in use"
        );
    }
    s.logout().unwrap();
    check(&mut vault, &all, "after AES and HMAC, C_Logout");

    let rsa_public = s.create_object(&rsa_public_template()).unwrap();
    login(&s, CKU_USER, &vault, &user_pin);
    use_private_keys(&s, rsa_public);
    s.logout().unwrap();
    check(&mut vault, &all, "after ECDSA, Ed25519 and RSA, C_Logout");

    login(&s, CKU_USER, &vault, &user_pin);
    search_and_change(&s);
    s.logout().unwrap();
    check(&mut vault, &all, "after searches and changes, C_Logout");

    // Operations initialised and never finished, and a MAC's state saved
    // (`C_GetOperationState` keeps a copy, with its key, in the module).
    login(&s, CKU_USER, &vault, &user_pin);
    let other = p.open_rw_session(slot).unwrap();
    other
        .sign_init(&Mechanism::Sha256Hmac, find(&s, "hmac"))
        .unwrap();
    other.sign_update(DATA).unwrap();
    save_state(&other);
    drop(other);
    s.sign_init(&Mechanism::EcdsaSha256, find(&s, "ec"))
        .unwrap();
    s.encrypt_init(&Mechanism::AesCbcPad([2; 16]), find(&s, "aes"))
        .unwrap();
    s.logout().unwrap();
    check(&mut vault, &all, "after operations left active, C_Logout");
    drop(s);
    p.finalize().unwrap();
    check(&mut vault, &all, "after C_Finalize");

    // A restart: the token objects come back from the file and are used
    // again; the user changes the PIN, the SO sets a new one.
    let (p, slot) = start();
    let s = p.open_rw_session(slot).unwrap();
    let rsa_public = s.create_object(&rsa_public_template()).unwrap();
    login(&s, CKU_USER, &vault, &user_pin);
    use_aes_and_hmac(&s);
    use_private_keys(&s, rsa_public);
    set_pin(&s, &vault, &user_pin, &new_pin);
    let (_, kek) = keys_of("user", &masked["new user PIN"]);
    all.push(vault.unmask("key of the new user PIN", &kek));
    s.logout().unwrap();
    check(&mut vault, &all, "after a restart, C_SetPIN, C_Logout");

    login(&s, CKU_SO, &vault, &so_pin);
    let reset_pin = secret("reset user PIN");
    init_pin(&s, &vault, &reset_pin);
    let (_, kek) = keys_of("user", &masked["reset user PIN"]);
    all.push(vault.unmask("key of the reset user PIN", &kek));
    s.logout().unwrap();
    check(&mut vault, &all, "after the SO's C_InitPIN, C_Logout");
    drop(s);
    p.finalize().unwrap();
    check(&mut vault, &all, "after a restart, C_Finalize");

    assert!(left.is_empty(), "copies left:\n{}", left.join("\n"));
    println!("scan-clean");
}
