//! Temporary tokens: a fresh token directory per run (our module or SoftHSM2),
//! the environment that points the module at it, and the initialisation of
//! the free token with a random PIN.

use std::path::Path;

use cryptoki::context::Pkcs11;
use cryptoki::session::UserType;
use cryptoki::slot::Slot;
use cryptoki::types::AuthPin;
use cryptoki_sys::*;

use crate::error::{CliError, Result};
use crate::token::choice::ModuleKind;
use crate::token::choice::{ModuleChoice, TokenChoice};
use crate::token::ckr::cryptoki_error_name;
use crate::token::info::slot_by_label;
use crate::token::info::slots_with_token;
use crate::token::info::token_state;
use crate::token::locate;
use crate::token::raw::RawModule;

/// A temporary token directory, deleted on drop (by the process that made
/// it: a module's worker holds a [`TempToken::made_by_scheduler`]).
#[derive(Debug)]
pub struct TempToken {
    _dir: Option<tempfile::TempDir>,
}

impl TempToken {
    /// A temporary token whose directory the scheduling process made (and
    /// deletes): the worker initialises the token in it.
    pub fn made_by_scheduler() -> TempToken {
        TempToken { _dir: None }
    }
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
        out.push(Some(TempToken { _dir: Some(dir) }));
    }
    Ok(out)
}

/// A random PIN of 16 hex digits (temporary tokens only; never printed).
pub fn random_pin() -> Result<String> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).map_err(|e| CliError::usage(format!("no randomness: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Initialise the module's free token as a temporary token, set its user PIN, and
/// return its slot (SoftHSM2 moves an initialised token to a new slot id).
pub fn init_temporary_token(
    ctx: &Pkcs11,
    raw: &RawModule,
    pin: &str,
    so_pin: &str,
) -> Result<Slot> {
    let fail = |what: &str, e: cryptoki::error::Error| {
        CliError::usage(format!(
            "temporary token: {what} failed: {}",
            cryptoki_error_name(&e)
        ))
    };
    let slots = slots_with_token(raw).map_err(|e| e.context("temporary token"))?;
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
    let slots = slots_with_token(raw).map_err(|e| e.context("temporary token"))?;
    let slot = slot_by_label(raw, &slots, &label)
        .0
        .ok_or_else(|| CliError::usage("temporary token: initialised token not found"))?;
    let session = ctx
        .open_rw_session(slot)
        .map_err(|e| fail("C_OpenSession", e))?;
    session
        .login(UserType::So, Some(&so))
        .map_err(|e| fail("C_Login (SO)", e))?;
    session
        .init_pin(&AuthPin::from(pin.to_string()))
        .map_err(|e| fail("C_InitPIN", e))?;
    session.logout().map_err(|e| fail("C_Logout", e))?;
    drop(session);
    Ok(slot)
}
