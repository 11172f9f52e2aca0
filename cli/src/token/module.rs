//! Loading a PKCS#11 module: choosing it, preparing a temporary token, picking the
//! slot, logging in, and a pool of sessions (one per benchmark thread).
//!
//! cryptoki does the set-up; the timed calls use [`RawModule`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use cryptoki::types::AuthPin;
use cryptoki_sys::{
    CK_FLAGS, CK_MECHANISM_INFO, CK_MECHANISM_TYPE, CK_RV, CK_SESSION_HANDLE, CK_SLOT_ID,
    CK_TOKEN_INFO, CK_VERSION, CKF_TOKEN_INITIALIZED, CKF_USER_PIN_COUNT_LOW,
    CKF_USER_PIN_FINAL_TRY, CKF_USER_PIN_INITIALIZED, CKF_USER_PIN_LOCKED,
};
use serde::{Deserialize, Serialize};

use crate::error::{CliError, Result};
use crate::token::ckr::{ckr_name, cryptoki_error_is, cryptoki_error_name};
use crate::token::locate;
use crate::token::population::Population;
use crate::token::population::ProbeCommand;
use crate::token::raw::RawModule;

/// Which module the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleKind {
    /// Our own module, `libdalek_pkcs11.so`.
    Dalek,
    /// Our own module built without AWS-LC (`--no-default-features`).
    DalekPureRust,
    /// The system SoftHSM2.
    Softhsm,
    /// Any other module, by path.
    Path,
}

/// A module chosen on the command line, resolved to a file.
#[derive(Debug, Clone)]
pub struct ModuleChoice {
    /// What kind of module.
    pub kind: ModuleKind,
    /// Short display name (`dalek`, `softhsm`, or the file name).
    pub name: String,
    /// Path of the shared library.
    pub path: PathBuf,
    /// Settings given with this `--module` only.
    pub options: ModuleOptions,
}

/// Settings of one module, given after its name or path:
/// `--module PATH,token=LABEL,slot=N,pin-env=VAR,key-label=KEY`. They
/// override `--token-label`, `--slot`, `--pin` and `--key-label` for that
/// module, so tokens with different labels and PINs run side by side.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleOptions {
    /// `token=LABEL`.
    pub token_label: Option<String>,
    /// `slot=N`.
    pub slot: Option<u64>,
    /// `pin-env=VAR`: the user PIN is read from this environment variable.
    pub pin_env: Option<String>,
    /// `key-label=KEY`: benchmark this existing key on this module.
    pub key_label: Option<String>,
}

/// The option keys a `--module` value may carry.
const MODULE_OPTION_KEYS: &[&str] = &["token", "slot", "pin-env", "key-label"];

/// Splits a `--module` value into the module and its options: the trailing
/// `,key=value` items are options, everything before them the module (so a
/// path may itself contain commas).
pub fn split_module_spec(spec: &str) -> Result<(&str, ModuleOptions)> {
    let mut options = ModuleOptions::default();
    let mut module = spec;
    while let Some((head, item)) = module.rsplit_once(',') {
        let Some((key, value)) = item.split_once('=') else {
            break;
        };
        let bad = |why: &str| {
            CliError::usage(format!(
                "--module {spec}: {why} (options: {})",
                MODULE_OPTION_KEYS
                    .iter()
                    .map(|k| format!("{k}=..."))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        };
        if !MODULE_OPTION_KEYS.contains(&key) {
            return Err(bad(&format!("unknown option '{key}'")));
        }
        if value.is_empty() {
            return Err(bad(&format!("option '{key}' has no value")));
        }
        let taken = match key {
            "token" => options.token_label.replace(value.to_string()).is_some(),
            "slot" => {
                let n = value
                    .parse()
                    .map_err(|_| bad(&format!("slot '{value}' is not a number")))?;
                options.slot.replace(n).is_some()
            }
            "pin-env" => options.pin_env.replace(value.to_string()).is_some(),
            _ => options.key_label.replace(value.to_string()).is_some(),
        };
        if taken {
            return Err(bad(&format!("option '{key}' given twice")));
        }
        module = head;
    }
    if options.slot.is_some() && options.token_label.is_some() {
        return Err(CliError::usage(format!(
            "--module {spec}: give slot= or token=, not both"
        )));
    }
    if module.is_empty() {
        return Err(CliError::usage(format!(
            "--module {spec}: no module before the options"
        )));
    }
    Ok((module, options))
}

impl ModuleChoice {
    /// Resolve `dalek`, `softhsm` or a path, with its options.
    pub fn resolve(spec: &str) -> Result<Self> {
        let (spec, options) = split_module_spec(spec)?;
        let (kind, path) = match spec {
            "dalek" => (
                ModuleKind::Dalek,
                locate::find_dalek().map_err(CliError::usage)?,
            ),
            "dalek-pure-rust" => (
                ModuleKind::DalekPureRust,
                locate::find_dalek_pure().map_err(CliError::usage)?,
            ),
            "softhsm" => (
                ModuleKind::Softhsm,
                locate::find_softhsm().map_err(CliError::usage)?,
            ),
            p => {
                let path = PathBuf::from(p);
                if !path.is_file() {
                    return Err(CliError::usage(format!("module not found: {p}")));
                }
                (ModuleKind::Path, path)
            }
        };
        let name = match kind {
            ModuleKind::Dalek => "dalek".to_string(),
            ModuleKind::DalekPureRust => "dalek-pure-rust".to_string(),
            ModuleKind::Softhsm => "softhsm".to_string(),
            ModuleKind::Path => path
                .file_stem()
                .map(|s| s.to_string_lossy().trim_start_matches("lib").to_string())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| p_display(&path)),
        };
        Ok(ModuleChoice {
            kind,
            name,
            path,
            options,
        })
    }

    /// The token this module uses: its own options over the global flags.
    /// `pin-env=VAR` must name a set variable.
    pub fn token(&self, global: &TokenChoice) -> Result<TokenChoice> {
        let o = &self.options;
        let own_token = o.slot.is_some() || o.token_label.is_some();
        let pin = match &o.pin_env {
            Some(var) => Some(std::env::var(var).map_err(|_| {
                CliError::usage(format!(
                    "module {}: pin-env={var} names an environment variable that is not set",
                    self.name
                ))
            })?),
            None => global.pin.clone(),
        };
        Ok(TokenChoice {
            slot: if own_token { o.slot } else { global.slot },
            label: if own_token {
                o.token_label.clone()
            } else {
                global.label.clone()
            },
            pin,
            allow_final_pin_try: global.allow_final_pin_try,
        })
    }

    /// Resolve a list of specs, giving duplicate names a `#2`, `#3`... suffix.
    pub fn resolve_all(specs: &[String]) -> Result<Vec<Self>> {
        let mut out: Vec<ModuleChoice> = Vec::new();
        for s in specs {
            let mut c = ModuleChoice::resolve(s)?;
            if out.iter().any(|o| o.path == c.path) {
                return Err(CliError::usage(format!(
                    "module {} given twice (one process can load a module once)",
                    c.path.display()
                )));
            }
            let base = c.name.clone();
            let mut n = 2;
            while out.iter().any(|o| o.name == c.name) {
                c.name = format!("{base}#{n}");
                n += 1;
            }
            out.push(c);
        }
        Ok(out)
    }
}

fn p_display(p: &Path) -> String {
    p.display().to_string()
}

/// How the user selected a token.
#[derive(Debug, Clone, Default)]
pub struct TokenChoice {
    /// `--slot`.
    pub slot: Option<u64>,
    /// `--token-label`.
    pub label: Option<String>,
    /// `--pin` / `HSM_BENCH_PIN` (never printed).
    pub pin: Option<String>,
    /// `--allow-final-pin-try`: log in even when the token says the next wrong
    /// PIN locks it.
    pub allow_final_pin_try: bool,
}

impl TokenChoice {
    /// Whether the user named a token (then no temporary token is made).
    pub fn given(&self) -> bool {
        self.slot.is_some() || self.label.is_some()
    }
}

/// A temporary token directory, deleted on drop.
#[derive(Debug)]
pub struct TempToken {
    _dir: tempfile::TempDir,
}

/// Built-in SoftHSM2 configuration template (used when the repository has no
/// `softhsm/softhsm2.conf.in`). `@TOKENDIR@` is replaced by the token directory.
const SOFTHSM_CONF_TEMPLATE: &str = "\
# Written by hsm-bench for a temporary token; deleted after the run.
directories.tokendir = @TOKENDIR@
objectstore.backend = file
log.level = ERROR
slots.removable = false
";

/// The SoftHSM2 configuration template: `softhsm/softhsm2.conf.in` of the
/// repository if found, the built-in one otherwise.
fn softhsm_template() -> String {
    locate::find_upward("softhsm/softhsm2.conf.in")
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_else(|| SOFTHSM_CONF_TEMPLATE.to_string())
}

/// Set an environment variable.
///
/// Only called from [`prepare_environment`], which runs on the main thread before
/// any other thread exists and before any module is loaded.
fn set_env(key: &str, value: &Path) {
    // SAFETY: single-threaded at this point (see above), so no concurrent reader of
    // the environment exists.
    unsafe { std::env::set_var(key, value) };
}

fn remove_env(key: &str) {
    // SAFETY: as for `set_env`: single-threaded, before any module is loaded.
    unsafe { std::env::remove_var(key) };
}

/// Prepare the environment for temporary tokens, before any module is loaded or any
/// thread is started. Returns one entry per choice: `Some` for modules that get a
/// temporary token.
pub fn prepare_environment(
    choices: &[ModuleChoice],
    tokens: &[TokenChoice],
) -> Result<Vec<Option<TempToken>>> {
    let mut out = Vec::with_capacity(choices.len());
    // Both builds of our module read the same environment variable, so when
    // both are benchmarked they share the first one's directory (each makes
    // its own token in it).
    let mut dalek_dir = false;
    for (c, token) in choices.iter().zip(tokens) {
        if token.given() || c.kind == ModuleKind::Path {
            out.push(None);
            continue;
        }
        let dir = tempfile::Builder::new()
            .prefix("hsm-bench-token-")
            .tempdir()
            .map_err(|e| CliError::usage(format!("cannot create a temporary directory: {e}")))?;
        match c.kind {
            ModuleKind::Softhsm => {
                let tokens = dir.path().join("tokens");
                std::fs::create_dir_all(&tokens)?;
                let conf = softhsm_template().replace("@TOKENDIR@", &tokens.to_string_lossy());
                let conf_path = dir.path().join("softhsm2.conf");
                std::fs::write(&conf_path, conf)?;
                set_env("SOFTHSM2_CONF", &conf_path);
            }
            ModuleKind::Dalek | ModuleKind::DalekPureRust if dalek_dir => {}
            ModuleKind::Dalek | ModuleKind::DalekPureRust => {
                dalek_dir = true;
                set_env("DALEK_PKCS11_TOKEN_DIR", dir.path());
                set_env("DALEK_PKCS11_STORAGE", Path::new("sqlite"));
                remove_env("DALEK_PKCS11_CONFIG");
            }
            ModuleKind::Path => unreachable!("handled above"),
        }
        out.push(Some(TempToken { _dir: dir }));
    }
    Ok(out)
}

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
}

/// A loaded, initialised module with a logged-in session.
pub struct Module {
    /// Display name.
    pub name: String,
    /// Metadata for the report.
    pub meta: ModuleMeta,
    /// Raw function list for the timed calls.
    pub raw: Arc<RawModule>,
    /// The slot in use.
    pub slot: Slot,
    /// Mechanisms the token lists, with their info.
    pub mechanisms: BTreeMap<CK_MECHANISM_TYPE, CK_MECHANISM_INFO>,
    /// Token objects made by the scaling ops (`token-*-N`, `cold-start-N`).
    pub population: Population,
    /// How a cold-start probe reaches this module's token.
    pub probe: ProbeCommand,
    ctx: Pkcs11,
    setup: Option<Session>,
    pool: Vec<Session>,
    finalize: bool,
    _temp: Option<TempToken>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module").field("name", &self.name).finish()
    }
}

/// A random PIN of 16 hex digits (temporary tokens only; never printed).
fn random_pin() -> Result<String> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).map_err(|e| CliError::usage(format!("no randomness: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// SHA-256 of a file, hex.
pub fn file_sha256(path: &Path) -> Result<String> {
    use sha2::Digest;
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    let d = sha2::Sha256::digest(&bytes);
    Ok(d.iter().map(|x| format!("{x:02x}")).collect())
}

fn version_string(v: cryptoki::types::Version) -> String {
    format!("{}.{}", v.major(), v.minor())
}

/// Load and initialise a module without choosing a token (for `list`).
pub fn load_context(choice: &ModuleChoice) -> Result<(Pkcs11, Arc<RawModule>, bool)> {
    let ctx = Pkcs11::new(&choice.path).map_err(|e| {
        CliError::usage(format!(
            "cannot load module {}: {}",
            choice.path.display(),
            cryptoki_error_name(&e)
        ))
    })?;
    let raw = RawModule::load(&choice.path).map_err(|e| {
        CliError::usage(format!("cannot load module {}: {e}", choice.path.display()))
    })?;
    let finalize = match ctx.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
        Ok(()) => true,
        // Another loaded module shares this library instance (e.g. a wrapper module).
        Err(e) if cryptoki_error_is(&e, cryptoki_sys::CKR_CRYPTOKI_ALREADY_INITIALIZED) => false,
        Err(e) => {
            return Err(CliError::usage(format!(
                "C_Initialize of {} failed: {}",
                choice.path.display(),
                cryptoki_error_name(&e)
            )));
        }
    };
    Ok((ctx, Arc::new(raw), finalize))
}

/// Library info of an initialised context.
pub fn library_info(ctx: &Pkcs11) -> Result<LibraryInfo> {
    let info = ctx
        .get_library_info()
        .map_err(|e| CliError::usage(format!("C_GetInfo failed: {}", cryptoki_error_name(&e))))?;
    Ok(LibraryInfo {
        description: info.library_description().trim().to_string(),
        version: version_string(info.library_version()),
        cryptoki_version: version_string(info.cryptoki_version()),
        manufacturer: info.manufacturer_id().trim().to_string(),
    })
}

/// A fixed-size text field of `CK_TOKEN_INFO` as text: cut at the first NUL
/// (tokens pad with NULs as well as with spaces), trimmed, decoded lossily.
pub fn clean_text(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).trim().to_string()
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

/// Mechanisms of a slot with their info.
pub fn mechanisms(
    raw: &RawModule,
    slot: Slot,
) -> Result<BTreeMap<CK_MECHANISM_TYPE, CK_MECHANISM_INFO>> {
    let id = slot.id();
    let list = raw
        .mechanism_list(id)
        .map_err(|rv| CliError::usage(format!("C_GetMechanismList failed: {}", ckr_name(rv))))?;
    let mut out = BTreeMap::new();
    for m in list {
        if let Ok(info) = raw.mechanism_info(id, m) {
            out.insert(m, info);
        }
    }
    Ok(out)
}

impl Module {
    /// Load `choice`, select (or create) its token and log in.
    pub fn open(
        choice: &ModuleChoice,
        temp: Option<TempToken>,
        token: &TokenChoice,
    ) -> Result<Self> {
        let sha256 = file_sha256(&choice.path)?;
        let (ctx, raw, finalize) = load_context(choice)?;
        let library = library_info(&ctx)?;
        let temporary = temp.is_some();
        let who = format!("module {} ({})", choice.name, choice.path.display());

        let (slot, pin) = if temporary {
            let pin = random_pin()?;
            let so_pin = random_pin()?;
            let slot =
                init_temporary_token(&ctx, &raw, &pin, &so_pin).map_err(|e| e.context(&who))?;
            (slot, pin)
        } else {
            if !token.given() {
                return Err(CliError::usage(format!(
                    "module {} needs --slot or --token-label (and --pin): hsm-bench only \
                     creates temporary tokens on `dalek`, `dalek-pure-rust` and `softhsm`",
                    choice.path.display()
                )));
            }
            let slot = select_slot(&ctx, &raw, token).map_err(|e| e.context(&who))?;
            let pin = token.pin.clone().ok_or_else(|| {
                CliError::usage(format!(
                    "--pin (or HSM_BENCH_PIN) is required to log in to the token of {}",
                    choice.name
                ))
            })?;
            (slot, pin)
        };

        let state = token_state(&raw, slot.id()).map_err(|rv| {
            CliError::usage(format!("{who}: C_GetTokenInfo failed: {}", ckr_name(rv)))
        })?;
        check_pin_flags(
            &state.summary.label,
            state.flags,
            &pin,
            token.allow_final_pin_try,
        )
        .map_err(|m| CliError::usage(format!("{who}: {m}")))?;
        let setup = ctx.open_rw_session(slot).map_err(|e| {
            CliError::usage(format!(
                "{who}: C_OpenSession failed: {}",
                cryptoki_error_name(&e)
            ))
        })?;
        login(&raw, &setup, slot.id(), &pin).map_err(|e| e.context(&who))?;
        let token_info = token_summary(&raw, slot.id())?;
        let token_info_label = token_info.label.clone();
        let mechanisms = mechanisms(&raw, slot)?;
        let meta = ModuleMeta {
            name: choice.name.clone(),
            path: choice.path.display().to_string(),
            sha256,
            library,
            slot: slot.id(),
            token: token_info,
            temporary_token: temporary,
        };
        Ok(Module {
            name: choice.name.clone(),
            meta,
            raw,
            slot,
            mechanisms,
            ctx,
            setup: Some(setup),
            pool: Vec::new(),
            finalize,
            _temp: temp,
            population: Population::default(),
            probe: ProbeCommand {
                module: choice.path.clone(),
                token_label: token_info_label,
                pin,
            },
        })
    }

    /// The logged-in set-up session (keys are created here as session objects; it
    /// stays open for the whole run so they remain usable from every session).
    pub fn setup_session(&self) -> &Session {
        self.setup.as_ref().expect("set-up session open until drop")
    }

    /// Raw handles of `n` sessions, one per benchmark thread, opened afresh for
    /// every job: an op that fails mid-operation (a module that answers
    /// `C_Encrypt` with an error and leaves the operation active, as
    /// tpm2-pkcs11 does with OAEP) would otherwise leave the session in
    /// `CKR_OPERATION_ACTIVE` for every later op of that thread.
    pub fn sessions(&mut self, n: usize) -> Result<Vec<CK_SESSION_HANDLE>> {
        self.pool.clear();
        while self.pool.len() < n {
            let s = self.ctx.open_rw_session(self.slot).map_err(|e| {
                CliError::usage(format!(
                    "C_OpenSession ({} sessions) failed: {}",
                    self.pool.len() + 1,
                    cryptoki_error_name(&e)
                ))
            })?;
            self.pool.push(s);
        }
        Ok(self.pool[..n].iter().map(|s| s.handle()).collect())
    }

    /// What the token declares (for the support checks of `suite/support.rs`).
    pub fn caps(&self) -> crate::token::caps::TokenCaps<'_> {
        crate::token::caps::TokenCaps {
            mechanisms: &self.mechanisms,
            verify_batch: self.raw.has_verify_batch(),
        }
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        self.pool.clear();
        // A temporary token goes away with its directory; a named token
        // gets its population objects destroyed.
        if !self.meta.temporary_token
            && let Some(setup) = &self.setup
        {
            self.population.clear(&self.raw, setup.handle());
        }
        self.setup.take();
        if self.finalize {
            let _ = self.ctx.clone().finalize();
        }
        // The temporary token directory is removed when `_temp` drops, after this.
    }
}

/// `C_Login` as the user (the PIN flags were checked before); a wrong PIN says
/// what the token's flags show afterwards.
fn login(raw: &RawModule, session: &Session, slot: CK_SLOT_ID, pin: &str) -> Result<()> {
    let pin = AuthPin::from(pin.to_string());
    match session.login(UserType::User, Some(&pin)) {
        Ok(()) => Ok(()),
        Err(e) if cryptoki_error_is(&e, cryptoki_sys::CKR_USER_ALREADY_LOGGED_IN) => Ok(()),
        Err(e) => {
            let after = if cryptoki_error_is(&e, cryptoki_sys::CKR_PIN_INCORRECT) {
                token_state(raw, slot)
                    .map(|t| pin_warning(t.flags))
                    .unwrap_or_default()
            } else {
                String::new()
            };
            Err(CliError::usage(format!(
                "login failed: {}{after}",
                cryptoki_error_name(&e)
            )))
        }
    }
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

/// Pick the slot named by `--slot` or `--token-label`.
fn select_slot(ctx: &Pkcs11, raw: &RawModule, token: &TokenChoice) -> Result<Slot> {
    let slots = ctx.get_slots_with_token().map_err(|e| {
        CliError::usage(format!("C_GetSlotList failed: {}", cryptoki_error_name(&e)))
    })?;
    if let Some(id) = token.slot {
        return slots
            .into_iter()
            .find(|s| s.id() == id)
            .ok_or_else(|| CliError::usage(format!("no token in slot {id}")));
    }
    let want = token.label.as_deref().unwrap_or_default();
    let (found, labels) = slot_by_label(raw, &slots, want);
    found.ok_or_else(|| {
        CliError::usage(format!(
            "no token labelled '{want}' (tokens: {})",
            if labels.is_empty() {
                "none".to_string()
            } else {
                labels.join(", ")
            }
        ))
    })
}

/// Initialise the module's free token as a temporary token, set its user PIN, and
/// return its slot (SoftHSM2 moves an initialised token to a new slot id).
fn init_temporary_token(ctx: &Pkcs11, raw: &RawModule, pin: &str, so_pin: &str) -> Result<Slot> {
    let fail = |what: &str, e: cryptoki::error::Error| {
        CliError::usage(format!(
            "temporary token: {what} failed: {}",
            cryptoki_error_name(&e)
        ))
    };
    let slots = ctx
        .get_slots_with_token()
        .map_err(|e| fail("C_GetSlotList", e))?;
    let free = slots
        .into_iter()
        .find(|s| token_state(raw, s.id()).is_ok_and(|t| t.flags & CKF_TOKEN_INITIALIZED == 0))
        .ok_or_else(|| {
            CliError::usage("temporary token: the module shows no uninitialised token")
        })?;
    let mut suffix = [0u8; 4];
    getrandom::fill(&mut suffix).map_err(|e| CliError::usage(e.to_string()))?;
    let label = format!(
        "hsm-bench-{}",
        suffix
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<String>()
    );
    let so = AuthPin::from(so_pin.to_string());
    ctx.init_token(free, &so, &label)
        .map_err(|e| fail("C_InitToken", e))?;
    let slots = ctx
        .get_slots_with_token()
        .map_err(|e| fail("C_GetSlotList", e))?;
    let slot = slot_by_label(raw, &slots, &label)
        .0
        .ok_or_else(|| CliError::usage("temporary token: initialised token not found"))?;
    let session = ctx
        .open_rw_session(slot)
        .map_err(|e| fail("C_OpenSession", e))?;
    session
        .login(UserType::So, Some(&so))
        .map_err(|e| fail("SO login", e))?;
    session
        .init_pin(&AuthPin::from(pin.to_string()))
        .map_err(|e| fail("C_InitPIN", e))?;
    session.logout().map_err(|e| fail("C_Logout", e))?;
    drop(session);
    Ok(slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_path_module_is_a_usage_error() {
        let e = ModuleChoice::resolve("/no/such/module.so").unwrap_err();
        assert_eq!(e.code, crate::error::EXIT_USAGE);
        assert!(e.message.contains("module not found"), "{}", e.message);
    }

    #[test]
    fn module_options_follow_the_module_and_paths_may_hold_commas() {
        let (m, o) = split_module_spec("/opt/hsm/lib,v2/libx.so,token=A,pin-env=PIN_A").unwrap();
        assert_eq!(m, "/opt/hsm/lib,v2/libx.so");
        assert_eq!(o.token_label.as_deref(), Some("A"));
        assert_eq!(o.pin_env.as_deref(), Some("PIN_A"));
        let (m, o) = split_module_spec("softhsm,slot=7,key-label=k1").unwrap();
        assert_eq!(
            (m, o.slot, o.key_label.as_deref()),
            ("softhsm", Some(7), Some("k1"))
        );
        let (m, o) = split_module_spec("dalek").unwrap();
        assert_eq!((m, o), ("dalek", ModuleOptions::default()));
        for bad in [
            "x.so,colour=red",
            "x.so,slot=-1",
            "x.so,token=a,token=b",
            "x.so,slot=1,token=a",
            ",token=a",
            "x.so,key-label=",
        ] {
            assert!(split_module_spec(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_modules_own_token_overrides_the_global_one() {
        let global = TokenChoice {
            slot: Some(3),
            label: None,
            pin: Some("global".into()),
            allow_final_pin_try: true,
        };
        let own = |spec: &str| ModuleChoice {
            kind: ModuleKind::Path,
            name: "m".into(),
            path: PathBuf::from("/m.so"),
            options: split_module_spec(spec).unwrap().1,
        };
        let t = own("m.so,token=T").token(&global).unwrap();
        assert_eq!((t.slot, t.label.as_deref()), (None, Some("T")));
        assert_eq!(t.pin.as_deref(), Some("global"));
        assert!(t.allow_final_pin_try);
        let t = own("m.so").token(&global).unwrap();
        assert_eq!((t.slot, t.label), (Some(3), None));
        // SAFETY (set_var): a test-only variable no other test reads.
        unsafe { std::env::set_var("HSM_BENCH_UNIT_PIN_VAR", "from-env") };
        let t = own("m.so,pin-env=HSM_BENCH_UNIT_PIN_VAR")
            .token(&global)
            .unwrap();
        assert_eq!(t.pin.as_deref(), Some("from-env"));
        assert!(
            own("m.so,pin-env=HSM_BENCH_UNIT_UNSET_VAR")
                .token(&global)
                .is_err()
        );
    }

    #[test]
    fn token_choice_given() {
        assert!(!TokenChoice::default().given());
        let t = TokenChoice {
            label: Some("x".into()),
            ..Default::default()
        };
        assert!(t.given());
    }

    #[test]
    fn token_text_is_cut_at_nul_trimmed_and_lossy() {
        assert_eq!(clean_text(b"token   "), "token");
        assert_eq!(clean_text(b"token\0\0\0\0"), "token");
        assert_eq!(clean_text(b"tok\0junk after nul"), "tok");
        assert_eq!(clean_text(b"t\xffk  "), "t\u{fffd}k");
        assert_eq!(clean_text(b"\0\0"), "");
        assert_eq!(clean_text(b"                "), "");
    }

    fn raw_info(label: &[u8], utc: &[u8], flags: CK_FLAGS) -> CK_TOKEN_INFO {
        // SAFETY: CK_TOKEN_INFO is a C struct of arrays and integers; all-zero is valid.
        let mut t: CK_TOKEN_INFO = unsafe { std::mem::zeroed() };
        t.label = [b' '; 32];
        t.label[..label.len()].copy_from_slice(label);
        t.utcTime = [0; 16];
        t.utcTime[..utc.len()].copy_from_slice(utc);
        t.flags = flags;
        t.firmwareVersion = CK_VERSION { major: 2, minor: 7 };
        t
    }

    #[test]
    fn token_state_keeps_utc_time_as_text() {
        let t = TokenState::from_raw(&raw_info(b"ocki\0\0", b"13:06:00", 0x1000));
        assert_eq!(t.summary.label, "ocki");
        assert_eq!(t.summary.utc_time.as_deref(), Some("13:06:00"));
        assert_eq!(t.summary.firmware, "2.7");
        assert_eq!(t.flags, 0x1000);
        let t = TokenState::from_raw(&raw_info(b"soft", b"", 0));
        assert_eq!(t.summary.utc_time, None);
        let json = serde_json::to_value(&t.summary).unwrap();
        assert!(json.get("utc_time").is_none(), "{json}");
    }

    #[test]
    fn pin_flags_are_checked_before_login() {
        let ok = CKF_TOKEN_INITIALIZED | CKF_USER_PIN_INITIALIZED;
        let check = |flags, pin, allow| check_pin_flags("t", flags, pin, allow);
        assert_eq!(check(ok, "1234", false), Ok(()));
        assert_eq!(check(ok | CKF_USER_PIN_COUNT_LOW, "1234", false), Ok(()));
        let err = |flags, pin, allow| check(flags, pin, allow).unwrap_err();
        assert!(err(0, "1234", false).contains("not initialised"));
        assert!(
            err(CKF_TOKEN_INITIALIZED, "1234", false).contains("user PIN of token 't' is not set")
        );
        assert!(err(ok | CKF_USER_PIN_LOCKED, "1234", true).contains("is locked"));
        assert!(err(ok, "", false).contains("empty PIN"));
        let last = err(ok | CKF_USER_PIN_FINAL_TRY, "1234", false);
        assert!(last.contains("--allow-final-pin-try"), "{last}");
        assert_eq!(check(ok | CKF_USER_PIN_FINAL_TRY, "1234", true), Ok(()));
    }

    #[test]
    fn a_wrong_pin_names_the_flags_the_token_shows_afterwards() {
        assert_eq!(pin_warning(CKF_TOKEN_INITIALIZED), "");
        let w = pin_warning(CKF_USER_PIN_COUNT_LOW | CKF_USER_PIN_FINAL_TRY);
        assert!(w.contains("CKF_USER_PIN_FINAL_TRY") && w.contains("CKF_USER_PIN_COUNT_LOW"));
    }

    #[test]
    fn pins_are_random_hex() {
        let a = random_pin().unwrap();
        let b = random_pin().unwrap();
        assert_eq!(a.len(), 16);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
