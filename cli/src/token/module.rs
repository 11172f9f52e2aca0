//! Loading a PKCS#11 module: choosing it, preparing a temporary token, picking the
//! slot, logging in, and a pool of sessions (one per benchmark thread).
//!
//! cryptoki does the set-up; the timed calls use [`RawModule`].

use std::collections::BTreeMap;
use std::sync::Arc;

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use cryptoki::types::AuthPin;
use cryptoki_sys::{CK_MECHANISM_INFO, CK_MECHANISM_TYPE, CK_SESSION_HANDLE, CK_SLOT_ID};

use crate::error::{CliError, Result};
use crate::token::choice::ModuleChoice;
use crate::token::choice::TokenChoice;
use crate::token::ckr::{ckr_name, cryptoki_error_is, cryptoki_error_name};
use crate::token::info::ModuleMeta;
use crate::token::info::check_pin_flags;
use crate::token::info::file_sha256;
use crate::token::info::library_info;
use crate::token::info::mechanisms;
use crate::token::info::pin_warning;
use crate::token::info::slot_by_label;
use crate::token::info::slots_with_token;
use crate::token::info::token_state;
use crate::token::info::token_summary;
use crate::token::population::Population;
use crate::token::population::ProbeCommand;
use crate::token::raw::RawModule;
use crate::token::temp_token::{TempToken, init_temporary_token, random_pin};

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

/// The calls hsm-bench makes through cryptoki on every module it loads
/// (`list` and `run`); a NULL entry among them is an error naming it.
const LOAD_CALLS: &[&str] = &["C_Initialize", "C_Finalize", "C_GetInfo", "C_GetSlotList"];

/// The further calls of [`Module::open`] (token, session, login, mechanisms).
const OPEN_CALLS: &[&str] = &[
    "C_GetTokenInfo",
    "C_GetMechanismList",
    "C_GetMechanismInfo",
    "C_OpenSession",
    "C_CloseSession",
    "C_Login",
];

/// The further calls of making a temporary token.
const TEMP_TOKEN_CALLS: &[&str] = &["C_InitToken", "C_InitPIN", "C_Logout"];

/// How messages name a module: `module NAME (PATH)`, the prefix of every
/// error about a module.
pub fn who(choice: &ModuleChoice) -> String {
    format!("module {} ({})", choice.name, choice.path.display())
}

/// Load and initialise a module without choosing a token (for `list`). The
/// library is opened and its function list checked (`RawModule::load`)
/// before cryptoki sees it; an error names the module.
pub fn load_context(choice: &ModuleChoice) -> Result<(Pkcs11, Arc<RawModule>, bool)> {
    load(choice).map_err(|e| e.context(&who(choice)))
}

fn load(choice: &ModuleChoice) -> Result<(Pkcs11, Arc<RawModule>, bool)> {
    let raw =
        RawModule::load(&choice.path, &choice.name).map_err(|e| CliError::usage(e.to_string()))?;
    raw.require(LOAD_CALLS)
        .map_err(|e| CliError::usage(e.to_string()))?;
    let ctx = Pkcs11::new(&choice.path)
        .map_err(|e| CliError::usage(format!("cannot load it: {}", cryptoki_error_name(&e))))?;
    let finalize = match ctx.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
        Ok(()) => true,
        // Another loaded module shares this library instance (e.g. a wrapper module).
        Err(e) if cryptoki_error_is(&e, cryptoki_sys::CKR_CRYPTOKI_ALREADY_INITIALIZED) => false,
        Err(e) => {
            return Err(CliError::usage(format!(
                "C_Initialize failed: {}",
                cryptoki_error_name(&e)
            )));
        }
    };
    Ok((ctx, Arc::new(raw), finalize))
}

impl Module {
    /// Load `choice`, select (or create) its token and log in. Every error
    /// names the module (`module NAME (PATH): …`).
    pub fn open(
        choice: &ModuleChoice,
        temp: Option<TempToken>,
        token: &TokenChoice,
    ) -> Result<Self> {
        let sha256 = file_sha256(&choice.path)?;
        let (ctx, raw, finalize) = load_context(choice)?;
        Self::open_loaded(choice, (ctx, raw, finalize), sha256, temp, token)
            .map_err(|e| e.context(&who(choice)))
    }

    /// [`open`](Self::open) once the module is loaded; errors do not name it.
    fn open_loaded(
        choice: &ModuleChoice,
        (ctx, raw, finalize): (Pkcs11, Arc<RawModule>, bool),
        sha256: String,
        temp: Option<TempToken>,
        token: &TokenChoice,
    ) -> Result<Self> {
        let library = library_info(&raw)?;
        let temporary = temp.is_some();
        let calls = [OPEN_CALLS, if temporary { TEMP_TOKEN_CALLS } else { &[] }].concat();
        raw.require(&calls)
            .map_err(|e| CliError::usage(e.to_string()))?;

        let (slot, pin) = if temporary {
            let pin = random_pin()?;
            let so_pin = random_pin()?;
            let slot = init_temporary_token(&ctx, &raw, &pin, &so_pin)?;
            (slot, pin)
        } else {
            if !token.given() {
                return Err(CliError::usage(
                    "needs --slot or --token-label (and --pin): hsm-bench only \
                     creates temporary tokens on `dalek`, `dalek-pure-rust` and `softhsm`",
                ));
            }
            let slot = select_slot(&raw, token)?;
            let pin = token.pin.clone().ok_or_else(|| {
                CliError::usage("--pin (or HSM_BENCH_PIN) is required to log in to its token")
            })?;
            (slot, pin)
        };

        let state = token_state(&raw, slot.id())
            .map_err(|rv| CliError::usage(format!("C_GetTokenInfo failed: {}", ckr_name(rv))))?;
        check_pin_flags(
            &state.summary.label,
            state.flags,
            &pin,
            token.allow_final_pin_try,
        )
        .map_err(CliError::usage)?;
        let setup = ctx.open_rw_session(slot).map_err(|e| {
            CliError::usage(format!("C_OpenSession failed: {}", cryptoki_error_name(&e)))
        })?;
        login(&raw, &setup, slot.id(), &pin)?;
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
            failures: Vec::new(),
            env: choice.options.env.iter().map(|(k, _)| k.clone()).collect(),
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
                    "module {} ({}): C_OpenSession ({} sessions) failed: {}",
                    self.name,
                    self.meta.path,
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
            interface_3_2: self.raw.offers_3_2(),
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
                "C_Login failed: {}{after}",
                cryptoki_error_name(&e)
            )))
        }
    }
}

/// Pick the slot named by `--slot` or `--token-label`.
fn select_slot(raw: &RawModule, token: &TokenChoice) -> Result<Slot> {
    let slots = slots_with_token(raw)?;
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

#[cfg(test)]
mod tests {
    use crate::token::choice::*;
    use crate::token::info::*;
    use crate::token::temp_token::*;
    use cryptoki_sys::*;
    use std::path::PathBuf;

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
    fn env_and_name_settings_parse_and_env_values_never_show() {
        let spec = "dalek,env=DALEK_PKCS11_STORAGE=postgresql://u:pw@h/db?x=1,env=B_2=,name=pg";
        let (m, o) = split_module_spec(spec).unwrap();
        assert_eq!(m, "dalek");
        assert_eq!(
            o.env,
            vec![
                (
                    "DALEK_PKCS11_STORAGE".to_string(),
                    "postgresql://u:pw@h/db?x=1".to_string()
                ),
                ("B_2".to_string(), String::new())
            ]
        );
        assert_eq!(o.name.as_deref(), Some("pg"));
        assert_eq!(
            redact_module_spec(spec),
            "dalek,env=DALEK_PKCS11_STORAGE=***,env=B_2=***,name=pg"
        );
        for bad in [
            "dalek,env=NOVALUE",
            "dalek,env=1X=a",
            "dalek,env=A-B=a",
            "dalek,env=A=1,env=A=2",
            "dalek,env=HSM_BENCH_WORKER=x",
            "dalek,name=a,name=b",
            "dalek,env=S=secret,colour=red",
        ] {
            let e = split_module_spec(bad).unwrap_err();
            assert!(!e.message.contains("secret"), "{}", e.message);
        }
    }

    #[test]
    fn the_same_module_may_be_given_twice_and_gets_distinct_names() {
        let f = tempfile::Builder::new().suffix(".so").tempfile().unwrap();
        let p = f.path().display().to_string();
        let stem = f.path().file_stem().unwrap().to_string_lossy();
        let stem = stem.trim_start_matches("lib");
        let all = ModuleChoice::resolve_all(&[
            p.clone(),
            format!("{p},env=X=1"),
            format!("{p},name=third"),
        ])
        .unwrap();
        let names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [stem.to_string(), format!("{stem}#2"), "third".into()]
        );
        let e =
            ModuleChoice::resolve_all(&[format!("{p},name=x"), format!("{p},name=x")]).unwrap_err();
        assert!(e.message.contains("name=x"), "{}", e.message);
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
        assert_eq!(clean_text(b"t\xffk  "), "t\\xffk");
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
