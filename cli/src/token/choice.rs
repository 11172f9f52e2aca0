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
    /// `env=VAR=VALUE` (repeatable): environment variables of this
    /// module's worker processes only, in the order given. Their values
    /// are never printed or recorded, only the names.
    pub env: Vec<(String, String)>,
    /// `name=LABEL`: the module's name in reports.
    pub name: Option<String>,
}

/// The option keys a `--module` value may carry.
const MODULE_OPTION_KEYS: &[&str] = &["token", "slot", "pin-env", "key-label", "env", "name"];

/// A `--module` value as it may be shown: the value of every `env=VAR=VALUE`
/// item replaced by `***` (it may hold a connection string or a password).
pub fn redact_module_spec(spec: &str) -> String {
    spec.split(',')
        .map(
            |item| match item.strip_prefix("env=").and_then(|v| v.split_once('=')) {
                Some((var, _)) => format!("env={var}=***"),
                None => item.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join(",")
}

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
                "--module {}: {why} (options: {})",
                redact_module_spec(spec),
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
            "env" => {
                let Some((var, val)) = value.split_once('=') else {
                    return Err(bad("env= takes VAR=VALUE"));
                };
                let valid = !var.is_empty()
                    && !var.starts_with(|c: char| c.is_ascii_digit())
                    && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid {
                    return Err(bad(&format!("env={var}: not a variable name")));
                }
                if var == crate::token::choice::WORKER_VAR {
                    return Err(bad(&format!("env={var}: set by hsm-bench itself")));
                }
                if options.env.iter().any(|(k, _)| k == var) {
                    return Err(bad(&format!("env={var} given twice")));
                }
                // Items are read from the end: keep the command line's order.
                options.env.insert(0, (var.to_string(), val.to_string()));
                false
            }
            "name" => options.name.replace(value.to_string()).is_some(),
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
    let shown = redact_module_spec(spec);
    if options.slot.is_some() && options.token_label.is_some() {
        return Err(CliError::usage(format!(
            "--module {shown}: give slot= or token=, not both"
        )));
    }
    if module.is_empty() {
        return Err(CliError::usage(format!(
            "--module {shown}: no module before the options"
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

    /// Resolve a list of specs, giving duplicate names a `#2`, `#3`... suffix
    /// (the same module may be given twice, e.g. with other `env=`: each
    /// runs in worker processes of its own); a `name=` given twice is an
    /// error.
    pub fn resolve_all(specs: &[String]) -> Result<Vec<Self>> {
        let mut out: Vec<ModuleChoice> = Vec::new();
        for s in specs {
            let mut c = ModuleChoice::resolve(s)?;
            if let Some(name) = &c.options.name {
                if out.iter().any(|o| &o.name == name) {
                    return Err(CliError::usage(format!(
                        "--module …,name={name}: another module has that name"
                    )));
                }
                c.name = name.clone();
                out.push(c);
                continue;
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

/// The variable that makes hsm-bench a worker (`measure/ipc.rs`): not for
/// `env=`.
pub const WORKER_VAR: &str = "HSM_BENCH_WORKER";

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
