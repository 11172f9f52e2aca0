//! The keys an op runs with ([`KeyHandles`]) and where a run makes its keys
//! and objects ([`StoreMode`], the label prefix of token keys).

use cryptoki_sys::*;

use super::failure::Failure;

/// Handles of a key (pair).
#[derive(Debug, Clone, Default)]
pub struct KeyHandles {
    /// Public key.
    pub public: Option<CK_OBJECT_HANDLE>,
    /// Private key.
    pub private: Option<CK_OBJECT_HANDLE>,
    /// Secret key.
    pub secret: Option<CK_OBJECT_HANDLE>,
    /// Whether the set-up created these objects (then it destroys them).
    pub generated: bool,
    /// The secret key's value, when hsm-bench made it with a known value (so
    /// that MACs can be checked in-process).
    pub value: Option<Vec<u8>>,
    /// Whether the set-up made them as token objects (`CKA_TOKEN=true`).
    pub token: bool,
    /// Their label, when the set-up made them.
    pub label: Option<String>,
    /// A role-separated wrapping key ([`super::role_separated`]), made
    /// because the token refused the usual one with this code.
    pub role_separated: Option<CK_RV>,
}

/// Where hsm-bench makes the keys (and objects) of a run: `--key-store`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StoreMode {
    /// Session objects; token objects when the token refuses session
    /// objects (saying so). The default.
    #[default]
    Auto,
    /// Session objects only.
    Session,
    /// Token objects labelled with [`token_key_prefix`], destroyed at the
    /// end unless kept.
    Token,
}

impl StoreMode {
    /// Whether to try session objects first.
    pub fn session_first(&self) -> bool {
        *self != StoreMode::Token
    }

    /// Whether a refused session object may be made a token object instead.
    pub fn falls_back(&self) -> bool {
        *self == StoreMode::Auto
    }
}

/// Whether `rv`, returned for a session object, may mean that the token
/// refuses session objects (tpm2-pkcs11 answers `CKR_ATTRIBUTE_VALUE_INVALID`
/// for `CKA_TOKEN=false`), rather than that it cannot do the operation at all.
pub fn may_refuse_session_objects(rv: CK_RV) -> bool {
    !matches!(
        rv,
        CKR_OK
            | CKR_MECHANISM_INVALID
            | CKR_PIN_EXPIRED
            | CKR_USER_NOT_LOGGED_IN
            | CKR_KEY_SIZE_RANGE
            | CKR_FUNCTION_NOT_SUPPORTED
    )
}

impl KeyHandles {
    fn need(h: Option<CK_OBJECT_HANDLE>, what: &str) -> Result<CK_OBJECT_HANDLE, Failure> {
        h.ok_or_else(|| Failure::Check(format!("no {what}")))
    }

    /// The public key, or a failure naming it.
    pub fn public_key(&self) -> Result<CK_OBJECT_HANDLE, Failure> {
        Self::need(self.public, "public key")
    }

    /// The private key, or a failure naming it.
    pub fn private_key(&self) -> Result<CK_OBJECT_HANDLE, Failure> {
        Self::need(self.private, "private key")
    }

    /// The secret key, or a failure naming it.
    pub fn secret_key(&self) -> Result<CK_OBJECT_HANDLE, Failure> {
        Self::need(self.secret, "secret key")
    }
}

/// Prefix of the labels of keys made as token objects when a module refuses
/// session objects: `hsm-bench-tmp-<pid>-<start time in ms>-`, unique per run, so
/// that keys left behind by a killed run can be found and deleted.
pub fn token_key_prefix() -> &'static str {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        format!("hsm-bench-tmp-{}-{ms}-", std::process::id())
    })
}
