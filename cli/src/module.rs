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
use cryptoki_sys::{CK_MECHANISM_INFO, CK_MECHANISM_TYPE, CK_SESSION_HANDLE};
use serde::{Deserialize, Serialize};

use crate::ckr::{ckr_name, cryptoki_error_is, cryptoki_error_name};
use crate::error::{CliError, Result};
use crate::locate;
use crate::raw::RawModule;
use crate::suite::population::{Population, ProbeCommand};

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
}

impl ModuleChoice {
    /// Resolve `dalek`, `softhsm` or a path.
    pub fn resolve(spec: &str) -> Result<Self> {
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
        Ok(ModuleChoice { kind, name, path })
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
    token: &TokenChoice,
) -> Result<Vec<Option<TempToken>>> {
    let mut out = Vec::with_capacity(choices.len());
    // Both builds of our module read the same environment variable, so when
    // both are benchmarked they share the first one's directory (each makes
    // its own token in it).
    let mut dalek_dir = false;
    for c in choices {
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

/// Token info summary of a slot.
pub fn token_summary(ctx: &Pkcs11, slot: Slot) -> Result<TokenSummary> {
    let t = ctx.get_token_info(slot).map_err(|e| {
        CliError::usage(format!(
            "C_GetTokenInfo failed: {}",
            cryptoki_error_name(&e)
        ))
    })?;
    Ok(TokenSummary {
        label: t.label().trim().to_string(),
        manufacturer: t.manufacturer_id().trim().to_string(),
        model: t.model().trim().to_string(),
        serial: t.serial_number().trim().to_string(),
        firmware: version_string(t.firmware_version()),
        hardware: version_string(t.hardware_version()),
    })
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

        let (slot, pin) = if temporary {
            let pin = random_pin()?;
            let so_pin = random_pin()?;
            let slot = init_temporary_token(&ctx, &pin, &so_pin)?;
            (slot, pin)
        } else {
            if !token.given() {
                return Err(CliError::usage(format!(
                    "module {} needs --slot or --token-label (and --pin): hsm-bench only \
                     creates temporary tokens on `dalek`, `dalek-pure-rust` and `softhsm`",
                    choice.path.display()
                )));
            }
            let slot = select_slot(&ctx, token)?;
            let pin = token.pin.clone().ok_or_else(|| {
                CliError::usage(format!(
                    "--pin (or HSM_BENCH_PIN) is required to log in to the token of {}",
                    choice.name
                ))
            })?;
            (slot, pin)
        };

        let setup = ctx.open_rw_session(slot).map_err(|e| {
            CliError::usage(format!("C_OpenSession failed: {}", cryptoki_error_name(&e)))
        })?;
        login(&setup, &pin)?;
        let token_info = token_summary(&ctx, slot)?;
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

    /// Raw handles of `n` sessions, one per benchmark thread (opened on demand).
    pub fn sessions(&mut self, n: usize) -> Result<Vec<CK_SESSION_HANDLE>> {
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

    /// Whether the token lists mechanism `m`.
    pub fn has_mechanism(&self, m: CK_MECHANISM_TYPE) -> bool {
        self.mechanisms.contains_key(&m)
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

fn login(session: &Session, pin: &str) -> Result<()> {
    let pin = AuthPin::from(pin.to_string());
    match session.login(UserType::User, Some(&pin)) {
        Ok(()) => Ok(()),
        Err(e) if cryptoki_error_is(&e, cryptoki_sys::CKR_USER_ALREADY_LOGGED_IN) => Ok(()),
        Err(e) => Err(CliError::usage(format!(
            "login failed: {}",
            cryptoki_error_name(&e)
        ))),
    }
}

/// Pick the slot named by `--slot` or `--token-label`.
fn select_slot(ctx: &Pkcs11, token: &TokenChoice) -> Result<Slot> {
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
    let mut labels = Vec::new();
    for s in slots {
        if let Ok(t) = ctx.get_token_info(s) {
            let l = t.label().trim().to_string();
            if l == want {
                return Ok(s);
            }
            labels.push(l);
        }
    }
    Err(CliError::usage(format!(
        "no token labelled '{want}' (tokens: {})",
        if labels.is_empty() {
            "none".to_string()
        } else {
            labels.join(", ")
        }
    )))
}

/// Initialise the module's free token as a temporary token, set its user PIN, and
/// return its slot (SoftHSM2 moves an initialised token to a new slot id).
fn init_temporary_token(ctx: &Pkcs11, pin: &str, so_pin: &str) -> Result<Slot> {
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
        .find(|s| {
            ctx.get_token_info(*s)
                .map(|t| !t.token_initialized())
                .unwrap_or(false)
        })
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
    let slot = ctx
        .get_slots_with_token()
        .map_err(|e| fail("C_GetSlotList", e))?
        .into_iter()
        .find(|s| {
            ctx.get_token_info(*s)
                .map(|t| t.label().trim() == label)
                .unwrap_or(false)
        })
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
    fn token_choice_given() {
        assert!(!TokenChoice::default().given());
        let t = TokenChoice {
            label: Some("x".into()),
            ..Default::default()
        };
        assert!(t.given());
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
