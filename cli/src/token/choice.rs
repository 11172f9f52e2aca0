//! Which module to load and which of its tokens to use: `dalek`, `softhsm`
//! or a path, with per-module settings (`PATH,token=L,slot=N,pin-env=VAR,key-label=K`).

use std::path::{Path, PathBuf};

use crate::error::{CliError, Result};
use crate::token::locate;

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
