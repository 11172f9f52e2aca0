//! The token commands: `list`, `init-token`, `delete-token`, `change-pin`,
//! `set-kdf`. Each loads the configuration the module would load, starts
//! the module's safe API layer in this process (what `C_Initialize` does)
//! and calls what `C_InitToken`, `C_Login`, `C_InitPIN` and `C_SetPIN` call.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};

use cryptoki_sys::*;
use dalek_pkcs11::api::module;
use dalek_pkcs11::config::{Config, MAX_PIN_KDF_ITERATIONS, MIN_PIN_KDF_ITERATIONS};
use dalek_pkcs11::storage::{self, TokenMeta};
use serde::Serialize;

use crate::output;
use crate::pin::Kind;
use crate::{
    ChangePinArgs, DeleteTokenArgs, Failure, InitTokenArgs, Outcome, SetKdfArgs, TokenChoice,
};

/// The module started in this process; finalized on drop.
pub struct Started;

impl Started {
    /// `C_Initialize` with `config`.
    pub fn with(config: Config) -> Result<Self, Failure> {
        module::initialize_with(config).map_err(|e| Failure::new(format!("C_Initialize: {e}")))?;
        Ok(Started)
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = module::finalize();
    }
}

/// The configuration the module would load.
pub fn load_config() -> Result<Config, Failure> {
    Config::load().map_err(|e| Failure::new(format!("configuration: {e}")))
}

/// An initialised token: its slot and metadata.
pub struct Found {
    /// Its slot.
    pub slot: CK_SLOT_ID,
    /// Its metadata.
    pub meta: TokenMeta,
}

/// The initialised tokens, in slot order.
fn tokens() -> Result<Vec<Found>, Failure> {
    Ok(module::with(|m| {
        let mut v = Vec::new();
        for slot in m.slot_ids() {
            let t = m.token(slot)?;
            if let Some(meta) = t.status()?.meta {
                v.push(Found { slot, meta });
            }
        }
        Ok(v)
    })?)
}

/// A slot holding a token file the module found damaged (listed, never
/// served; see docs/SECURITY.md, "A damaged token").
#[derive(Serialize)]
pub struct DamagedSlot {
    /// Its slot.
    pub slot: CK_SLOT_ID,
    /// The serial number the file's name gives.
    pub serial: String,
    /// What is wrong.
    pub reason: String,
    /// The file.
    pub file: Option<String>,
}

/// The slots holding damaged token files, in slot order.
pub fn damaged_slots(config: &Config) -> Result<Vec<DamagedSlot>, Failure> {
    Ok(module::with(|m| {
        Ok(m.slot_ids()
            .into_iter()
            .filter_map(|slot| {
                let d = m.token(slot).ok()?.damaged_file()?;
                Some(DamagedSlot {
                    slot,
                    file: storage::token_file(config, &d.serial).map(|p| p.display().to_string()),
                    serial: d.serial,
                    reason: d.reason,
                })
            })
            .collect())
    })?)
}

/// The serial number and label of the token `choice` names: an initialised
/// token, or (by `--serial`) a damaged token file, whose label is unknown
/// (`None`).
pub fn find_any(
    config: &Config,
    choice: &TokenChoice,
) -> Result<(String, Option<String>), Failure> {
    match find(choice) {
        Ok(f) => Ok((f.meta.serial, Some(f.meta.label))),
        Err(e) => {
            let damaged = damaged_slots(config)?;
            // A PostgreSQL token whose metadata fails authentication is in
            // no slot; its serial still names its rows.
            let stored = |s: &String| {
                config.storage == dalek_pkcs11::config::StorageKind::Postgres
                    && storage::list_serials(config).contains(s)
            };
            match &choice.serial {
                Some(s) if damaged.iter().any(|d| d.serial == *s) || stored(s) => {
                    Ok((s.clone(), None))
                }
                _ => Err(e),
            }
        }
    }
}

/// The token `choice` names (exactly one).
pub fn find(choice: &TokenChoice) -> Result<Found, Failure> {
    let mut matching: Vec<Found> = tokens()?
        .into_iter()
        .filter(|f| match (&choice.label, &choice.serial) {
            (Some(l), _) => f.meta.label == *l,
            (None, Some(s)) => f.meta.serial == *s,
            (None, None) => false,
        })
        .collect();
    let what = match (&choice.label, &choice.serial) {
        (Some(l), _) => format!("labelled '{l}'"),
        (None, s) => format!("with serial {}", s.as_deref().unwrap_or_default()),
    };
    match matching.len() {
        0 => Err(Failure::new(format!("no token {what}"))),
        1 => Ok(matching.remove(0)),
        n => Err(Failure::new(format!(
            "{n} tokens are {what}: name one with --serial (see `list`)"
        ))),
    }
}

/// A read/write session on `slot`, logged in when opened with a PIN;
/// logged out and closed on drop.
pub struct LoggedIn {
    handle: CK_SESSION_HANDLE,
}

impl LoggedIn {
    /// `C_OpenSession` and `C_Login` as `user` with `pin`.
    pub fn open(slot: CK_SLOT_ID, user: CK_USER_TYPE, pin: &[u8]) -> Result<Self, Failure> {
        let s = Self::public(slot)?;
        module::with_session(s.handle, |sess| sess.token.login(user, pin)).map_err(|e| {
            let who = if user == CKU_SO { "SO" } else { "user" };
            Failure::new(format!("C_Login as {who}: {e}"))
        })?;
        Ok(s)
    }

    /// `C_OpenSession` only (public objects).
    pub fn public(slot: CK_SLOT_ID) -> Result<Self, Failure> {
        let handle = module::with(|m| m.open_session(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION))
            .map_err(|e| Failure::new(format!("C_OpenSession: {e}")))?;
        Ok(LoggedIn { handle })
    }

    /// Runs `f` with the session's token.
    fn token<T>(
        &self,
        f: impl FnOnce(&dalek_pkcs11::api::token::Token) -> dalek_pkcs11::error::Result<T>,
    ) -> dalek_pkcs11::error::Result<T> {
        module::with_session(self.handle, |s| f(&s.token))
    }

    /// Runs `f` with the session (what the `C_*` object calls take).
    pub fn session<T>(
        &self,
        f: impl FnOnce(&dalek_pkcs11::api::session::Session) -> dalek_pkcs11::error::Result<T>,
    ) -> dalek_pkcs11::error::Result<T> {
        module::with_session(self.handle, |s| f(s))
    }
}

impl Drop for LoggedIn {
    fn drop(&mut self) {
        let _ = module::with(|m| {
            let s = m.session(self.handle)?;
            if s.token.logged_in().is_some() {
                let _ = m.logout(&s.token);
            }
            m.close_session(self.handle)
        });
    }
}

/// One token as `list` shows it.
#[derive(Serialize)]
struct Listed {
    slot: CK_SLOT_ID,
    label: String,
    serial: String,
    user_pin_set: bool,
    so_pin_failures: u32,
    user_pin_failures: u32,
    so_pin_kdf: Option<String>,
    user_pin_kdf: Option<String>,
    file: Option<String>,
    objects: BTreeMap<&'static str, usize>,
    problem: Option<String>,
}

pub fn class_name(class: u64) -> &'static str {
    match class as CK_OBJECT_CLASS {
        CKO_DATA => "data",
        CKO_CERTIFICATE => "certificate",
        CKO_PUBLIC_KEY => "public key",
        CKO_PRIVATE_KEY => "private key",
        CKO_SECRET_KEY => "secret key",
        CKO_HW_FEATURE => "hardware feature",
        CKO_DOMAIN_PARAMETERS => "domain parameters",
        CKO_MECHANISM => "mechanism",
        CKO_OTP_KEY => "OTP key",
        CKO_PROFILE => "profile",
        _ => "vendor",
    }
}

/// Object counts by class, straight from the store (no PIN needed: the
/// class is stored in the clear), and what is wrong with the records.
fn objects(config: &Config, meta: &TokenMeta) -> (BTreeMap<&'static str, usize>, Option<String>) {
    let mut counts = BTreeMap::new();
    let mut store = match storage::open(config, &meta.serial) {
        Ok(s) => s,
        Err(e) => return (counts, Some(format!("cannot open its store: {e}"))),
    };
    // An epoch that is not the token's reads every record (as a reader that
    // saw the token re-initialised); `u64::MAX` skips the "nothing changed
    // since this connection opened" shortcut.
    match store.changes_since("", u64::MAX) {
        Ok(Some(c)) => {
            for r in &c.upserts {
                *counts.entry(class_name(r.class)).or_insert(0) += 1;
            }
        }
        Ok(None) => {}
        Err(e) => return (counts, Some(format!("cannot read its objects: {e}"))),
    }
    (counts, store.damage().or_else(|| store.file_damage()))
}

fn kdf(w: &Option<storage::seal::WrappedKey>) -> Option<String> {
    w.as_ref()
        .map(|w| format!("{} {} iterations", w.kdf, w.iterations))
}

/// `list`.
pub fn list(json: bool) -> Outcome {
    let config = load_config()?;
    let started = Started::with(config.clone())?;
    let found = tokens()?;
    let damaged = damaged_slots(&config)?;
    let free = module::with(|m| {
        Ok(m.slot_ids()
            .into_iter()
            .filter(|s| m.token(*s).is_ok_and(|t| !t.occupied()))
            .collect::<Vec<_>>())
    })?;
    drop(started);
    let listed: Vec<Listed> = found
        .iter()
        .map(|f| {
            let (objects, problem) = objects(&config, &f.meta);
            Listed {
                slot: f.slot,
                label: f.meta.label.clone(),
                serial: f.meta.serial.clone(),
                user_pin_set: f.meta.user_pin.is_some(),
                so_pin_failures: f.meta.so_failures,
                user_pin_failures: f.meta.user_failures,
                so_pin_kdf: kdf(&f.meta.so_pin),
                user_pin_kdf: kdf(&f.meta.user_pin),
                file: storage::token_file(&config, &f.meta.serial).map(|p| p.display().to_string()),
                objects,
                problem,
            }
        })
        .collect();
    let database = (config.storage == dalek_pkcs11::config::StorageKind::Postgres)
        .then(|| storage::postgres::describe(&config.postgres));
    if json {
        #[derive(Serialize)]
        struct Doc<'a> {
            token_dir: String,
            /// The PostgreSQL database, when the tokens live in one.
            #[serde(skip_serializing_if = "Option::is_none")]
            database: Option<String>,
            tokens: &'a [Listed],
            damaged: &'a [DamagedSlot],
            free_slots: &'a [CK_SLOT_ID],
        }
        let doc = Doc {
            token_dir: config.token_dir.display().to_string(),
            database: database.clone(),
            tokens: &listed,
            damaged: &damaged,
            free_slots: &free,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("serialisable")
        );
        return Ok(());
    }
    let mut out = match &database {
        Some(db) => format!("database: PostgreSQL {db}\n"),
        None => format!("token directory: {}\n", config.token_dir.display()),
    };
    for t in &listed {
        let counts: Vec<String> = t.objects.iter().map(|(k, n)| format!("{n} {k}")).collect();
        out.push_str(&format!(
            "slot {}: token '{}' (serial {})\n  user PIN: {}; failed logins: SO {}, user {}\n  \
             PIN KDF: SO {}, user {}\n  file: {}\n  objects: {}\n",
            t.slot,
            t.label,
            t.serial,
            if t.user_pin_set { "set" } else { "not set" },
            t.so_pin_failures,
            t.user_pin_failures,
            t.so_pin_kdf.as_deref().unwrap_or("-"),
            t.user_pin_kdf.as_deref().unwrap_or("-"),
            t.file.as_deref().unwrap_or(if database.is_some() {
                "(in the database)"
            } else {
                "(memory)"
            }),
            if counts.is_empty() {
                "none".to_string()
            } else {
                counts.join(", ")
            },
        ));
        if let Some(p) = &t.problem {
            out.push_str(&format!("  PROBLEM: {p}\n"));
        }
    }
    for d in &damaged {
        out.push_str(&format!(
            "slot {}: DAMAGED token file (serial {}): {}\n  file: {}\n  \
             `dalek-pkcs11-util verify --serial {}` names the damage\n",
            d.slot,
            d.serial,
            d.reason,
            d.file.as_deref().unwrap_or("-"),
            d.serial
        ));
    }
    for s in &free {
        out.push_str(&format!("slot {s}: free (no token)\n"));
    }
    print!("{out}");
    Ok(())
}

/// `init-token`.
pub fn init_token(a: &InitTokenArgs, json: bool) -> Outcome {
    if a.label.is_empty() || a.label.len() > 32 {
        return Err(Failure::new("--label must have 1 to 32 bytes"));
    }
    let config = load_config()?;
    let _started = Started::with(config)?;
    if tokens()?.iter().any(|f| f.meta.label == a.label) {
        return Err(Failure::new(format!(
            "a token labelled '{}' exists already (see `list`)",
            a.label
        )));
    }
    let so_pin = a.so_pin.read(Kind::New)?;
    let user_pin = a.pin.read(Kind::New)?;
    let slot = module::with(|m| {
        Ok(m.slot_ids()
            .into_iter()
            .find(|s| m.token(*s).is_ok_and(|t| !t.occupied())))
    })?
    .ok_or_else(|| Failure::new("no free slot"))?;
    module::with(|m| m.init_token(slot, &so_pin, &a.label))
        .map_err(|e| Failure::new(format!("C_InitToken: {e}")))?;
    {
        let so = LoggedIn::open(slot, CKU_SO, &so_pin)?;
        so.token(|t| t.init_pin(&user_pin))
            .map_err(|e| Failure::new(format!("C_InitPIN: {e}")))?;
    }
    let serial = find(&TokenChoice {
        label: Some(a.label.clone()),
        serial: None,
    })?
    .meta
    .serial;
    output::result(
        json,
        serde_json::json!({"label": a.label, "serial": serial, "slot": slot}),
        format_args!(
            "token '{}' (serial {serial}) initialised in slot {slot}",
            a.label
        ),
    );
    Ok(())
}

/// Ask the user to confirm the deletion of the token labelled `label` by
/// typing its label; refused when standard input is not a terminal.
fn confirm_deletion(label: &str, serial: &str) -> Outcome {
    if !std::io::stdin().is_terminal() {
        return Err(Failure::new(
            "refusing to delete a token without --yes when standard input is not a terminal",
        ));
    }
    // A damaged file's label is unknown: its serial number is asked for.
    let what = if label == serial {
        "serial number"
    } else {
        "label"
    };
    eprint!(
        "Delete token '{label}' (serial {serial}) and every object on it? Type its {what} to confirm: "
    );
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::Read::take(std::io::stdin().lock(), crate::pin::MAX_LINE)
        .read_line(&mut line)
        .map_err(|e| Failure::new(format!("reading the confirmation: {e}")))?;
    if line.trim_end_matches(['\r', '\n']) != label {
        return Err(Failure::new("not confirmed: nothing deleted"));
    }
    Ok(())
}

/// `delete-token`.
pub fn delete_token(a: &DeleteTokenArgs, json: bool) -> Outcome {
    let config = load_config()?;
    let started = Started::with(config.clone())?;
    // A damaged token file (by `--serial`) too: its label is unknown, so
    // the confirmation asks for the serial number.
    let (serial, label) = find_any(&config, &a.token)?;
    // This process's own connection goes first.
    drop(started);
    let label = label.unwrap_or_else(|| serial.clone());
    if !a.yes {
        confirm_deletion(&label, &serial)?;
    }
    storage::delete_token(&config, &serial)
        .map_err(|e| Failure::new(format!("deleting the token's files: {e}")))?;
    output::result(
        json,
        serde_json::json!({"deleted": {"label": label, "serial": serial}}),
        format_args!("deleted token '{label}' (serial {serial})"),
    );
    Ok(())
}

/// `change-pin`.
pub fn change_pin(a: &ChangePinArgs, json: bool) -> Outcome {
    let config = load_config()?;
    let _started = Started::with(config)?;
    let f = find(&a.token)?;
    let (user, what) = if a.so {
        (CKU_SO, "SO PIN")
    } else {
        (CKU_USER, "user PIN")
    };
    let old = crate::pin::read(
        &format!("current {what}"),
        a.old_pin_env.as_deref(),
        None,
        Kind::Current,
    )?;
    let new = crate::pin::read(
        &format!("new {what}"),
        a.new_pin_env.as_deref(),
        None,
        Kind::New,
    )?;
    let s = LoggedIn::open(f.slot, user, &old)?;
    s.token(|t| t.set_pin(&old, &new))
        .map_err(|e| Failure::new(format!("C_SetPIN: {e}")))?;
    output::result(
        json,
        serde_json::json!({"changed": what, "serial": f.meta.serial}),
        format_args!("{what} of token '{}' changed", f.meta.label),
    );
    Ok(())
}

/// `set-kdf`: `C_SetPIN` with the same PIN under a configuration whose
/// `pin_kdf_iterations` is the new cost, for the SO PIN and the user PIN.
pub fn set_kdf(a: &SetKdfArgs, json: bool) -> Outcome {
    if !(MIN_PIN_KDF_ITERATIONS..=MAX_PIN_KDF_ITERATIONS).contains(&a.iterations) {
        return Err(Failure::new(format!(
            "--iterations must be {MIN_PIN_KDF_ITERATIONS} to {MAX_PIN_KDF_ITERATIONS}"
        )));
    }
    let mut config = load_config()?;
    config.pin_kdf_iterations = a.iterations;
    let _started = Started::with(config)?;
    let f = find(&a.token)?;
    let mut changed = Vec::new();
    if !a.user_only {
        let so = a.so_pin.read(Kind::Current)?;
        let s = LoggedIn::open(f.slot, CKU_SO, &so)?;
        s.token(|t| t.set_pin(&so, &so))
            .map_err(|e| Failure::new(format!("re-wrapping under the SO PIN: {e}")))?;
        changed.push("SO PIN");
    }
    if !a.so_only {
        let pin = a.pin.read(Kind::Current)?;
        let s = LoggedIn::open(f.slot, CKU_USER, &pin)?;
        s.token(|t| t.set_pin(&pin, &pin))
            .map_err(|e| Failure::new(format!("re-wrapping under the user PIN: {e}")))?;
        changed.push("user PIN");
    }
    output::result(
        json,
        serde_json::json!({"serial": f.meta.serial, "iterations": a.iterations, "rewrapped": changed}),
        format_args!(
            "token '{}': the token key is now wrapped with {} PBKDF2 iterations under the {}",
            f.meta.label,
            a.iterations,
            changed.join(" and ")
        ),
    );
    Ok(())
}
