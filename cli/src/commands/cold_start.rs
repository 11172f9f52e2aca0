//! The hidden `cold-start` subcommand: the probe process of the
//! `cold-start-N` ops. It loads a module in a fresh process, times its
//! `C_Initialize` (base spec §5.4), then opens a session, logs in (PIN on
//! standard input), finds one object by label so that a module which loads
//! objects lazily has done so, and prints one JSON line with the
//! `C_Initialize` time and the process's peak resident memory.

use std::io::BufRead;
use std::time::Instant;

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::session::UserType;
use cryptoki::types::AuthPin;
use cryptoki_sys::CKA_LABEL;

use crate::cli::ColdStartArgs;
use crate::error::{CliError, EXIT_OK, Result};
use crate::suite::population::ProbeReport;
use crate::token::ckr::cryptoki_error_name;
use crate::token::info::slots_with_token;
use crate::token::raw::{RawModule, Template};

fn failed(what: &str, e: &cryptoki::error::Error) -> CliError {
    CliError::usage(format!(
        "cold start: {what} failed: {}",
        cryptoki_error_name(e)
    ))
}

/// Peak resident set size of this process in KiB (`VmHWM`, proc(5)).
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs the probe and prints its [`ProbeReport`].
pub fn run(args: &ColdStartArgs) -> Result<i32> {
    let mut pin = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut pin)
        .map_err(|e| CliError::usage(format!("cold start: reading the PIN: {e}")))?;
    let pin = AuthPin::from(pin.trim_end_matches(['\r', '\n']).to_string());
    // The library and its function list are checked before cryptoki sees
    // them; the raw list gives the same cleaned label match as the
    // benchmark's own slot selection (the dynamic loader hands cryptoki the
    // same instance).
    let name = args.module.display().to_string();
    let raw = RawModule::load(&args.module, &name)
        .map_err(|e| CliError::usage(format!("cold start: module {name}: {e}")))?;
    let ctx = Pkcs11::new(&args.module).map_err(|e| failed("loading the module", &e))?;
    let t0 = Instant::now();
    ctx.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK))
        .map_err(|e| failed("C_Initialize", &e))?;
    let initialize_ns = t0.elapsed().as_nanos() as u64;
    let slots = slots_with_token(&raw).map_err(|e| e.context("cold start"))?;
    let slot = crate::token::info::slot_by_label(&raw, &slots, &args.token_label)
        .0
        .ok_or_else(|| {
            CliError::usage(format!(
                "cold start: no token labelled {}",
                args.token_label
            ))
        })?;
    let t0 = Instant::now();
    let session = ctx
        .open_ro_session(slot)
        .map_err(|e| failed("C_OpenSession", &e))?;
    let open_session_ns = t0.elapsed().as_nanos() as u64;
    session
        .login(UserType::User, Some(&pin))
        .map_err(|e| failed("C_Login", &e))?;
    let t0 = Instant::now();
    let found = raw
        .find_all(
            session.handle(),
            &mut Template::new().bytes(CKA_LABEL, args.label.as_bytes()),
        )
        .map_err(|e| CliError::usage(format!("cold start: {e}")))?;
    let find_ns = t0.elapsed().as_nanos() as u64;
    if found.len() != 1 {
        return Err(CliError::usage(format!(
            "cold start: found {} objects labelled {}, expected 1",
            found.len(),
            args.label
        )));
    }
    let report = ProbeReport {
        initialize_ns,
        open_session_ns,
        find_ns,
        peak_rss_kib: peak_rss_kib().unwrap_or(0),
    };
    drop(session);
    let _ = ctx.finalize();
    println!(
        "{}",
        serde_json::to_string(&report).expect("a plain struct serialises")
    );
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_its_own_peak_rss() {
        let kib = super::peak_rss_kib().expect("Linux has VmHWM");
        assert!(kib > 100, "{kib} KiB");
    }
}
