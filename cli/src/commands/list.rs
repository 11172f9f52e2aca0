//! `hsm-bench list`: slots, tokens and mechanisms of modules.

use std::fmt::Write as _;

use cryptoki::slot::Slot;
use cryptoki_sys::*;
use serde::{Deserialize, Serialize};

use crate::cli::{ListArgs, ListFormat};
use crate::commands::apart;
use crate::commands::output::out;
use crate::error::{CliError, EXIT_OK, Result};
use crate::report;
use crate::safe_text::{escape, json};
use crate::suite::catalogue::catalogue;
use crate::suite::op::OpDef;
use crate::token::choice::ModuleChoice;
use crate::token::ckr::{ckm_name, ckr_name};
use crate::token::info::LibraryInfo;
use crate::token::info::TokenSummary;
use crate::token::info::file_sha256;
use crate::token::info::library_info;
use crate::token::info::mechanisms;
use crate::token::info::pin_flag_names;
use crate::token::info::slot_state;
use crate::token::info::token_state;
use crate::token::module;

fn mech_flags(f: CK_FLAGS) -> String {
    const NAMES: &[(CK_FLAGS, &str)] = &[
        (CKF_HW, "hw"),
        (CKF_ENCRYPT, "encrypt"),
        (CKF_DECRYPT, "decrypt"),
        (CKF_DIGEST, "digest"),
        (CKF_SIGN, "sign"),
        (CKF_SIGN_RECOVER, "sign-recover"),
        (CKF_VERIFY, "verify"),
        (CKF_VERIFY_RECOVER, "verify-recover"),
        (CKF_GENERATE, "generate"),
        (CKF_GENERATE_KEY_PAIR, "generate-key-pair"),
        (CKF_WRAP, "wrap"),
        (CKF_UNWRAP, "unwrap"),
        (CKF_DERIVE, "derive"),
        (CKF_EC_F_P, "ec-fp"),
        (CKF_EC_NAMEDCURVE, "ec-named-curve"),
        (CKF_EC_UNCOMPRESS, "ec-uncompressed"),
        (CKF_EC_COMPRESS, "ec-compressed"),
    ];
    NAMES
        .iter()
        .filter(|(b, _)| f & b != 0)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One module as `list` shows it.
#[derive(Debug, Serialize, Deserialize)]
struct ListedModule {
    name: String,
    path: String,
    sha256: String,
    library: LibraryInfo,
    slots: Vec<ListedSlot>,
}

/// One slot as `list` shows it. `token` is absent when the slot has no token
/// or its `C_GetTokenInfo` failed (`token_error`).
#[derive(Debug, Serialize, Deserialize)]
struct ListedSlot {
    id: u64,
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<ListedToken>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token_error: Option<String>,
    mechanisms: Vec<ListedMechanism>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mechanisms_error: Option<String>,
    ops_supported: usize,
    ops_unsupported: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct ListedToken {
    #[serde(flatten)]
    summary: TokenSummary,
    flags: CK_FLAGS,
    initialized: bool,
    login_required: bool,
    /// "user PIN not set" and the named user-PIN warning flags.
    pin_warnings: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct ListedMechanism {
    name: String,
    min_key_size: CK_ULONG,
    max_key_size: CK_ULONG,
    flags: String,
}

/// Token info read raw and never rejected: a token whose info a stricter
/// reader refuses is still listed, and a failing C_GetTokenInfo is kept, not
/// turned into "no token".
fn listed_token(
    raw: &crate::token::raw::RawModule,
    slot: CK_SLOT_ID,
    present: Option<bool>,
) -> (Option<ListedToken>, Option<String>) {
    match token_state(raw, slot) {
        Ok(t) => {
            let mut pin: Vec<String> = pin_flag_names(t.flags)
                .into_iter()
                .map(String::from)
                .collect();
            if t.flags & CKF_TOKEN_INITIALIZED != 0 && t.flags & CKF_USER_PIN_INITIALIZED == 0 {
                pin.insert(0, "user PIN not set".into());
            }
            let token = ListedToken {
                summary: t.summary,
                flags: t.flags,
                initialized: t.flags & CKF_TOKEN_INITIALIZED != 0,
                login_required: t.flags & CKF_LOGIN_REQUIRED != 0,
                pin_warnings: pin,
            };
            (Some(token), None)
        }
        Err(rv) if rv == CKR_TOKEN_NOT_PRESENT || present == Some(false) => (None, None),
        Err(rv) => (None, Some(ckr_name(rv))),
    }
}

fn listed_module(c: &ModuleChoice, all: &[OpDef]) -> Result<ListedModule> {
    let (ctx, raw, finalize) = module::load_context(c)?;
    let listed = listed_slots(&raw, all).map_err(|e| e.context(&module::who(c)));
    if finalize {
        let _ = ctx.finalize();
    }
    let (library, slots) = listed?;
    Ok(ListedModule {
        name: c.name.clone(),
        path: c.path.display().to_string(),
        sha256: file_sha256(&c.path)?,
        library,
        slots,
    })
}

/// The library info and the slots of a loaded module.
fn listed_slots(
    raw: &crate::token::raw::RawModule,
    all: &[OpDef],
) -> Result<(LibraryInfo, Vec<ListedSlot>)> {
    let library = library_info(raw)?;
    // Through the raw list: bounded (cryptoki's `get_all_slots` allocates for
    // any count a module reports).
    let slots = raw
        .slot_list(false)
        .map_err(|e| CliError::usage(e.to_string()))?;
    let mut listed = Vec::with_capacity(slots.len());
    for id in slots {
        let slot = Slot::try_from(id).map_err(|_| {
            CliError::usage(format!("C_GetSlotList reports the invalid slot id {id}"))
        })?;
        let info = slot_state(raw, slot.id()).ok();
        let (token, token_error) = listed_token(raw, slot.id(), info.as_ref().map(|i| i.1));
        let (mechs, mechanisms_error) = match token {
            Some(_) => match mechanisms(raw, slot) {
                Ok(m) => (m, None),
                Err(e) => (Default::default(), Some(e.message)),
            },
            None => (Default::default(), None),
        };
        let caps = crate::token::caps::TokenCaps {
            mechanisms: &mechs,
            verify_batch: raw.has_verify_batch(),
            interface_3_2: raw.offers_3_2(),
        };
        let ops_unsupported: Vec<String> = all
            .iter()
            .filter(|o| {
                crate::suite::support::unsupported(&caps, o, crate::suite::support::default_size(o))
                    .is_some()
            })
            .map(|o| o.id.clone())
            .collect();
        listed.push(ListedSlot {
            id: slot.id(),
            description: info.map(|i| i.0).unwrap_or_default(),
            token,
            token_error,
            mechanisms: mechs
                .iter()
                .map(|(m, i)| ListedMechanism {
                    name: ckm_name(*m),
                    min_key_size: i.ulMinKeySize,
                    max_key_size: i.ulMaxKeySize,
                    flags: mech_flags(i.flags),
                })
                .collect(),
            mechanisms_error,
            ops_supported: all.len() - ops_unsupported.len(),
            ops_unsupported,
        });
    }
    Ok((library, listed))
}

/// The token line of `list`: every text the module gave is escaped
/// ([`escape`]).
fn print_listed_token(o: &mut String, t: &ListedToken) {
    let ts = &t.summary;
    let _ = writeln!(
        o,
        "    token '{}': {} {}, serial {}, firmware {}, {}{}{}{}",
        escape(&ts.label),
        escape(&ts.manufacturer),
        escape(&ts.model),
        escape(&ts.serial),
        ts.firmware,
        if t.initialized {
            "initialised"
        } else {
            "not initialised"
        },
        if t.login_required {
            ", login required"
        } else {
            ""
        },
        ts.utc_time
            .as_ref()
            .map(|u| format!(", clock {}", escape(u)))
            .unwrap_or_default(),
        t.pin_warnings
            .iter()
            .map(|p| format!(", {p}"))
            .collect::<String>()
    );
}

/// `list` as text; module-supplied text is escaped.
fn print_listed(o: &mut String, m: &ListedModule, total_ops: usize) {
    let _ = writeln!(o, "module {}: {}", escape(&m.name), escape(&m.path));
    let lib = &m.library;
    let _ = writeln!(
        o,
        "  library: {} {} (cryptoki {}{}), manufacturer {}, sha256 {}",
        escape(&lib.description),
        lib.version,
        lib.cryptoki_version,
        if lib.interface_3_2 {
            ", interface \"PKCS 11\" 3.2"
        } else {
            ", no 3.2 interface"
        },
        escape(&lib.manufacturer),
        m.sha256
    );
    if m.slots.is_empty() {
        let _ = writeln!(o, "  no slots");
    }
    for s in &m.slots {
        let _ = writeln!(o, "  slot {}: {}", s.id, escape(&s.description));
        let Some(t) = &s.token else {
            match &s.token_error {
                Some(e) => {
                    let _ = writeln!(o, "    token: C_GetTokenInfo failed: {}", escape(e));
                }
                None => {
                    let _ = writeln!(o, "    no token");
                }
            }
            continue;
        };
        print_listed_token(o, t);
        if let Some(e) = &s.mechanisms_error {
            let _ = writeln!(o, "    mechanisms: {}", escape(e));
            continue;
        }
        let _ = writeln!(o, "    mechanisms ({}):", s.mechanisms.len());
        let rows: Vec<Vec<String>> = s
            .mechanisms
            .iter()
            .map(|i| {
                vec![
                    format!("      {}", i.name),
                    if i.max_key_size > 0 {
                        format!("{}..{}", i.min_key_size, i.max_key_size)
                    } else {
                        "-".into()
                    },
                    i.flags.clone(),
                ]
            })
            .collect();
        let headers = vec![
            "      mechanism".to_string(),
            "key sizes".into(),
            "flags".into(),
        ];
        o.push_str(&report::text::table(&headers, &rows, 1));
        let _ = writeln!(
            o,
            "    hsm-bench ops: {} of {} supported{}",
            s.ops_supported,
            total_ops,
            if s.ops_unsupported.is_empty() {
                String::new()
            } else {
                format!("; unsupported: {}", s.ops_unsupported.join(", "))
            }
        );
    }
}

/// `hsm-bench list`: slots, tokens, mechanisms (with flags and key sizes) and which
/// hsm-bench ops each token supports. Uses the module's normal configuration.
pub fn list(args: &ListArgs) -> Result<i32> {
    let specs = if args.modules.is_empty() {
        vec!["dalek".to_string()]
    } else {
        args.modules.clone()
    };
    let choices = ModuleChoice::resolve_all(&specs)?;
    if choices.iter().any(|c| !c.options.env.is_empty()) {
        return Err(CliError::usage(
            "list: env= applies to `run` only (set the variable in this command's environment)",
        ));
    }
    let all = catalogue();
    // In the child process of one module: list it and hand it over.
    if let Some(path) = apart::child_result_path() {
        let c = choices
            .first()
            .ok_or_else(|| CliError::usage("no module"))?;
        apart::hand_over(&path, &listed_module(c, &all)?)?;
        return Ok(EXIT_OK);
    }
    let mut listed = Vec::with_capacity(choices.len());
    for (c, spec) in choices.iter().zip(&specs) {
        // Each module is loaded in a process of its own: one that crashes
        // or hangs is a one-line error, not a crash of hsm-bench.
        let m: ListedModule = apart::in_child(
            &["list", "--module", spec, "--format", "json"],
            &module::who(c),
        )?;
        if args.format == ListFormat::Text {
            let mut text = String::new();
            print_listed(&mut text, &m, all.len());
            out(&text)?;
        }
        listed.push(m);
    }
    if args.format == ListFormat::Json {
        let doc = serde_json::json!({ "modules": listed });
        out(&format!(
            "{}\n",
            json(serde_json::to_string_pretty(&doc).expect("plain structs serialise"))
        ))?;
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{HOSTILE, HOSTILE_SHOWN, module_meta};

    fn listed(text: &str) -> ListedModule {
        let meta = module_meta("m", text);
        ListedModule {
            name: meta.name,
            path: meta.path,
            sha256: meta.sha256,
            library: meta.library,
            slots: vec![
                ListedSlot {
                    id: 1,
                    description: text.into(),
                    token: Some(ListedToken {
                        summary: meta.token,
                        flags: CKF_TOKEN_INITIALIZED,
                        initialized: true,
                        login_required: true,
                        pin_warnings: vec![],
                    }),
                    token_error: None,
                    mechanisms: vec![ListedMechanism {
                        name: "CKM_SHA256".into(),
                        min_key_size: 0,
                        max_key_size: 0,
                        flags: "digest".into(),
                    }],
                    mechanisms_error: None,
                    ops_supported: 1,
                    ops_unsupported: vec![],
                },
                ListedSlot {
                    id: 2,
                    description: text.into(),
                    token: None,
                    token_error: Some(text.into()),
                    mechanisms: vec![],
                    mechanisms_error: None,
                    ops_supported: 0,
                    ops_unsupported: vec![],
                },
            ],
        }
    }

    fn text_of(m: &ListedModule) -> String {
        let mut o = String::new();
        print_listed(&mut o, m, 1);
        o
    }

    #[test]
    fn module_text_is_escaped_in_the_listing_and_kept_in_json() {
        let text = text_of(&listed(HOSTILE));
        let bad: Vec<char> = text
            .chars()
            .filter(|&c| c != '\n' && crate::safe_text::is_unsafe(c))
            .collect();
        assert!(bad.is_empty(), "raw {bad:?} in {text:?}");
        assert_eq!(
            text.lines().count(),
            text_of(&listed("plain")).lines().count(),
            "{text}"
        );
        for want in [
            format!(
                "  library: {HOSTILE_SHOWN} 1.0 (cryptoki 3.0, no 3.2 interface), \
                 manufacturer {HOSTILE_SHOWN},"
            ),
            format!("  slot 1: {HOSTILE_SHOWN}\n"),
            format!("    token: C_GetTokenInfo failed: {HOSTILE_SHOWN}\n"),
            format!(
                "    token '{HOSTILE_SHOWN}': {HOSTILE_SHOWN} {HOSTILE_SHOWN}, serial {HOSTILE_SHOWN}, \
                 firmware 1.0, initialised, login required, clock {HOSTILE_SHOWN}\n"
            ),
        ] {
            assert!(text.contains(&want), "no {want:?} in {text}");
        }
        // JSON keeps the text itself.
        let json = json(serde_json::to_string_pretty(&listed(HOSTILE)).unwrap());
        assert!(
            !json
                .chars()
                .any(|c| c != '\n' && crate::safe_text::is_unsafe(c))
        );
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["slots"][0]["token"]["label"], HOSTILE);
        assert_eq!(v["library"]["description"], HOSTILE);
    }
}
