//! What a module and its token say about themselves: library and token
//! information for the report, the PIN flags, and the mechanism list.

use std::collections::BTreeMap;
use std::path::Path;

use cryptoki::slot::Slot;
use cryptoki_sys::*;
use serde::{Deserialize, Serialize};

use crate::error::{CliError, Result};
use crate::token::ckr::ckr_name;
use crate::token::raw::RawModule;

/// `C_GetInfo` of a module.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LibraryInfo {
    /// libraryDescription.
    pub description: String,
    /// libraryVersion.
    pub version: String,
    /// cryptokiVersion.
    pub cryptoki_version: String,
    /// manufacturerID.
    pub manufacturer: String,
    /// Whether the module offers the "PKCS 11" 3.2 interface
    /// (`C_GetInterface`, PKCS#11 3.2 §5.4), whose function list has the
    /// key encapsulation calls; false in reports written before it was
    /// recorded.
    #[serde(default)]
    pub interface_3_2: bool,
}

/// `C_GetTokenInfo` of the token used.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TokenSummary {
    /// Token label.
    pub label: String,
    /// manufacturerID.
    pub manufacturer: String,
    /// model.
    pub model: String,
    /// serialNumber.
    pub serial: String,
    /// firmwareVersion.
    pub firmware: String,
    /// hardwareVersion.
    pub hardware: String,
    /// utcTime as the token sent it (cleaned text, never parsed), when not empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utc_time: Option<String>,
}

/// Description of a loaded module for the report metadata.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModuleMeta {
    /// Display name used in results (`dalek`, `softhsm`, file name).
    pub name: String,
    /// Path of the shared library.
    pub path: String,
    /// SHA-256 of the library file, hex.
    pub sha256: String,
    /// C_GetInfo.
    pub library: LibraryInfo,
    /// Slot id used.
    pub slot: u64,
    /// Token info.
    pub token: TokenSummary,
    /// Whether hsm-bench created (and deleted) a temporary token.
    pub temporary_token: bool,
    /// What went wrong with the module outside its ops (its worker process
    /// died or hung while finishing, e.g. a crash in `C_Finalize`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// The names of the variables its `,env=` settings set in its worker
    /// processes (never their values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
}

/// SHA-256 of a file, hex.
pub fn file_sha256(path: &Path) -> Result<String> {
    use sha2::Digest;
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    let d = sha2::Sha256::digest(&bytes);
    Ok(d.iter().map(|x| format!("{x:02x}")).collect())
}

/// Library info of a module (`C_GetInfo` through its own function list; text
/// fields as [`clean_text`] reads them).
pub fn library_info(raw: &RawModule) -> Result<LibraryInfo> {
    let info = raw
        .library_info()
        .map_err(|rv| CliError::usage(format!("C_GetInfo failed: {}", ckr_name(rv))))?;
    Ok(LibraryInfo {
        description: clean_text(&info.libraryDescription),
        version: raw_version(info.libraryVersion),
        cryptoki_version: raw_version(info.cryptokiVersion),
        manufacturer: clean_text(&info.manufacturerID),
        interface_3_2: raw.offers_3_2(),
    })
}

/// A fixed-size `CK_UTF8CHAR` field (`CK_INFO`, `CK_SLOT_INFO`,
/// `CK_TOKEN_INFO`: blank padded, PKCS#11 3.0 §3.2) as text: cut at the first
/// NUL (tokens pad with NULs as well as with spaces), decoded with each invalid
/// UTF-8 byte as `\xHH` ([`crate::safe_text::decode`]), trimmed. Control
/// characters are kept here; text output escapes them.
pub fn clean_text(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    crate::safe_text::decode(&field[..end]).trim().to_string()
}

/// The slot description of `C_GetSlotInfo` and whether a token is present
/// (`CKF_TOKEN_PRESENT`), read raw.
pub fn slot_state(raw: &RawModule, slot: CK_SLOT_ID) -> std::result::Result<(String, bool), CK_RV> {
    raw.slot_info(slot).map(|i| {
        (
            clean_text(&i.slotDescription),
            i.flags & CKF_TOKEN_PRESENT != 0,
        )
    })
}

fn raw_version(v: CK_VERSION) -> String {
    format!("{}.{}", v.major, v.minor)
}

/// What hsm-bench uses of a token's `C_GetTokenInfo`.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenState {
    /// Cleaned text fields and versions.
    pub summary: TokenSummary,
    /// The token's `flags`.
    pub flags: CK_FLAGS,
}

impl TokenState {
    /// From the raw structure; nothing in it is rejected.
    pub fn from_raw(t: &CK_TOKEN_INFO) -> Self {
        let utc = clean_text(&t.utcTime);
        TokenState {
            summary: TokenSummary {
                label: clean_text(&t.label),
                manufacturer: clean_text(&t.manufacturerID),
                model: clean_text(&t.model),
                serial: clean_text(&t.serialNumber),
                firmware: raw_version(t.firmwareVersion),
                hardware: raw_version(t.hardwareVersion),
                utc_time: (!utc.is_empty()).then_some(utc),
            },
            flags: t.flags,
        }
    }
}

/// `C_GetTokenInfo` of a slot through the raw function list (cryptoki's own call
/// refuses tokens whose `utcTime` is not 16 digits).
pub fn token_state(raw: &RawModule, slot: CK_SLOT_ID) -> std::result::Result<TokenState, CK_RV> {
    raw.token_info(slot).map(|t| TokenState::from_raw(&t))
}

/// Token info summary of a slot.
pub fn token_summary(raw: &RawModule, slot: CK_SLOT_ID) -> Result<TokenSummary> {
    token_state(raw, slot)
        .map(|t| t.summary)
        .map_err(|rv| CliError::usage(format!("C_GetTokenInfo failed: {}", ckr_name(rv))))
}

/// Refuse a login the token's flags say cannot or should not happen; `Ok` when
/// `C_Login` may be called. Messages name the token, not the module.
pub fn check_pin_flags(
    label: &str,
    flags: CK_FLAGS,
    pin: &str,
    allow_final_pin_try: bool,
) -> std::result::Result<(), String> {
    if flags & CKF_TOKEN_INITIALIZED == 0 {
        return Err(format!(
            "token '{label}' is not initialised (initialise it and set a user PIN first)"
        ));
    }
    if flags & CKF_USER_PIN_INITIALIZED == 0 {
        return Err(format!(
            "the user PIN of token '{label}' is not set (set it with C_InitPIN, e.g. \
             pkcs11-tool --init-pin)"
        ));
    }
    if flags & CKF_USER_PIN_LOCKED != 0 {
        return Err(format!(
            "the user PIN of token '{label}' is locked; not calling C_Login"
        ));
    }
    if pin.is_empty() {
        return Err(format!(
            "empty PIN for token '{label}'; not calling C_Login"
        ));
    }
    if flags & CKF_USER_PIN_FINAL_TRY != 0 && !allow_final_pin_try {
        return Err(format!(
            "token '{label}' has one PIN try left (CKF_USER_PIN_FINAL_TRY); a wrong PIN \
             locks it. Not calling C_Login; pass --allow-final-pin-try to try anyway"
        ));
    }
    Ok(())
}

/// The user-PIN warning flags a token shows, named, e.g.
/// `CKF_USER_PIN_COUNT_LOW (few tries left)`.
pub fn pin_flag_names(flags: CK_FLAGS) -> Vec<&'static str> {
    const NAMES: [(CK_FLAGS, &str); 3] = [
        (
            CKF_USER_PIN_LOCKED,
            "CKF_USER_PIN_LOCKED (the PIN is locked)",
        ),
        (
            CKF_USER_PIN_FINAL_TRY,
            "CKF_USER_PIN_FINAL_TRY (one try left)",
        ),
        (
            CKF_USER_PIN_COUNT_LOW,
            "CKF_USER_PIN_COUNT_LOW (few tries left)",
        ),
    ];
    NAMES
        .iter()
        .filter(|(f, _)| flags & f != 0)
        .map(|(_, n)| *n)
        .collect()
}

/// What the PIN flags say after a failed login, e.g. `; the token now reports
/// CKF_USER_PIN_COUNT_LOW (few tries left)`.
pub fn pin_warning(flags: CK_FLAGS) -> String {
    let named = pin_flag_names(flags);
    if named.is_empty() {
        String::new()
    } else {
        format!("; the token now reports {}", named.join(", "))
    }
}

/// Mechanisms of a slot with their info (the list bounded, see
/// `RawModule::mechanism_list`).
pub fn mechanisms(
    raw: &RawModule,
    slot: Slot,
) -> Result<BTreeMap<CK_MECHANISM_TYPE, CK_MECHANISM_INFO>> {
    let id = slot.id();
    let list = raw.mechanism_list(id).map_err(CliError::usage)?;
    let mut out = BTreeMap::new();
    for m in list {
        if let Ok(info) = raw.mechanism_info(id, m) {
            out.insert(m, info);
        }
    }
    Ok(out)
}

/// The slots with a token, read through the raw list (bounded, see
/// `RawModule::slot_list`; cryptoki's `get_slots_with_token` allocates for
/// any count a module reports).
pub fn slots_with_token(raw: &RawModule) -> Result<Vec<Slot>> {
    raw.slot_list(true)
        .map_err(CliError::usage)?
        .into_iter()
        .map(|id| {
            Slot::try_from(id).map_err(|_| {
                CliError::usage(format!("C_GetSlotList reports the invalid slot id {id}"))
            })
        })
        .collect()
}

/// The first of `slots` whose token label (read raw, cleaned) is `want`; also
/// the labels seen, for the error message.
pub fn slot_by_label(raw: &RawModule, slots: &[Slot], want: &str) -> (Option<Slot>, Vec<String>) {
    let mut labels = Vec::new();
    for &s in slots {
        if let Ok(t) = token_state(raw, s.id()) {
            if t.summary.label == want {
                return (Some(s), labels);
            }
            labels.push(t.summary.label);
        }
    }
    (None, labels)
}
